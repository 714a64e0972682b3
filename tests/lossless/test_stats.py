"""The χ²/G trio of rheo.lossless.stats: the power formula, its inverse, pooling, the assertion, and
(quality) that α and the power 1−β hold empirically on multinomial samples.

Meta-tests that count rejections over many simulated runs state their own level ALPHA_META:
they fail with probability at most ALPHA_META when the code is right. Their seeds are fixed.
"""

from __future__ import annotations

import math
from fractions import Fraction

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from scipy.stats import chi2, ncx2

from rheo import assert_lossless
from rheo.lossless.stats import (
    MIN_EXPECTED,
    LosslessError,
    StatsError,
    assert_law,
    check_law,
    law_sampler,
    min_detectable_tv,
    min_num_samples,
    noncentrality,
    pool_cells,
    sample_law,
    samples_for,
    seed_for,
)
from rheo.selfgate.matrix import MUTANT_CASE, gate_cases
from rheo_ref.errors import RheoError
from rheo_ref.exact import Exact
from rheo_ref.families.rheo.mutants import mutant_law, mutant_tv
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.models import Case, TableModel
from rheo_ref.strategies import prob_vectors

ALPHA_META = 1e-3
F = Fraction


def law_of(row) -> dict:
    return {(i,): p for i, p in enumerate(row)}


# --- the power formula and its inverse ------------------------------------------------------


@pytest.mark.parametrize("df", [1, 3, 10, 63, 265])
@pytest.mark.parametrize("alpha,beta", [(1e-2, 0.1), (1e-3, 0.01), (1e-4, 0.01)])
def test_noncentrality_gives_the_stated_power(df, alpha, beta):
    lam = noncentrality(df, alpha, beta)
    assert ncx2.sf(chi2.isf(alpha, df), df, lam) == pytest.approx(1 - beta, abs=1e-8)


@given(
    tv=st.floats(0.005, 0.5),
    alpha=st.sampled_from([1e-2, 1e-3, 1e-4]),
    beta=st.sampled_from([0.1, 0.01]),
    cells=st.integers(2, 300),
)
def test_min_num_samples_is_the_smallest_n_that_detects_tv(tv, alpha, beta, cells):
    n = min_num_samples(tv, alpha, beta, cells)
    assert min_detectable_tv(n, alpha, beta, cells) <= tv * (1 + 1e-9)
    if n > 1:
        assert min_detectable_tv(n - 1, alpha, beta, cells) > tv * (1 - 1e-9)


def test_min_num_samples_is_monotone():
    base = min_num_samples(0.05, 1e-3, 0.01, 10)
    assert min_num_samples(0.025, 1e-3, 0.01, 10) > base  # smaller TV: more samples
    assert min_num_samples(0.05, 1e-4, 0.01, 10) > base  # smaller α: more samples
    assert min_num_samples(0.05, 1e-3, 0.001, 10) > base  # more power: more samples
    assert min_num_samples(0.05, 1e-3, 0.01, 100) > base  # more cells: more samples
    # N = ceil(λ*/(4δ²)): quadrupling when δ halves, up to the ceiling
    assert abs(min_num_samples(0.025, 1e-3, 0.01, 10) - 4 * base) <= 4


def test_point_mass_detection_uses_the_impossible_outcomes():
    # one possible cell: a sampler at TV δ puts mass δ elsewhere; it goes unseen w.p. (1-δ)^n
    n = 90
    d = min_detectable_tv(n, 1e-3, 0.01, 1)
    assert (1 - d) ** n == pytest.approx(0.01)
    assert samples_for({(0,): F(1)}, 0.05, 1e-3, 0.01) == math.ceil(math.log(0.01) / math.log(0.95))


@pytest.mark.parametrize(
    "bad",
    [
        dict(tv=0, alpha=1e-3, beta=0.01, cells=3),
        dict(tv=0.05, alpha=0, beta=0.01, cells=3),
        dict(tv=0.05, alpha=1, beta=0.01, cells=3),
        dict(tv=0.05, alpha=1e-3, beta=1.5, cells=3),
        dict(tv=0.05, alpha=True, beta=0.01, cells=3),
        dict(tv=0.05, alpha=1e-3, beta=0.01, cells=1),
        dict(tv=0.05, alpha="0.01", beta=0.01, cells=3),
    ],
)
def test_bad_arguments_raise_a_rheo_error_naming_them(bad):
    with pytest.raises(StatsError) as e:
        min_num_samples(**bad)
    assert isinstance(e.value, RheoError) and isinstance(e.value, ValueError)
    name = next(
        k for k, v in bad.items() if (k, v) not in {("tv", 0.05), ("alpha", 1e-3), ("beta", 0.01), ("cells", 3)}
    )
    assert name in str(e.value)
    with pytest.raises(StatsError, match="n=0"):
        min_detectable_tv(0, 1e-3, 0.01, 3)


# --- pooling and the assertion ---------------------------------------------------------------


@given(row=prob_vectors(12, max_weight=40), n=st.integers(1, 5000))
@example(row=(F(1),) + (F(0),) * 11, n=10)
def test_pooling_partitions_the_support_into_cells_with_enough_mass(row, n):
    law = law_of(row)
    groups = pool_cells(law, n)
    flat = [k for g in groups for k in g]
    assert sorted(flat) == sorted(k for k, p in law.items() if p > 0)
    if len(groups) >= 2:
        assert all(n * sum(law[k] for k in g) >= MIN_EXPECTED for g in groups)
    assert sum(len(g) > 1 for g in groups) <= 1  # one pooled cell at most


def test_ten_samples_of_three_outcomes_certify_only_a_large_tv():
    """The set test at n = 10 on a uniform law of 3: the weakest set is a pair C (p(C) = 2/3), whose
    count is 0 with probability (1 − (2/3 − δ))^10; that is ≥ 0.99 first near δ = 0.6657, and the
    pair's critical count 0 has level (1/3)^10 ≤ α/7. Ten samples on one outcome are rejected;
    a stated δ of 1/2 is refused as too few samples."""
    law = {(0,): F(1, 3), (1,): F(1, 3), (2,): F(1, 3)}
    res = check_law([(0,)] * 10, law, alpha=1e-3, tv=0.5)
    exact = 2 / 3 - (1 - 0.99 ** (1 / 10))  # P(C) with (1 − P(C))^10 = 0.99
    # the sets' p(C) are read on a 1e-4 grid (conservative): δ may rise by that much, p by a hair
    assert res.cells == 3 and res.null == "sets" and exact <= res.detectable_tv <= exact + 1e-4 + 2e-4 * exact
    assert res.rejected and 7 * (1 / 3) ** 10 <= res.p_value <= 7 * (1 / 3 + 1e-4) ** 10
    balanced = check_law([(0,)] * 4 + [(1,)] * 3 + [(2,)] * 3, law, alpha=1e-3, tv=0.7)
    assert not balanced.rejected
    with pytest.raises(LosslessError, match="too few samples"):
        assert_law([(0,)] * 4 + [(1,)] * 3 + [(2,)] * 3, law, alpha=1e-3, tv=0.5)


def test_an_impossible_outcome_rejects_outright():
    law = {(0,): F(1, 2), (1,): F(1, 2), (2,): F(0)}
    res = check_law([(0,)] * 50 + [(1,)] * 49 + [(2,)], law, alpha=1e-3, tv=0.5)
    assert res.rejected and res.impossible == 1 and res.p_value == 0


def test_assert_law_refuses_a_test_too_weak_for_its_claim():
    law = {(0,): F(1, 2), (1,): F(1, 2)}
    with pytest.raises(LosslessError, match="too few samples"):
        assert_law([(0,), (1,)] * 50, law, alpha=1e-3, tv=0.05)


def test_the_g_statistic_is_refused_it_has_no_finite_n_proof():
    with pytest.raises(StatsError, match="statistic='g'; allowed: pearson"):
        check_law([(0,)] * 10, {(0,): F(1, 2), (1,): F(1, 2)}, alpha=1e-3, tv=0.5, statistic="g")


@pytest.mark.parametrize("statistic", ["pearson"])
def test_assert_law_passes_the_true_law_and_rejects_a_law_at_tv_delta(statistic):
    law = {(0,): F(1, 2), (1,): F(3, 10), (2,): F(1, 5)}
    bad = {(0,): F(1, 2) - F(1, 20), (1,): F(3, 10) + F(1, 20), (2,): F(1, 5)}  # TV = 0.05
    n = samples_for(law, 0.05, 1e-3, 0.01)
    res = assert_law(sample_law(law, n, seed_for("stats|true")), law, alpha=1e-3, tv=0.05, statistic=statistic)
    assert not res.rejected and res.detectable_tv <= 0.05
    with pytest.raises(LosslessError):
        assert_law(sample_law(bad, n, seed_for("stats|bad")), law, alpha=1e-3, tv=0.05, statistic=statistic)


# --- quality: α and power hold on simulated multinomials -------------------------------------


# --- assert_lossless on exact samplers (the positive and negative controls) ---------------------


def _case() -> Case:
    q = TableModel.from_rows(
        {
            (): ["1/2", "3/10", "1/5"],
            (0,): ["1/2", "3/10", "1/5"],
            (1,): ["1/3", "1/3", "1/3"],
            (2,): ["1/5", "1/5", "3/5"],
        },
        context_length=1,
        name="draft",
    )
    p = TableModel.from_rows(
        {(): ["1/4", "1/4", "1/2"], (0,): ["1/6", "1/2", "1/3"], (1,): ["0", "1/2", "1/2"], (2,): ["1", "0", "0"]},
        context_length=1,
        name="target",
    )
    return Case(q, p, Scheme(3, 1, 2, 2, 4), (0,), 3)


def test_assert_lossless_passes_the_exact_law_and_catches_a_lossy_scheme():
    """α = 1e-3, detects TV ≥ 0.05 with power 0.99. Negative control: the exact law of the
    `bonus-full-p` mutant, whose exact TV to the target on this case is checked to be ≥ 0.05."""
    case = gate_cases()[MUTANT_CASE].case
    res = assert_lossless(law_sampler(lambda c, n: Exact(c).token_law(n)), case, alpha=1e-3, tv=0.05)
    assert res.detectable_tv <= 0.05 and not res.rejected
    assert mutant_tv(case, "bonus-full-p") >= F(1, 20)
    with pytest.raises(LosslessError):
        assert_lossless(law_sampler(lambda c, n: mutant_law(c, "bonus-full-p", n)), case, alpha=1e-3, tv=0.05)


def test_assert_lossless_validates_the_sampler_output():
    case = _case()
    with pytest.raises(StatsError, match="at least 3"):
        assert_lossless(lambda c, s, n: [(0,)] * n, case, alpha=1e-3, tv=0.05, seed=1)
    with pytest.raises(StatsError, match="returned 1 sequences"):
        assert_lossless(lambda c, s, n: [(0, 0, 0)], case, alpha=1e-3, tv=0.05, seed=1)
    with pytest.raises(StatsError, match="not callable"):
        assert_lossless(None, case, alpha=1e-3, tv=0.05, seed=1)


def test_seeds_are_fixed_by_the_test_id_and_vary_with_the_salt():
    assert seed_for("a::b", "") == seed_for("a::b", "")
    assert seed_for("a::b", "") != seed_for("a::c", "")
    assert seed_for("a::b", "") != seed_for("a::b", "2026-11-29")
    assert 0 <= seed_for("x", "") < 2**63
