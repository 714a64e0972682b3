"""transformers' assisted generation with `assistant_ensemble_weight=W`: the target's logits mixed with
the draft's before sampling (documented as lossy), gated on the case's `TableLM`s; its exact law is
assisted generation's chain with the weight (`rheo.decoders.laws.Chain`)."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from rheo.decoders import Decoder, Law, Row, Table
from rheo.decoders.assisted import GEN_HELP, chain_law, defaults
from rheo.decoders.generate import ON_DRAFT, PROCESSING, TRANSFORMERS_TIES, check_options, generate
from rheo_ref.errors import CaseError
from rheo_ref.families.static.scheme import parse_weight
from rheo_ref.models import Case


def weight(text: str) -> Fraction:
    """W of `ensemble:W`: a rational in (0, 1)."""
    w = parse_weight(text)
    if w == 1:
        raise CaseError(
            f"decoder 'ensemble:{text}': transformers needs an ensemble weight in (0, 1); 1 is plain assisted"
        )
    return w


def exact_law(case: Case, n: int, run: Any) -> Law | None:
    return chain_law(case, n, run, run.arg)


def decode(case: Case, context: list[int], n: int, seed: int, num_samples: int, run: Any) -> list[tuple[int, ...]]:
    return generate(case, context, n, seed, num_samples, run.options(), draft=True, weight=float(run.arg))


DECODER = Decoder(
    name="ensemble",
    summary="the same with assistant_ensemble_weight=W (a rational in (0, 1), e.g. 1/2; lossy)",
    decode=decode,
    gen_keys=ON_DRAFT + PROCESSING,
    gen_help=GEN_HELP,
    exact_law=exact_law,
    arg="W",
    parse_arg=weight,
    defaults=defaults,
    check=check_options,
    ties=TRANSFORMERS_TIES,
    examples=("ensemble:1/2",),
    order=30,
    path="transformers/generation/candidate_generator.py (AssistedCandidateGenerator, assistant_ensemble_weight)",
    table=Table(  # docs/THIRD_PARTY.md §2: documented lossy, the negative control of transformers' rows
        case="tests/cases/hf.json",
        tokens=2,
        tv=0.25,
        rows=(
            Row(
                "W=1/2 k=2",
                {"num_assistant_tokens": 2, "assistant_confidence_threshold": 0.0},
                "assistant_ensemble_weight = 1/2, no confidence stop",
                arg="1/2",
                control=True,
                cause="the candidate generator mixes the draft's logits into the target's at weight W",
            ),
            Row(
                "W=9/10 k=3 slow",
                {"num_assistant_tokens": 3, "assistant_confidence_threshold": 0.0},
                "assistant_ensemble_weight = 9/10",
                arg="9/10",
                control=True,
                alpha=1e-4,
                tv=0.05,
                tokens=3,
                slow=True,
            ),
        ),
    ),
)
