"""EAGLE-1 (the PyPI package eagle-llm 1.2.1, SafeAILab) under the gate: `EaModel.eagenerate`, unmodified,
on the stand-in kit (`sampler`: eagle's own modules with only the neural ones replaced by
`rheo_fast.kit`), and its exact law as coded (`law.Eagle`); docs/THIRD_PARTY.md §6."""

from __future__ import annotations

from typing import Any

from rheo.decoders import Decoder, Law, Row, Table
from rheo.decoders.eagle.sampler import EAGLE_CHILDREN
from rheo.decoders.generate import PROCESSING, PROCESSING_ROWS, TRANSFORMERS_TIES, TRANSFORMERS_TIES_HELP, check_options
from rheo_ref.errors import CaseError
from rheo_ref.models import Case


def defaults(run: Any) -> dict[str, Any]:
    return {"temperature": 1}  # eagle's own default, 0, is greedy


def check(run: Any) -> None:
    gen = dict(run.gen)
    if gen.get("top_k") and gen.get("top_p") not in (None, 1):
        raise CaseError(
            "decoder eagle: --gen top_k and top_p together are not supported (eagle applies top-p before "
            "top-k, transformers top-k before top-p); give one of them"
        )
    check_options(run)


def check_case(case: Case, run: Any) -> None:
    if case.vocab_size < EAGLE_CHILDREN:
        raise CaseError(
            f"decoder eagle draws {EAGLE_CHILDREN} children per node without replacement: it needs "
            f"vocab_size >= {EAGLE_CHILDREN}, got {case.vocab_size}"
        )


def exact_law(case: Case, n: int, run: Any) -> Law | None:
    from rheo.decoders.eagle.law import Eagle

    return Eagle(case.target, case.q_samp_model, run.processing()).token_law(case.context, n)


def decode(case: Case, context: list[int], n: int, seed: int, num_samples: int, run: Any) -> list[tuple[int, ...]]:
    from rheo.decoders.eagle.sampler import sample_eagle

    return sample_eagle(case, context, n, seed, num_samples, gen=run.options())


DECODER = Decoder(
    name="eagle",
    summary="eagle-llm 1.2.1's EaModel.eagenerate (EAGLE-1), unmodified, on the stand-in kit\n"
    "(rheo_fast.kit); needs vocab_size >= 10 and pip install --no-deps eagle-llm==1.2.1",
    decode=decode,
    gen_keys=PROCESSING,
    gen_help="temperature (default 1), top_k or top_p (not both: eagle applies top-p first),\n"
    + TRANSFORMERS_TIES_HELP,
    exact_law=exact_law,
    defaults=defaults,
    check=check,
    ties=TRANSFORMERS_TIES,  # eagle/model/utils.py lines 52-54 (eagle-llm 1.2.1): transformers' TopP/TopKLogitsWarper
    check_case=check_case,
    package="eagle-llm",
    order=50,
    path="eagle/model/ea_model.py (EaModel.eagenerate)",
    table=Table(  # docs/THIRD_PARTY.md §6: the horizon test, every window (x_{k-1}, x_k), k <= 7
        case="tests/cases/eagle.json",
        tv=0.25,
        rows=tuple(Row(setting, gen, horizon=7) for setting, gen in PROCESSING_ROWS),
    ),
)
