"""The lossless gate (`pytest -m lossless`): the fast path across the matrix of
rheo.selfgate.matrix — Top-K, Rheo m = 0, 1, 2, RRSw, chain; tables with and without zeros; q_samp
tables for temperatures 0.5 and 1; the fast path's own T = 0.5 and greedy T = 0 — on four checks
each (first 2 and 3 tokens vs the target law, the first round's sequence vs the exact round law, its length law). The matrix
holds the static family's rows too (every lossless pairing on a branching and a delayed shape,
and a parents shape): they run here, their coverage and references are tests/test_static_gate.py's.

Every test: α = ALPHA, derived as FAMILY_ALPHA (1e-4) over the number of tests (rows x checks;
3.7e-7 for 268 tests), so the family-wise false-alarm probability is ≤ FAMILY_ALPHA,
power 1 − BETA (0.99) at TV = DELTA (0.025), and it asserts that its detectable TV at its N is
≤ DELTA. Seeds come from the test id (the `rheo_seed` fixture of rheo.lossless.plugin).
The negative controls (mutants the same checks must reject) are in tests/test_mutants.py.
"""

from __future__ import annotations

import pytest

from rheo.families.rheo import SCHEMES
from rheo.lossless.stats import seed_for
from rheo.selfgate.matrix import (
    BETA,
    CHECKS,
    DELTA,
    FAMILY_ALPHA,
    alpha_per_test,
    family_alpha,
    fast_verdict,
    gate_cases,
    library_tests,
    run_check,
)
from rheo_ref.exact import Exact, target_law, tv
from rheo_ref.families.rheo.enumerate import enumerate_trees
from rheo_ref.families.rheo.tree import min_score_gap

ALPHA = alpha_per_test()  # the gate's per-test α, derived from the registered rows

pytest.importorskip("rheo_fast.decode", reason="the gate drives the fast path (rheo_fast)")

CASES = gate_cases()
RHEO_CASES = [name for name, gc in CASES.items() if gc.case.scheme.family == "rheo"]


@pytest.mark.lossless
@pytest.mark.parametrize("check", CHECKS)
@pytest.mark.parametrize("name", list(CASES))
def test_fast_path_passes_the_gate(name, check, rheo_seed):
    res = run_check(CASES[name], check, seed=rheo_seed, alpha=ALPHA, beta=BETA, tv=DELTA)
    assert res.detectable_tv <= DELTA, res.summary()
    assert not res.rejected, res.summary()


def test_the_per_test_alpha_is_the_family_wise_total_over_the_tests(request):
    """Every (case, check) pair is one test above; α per test is FAMILY_ALPHA split over them
    (Bonferroni), so their sum is the stated total, never more. A hand-set α of 1e-6 would not be."""
    ours = [i for i in request.session.items if i.originalname == "test_fast_path_passes_the_gate"]
    tests = len(CASES) * len(CHECKS)
    assert not ours or len(ours) == tests  # (when the gate tests are collected)
    assert library_tests() > 0  # the case library's checks (tests/test_bugclasses.py) share the total
    assert ALPHA == alpha_per_test() == FAMILY_ALPHA / (tests + library_tests())
    assert family_alpha() == pytest.approx(FAMILY_ALPHA) and family_alpha() <= FAMILY_ALPHA * (1 + 1e-12)
    assert family_alpha(1e-6) > FAMILY_ALPHA


def test_matrix_covers_every_scheme():
    names = set(RHEO_CASES)
    assert (
        {n.split("/")[0] for n in names}
        == set(SCHEMES)
        == {"topk", "rheo-m0", "rheo-m1", "rheo-m1-R2", "rheo-m2", "rrsw", "chain"}
    )
    assert any("zeros" in n for n in names) and any("zeros" not in n for n in names)
    assert {n.split("/")[1] for n in names} == {"T1", "T0.5", "T0", "fastT0.5"}
    for gc in CASES.values():
        if gc.T == 1.0:  # a separate q_samp table, for T = 1 equal to the draft and for T = 0.5 its square
            assert gc.case.draft_sample is not None


@pytest.mark.parametrize("name", RHEO_CASES)
def test_gate_references_are_exact_and_lossless(name):
    """The laws the gate tests against: the spec scheme's token law equals the target law
    exactly (so a rejection of the joint checks is a losslessness failure), and no two node
    scores of any tree are closer than 1e-9 without being equal (docs/ALGORITHM.md §8), so
    the round checks can compare the fast path's trees with the exact ones."""
    gc = CASES[name]
    ex = Exact(gc.case)
    assert tv(ex.token_law(3), target_law(gc.case, 3)) == 0
    for _, nodes, _ in enumerate_trees(gc.case, gc.case.context, "brute"):
        assert min_score_gap(nodes) > 1e-9


@pytest.mark.lossless
def test_fast_verdict_for_the_audit():
    """The `rheo audit` column: α = 1e-3, detects TV ≥ 0.05 with power 0.99 on the first 3
    tokens. The correct fast path passes; the bonus-full-p mutant (exact TV 0.185 here) fails."""
    case = CASES["rheo-m1/T0.5"].case
    ok = fast_verdict(case, alpha=1e-3, tv=0.05, seed=seed_for("audit|spec"))
    assert set(ok) >= {"verdict", "N", "alpha", "detectable_tv", "p_value"}
    assert ok["verdict"] == "pass" and ok["detectable_tv"] <= 0.05 and ok["alpha"] == 1e-3
    bad = fast_verdict(case, alpha=1e-3, tv=0.05, seed=seed_for("audit|mutant"), mutant="bonus-full-p")
    assert bad["verdict"] == "REJECT" and bad["N"] == ok["N"]
