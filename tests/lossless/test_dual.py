"""The dual Chernoff certificate's numbers are upper bounds (rheo.lossless.dual).

Its power claim rests on one inequality per cell: `log_miss` bounds, for every Poisson mean m of
the cell, G(m) + ((μ − ν)/λ)(m − a)₊ + ((μ + ν)/λ)(a − m)₊ from above, G(m) = log E_{Poisson(m)} e^{−θ f(X)}.
Here that is attacked directly: G computed independently (a long exact sum, no tail bound) on a fine
grid of m from 0 to λ, at the multipliers the screen chooses and at others, and on laws P built to be
hard (heavy-plus-light, a cell emptied, a spike on the lightest cell, random directions), whose
Chernoff exponent θc + Σ G_i(λP_i) must stay below the bound whenever TV(P, p) ≥ δ.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.special import gammaln, logsumexp

from rheo.lossless import dual, promise


def exact_g(a: float, w: float, theta: float, m: float) -> float:
    """log E e^{−θ w((X − a)² − X)} for X ~ Poisson(m), summed to m + 40√m + 200 (no bound used)."""
    if m == 0:
        return -theta * w * a * a
    xs = np.arange(int(m + 40 * math.sqrt(m) + 200) + int(a) + 1, dtype=float)
    lp = xs * math.log(m) - m - gammaln(xs + 1)
    return float(logsumexp(lp - theta * w * ((xs - a) ** 2 - xs)))


def laws():
    rng = np.random.default_rng(7)
    heavy = np.r_[0.5, np.full(40, 0.5 / 40)]
    skewed = np.sort(rng.dirichlet(np.full(30, 0.3)))[::-1]
    return {"heavy-light": heavy, "skewed": skewed}


def setup(p: np.ndarray, n: int, alpha: float = 1e-3, beta: float = 0.01):
    wt = promise.Weights.of(p)
    lam = promise.poisson_rate(n, beta)
    null = promise.Null(wt, lam, alpha)
    return wt, lam, null, dual.Dual(wt.p, wt.w, lam, null.critical, null.sd)


@pytest.mark.parametrize("name", ["heavy-light", "skewed"])
@pytest.mark.parametrize("k_theta", [0.7, 2.0])
def test_each_cell_bound_is_above_its_supremum(name, k_theta):
    p = laws()[name]
    wt, lam, null, d = setup(p, 3000)
    delta = 0.1
    theta = k_theta / null.sd
    _, mu, nu = d.multipliers(theta, delta)
    grid = np.concatenate([np.linspace(0, 1, 400), np.geomspace(1e-6, 1, 200)])  # P_i in [0, 1]
    for mu_i, nu_i in (
        (mu, nu),
        (mu, 0.0),
        (mu, mu),
        (2 * mu, 0.5 * mu),
    ):  # the screen's, and up-moves paid more / less
        bound = d.cell_sups(theta, mu_i, nu_i)  # [K] each cell's bound on its supremum
        for i in range(len(wt.p)):
            a, w = lam * wt.p[i], wt.w[i]
            ms = np.unique(np.concatenate([lam * grid, a + np.linspace(-1, 1, 201) * 6 * (math.sqrt(a) + 1)]))
            ms = ms[(ms >= 0) & (ms <= lam)]
            vals = [
                exact_g(a, w, theta, m) + ((mu_i - nu_i) * max(m - a, 0) + (mu_i + nu_i) * max(a - m, 0)) / lam
                for m in ms
            ]
            assert max(vals) <= bound[i] + 1e-9, (
                f"cell {i} (p = {wt.p[i]:.4g}, μ {mu_i:.4g}, ν {nu_i:.4g}): sup ≥ {max(vals)} > bound {bound[i]}"
            )


def alternatives(p: np.ndarray, delta: float, rng) -> dict:
    """Laws at TV exactly δ from p, built to be hard for a χ² statistic."""
    k = len(p)
    out = {}
    q = p * (1 - delta / (1 - p[0]))
    q[0] = p[0] + delta
    out["heavy raised, light scaled"] = q
    light = int(np.argmin(p))
    q = p * (1 - delta / (1 - p[light]))
    q[light] = p[light] + delta
    out["spike on the lightest"] = q
    order = np.argsort(p)
    q, moved, j = p.copy(), 0.0, 0
    while moved < delta and j < k - 1:  # empty the lightest cells, give the mass to the heaviest
        take = min(p[order[j]], delta - moved)
        q[order[j]] -= take
        moved += take
        j += 1
    q[order[-1]] += moved
    out["light cells emptied"] = q
    for r in range(6):
        z = rng.standard_normal(k) * p ** rng.uniform(0, 1)
        z -= z.mean()
        q = p + z * (2 * delta / np.abs(z).sum())
        if np.all(q >= 0):
            out[f"random {r}"] = q
    return out


@pytest.mark.parametrize("name", ["heavy-light", "skewed"])
def test_the_bound_holds_for_hard_alternatives(name):
    p = laws()[name]
    wt, lam, null, d = setup(p, 3000)
    delta = 0.1
    rng = np.random.default_rng(11)
    for k_theta in (0.7, 1.5, 3.0):
        theta = k_theta / null.sd
        _, mu, nu = d.multipliers(theta, delta)
        bound = d.log_miss(theta, mu, delta, nu)
        for what, q in alternatives(wt.p, delta, rng).items():
            assert 0.5 * np.abs(q - wt.p).sum() >= delta - 1e-12
            exponent = theta * null.critical + sum(
                exact_g(lam * pi, wi, theta, lam * qi) for pi, wi, qi in zip(wt.p, wt.w, q)
            )
            assert exponent <= bound + 1e-9, f"{what}: Chernoff exponent {exponent} above the bound {bound}"


def test_the_screen_is_below_the_bound():
    """The screen's grid value never exceeds the rigorous bound at the same (θ, μ, ν): it is a lower estimate."""
    p = laws()["skewed"]
    _, _, null, d = setup(p, 3000)
    value, theta, mu, nu = d.screen(0.1)
    assert nu > 0  # the mass constraint is in use
    assert value <= d.log_miss(theta, mu, 0.1, nu) + 1e-12


def test_a_certificate_fails_where_the_power_is_not_there():
    """At a tenth of the planned N no (θ, μ, ν) certifies: the certificate can fail."""
    p = laws()["skewed"]
    law = {(i,): float(x) for i, x in enumerate(p)}
    n = promise.planner(law, 1e-3, 0.01).plan(0.1)
    _, _, _, d = setup(p, max(20, n // 10))
    assert not d.certified(0.1 - promise._eta0(max(20, n // 10), 0.01), math.log(promise._support_beta(0.01)))


@pytest.mark.parametrize("a", [0.5, 5.0, 60.0, 2000.0])
def test_each_log_mgf_is_above_the_exact_sum(a):
    """`_log_mgf` bounds G(m) from above wherever its window cuts: m far below a (the window's upper cut
    and the split of its lower cut matter), m far above a (the mass of X near a, beyond the window,
    dominates when θw is large), and near a; at weights and θ from small to large."""
    ms = np.unique(np.concatenate([[0.0], a * np.geomspace(1e-3, 60, 40), a + np.linspace(-8, 8, 17) * math.sqrt(a)]))
    ms = ms[ms >= 0]
    for w in (0.5, 5.0, 50.0):
        for theta_w in (1e-4, 1e-2, 0.3, 1.0):  # θ·w
            theta = theta_w / w
            got = dual._log_mgf(np.asarray([a]), np.asarray([w]), theta, ms[None, :])[0]
            for m, g in zip(ms, got):
                want = exact_g(a, w, theta, m)
                assert g >= want - 1e-9 * max(1.0, abs(want)), f"a {a}, w {w}, θw {theta_w}, m {m}: {g} < exact {want}"
