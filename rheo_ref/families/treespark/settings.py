"""The treespark family's settings (`TreeSparkSteps`, its builder's) and its mutant
(docs/SCHEMES.md §8, §13). Its rounds verify with the static family's verifiers at their spec."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rheo_ref.variants import Variant

Admission = Literal["slot", "own_survival"]


@dataclass(frozen=True)
class TreeSparkSteps:
    """How a treespark round builds its tree; the defaults are the spec."""

    admission: Admission = "slot"  # θ tested on the slot's bound before its draw, or on the drawn child's own survival


MUTANTS = (
    Variant(
        "treespark-own-survival",
        "treespark: a child is admitted only if its own drawn survival surv(v)·g(q_rank(x|v)) >= θ "
        "(a failing draw is discarded and the round stops) instead of testing the slot's bound before the draw",
        "treespark",
        TreeSparkSteps(admission="own_survival"),
        note="identical to the spec at θ = 0",
    ),
)
