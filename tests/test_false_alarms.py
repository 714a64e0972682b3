"""The gate's false-alarm measurement: the correct fast path under many seeds is rejected at a
rate consistent with the level (docs/GATE_REFERENCE.md, "The fewest samples").

Each seed runs one gate test (seed i: check i mod 4) on the false-alarm case and reads its
p-value at α = 0.05; the count of rejections is compared with Binomial(seeds, 0.05) by a
two-sided binomial test at level ALPHA_META = 0.01 (the test fails when its p-value is below it).
Seeds are fixed (`rheo.lossless.stats.seed_for` of the seed index), never chosen because they pass.

- (slow) 1,000 seeds at the gate's δ, α and β (`rheo mutants --seeds 1000`): rate consistent with
  0.05 and with α.
- (default) 120 seeds at δ = 0.1 (each test 16× cheaper; the p-values' calibration does not
  depend on δ): the same assertion. At 120 seeds it rejects (p < 0.01) when none, or 13 or
  more, of the tests reject; a sampler whose tests reject at 0.05 with probability ≥ 0.19 is
  caught with power ≥ 0.99 (`_power` below). The negative control runs the same measurement on a
  broken sampler (`stale-bonus`, exact TV ≥ 0.07 on this case) and shows the assertion fails.
"""

from __future__ import annotations

import pytest
from scipy.stats import binom, binomtest

from rheo.mutants.runner import false_alarms
from rheo.selfgate.matrix import BETA, DELTA, MUTANT_CASE, alpha_per_test, exact_tvs, gate_cases

ALPHA_META = 0.01
QUICK_SEEDS = 120
QUICK_TV = 0.1
BROKEN = "stale-bonus"


def _consistent(fa: dict, key: str) -> bool:
    return fa[key]["binomial_p"] >= ALPHA_META


def _power(seeds: int, rate: float) -> float:
    """Probability that the two-sided binomial test at ALPHA_META rejects when the per-test
    rejection probability is `rate` instead of 0.05."""
    bad = [k for k in range(seeds + 1) if binomtest(k, seeds, 0.05).pvalue < ALPHA_META]
    return float(sum(binom.pmf(k, seeds, rate) for k in bad))


def test_the_quick_measurement_has_the_stated_power():
    assert _power(QUICK_SEEDS, 0.19) >= 0.99
    assert _power(QUICK_SEEDS, 0.05) <= ALPHA_META


def test_false_alarms_at_005_are_consistent_over_quick_seeds():
    fa = false_alarms(MUTANT_CASE, QUICK_SEEDS, alpha=alpha_per_test(), beta=BETA, tv=QUICK_TV)
    assert fa["seeds"] == QUICK_SEEDS
    assert _consistent(fa, "at_0.05"), fa["at_0.05"]
    assert _consistent(fa, "at_alpha"), fa["at_alpha"]


def test_the_quick_measurement_fails_on_a_broken_sampler():
    assert max(exact_tvs(gate_cases()[MUTANT_CASE], BROKEN).values()) >= 0.07
    fa = false_alarms(MUTANT_CASE, QUICK_SEEDS, alpha=alpha_per_test(), beta=BETA, tv=QUICK_TV, mutant=BROKEN)
    assert not _consistent(fa, "at_0.05"), fa["at_0.05"]


@pytest.mark.slow
def test_false_alarms_at_005_are_consistent_over_1000_seeds():
    """`rheo mutants --seeds 1000` at the gate's δ = 0.025, α = 3e-7, β = 0.01 (~10 min on one core)."""
    fa = false_alarms(MUTANT_CASE, 1000, alpha=alpha_per_test(), beta=BETA, tv=DELTA)
    assert fa["seeds"] == 1000
    assert _consistent(fa, "at_0.05"), fa["at_0.05"]
    assert _consistent(fa, "at_alpha"), fa["at_alpha"]
