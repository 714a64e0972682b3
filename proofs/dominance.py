"""Claim 4 -- when does the OT order (sampled child first) dominate RRSw?

The paper says verifying the sampled token first "dominates RRSw". Exactly when it holds:

4.1 One level, no fill kept (K = m+1, or the budget keeps at most the top-m and the sampled
    child): acceptance_OT >= acceptance_RRSw for every p, q_rank, q_samp (so tau too at D = 1,
    where tau = 1 + acceptance). PROVED. With M = 1 - p(top-m) and q̃ the tail law,
        P(reject all)_OT   = sum_{t in tail} (p(t) - q̃(t))+,
        P(reject all)_RRSw = sum_{t in tail} (p(t) - M q̃(t))+,
    (unnormalised residuals of claim 2: OT leaves (p - q̃)+ and the top-m then remove p on D;
    RRSw first removes D, leaving p on the tail with mass M, then (p - M q̃)+), and
    (a - M b)+ >= (a - b)+ for 0 <= M <= 1, b >= 0 (z3). The gap is
    sum_tail [(p - M q̃)+ - (p - q̃)+] >= 0, zero for instance when m = 0 (the two orders are
    then the same) or p(D) = 0 (M = 1).

4.2 One level WITH k >= 1 fills kept: REFUTED. Exact characterisation (checked against rheo_ref):
    with Res the unnormalised residual after the sampled stage ((p - q̃)+ for OT, (p - M q̃)+
    for RRSw), w the law of y given that y was rejected (w ∝ (q̃ - p)+ for OT, ∝ (M q̃ - p)+ for
    RRSw) and x^(1), x^(2), ... the tail in ranked order,
        P(reject all) = Res(tail minus its first k) - w(first k+1) * Res(x^(k+1)),
    because a rejected y carries no residual, so the fills (first k of tail minus y) cover the
    first k+1 tail tokens when y is among them and only the first k otherwise. OT has the
    smaller Res pointwise, but its rejections can fall on a y outside the first k+1 while RRSw
    rejects only a y inside them. Smallest case (common denominator 4, V = 4 is the least size:
    it needs m >= 1, k >= 1 and a tail of at least k+2 tokens): q = (1/4, 1/4, 1/4, 1/4) (ties by
    lower id), p = (1/4, 0, 1/2, 1/4), K = 3, m = 1, D = 1: acceptance_OT = 29/30 < 1 =
    acceptance_RRSw. Paragraph: the top-1 is token 0, q̃ is uniform on {1, 2, 3}. Under RRSw
    token 0 is tried first, leaving r = (0, 2/3, 1/3) on the tail; y is rejected only when it is
    1 (r(3) = q̃(3) exactly), and then the fill is token 2, exactly where all the residual
    (r - q̃)+ sits: nothing is ever rejected. Under OT, y = 3 is also rejected sometimes
    (p(3) = 1/4 < q̃(3) = 1/3); then the fill is token 1, which carries no residual, the
    residual mass on token 2 is missed and the round ends in a bonus: P = 1/30. The smallest
    tie-free case (denominator 10): q = (2/5, 3/10, 1/5, 1/10), p = (2/5, 0, 1/2, 1/10), gap 1/51.

4.3 Whole tree, tau, no fills and no pruning (K = m+1 at every expansion, W >= the width of
    every depth, R >= all nodes: every node's kept subtree is a function of its own path):
    tau_OT >= tau_RRSw. PROVED by induction on depth: tau(v) = 1 + sum_c P(accept c) tau(c);
    a top-m child x is accepted w.p. p(x) in both orders, the sampled child with token t w.p.
    min(p(t), q̃(t)) (OT) >= min(p(t), M q̃(t)) (RRSw) (z3); tau(c) > 0, and tau_OT(c) >=
    tau_RRSw(c) by induction, where c's subtree is the same tree in both orders because nothing
    is pruned. Checked with rheo_ref on generated cases too.

4.4 Whole tree, tau, no fills but WITH pruning (the budget R or the frontier W binds):
    REFUTED. Found by hypothesis (shrunk): V = 4, K = 2, m = 1, W = 2, D = 2, R = 4, start
    context (0), q(.|0) = (0, 1/4, 1/4, 1/2), q(.|1) = (0, 0, 0, 1), q(.|2) = q(.|3) =
    (0, 0, 1/2, 1/2); p(.|0) = (1/3, 0, 1/3, 1/3), p(.|t) = (0, 0, 0, 1) for t = 1, 2, 3:
    tau_OT = 7/4 < tau_RRSw = 11/6. Paragraph: at the root the top-1 is token 3 and y is 1 or 2
    (q̃ = 1/2 each). When y = 1 its child (score 1/2) takes one of the two depth-2 places and
    crowds out the sampled child of token 3, the one that would be accepted at depth 2; when
    y = 2 both places go to token 3's children. OT tries y first and always rejects y = 1
    (p(1) = 0), so it reaches token 3 mostly in the trees where 3's subtree was cut; RRSw tries
    token 3 first, with probability p(3) = 1/3 whatever y is. Both are lossless, acceptance at
    the root is higher for OT (as 4.1 says), but which subtree the accepted mass lands in is
    correlated with y under OT only, and the budget makes that subtree depend on y.

4.5 Whole tree, root acceptance, no fills (K = m+1), any W, R, D: acceptance_OT >=
    acceptance_RRSw. PROVED as a corollary of 4.1: the kept root children form a prefix of the
    slot order whose length does not depend on y (claims 1 and 3), and 4.1 holds for every
    prefix. Checked with rheo_ref on generated deep cases.

4.6 One level with k fills kept, under the hypothesis w_OT(first k+1) >= w_RRSw(first k+1) (a
    rejected y lands in the head that the fills cover at least as often under OT):
    acceptance_OT >= acceptance_RRSw. PROVED from the closed form of 4.2: with A <= B the OT and
    RRSw residuals, a = A(x^(k+1)) <= b = B(x^(k+1)) and e = sum over the rest of (B - A) >= 0,
    P_RRSw - P_OT = e + (b - a) - w_RRSw b + w_OT a >= a (w_OT - w_RRSw) >= 0 (z3 for all reals).
    The 4.2 case has w_OT = 4/5 < w_RRSw = 1.
"""

from __future__ import annotations

import random
from fractions import Fraction

import z3

from rheo_ref.exact import Exact
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.rheo.slots import ranked
from rheo_ref.family import family_of
from rheo_ref.grid import GridCell, run_cells
from rheo_ref.models import Case, Proxy
from rheo_ref.variants import SPEC

from ._claim import PROVED, REFUTED, Claim, Outcome, require
from .gen import one_row_case, random_pair, random_row

ZERO, ONE = Fraction(0), Fraction(1)


# --- closed forms at one level --------------------------------------------------------------


def rejection_closed_form(p, q_rank, q_samp, m: int, k: int, order: str) -> Fraction:
    """P(every child rejected) at one level: top-m, the sampled child, k fills (formula of 4.2)."""
    rank = ranked(q_rank)
    D, tail = rank[:m], rank[m:]
    zs = sum((q_samp[t] for t in tail), ZERO)
    require(zs > 0, "no sampled slot: the orders coincide")
    qt = {t: q_samp[t] / zs for t in tail}
    M = ONE if order == "rheo" else ONE - sum((p[t] for t in D), ZERO)
    if M == 0:
        return ZERO
    res = {t: max(ZERO, p[t] - M * qt[t]) for t in tail}
    w = {t: max(ZERO, M * qt[t] - p[t]) for t in tail}
    W = sum(w.values(), ZERO)
    if W == 0:
        return ZERO
    k = min(k, len(tail) - 1)
    base = sum((res[t] for t in tail[k:]), ZERO)
    return base - sum((w[t] for t in tail[: k + 1]), ZERO) / W * res[tail[k]]


def depth1_case(p, q, m: int, k: int, order: str, q_samp=None) -> Case:
    K = m + 1 + k
    return one_row_case(q, p, Scheme(K, m, K, 1, K, Proxy.parse("rheo"), order), q_samp)


def exact_acceptance(case: Case) -> Fraction:
    return Exact(case, "classes").acceptance()


def both_of(cases: list[Case], what: str) -> list[tuple[Fraction, Fraction]]:
    """(OT value, RRSw value) of `tau` or `acceptance` for each case, exactly: one sweep of the
    cases x the two orders by the grid runner that `rheo sweep` wraps (rheo_ref.grid)."""
    cells = [GridCell(case.with_scheme(verify=v)) for case in cases for v in ("rheo", "rrsw")]
    vals = []
    for row in run_cells(cells):
        require(not row["error"], f"exact computation failed: {row['error']}")
        vals.append(Fraction(row[what]))
    return list(zip(vals[0::2], vals[1::2]))


def both(case: Case, what: str) -> tuple[Fraction, Fraction]:
    """(OT value, RRSw value) of `tau` or `acceptance`, exactly."""
    return both_of([case], what)[0]


def z3_dominance_lemmas() -> bool:
    """(a - M b)+ >= (a - b)+ and min(a, b) >= min(a, M b) for 0 <= M <= 1, b >= 0."""
    a, b, M = z3.Reals("a b M")
    pos = lambda x: z3.If(x >= 0, x, 0)
    mn = lambda x, y: z3.If(x <= y, x, y)
    s = z3.Solver()
    s.add(M >= 0, M <= 1, b >= 0)
    s.add(z3.Not(z3.And(pos(a - M * b) >= pos(a - b), mn(a, b) >= mn(a, M * b))))
    return s.check() == z3.unsat


def closed_forms_match_reference(n: int = 150, seed: int = 11) -> int:
    """Formula of 4.2 (k >= 0) == 1 - rheo_ref acceptance, both orders, generated depth-1 cases."""
    rng = random.Random(seed)
    done = 0
    while done < n:
        V = rng.randint(2, 6)
        q = random_row(rng, V, max_weight=rng.choice([4, 9]))
        qs = random_row(rng, V) if rng.random() < 0.3 else None
        p = random_row(rng, V, max_weight=rng.choice([4, 9]))
        m = rng.randint(0, V - 1)
        tail = ranked(q)[m:]
        if sum(((qs or q)[t] for t in tail), ZERO) == 0:
            continue
        k = rng.randint(0, V - m - 1)
        for order in ("rheo", "rrsw"):
            ref = ONE - exact_acceptance(depth1_case(p, q, m, k, order, qs))
            cf = rejection_closed_form(p, q, qs or q, m, k, order)
            require(ref == cf, f"closed form {cf} != rheo_ref {ref}: p={p} q={q} q_samp={qs} m={m} k={k} {order}")
        done += 1
    return done


# --- 4.1 --------------------------------------------------------------------------------------


def check_41() -> Outcome:
    require(z3_dominance_lemmas(), "z3 could not prove the pointwise lemmas")
    n = closed_forms_match_reference()
    rng = random.Random(12)
    drawn = []
    for _ in range(120):
        V = rng.randint(2, 6)
        q, p = random_row(rng, V), random_row(rng, V)
        m = rng.randint(0, V - 1)
        if sum((q[t] for t in ranked(q)[m:]), ZERO) != 0:
            drawn.append((p, q, m))
    gaps = []
    for (p, q, m), (a, b) in zip(drawn, both_of([depth1_case(p, q, m, 0, "rheo") for p, q, m in drawn], "acceptance")):
        require(a >= b, f"4.1 violated: p={p} q={q} m={m}: {a} < {b}")
        gaps.append(a - b)
    return Outcome(
        PROVED,
        f"z3 pointwise lemma + closed forms (== rheo_ref on {n} cases x 2 orders, k>=0); "
        f"{len(gaps)} random depth-1 no-fill cases: gap >= 0, max {max(gaps)}",
        numbers={"closed_form_cases": n, "max_gap": str(max(gaps))},
    )


# --- 4.2 --------------------------------------------------------------------------------------

CE_42 = {
    "q": ["1/4", "1/4", "1/4", "1/4"],
    "p": ["1/4", "0", "1/2", "1/4"],
    "K": 3,
    "m": 1,
    "D": 1,
    "acceptance_ot": "29/30",
    "acceptance_rrsw": "1",
}
CE_42_TIE_FREE = {
    "q": ["2/5", "3/10", "1/5", "1/10"],
    "p": ["2/5", "0", "1/2", "1/10"],
    "K": 3,
    "m": 1,
    "D": 1,
    "acceptance_ot": "50/51",
    "acceptance_rrsw": "1",
}


def _compositions(n: int, k: int):
    if k == 1:
        yield (n,)
        return
    for i in range(n + 1):
        for rest in _compositions(n - i, k - 1):
            yield (i,) + rest


def search_42(N: int, *, strict: bool) -> list[tuple[Fraction, tuple, tuple]]:
    """Every V = 4, m = 1, k = 1 case with denominators N where OT accepts less (closed form)."""
    out = []
    for qw in _compositions(N, 4):
        ok = all(a > b for a, b in zip(qw, qw[1:])) if strict else all(a >= b for a, b in zip(qw, qw[1:]))
        if not ok or sum(qw[1:]) == 0:
            continue
        q = tuple(Fraction(x, N) for x in qw)
        for pw in _compositions(N, 4):
            p = tuple(Fraction(x, N) for x in pw)
            gap = rejection_closed_form(p, q, q, 1, 1, "rheo") - rejection_closed_form(p, q, q, 1, 1, "rrsw")
            if gap > 0:
                out.append((gap, qw, pw))
    return out


def _recheck(ce: dict) -> tuple[Fraction, Fraction]:
    a, b = both(depth1_case(ce["p"], ce["q"], ce["m"], ce["K"] - ce["m"] - 1, "rheo"), "acceptance")
    require(
        (str(a), str(b)) == (ce["acceptance_ot"], ce["acceptance_rrsw"]),
        f"recorded counterexample moved: {ce} -> {a}, {b}",
    )
    return a, b


def check_42() -> Outcome:
    _recheck(CE_42)
    _recheck(CE_42_TIE_FREE)
    smaller = [N for N in range(2, 4) if search_42(N, strict=False)] + [
        N for N in range(2, 10) if search_42(N, strict=True)
    ]
    require(not smaller, f"a counterexample with a smaller denominator exists: N={smaller}")
    return Outcome(
        REFUTED,
        f"q={CE_42['q']} p={CE_42['p']} K=3 m=1 D=1: acceptance OT {CE_42['acceptance_ot']} < RRSw 1 "
        f"(smallest denominator 4; tie-free smallest: denominator 10, OT 50/51)",
        counterexample={"smallest": CE_42, "tie_free": CE_42_TIE_FREE},
    )


# --- 4.6 ---------------------------------------------------------------------------------------


def head_weights(p, q, m: int, k: int) -> tuple[Fraction, Fraction]:
    """(w_OT, w_RRSw) of the first k+1 tail tokens: the law of a rejected y, restricted to the head."""
    tail = ranked(q)[m:]
    zs = sum((q[t] for t in tail), ZERO)
    qt = {t: q[t] / zs for t in tail}
    out = []
    for M in (ONE, ONE - sum((p[t] for t in ranked(q)[:m]), ZERO)):
        w = {t: max(ZERO, M * qt[t] - p[t]) for t in tail}
        W = sum(w.values(), ZERO)
        out.append(sum((w[t] for t in tail[: k + 1]), ZERO) / W if W else ZERO)
    return out[0], out[1]


def z3_head_lemma() -> bool:
    a, b, e, w, w2 = z3.Reals("a b e w w2")
    s = z3.Solver()
    s.add(0 <= a, a <= b, e >= 0, 0 <= w2, w2 <= w, w <= 1)
    s.add(z3.Not(e + (b - a) - w2 * b + w * a >= 0))
    return s.check() == z3.unsat


def check_46() -> Outcome:
    require(z3_head_lemma(), "z3 could not prove the head lemma")
    rng = random.Random(13)
    held = total = broke_outside = 0
    while total < 300:
        V = rng.randint(4, 7)
        q, p = random_row(rng, V, max_weight=rng.choice([3, 6])), random_row(rng, V, max_weight=rng.choice([3, 6]))
        m, k = rng.randint(1, V - 3), rng.randint(1, 2)
        if sum((q[t] for t in ranked(q)[m:]), ZERO) == 0:
            continue
        total += 1
        w_ot, w_rrsw = head_weights(p, q, m, k)
        ot = ONE - rejection_closed_form(p, q, q, m, k, "rheo")
        rrsw = ONE - rejection_closed_form(p, q, q, m, k, "rrsw")
        if w_ot >= w_rrsw:
            held += 1
            require(ot >= rrsw, f"4.6 violated: p={p} q={q} m={m} k={k}")
        elif ot < rrsw:
            broke_outside += 1
    w = head_weights([Fraction(x) for x in CE_42["p"]], [Fraction(x) for x in CE_42["q"]], 1, 1)
    require(w == (Fraction(4, 5), ONE), f"4.2's case head weights {w}")
    return Outcome(
        PROVED,
        f"z3 lemma on the 4.2 closed form; {held}/{total} random cases meet the hypothesis "
        f"(all OT >= RRSw); outside it OT < RRSw in {broke_outside}",
        numbers={"held": held, "total": total, "broke_outside": broke_outside},
    )


# --- 4.3 / 4.4 / 4.5 ------------------------------------------------------------------------------


def full_width(K: int, D: int) -> tuple[int, int]:
    """(W, R) that prune nothing: every depth fully expanded, every node kept."""
    W = K ** max(D - 1, 0)
    return W, sum(K**d for d in range(1, D + 1))


def generated_tree_cases(n: int, seed: int, *, prune: bool, max_trees: int = 400) -> list[Case]:
    rng = random.Random(seed)
    out = []
    while len(out) < n:
        V = rng.randint(3, 4)
        q, p = random_pair(rng, V, 1, style=rng.choice(["uniform", "close"]))
        D = rng.randint(2, 3)
        m = rng.randint(0, V - 2)
        K = m + 1
        if prune:
            W = rng.randint(1, K)
            R = rng.randint(1, K * (1 + W * (D - 1)))
        else:
            W, R = full_width(K, D)
        case = Case(q, p, Scheme(K, m, W, D, R, Proxy.parse("rheo"), "rheo"), (rng.randrange(V),), 1)
        if family_of(case.scheme).estimate(case, "classes", SPEC) <= max_trees:
            out.append(case)
    return out


def check_43() -> Outcome:
    require(z3_dominance_lemmas(), "z3 could not prove min(a, b) >= min(a, M b)")
    cases = generated_tree_cases(40, 21, prune=False)
    worst = None
    for case, (a, b) in zip(cases, both_of(cases, "tau")):
        require(a >= b, f"4.3 violated: {case.to_json()}: tau OT {a} < RRSw {b}")
        worst = a - b if worst is None else min(worst, a - b)
    return Outcome(
        PROVED,
        f"induction on depth + z3 lemma; rheo_ref on {len(cases)} unpruned no-fill trees (D<=3): "
        f"tau_OT - tau_RRSw >= {worst}",
        numbers={"cases": len(cases), "min_gap": str(worst)},
    )


CE_44 = {
    "draft": {
        "vocab_size": 4,
        "context_length": 1,
        "probs": {
            "0": ["0", "1/4", "1/4", "1/2"],
            "1": ["0", "0", "0", "1"],
            "2": ["0", "0", "1/2", "1/2"],
            "3": ["0", "0", "1/2", "1/2"],
        },
    },
    "target": {
        "vocab_size": 4,
        "context_length": 1,
        "probs": {
            "0": ["1/3", "0", "1/3", "1/3"],
            "1": ["0", "0", "0", "1"],
            "2": ["0", "0", "0", "1"],
            "3": ["0", "0", "0", "1"],
        },
    },
    "context": [0],
    "tokens": 1,
    "scheme": {"K": 2, "m": 1, "W": 2, "D": 2, "R": 4, "proxy": "rheo", "verify": "rheo"},
}
CE_44_TAU = ("7/4", "11/6")


def check_44() -> Outcome:
    case = Case.from_json(CE_44)
    a, b = both(case, "tau")
    require((str(a), str(b)) == CE_44_TAU, f"recorded counterexample moved: tau {a}, {b}")
    unpruned = both(case.with_scheme(R=full_width(2, 2)[1]), "tau")
    require(unpruned[0] >= unpruned[1], "without pruning the recorded case should satisfy 4.3")
    return Outcome(
        REFUTED,
        f"V=4 K=2 m=1 W=2 D=2 R=4 (no fills): tau OT {a} < RRSw {b}; with R=6 (no pruning) "
        f"OT {unpruned[0]} >= RRSw {unpruned[1]}",
        counterexample=CE_44,
    )


def check_45() -> Outcome:
    cases = generated_tree_cases(40, 23, prune=True)
    for case, (a, b) in zip(cases, both_of(cases, "acceptance")):
        require(a >= b, f"4.5 violated: {case.to_json()}: acceptance OT {a} < RRSw {b}")
    return Outcome(
        PROVED,
        f"corollary of 4.1 (kept root children = y-free prefix); rheo_ref on {len(cases)} pruned "
        f"no-fill trees (D<=3): root acceptance OT >= RRSw",
        numbers={"cases": len(cases)},
    )


CLAIMS = [
    Claim(
        "4.1",
        "one level, no fill kept: acceptance (and tau at D=1) OT >= RRSw",
        "closed forms + z3 pointwise lemma; rheo_ref cross-check",
        PROVED,
        check_41,
    ),
    Claim(
        "4.2",
        "one level with fills kept: acceptance OT >= RRSw",
        "exact characterisation; exhaustive search by denominator",
        REFUTED,
        check_42,
    ),
    Claim(
        "4.3",
        "whole tree, no fills, no pruning: tau OT >= RRSw",
        "induction + z3 lemma; rheo_ref on generated trees",
        PROVED,
        check_43,
    ),
    Claim(
        "4.4",
        "whole tree, no fills, with pruning: tau OT >= RRSw",
        "hypothesis hunt with rheo_ref, shrunk",
        REFUTED,
        check_44,
    ),
    Claim(
        "4.5",
        "whole tree, no fills, any pruning: root acceptance OT >= RRSw",
        "corollary of 4.1; rheo_ref on generated trees",
        PROVED,
        check_45,
    ),
    Claim(
        "4.6",
        "one level with fills, if w_OT(head) >= w_RRSw(head): acceptance OT >= RRSw",
        "closed form of 4.2 + z3 lemma; random cases",
        PROVED,
        check_46,
    ),
]
