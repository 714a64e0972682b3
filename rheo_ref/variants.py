"""Variants of the algorithm: the spec, and the deliberately broken mutants that the lossless
gate must reject (its negative controls).

A `Variant` is one frozen, typed description of how a round runs: a set of named settings, each
one step of the algorithm (docs/ALGORITHM.md §3 and §5 say what the right step is for the rheo
family, docs/SCHEMES.md §2 for the static family's verifiers). `SPEC` has every setting at its
correct value; each mutant in `MUTANTS` changes exactly one. Every setting belongs to one family
(`FAMILY_OF`), so a mutant belongs to the family of the setting it changes, and a case of the
other family refuses it (`Variant.check_family`). Both implementations read the settings, never a
name: the fast path (`rheo_fast`) takes a `Variant` argument wherever a step has a setting, and
the exact reference builds each mutant's exact counterpart from its settings (`rheo_ref.families.rheo.mutants`;
the static family's exact methods read them directly). Names exist only at the edges (the CLI,
the gate), where `variant_named` turns a name into a variant or refuses it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from .errors import CaseError
from .models import Proxy

SampleFrom = Literal["tail", "whole"]
VerifyRow = Literal["tail", "q_samp", "q_rank_tail"]
Rounding = Literal["float64", "float16"]
TryOrder = Literal["sampled_first", "fills_first"]
BonusRow = Literal["residual", "target", "stale"]
SiblingOrder = Literal["draw", "token_id"]
ProposalUpdate = Literal["verifier", "fixed"]
TraversalRate = Literal["residual", "one_minus_ms"]
LeafOrder = Literal["post_order", "min_index"]
MsUpdate = Literal["own", "other"]
TraversalBonus = Literal["mb", "target"]
PlanTokens = Literal["top_k", "sampled"]
Admission = Literal["slot", "own_survival"]


@dataclass(frozen=True)
class Variant:
    """How one round runs. Every field but `name`, `description` and `note` is a setting of one
    step; the defaults are the spec."""

    name: str
    description: str
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
    # the static family's verifiers (docs/SCHEMES.md §2)
    sibling_order: SiblingOrder = "draw"  # children tried in draw order, or sorted by token id (ties: draw order)
    proposal_update: ProposalUpdate = "verifier"  # specinfer/rrsw: each one's own proposal row after a rejection;
    #                                            fixed: the row never changes (rrsw then verifies as specinfer)
    traversal_rate: TraversalRate = "residual"  # α[u] after a removal: S/(S + 1 - α[u]), or min(1, S/(1 - Ms[u][x]))
    leaf_order: LeafOrder = "post_order"  # traversal's next leaf: first in post-order, or the live leaf created first
    ms_update: MsUpdate = "own"  # traversal's Ms update: the tree's own sampling mode's, or the other's
    traversal_bonus: TraversalBonus = "mb"  # traversal's bonus row: Mb at the accepted node, or p there
    # the tsubame family (docs/SCHEMES.md, "Family tsubame")
    plan_tokens: PlanTokens = "top_k"  # the topology planned on the deterministic Top-K tokens, or on the drawn ones
    # the treespark family (docs/SCHEMES.md §13)
    admission: Admission = "slot"  # θ tested on the slot's bound before its draw, or on the drawn child's own survival
    note: str = ""  # what the gate can and cannot see of it

    def changed(self) -> dict[str, object]:
        """The settings that differ from the spec's, by name."""
        return {name: getattr(self, name) for name in SETTINGS if getattr(self, name) != getattr(SPEC, name)}

    @property
    def family(self) -> str | None:
        """The family whose steps the changed settings belong to; None for the spec (every family)."""
        families = sorted({FAMILY_OF[name] for name in self.changed()})
        if len(families) > 1:
            raise CaseError(
                f"variant {self.name!r} changes settings of families {families}; "
                f"a variant changes the steps of one family"
            )
        return families[0] if families else None

    def check_family(self, family: str) -> None:
        """Refuse this variant on a case of `family` when it changes the other family's steps."""
        mine = self.family
        if mine is not None and mine != family:
            own = ", ".join(n for n, v in MUTANTS.items() if v.family == family)
            raise CaseError(
                f"mutant {self.name!r} belongs to the {mine} family; a case of family {family!r} "
                f"runs the spec or its own family's mutants ({own})"
            )


RHEO_SETTINGS = (
    "proxy",
    "sample_from",
    "verify_row",
    "sampled_as_point",
    "normalise_residual",
    "accept_on_equal",
    "rounding",
    "try_order",
    "bonus_row",
)
STATIC_SETTINGS = ("sibling_order", "proposal_update", "traversal_rate", "leaf_order", "ms_update", "traversal_bonus")
TSUBAME_SETTINGS = ("plan_tokens",)
TREESPARK_SETTINGS = ("admission",)
SETTINGS = RHEO_SETTINGS + STATIC_SETTINGS + TSUBAME_SETTINGS + TREESPARK_SETTINGS
FAMILY_OF = {
    **{name: "rheo" for name in RHEO_SETTINGS},
    **{name: "static" for name in STATIC_SETTINGS},
    **{name: "tsubame" for name in TSUBAME_SETTINGS},
    **{name: "treespark" for name in TREESPARK_SETTINGS},
}
# The static verifiers that read each static setting (a setting read by none leaves the round unchanged)
READ_BY = {
    "sibling_order": ("specinfer", "rrsw", "traversal"),
    "proposal_update": ("rrsw",),
    "traversal_rate": ("traversal",),
    "leaf_order": ("traversal",),
    "ms_update": ("traversal",),
    "traversal_bonus": ("traversal",),
    "admission": ("rrsw", "traversal"),  # treespark: the builder's, whatever the verifier
}

SPEC = Variant("spec", "the algorithm as pinned in docs/ALGORITHM.md")

MUTANTS: dict[str, Variant] = {
    v.name: v
    for v in [
        Variant(
            "proxy-true",
            "sampled slot ranked by its own q_rank(y) (the 'true' proxy: survival bias)",
            proxy=Proxy("true"),
        ),
        Variant(
            "proxy-const",
            "sampled slot ranked by the constant 1/4 instead of the rheo proxy",
            proxy=Proxy.parse("const:1/4"),
        ),
        Variant(
            "verify-q-not-qtilde",
            "sampled token verified (and residual taken) against q_samp instead of the tail q̃",
            verify_row="q_samp",
        ),
        Variant(
            "sample-whole-q",
            "sampled token drawn from the whole q_samp instead of the tail q̃ (verified against q̃)",
            sample_from="whole",
        ),
        Variant("residual-unnormalised", "residual after a rejection is not renormalised", normalise_residual=False),
        Variant(
            "stale-bonus",
            "bonus at a leaf reached by an accept drawn from the parent's stale residual, not p",
            bonus_row="stale",
        ),
        Variant(
            "one-hot-sampled",
            "sampled token treated as a point mass (accept w.p. r(y), zero y on reject)",
            sampled_as_point=True,
        ),
        Variant("bonus-full-p", "bonus drawn from the full p at the node instead of the residual", bonus_row="target"),
        Variant(
            "leq-coin",
            "accept when coin <= threshold, so a coin of 0 accepts a token of probability 0",
            accept_on_equal=True,
            note="effect ~2^-53 per coin: below any δ a sampler can detect",
        ),
        Variant(
            "float16",
            "coins and residuals rounded to float16 during verification",
            rounding="float16",
            note="effect ~2^-11 relative per coin (a model of the rounding)",
        ),
        Variant(
            "temp-sample-only",
            "y sampled from q_samp but verified against the tail of q_rank (temperature ignored in verification)",
            verify_row="q_rank_tail",
        ),
        Variant(
            "fills-first",
            "fills tried before the sampled token, q̃ not conditioned on their rejection",
            try_order="fills_first",
        ),
        # the static family (docs/SCHEMES.md §8)
        Variant(
            "traversal-bad-rate",
            "traversal: after a removal α[u] <- min(1, S/(1 - Ms[u][x])) instead of "
            "S/(S + 1 - α[u]) (a published third-party rule)",
            traversal_rate="one_minus_ms",
        ),
        Variant(
            "traversal-min-index-leaf",
            "traversal: the next leaf is the live leaf created first, not the first in post-order",
            leaf_order="min_index",
            note="the two orders differ only where a leaf is created before a deeper node (a parents shape)",
        ),
        Variant(
            "traversal-stale-bonus",
            "traversal: the bonus drawn from the original p at the accepted node, not Mb",
            traversal_bonus="target",
        ),
        Variant(
            "specinfer-on-wor",
            "wor siblings verified by specinfer: rrsw's proposal row kept fixed after a "
            "rejection (q not conditioned on the drawn tokens)",
            proposal_update="fixed",
        ),
        Variant(
            "traversal-wrong-update",
            "traversal: the Ms update of the other sampling mode (wor: Ms unchanged; iid: the rejected token removed)",
            ms_update="other",
        ),
        Variant(
            "sorted-siblings",
            "children verified in token-id order (ties in draw order) instead of draw order",
            sibling_order="token_id",
        ),
        # the treespark family (docs/SCHEMES.md §8, §13)
        Variant(
            "treespark-own-survival",
            "treespark: a child is admitted only if its own drawn survival surv(v)·g(q_rank(x|v)) >= θ "
            "(a failing draw is discarded and the round stops) instead of testing the slot's bound before the draw",
            admission="own_survival",
            note="identical to the spec at θ = 0",
        ),
        # the tsubame family (docs/SCHEMES.md §12)
        Variant(
            "tsubame-plan-after-sampling",
            "tsubame: the topology planned on the drawn tokens (K children drawn per expanded node, "
            "the best W per depth expanded, the best R kept) instead of on the Top-K tokens",
            plan_tokens="sampled",
            note="no vectorised fast path: its sampler is the reference replay (rheo_fast.families.tsubame.mutant)",
        ),
    ]
}


def variant_named(name: str | None) -> Variant:
    """The variant called `name` (None or "spec": the spec); an unknown name is refused here,
    so a typo can never run the spec silently."""
    if name is None or name == SPEC.name:
        return SPEC
    if not isinstance(name, str) or name not in MUTANTS:
        raise CaseError(f"unknown mutant {name!r}; allowed: {', '.join(MUTANTS)}")
    return MUTANTS[name]
