"""A mutant's exact law where a round ends in the invalid token V (a bonus drawn from a residual of
zero mass): decoding stops there and the rest of the tokens are V, as the gate reads the fast path's
output (`rheo.selfgate.matrix.canonical`), instead of asking the draft for a row after token V."""

from __future__ import annotations

from fractions import Fraction

from rheo.mutants.best_cases import BEST_HUNTED
from rheo.mutants.hunt import variant_case
from rheo_ref.families.rheo.mutants import MutantExact


def test_the_invalid_token_ends_the_decode():
    h = BEST_HUNTED["residual-unnormalised"]
    case = variant_case("residual-unnormalised", h["seed"], h["i"]).case
    V = case.vocab_size
    law = MutantExact(case, "residual-unnormalised").token_law(3)
    assert sum(law.values()) == 1
    invalid = {s: p for s, p in law.items() if V in s}
    assert invalid, "the hunted case reaches a residual of zero mass"
    for s in invalid:
        first = s.index(V)
        assert all(t == V for t in s[first:]) and all(0 <= t < V for t in s[:first]), s
    assert sum(invalid.values(), Fraction(0)) < 1
