"""The step settings of a slot tree round (docs/ALGORITHM.md §3 slot expansion, §5 verification):
`SlotSteps`, the rheo family's typed settings (`rheo_ref.family.Family.steps`).

Its defaults are the spec; each of the rheo family's mutants (`rheo_ref.families.rheo.settings`)
changes one field. The type sits here, in shared code, rather than in the family's folder because
the fast path's slot expansion and verification (`rheo_fast.slots`, `rheo_fast.verify`,
`rheo_fast.tree`) are shared by the fast rounds of every family and read it; the verifiers'
settings sit beside their laws (`rheo_ref.verifier_laws.VerifierSteps`) for the same reason.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from rheo_ref.models import Proxy

SampleFrom = Literal["tail", "whole"]
VerifyRow = Literal["tail", "q_samp", "q_rank_tail"]
Rounding = Literal["float64", "float16"]
TryOrder = Literal["sampled_first", "fills_first"]
BonusRow = Literal["residual", "target", "stale"]


@dataclass(frozen=True)
class SlotSteps:
    """How a slot tree round runs, one field per step; the defaults are the spec."""

    # slot expansion (§3)
    proxy: Proxy | None = None  # rank the sampled slot by this proxy instead of the scheme's
    sample_from: SampleFrom = "tail"  # draw y from q̃ (the tail) or from the whole q_samp row
    verify_row: VerifyRow = "tail"  # the row y is verified against: q̃, q_samp, or q_rank's tail
    # verification (§5)
    sampled_as_point: bool = False  # try y as a point mass (accept w.p. r(y)) instead of against q̃
    normalise_residual: bool = True  # renormalise r after a rejection
    accept_on_equal: bool = False  # accept when u <= threshold (spec: u < threshold)
    rounding: Rounding = "float64"  # precision of coins and residuals during verification
    try_order: TryOrder = "sampled_first"  # fills_first: top-m, fills, then y, whatever the verify order
    bonus_row: BonusRow = "residual"  # the row the bonus token is drawn from at the end


SLOT_SPEC = SlotSteps()
