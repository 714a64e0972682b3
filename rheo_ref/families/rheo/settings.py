"""The rheo family's mutants: each a `rheo_ref.variants.Variant` whose `SlotSteps` (the family's
settings, `rheo_ref.slot_steps`) change one step of slot expansion (docs/ALGORITHM.md §3) or
verification (§5). Their exact counterparts are built from these settings (`mutants.counterpart`)."""

from __future__ import annotations

from rheo_ref.models import Proxy
from rheo_ref.slot_steps import SlotSteps
from rheo_ref.variants import Variant


def _mutant(name: str, description: str, note: str = "", **changes: object) -> Variant:
    return Variant(name, description, "rheo", SlotSteps(**changes), note)  # type: ignore[arg-type]


MUTANTS = (
    _mutant(
        "proxy-true",
        "sampled slot ranked by its own q_rank(y) (the 'true' proxy: survival bias)",
        proxy=Proxy("true"),
    ),
    _mutant(
        "proxy-const",
        "sampled slot ranked by the constant 1/4 instead of the rheo proxy",
        proxy=Proxy.parse("const:1/4"),
    ),
    _mutant(
        "verify-q-not-qtilde",
        "sampled token verified (and residual taken) against q_samp instead of the tail q̃",
        verify_row="q_samp",
    ),
    _mutant(
        "sample-whole-q",
        "sampled token drawn from the whole q_samp instead of the tail q̃ (verified against q̃)",
        sample_from="whole",
    ),
    _mutant("residual-unnormalised", "residual after a rejection is not renormalised", normalise_residual=False),
    _mutant(
        "stale-bonus",
        "bonus at a leaf reached by an accept drawn from the parent's stale residual, not p",
        bonus_row="stale",
    ),
    _mutant(
        "one-hot-sampled",
        "sampled token treated as a point mass (accept w.p. r(y), zero y on reject)",
        sampled_as_point=True,
    ),
    _mutant("bonus-full-p", "bonus drawn from the full p at the node instead of the residual", bonus_row="target"),
    _mutant(
        "leq-coin",
        "accept when coin <= threshold, so a coin of 0 accepts a token of probability 0",
        accept_on_equal=True,
        note="effect ~2^-53 per coin: below any δ a sampler can detect",
    ),
    _mutant(
        "float16",
        "coins and residuals rounded to float16 during verification",
        rounding="float16",
        note="effect ~2^-11 relative per coin (a model of the rounding)",
    ),
    _mutant(
        "temp-sample-only",
        "y sampled from q_samp but verified against the tail of q_rank (temperature ignored in verification)",
        verify_row="q_rank_tail",
    ),
    _mutant(
        "fills-first",
        "fills tried before the sampled token, q̃ not conditioned on their rejection",
        try_order="fills_first",
    ),
)
