"""The exact laws of third-party decoders as rheo computed them before they went one token at a time:
the baselines that tests/test_lazy_laws.py compares the new laws with (they must be equal, Fraction
for Fraction) and that tests/bench/test_law_bench.py times them against. Not used by rheo itself.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable
from fractions import Fraction

from rheo.decoders.eagle.law import LEAF_BONUS, TREE, tree_children
from rheo.decoders.laws import Processing
from rheo.decoders.seqspec.law import _capped_prefix_ratio, _max_prefix_index, _prefix, coin
from rheo.decoders.seqspec.sampler import CRASH, METHODS
from rheo_ref.errors import CaseError
from rheo_ref.laws import Law, normalise
from rheo_ref.models import Context, Row, TableModel

ZERO, ONE = Fraction(0), Fraction(1)


class EagleEnumeration:
    """rheo.decoders.eagle.law.Eagle as it was before it went one token at a time, line for line: `node_law`
    enumerates the law of everything a round can accept below a node, then cuts it to n tokens."""

    def __init__(self, p: TableModel, q: TableModel, proc: Processing, *, leaf_bonus: str = "raw", tree=TREE) -> None:
        if leaf_bonus not in LEAF_BONUS:
            raise CaseError(f"leaf_bonus={leaf_bonus!r}; allowed: {', '.join(LEAF_BONUS)}")
        self.raw, self.p, self.q = p, proc.table(p), proc.table(q)
        self.leaf_bonus, self.kids = leaf_bonus, tree_children(tree)
        self.L, self.V = p.context_length, p.vocab_size
        self._nodes: dict[tuple, Law] = {}
        self._after: dict[tuple, Law] = {}

    def _key(self, ctx: Context) -> tuple[int, ...]:
        return tuple(ctx[-self.L :]) if self.L else ()

    def node_law(self, path: tuple[int, ...], ctx: Context) -> Law:
        """Law of (accepted tokens below this node ..., bonus) from a node whose path ends `ctx`."""
        key = (path, self._key(ctx))
        if key in self._nodes:
            return self._nodes[key]
        k, V = self.kids.get(path, 0), self.V
        q, p = self.q.row(list(ctx)), self.p.row(list(ctx))
        raw = p if self.leaf_bonus == "processed" else self.raw.row(list(ctx))
        out: Law = defaultdict(Fraction)

        def walk(c: int, r: Row, drawn: tuple[int, ...], weight: Fraction, flipped: bool) -> None:
            rest = ONE - sum((q[x] for x in drawn), ZERO)
            if c == k or rest == 0:  # no child left, or the rest have q = 0 (skipped without a coin)
                for y, py in enumerate(r if flipped else raw):
                    if py:
                        out[(y,)] += weight * py
                return
            qc = [ZERO if y in drawn else q[y] / rest for y in range(V)]  # q with earlier siblings removed
            for x in range(V):
                if not qc[x]:
                    continue
                a = min(ONE, r[x] / qc[x])
                if a:
                    for s, ps in self.node_law(path + (c,), tuple(ctx) + (x,)).items():
                        out[(x,) + s] += weight * qc[x] * a * ps
                if a < 1:
                    r2 = normalise([max(ZERO, r[y] - qc[y]) for y in range(V)])
                    walk(c + 1, r2, drawn + (x,), weight * qc[x] * (1 - a), True)

        walk(0, p, (), ONE, False)
        self._nodes[key] = dict(out)
        return self._nodes[key]

    def after_root(self, ctx: Context, n: int) -> Law:
        """Law of the next n tokens after a round's root (the last token of ctx)."""
        if n == 0:
            return {(): ONE}
        key = (self._key(ctx), n)
        if key in self._after:
            return self._after[key]
        out: Law = defaultdict(Fraction)
        for s, ps in self.node_law((), ctx).items():
            if len(s) >= n:
                out[s[:n]] += ps
            else:
                for s2, p2 in self.after_root(tuple(ctx) + s, n - len(s)).items():
                    out[s + s2] += ps * p2
        self._after[key] = dict(out)
        return self._after[key]

    def token_law(self, context: Context, n: int) -> Law:
        """Law of the first n tokens eagenerate emits from `context` (the first from the processed p)."""
        if n < 1:
            raise CaseError(f"n={n!r} must be >= 1")
        out: Law = defaultdict(Fraction)
        for t, pt in enumerate(self.p.row(list(context))):
            if pt:
                for s, ps in self.after_root(tuple(context) + (t,), n - 1).items():
                    out[(t,) + s] += pt * ps
        return dict(out)


class SeqSpecEnumeration:
    """rheo.decoders.seqspec.law.SeqSpec as it was before it went one token at a time, line for line: every
    round law enumerates the V^γ drafts and is whole (γ + 1 tokens) before it is cut to n."""

    def __init__(self, p: TableModel, q: TableModel, proc: Processing, *, method: str, gamma: int) -> None:
        if method not in METHODS:
            raise CaseError(f"seqspec method {method!r}; allowed: {', '.join(METHODS)}")
        if isinstance(gamma, bool) or not isinstance(gamma, int) or gamma < 1:
            raise CaseError(f"gamma={gamma!r} must be an integer >= 1")
        self.p, self.q = proc.table(p), proc.table(q)
        self.method, self.gamma = method, gamma
        self.L, self.V = p.context_length, p.vocab_size
        self._rounds: dict[tuple[int, ...], Law] = {}
        self._after: dict[tuple, Law] = {}
        self._verify: Callable = {"standard": self._standard, "naive_hsd": self._naive, "capped_hsd": self._capped}[
            method
        ]

    def _key(self, ctx: Context) -> tuple[int, ...]:
        return tuple(ctx[-self.L :]) if self.L else ()

    def rows(self, ctx: tuple[int, ...], xs: tuple[int, ...]) -> tuple[list[Row], list[Row]]:
        """The processed p and q rows at positions 0..len(xs) of a draft xs after ctx."""
        ps = [self.p.row(list(ctx + xs[:i])) for i in range(len(xs) + 1)]
        qs = [self.q.row(list(ctx + xs[:i])) for i in range(len(xs) + 1)]
        return ps, qs

    def round_law(self, ctx: tuple[int, ...]) -> Law:
        """Law of the tokens one round appends to ctx (a CRASH round: the single outcome (CRASH,))."""
        key = self._key(ctx)
        if key in self._rounds:
            return self._rounds[key]
        out: Law = defaultdict(Fraction)
        for xs in itertools.product(range(self.V), repeat=self.gamma):
            ps, qs = self.rows(ctx, xs)
            w = ONE
            for i, x in enumerate(xs):
                w *= qs[i][x]
                if not w:
                    break
            if not w:
                continue
            for s, pr in self._verify(ctx, xs, ps, qs).items():
                out[s] += w * pr
        self._rounds[key] = dict(out)
        return self._rounds[key]

    # --- the three verifiers: law of the round's new tokens given the draft xs

    def _standard(self, ctx: tuple, xs: tuple, ps: list[Row], qs: list[Row]) -> Law:
        out: Law = defaultdict(Fraction)
        w = ONE
        for t, x in enumerate(xs):
            a = coin(ps[t][x], qs[t][x])
            res = normalise([max(ZERO, ps[t][y] - qs[t][y]) for y in range(self.V)], on_zero="none")
            if a < 1:
                _draw_whole(out, xs[:t], res, w * (1 - a))
            w *= a
            if not w:
                return dict(out)
        _draw_whole(out, xs, ps[self.gamma], w)
        return dict(out)

    def _naive(self, ctx: tuple, xs: tuple, ps: list[Row], qs: list[Row]) -> Law:
        g, V = self.gamma, self.V
        P, Q = _prefix(ps, xs), _prefix(qs, xs)
        out: Law = defaultdict(Fraction)
        a, w = coin(P[g - 1], Q[g - 1]), ONE
        for t in range(g - 1, -1, -1):
            if a:
                self._naive_tail(out, ctx, xs, t, ps, qs, P, Q, w * a)
            w *= 1 - a
            if not w:
                return dict(out)
            tau = t - 1  # the code computes the next coin with P[tau], Q[tau]: at tau = -1 that is
            # Python's last element, but the loop ends there and the coin is never used
            dpq = sum((max(ZERO, P[tau] * ps[tau + 1][y] - Q[tau] * qs[tau + 1][y]) for y in range(V)), ZERO)
            dqp = sum((max(ZERO, Q[tau] * qs[tau + 1][y] - P[tau] * ps[tau + 1][y]) for y in range(V)), ZERO)
            a = coin(dpq, max(dpq, dqp))
        self._naive_tail(out, ctx, xs, -1, ps, qs, P, Q, w)
        return dict(out)

    def _naive_tail(self, out: Law, ctx: tuple, xs: tuple, tau: int, ps, qs, P, Q, w: Fraction) -> None:
        g = self.gamma
        if tau == g - 1:
            _draw_whole(out, xs, ps[g], w)
            return
        kept = xs[: tau + 1]
        Pc, Qc = (ONE, ONE) if tau == -1 else (P[tau], Q[tau])

        def walk(seq: tuple, p: Row, q: Row, Pc: Fraction, Qc: Fraction, w: Fraction, left: int) -> None:
            if left == 0:
                out[seq] += w
                return
            res = normalise([max(ZERO, Pc * p[y] - Qc * q[y]) for y in range(self.V)], on_zero="none") or p
            for y, ry in enumerate(res):
                if ry:
                    nxt = ctx + seq + (y,)
                    walk(
                        seq + (y,), self.p.row(list(nxt)), self.q.row(list(nxt)), Pc * p[y], Qc * q[y], w * ry, left - 1
                    )

        walk(kept, ps[tau + 1], qs[tau + 1], Pc, Qc, w, g - 1 - tau)

    def _capped(self, ctx: tuple, xs: tuple, ps: list[Row], qs: list[Row]) -> Law:
        g = self.gamma
        ratios = [pr / qr for pr, qr in zip(_prefix(ps, xs), _prefix(qs, xs))]
        out: Law = defaultdict(Fraction)
        a, w = min(ONE, _capped_prefix_ratio(ratios, g - 1)), ONE
        for t in range(g - 1, -1, -1):
            if a:
                self._capped_tail(out, xs, t, ps, qs, ratios, w * a)
            w *= 1 - a
            if not w:
                return dict(out)
            tau = t - 1
            if tau >= 0:
                _, dpq, dqp = self._capped_divergences(xs, ps, qs, tau, ratios)
                a = coin(dpq, dqp)
        self._capped_tail(out, xs, -1, ps, qs, ratios, w)
        return dict(out)

    def _capped_divergences(self, xs: tuple, ps, qs, t: int, ratios: list[Fraction]):
        """compute_capped_branch_divergences(t), line by line (t = −1 reads position −1 = γ−1)."""
        m = _max_prefix_index(ratios[:t])
        divide, q_prefix, p_prefix = ONE, ONE, ONE
        for i in range(t):
            q_prefix *= qs[i][xs[i]]
            p_prefix *= ps[i][xs[i]]
            if m >= 0:
                m -= 1
            if m == 0:
                divide = p_prefix / q_prefix
        q_dist, p_dist = qs[t if t >= 0 else self.gamma + t], ps[t if t >= 0 else self.gamma + t]
        q_joint = [q_prefix * v for v in q_dist]
        p_joint = [p_prefix * v for v in p_dist]
        r_star = [(pj / qj if qj > 0 else ZERO) / divide for pj, qj in zip(p_joint, q_joint)]
        dpq = sum(((r - 1) * qj for r, qj in zip(r_star, q_joint) if r > 1), ZERO)
        dqp = sum(((1 - r) * qj for r, qj in zip(r_star, q_joint) if r <= 1), ZERO)
        return r_star, dpq, dqp

    def _capped_tail(self, out: Law, xs: tuple, tau: int, ps, qs, ratios, w: Fraction) -> None:
        g = self.gamma
        if tau == g - 1:
            _draw_whole(out, xs, ps[g], w)
            return
        r_star, _, _ = self._capped_divergences(xs, ps, qs, tau, ratios)
        q_prefix = ONE
        for i in range(tau):
            q_prefix *= qs[i][xs[i]]
        res = normalise([max(ZERO, qv * q_prefix * (r - 1)) for qv, r in zip(qs[tau + 1], r_star)], on_zero="none")
        _draw_whole(out, xs[: tau + 1], res, w)

    # --- many rounds

    def after(self, ctx: tuple[int, ...], n: int) -> Law:
        """Law of the next n tokens after ctx (a crash: n tokens CRASH)."""
        if n == 0:
            return {(): ONE}
        key = (self._key(ctx), n)
        if key in self._after:
            return self._after[key]
        out: Law = defaultdict(Fraction)
        for s, ps in self.round_law(ctx).items():
            if s == (CRASH,):
                out[(CRASH,) * n] += ps
            elif len(s) >= n:
                out[s[:n]] += ps
            else:
                for s2, p2 in self.after(ctx + s, n - len(s)).items():
                    out[s + s2 if s2[:1] != (CRASH,) else (CRASH,) * n] += ps * p2
        self._after[key] = dict(out)
        return self._after[key]

    def token_law(self, context: Context, n: int) -> Law:
        """Law of the first n tokens speculative_generate emits after `context`."""
        if n < 1:
            raise CaseError(f"n={n!r} must be >= 1")
        return self.after(tuple(context), n)


def _draw_whole(out: Law, kept: tuple, row: Row | None, w: Fraction) -> None:
    """kept, then one token from row (None: a row summing to 0, which torch.multinomial refuses)."""
    if not w:
        return
    if row is None:
        out[(CRASH,)] += w
        return
    for y, ry in enumerate(row):
        if ry:
            out[kept + (y,)] += w * ry
