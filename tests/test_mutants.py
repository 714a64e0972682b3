"""Negative controls of the lossless gate: deliberately broken fast paths, of every family.

- Every mutant of `rheo_ref.variants.MUTANTS` has an exact counterpart built from its settings (rheo_ref.families.rheo.mutants),
  and the seams those counterparts use reproduce the spec exactly when they change nothing.
- On its gate case (rheo.selfgate.matrix.mutant_case: MUTANT_CASES for the rheo family, STATIC_MUTANT_CASES
  for the static one) every mutant but the float-level ones (leq-coin, float16) moves the law of
  the first 3 tokens by an exact TV ≥ DELTA — except one-hot-sampled, which is lossless and moves
  only the round and length laws; the two float-level ones are below DELTA and reported so.
- (lossless) The gate's tests reject every fast mutant whose exact TV is ≥ DELTA, on each
  check where it is (power ≥ 0.99 each), and each fast mutant's first-round law fits its exact
  counterpart's (α = 1e-6, δ = 0.05), so the exact TVs in `rheo mutants` describe what runs.
"""

from __future__ import annotations

import inspect
from fractions import Fraction

import pytest
from hypothesis import given

from rheo.families.rheo import MUTANT_CASES
from rheo.selfgate.matrix import (
    BETA,
    DELTA,
    MUTANT_CASE,
    alpha_per_test,
    canonical,
    exact_tvs,
    gate_cases,
    mutant_case,
    mutant_cases,
    run_check,
)
from rheo_ref.errors import CaseError
from rheo_ref.exact import Exact
from rheo_ref.families.rheo.enumerate import BruteChooser
from rheo_ref.families.rheo.mutants import (
    EXACT_MUTANTS,
    ExactMutant,
    MutantExact,
    OrderByTreeKind,
    StaleBonus,
    _all_as_sampled,
    counterpart,
    half_coin_below,
)
from rheo_ref.families.rheo.strategies import cases
from rheo_ref.families.rheo.verify import Rules
from rheo_ref.families.static.scheme import StaticScheme
from rheo_ref.slot_steps import SlotSteps
from rheo_ref.variants import MUTANTS, SPEC, Variant
from rheo_ref.verifier_laws import READ_BY, VerifierSteps

ALPHA = alpha_per_test()  # the gate's per-test α, derived from the registered rows

BELOW_DELTA = {"leq-coin", "float16"}  # float-level effects: exact TV far below any δ
LOSSLESS = {"one-hot-sampled"}  # a point-mass check of a drawn token is lossless: caught by the round checks only
GC = gate_cases()[MUTANT_CASE]


@pytest.fixture(scope="module")
def tvs() -> dict[str, dict[str, Fraction]]:
    """Exact TV per check of each mutant on its gate case (rheo.selfgate.matrix.mutant_case)."""
    return {name: exact_tvs(gate_cases()[mutant_case(name)], name) for name in EXACT_MUTANTS}


def test_every_mutant_has_an_exact_counterpart_built_from_its_settings():
    assert set(EXACT_MUTANTS) == set(MUTANTS) and len(MUTANTS) >= 18
    assert all(EXACT_MUTANTS[n].variant is v for n, v in MUTANTS.items())
    with pytest.raises(CaseError, match="exactly one setting"):
        counterpart(SPEC)
    with pytest.raises(CaseError, match="exactly one setting"):
        counterpart(Variant("two", "", "rheo", SlotSteps(normalise_residual=False, try_order="fills_first")))


def test_mutants_are_never_the_default():
    from rheo_fast import slots, tree, verify
    from rheo_fast.decode import decode
    from rheo_fast.families.rheo.round import run_round
    from rheo_fast.families.static import round as fast_static
    from rheo_ref import exact
    from rheo_ref import verifier_laws as verifiers
    from rheo_ref.families.static import exact as static_exact
    from rheo_ref.families.static import replay as static_replay

    for fn in (
        decode,
        run_round,
        fast_static.static_round,
        exact.Exact,
        static_exact.StaticRounds,
        static_replay.replay_static_round,
        static_replay.replay_static_decode,
    ):
        assert inspect.signature(fn).parameters["variant"].default is SPEC, fn
    # the steps below take their family's settings: the spec's by default
    for fn in (
        fast_static.verify_topdown,
        fast_static.verify_traversal,
        fast_static.traversal_reject,
        static_exact.brute_round_law,
        verifiers.verify_tree_law,
        verifiers.traversal_reject,
        verifiers.TraversalState,
        verifiers.topdown_law,
        verifiers.traversal_law,
    ):
        assert inspect.signature(fn).parameters["steps"].default == VerifierSteps(), fn
    for fn in (slots.expand, tree.build_tree, verify.verify, verify.try_sampled, verify.residual_sampled):
        assert inspect.signature(fn).parameters["steps"].default == SlotSteps(), fn
    with pytest.raises(CaseError, match="unknown mutant"):
        MutantExact(GC.case, "no-such-mutant")


@given(case=cases(max_vocab=4, max_depth=2, max_tokens=2, max_trees=120))
def test_seams_change_nothing_by_themselves(case):
    """A tree rewrite that turns every point mass into a sampled node with q̃ = δ_t (used by
    leq-coin and float16), rules that order by the tree's kinds, and the tagged rows of
    stale-bonus with its bonus unused: the same round law as the reference, exactly."""
    ref = Exact(case, "brute").round_law()
    assert (
        MutantExact(
            case, ExactMutant(Variant("points-as-sampled", ""), nodes=_all_as_sampled, rules=OrderByTreeKind())
        ).round_law()
        == ref
    )

    class TaggedOnly(StaleBonus):
        def bonus(self, r, p):
            return Rules.bonus(self, r, p)

    assert MutantExact(case, ExactMutant(Variant("tagged", ""), rules=TaggedOnly())).round_law() == ref
    assert (
        MutantExact(case, ExactMutant(Variant("identity", ""), chooser=lambda rec, c: BruteChooser())).round_law()
        == ref
    )


def test_exact_tv_of_every_mutant_on_the_gate_case(tvs):
    for name, t in tvs.items():
        assert all(x >= 0 for x in t.values())
        if name in BELOW_DELTA:
            assert 0 < max(t.values()) < Fraction(1, 1000), (name, t)
        else:
            assert max(t.values()) >= DELTA, (name, t)
        if name in LOSSLESS:
            assert t["joint2"] == t["joint3"] == 0 and t["round"] >= DELTA, (name, t)
        elif name not in BELOW_DELTA:
            assert t["joint3"] >= DELTA, (name, t)  # a losslessness failure, not only a deviation from the spec


def test_float_helpers():
    assert half_coin_below(Fraction(0)) == 0
    assert half_coin_below(Fraction(2)) == 1
    assert half_coin_below(Fraction(1)) == 1 - Fraction(1, 2**12)  # u >= 1 - 2^-12 rounds to 1.0
    assert canonical([1, 2, -1, 0], 3) == (1, 2, 3, 3)


@pytest.mark.lossless
@pytest.mark.parametrize("name", sorted(set(EXACT_MUTANTS) - BELOW_DELTA))
def test_gate_rejects_the_mutant(name, tvs):
    """The joint-3 and round checks, wherever the mutant's exact TV on them is ≥ DELTA, reject
    the fast mutant (α = ALPHA, power ≥ 0.99 each). All four checks of every mutant: `rheo
    mutants` and tests/test_mutants_cli.py."""
    checks = [ch for ch in ("joint3", "round") if tvs[name][ch] >= DELTA]
    assert checks
    for ch in checks:
        res = run_check(gate_cases()[mutant_case(name)], ch, mutant=name, alpha=ALPHA, beta=BETA, tv=DELTA)
        assert res.rejected, f"{res.summary()}; exact TV {float(tvs[name][ch]):.4f} >= δ {DELTA}"
        # the rejection says where: the conditional law that deviates most and the worst cells
        assert res.worst_conditional is not None and res.top_cells, res.summary()
        assert res.worst_conditional.text() in res.summary() and res.worst_conditional.p_value < 1e-3


# Where each family's fast mutants are compared with their exact counterparts: the mutant cases,
# and one more whose verifier tries children differently (rheo: rrsw, where the sampled child is
# not tried first; static: iid siblings, where the Ms update, the proposal update and the leaf
# order act differently from wor's)
FIT_CASES = {"rheo": (*MUTANT_CASES, "rrsw/T1"), "static": ("parents-iid-traversal/T1", "delayed-iid-rrsw/T1")}


def fit_cases(name: str) -> tuple[str, ...]:
    """The cases of `test_fast_mutant_matches_its_exact_counterpart`: the mutant's gate cases
    (`mutant_cases`: for a static mutant, those whose verifier reads its setting) and its family's
    FIT_CASES whose verifier reads it."""
    v = MUTANTS[name]
    if v.family == "rheo":
        return FIT_CASES["rheo"]
    if v.family in ("treespark", "tsubame"):  # its gate cases (tsubame: its sampler is the reference replay)
        return mutant_cases(name)
    (setting,) = v.changed()
    extra = [c for c in FIT_CASES["static"] if gate_cases()[c].case.scheme_as(StaticScheme).verify in READ_BY[setting]]
    return (*mutant_cases(name), *extra)


@pytest.mark.lossless
@pytest.mark.parametrize("name", sorted(EXACT_MUTANTS))
def test_fast_mutant_matches_its_exact_counterpart(name):
    """α = 1e-6, detects TV ≥ 0.05 with power 0.99, on the first round's law (`fit_cases`). This
    test found two divergences, both fixed in rheo_fast: stale-bonus kept a residual with every
    tried point of the run zeroed, and sample-whole-q's scatter with duplicate token ids could
    undo a rejection's zeroing."""
    for case in fit_cases(name):
        gc = gate_cases()[case]
        law = MutantExact(gc.case, name).round_law()
        res = run_check(gc, "round", mutant=name, law=law, alpha=1e-6, beta=0.01, tv=0.05)
        assert not res.rejected, res.summary()
