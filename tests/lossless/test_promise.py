"""The gate's promise, attacked (docs/STATISTICS.md, "What the statistics promise").

Every record states α and the smallest TV of the *full* law it detects with power 1 − β, as a
theorem at the N drawn. Here independent samplers try to break both:
- **the heavy-plus-light alternative** that broke the old planner (an outcome at 1/2, K outcomes at
  1/(2K); the heavy one raised by δ, every light one scaled down), at K = 165 and 351, and the same
  shape hidden in token 4 of a 4-token law, in a window of the horizon test and in a
  grammar-constrained case;
- **a search for the weakest alternative** of the statistic: random directions at TV = δ exactly,
  and a hill-climb that minimises the standardised margin (E S − c)/sd S, computed from the
  statistic's exact moments under the alternative (`rheo.lossless.promise`);
each sampled at the planned N (or at N where `detectable_tv` = its δ) on seeds fixed in advance
(0..S−1), its rejection rate judged by a binomial test at 10⁻³ against the stated power 1 − β;
and the exact law's false-alarm rate judged against α the same way.
"""

from __future__ import annotations

import math
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binom

from rheo.lossless import promise
from rheo.lossless.horizon import plan as horizon_plan
from rheo.lossless.stats import check_law, samples_for
from rheo_ref.exact import target_law
from rheo_ref.models import load_case

CASES = Path(__file__).parents[1] / "cases"
JUDGE = 1e-3  # the binomial judge's own false-alarm probability
BETA = 0.01
SEEDS = 120


def heavy_light(k: int) -> dict:
    """An outcome at 1/2 and k outcomes at 1/(2k)."""
    return {(0,): Fraction(1, 2), **{(i,): Fraction(1, 2 * k) for i in range(1, k + 1)}}


def raise_heavy(p: np.ndarray, heavy: int, tv: float) -> np.ndarray:
    """The heavy outcome raised by `tv`, every other scaled down: TV exactly `tv`, nothing pooled."""
    q = p * (1 - tv / (1 - p[heavy]))
    q[heavy] = p[heavy] + tv
    return q


def rejection_rate(law: dict, alt: np.ndarray, keys: list, n: int, alpha: float, tv: float, seeds: int = SEEDS):
    """Rejections of the gate's test of `law` at N = n by a sampler of law `alt` over `keys`."""
    hits = 0
    for s in range(seeds):
        rng = np.random.default_rng(s)
        counts = rng.multinomial(n, alt / alt.sum())
        sample = {keys[i]: int(c) for i, c in enumerate(counts) if c}
        hits += check_law(sample, law, alpha=alpha, tv=tv, beta=BETA, seed=s).rejected
    return hits


def assert_power(hits: int, seeds: int, what: str) -> None:
    """Rejections not significantly below 1 − β (binomial, one-sided, at JUDGE)."""
    p = binom.cdf(hits, seeds, 1 - BETA)
    assert p > JUDGE, f"{what}: rejected {hits}/{seeds}, power 1 − β = {1 - BETA} is refuted (p = {p:.2g})"


def _law_keys_probs(law: dict) -> tuple[list, np.ndarray]:
    keys = sorted(k for k, v in law.items() if v > 0)
    return keys, np.asarray([float(law[k]) for k in keys])


def _at_detectable(law: dict, alpha: float, delta: float) -> tuple[int, float]:
    """The planned N for δ and the TV the record states at that N (≤ δ)."""
    n = samples_for(law, delta, alpha, BETA)
    return n, promise.planner(law, alpha, BETA).detectable(n)


@pytest.mark.parametrize("k", [165, 351])
def test_heavy_plus_light_at_the_printed_tv_is_rejected(k):
    law = heavy_light(k)
    keys, p = _law_keys_probs(law)
    n, det = _at_detectable(law, 1e-3, 0.1)
    alt = raise_heavy(p, keys.index((0,)), det)
    assert abs(0.5 * np.abs(alt - p).sum() - det) < 1e-12
    assert_power(rejection_rate(law, alt, keys, n, 1e-3, 0.1), SEEDS, f"heavy + {k} light at N={n}")


def test_heavy_plus_light_hidden_in_token_4():
    """Tokens 1-3 from a small law, token 4 the heavy-plus-light shape: the joint 4-token law."""
    first = {0: Fraction(1, 2), 1: Fraction(1, 4), 2: Fraction(1, 4)}
    last = heavy_light(20)
    law = {
        (a, b, c, x[0]): first[a] * first[b] * first[c] * px
        for a in first
        for b in first
        for c in first
        for x, px in last.items()
    }
    keys, p = _law_keys_probs(law)
    n, det = _at_detectable(law, 1e-3, 0.2)
    heavy = np.asarray([k[3] == 0 for k in keys])
    alt = np.where(heavy, p * (1 + 2 * det), p * (1 - 2 * det))  # token 4's heavy outcome +δ in every context
    assert abs(0.5 * np.abs(alt - p).sum() - det) < 1e-9
    assert_power(rejection_rate(law, alt, keys, n, 1e-3, 0.2), SEEDS, f"token 4 at N={n}")


def test_heavy_plus_light_in_a_horizon_window():
    case = load_case(str(CASES / "eagle.json"))
    hp = horizon_plan(case, 4, alpha=1e-3, tv=0.25, beta=BETA, rounds=False)
    law = max(hp.windows.values(), key=len)
    keys, p = _law_keys_probs(law)
    det = promise.planner(law, hp.alpha_each, BETA).detectable(hp.n)
    assert det <= 0.25 + 1e-12
    alt = raise_heavy(p, int(np.argmax(p)), det)
    assert_power(rejection_rate(law, alt, keys, hp.n, hp.alpha_each, 0.25), SEEDS, f"window at N={hp.n}")


def test_heavy_plus_light_under_a_grammar():
    """The masked, renormalised target of a grammar-constrained case (3 tokens): the shape planted on it."""
    from rheo_ref.models import Case, TableModel

    grammar = {
        "allowed": [[0, 1, 2], [2, 3], [0, 3]],
        "next": [{"0": 1, "1": 2, "2": 0}, {"2": 2, "3": 0}, {"0": 0, "3": 1}],
    }
    target = {(): [3, 3, 2, 2], (0,): [2, 3, 4, 1], (1,): [4, 1, 3, 2], (2,): [1, 4, 2, 3], (3,): [3, 2, 2, 3]}
    model = TableModel.from_weights(target, context_length=1, name="target").to_json()
    scheme = {"K": 3, "m": 1, "W": 2, "D": 2, "R": 4, "proxy": "rheo", "verify": "rheo"}
    case = Case.from_json(
        {"draft": model, "target": model, "scheme": scheme, "context": [0], "tokens": 3, "constraint": grammar}
    )
    law = target_law(case, 3)
    keys, p = _law_keys_probs(law)
    n, det = _at_detectable(law, 1e-3, 0.2)
    alt = raise_heavy(p, int(np.argmax(p)), det)
    assert_power(rejection_rate(law, alt, keys, n, 1e-3, 0.2), SEEDS, f"grammar case at N={n}")


def _margin(law_w: promise.Weights, lam: float, c: float, alt: np.ndarray) -> float:
    """(E S − c)/sd S under the alternative, from the statistic's exact Poisson moments."""
    d = alt - law_w.p
    mean = lam**2 * np.sum(law_w.w * d**2)
    var = np.sum(law_w.w**2 * (2 * lam**2 * alt**2 + 4 * lam**3 * alt * d**2))
    return float((mean - c) / math.sqrt(var))


def _at_tv(p: np.ndarray, direction: np.ndarray, tv: float) -> np.ndarray | None:
    """p + t·direction (direction summing to 0) at TV exactly `tv`, or None if it leaves the simplex."""
    direction = direction - direction.mean()
    direction = direction / (0.5 * np.abs(direction).sum())
    alt = p + tv * direction
    return alt if alt.min() >= 0 else None


def _worst_set_alternative(pl: promise.Planner, p: np.ndarray, n: int, delta: float) -> np.ndarray:
    """The law at TV = δ that the set test detects least often: the set C minimising
    F(c_C; n, p(C) − δ), lowered by δ (scaled within C), its complement raised (scaled)."""
    sets = pl.sets
    crit = sets.critical(n)  # [U] per grid cell
    order = np.argsort(-p, kind="stable")
    best, best_power = None, 2.0
    for idx in range(1, 2**sets.k):
        pc = sets.sums[idx]
        u = int(np.searchsorted(sets.cells, sets.cell_of(np.array([pc]))[0]))
        if sets.hi[u] < delta or pc > 1 - 1e-12:
            continue
        power = binom.cdf(crit[u], n, min(1.0, sets.hi[u]) - delta) if crit[u] >= 0 else 0.0
        if power < best_power:
            best, best_power = idx, power
    inside = np.array([(best >> i) & 1 for i in range(sets.k)], dtype=bool)  # over p sorted descending
    pc = sets.sums[best]
    q = np.where(inside, pl.wt.p * (pc - delta) / pc, pl.wt.p * (1 - pc + delta) / (1 - pc))
    alt = np.empty_like(q)
    alt[order] = q
    assert abs(0.5 * np.abs(alt - p).sum() - delta) < 1e-9 and best_power >= 1 - BETA
    return alt


def test_the_set_test_is_exact_on_a_small_law():
    """Every outcome of 40 samples of a 3-outcome law enumerated: the set test's level is ≤ α under
    p, and its rejection probability under the worst alternative at the printed TV is ≥ 1 − β."""
    from scipy.stats import multinomial

    law = {(0,): Fraction(1, 2), (1,): Fraction(3, 10), (2,): Fraction(1, 5)}
    keys, p = _law_keys_probs(law)
    n, alpha = 40, 0.05
    pl = promise.Planner(p, alpha, BETA)
    assert pl.kind(n) == "sets"
    det = pl.detectable(n)
    alt = _worst_set_alternative(pl, p, n, det)
    order = np.argsort(-p, kind="stable")
    level = power = 0.0
    for a in range(n + 1):
        for b in range(n + 1 - a):
            x = np.array([a, b, n - a - b])
            rejects = pl.sets.p_value(x[order].astype(float), n) <= alpha
            level += rejects * multinomial.pmf(x, n, p)
            power += rejects * multinomial.pmf(x, n, alt)
    assert level <= alpha and power >= 1 - BETA, (level, power, det)
    sample = {keys[0]: 40}  # check_law decides as the enumeration does
    assert check_law(sample, law, alpha=alpha, tv=det).rejected == (pl.sets.p_value(np.array([40.0, 0, 0]), n) <= alpha)


@pytest.mark.parametrize("name", ["zipf-12", "heavy-light-40", "v12-2-tokens"])
def test_the_weakest_alternative_found_by_search_is_rejected(name):
    if name == "zipf-12":
        w = [Fraction(1, i + 1) for i in range(12)]
        law = {(i,): x / sum(w) for i, x in enumerate(w)}
    elif name == "heavy-light-40":
        law = heavy_light(40)
    else:
        law = target_law(load_case(str(CASES / "v12-first-order.json")), 2)
    keys, p = _law_keys_probs(law)
    n, det = _at_detectable(law, 1e-3, 0.15)
    pl = promise.planner(law, 1e-3, BETA)
    if pl.kind(n) == "sets":  # the set test's weakest alternative is known exactly: its worst set
        alt = _worst_set_alternative(pl, p, n, det)
        assert_power(rejection_rate(law, alt, keys, n, 1e-3, 0.15), SEEDS, f"worst set of {name} at N={n}")
        return
    null = pl.null(n)
    order = np.argsort(-p, kind="stable")  # the planner's weights are over p sorted descending
    wt = pl.wt
    assert np.array_equal(wt.p, p[order])
    rng = np.random.default_rng(7)
    best = raise_heavy(wt.p, 0, det)  # a feasible start: the heaviest outcome raised
    best_m = _margin(wt, null.lam, null.critical, best)
    for _ in range(300):  # random directions, relative to each outcome's mass
        alt = _at_tv(wt.p, rng.standard_normal(len(p)) * wt.p ** rng.uniform(0, 1), det)
        if alt is not None and (m := _margin(wt, null.lam, null.critical, alt)) < best_m:
            best, best_m = alt, m
    step = 0.5
    for _ in range(400):  # hill-climb on the margin, staying at TV = det
        cand = _at_tv(wt.p, (best - wt.p) + step * rng.standard_normal(len(p)) * wt.p, det)
        if cand is not None and (m := _margin(wt, null.lam, null.critical, cand)) < best_m:
            best, best_m = cand, m
        else:
            step *= 0.995
    assert best is not None
    alt = np.empty_like(best)
    alt[order] = best
    assert abs(0.5 * np.abs(alt - p).sum() - det) < 1e-9
    assert_power(rejection_rate(law, alt, keys, n, 1e-3, 0.15), SEEDS, f"searched alternative of {name} at N={n}")


@pytest.mark.parametrize("name,alpha,seeds", [("heavy-light-165", 0.05, 2000), ("zipf-12", 0.05, 2000)])
def test_exact_samplers_false_alarm_at_most_alpha(name, alpha, seeds):
    law = (
        heavy_light(165)
        if name.startswith("heavy")
        else {(i,): Fraction(1, i + 1) / sum(Fraction(1, j + 1) for j in range(12)) for i in range(12)}
    )
    keys, p = _law_keys_probs(law)
    n = samples_for(law, 0.3, alpha, BETA)
    hits = rejection_rate(law, p, keys, n, alpha, 0.3, seeds)
    judge = binom.sf(hits - 1, seeds, alpha)  # P(at least `hits` false alarms at rate α)
    assert judge > JUDGE, f"{name}: {hits}/{seeds} false alarms at α = {alpha} (p = {judge:.2g})"


@pytest.mark.slow
@pytest.mark.parametrize("name", ["heavy-light-165", "zipf-12"])
def test_false_alarms_over_20000_seeds(name):
    test_exact_samplers_false_alarm_at_most_alpha(name, 0.05, 20_000)
