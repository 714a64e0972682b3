"""The null's tail bound is above the exact tail (rheo.lossless.promise.Null).

`Null.p_value(s)` claims P_p(S ≥ s) ≤ p_value(s) for the Poissonised statistic S = Σ w_i[(X_i − λp_i)² − X_i],
X_i ~ Poisson(λp_i) independent, and the gate's level rests on it. Here the exact law of S is enumerated
(every count vector of a 3-outcome law within 12 standard deviations of its mean) and the bound is compared
with the exact tail at every value S takes, for the Chernoff bound, the convolution bound (rounded up to
a grid) and their minimum; the critical value is compared with the exact (1 − α) quantile. A planted
mutant that rounds the convolution's grid steps down must break the bound.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import poisson

from rheo.lossless import promise


def exact_tail(p: np.ndarray, lam: float) -> tuple[np.ndarray, np.ndarray, float]:
    """(sorted values of S, P(S ≥ value) over the enumerated counts, the mass not enumerated): every
    count vector with each count within its mean ± 12√mean + 12, summed by broadcasting."""
    wt = promise.Weights.of(p)
    a = lam * wt.p
    stats, probs, outside = np.zeros(1), np.ones(1), 0.0
    for ai, wi in zip(a, wt.w):
        x = np.arange(max(0, int(ai - 12 * math.sqrt(ai) - 12)), int(ai + 12 * math.sqrt(ai) + 12) + 1, dtype=float)
        pm = poisson.pmf(x, ai)
        outside += 1 - float(pm.sum())
        stats = (stats[:, None] + wi * ((x - ai) ** 2 - x)[None, :]).ravel()
        probs = (probs[:, None] * pm[None, :]).ravel()
    order = np.argsort(stats)
    vals, pr = stats[order], probs[order]
    return vals, np.cumsum(pr[::-1])[::-1], outside


LAWS = {"even": np.array([0.4, 0.35, 0.25]), "skewed": np.array([0.8, 0.15, 0.05])}


@pytest.mark.parametrize("name", sorted(LAWS))
@pytest.mark.parametrize("lam", [12.0, 30.0])
def test_the_p_value_is_above_the_exact_tail(name, lam):
    p = LAWS[name]
    vals, tail, outside = exact_tail(p, lam)
    null = promise.Null(promise.Weights.of(p), lam, 1e-3)
    assert len(null.tail), "the convolution ran"
    points = np.unique(vals)
    used = 0  # values where the convolution's bound is the smaller one
    for s in points[:: max(1, len(points) // 2000)]:
        exact = float(tail[np.searchsorted(vals, s)])  # ≤ P(S ≥ s)
        got = null.p_value(s)
        assert got >= exact * (1 - 1e-9), f"s = {s}: p-value {got} below the exact tail {exact}"
        j = math.ceil((s - null.base) / null.grid)
        conv = (1 + promise.CONV_SLACK) * float(null.tail[j]) if 0 <= j < len(null.tail) else 1.0
        used += conv < 0.5 and abs(got - null.trunc - conv) <= 1e-12 * got
    assert used, "the convolution bound was never the one used"
    level = float(tail[np.searchsorted(vals, null.critical)]) + outside  # ≥ P(S ≥ critical)
    assert level <= 1e-3, f"P(S ≥ critical value) = {level} > α"


def test_the_convolution_tightens_the_critical_value():
    """On a self-gate-sized law the convolution's critical value is below Chernoff's (what it is for)."""
    rng = np.random.default_rng(3)
    p = np.sort(rng.dirichlet(np.ones(40)))[::-1]
    wt = promise.Weights.of(p)
    saved = promise.CONV_CELLS
    try:
        promise.CONV_CELLS = 0
        chernoff = promise.Null(wt, 20_000.0, 3.3e-7).critical
    finally:
        promise.CONV_CELLS = saved
    both = promise.Null(wt, 20_000.0, 3.3e-7)
    assert both.critical < chernoff - 0.5 * both.sd, (both.critical / both.sd, chernoff / both.sd)


def test_rounding_down_breaks_the_bound(monkeypatch):
    """A mutant that rounds the grid steps down (S no longer below base + h·Σk) is caught by the exact tail."""
    monkeypatch.setattr(promise, "grid_steps", lambda values, grid: np.floor(values / grid).astype(np.int64))
    monkeypatch.setattr(promise, "CONV_GRID", 3)  # a coarse grid, so that rounding moves the tail visibly
    p = LAWS["skewed"]
    vals, tail, _ = exact_tail(p, 12.0)
    null = promise.Null(promise.Weights.of(p), 12.0, 1e-3)
    points = np.unique(vals)
    points = points[:: max(1, len(points) // 1500)]
    broken = [s for s in points if null.p_value(s) < float(tail[np.searchsorted(vals, s)]) * (1 - 1e-9)]
    assert broken, "rounding down went unnoticed"
