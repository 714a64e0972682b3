"""Claim 12: the gate's promise holds at the N it uses (docs/STATISTICS.md, "What the statistics promise").

12.1 For every exact law p and every N the planner returns: the test `rheo.lossless.stats.check_law`
     rejects a sampler of law p with probability ≤ α, and a sampler of any law P with
     TV(P, p) ≥ δ with probability ≥ 1 − β. PROVED (general argument; the lemmas below are checked
     here with sympy, the standard results it cites are named).

Argument (lemmas marked * are checked here):
- Poissonisation: N' ~ Poisson(λ) chosen independently of the samples; a uniformly chosen N'-subset
  of iid samples is iid, and the counts of N' iid samples are independent Poisson(λP_i) (standard).
- S = Σ w_i f_i(X_i), f_i(x) = (x − λp_i)² − x. For X ~ Poisson(μ): E f = (μ − a)² and
  Var f = 2μ² + 4μ(μ − a)² (*), so E S = λ²Σ w_i d_i² = λ²D.
- Level: S = S_b unless some X_i > b_i; Markov on e^{θS_b} for every θ > 0, and the union bound (*: the
  Poisson moment generating function E e^{tX} = exp(μ(e^t − 1)) the truncated sums are exact
  pieces of). Or, on supports of ≤ 512 outcomes, the exact law of the terms rounded up to a grid:
  g ≤ h⌈g/h⌉ (*), so S_b − Σ min f_i ≤ h Σ k_i and P(S_b ≥ s) ≤ P(Σ k_i ≥ ⌈(s − Σ min f_i)/h⌉), the
  law of Σ k_i computed by convolution with every mass that is cut moved up into an overflow bin (a
  larger variable: the tail only grows); the smaller of the two bounds is a bound.
- Power: S − E S = L + Q, L = Σ w_i(2λd_i − 1)Z_i, Q = Σ w_i(Z_i² − λP_i), Z_i = X_i − λP_i (*);
  E Z⁴ = μ + 3μ² (*); log E e^{−sZ} = μ(e^{−s} − 1 + s) (*); e^x − 1 − x ≤ φ(y)x²/2 for x ≤ y with
  Bennett's φ(y) = 2(e^y − 1 − y)/y² increasing (*); for Y ≥ 0, E e^{−θY} ≤ exp(−θE Y + θ²E Y²/2)
  (Maurer's lemma: e^{−x} ≤ 1 − x + x²/2 for x ≥ 0 (*), and 1 + u ≤ e^u); Cauchy–Schwarz
  (Σ|d_i|)² ≤ Σ w_i d_i² · Σ 1/w_i (* as Lagrange's identity, three terms); the splits
  (a + b)² ≤ (1 + ε)a² + (1 + 1/ε)b² (*).
- Mass η off the support: an impossible sample rejects; (1 − η)^N ≤ β/10 for η ≥ η₀ = ln(10/β)/N,
  and below it TV(P|support, p) ≥ TV(P, p) − η (triangle inequality).
- β is spent as: 1% on N' > N, 10% on the mass off the support, 89% on the support's alternatives.

- The set test (small supports): some set C of the support has p(C) − P(C) ≥ TV (*); the binomial CDF
  falls as its probability rises (* as dF/dq for n ≤ 8); the union bound over the 2^K − 1 sets.
- The χ² certificate's reach of one outcome (* the quadratic and its root) and the budget of spikes
  (* the two identities).

12.3 The weighted χ²'s power by duality (`rheo.lossless.dual`): for every θ > 0 and μ, ν ≥ 0, every law
     P on the support at TV ≥ δ is missed with probability ≤ exp(θc − 2μδ + Σ_i H_i), H_i an upper
     bound on sup_m G_i(m) + ((μ − ν)/λ)(m − a_i)₊ + ((μ + ν)/λ)(a_i − m)₊, G_i(m) = log E_{Poisson(m)} e^{−θ f_i(X)}.
     PROVED (Markov on e^{−θS}; weak duality, the added μ(Σ|d| − 2δ) − νΣd being ≥ 0 because Σ|d| ≥ 2δ
     and Σ d = −(mass off the support) ≤ 0, and per cell μ|x| − νx = (μ − ν)x₊ + (μ + ν)x₋ (*); and the
     lemmas (*) below, which make each number the code computes an upper bound):
     - L(u) = log Σ_x c_x e^{xu} (c_x ≥ 0) is convex: L'' = Σ_{x<y} c_x c_y (x − y)² e^{(x+y)u} / (Σ c_x e^{xu})² (*
       on three terms), and G(e^u) = L(u) − e^u with c_x = e^{−θ f(x)}/x! (*), so on [u_l, u_r] G + κ(m − a)
       ≤ chord(u) + (κ − 1)e^u − κa, concave for κ < 1 and maximal where e^u = slope/(1 − κ) (*);
     - on [0, m_r]: E_m g ≤ e^{m_r − m} E_{m_r} g for g ≥ 0 (m^x ≤ m_r^x term by term (*));
     - f(x) = w((x − a − 1/2)² − a − 1/4) ≥ −w(a + 1/4), rising past a + 1/2 (*), which bounds the cut sums'
       tails and the far intervals' partition: f(x) − f(y) = w(x − y)(x + y − 2a − 1) (*), ≥ 0 for
       x ≤ y ≤ a (the window's lower cut below a: X ≤ x₋ − 1 gives f(X) ≥ f(x₋ − 1)) and for
       x ≥ y ≥ a + 1/2 (a lower cut far above a, split at x_m ≥ a: X in (x_m, x₋) gives f(X) ≥ f(x_m + 1));
     - Chernoff's Poisson tails: P(X ≥ k) ≤ e^{−m}(em/k)^k for k > m, P(X ≤ k) ≤ the same for k < m (*: the
       exponent at t = log(k/m)).

12.2 The sequential gate (`rheo.lossless.sequential`): looks j = 1..J on the samples drawn so far,
     look j at level α_j, stopping at the first rejection. Its level is ≤ Σ_j α_j = α (each look's
     test is valid at its n; the union bound) (* the spending: (J − 1)·ρα/(J − 1) + (1 − ρ)α = α for
     every J ≥ 2 and share ρ), and its power is ≥ the last look's (the gate rejects whenever the last
     look would: {last look rejects} ⊆ {some look rejects}), which N is planned for at α_J = (1 − ρ)α.
     PROVED.

The set test's level and power are checked by enumerating every outcome of 40 samples of a
3-outcome law in tests/lossless/test_promise.py (it lives in rheo, which the proofs may not import).
"""

from __future__ import annotations

import sympy as sp

from ._claim import PROVED, Claim, Outcome, require


def _poisson_moments(mu: sp.Symbol, upto: int) -> list:
    """Raw moments E X^k of X ~ Poisson(μ), k = 0..upto, from the moment generating function."""
    t = sp.symbols("t")
    mgf = sp.exp(mu * (sp.exp(t) - 1))
    return [sp.simplify(sp.diff(mgf, t, k).subs(t, 0)) for k in range(upto + 1)]


def _lemmas() -> None:
    mu, a, x, y, eps, s, theta = sp.symbols("mu a x y epsilon s theta", positive=True)
    m = _poisson_moments(mu, 4)

    def e(poly):  # E poly(X) for a polynomial in x
        poly = sp.Poly(sp.expand(poly), x)
        return sp.expand(sum(c * m[k[0]] for k, c in zip(poly.monoms(), poly.coeffs())))

    f = (x - a) ** 2 - x
    mean = e(f)
    require(sp.simplify(mean - (mu - a) ** 2) == 0, f"E f = {mean}")
    var = sp.simplify(e(f**2) - mean**2)
    require(sp.simplify(var - (2 * mu**2 + 4 * mu * (mu - a) ** 2)) == 0, f"Var f = {var}")
    # the decomposition S − E S = L + Q, cell by cell: X = μ + Z
    z = sp.symbols("z")
    lhs = f.subs(x, mu + z) - (mu - a) ** 2
    rhs = (2 * (mu - a) - 1) * z + z**2 - mu
    require(sp.expand(lhs - rhs) == 0, "f(μ + Z) − E f != (2(μ − a) − 1)Z + Z² − μ")
    central4 = e((x - mu) ** 4)
    require(sp.simplify(central4 - (mu + 3 * mu**2)) == 0, f"E Z⁴ = {central4}")
    # log E e^{−sZ} for Z = X − μ: E e^{tX} = exp(μ(e^t − 1)) at t = −s, times e^{sμ}
    cgf = sp.log(sp.exp(mu * (sp.exp(-s) - 1)) * sp.exp(s * mu))
    require(sp.simplify(sp.expand_log(cgf, force=True) - mu * (sp.exp(-s) - 1 + s)) == 0, "centred Poisson cgf")
    # Bennett: φ(y) = 2(e^y − 1 − y)/y² is increasing: φ' = 2g(y)/y³ with g = (y − 2)e^y + y + 2,
    # g(0) = 0, g'(0) = 0 and g'' = y e^y has the sign of y, so g' ≥ 0 and g has the sign of y.
    yy = sp.symbols("yy", real=True)
    g = (yy - 2) * sp.exp(yy) + yy + 2
    phi = 2 * (sp.exp(yy) - 1 - yy) / yy**2
    require(sp.simplify(sp.diff(phi, yy) - 2 * g / yy**3) == 0, "φ' != 2g/y³")
    require(g.subs(yy, 0) == 0 and sp.diff(g, yy).subs(yy, 0) == 0, "g(0), g'(0)")
    require(sp.simplify(sp.diff(g, yy, 2) - yy * sp.exp(yy)) == 0, "g'' != y e^y")
    # Maurer: h(x) = 1 − x + x²/2 − e^{−x} ≥ 0 for x ≥ 0: h(0) = h'(0) = 0, h'' = 1 − e^{−x} ≥ 0
    xr = sp.symbols("xr", nonnegative=True)
    h = 1 - xr + xr**2 / 2 - sp.exp(-xr)
    require(h.subs(xr, 0) == 0 and sp.diff(h, xr).subs(xr, 0) == 0, "h(0), h'(0)")
    require(sp.simplify(sp.diff(h, xr, 2) - (1 - sp.exp(-xr))) == 0, "h''")
    # Cauchy–Schwarz as Lagrange's identity (three cells): Σw d²·Σ1/w − (Σ d)² is a sum of squares
    w = sp.symbols("w1:4", positive=True)
    d = sp.symbols("d1:4", real=True)
    gap = sum(wi * di**2 for wi, di in zip(w, d)) * sum(1 / wi for wi in w) - sum(d) ** 2
    squares = sum(
        (d[i] * sp.sqrt(w[i] / w[j]) - d[j] * sp.sqrt(w[j] / w[i])) ** 2 for i in range(3) for j in range(i + 1, 3)
    )
    require(sp.simplify(sp.expand(gap - squares)) == 0, "Lagrange's identity")
    # the splits: (1 + ε)a² + (1 + 1/ε)b² − (a + b)² = (√ε a − b/√ε)² ≥ 0
    aa, bb = sp.symbols("aa bb", real=True)
    split = (1 + eps) * aa**2 + (1 + 1 / eps) * bb**2 - (aa + bb) ** 2
    require(sp.simplify(split - (sp.sqrt(eps) * aa - bb / sp.sqrt(eps)) ** 2) == 0, "the (1 + ε) split")
    # the set test: some set of the support is lowered by the TV. With B the raised outcomes,
    # C the rest of the support and η the mass off it: P(B) + P(C) + η = 1 = p(B) + p(C), so
    # p(C) − P(C) = P(B) + η − p(B)
    pb, pc, qb, qc, eta = sp.symbols("pB pC qB qC eta", nonnegative=True)
    lowered = (pc - qc).subs(qc, 1 - qb - eta).subs(pc, 1 - pb)
    require(sp.expand(lowered - (qb + eta - pb)) == 0, "p(C) − P(C) != P(B) + η − p(B)")
    # the binomial CDF falls as its probability rises: dF(c; n, q)/dq = −n·C(n−1, c) q^c (1−q)^(n−1−c)
    q = sp.symbols("q", positive=True)
    for n in range(1, 9):
        for c in range(n):
            cdf = sum(sp.binomial(n, k) * q**k * (1 - q) ** (n - k) for k in range(c + 1))
            slope = -n * sp.binomial(n - 1, c) * q**c * (1 - q) ** (n - 1 - c)
            require(sp.expand(sp.diff(cdf, q) - slope) == 0, f"dF/dq at n={n}, c={c}")
    # how far one outcome can move: w u² + (2δ − u)²/s ≤ D is the quadratic
    # (w + 1/s)u² − (4δ/s)u − (D − 4δ²/s) ≤ 0, and r = (2δ/s + √((2δ/s)² + (w + 1/s)(D − 4δ²/s)))/(w + 1/s)
    # is its larger root
    uu, ww, ss, dd, big_d = sp.symbols("u w s delta D", positive=True)
    quad = (ww + 1 / ss) * uu**2 - (4 * dd / ss) * uu - (big_d - 4 * dd**2 / ss)
    require(sp.expand(ww * uu**2 + (2 * dd - uu) ** 2 / ss - big_d - quad) == 0, "the reach quadratic")
    root = (2 * dd / ss + sp.sqrt((2 * dd / ss) ** 2 + (ww + 1 / ss) * (big_d - 4 * dd**2 / ss))) / (ww + 1 / ss)
    require(sp.simplify(sp.expand(quad.subs(uu, root))) == 0, "r is a root")
    # how much of D spikes carry: (2δ − x)² ≥ 4δ² − 4δx (the difference is x²), and with
    # Σ_B|d| < Σ_B a/κ: Σ_B a + D₀ − (4δ/s)Σ_B a/κ ≤ D gives Σ_B a (1 − 4δ/(sκ)) ≤ D − D₀
    xx, kap, sum_a = sp.symbols("x kappa A", positive=True)
    require(sp.expand((2 * dd - xx) ** 2 - (4 * dd**2 - 4 * dd * xx) - xx**2) == 0, "(2δ − x)² − 4δ² + 4δx = x²")
    d0 = 4 * dd**2 / ss
    spike = sum_a + d0 - (4 * dd / ss) * sum_a / kap - big_d
    require(sp.expand(spike - (sum_a * (1 - 4 * dd / (ss * kap)) - (big_d - d0))) == 0, "the spike budget")
    del y, theta


def check_12_1() -> Outcome:
    _lemmas()
    return Outcome(PROVED, "level ≤ α and power ≥ 1 − β at TV ≥ δ of the full law, at the planned N")


def check_12_3() -> Outcome:
    u, kap, sl, c0, c1, c2, m, mr, th, w, a, x, k = sp.symbols(
        "u kappa slope c0 c1 c2 m m_r theta w a x k", positive=True
    )
    # L(u) = log Σ c_x e^{xu} is convex: its second derivative is Lagrange's sum of squares over the total²
    terms = [(c0, 0), (c1, 1), (c2, 2)]
    total = sum(c * sp.exp(j * u) for c, j in terms)
    second = sp.diff(sp.log(total), u, 2)
    squares = sum(
        ci * cj * (i - j) ** 2 * sp.exp((i + j) * u) for n, (ci, i) in enumerate(terms) for cj, j in terms[n + 1 :]
    )
    require(sp.simplify(second - squares / total**2) == 0, "L'' is not the tilted variance")
    # G(e^u) = L(u) − e^u: log(e^{−m} Σ m^x/x! g_x) with m = e^u (three terms, g_x = e^{−θ f(x)})
    g = [sp.exp(-th * w * ((j - a) ** 2 - j)) for j in range(3)]
    mm = sp.exp(u)
    lhs = sp.log(sp.exp(-mm) * sum(mm**j / sp.factorial(j) * g[j] for j in range(3)))
    rhs = sp.log(sum(g[j] / sp.factorial(j) * sp.exp(j * u) for j in range(3))) - mm
    require(sp.simplify(sp.expand_log(lhs - rhs, force=True)) == 0, "G(e^u) != L(u) − e^u")
    # chord(u) + (κ − 1)e^u − κa: stationary where e^u = slope/(1 − κ), and concave for κ < 1
    phi = sl * u + (kap - 1) * sp.exp(u)
    require(sp.simplify(sp.diff(phi, u).subs(u, sp.log(sl / (1 - kap)))) == 0, "the chord's maximiser")
    require(sp.simplify(sp.diff(phi, u, 2) - (kap - 1) * sp.exp(u)) == 0, "the chord bound's curvature")
    # [0, m_r]: e^{m_r − m} e^{−m_r} m_r^x − e^{−m} m^x = e^{−m}(m_r^x − m^x) ≥ 0 for m ≤ m_r
    require(
        sp.simplify(sp.exp(mr - m) * sp.exp(-mr) * mr**3 - sp.exp(-m) * m**3 - sp.exp(-m) * (mr**3 - m**3)) == 0,
        "e^{m_r−m}",
    )
    # f(x) = w((x − a − 1/2)² − a − 1/4): its minimum −w(a + 1/4) at a + 1/2, rising past it
    f = w * ((x - a) ** 2 - x)
    require(sp.expand(f - w * ((x - a - sp.Rational(1, 2)) ** 2 - a - sp.Rational(1, 4))) == 0, "f's vertex form")
    require(sp.expand(sp.diff(f, x) - w * (2 * (x - a) - 1)) == 0, "f' = w(2(x − a) − 1)")
    y = sp.symbols("y", positive=True)
    require(sp.expand(f - f.subs(x, y) - w * (x - y) * (x + y - 2 * a - 1)) == 0, "f(x) − f(y) factorised")
    # the mass multiplier per cell: μ|x| − νx = (μ − ν)x₊ + (μ + ν)x₋, on each side of 0
    mu_, nu_, up_, dn_ = sp.symbols("mu nu up down", positive=True)
    require(sp.expand(mu_ * up_ - nu_ * up_ - (mu_ - nu_) * up_) == 0, "x > 0: μx − νx")
    require(sp.expand(mu_ * dn_ - nu_ * (-dn_) - (mu_ + nu_) * dn_) == 0, "x < 0: μ|x| − νx")
    # the convolution's grid: g ≤ h⌈g/h⌉ for g ≥ 0, h > 0 (⌈y⌉ ≥ y)
    require(all(sp.ceiling(sp.Rational(v, 7)) >= sp.Rational(v, 7) for v in range(0, 61)), "⌈y⌉ ≥ y on a grid")
    # Chernoff: E e^{tX} e^{−tk} at t = log(k/m) is e^{−m}(em/k)^k
    t = sp.log(k / m)
    bound = sp.exp(m * (sp.exp(t) - 1) - t * k)
    require(
        sp.simplify(sp.expand_log(sp.log(bound) - (-m + k * (1 + sp.log(m) - sp.log(k))), force=True)) == 0, "Chernoff"
    )
    return Outcome(PROVED, "the dual bound's supremum per cell and its tails are upper bounds")


def check_12_2() -> Outcome:
    alpha, rho = sp.symbols("alpha rho", positive=True)
    looks = sp.symbols("J", integer=True, positive=True)
    spent = (looks - 1) * (rho * alpha / (looks - 1)) + (1 - rho) * alpha
    require(sp.simplify(spent - alpha) == 0, f"the looks spend {spent}, not α")
    for j in range(2, 9):  # and as the code builds them: J − 1 equal interim shares and the rest last
        parts = [rho * alpha / (j - 1)] * (j - 1) + [(1 - rho) * alpha]
        require(sp.simplify(sum(parts) - alpha) == 0, f"J = {j}: Σ α_j ≠ α")
    return Outcome(PROVED, "Σ_j α_j = α over the looks (union bound: level ≤ α); power ≥ the last look's")


CLAIMS = [
    Claim(
        "12.1",
        "the gate: level ≤ α and power ≥ 1 − β for every law at TV ≥ δ, at the N it plans",
        "general argument (docs/STATISTICS.md), sympy-checked lemmas",
        PROVED,
        check_12_1,
    ),
    Claim(
        "12.3",
        "the weighted χ²'s power by duality: one Chernoff bound over every law at TV ≥ δ",
        "Markov, weak duality, sympy-checked convexity, chord and tail lemmas",
        PROVED,
        check_12_3,
    ),
    Claim(
        "12.2",
        "the sequential gate: level ≤ α over every look, power ≥ the last look's at the N it plans",
        "union bound over the looks, sympy-checked α spending",
        PROVED,
        check_12_2,
    ),
]
