"""Claim 2 -- one-level losslessness of the OT order and of the RRSw order (docs/ALGORITHM.md §5).

Statement. At one node, with target row p over V tokens, top-m tokens D (outside the tail Tl),
q̃ a distribution on Tl and y ~ q̃:
- OT order (`rheo`): y is tried first, accepted w.p. min(1, p(y)/q̃(y)); on reject
  r <- norm((p - q̃)+); then ANY list of distinct point-mass candidates t (which may depend on y:
  the fills do), each accepted w.p. r(t), on reject r <- norm(r with t zeroed); finally a bonus
  token from r. The emitted token has law exactly p.
- RRSw order (`rrsw`): the top-m point masses first (from r = p), then y with
  min(1, r(y)/q̃(y)) and r <- norm((r - q̃)+), then any list of point masses, then the bonus:
  law exactly p.
- Negative control (hypothesis needed): if point masses that depend on y are tried BEFORE the
  sampled child (fills first), the law is not p in general: refuted with an exact case.

Method, general V (proved). Write the state as an unnormalised residual rho >= 0 of mass M (the
probability of reaching the stage times the current r). Each stage splits rho into an accepted
part and a remaining part that add up to rho, pointwise:
  (S) sampled, y ~ q̃: accepted mass at y is M q̃(y) min(1, r(y)/q̃(y)) = min(rho(y), M q̃(y));
      remaining M (1 - sum min(r, q̃)) norm((r - q̃)+) = (rho - M q̃)+, whatever y was;
  (P) point mass t: accepted rho(t) at t, remaining rho - rho(t) delta_t.
  (B) bonus: emits rho.
Identities used, each checked by z3 for all reals: min(a, b) + max(a - b, 0) = a (pointwise
conservation of (S)); summing it with sum r = sum q̃ = 1 gives sum (r - q̃)+ = 1 - sum min(r, q̃),
the normaliser of (S); (P) is linear. By induction on the number of stages the emitted law is
the initial rho = p. A stage list chosen after y is fine because the residual left by (S) does
not depend on y; the sampled stage needs y ~ q̃ given everything tried before it, which fails
when y-dependent point masses precede it (the negative control).

Method, explicit sizes (proved up to size 4). The literal algorithm, with divisions and
min/max, in exact rational-function arithmetic (sympy's field QQ(p_i, q̃_i), last symbols
eliminated by the sum constraints, all symbols positive), one branch per sign pattern of r - q̃
on the tail (z3 first discards the patterns no positive p, q̃ realise): for V <= 4, every
m < V, every number k of kept fills (the spec's fills, first k of the tail minus y), every y,
both orders, the emitted law equals p; and the point-mass phase alone returns r for every
ordered list of distinct tokens and every zero pattern of r. Zero entries of p or q̃ inside the
tail are covered by the general argument, not by this explicit check.
"""

from __future__ import annotations

from fractions import Fraction
from itertools import chain, combinations, permutations

import sympy as sp
import z3

from rheo_ref.errors import ProofError

from ._claim import PROVED, REFUTED, Claim, Outcome, proved_up_to, require

MAX_V = 4


# --- general identities (z3) ---------------------------------------------------------------


def conservation_identities() -> bool:
    """z3: min(a,b) + max(a-b,0) = a and, scaled, min(rho, M b) + max(rho - M b, 0) = rho."""
    a, b, M = z3.Reals("a b M")
    mn = z3.If(a <= b, a, b)
    mx = z3.If(a - b >= 0, a - b, 0)
    s = z3.Solver()
    s.add(z3.Not(mn + mx == a))
    ok1 = s.check() == z3.unsat
    s = z3.Solver()
    mn2 = z3.If(a <= M * b, a, M * b)
    mx2 = z3.If(a - M * b >= 0, a - M * b, 0)
    s.add(
        M > 0,
        z3.Not(
            z3.And(
                mn2 + mx2 == a, M * z3.If(a / M <= b, a / M, b) == mn2, M * z3.If(a / M - b >= 0, a / M - b, 0) == mx2
            )
        ),
    )
    ok2 = s.check() == z3.unsat
    return ok1 and ok2


# --- explicit sizes (sympy) ----------------------------------------------------------------


def _subsets(xs):
    return chain.from_iterable(combinations(xs, k) for k in range(len(xs) + 1))


def _zero(e) -> bool:
    return e == 0


def point_phase(r: list, lst: list[int]) -> list:
    """Law emitted by point masses `lst` then the bonus, from residual r (symbolic)."""
    V = len(r)
    out = [0] * V
    stay = 1
    for t in lst:
        out[t] += stay * r[t]
        rej = 1 - r[t]
        if _zero(rej):
            return out
        stay = stay * rej
        r = [0 if i == t else x / rej for i, x in enumerate(r)]
    return [o + stay * x for o, x in zip(out, r)]


def sampled_stage(r: list, qt: list, tail: list[int], S: set[int]):
    """One branch of the sampled stage: S = tail tokens with r > q̃. Returns
    (accept probability per y, reject weight, residual or None when the reject weight is 0)."""
    acc = {y: (1 if y in S else r[y] / qt[y]) for y in tail}
    plus = [(r[i] - qt[i]) if i in S else (r[i] if i not in tail else 0) for i in range(len(r))]
    z = sum(plus, 0)
    rej_weight = 1 - sum((qt[y] * acc[y] for y in tail), 0)
    if _zero(z):
        require(_zero(rej_weight), f"residual mass 0 but reject weight {rej_weight}")
        return acc, rej_weight, None
    require(_zero(rej_weight - z), f"normaliser {z} != 1 - sum min = {rej_weight}")
    return acc, rej_weight, [x / z for x in plus]


def _gens(names: list[str]) -> list:
    """Generators of the rational function field QQ(names): equality there is canonical and fast."""
    return list(sp.field(",".join(names), sp.QQ)[1:]) if names else []


def _simplex(gens: list) -> list:
    """A symbolic distribution: the generators and one minus their sum."""
    return gens + [1 - sum(gens, 0)]


def symbols(V: int, m: int):
    """p over V (p_{V-1} eliminated), q̃ over tail m..V-1 (last eliminated)."""
    tail = list(range(m, V))
    gens = _gens([f"p{i}" for i in range(V - 1)] + [f"u{t}" for t in tail[:-1]])
    ps = _simplex(gens[: V - 1])
    qs = [0] * V
    for t, u in zip(tail, _simplex(gens[V - 1 :])):
        qs[t] = u
    return ps, qs, tail


def feasible(V: int, m: int, order: str, S: set[int]) -> bool:
    """z3: is the sign pattern S (tail tokens with r > q̃ at the sampled stage) realisable by
    positive p and q̃? (r = p in the OT order, r = p / (1 - p(D)) on the tail in RRSw.)"""
    p = z3.Reals(" ".join(f"p{i}" for i in range(V)))
    u = z3.Reals(" ".join(f"u{i}" for i in range(m, V)))
    s = z3.Solver()
    s.add(*(x > 0 for x in p + u), z3.Sum(p) == 1, z3.Sum(u) == 1)
    M = 1 if order == "rheo" else 1 - z3.Sum(p[:m]) if m else 1
    for i, t in enumerate(range(m, V)):
        s.add(p[t] > M * u[i] if t in S else p[t] <= M * u[i])
    return s.check() == z3.sat


def one_level_law(ps, qs, tail, m: int, k: int, order: str, S: set[int]) -> list:
    """Emitted law, literal algorithm, in the branch S of the sign pattern at the sampled stage."""
    V = len(ps)
    dets = list(range(m))

    def fills(y):
        return [t for t in tail if t != y][:k]

    out = [0] * V
    if order == "rheo":
        r, pre_stay = ps, 1
        post = lambda y: dets + fills(y)
    elif order == "rrsw":
        # top-m first: they do not depend on y
        r, pre_stay = list(ps), 1
        for t in dets:
            out[t] += pre_stay * r[t]
            rej = 1 - r[t]
            pre_stay = pre_stay * rej
            r = [0 if i == t else x / rej for i, x in enumerate(r)]
        post = fills
    else:
        raise ProofError(f"unknown verification order {order!r}; allowed: rheo, rrsw")
    acc, rej_w, r1 = sampled_stage(r, qs, tail, S)
    for y in tail:
        out[y] += pre_stay * qs[y] * acc[y]
        if r1 is not None:
            cont = point_phase(r1, post(y))
            w = pre_stay * qs[y] * (1 - acc[y])
            out = [o + w * c for o, c in zip(out, cont)]
    return out


def check_literal(max_v: int = MAX_V) -> int:
    """Every (V, m, k, order, sign pattern) for V <= max_v: law == p. Returns the branch count."""
    branches = 0
    for V in range(1, max_v + 1):
        for m in range(V):
            ps, qs, tail = symbols(V, m)
            for k in range(len(tail)):
                for order in ("rheo", "rrsw"):
                    for S in _subsets(tail):
                        if not feasible(V, m, order, set(S)):
                            continue
                        law = one_level_law(ps, qs, tail, m, k, order, set(S))
                        for i in range(V):
                            require(
                                _zero(law[i] - ps[i]), f"V={V} m={m} k={k} {order} S={S}: law[{i}] = {law[i]} != p[{i}]"
                            )
                        branches += 1
    return branches


def check_point_lists(max_v: int = MAX_V) -> int:
    """The point-mass phase returns r for every list of distinct tokens and every zero pattern."""
    n = 0
    for V in range(1, max_v + 1):
        for Z in _subsets(range(V - 1)):  # zero pattern (the last token stays positive)
            free = [i for i in range(V - 1) if i not in Z]
            gens = iter(_gens([f"r{i}" for i in free]))
            rs = [next(gens) if i in free else 0 for i in range(V - 1)]
            rs.append(1 - sum(rs, 0))
            for length in range(V + 1):
                for lst in permutations(range(V), length):
                    law = point_phase(rs, list(lst))
                    for i in range(V):
                        require(_zero(law[i] - rs[i]), f"point phase V={V} zeros={Z} list={lst}: law[{i}] != r[{i}]")
                    n += 1
    return n


# --- negative control: y-dependent point masses before the sampled child -------------------


def fills_first_law(p, qt, m: int, k: int) -> dict[int, Fraction]:
    """Exact law when the fills (first k tail tokens other than y) are tried before y."""
    V = len(p)
    tail = list(range(m, V))
    out = {t: Fraction(0) for t in range(V)}
    for y in tail:
        if qt[y] == 0:
            continue
        r, stay = list(p), Fraction(1)
        for t in list(range(m)) + [t for t in tail if t != y][:k]:
            out[t] += qt[y] * stay * r[t]
            stay *= 1 - r[t]
            if stay == 0:
                break
            r = [Fraction(0) if i == t else x / (1 - r[t]) for i, x in enumerate(r)]
        if stay == 0:
            continue
        a = min(Fraction(1), r[y] / qt[y])
        out[y] += qt[y] * stay * a
        if a < 1:
            plus = [max(Fraction(0), x - q) for x, q in zip(r, qt)]
            z = sum(plus)
            for t in range(V):
                out[t] += qt[y] * stay * (1 - a) * plus[t] / z
    return out


FILLS_FIRST_CASE = {"p": ["0", "1/4", "3/4"], "qtilde": ["1/4", "0", "3/4"], "m": 0, "k": 1}


def check_fills_first() -> Outcome:
    c = FILLS_FIRST_CASE
    p = [Fraction(x) for x in c["p"]]
    qt = [Fraction(x) for x in c["qtilde"]]
    law = fills_first_law(p, qt, c["m"], c["k"])
    tv = sum(abs(law[t] - p[t]) for t in range(len(p))) / 2
    require(tv > 0, f"fills-first order gave p exactly on {c}")
    ce = dict(c, law=[str(law[t]) for t in range(len(p))], tv=str(tv))
    return Outcome(REFUTED, f"fills before the sampled child: law {ce['law']} != p {c['p']}, TV {tv}", ce)


def check_general() -> Outcome:
    require(conservation_identities(), "z3 could not prove the conservation identities")
    return Outcome(
        PROVED,
        "stage conservation min(a,b)+(a-b)+ = a (z3, all reals) + induction on stages; "
        "holds for the rheo and rrsw orders and any y-dependent list after y",
    )


def check_explicit() -> Outcome:
    n = check_literal()
    m = check_point_lists()
    return Outcome(
        proved_up_to(f"V={MAX_V}"),
        f"{n} sign-pattern branches (V<={MAX_V}, all m, k, y, both orders) "
        f"and {m} point-mass lists x zero patterns simplify to p",
        numbers={"branches": n, "lists": m},
    )


CLAIMS = [
    Claim(
        "2",
        "one level, OT and RRSw orders: sampled then any point masses then bonus emits exactly p",
        "general: z3 stage identities + induction",
        PROVED,
        check_general,
    ),
    Claim(
        "2.lit",
        "the literal algorithm (min/max, divisions) emits p, both orders",
        "sympy rational-function field, positive symbols, z3-feasible sign patterns",
        proved_up_to(f"V={MAX_V}"),
        check_explicit,
    ),
    Claim(
        "2.neg",
        "y-dependent point masses (fills) tried BEFORE the sampled child still emit p",
        "exact counterexample (negative control of the hypothesis)",
        REFUTED,
        check_fills_first,
    ),
]
