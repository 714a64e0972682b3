"""The tsubame family's settings (`TsubameSteps`) and its mutant (docs/SCHEMES.md §12). Its
rounds build on the rheo family's tree and the static family's verifiers, run at their spec."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rheo_ref.variants import Variant

PlanTokens = Literal["top_k", "sampled"]


@dataclass(frozen=True)
class TsubameSteps:
    """How a tsubame round runs; the defaults are the spec."""

    plan_tokens: PlanTokens = "top_k"  # the topology planned on the deterministic Top-K tokens, or on the drawn ones


MUTANTS = (
    Variant(
        "tsubame-plan-after-sampling",
        "tsubame: the topology planned on the drawn tokens (K children drawn per expanded node, "
        "the best W per depth expanded, the best R kept) instead of on the Top-K tokens",
        "tsubame",
        TsubameSteps(plan_tokens="sampled"),
        note="no vectorised fast path: its sampler is the reference replay (rheo_fast.families.tsubame.mutant)",
    ),
)
