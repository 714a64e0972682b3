"""The exact law of eagle-harness 0.1.3's sampled tree as written (`eagle_harness/core/sampled_tree.py`).

A node at context c draws `children` ordered children without replacement (`draw_children`: Gumbel-top-k
of q(·|c), the Plackett-Luce law: y_i w.p. q(y_i)/(1 − Σ_{j<i} q(y_j))). `reject_children` (lines 63-103)
walks them in draw order with r = p(·|c) (unnormalised residual, mass m = Σ r) and q̃ = q with the drawn
children removed, over its sum:
- child y is accepted w.p. P(u·m·q̃(y) < r(y)) = min(1, r(y)/(m·q̃(y))) (never when q̃(y) = 0; line 91);
- after a rejection r ← (r − m·q̃)+ and y leaves q̃ (lines 94-98);
- when no child is accepted, the token is the inverse CDF of r at u·Σr (`searchsorted(right=True)`,
  lines 99-101): r normalised, or token V − 1 when r has mass 0 (the index V is clamped).
An accepted child continues the walk at its own node, to `depth` levels; below the last level the token
is drawn from p (the walk's bonus). Lazy in the tokens asked for: a node's law is cut at m tokens (a
child's subtree is walked only while tokens are wanted), and each node's draw prefixes are walked once
(`children_walk`). Memoised by (visible context, level, m).

`reuse_coin` is the negative control: the residual draw reuses the first child's coin instead of its own
(`reject_children` documents its uniforms as independent of each other). A residual draw then happens only
when that coin u_1 >= a_1 (a_1 the first child's acceptance probability), so u_1 is uniform on [a_1, 1)
and the inverse CDF gives token v w.p. |[c_{v−1}, c_v) ∩ [a_1, 1)| / (1 − a_1), c the residual's CDF.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from fractions import Fraction

from rheo_ref.errors import CaseError
from rheo_ref.laws import ONE, ZERO, Law, Row, normalise
from rheo_ref.models import TableModel

from ..rounds import RowMemo, single_token_law, temper, token_law, visible


def _residual_draw(r: Sequence[Fraction]) -> Law:
    n = normalise(r, on_zero="none")
    if n is None:
        return {(len(r) - 1,): ONE}
    return {(v,): w for v, w in enumerate(n) if w}


def ordered_draws(q: Row, k: int) -> list[tuple[tuple[int, ...], Fraction]]:
    """Plackett-Luce: every ordered draw of min(k, |support|) distinct tokens with its probability."""
    support = [v for v, x in enumerate(q) if x]
    m = min(k, len(support))
    out = []
    for ys in itertools.permutations(support, m):
        w, used = ONE, ZERO
        for y in ys:
            w *= q[y] / (1 - used)
            used += q[y]
        out.append((ys, w))
    return out


def _above(r: Sequence[Fraction], a: Fraction) -> Law:
    """The inverse-CDF draw from r at a coin uniform on [a, 1) (the reused first child's coin)."""
    n = normalise(r, on_zero="none")
    if n is None:
        return {(len(r) - 1,): ONE}
    out: Law = {}
    lo = ZERO
    for v, x in enumerate(n):
        hi = lo + x
        w = max(ZERO, hi - max(lo, a)) / (1 - a)
        if w:
            out[(v,)] = w
        lo = hi
    return out


class SampledTreeLaw:
    """The law of rounds of the sampled tree walk on tables p (target) and q (draft) at temperature T."""

    def __init__(
        self,
        target: TableModel,
        draft: TableModel,
        *,
        temperature: Fraction = ONE,
        children: int = 2,
        depth: int = 2,
        reuse_coin: bool = False,
    ) -> None:
        for name, v, hi in (("children", children, 4), ("depth", depth, 4)):
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= hi:
                raise CaseError(f"{name}={v!r} must be an integer in 1..{hi} (the law walks every draw prefix)")
        self.p, self.q, self.t = target, draft, Fraction(temperature)
        self.k, self.depth, self.reuse = children, depth, reuse_coin
        self.memo: dict[tuple[tuple[int, ...], int, int], Law] = {}  # by visible context, level, tokens
        self.walks: dict[tuple[int, ...], tuple[dict[int, Fraction], Law]] = {}  # by visible context
        self.visible = visible(target.context_length)
        self._rows = RowMemo(target.context_length)

    def _row(self, kind: str, ctx: tuple[int, ...]) -> Row:
        model = self.p if kind == "p" else self.q
        return self._rows.get(kind, ctx, lambda: temper(model.row(ctx), self.t))

    def p_row(self, ctx: tuple[int, ...]) -> Row:
        return self._row("p", ctx)

    def q_row(self, ctx: tuple[int, ...]) -> Row:
        return self._row("q", ctx)

    def children_walk(self, ctx: tuple[int, ...]) -> tuple[dict[int, Fraction], Law]:
        """The node at `ctx` walked over its draw prefixes: P(child y is the one accepted) for each y, and
        the law of the residual token (no child accepted). Memoised by the visible context.

        A prefix walk (each draw prefix once, summing over the orders that share it), not an enumeration
        of every ordered draw with a law merged per draw: V·(V−1)·…·(V−k+1) prefixes of Fraction
        arithmetic on rows of V, then one merge per child."""
        key = self.visible(ctx)
        hit = self.walks.get(key)
        if hit is not None:
            return hit
        p, q0 = self.p_row(ctx), self.q_row(ctx)
        support = [v for v, x in enumerate(q0) if x]
        m_draws = min(self.k, len(support))
        first: dict[int, Fraction] = {}
        resid: dict[tuple[int, ...], Fraction] = {}

        def walk(r: list[Fraction], q: list[Fraction], used: Fraction, w: Fraction, i: int, a0: Fraction) -> None:
            if i == m_draws:  # every child rejected: the residual draw (lines 99-101)
                law = _above(r, a0) if self.reuse and a0 < 1 else _residual_draw(r)
                for t, v in law.items():
                    resid[t] = resid.get(t, ZERO) + w * v
                return
            m, qm = sum(r, ZERO), sum(q, ZERO)
            cond = [x / qm for x in q] if qm else [ZERO] * len(q)
            after = [max(x - m * c, ZERO) for x, c in zip(r, cond)]  # r after a rejection (lines 94-98)
            for y in support:
                if not q[y]:
                    continue  # drawn earlier
                wy = w * q0[y] / (1 - used)  # Plackett-Luce: the next draw is y
                qy = cond[y]
                if qy == 0:
                    a = ZERO
                elif m * qy == 0:
                    a = ONE if r[y] > 0 else ZERO
                else:
                    a = min(ONE, r[y] / (m * qy))
                if a:
                    first[y] = first.get(y, ZERO) + wy * a
                if a < 1:
                    rest = list(q)
                    rest[y] = ZERO
                    walk(after, rest, used + q0[y], wy * (1 - a), i + 1, a if i == 0 else a0)

        walk(list(p), list(q0), ZERO, ONE, 0, ZERO)
        self.walks[key] = (first, resid)
        return first, resid

    def node(self, ctx: tuple[int, ...], level: int, m: int) -> Law:
        """The law of the first `m` tokens the walk emits from the node at `ctx`, `level` levels deep."""
        key = (self.visible(ctx), level, m)
        if key in self.memo:
            return self.memo[key]
        if level == self.depth:
            out: Law = {(v,): x for v, x in enumerate(self.p_row(ctx)) if x}
        else:
            first, resid = self.children_walk(ctx)
            out = dict(resid)
            for y, f in first.items():
                if m == 1:
                    out[(y,)] = out.get((y,), ZERO) + f
                    continue
                for t, v in self.node(ctx + (y,), level + 1, m - 1).items():
                    out[(y,) + t] = out.get((y,) + t, ZERO) + f * v
        self.memo[key] = out
        return out

    def round_law(self, ctx: tuple[int, ...], m: int | None = None) -> Law:
        """The law of one round from `ctx`, cut at its first `m` tokens (uncut: every level)."""
        return self.node(ctx, 0, self.depth + 1 if m is None else max(1, min(m, self.depth + 1)))

    def token_law(self, context: Sequence[int], n: int) -> Law:
        return token_law(self.round_law, context, n, label="eagle-harness", key=visible(self.p.context_length))


def target_law(target: TableModel, temperature: Fraction, context: Sequence[int], n: int) -> Law:
    return single_token_law(lambda c: temper(target.row(c), temperature), context, n)
