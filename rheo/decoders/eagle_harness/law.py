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
is drawn from p (the walk's bonus). Memoised by (context, level).

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

from ..rounds import single_token_law, temper, token_law, visible


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
                raise CaseError(f"{name}={v!r} must be an integer in 1..{hi} (the law enumerates every ordered draw)")
        self.p, self.q, self.t = target, draft, Fraction(temperature)
        self.k, self.depth, self.reuse = children, depth, reuse_coin
        self.memo: dict[tuple[tuple[int, ...], int], Law] = {}  # by visible context and level
        self.visible = visible(target.context_length)
        self._rows: dict[tuple[str, tuple[int, ...]], Row] = {}  # by kind and visible context

    def _row(self, kind: str, ctx: tuple[int, ...]) -> Row:
        key = (kind, self.visible(ctx))
        row = self._rows.get(key)
        if row is None:
            row = self._rows[key] = temper((self.p if kind == "p" else self.q).row(ctx), self.t)
        return row

    def p_row(self, ctx: tuple[int, ...]) -> Row:
        return self._row("p", ctx)

    def q_row(self, ctx: tuple[int, ...]) -> Row:
        return self._row("q", ctx)

    def node(self, ctx: tuple[int, ...], level: int) -> Law:
        """The law of the tokens the walk emits from the node at `ctx`, `level` levels deep."""
        key = (self.visible(ctx), level)
        if key in self.memo:
            return self.memo[key]
        p = self.p_row(ctx)
        out: dict[tuple[int, ...], Fraction] = {}

        def add(law: Law, head: tuple[int, ...], w: Fraction) -> None:
            for t, v in law.items():
                out[head + t] = out.get(head + t, ZERO) + w * v

        if level == self.depth:
            add({(v,): x for v, x in enumerate(p) if x}, (), ONE)
        else:
            q0 = self.q_row(ctx)
            for ys, w in ordered_draws(q0, self.k):
                r, q = list(p), list(q0)
                acc = []  # acceptance probability of each child given the earlier rejections
                for y in ys:
                    m, qm = sum(r, ZERO), sum(q, ZERO)
                    cond = [x / qm for x in q] if qm else [ZERO] * len(q)
                    qy = cond[y]
                    if qy == 0:
                        a = ZERO
                    elif m * qy == 0:
                        a = ONE if r[y] > 0 else ZERO
                    else:
                        a = min(ONE, r[y] / (m * qy))
                    acc.append(a)
                    r = [max(x - m * c, ZERO) for x, c in zip(r, cond)]  # the update after a rejection
                    q[y] = ZERO
                    residual_after = r
                first, none = [], ONE  # the probability that child i is the first accepted; that none is
                for a in acc:
                    first.append(none * a)
                    none *= 1 - a
                for y, f in zip(ys, first):
                    if f:
                        add(self.node(ctx + (y,), level + 1), (y,), w * f)
                if none:
                    r_law = _residual_draw(residual_after)
                    if self.reuse and acc[0] < 1:
                        r_law = _above(residual_after, acc[0])
                    add(r_law, (), w * none)
        self.memo[key] = out
        return out

    def round_law(self, ctx: tuple[int, ...]) -> Law:
        return self.node(ctx, 0)

    def token_law(self, context: Sequence[int], n: int) -> Law:
        return token_law(
            lambda ctx, m: self.round_law(ctx), context, n, label="eagle-harness", key=visible(self.p.context_length)
        )


def target_law(target: TableModel, temperature: Fraction, context: Sequence[int], n: int) -> Law:
    return single_token_law(lambda c: temper(target.row(c), temperature), context, n)
