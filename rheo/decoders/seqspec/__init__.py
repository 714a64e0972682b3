"""sequential-speculative-decoding 0.1.1 under the gate: `speculative_generate(method=METHOD)` (standard,
naive_hsd, capped_hsd: hierarchical speculative decoding), unmodified, on the case's `TableLM`s
(`sampler`), and its exact law as coded (`law.SeqSpec`); docs/THIRD_PARTY.md."""

from __future__ import annotations

from typing import Any

from rheo.decoders import Decoder, Law, Row, Table
from rheo.decoders.generate import PROCESSING, PROCESSING_ROWS, TIES_HELP, check_options
from rheo.decoders.seqspec.sampler import METHODS
from rheo_ref.errors import CaseError
from rheo_ref.models import Case

SEQSPEC_GAMMA = 5  # speculative_generate's default
MAX_GAMMA = 8  # the exact law enumerates V^gamma drafts a round


def method(text: str) -> str:
    if text not in METHODS:
        raise CaseError(f"decoder 'seqspec:{text}': unknown method {text!r}; allowed: {', '.join(METHODS)}")
    return text


def defaults(run: Any) -> dict[str, Any]:
    return {"temperature": 1, "gamma": SEQSPEC_GAMMA}  # the package's own temperature, 0.6, is not 1/k


def check(run: Any) -> None:
    check_options(run)
    g = run.options()["gamma"]
    if isinstance(g, bool) or not isinstance(g, int) or not 1 <= g <= MAX_GAMMA:
        raise CaseError(f"gamma={g!r} must be an integer in [1, {MAX_GAMMA}]")


def exact_law(case: Case, n: int, run: Any) -> Law | None:
    from rheo.decoders.seqspec.law import SeqSpec

    law = SeqSpec(case.target, case.q_samp_model, run.processing(), method=str(run.arg), gamma=run.options()["gamma"])
    return law.token_law(case.context, n)


def decode(case: Case, context: list[int], n: int, seed: int, num_samples: int, run: Any) -> list[tuple[int, ...]]:
    from rheo.decoders.seqspec.sampler import sample_seqspec

    return sample_seqspec(
        case, context, n, seed, num_samples, method=str(run.arg), gamma=run.options()["gamma"], proc=run.processing()
    )


DECODER = Decoder(
    name="seqspec",
    summary="sequential-speculative-decoding 0.1.1's speculative_generate(method=METHOD), unmodified,\n"
    "METHOD = standard | naive_hsd | capped_hsd (hierarchical speculative decoding);\n"
    "pip install --no-deps sequential-speculative-decoding==0.1.1",
    decode=decode,
    gen_keys=PROCESSING + ("gamma",),
    gen_help="gamma (draft tokens a round, 1..8, default 5), temperature (default 1; the package's\n"
    "own, on draft and target), top_k, top_p (the package has none: the tables are processed),\n" + TIES_HELP,
    exact_law=exact_law,
    arg="METHOD",
    parse_arg=method,
    defaults=defaults,
    check=check,
    package="sequential-speculative-decoding",
    examples=tuple(f"seqspec:{m}" for m in METHODS),
    order=60,
    path="seqspecdecod/generation.py (speculative_generate; standard_sd.py, naive_hsd.py, capped_hsd.py)",
    table=Table(  # docs/THIRD_PARTY.md §7: gamma = 3, 4 tokens (the first round's deepest draft and its bonus)
        case="tests/cases/hf.json",
        tokens=4,
        tv=0.25,
        rows=tuple(
            Row(f"{m} {setting}", {"gamma": 3, **gen}, arg=m) for m in METHODS for setting, gen in PROCESSING_ROWS
        ),
    ),
)
