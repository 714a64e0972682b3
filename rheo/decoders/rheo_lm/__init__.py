"""rheo's own real-model code path (`rheo_fast.lm`: KV caches, 4D tree masks, position ids, compaction)
with a `TableLM` target and a table draft head, on the case's rheo scheme; its exact law is the
reference's (`rheo_ref.exact.Exact`) on the processed tables."""

from __future__ import annotations

from typing import Any

from rheo.decoders import Decoder, Law, Row, Table
from rheo.decoders.generate import check_options
from rheo_ref.errors import CaseError
from rheo_ref.exact import Exact
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.models import Case


def check_case(case: Case, run: Any) -> None:
    case.scheme_as(Scheme)
    if len(case.context) < 2:
        raise CaseError(f"decoder rheo-lm needs a context of at least 2 tokens, got {list(case.context)}")


def exact_law(case: Case, n: int, run: Any) -> Law | None:
    proc = run.processing()
    p = proc.table(case.target)
    ds = proc.table(case.q_samp_model) if not proc.identity else None
    return Exact(Case(case.draft, p, case.scheme_as(Scheme), case.context, n, ds)).token_law(n)


def decode(case: Case, context: list[int], n: int, seed: int, num_samples: int, run: Any) -> list[tuple[int, ...]]:
    import torch

    from rheo_fast.lm.table_head import generate_tokens, table_tree_model

    T = 1 / run.processing().power
    lm, g = table_tree_model(case, T=T), torch.Generator().manual_seed(seed % 2**63)
    return [tuple(generate_tokens(lm, context, case.scheme_as(Scheme), n, g)) for _ in range(num_samples)]


DECODER = Decoder(
    name="rheo-lm",
    summary="rheo's real-model path (KV caches, tree masks, compaction) on the case's rheo scheme",
    decode=decode,
    gen_keys=("temperature",),
    gen_help="temperature",
    exact_law=exact_law,
    check=check_options,
    check_case=check_case,
    min_context=0,
    package="rheo",
    order=40,
    path="rheo_fast/lm (KV caches, tree masks, compaction)",
    table=Table(  # docs/THIRD_PARTY.md §2 (the case's rheo scheme K = 3, m = 1, W = 2, D = 2, R = 5)
        case="tests/cases/hf.json",
        tokens=2,
        tv=0.25,
        rows=(
            Row("T=1", {}, "KV caches, tree masks, compaction on TableLMs"),
            Row("T=1 slow", {}, "the same", alpha=1e-4, tv=0.05, tokens=3, slow=True),
        ),
    ),
)
