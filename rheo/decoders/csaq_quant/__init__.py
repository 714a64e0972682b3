"""csaq-quant 0.6.0 (PyPI) under the gate: `CSAQInferenceEngine.generate(speculative=True, lookahead, temperature,
top_p)` (csaq/inference.py:323-558), its self-speculative loop, unmodified. The engine drafts with the model's
quantised weights and verifies after `_swap_to_verify()` sets `_verify_mode` on every hooked `CSAQLinear`; the
stand-in model holds one real `csaq.kernels.CSAQLinear` (with the three attributes `_build_hooks` looks for) and
returns the case's draft table's logits in draft mode and the target's in verify mode. Its cache is the token ids
themselves (a tuple-of-tuples cache with the sequence on dim 2, which `_truncate_kv` slices), so every forward
sees exactly the tokens the engine has fed it.

Exact law as written (`_law`): drafts from q at temperature T cut by top_p (`_sample`, line 452); draft x at
position k is judged (line 484) with `v_logits[:, k + 1]`, the target's row *after* x (the verify input is the
last token and the drafts: row k + 1 conditions on x itself; row k predicts x), accepted with min(1, p'(x)/q'(x))
where p', q' are the plain softmax at T without top_p (lines 498-499); a rejection draws from norm((p' − q')+)
(line 509) and ends the round; no bonus after K acceptances. The rows are read through the table's last token,
so the law holds for cases with context_length 1 (`check_case`); there the engine's cache slips (the prompt
is never prefilled: the first draft feeds `generated[:, -1:]` with no cache, line 438; the committed last token
is fed again on top of a cache that already holds it, line 546) do not change a row."""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction
from typing import Any

from rheo.decoders import Decoder, Law, Row, Table
from rheo.decoders.generate import check_options
from rheo_ref.errors import CaseError
from rheo_ref.models import Case, TableModel

VERSION = "0.6.0"
MAX_K = 6


def defaults(run: Any) -> dict[str, Any]:
    return {"temperature": 1, "lookahead": 4}  # generate()'s defaults


def check(run: Any) -> None:
    check_options(run)
    k = run.options()["lookahead"]
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise CaseError(f"lookahead={k!r} must be an integer in [1, {MAX_K}]")
    if run.processing().top_k is not None:
        raise CaseError("top_k: csaq-quant's generate takes temperature and top_p only")


def check_case(case: Case, run: Any) -> None:
    if case.target.context_length != 1 or case.q_samp_model.context_length != 1:
        raise CaseError(
            f"context_length {case.target.context_length}: the exact law of csaq-quant's loop is written for tables "
            "of context length 1 (its cache slips would enter a longer row)"
        )


def _law(p_v: TableModel, q_s: TableModel, q_v: TableModel, lookahead: int, context: Any, n: int) -> Law:
    from rheo_ref.laws import compose, normalise

    def round_law(start: tuple[int, ...], m: int) -> Law:
        cap = min(lookahead, m)
        out: Law = defaultdict(Fraction)

        def level(drafted: tuple[int, ...], prob: Fraction) -> None:
            if len(drafted) == cap:
                out[drafted] += prob  # no bonus token
                return
            ctx = start + drafted
            qv = q_v.row(ctx)
            for x, qx in enumerate(q_s.row(ctx)):
                if not qx:
                    continue
                r = p_v.row(ctx + (x,))  # inference.py:484: the row after the draft
                a = min(Fraction(1), r[x] / qv[x])
                if a:
                    level(drafted + (x,), prob * qx * a)
                if a < 1:
                    res = normalise(tuple(max(Fraction(0), ry - qy) for ry, qy in zip(r, qv, strict=True)))
                    for y, ry in enumerate(res):
                        if ry:
                            out[drafted + (y,)] += prob * qx * (1 - a) * ry

        level((), Fraction(1))
        return dict(out)

    return compose(round_law, tuple(context), n)


def exact_law(case: Case, n: int, run: Any) -> Law | None:
    from rheo.decoders.laws import Processing

    proc = run.processing()
    plain = Processing(power=proc.power)
    q_s = proc.for_draft().table(case.q_samp_model)
    return _law(plain.table(case.target), q_s, plain.table(case.q_samp_model), run.options()["lookahead"],
                case.context, n)  # fmt: skip


def decode(case: Case, context: list[int], n: int, seed: int, num_samples: int, run: Any) -> list[tuple[int, ...]]:
    from types import SimpleNamespace

    import torch
    from csaq.inference import CSAQInferenceEngine
    from csaq.kernels import CSAQLinear

    from rheo.testing import decode_batches, processing_args, table_module

    a, k = processing_args(run), run.options()["lookahead"]
    p, q = table_module(case.target), table_module(case.q_samp_model)

    class Model(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.layer = CSAQLinear(1, 1, 8)
            for attr, value in (("_csaq_fp16_backup", None), ("_csaq_quant_stash", None), ("_csaq_hi_rows", [0])):
                setattr(self.layer, attr, value)  # what _build_hooks looks for
            self.anchor = torch.nn.Parameter(torch.zeros(1))  # the engine reads its device from a parameter
            self.config = SimpleNamespace(eos_token_id=None)

        def forward(self, input_ids: torch.Tensor, past_key_values: Any = None, use_cache: bool = True) -> Any:
            cached = [] if past_key_values is None else past_key_values[0][0][0, 0, :, 0].long().tolist()
            full = cached + input_ids[0].tolist()
            verify = self.layer._verify_mode  # set by the engine's _swap_to_verify
            logits = (p if verify else q)(torch.tensor(full))[len(cached) :]
            kv = torch.tensor(full, dtype=torch.float32)[None, None, :, None]
            return SimpleNamespace(logits=logits[None], past_key_values=((kv, kv),))

    engine = CSAQInferenceEngine(Model(), {"layer": [0]}, tokenizer=None, verbose=False)

    def generate(prompt: torch.Tensor) -> Any:
        out, _ = engine.generate(
            prompt, speculative=True, lookahead=k, temperature=a["temperature"], top_p=a["top_p"] or 1.0,
            max_new_tokens=n,
        )  # fmt: skip
        return out[:, len(context) :]

    return decode_batches(generate, context, n, seed, num_samples)


CAUSE = (
    "csaq/inference.py:484 `v_logit = v_logits[:, k + 1, :]`: draft k is judged by the target's row after it "
    "(conditioned on the draft itself), not by row k, which predicts it"
)
CAUSE_TOP_P = CAUSE + "; line 498 takes the draft's probability without the top-p cut it was sampled with (line 452)"

DECODER = Decoder(
    name="csaq-quant",
    summary=f"csaq-quant {VERSION}'s CSAQInferenceEngine.generate(speculative=True), unmodified;\n"
    f"pip install --no-deps csaq-quant=={VERSION}",
    decode=decode,
    gen_keys=("temperature", "top_p", "lookahead"),
    gen_help="lookahead (drafts a round, 1..6, default 4), temperature (1/k, default 1; its 0 is greedy), top_p",
    exact_law=exact_law,
    defaults=defaults,
    check=check,
    check_case=check_case,
    requires=("csaq",),
    install=f"pip install --no-deps csaq-quant=={VERSION}",
    package="csaq-quant",
    order=180,
    path="csaq/inference.py (CSAQInferenceEngine._generate_speculative)",
    table=Table(
        case="tests/cases/hf.json",
        tokens=4,
        tv=0.25,
        rows=(
            Row("T=1 lookahead 4", {}, cause=CAUSE),
            Row("T=1/2 lookahead 4", {"temperature": 0.5}, cause=CAUSE, slow=True),
            Row("top-p 0.9 lookahead 4", {"top_p": 0.9}, cause=CAUSE_TOP_P, slow=True),
            Row("T=1 lookahead 1", {"lookahead": 1}, cause=CAUSE, slow=True),
        ),
    ),
)
