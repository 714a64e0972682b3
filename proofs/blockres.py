"""Claim 11: how far bug class 12 (`block-token-residual`: block verification drawing its final
token from the token-level residual max(p − q, 0) instead of max(w_τ·p − q, 0)) can move the law.

11.1 With γ ≤ 2 draft tokens (and at most 3 tokens checked, the hunt's cases), every check's
     exact TV of the mutant is ≤ (5√5 − 11)/2 = x⁵ ≈ 0.0902, x = (√5 − 1)/2, on every case (any
     rows, any logits processors): so no such case convicts it with fewer than
     `rheo.lossless.stats.min_num_samples((5√5 − 11)/2, α, β, 2)` samples (about 1,800 at the gate's α and
     β; tests/test_bugclasses.py computes it). PROVED.

Argument (the lemmas marked * are checked here with sympy, the rest is stated):
- The mutant and the baseline differ only in the token drawn after a partial block, τ < γ, with
  w_τ < 1: with γ ≤ 2 only at τ = 1 (w_0 = 1). Given x_1 (w = w_1, p and q the rows after it,
  s = Σ max(w·p − q, 0), S = Σ max(p − q, 0)): P(τ = 1 | x_1) = h_1·P(test 2 fails) with
  h_1 = s/(s + 1 − w) and P(test 2 fails) = 1 − Σ_{x_2} q(x_2)·min(1, w·p(x_2)/q(x_2)) = 1 − w + s,
  so P(τ = 1 | x_1) = s (*); the baseline then draws y from max(w·p − q, 0)/s, the mutant from
  max(p − q, 0)/S. The round check's outcomes (prefill token, round tokens) tell τ by their length,
  so its TV is E_{x_1}[D], D = ½·Σ_y |max(w·p − q, 0) − s·max(p − q, 0)/S| ≤ sup D. The joint checks
  (≤ 3 tokens) see the round through one kernel that is the same for both (the token after a
  one-token round is the next round's first, never a partial block's residual), so their TV is
  ≤ the round's.
- With A = {w·p > q} ⊆ B = {p > q}, σ = s/S and d_y = w·p − q − σ·(p − q): the two terms have
  equal mass s, so D = Σ_{y∈A} max(d_y, 0) (outside A only the mutant has mass), and
  d_y ≤ (w·p − q)·(1 − σ/w) (*: the difference is q·σ·(1 − w)/w ≥ 0), so D ≤ s·(1 − s/(w·S)).
- s ≤ w·S (w·p − q ≤ w·(p − q)), and s ≥ Σ_B (w·p − q) = w·S − (1 − w)·Σ_B q ≥ w·S − (1 − w)(1 − S)
  (Σ_B q = Σ_B p − S ≤ 1 − S). With u = w·S, v = (1 − w)(1 − S): D ≤ max{s − s²/u : u − v ≤ s ≤ u},
  which is u/4 if u ≤ 2v (vertex s = u/2) and v − v²/u otherwise (*: the vertex is outside).
- x = √(w·S): by AM-GM v ≤ (1 − x)². If u ≤ 2v then x² ≤ 2(1 − x)², x ≤ 2 − √2 and
  D ≤ (2 − √2)²/4 ≈ 0.0858 (*). Otherwise v − v²/u grows with v on v ≤ u/2, so D ≤ φ(x) =
  (1 − x)² − (1 − x)⁴/x² where (1 − x)² ≤ x²/2 (else D ≤ u/4 as before), i.e. x ≥ 2 − √2; the
  maximum of φ on [2 − √2, 1] is x⁵ at the golden x (*: the roots of φ' and the ends).
- Tight: p = (x², x, 0), q = (0, x², x), w = x give D = x⁵; the hunt's block draw plants it with
  rational weights (`skeleton_case`, planted by the hunt's block draw `rheo.mutants.hunt_block` too):
  p = (5/13, 8/13, 0), q = (0, 5/13, 8/13), w = 5/8; the decoder's exact law
  (rheo_ref.bugclasses.exact) gives the mutant round and joint3 TVs 75/832 ≈ 0.0901 (*, here).

Beyond the hunt's space (not claimed): with γ = 3 the TV is E[D at τ = 1] + E[D at τ = 2], each
≤ x⁵, so ≤ 2x⁵ ≈ 0.180; a numerical search over the relaxed problem (each later row at its own
best D) finds ≈ 0.114 at most (still ~1,150 samples at the gate's α), and ≈ 0.148 with γ = 4.
"""

from __future__ import annotations

from fractions import Fraction

import sympy as sp

from ._claim import PROVED, Claim, Outcome, require

GOLDEN = (sp.sqrt(5) - 1) / 2
BOUND = (5 * sp.sqrt(5) - 11) / 2  # = GOLDEN**5


def _lemmas() -> None:
    w, s, P, Q, S, sig, u, v, x = sp.symbols("w s P Q S sigma u v x", positive=True)
    # P(τ = 1 | x_1) = h_1·(1 − w + s) = s
    require(sp.simplify(s / (s + 1 - w) * (1 - w + s) - s) == 0, "P(τ=1 | x1) != s")
    # d_y ≤ (w·p − q)(1 − σ/w): the difference is q·σ·(1 − w)/w
    d = P * (w - sig) - Q * (1 - sig)
    require(sp.simplify((w * P - Q) * (1 - sig / w) - d - Q * sig * (1 - w) / w) == 0, "termwise bound")
    # max of s − s²/u on [u − v, u]: vertex u/2 (value u/4); at s = u − v the value is v − v²/u
    h = s - s**2 / u
    require(sp.solve(sp.diff(h, s), s) == [u / 2] and sp.simplify(h.subs(s, u / 2) - u / 4) == 0, "vertex")
    require(sp.simplify(h.subs(s, u - v) - (v - v**2 / u)) == 0, "value at s = u - v")
    # case u ≤ 2v: x ≤ 2 − √2 (x² = 2(1 − x)² at 2 − √2) and u/4 ≤ (2 − √2)²/4 < x⁵
    x1 = 2 - sp.sqrt(2)
    require(sp.simplify(x1**2 - 2 * (1 - x1) ** 2) == 0, "case 1 end point")
    require(sp.N(x1**2 / 4 - BOUND, 50) < 0, "case 1 below the bound")
    # case u > 2v: φ(x) = (1 − x)² − (1 − x)⁴/x² on [2 − √2, 1]; its maximum is x⁵ at the golden x
    phi = (1 - x) ** 2 - (1 - x) ** 4 / x**2
    num = sp.factor(sp.numer(sp.together(sp.diff(phi, x))))
    crit = [r for r in sp.Poly(num, x).real_roots() if sp.N(x1) <= sp.N(r) <= 1]
    values = [phi.subs(x, c) for c in crit] + [phi.subs(x, x1), phi.subs(x, 1)]
    best = max(values, key=lambda e: sp.N(e, 50))
    require(sp.simplify(best - BOUND) == 0, f"max of φ is {best}, not (5√5 − 11)/2")
    require(sp.simplify(GOLDEN**5 - BOUND) == 0, "x⁵ != (5√5 − 11)/2")
    # tight: p = (x², x, 0), q = (0, x², x), w = x: block residual (x³, 0, 0), token residual (x², x − x², 0)
    px, qx = (GOLDEN**2, GOLDEN, 0), (0, GOLDEN**2, GOLDEN)
    blk = [sp.Max(GOLDEN * a - b, 0) for a, b in zip(px, qx)]
    tok = [sp.Max(a - b, 0) for a, b in zip(px, qx)]
    sb, st = sum(blk), sum(tok)
    D = sum(sp.Abs(b - sb * t / st) for b, t in zip(blk, tok)) / 2
    require(sp.simplify(D - BOUND) == 0, f"D at the golden rows is {sp.simplify(D)}")


def skeleton_case():
    """The tight skeleton with rational weights at T = 1 (the hunt's block draw plants it too):
    prompt 0, prefill 1; after 1 the draft is δ_2 and the target (2: 5/8, 0: 3/8), so w_1 = 5/8;
    after 2 the target is (3: 5/13, 4: 8/13) and the draft (4: 5/13, 0: 8/13); other rows uniform."""
    from rheo_ref.bugclasses.cases import BugCase
    from rheo_ref.bugclasses.decoder import Request
    from rheo_ref.models import TableModel

    ones = [1] * 6
    target = {(): ones, (0,): [0, 1, 0, 0, 0, 0], (1,): [3, 0, 5, 0, 0, 0], (2,): [0, 0, 0, 5, 8, 0]}
    draft = {(): ones, (0,): ones, (1,): [0, 0, 1, 0, 0, 0], (2,): [8, 0, 0, 0, 5, 0]}
    for t in (3, 4, 5):
        target[(t,)] = draft[(t,)] = ones
    d, p = (TableModel.from_weights(m, context_length=1, name=n) for m, n in ((draft, "draft"), (target, "target")))
    return BugCase(d, p, (0,), 3, Request(gamma=2, verify="block"))


def check_11_1() -> Outcome:
    from rheo_ref.bugclasses.cases import mutant_tvs

    _lemmas()
    tvs = mutant_tvs(skeleton_case(), "block-token-residual")
    require(tvs["round"] == Fraction(75, 832) == max(tvs.values()), f"skeleton TVs {tvs}")
    require(max(tvs.values()) <= sp.N(BOUND, 30), "the skeleton above the bound")
    return Outcome(
        PROVED,
        f"TV <= (5√5-11)/2 = {float(BOUND):.5f} on every case with γ <= 2; the rational skeleton reaches 75/832 = "
        f"{float(Fraction(75, 832)):.5f}",
        numbers={"bound": float(BOUND), "skeleton_tv": "75/832"},
    )


CLAIMS = [
    Claim(
        "11.1",
        "block verification, γ <= 2: block-token-residual's exact TV <= (5√5-11)/2 on every case and check",
        "general argument, sympy-checked lemmas; exact skeleton case (rheo_ref.bugclasses)",
        PROVED,
        check_11_1,
    ),
]
