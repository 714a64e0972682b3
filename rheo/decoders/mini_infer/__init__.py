"""mini-infer 0.2.5 (PyPI) under the gate: `mini_infer.speculative.speculative_step(target, draft, prefix_ids,
k_draft, temperature)`, one round of Leviathan et al.'s chain (mini_infer/speculative/verifier.py), unmodified,
on the case's tables behind `rheo.testing.table_module` (its models return `(logits, cache)`); the rounds are
chained as its docstring says (each round's tokens appended to the prefix). Its exact law is
`rheo.decoders.laws.Chain` on the tables at temperature T; docs/ECOSYSTEM.md."""

from __future__ import annotations

from typing import Any

from rheo.decoders import Decoder, Law, Row, Table
from rheo.decoders.generate import check_options
from rheo_ref.errors import CaseError
from rheo_ref.models import Case

VERSION = "0.2.5"
MAX_K = 6  # the exact law enumerates V^k drafts a round


def defaults(run: Any) -> dict[str, Any]:
    return {"temperature": 1, "k_draft": 3}  # k_draft: the package's default; its temperature 0 is greedy


def check(run: Any) -> None:
    check_options(run)
    k = run.options()["k_draft"]
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise CaseError(f"k_draft={k!r} must be an integer in [1, {MAX_K}]")


def exact_law(case: Case, n: int, run: Any) -> Law | None:
    from rheo.decoders.laws import Chain, table_drafter, table_row

    proc = run.processing()
    p, q = proc.table(case.target), proc.for_draft().table(case.q_samp_model)
    return Chain(p, table_drafter(q), table_row(q), cap=run.options()["k_draft"], horizon=n + 1).token_law(
        case.context, n
    )


def decode(case: Case, context: list[int], n: int, seed: int, num_samples: int, run: Any) -> list[tuple[int, ...]]:
    import torch
    from mini_infer.speculative import speculative_step

    from rheo.testing import decode_batches, processing_args, table_module

    k, T = run.options()["k_draft"], processing_args(run)["temperature"]
    target, draft = table_module(case.target, cache=True), table_module(case.q_samp_model, cache=True)

    def one(prompt: torch.Tensor) -> list[list[int]]:
        ids, new = prompt, list[int]()
        while len(new) < n:
            toks, _ = speculative_step(target, draft, ids, k_draft=k, temperature=T)
            new += toks
            ids = torch.cat([ids, torch.tensor([toks], dtype=ids.dtype)], dim=1)
        return [new]

    return decode_batches(one, context, n, seed, num_samples)


DECODER = Decoder(
    name="mini-infer",
    summary=f"mini-infer {VERSION}'s speculative_step (chain speculative sampling, one round), unmodified;\n"
    f"pip install --no-deps mini-infer=={VERSION}",
    decode=decode,
    gen_keys=("temperature", "k_draft"),
    gen_help="k_draft (drafts a round, 1..6, default 3), temperature (1/k, default 1; the package's 0 is greedy)",
    exact_law=exact_law,
    defaults=defaults,
    check=check,
    requires=("mini_infer",),
    install=f"pip install --no-deps mini-infer=={VERSION}",
    package="mini-infer",
    order=130,
    path="mini_infer/speculative/verifier.py (speculative_step)",
    table=Table(
        case="tests/cases/hf.json",
        tokens=4,
        tv=0.25,
        rows=(
            Row("T=1 k=3", {"k_draft": 3}),
            Row("T=1/2 k=3", {"k_draft": 3, "temperature": 0.5}, slow=True),
            Row("T=1 k=1", {"k_draft": 1}, slow=True),
            Row("T=1 k=5", {"k_draft": 5}, slow=True),
        ),
    ),
)
