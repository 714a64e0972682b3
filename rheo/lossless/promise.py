"""The gate's promise, as a theorem at the N used (docs/STATISTICS.md, "What the statistics promise").

Two tests of samples against an exact law p (a dict of outcomes to probabilities); for each law and
N the `Planner` uses the one that certifies the smaller TV (a choice made before any sample is seen):

- **The set test** (`SetTest`, supports of ≤ `SET_MAX` outcomes): one exact binomial test per set
  of outcomes C, rejecting when the count X(C) is at most the α/(2^K − 1) quantile of
  Binomial(N, p(C)). A law at TV ≥ δ lowers some set by δ, and the binomial tail at p(C) − δ is
  the exact worst case: level and power are exact binomial numbers, nothing is bounded loosely.
- **The weighted χ²** (`Null`, `miss_bound`, any support):
  1. *Poissonisation.* Of the N samples a uniformly chosen N' ~ Poisson(λ) are counted, N' drawn
     from the call's seed, with λ = `poisson_rate(N)` so that N' > N has probability ≤ SPILL_SHARE·β
     (then the test does not reject: charged to β). The counts X_i are then independent
     Poisson(λP_i) under any sampler law P.
  2. *The statistic* S = Σ_i w_i [(X_i − λp_i)² − X_i] over every outcome of positive p (no pooling),
     w_i = max(p_i, τ)^(−2/3), τ = FLOOR/K (the 2/3-power weights: N grows with ‖p‖₂/₃). With d = P − p: E S = λ² Σ w_i d_i² = λ²D and
     Var S = Σ w_i² (2λ²P_i² + 4λ³ P_i d_i²).
  3. *The critical value* c: the smaller of two bounds on the truncated null statistic's tail, a
     Chernoff bound (its cumulant generating function computed exactly) and, on supports of ≤
     CONV_CELLS outcomes, the exact convolution of its terms rounded up to a grid, plus a union
     bound on the truncation: P_p(S ≥ c) ≤ α (`Null`).
  4. *The power*, by either of two certificates. The first (`rheo.lossless.dual`): one Chernoff
     bound on the worst law, by weak duality over the TV and the mass constraints, each cell's
     supremum bounded on its own (cells of equal p once, counted as often as they occur). The second
     (`miss_bound`): for every P with TV(P, p) ≥ δ, D ≥ D₀ = 4δ²/Σ 1/w (Cauchy–Schwarz); S − E S
     splits as L + Q, bounded by Bennett (L) and Maurer (Q); their variances are bounded over every
     P with D in an interval (`cell_reach`: how far one outcome can move; `spike_cubes`: how much
     of D spikes can carry), on a grid of intervals covering every D ≥ D₀.
  Mass η off the support is caught by the impossible-sample rule: (1 − η)^N ≤ OFF_SHARE·β for
  η ≥ η₀, and below η₀ the support part is still at TV ≥ δ − η₀ (planned for).

A sample on an outcome of p = 0 rejects outright under both tests. `Planner.plan(δ)` is the least N
whose certificate holds; `Planner.detectable(N)` the least δ certified at N (the `detectable_tv` a
record prints). `proofs/gate.py` checks the lemmas the argument uses.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from .dual import Dual

SPILL_SHARE = 0.01  # share of β spent on N' > N (the Poisson count overshooting the samples)
OFF_SHARE = 0.1  # share of β spent on mass off the support that no sample reveals
TRUNC_SHARE = 0.05  # share of α spent on the truncation of the null statistic
FLOOR = 0.05  # τ = FLOOR / K: the weights' floor (w_i = max(p_i, τ)^(−2/3))
VARIANCE_MAX_CELLS = 50_000  # the variance-bound certificate runs on supports of at most this many outcomes
CONV_CELLS = 512  # the null's tail by convolution on supports of at most this many outcomes (else Chernoff alone)
CONV_GRID = 400  # the convolution's grid: h = sd / max(CONV_GRID, 4K) (rounding costs ≤ K·h ≤ sd/4 of c)
CONV_MAX_BINS = 200_000  # past this many grid points below the Chernoff critical value, Chernoff alone
CONV_CUT = 1e-40  # a term's probabilities below this go to the overflow (up: the tail only grows)
CONV_SLACK = 1e-7  # the relative float error charged to the convolution's tail (≥ 2·CONV_CELLS·CONV_MAX_BINS·2⁻⁵³)
POWER = 2 / 3  # the weights' exponent: Σ w_i²p_i² = Σ 1/w_i, the instance-optimal ‖p‖₂/₃ scaling


@dataclass(frozen=True)
class Weights:
    """The law's support (probabilities as floats, descending) and the statistic's weights
    w_i = max(p_i, τ)^(−POWER), τ = FLOOR / K: the 2/3-power weights of the instance-optimal identity
    tests (Valiant & Valiant; Balakrishnan & Wasserman), floored so that no weight exceeds (K/FLOOR)^(2/3)."""

    p: np.ndarray  # [K]
    w: np.ndarray  # [K]
    inv_w_sum: float  # Σ 1/w_i: D ≥ 4δ² / inv_w_sum
    u_p: np.ndarray  # [U] the distinct probabilities (outcomes of equal p have equal weights and terms)
    u_w: np.ndarray  # [U] their weights
    u_n: np.ndarray  # [U] how many outcomes have each

    @staticmethod
    def of(probs: Any) -> Weights:
        p = np.sort(np.asarray([float(x) for x in probs if x > 0], dtype=float))[::-1]  # [K]
        w = np.maximum(p, FLOOR / len(p)) ** -POWER  # [K]
        u_p, first, u_n = np.unique(p, return_index=True, return_counts=True)
        return Weights(p, w, float(np.sum(1 / w)), u_p, w[first], u_n.astype(float))


@functools.lru_cache(maxsize=4096)
def poisson_rate(n: int, beta: float) -> float:
    """λ < n with P(Poisson(λ) > n) ≤ SPILL_SHARE·β: the Poisson count fits in n samples."""
    from scipy.stats import poisson

    target = SPILL_SHARE * beta
    lo, hi = 0.0, float(n)
    if poisson.sf(n, hi) <= target:
        return hi
    for _ in range(60):
        mid = (lo + hi) / 2
        if poisson.sf(n, mid) <= target:
            lo = mid
        else:
            hi = mid
    return lo


# --- the null: a critical value with P(S ≥ c) ≤ α, exactly ---------------------------------


class Null:
    """The null statistic's tail bound for one (law, λ, α): counts truncated at b_i with
    Σ P(X_i > b_i) ≤ TRUNC_SHARE·α (S = S_b unless some X_i > b_i), and two bounds on the truncated
    statistic's tail, of which `p_value(s)` takes the smaller (each is valid, so their minimum is):

        P_p(S ≥ s) ≤ Σ P(X_i > b_i) + min(min_θ exp(Λ(θ) − θs), (1 + CONV_SLACK)·T(s)) =: `p_value(s)`.

    - *Chernoff*: Λ(θ), the truncated statistic's cumulant generating function, computed exactly
      (a sum over 0..b_i per outcome); Markov's inequality on e^{θS_b}.
    - *Convolution* (supports of ≤ CONV_CELLS outcomes, `_convolve`): each term f_i − min f_i ≥ 0 is
      rounded **up** to the grid h = sd/max(CONV_GRID, 4K), so S_b ≤ Σ min f_i + h·Σ k_i with k_i
      independent integers, whose law is computed exactly up to an overflow bin (every mass that
      would pass the top, or too small to carry, is moved into the overflow: up, so the tail only
      grows): T(s) = P(Σ k_i ≥ ⌈(s − Σ min f_i)/h⌉). Every number is a sum of products of
      non-negative floats, so rounding changes it by a relative ≤ 2KL·2⁻⁵³ < CONV_SLACK (L + 1 grid points).

    The critical value c is the least s with p_value(s) ≤ α (the smaller of the two bounds' own)."""

    def __init__(self, wt: Weights, lam: float, alpha: float):
        from scipy.special import gammaln
        from scipy.stats import poisson

        self.lam = lam
        a = lam * wt.u_p  # [U] null means, one per distinct probability (u_n outcomes each)
        self.counts = wt.u_n  # [U]
        k = int(np.sum(self.counts))
        eps = TRUNC_SHARE * alpha / k
        b = np.maximum(poisson.isf(eps, a), np.ceil(a + 1)).astype(np.int64)  # [U]
        b = np.where(poisson.sf(b, a) <= eps, b, b + 1)  # P(X_i > b_i) ≤ eps, whatever isf's rounding
        self.trunc = float(np.sum(self.counts * poisson.sf(b, a)))
        lens = b + 1  # values 0..b_i, the last standing for "≥ b_i"
        self.starts = np.concatenate([[0], np.cumsum(lens)[:-1]])  # [U]
        self.cell = np.repeat(np.arange(len(a)), lens)  # [Σ(b+1)]
        x = np.arange(int(lens.sum())) - self.starts[self.cell]  # [Σ(b+1)]
        ac = a[self.cell]
        logpmf = x * np.log(np.maximum(ac, 1e-300)) - ac - gammaln(x + 1)
        logpmf[self.starts + b] = poisson.logsf(b - 1, a)  # P(X ≥ b_i)
        self.logpmf = logpmf
        self.f = wt.u_w[self.cell] * ((x - ac) ** 2 - x)  # [Σ(b+1)] the weighted term at min(X, b)
        self.sd = math.sqrt(float(np.sum(self.counts * wt.u_w**2 * 2 * a**2)))  # the null standard deviation of S
        self.alpha = alpha
        room = alpha - self.trunc
        self.theta_c = 0.0
        self.critical = self._critical(math.log(room)) * (1 + 1e-9)
        self.grid, self.base, self.tail = 0.0, 0.0, np.zeros(0)
        if k <= CONV_CELLS:
            self._convolve(k)
            above = np.nonzero((1 + CONV_SLACK) * self.tail <= room)[0]
            if len(above):
                self.critical = min(
                    self.critical, self.base + self.grid * float(above[0]) * (1 + 1e-12) + 1e-9 * self.sd
                )

    def _convolve(self, k: int) -> None:
        """The law of Σ k_i (k_i = ⌈(f_i − min f_i)/h⌉) on 0..L with an overflow bin, L the Chernoff
        critical value's grid index: `tail[j]` = P(Σ k_i ≥ j) for j ≤ L (see the class docstring)."""
        ends = np.append(self.starts[1:], len(self.f))
        mins = np.minimum.reduceat(self.f, self.starts)  # [U]
        self.base = float(np.sum(self.counts * mins))
        self.grid = self.sd / max(CONV_GRID, 4 * k)
        top = math.ceil((self.critical - self.base) / self.grid) + 1
        if top > CONV_MAX_BINS:
            return
        cur = np.zeros(top + 1)  # P(Σ k = j) so far, j = 0..top
        cur[0] = 1.0
        over = 0.0  # P(Σ k > top) so far
        for i, count in enumerate(self.counts.astype(np.int64)):  # each distinct term once, `count` times over
            s, e = int(self.starts[i]), int(ends[i])
            steps = grid_steps(self.f[s:e] - mins[i], self.grid)
            pm = np.exp(self.logpmf[s:e])
            keep = (steps <= top) & (pm >= CONV_CUT)
            v = np.bincount(steps[keep], weights=pm[keep], minlength=top + 1)  # [top + 1] this term's kept law
            gone = float(np.sum(pm[~keep]))  # moved to the overflow
            above = np.concatenate([np.cumsum(v[::-1])[::-1][1:], [0.0]]) + gone  # [top + 1] P(k_i > j)
            support = np.nonzero(v)[0]
            for _ in range(count):
                new = np.zeros(top + 1)
                for j in support:
                    new[j:] += v[j] * cur[: top + 1 - j]
                over += float(np.dot(cur, above[::-1]))  # cur[t]·P(k_i > top − t)
                cur = new
        self.tail = np.cumsum(cur[::-1])[::-1] + over  # [top + 1]

    def cgf(self, theta: float) -> float:
        """Λ(θ) = log E exp(θ S_b), exactly (log-sum-exp per outcome)."""
        z = self.logpmf + theta * self.f
        m = np.maximum.reduceat(z, self.starts)  # [U]
        return float(np.sum(self.counts * (m + np.log(np.add.reduceat(np.exp(z - m[self.cell]), self.starts)))))

    def _critical(self, log_room: float) -> float:
        thetas: dict[float, float] = {}

        def c_of(theta: float) -> float:
            val = (self.cgf(theta) - log_room) / theta
            thetas[val] = theta
            return val

        best = _golden_min(c_of, 1e-6 / self.sd, 10.0 / self.sd)
        self.theta_c = thetas[best]
        return best

    def p_value(self, s: float) -> float:
        """P_p(S ≥ s) bounded above (Chernoff on the truncated statistic plus the truncation)."""
        if s <= 0:
            return 1.0
        cands = [self.theta_c] if self.theta_c else []

        def log_bound(theta: float) -> float:
            return self.cgf(theta) - theta * s

        best = _golden_min(log_bound, 1e-6 / self.sd, 10.0 / self.sd)
        best = min([best, *(log_bound(t) for t in cands)])
        bound = math.exp(min(best, 0.0))
        if len(self.tail):
            j = max(0, math.ceil((s - self.base) / self.grid))
            if j < len(self.tail):
                bound = min(bound, (1 + CONV_SLACK) * float(self.tail[j]))
        return float(min(1.0, self.trunc + bound))


def grid_steps(values: np.ndarray, grid: float) -> np.ndarray:
    """Non-negative values in grid steps, rounded up (a hair more, so float rounding never rounds down):
    values ≤ grid·steps."""
    return np.ceil(values * (1 + 1e-12) / grid + 1e-9).astype(np.int64)


def _golden_min(fn: Any, lo: float, hi: float, iters: int = 40) -> float:
    """min of a (quasi)convex function on [lo, hi] by golden section on log θ: any θ gives a valid
    bound, so the search affects only how tight c is, never its validity (40 steps narrow the
    bracket's log θ, 16 wide, to 1e-7: the minimum's flatness makes the rest immaterial)."""
    g = (math.sqrt(5) - 1) / 2
    llo, lhi = math.log(lo), math.log(hi)
    x1, x2 = lhi - g * (lhi - llo), llo + g * (lhi - llo)
    f1, f2 = fn(math.exp(x1)), fn(math.exp(x2))
    best = min(f1, f2)
    for _ in range(iters):
        if f1 <= f2:
            lhi, x2, f2 = x2, x1, f1
            x1 = lhi - g * (lhi - llo)
            f1 = fn(math.exp(x1))
        else:
            llo, x1, f1 = x1, x2, f2
            x2 = llo + g * (lhi - llo)
            f2 = fn(math.exp(x2))
        best = min(best, f1, f2)
    return best


# --- the alternative: Cantelli with a variance bound over every P ------------------------------


def _bennett(y: np.ndarray) -> np.ndarray:
    """φ(y) = 2(e^y − 1 − y)/y², increasing, φ(0) = 1: e^x − 1 − x ≤ φ(y) x²/2 for x ≤ y."""
    big = y > 700  # φ would overflow: +∞ makes that θ's bound trivial (1), never too small
    y = np.clip(y, 1e-12, 700.0)
    return np.where(big, np.inf, np.where(y < 1e-4, 1 + y / 3, 2 * np.expm1(y) / y**2 - 2 / y))


@dataclass(frozen=True)
class Moments:
    """The law's sums that bound the statistic's moments under every alternative (`miss_bound`)."""

    m1: float  # max_i w_i p_i
    w_max: float  # max_i w_i
    sum_w2p: float  # Σ w_i² p_i
    sum_w2p2: float  # Σ w_i² p_i²
    sum_w3: float  # Σ w_i³

    @staticmethod
    def of(wt: Weights) -> Moments:
        w, p = wt.w, wt.p
        return Moments(
            float(np.max(w * p)),
            float(w.max()),
            float(np.sum(w**2 * p)),
            float(np.sum(w**2 * p**2)),
            float(np.sum(w**3)),
        )


def cell_reach(w: np.ndarray, inv_w_sum: float, delta: float, dp: np.ndarray) -> np.ndarray:
    """[J, K]: the largest |d_i| of any P with Σ|d| ≥ 2δ and D = Σ w d² ≤ D' (one row per D').

    The other cells carry Σ_{j≠i}|d_j| ≥ 2δ − |d_i|, so by Cauchy–Schwarz over them (with
    Σ_{j≠i} 1/w_j ≤ s = Σ 1/w) w_i d_i² + (2δ − |d_i|)₊²/s ≤ D'. For |d_i| ≤ 2δ that is the quadratic
    (w_i + 1/s)u² − (4δ/s)u − (D' − 4δ²/s) ≤ 0, whose larger root bounds |d_i|; past 2δ only
    w_i u² ≤ D' remains. Near D₀ = 4δ²/s this pins d to the Cauchy–Schwarz shape (|d_i| ≈ 2δ/(s w_i))
    where the box |d_i| ≤ √(D'/w_i) alone would allow a spike on the lightest outcome."""
    s = inv_w_sum
    a = w[None, :] + 1 / s  # [1, K]
    slack = np.maximum(dp[:, None] - 4 * delta**2 / s, 0.0)  # [J, 1]
    root = (2 * delta / s + np.sqrt((2 * delta / s) ** 2 + a * slack)) / a  # [J, K]
    box = np.sqrt(dp[:, None] / w[None, :])  # [J, K]
    return np.where(box > 2 * delta, box, np.minimum(root, box)) * (1 + 1e-12)


def spike_cubes(
    w: np.ndarray, inv_w_sum: float, delta: float, dp: np.ndarray, up: np.ndarray, down: np.ndarray
) -> np.ndarray:
    """[J]: an upper bound on Σ w_i²|d_i|³ over every P with Σ|d| ≥ 2δ and D ≤ D' (one per D').

    With v_i = w_i|d_i| and a_i = w_i d_i² = v_i|d_i|, Σ w²|d|³ = Σ a_i v_i. Split the cells at a
    threshold κ > 4δ/s (s = Σ 1/w): the cells with v_i ≤ κ give ≤ κD'. The others ("spikes", set B)
    have |d_i| = a_i/v_i < a_i/κ, and the rest of the law still carries Σ_{j∉B}|d_j| ≥ 2δ − Σ_B|d_i|,
    so D ≥ Σ_B a_i + (2δ − Σ_B|d_i|)²/s ≥ Σ_B a_i + D₀ − (4δ/s)Σ_B|d_i| (D₀ = 4δ²/s), hence
    Σ_B a_i (1 − 4δ/(sκ)) ≤ D' − D₀ and Σ_B a_i v_i ≤ v_max (D' − D₀)/(1 − 4δ/(sκ)), v_max the largest
    w_i|d_i| any cell can reach (`cell_reach`). The best κ of a grid is taken; near D₀ this is
    about κD₀ where bounding every a_i v_i by v_max gives v_max·D₀ (a spike on the lightest outcome)."""
    s = inv_w_sum
    d0 = 4 * delta**2 / s
    vmax = np.max(w[None, :] * np.maximum(up, down), axis=1)  # [J]
    kappa = (4 * delta / s) * np.geomspace(1.05, 50.0, 40)[:, None]  # [G, 1]
    bound = kappa * dp + vmax * np.maximum(dp - d0, 0.0) / (1 - 4 * delta / (s * kappa))  # [G, J]
    return np.minimum(np.min(bound, axis=0), vmax * dp)


def miss_bound(wt: Weights, lam: float, c: float, delta: float, *, grid: int = 400) -> float:
    """An upper bound on P_P(S < c) over every P on the support with TV(P, p) ≥ `delta`.

    With Z_i = X_i − λP_i and d = P − p, S − E S = L + Q where L = Σ w_i(2λd_i − 1)Z_i and
    Q = Σ w_i(Z_i² − λP_i), and E S = λ²D, D = Σ w_i d_i² ≥ D₀ = 4δ²/Σ(1/w) (Cauchy–Schwarz).
    - Q: Maurer's inequality for the non-negative w_i Z_i²: P(Q ≤ −t) ≤ exp(−t²/2V_Q) with
      V_Q = Σ w_i² E Z_i⁴ = Σ w_i²(λP_i + 3λ²P_i²).
    - L: Chernoff with log E e^{−θ c_i Z_i} = λP_i(e^{−θc_i} − 1 + θc_i) ≤ λP_i θ²c_i² φ(θb)/2, where
      b ≥ max(0, −c_i) and φ is Bennett's function: P(L ≤ −t) ≤ exp(−θt + θ²V_L φ(θb)/2),
      V_L = Σ w_i² λP_i (2λd_i − 1)².
    Every P with TV ≥ δ and D ≤ D' has |d_i| ≤ r_i (`cell_reach`), and
      Σ w²P d² ≤ m₁D' + Σ w²|d|³ ≤ m₁D' + `spike_cubes`  (and ≤ max_i w_i(p_i + r_i) · D'),
      Σ w²P ≤ Σ w²p + √(Σ w³ · D'),  Σ w²P² ≤ (1+ε)Σ w²p² + (1 + 1/ε) w_max D',
      (2λd − 1)² ≤ (1 + ε)4λ²d² + (1 + 1/ε),  b ≤ w_max(1 + 2λ√(D'/w_min)) ∧ max w_i(1 + 2λp_i),
    so V_L, V_Q and b have bounds that depend on D' only. On each interval D ∈ [D_j, D_{j+1}] of a
    geometric grid from D₀ to 2·w_max (Σ d² ≤ Σ|d| ≤ 2): E S ≥ λ²D_j, the bounds are taken at D_{j+1},
    and the gap λ²D_j − c is split t₁ + t₂ on a grid. The largest bound over the intervals is returned."""
    if len(wt.p) > VARIANCE_MAX_CELLS:  # its [grid × K] arrays would not fit: the dual certificate alone
        return 1.0
    m = Moments.of(wt)
    d_min = 4 * delta**2 / wt.inv_w_sum
    d_max = 2 * m.w_max * (1 + 1e-9)
    if d_min <= 0 or lam**2 * d_min <= c:
        return 1.0
    ds = np.geomspace(d_min, d_max, grid)  # [J]
    dp = ds[1:]  # [J-1] the interval's upper end
    w, p = wt.w, wt.p
    r = cell_reach(w, wt.inv_w_sum, delta, dp)  # [J-1, K] |d_i| ≤ r_i on the interval
    up = np.minimum(r, 1 - p[None, :])  # [J-1, K] the largest d_i > 0
    down = np.minimum(r, p[None, :])  # [J-1, K] the largest |d_i|, d_i < 0
    rho = np.max(w * (p + up), axis=1)  # [J-1] ≥ max_i w_i P_i: Σ w²P d² ≤ ρ D'
    rho_d = np.minimum(rho * dp, m.m1 * dp + spike_cubes(w, wt.inv_w_sum, delta, dp, up, down))  # [J-1] ≥ Σ w²P d²
    w2d = np.minimum(np.sqrt(m.sum_w3 * dp), m.w_max * np.sqrt(dp * float(np.sum(w))))  # [J-1] ≥ Σ w² d⁺
    w2d = np.minimum(np.minimum(w2d, m.w_max**2), np.sum(w**2 * up, axis=1))  # Σ d⁺ ≤ 1; d_i ≤ up_i
    eps = np.geomspace(0.02, 4.0, 16)[:, None]  # [E, 1] the (1+ε) splits
    w2p = m.sum_w2p + w2d  # [J-1] ≥ Σ w²P
    vl = np.min((1 + eps) * 4 * lam**3 * rho_d + (1 + 1 / eps) * lam * w2p, axis=0)  # [J-1]
    w2p2 = np.min((1 + eps) * m.sum_w2p2 + (1 + 1 / eps) * m.w_max * dp, axis=0)  # [J-1] ≥ Σ w²P²
    w2p2 = np.minimum(w2p2, np.sum(w**2 * (p + up) ** 2, axis=1))  # every P_i ≤ p_i + up_i
    vq = lam * w2p + 3 * lam**2 * w2p2  # [J-1]
    b = np.max(w * (1 + 2 * lam * down), axis=1)  # [J-1] ≥ max(0, −c_i)
    gap = lam**2 * ds[:-1] - c  # [J-1]
    share = np.linspace(0.02, 0.98, 49)[:, None]  # [S, 1] t₁ = share·gap
    t1, t2 = share * gap, (1 - share) * gap  # [S, J-1]
    kappa = np.geomspace(0.1, 1.0, 16)[:, None, None]  # [T, 1, 1] θ = κ·t₁/V_L
    theta = kappa * t1 / vl  # [T, S, J-1]
    log_l = np.min(-theta * t1 + theta**2 * vl * _bennett(theta * b) / 2, axis=0)  # [S, J-1]
    miss = np.exp(np.minimum(log_l, 0)) + np.exp(-(t2**2) / (2 * vq))  # [S, J-1]
    return float(np.max(np.min(miss, axis=0)))


# --- the certificate at N, and the planner --------------------------------------------------


def _eta0(n: int, beta: float) -> float:
    """η₀ with (1 − η₀)^n ≤ OFF_SHARE·β: off-support mass ≥ η₀ shows up in n samples."""
    return -math.log(OFF_SHARE * beta) / n


def _support_beta(beta: float) -> float:
    return beta * (1 - SPILL_SHARE - OFF_SHARE)


def certified(wt: Weights, lam: float, c: float, delta: float, beta: float) -> bool:
    """Every P on the support with TV ≥ `delta` is missed with probability ≤ β (`miss_bound`)."""
    return delta > 0 and miss_bound(wt, lam, c, delta) <= beta


SET_MAX = 18  # the set test runs on supports of at most this many outcomes (2^K − 1 sets)
SET_GRID = 1e-4  # the sets' p(C) are read on this grid: the level below, the power above p(C)


class SetTest:
    """The exact test for a small support: one binomial test per set of outcomes (Scheffé's sets).

    TV(P, p) = max_A P(A) − p(A). If P has TV ≥ δ, some non-empty C ⊆ supp(p) has p(C) − P(C) ≥ δ
    (C = the support minus the outcomes P raises; mass off the support only lowers P(C)). With the
    n samples i.i.d. from P, the count X(C) is Binomial(n, P(C)) exactly. The test rejects when for
    some C, X(C) ≤ c_C, the largest c with F(c; n, p(C)) ≤ α/m (F the binomial CDF, m = 2^K − 1 sets):
    level ≤ m · α/m = α by the union bound; and F(c; n, ·) falls as its probability rises, so for
    every P at TV ≥ δ the power is ≥ min_C F(c_C; n, p(C) − δ) over the sets with p(C) ≥ δ, a finite
    computation of exact binomial tails. No Poissonisation, no floor, no approximation. To keep the
    list short, each p(C) is read on a grid of SET_GRID: c_C is computed at the cell's lower end
    (F falls as p rises, so the level only drops) and the power at its upper end minus δ (the power
    only drops): both directions conservative, at a cost of at most SET_GRID in δ."""

    def __init__(self, probs: np.ndarray, alpha: float, beta: float):
        sums = np.zeros(1)
        for x in probs:
            sums = np.concatenate([sums, sums + x])
        self.k = len(probs)
        self.m = 2**self.k - 1
        self.sums = sums  # [2^K] p(C) for every subset (bit i: outcome i in C); index 0 is ∅
        cells = np.unique(self.cell_of(sums[1:]))  # [U] the grid cells the sets' p(C) fall in
        self.lo = np.maximum(cells * SET_GRID - 1e-12, 0.0)  # [U] ≤ p(C): the level is computed here
        self.hi = np.minimum((cells + 1) * SET_GRID + 1e-12, 1.0)  # [U] ≥ p(C): the power is computed here
        self.cells = cells
        self.alpha, self.beta = alpha, beta
        self._crit: dict[int, np.ndarray] = {}

    @staticmethod
    def cell_of(p: np.ndarray) -> np.ndarray:
        """The grid cell k with k·SET_GRID ≤ p < (k + 1)·SET_GRID (sets in one cell share c_C)."""
        return np.floor(p / SET_GRID).astype(np.int64)

    def critical(self, n: int) -> np.ndarray:
        """[U] c_C per distinct p(C) (−1: that set never rejects): F(c_C; n, p(C)) ≤ α/m."""
        if n not in self._crit:
            from scipy.special import bdtrik
            from scipy.stats import binom

            room = self.alpha / self.m
            c = np.floor(np.nan_to_num(bdtrik(room, n, self.lo), nan=-1.0))  # a guess; made exact below
            c = np.clip(c, -1, n)
            for _ in range(64):  # c is the largest with F(c) ≤ room: step down past it, then up to it
                down = (c >= 0) & (binom.cdf(c, n, self.lo) > room)
                up = (c < n) & (binom.cdf(c + 1, n, self.lo) <= room)
                if not (down.any() or up.any()):
                    break
                c = c - down + up
            else:
                raise AssertionError("the set test's critical counts did not settle")
            self._crit[n] = c
        return self._crit[n]

    def power(self, n: int, delta: float) -> float:
        """min over the sets of P(X(C) ≤ c_C) at P(C) = p(C) − δ: every P at TV ≥ δ is rejected at least this often."""
        from scipy.stats import binom

        sel = self.hi >= delta
        if not np.any(sel):
            return 1.0
        c = self.critical(n)[sel]
        return float(np.min(np.where(c >= 0, binom.cdf(c, n, np.clip(self.hi[sel] - delta, 0.0, 1.0)), 0.0)))

    def holds(self, n: int, delta: float) -> bool:
        return delta > 0 and self.power(n, delta) >= 1 - self.beta

    def p_value(self, counts: np.ndarray, n: int) -> float:
        """Bonferroni over the sets: m · min_C F(X(C); n, p(C)) (≤ α exactly when some X(C) ≤ c_C)."""
        from scipy.stats import binom

        xs = np.zeros(1)
        for x in counts:
            xs = np.concatenate([xs, xs + x])
        lo = np.maximum(self.cell_of(self.sums[1:]) * SET_GRID - 1e-12, 0.0)
        return float(min(1.0, self.m * np.min(binom.cdf(xs[1:], n, lo))))


class Planner:
    """The certificate for one law at level α and miss probability β: which N certifies which δ.

    Two proved tests: the set test (`SetTest`, exact, for supports of ≤ `SET_MAX` outcomes) and the
    weighted χ² (`Null`, `miss_bound`, any support). At each n the one that certifies the smaller δ
    is used (`kind`: the χ² where it certifies a δ 1% below the set test's): the choice depends on the
    law, n, α and β only, never on the samples, so each verdict is one test's, at its level and power."""

    def __init__(self, probs: Any, alpha: float, beta: float):
        self.wt = Weights.of(probs)
        self.alpha, self.beta = alpha, beta
        self.sets = SetTest(self.wt.p, alpha, beta) if 2 <= len(self.wt.p) <= SET_MAX else None
        self._nulls: dict[int, Null] = {}
        self._duals: dict[int, Dual] = {}
        self._detectable: dict[tuple[str, int], float] = {}
        self._kinds: dict[int, str] = {}
        self._held: dict[tuple[str, int, float], bool] = {}  # (kind, n, δ) -> certified

    def null(self, n: int) -> Null:
        if n not in self._nulls:
            self._nulls[n] = Null(self.wt, poisson_rate(n, self.beta), self.alpha)
        return self._nulls[n]

    def kind(self, n: int) -> str:
        """ "sets" or "chi2": the test used at n samples ("one" for a one-outcome law)."""
        if len(self.wt.p) == 1:
            return "one"
        if self.sets is None:
            return "chi2"
        if n not in self._kinds:  # χ² only where it certifies a δ below the set test's
            delta = self._least_delta("sets", n)
            self._kinds[n] = "chi2" if delta > 0.01 and self._holds("chi2", n, 0.99 * delta) else "sets"
        return self._kinds[n]

    def holds(self, n: int, delta: float) -> bool:
        """TV ≥ `delta` of the full law is detected with power ≥ 1 − β at n samples."""
        return self._holds(self.kind(n), n, delta)

    def _holds(self, kind: str, n: int, delta: float) -> bool:
        key = (kind, n, delta)
        if key not in self._held:
            if len(self._held) > 4096:
                self._held.clear()
            self._held[key] = self._certify(kind, n, delta)
        return self._held[key]

    def _certify(self, kind: str, n: int, delta: float) -> bool:
        if kind == "one":
            return delta > 0 and 1 - (1 - min(delta, 1.0)) ** n >= 1 - self.beta
        if kind == "sets":
            assert self.sets is not None, "the set test runs on supports of 2..SET_MAX outcomes"
            return self.sets.holds(n, delta)
        inner = delta - _eta0(n, self.beta)
        lam = poisson_rate(n, self.beta)
        if inner <= 0 or lam < 2:
            return False
        null = self.null(n)
        if certified(self.wt, lam, null.critical, inner, _support_beta(self.beta)):
            return True
        return self.dual(n).certified(inner, math.log(_support_beta(self.beta)))

    def dual(self, n: int) -> Dual:
        """The dual Chernoff bound at n samples (`rheo.lossless.dual`), its tables kept per n."""
        if n not in self._duals:
            if len(self._duals) > 4:
                self._duals.clear()
            null = self.null(n)
            wt = self.wt
            self._duals[n] = Dual(wt.u_p, wt.u_w, poisson_rate(n, self.beta), null.critical, null.sd, wt.u_n)
        return self._duals[n]

    def plan(self, delta: float, *, cap: int = 10**10, limit: int | None = None) -> int | None:
        """The least N (to within 0.5%, rounded up) that certifies `delta`; None when `limit` is
        given and N > limit (found at the price of one certificate at `limit`, not a search)."""
        if len(self.wt.p) == 1:  # one outcome: any sample elsewhere rejects; (1 − δ)^N ≤ β
            n = max(1, math.ceil(math.log(self.beta) / math.log(1 - delta))) if delta < 1 else 1
            return None if limit is not None and n > limit else n
        if limit is not None and not self.holds(limit, delta):
            return None
        lo, hi = 0, max(16, self._guess(delta) // 4)  # the search starts near the answer (any start is valid)
        while not self.holds(hi, delta):
            lo, hi = hi, hi * 2
            if hi > cap:
                raise ValueError(f"no N <= {cap} certifies TV {delta}")
        if lo == 0:  # the start certifies: halve down to a failing n
            lo = hi // 2
            while lo > 1 and self.holds(lo, delta):
                hi, lo = lo, lo // 2
            lo = max(lo, 1)
        while hi - lo > max(1, lo // 200):
            mid = (lo + hi) // 2
            if self.holds(mid, delta):
                hi = mid
            else:
                lo = mid
        return hi

    def _guess(self, delta: float) -> int:
        """A rough N for `delta` (the weighted χ²'s Gaussian limit: λ²·4δ²/Σ(1/w) = 5·sd): where the
        search starts, not a bound."""
        sd_per_lam = math.sqrt(2 * float(np.sum(self.wt.w**2 * self.wt.p**2)))
        return int(5 * sd_per_lam * self.wt.inv_w_sum / (4 * delta**2))

    def detectable(self, n: int) -> float:
        """The least δ (to 1e-4 of its value) certified at n samples; 1 when none is."""
        return self._least_delta(self.kind(n), n)

    def _least_delta(self, kind: str, n: int) -> float:
        if (kind, n) in self._detectable:
            return self._detectable[kind, n]
        if kind == "one":
            out = 1 - self.beta ** (1 / n)
        elif not self._holds(kind, n, 1.0):
            out = 1.0
        else:
            lo, hi = 0.0, 1.0
            while hi - lo > 1e-4 * hi:
                mid = (lo + hi) / 2
                if self._holds(kind, n, mid):
                    hi = mid
                else:
                    lo = mid
            out = hi
        self._detectable[kind, n] = out
        return out


_PLANNERS: dict = {}


def planner(law: Mapping, alpha: float, beta: float) -> Planner:
    """The `Planner` of an exact law (cached by the law's sorted probabilities, α and β)."""
    probs = tuple(sorted(float(v) for v in law.values() if v > 0))
    key = (probs, float(alpha), float(beta))
    if key not in _PLANNERS:
        if len(_PLANNERS) > 256:
            _PLANNERS.clear()
        _PLANNERS[key] = Planner(probs, alpha, beta)
    return _PLANNERS[key]
