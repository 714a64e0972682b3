"""The weighted χ²'s power by one Chernoff bound on the worst law (docs/STATISTICS.md, "The power,
by duality").

With the Poisson count of `rheo.lossless.promise`, the counts X_i are independent Poisson(m_i),
m_i = λP_i, and S = Σ_i f_i(X_i), f_i(x) = w_i[(x − a_i)² − x], a_i = λp_i. For every θ > 0
(Markov's inequality on e^{−θS})

    P_P(S ≤ c) ≤ exp(θc + Σ_i G_i(m_i)),   G_i(m) = log E_{X ~ Poisson(m)} e^{−θ f_i(X)}.

Every law P on the support at TV ≥ δ has Σ_i |m_i − a_i| ≥ 2δλ and Σ_i (m_i − a_i) ≤ 0 (it carries
no more mass than p), so for every μ, ν ≥ 0 (weak duality: the added term is ≥ 0)

    Σ_i G_i(m_i) ≤ Σ_i G_i(m_i) + (μ/λ)(Σ_i |m_i − a_i| − 2δλ) − (ν/λ)Σ_i (m_i − a_i) ≤ Σ_i H_i − 2μδ,
    H_i = sup_{0 ≤ m ≤ λ} [G_i(m) + ((μ − ν)/λ)(m − a_i)₊ + ((μ + ν)/λ)(a_i − m)₊],

a bound on the miss probability of **every** such P at once, that needs no variance bound and no
spike lemma: each H_i is a one-dimensional supremum. It is bounded above rigorously
(`Dual.cell_sups`): on a grid, every interval [m_l, m_r] not containing a_i in its interior by the
convexity of L(u) = G(e^u) + e^u = log Σ_x (e^{xu}/x!) e^{−θf(x)} in u = log m (L below its chord, and
chord + (κ − 1)e^u maximised in closed form: `_interval_sup`), intervals left loose split again; past
the grid (m ≥ M_i) by a partition of x at thresholds x_0 < … < x_L past a + 1/2, where f rises
(E e^{−θf(X)} ≤ P(X ≤ x_0)e^{θw(a + 1/4)} + Σ_l P(X ≤ x_{l+1})e^{−θf(x_l + 1)} + e^{−θf(x_L + 1)}, as
f ≥ −w(a + 1/4) everywhere, each P(X ≤ x) falling in m: `_far`). Sums over x run over a window
around m, the rest bounded by Chernoff's Poisson tails times the largest e^{−θf} there, so every number used
is an upper bound where the argument needs one (below the window: e^{−θf(x₋ − 1)} where x₋ − 1 ≤ a,
else split at x_m ≥ a, `_log_mgf`).

The choice of θ, μ and ν affects only how tight the bound is, never its validity.
"""

from __future__ import annotations

import numpy as np
from scipy.special import gammaln

GRID_BELOW = 12  # grid points on [0, a_i]
GRID_ABOVE = 20  # grid points on [a_i, M_i]
NEAR = (0.25, 0.5, 1.0, 1.5, 2.0, 3.0, 4.5, 6.5)  # extra grid points a ± t√(a + 1)
FAR_RATIO = 1.25  # the far intervals [m_k, 1.25 m_k] past M_i
THETA_START, THETA_STEP, THETA_TRIES = 1.5, 1.5, 6  # θ·sd searched from 1.5 by factors of 1.5 (sd: the null's sd)
MU_CAP = 1e4  # the multipliers are searched up to this many times the quadratic model's μ


def _log_poisson_tail(m: np.ndarray, k: np.ndarray, *, upper: bool) -> np.ndarray:
    """log of Chernoff's bound e^{−m}(em/k)^k on P(Poisson(m) ≥ k) (k > m, `upper`) or on
    P(Poisson(m) ≤ k) (k < m); 0 (probability ≤ 1) otherwise, −∞ for an empty tail (k < 0 below)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        kk = np.maximum(k, 1e-300)
        out = -m + k * (1 + np.log(np.maximum(m, 1e-300)) - np.log(kk))
        out = np.where(k == 0, -m, out)
    side = (k > m) if upper else (k < m)
    out = np.where(side, np.minimum(out, 0.0), 0.0)
    if not upper:
        out = np.where(k < 0, -np.inf, out)
    return out


_LOG_FACTORIAL = np.zeros(1)


def _log_factorial(n: int) -> np.ndarray:
    """log x! for x = 0..n (a table, extended as needed)."""
    global _LOG_FACTORIAL
    if len(_LOG_FACTORIAL) <= n:
        _LOG_FACTORIAL = gammaln(np.arange(max(n + 1, 2 * len(_LOG_FACTORIAL))) + 1.0)
    return _LOG_FACTORIAL


def _points(a: np.ndarray, lam: float) -> np.ndarray:
    """[K, J] the grid of Poisson means per cell, rising: 0, geometric up to a_i/2, linear to a_i
    (a point), then on to M_i = min(3a_i + 16√a_i + 26, λ); with points a_i ± t√(a_i + 1) for the
    t of NEAR (clipped to [0, M_i]), where the worst laws' moves (a few √a_i) put the maximisers."""
    s = np.sqrt(a) + 1  # [K]
    top = np.minimum(3 * a + 16 * s + 10, lam)  # [K] M_i
    rel = np.concatenate(
        [[0.0], np.geomspace(1e-9, 0.5, GRID_BELOW // 2, endpoint=False), np.linspace(0.5, 1, GRID_BELOW // 2)]
    )
    u = np.concatenate([np.linspace(0, 1, GRID_ABOVE // 2, endpoint=False), np.geomspace(1, 12, GRID_ABOVE // 2)]) / 12
    below = a[:, None] * rel[None, :]  # [K, GB + 1] 0 … a
    above = a[:, None] + (top - a)[:, None] * u[None, 1:]  # [K, GA - 1] past a, up to M
    t = np.asarray(NEAR)
    near = np.clip(a[:, None] + s[:, None] * np.concatenate([-t, t])[None, :], 0.0, top[:, None])  # [K, 2T]
    return np.sort(np.concatenate([below, above, near], axis=1), axis=1)


def _log_mgf(a: np.ndarray, w: np.ndarray, theta: float, m: np.ndarray) -> np.ndarray:
    """[K, J] an upper bound on G(m) = log E_{Poisson(m)} e^{−θ f(X)} at the points m (row i: cell i).

    The sum runs exactly (log-sum-exp) over a window x₋ ≤ x ≤ x₊ around m (x₊ past a + 1/2, where f
    rises); the rest is bounded by Chernoff's Poisson tails: P(X > x₊)·e^{−θf(x₊ + 1)} above and
    P(X < x₋)·e^{−θf(x₋ − 1)} below where x₋ − 1 ≤ a (f falls up to a + 1/2), else
    P(X < x₋)·e^{θw(a + 1/4)} (f ≥ −w(a + 1/4) everywhere), split at x_m = ⌊(a + x₋ − 1)/2⌋ ≥ a
    when the window lies far above a: P(X ≤ x_m)·e^{θw(a + 1/4)} + P(X < x₋)·e^{−θf(x_m + 1)}."""
    k, j = m.shape
    mm = m.ravel()  # [K·J]
    aa, ww = np.repeat(a, j), np.repeat(w, j)
    spread = 8 * np.sqrt(mm) + 12
    x_lo = np.floor(np.maximum(mm - spread, 0.0))
    x_hi = np.ceil(np.maximum(mm + spread, aa + 2))
    width = (x_hi - x_lo + 1).astype(np.int64)
    out = np.empty(len(mm))
    order = np.argsort(width, kind="stable")
    start = 0
    while start < len(mm):
        cap = int(width[order[min(start + 4095, len(mm) - 1)]])
        size = max(1, min(4096, int(4e6 // max(cap, 1))))
        idx = order[start : start + size]
        cap = int(width[idx].max())
        xs = x_lo[idx, None] + np.arange(cap)[None, :]  # [C, W]
        m1 = mm[idx, None]
        ell = xs * np.log(np.maximum(m1, 1e-300))
        ell -= m1
        ell -= _log_factorial(int(xs.max()))[xs.astype(np.int64)]
        ell -= theta * ww[idx, None] * ((xs - aa[idx, None]) ** 2 - xs)
        zero = m1[:, 0] == 0  # Poisson(0) is a point mass at 0 (x₋ = 0 there)
        if zero.any():
            ell[zero] = -np.inf
            ell[zero, 0] = -theta * ww[idx][zero] * aa[idx][zero] ** 2
        ell[xs > x_hi[idx, None]] = -np.inf
        top = np.max(ell, axis=1)
        body = top + np.log(np.sum(np.exp(ell - top[:, None]), axis=1))
        xh, xl, mi, ai, wi = x_hi[idx], x_lo[idx], mm[idx], aa[idx], ww[idx]
        f_next = wi * ((xh + 1 - ai) ** 2 - (xh + 1))  # f(x₊ + 1): f rises past x₊
        upper = _log_poisson_tail(mi, xh + 1, upper=True) - theta * f_next
        below = xl - 1  # X ≤ x₋ − 1: f(X) ≥ f(x₋ − 1) where x₋ − 1 ≤ a (f falls up to a + 1/2), else ≥ −w(a + 1/4)
        f_low = np.where(below <= ai, wi * ((below - ai) ** 2 - below), -wi * (ai + 0.25))
        lower = _log_poisson_tail(mi, below, upper=False) - theta * f_low
        mid = np.floor((ai + below) / 2)  # window far above a: X ≤ mid, then mid < X ≤ x₋ − 1 where f ≥ f(mid + 1)
        split = np.logaddexp(
            _log_poisson_tail(mi, mid, upper=False) + theta * wi * (ai + 0.25),
            _log_poisson_tail(mi, below, upper=False) - theta * wi * ((mid + 1 - ai) ** 2 - (mid + 1)),
        )
        lower = np.where(mid >= ai, np.minimum(lower, split), lower)
        out[idx] = np.logaddexp(body, np.logaddexp(upper, lower))
        start += len(idx)
    return out.reshape(k, j)


def _interval_sup(m_l, m_r, g_l, g_r, kappa, a):
    """An upper bound on sup over [m_l, m_r] of G(m) + κ(m − a) (κ fixed on the interval).

    In u = log m, L(u) = G(e^u) + e^u = log Σ_x (m^x/x!) e^{−θf(x)} is convex (a log-sum-exp of lines
    in u), so L lies below its chord on [u_l, u_r], and G + κ(m − a) ≤ chord(u) + (κ − 1)e^u − κa,
    a concave function of u when κ < 1, maximised in closed form (at e^u = slope/(1 − κ), clipped).
    On [0, m_r] with m_l = 0: G(m) ≤ G(m_r) + m_r (E_m g ≤ e^{m_r − m} E_{m_r} g, the power series
    rising in m). Where κ ≥ 1 the endpoints' maxima of each part are added."""
    with np.errstate(divide="ignore", invalid="ignore"):
        ul, ur = np.log(m_l), np.log(m_r)
        l_l, l_r = g_l + m_l, g_r + m_r
        slope = (l_r - l_l) / (ur - ul)
        star = np.clip(np.where(kappa < 1, slope / (1 - kappa), m_r), m_l, m_r)
        chord = l_l + slope * (np.log(star) - ul) + (kappa - 1) * star - kappa * a
        crude = np.maximum(l_l, l_r) + np.maximum((kappa - 1) * m_l, (kappa - 1) * m_r) - kappa * a
        val = np.where(kappa < 1, chord, crude)
        lin = np.maximum(kappa * (m_l - a), kappa * (m_r - a))
        at_zero = g_r + m_r + lin
        val = np.where(m_l > 0, val, at_zero)
        val = np.where(m_r > m_l, val, np.maximum(g_l + kappa * (m_l - a), g_r + kappa * (m_r - a)))
    return val


def _far(a: np.ndarray, w: np.ndarray, theta: float, top: np.ndarray, lam: float, slope: float) -> np.ndarray:
    """[K] an upper bound on sup over m in [M_i, λ] of G_i(m) + slope·(m − a_i), interval by interval
    (G bounded on the interval as below, the line at its larger end: the slope may be negative).

    On [m_k, m_{k+1}], with thresholds a + 1/2 ≤ x_0 < x_1 < … < x_L (f rises past a + 1/2, and
    f ≥ −w(a + 1/4) everywhere): E e^{−θf(X)} ≤ P(X ≤ x_0)e^{θw(a + 1/4)} + Σ_l P(X ≤ x_{l+1})e^{−θf(x_l + 1)}
    + e^{−θf(x_L + 1)}, each P_m(X ≤ x) at most its value at m_k (it falls as m rises)."""
    from scipy.stats import poisson

    n_int = max(1, int(np.ceil(np.log(lam / max(float(top.min()), 1e-9)) / np.log(FAR_RATIO))) + 1)
    ks = np.arange(n_int)
    lo = np.minimum(top[:, None] * FAR_RATIO ** ks[None, :], lam)  # [K, I]
    hi = np.minimum(lo * FAR_RATIO, lam)  # [K, I]
    floor = np.ceil(a[:, None] + 1)  # [K, 1] every threshold ≥ a + 1/2
    fracs = (0.25, 0.4, 0.55, 0.7, 0.8, 0.88, 0.94)
    cuts = [np.maximum(np.floor(r * lo), floor) for r in fracs] + [np.maximum(np.floor(lo - 4 * np.sqrt(lo)), floor)]
    xs = np.sort(np.stack(cuts), axis=0)  # [L+1, K, I] rising thresholds

    def f_at(x: np.ndarray) -> np.ndarray:
        return w[:, None] * ((x - a[:, None]) ** 2 - x)

    terms = [poisson.logcdf(xs[0], lo) + theta * w[:, None] * (a[:, None] + 0.25)]
    for j in range(len(xs) - 1):
        terms.append(poisson.logcdf(xs[j + 1], lo) - theta * f_at(xs[j] + 1))
    terms.append(-theta * f_at(xs[-1] + 1))
    g = np.logaddexp.reduce(np.stack(terms), axis=0)  # [K, I]
    rest = np.maximum(slope * (lo - a[:, None]), slope * (hi - a[:, None]))
    val = np.where(lo < hi, g + rest, -np.inf)
    return np.max(val, axis=1)


class Dual:
    """The dual Chernoff bound for one (law, λ, critical value c): G tables per θ, the bound per (θ, μ, ν, δ)."""

    def __init__(self, p: np.ndarray, w: np.ndarray, lam: float, c: float, sd: float, counts: np.ndarray | None = None):
        self.p, self.w, self.lam, self.c, self.sd = p, w, lam, c, sd
        self.counts = np.ones(len(p)) if counts is None else counts  # [K] outcomes per cell (equal p: equal suprema)
        self.a = lam * p
        self.m = _points(self.a, lam)  # [K, J]
        self.top = self.m[:, -1]
        self._tables: dict[float, np.ndarray] = {}

    def table(self, theta: float) -> np.ndarray:
        if theta not in self._tables:
            if len(self._tables) > 24:
                self._tables.clear()
            self._tables[theta] = _log_mgf(self.a, self.w, theta, self.m)
        return self._tables[theta]

    def _terms(self, m: np.ndarray, a: np.ndarray, mu: float, nu: float) -> np.ndarray:
        """The multipliers' terms at Poisson means m: ((μ − ν)/λ)(m − a)₊ + ((μ + ν)/λ)(a − m)₊."""
        x = m - a
        return ((mu - nu) * np.maximum(x, 0) + (mu + nu) * np.maximum(-x, 0)) / self.lam

    def grid_value(self, theta: float, mu: float, delta: float, nu: float = 0.0) -> float:
        """The bound's value with each supremum taken over the grid only: below `log_miss` at the
        same arguments (used to choose them), not a bound."""
        g = self.table(theta)
        best = np.max(g + self._terms(self.m, self.a[:, None], mu, nu), axis=1)  # [K]
        return float(theta * self.c - 2 * mu * delta + np.sum(self.counts * best))

    def log_miss(self, theta: float, mu: float, delta: float, nu: float = 0.0) -> float:
        """The rigorous bound: log P_P(S ≤ c) ≤ this for every P on the support at TV ≥ δ (μ, ν ≥ 0)."""
        if mu < 0 or nu < 0:
            raise ValueError(f"the multipliers must be ≥ 0: μ = {mu}, ν = {nu}")
        return float(theta * self.c - 2 * mu * delta + np.sum(self.counts * self.cell_sups(theta, mu, nu)))

    def cell_sups(self, theta: float, mu: float, nu: float = 0.0, *, rounds: int = 4, split: int = 8) -> np.ndarray:
        """[K] an upper bound on each cell's sup over 0 ≤ m ≤ λ of
        G_i(m) + ((μ − ν)/λ)(m − a_i)₊ + ((μ + ν)/λ)(a_i − m)₊.

        Each cell's supremum is bounded on the grid's intervals (`_interval_sup`; a_i is a grid
        point, so the slope is fixed on each interval); an interval whose bound exceeds the cell's
        best grid value by more than 0.02/K is split (`split` parts, `rounds` times), so the bound's
        excess over the grid value stays small. Past the grid: `_far`."""
        g = self.table(theta)
        a, m, lam, w = self.a, self.m, self.lam, self.w
        k = len(a)
        up, down = (mu - nu) / lam, (mu + nu) / lam
        cell = np.repeat(np.arange(k), m.shape[1] - 1)  # [I] the interval's cell
        m_l, m_r = m[:, :-1].ravel(), m[:, 1:].ravel()
        g_l, g_r = g[:, :-1].ravel(), g[:, 1:].ravel()
        best = np.max(g + self._terms(m, a[:, None], mu, nu), axis=1)  # [K] the best grid value
        tol = 0.02 / float(np.sum(self.counts))
        for r in range(rounds + 1):
            kappa = np.where(m_l >= a[cell], up, -down)
            bound = _interval_sup(m_l, m_r, g_l, g_r, kappa, a[cell])
            loose = bound > best[cell] + tol
            if r == rounds or not loose.any():
                break
            lc, ll, lr, gl, gr = cell[loose], m_l[loose], m_r[loose], g_l[loose], g_r[loose]
            frac = np.linspace(0, 1, split + 1)[1:-1]  # interior points
            pts = ll[:, None] + (lr - ll)[:, None] * frac[None, :]  # [F, split - 1]
            if r == 0:  # near 0 the intervals are geometric: split them geometrically
                geo = ll[:, None] * (lr / np.where(ll > 0, ll, 1.0))[:, None] ** frac[None, :]
                pts = np.where((ll > 0)[:, None], geo, pts)
            gp = _log_mgf(a[lc], w[lc], theta, pts)  # [F, split - 1]
            best_new = np.max(gp + self._terms(pts, a[lc][:, None], mu, nu), axis=1)
            np.maximum.at(best, lc, best_new)
            nodes = np.concatenate([ll[:, None], pts, lr[:, None]], axis=1)  # [F, split + 1]
            gnodes = np.concatenate([gl[:, None], gp, gr[:, None]], axis=1)
            keep = ~loose
            cell = np.concatenate([cell[keep], np.repeat(lc, split)])
            m_l = np.concatenate([m_l[keep], nodes[:, :-1].ravel()])
            m_r = np.concatenate([m_r[keep], nodes[:, 1:].ravel()])
            g_l = np.concatenate([g_l[keep], gnodes[:, :-1].ravel()])
            g_r = np.concatenate([g_r[keep], gnodes[:, 1:].ravel()])
        near = np.full(k, -np.inf)
        np.maximum.at(near, cell, bound)
        return np.maximum(near, _far(a, w, theta, self.top, lam, up))

    def multipliers(
        self, theta: float, delta: float, start: tuple[float, float] | None = None
    ) -> tuple[float, float, float]:
        """(grid value, μ, ν) with (μ, ν) ≥ 0 minimising the grid value at θ (Nelder–Mead on |μ|, |ν|,
        from `start` or from the quadratic model's μ = 4δλ²θ/Σ(1/w)): a choice, not a bound."""
        from scipy.optimize import minimize

        mu0 = max(4 * delta * self.lam**2 * theta / float(np.sum(self.counts / self.w)), 1e-9)
        cap = MU_CAP * mu0  # past it the search stops (a multiplier that large only loosens the bound)
        if start is None or not all(np.isfinite(start)) or max(start) > cap:
            start = (mu0, 0.01 * mu0)

        def value(x: np.ndarray) -> float:
            if max(abs(x[0]), abs(x[1])) > cap:
                return np.inf
            return self.grid_value(theta, abs(x[0]), delta, abs(x[1]))

        scale = max(start[0], 1e-9)
        res = minimize(
            value,
            np.asarray(start, dtype=float),
            method="Nelder-Mead",
            options={"maxiter": 400, "xatol": 1e-4 * scale, "fatol": 1e-4,
                     "initial_simplex": [start, (start[0] * 1.3, start[1]), (start[0], start[1] + 0.05 * scale)]},
        )  # fmt: skip
        return float(res.fun), abs(float(res.x[0])), abs(float(res.x[1]))

    def screen(self, delta: float) -> tuple[float, float, float, float]:
        """(grid value, θ, μ, ν) at the θ of a walk by factors of THETA_STEP from THETA_START/sd that
        stops where the grid value stops falling ((μ, ν) the best for each θ, `multipliers`): a
        choice, not a bound."""

        def value(k: float, start: tuple[float, float] | None) -> tuple[float, float, float, float]:
            theta = k / self.sd
            v, mu, nu = self.multipliers(theta, delta, start)
            return v, theta, mu, nu

        first = value(THETA_START, None)
        best = first
        for step in (THETA_STEP, 1 / THETA_STEP):
            k, cur = THETA_START, first
            for _ in range(THETA_TRIES):
                k *= step
                cand = value(k, (cur[2] * step, cur[3] * step))  # μ, ν scale with θ
                if cand[0] >= cur[0]:
                    break
                cur = cand
            if cur[0] < best[0]:
                best = cur
            if best is not first:  # the first direction improved: no need to try the other
                break
        return best

    def certified(self, delta: float, log_target: float) -> bool:
        """The screen's (θ, μ, ν) bounds every miss probability at TV ≥ δ by e^{log_target} (`log_miss`)."""
        value, theta, mu, nu = self.screen(delta)
        return value <= log_target and self.log_miss(theta, mu, delta, nu) <= log_target
