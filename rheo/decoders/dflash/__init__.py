"""dflash 0.1.0 (PyPI) under the gate: the torch sampling path of its `dflash_generate` (dflash/model.py:180-330),
unmodified functions called as that loop calls them: the first token `sample(logits, temperature, top_p,
top_k)` (line 215), then per block the draft probabilities `_sampling_probs(draft_logits, ...)` and drafts
`_sample_probs(draft_probs)` (lines 263-266), the target's `_sampling_probs(output.logits, ...)` (line 277)
and its verifier `_rejection_sample(drafts, target_probs, draft_probs, None)` (lines 94-124, 280). The loop
itself needs a DFlash block-diffusion draft model (a Qwen3 layer stack reading the target's hidden states,
`DFlashDraftModel`) that a table model is not, so the adapter drafts the block's γ = block_size − 1 tokens
from the case's draft table one by one and commits accepted + bonus as lines 296-297 do. Its MLX path
(model_mlx.py) is Apple-only. Exact law: the first token from p, then `rheo.decoders.laws.Chain` rounds of
γ drafts on the processed tables (both processed by `_sampling_probs`: temperature, top-k, top-p);
docs/ECOSYSTEM.md."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from rheo.decoders import Decoder, Law, Row, Table
from rheo.decoders.generate import check_options
from rheo_ref.errors import CaseError
from rheo_ref.models import Case

VERSION = "0.1.0"
MAX_BLOCK = 7  # the exact law enumerates V^(block - 1) drafts a round


def defaults(run: Any) -> dict[str, Any]:
    return {"temperature": 1, "block_size": 4}


def check(run: Any) -> None:
    check_options(run)
    b = run.options()["block_size"]
    if isinstance(b, bool) or not isinstance(b, int) or not 2 <= b <= MAX_BLOCK:
        raise CaseError(f"block_size={b!r} must be an integer in [2, {MAX_BLOCK}] (1 drafts nothing)")


def exact_law(case: Case, n: int, run: Any) -> Law | None:
    from collections import defaultdict

    from rheo.decoders.laws import Chain, table_drafter, table_row

    proc = run.processing()
    p, q = proc.table(case.target), proc.for_draft().table(case.q_samp_model)
    chain = Chain(p, table_drafter(q), table_row(q), cap=run.options()["block_size"] - 1)
    out: Law = defaultdict(Fraction)
    for y, py in enumerate(p.row(tuple(case.context))):  # the prefill's token, sampled from p
        if py:
            for rest, pr in chain.token_law(tuple(case.context) + (y,), n - 1).items():
                out[(y, *rest)] += py * pr
    return dict(out)


def decode(case: Case, context: list[int], n: int, seed: int, num_samples: int, run: Any) -> list[tuple[int, ...]]:
    import torch
    from dflash.model import _rejection_sample, _sample_probs, _sampling_probs, sample

    from rheo.testing import decode_batches, processing_args, table_module

    a, L, g = processing_args(run), len(context), run.options()["block_size"] - 1
    T, top_p, top_k = a["temperature"], a["top_p"] or 1.0, a["top_k"] or 0
    target, small = table_module(case.target), table_module(case.q_samp_model)

    def generate(prompt: torch.Tensor) -> list[list[int]]:
        ids = prompt[0].tolist()
        ids.append(int(sample(target(torch.tensor([ids]))[:, -1], T, top_p, top_k)[0]))
        while len(ids) < L + n:
            block, probs = list(ids), []
            for _ in range(g):
                qp = _sampling_probs(small(torch.tensor([block]))[:, -1:], T, top_p, top_k)
                block.append(int(_sample_probs(qp)[0, 0]))
                probs.append(qp)
            tp = _sampling_probs(target(torch.tensor([block]))[:, len(ids) - 1 :], T, top_p, top_k)
            accepted, bonus = _rejection_sample(torch.tensor([block[len(ids) :]]), tp, torch.cat(probs, 1), None)
            ids += block[len(ids) : len(ids) + accepted] + [int(bonus)]
        return [ids[L:]]

    return decode_batches(generate, context, n, seed, num_samples)


DECODER = Decoder(
    name="dflash",
    summary=f"dflash {VERSION}'s torch sampling path (sample, _sampling_probs, _rejection_sample), unmodified;\n"
    f"pip install --no-deps dflash=={VERSION}",
    decode=decode,
    gen_keys=("temperature", "top_k", "top_p", "block_size"),
    gen_help="block_size (the block: the last token and block_size - 1 drafts, 2..7, default 4), temperature\n"
    "(1/k, default 1; its 0 is greedy), top_k, top_p",
    exact_law=exact_law,
    defaults=defaults,
    check=check,
    requires=("dflash", "transformers"),
    install=f"pip install --no-deps dflash=={VERSION}",
    package="dflash",
    order=170,
    path="dflash/model.py (_rejection_sample, _sampling_probs, dflash_generate)",
    table=Table(
        case="tests/cases/hf.json",
        tokens=4,
        tv=0.25,
        rows=(
            Row("T=1 block 4", {}),
            Row("T=1/2 block 4", {"temperature": 0.5}, slow=True),
            Row("top-k 2 block 4", {"top_k": 2}, slow=True),
            Row("top-p 0.9 block 4", {"top_p": 0.9}, slow=True),
            Row("T=1 block 2", {"block_size": 2}, slow=True),
        ),
    ),
)
