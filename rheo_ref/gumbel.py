"""Exact laws of Gumbel-max draws over shared noise, and of keyed (watermarked) speculative decoding.

A Gumbel watermark draws a token as argmax_i(log w_i + G_i), G_i iid Gumbel from a keyed PRF of the
context. Averaged over a uniformly random key the noise is iid Gumbel, so one such draw has law w / Σw.
Two draws *at the same context with the same key* share G: their joint law is not the product law.
`pair_law(a, b)` is that joint law, exactly:

    P(argmax(log a + G) = x, argmax(log b + G) = y)

With G = −log E, E iid Exp(1), argmax(log w_i + G_i) = argmin E_i / w_i (exponential races). Conditioned
on E_x = s, E_y = t (x ≠ y), every other token i must satisfy E_i > max(s a_i/a_x, t b_i/b_y), with
probability exp(−max(...)); x beats y for a and y beats x for b cut the ratio u = t/s to the interval
(a_y/a_x, b_y/b_x). Between the sorted break points u_i = (a_i/a_x)/(b_i/b_y) every max is one of its
two arms, the integrand is exp(−s(α + βu)) · s (t = us), and ∫∫ = ∫ du / (α + βu)² = [1/(α+βu₁) −
1/(α+βu₂)] / β: a sum of rationals in a and b. x = y: 1 / (1 + Σ_i max(a_i/a_x, b_i/b_x)).

`position_law(p, q, shared=...)`: what one verified position emits under keyed speculative decoding,
averaged over keys. The draft is x = argmax(log q + G_draft); it is accepted with probability
min(1, p(x)/q(x)) (an independent seeded uniform); else the resampled token is y = argmax(log r + G_res),
r = (p − q)₊. With `shared=True` G_res = G_draft (one key for the draft and the residual at that
context): y is the residual draw conditioned on x having won the draft race — not r in general. With
`shared=False` (independent keys, or an unkeyed draft) y ~ r and the position is the standard
token-level verification, whose output law is p.

`speculative_law(case, k, n, shared=...)`: the key-averaged law of the first n tokens of a chain
speculative decoder with k drafts a round, every position's noise independent of every other
position's (pairwise distinct contexts; see docs/THIRD_PARTY.md §12 for when that holds in vLLM), the
bonus drawn from p with its own fresh noise.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from rheo_ref.errors import CaseError
from rheo_ref.laws import ONE, ZERO, Law, compose, one_token_rounds
from rheo_ref.models import Case

__all__ = ["pair_law", "position_law", "speculative_law", "target_law"]


def _weights(w: Sequence[Fraction], name: str) -> tuple[Fraction, ...]:
    out = tuple(Fraction(x) for x in w)
    if any(x < 0 for x in out) or not any(x > 0 for x in out):
        raise CaseError(f"{name} = {[str(x) for x in out]}: weights must be >= 0 with a positive total")
    return out


def _pair(a: tuple[Fraction, ...], b: tuple[Fraction, ...], x: int, y: int) -> Fraction:
    """P(argmin E/a = x, argmin E/b = y) for a_x > 0, b_y > 0."""
    others = [i for i in range(len(a)) if i not in (x, y)]
    if x == y:
        return ONE / (ONE + sum((max(a[i] / a[x], b[i] / b[x]) for i in others), ZERO))
    lo = a[y] / a[x]
    hi = b[y] / b[x] if b[x] > 0 else None  # None: +infinity
    if hi is not None and lo >= hi:
        return ZERO
    c = {i: a[i] / a[x] for i in others}
    d = {i: b[i] / b[y] for i in others}
    cuts = sorted(
        {c[i] / d[i] for i in others if c[i] > 0 and d[i] > 0 and lo < c[i] / d[i] and (hi is None or c[i] / d[i] < hi)}
    )
    points: list[Fraction | None] = [lo, *cuts, hi]
    total = ZERO
    for u1, u2 in zip(points, points[1:]):
        assert u1 is not None
        mid = u1 + 1 if u2 is None else (u1 + u2) / 2
        alpha = ONE + sum((c[i] for i in others if c[i] >= mid * d[i]), ZERO)
        beta = ONE + sum((d[i] for i in others if c[i] < mid * d[i]), ZERO)
        upper = ZERO if u2 is None else ONE / (alpha + beta * u2)
        total += (ONE / (alpha + beta * u1) - upper) / beta
    return total


def pair_law(a: Sequence[Fraction], b: Sequence[Fraction]) -> dict[tuple[int, int], Fraction]:
    """Exact joint law of (argmax(log a + G), argmax(log b + G)) over one vector G of iid Gumbel noise.

    a, b: nonnegative weights (unnormalised; a zero weight never wins). Zero entries are omitted."""
    a, b = _weights(a, "a"), _weights(b, "b")
    if len(a) != len(b):
        raise CaseError(f"pair_law: a has {len(a)} entries and b {len(b)}; they must be equally long")
    out = {}
    for x in range(len(a)):
        for y in range(len(b)):
            if a[x] > 0 and b[y] > 0:
                pr = _pair(a, b, x, y)
                if pr:
                    out[(x, y)] = pr
    return out


def position_law(
    p: Sequence[Fraction], q: Sequence[Fraction], *, shared: bool
) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
    """Key-averaged law of one verified position: (accepted, rejected), accepted[z] = P(draft z kept),
    rejected[z] = P(draft rejected and z resampled); together they sum to 1.

    shared: the residual draw reuses the draft's Gumbel noise (same key, same context)."""
    p, q = _weights(p, "p"), _weights(q, "q")
    if sum(p) != 1 or sum(q) != 1:
        raise CaseError(f"position_law: p sums to {sum(p)} and q to {sum(q)}; both must sum to 1")
    V = len(p)
    accepted = tuple(min(p[z], q[z]) for z in range(V))
    reject = [q[x] - accepted[x] for x in range(V)]  # P(x drafted and rejected)
    r = tuple(max(p[z] - q[z], ZERO) for z in range(V))
    rejected = [ZERO] * V
    if any(r):
        if shared:
            for (x, y), pr in pair_law(q, r).items():
                if reject[x]:
                    rejected[y] += pr * reject[x] / q[x]
        else:
            mass, total = sum(reject), sum(r)
            rejected = [mass * r[z] / total for z in range(V)]
    return accepted, tuple(rejected)


def target_law(case: Case, n: int) -> Law:
    """The target's own law of the first n tokens after the case's context."""
    return compose(one_token_rounds(lambda ctx: case.target.row(ctx)), case.context, n)


def speculative_law(case: Case, k: int, n: int, *, shared: bool) -> Law:
    """Key-averaged law of the first n tokens of keyed chain speculative decoding with k drafts a round
    (`position_law` at each drafted position, the bonus from p), every position's noise independent."""
    if k < 1:
        raise CaseError(f"speculative_law: k = {k}; the drafts per round must be >= 1")
    memo: dict[tuple[int, ...], tuple[tuple[Fraction, ...], tuple[Fraction, ...]]] = {}

    def step(ctx: tuple[int, ...]) -> tuple[tuple[Fraction, ...], tuple[Fraction, ...]]:
        key = case.visible(ctx)
        if key not in memo:
            memo[key] = position_law(case.target.row(ctx), case.draft.row(ctx), shared=shared)
        return memo[key]

    def round_law(ctx: tuple[int, ...], m: int) -> Law:
        out: dict[tuple[int, ...], Fraction] = {}

        def walk(emitted: tuple[int, ...], j: int, w: Fraction) -> None:
            here = ctx + emitted
            if len(emitted) >= m:
                out[emitted] = out.get(emitted, ZERO) + w
                return
            if j == k:
                for z, pz in enumerate(case.target.row(here)):
                    if pz:
                        s = emitted + (z,)
                        out[s] = out.get(s, ZERO) + w * pz
                return
            accepted, rejected = step(here)
            for z in range(len(accepted)):
                if rejected[z]:
                    s = emitted + (z,)
                    out[s] = out.get(s, ZERO) + w * rejected[z]
                if accepted[z]:
                    walk(emitted + (z,), j + 1, w * accepted[z])

        walk((), 0, ONE)
        return out

    return compose(round_law, case.context, n)
