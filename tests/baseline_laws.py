"""The exact laws of third-party decoders as rheo computed them before they went one token at a time:
the baselines that tests/test_lazy_laws.py compares the new laws with (they must be equal, Fraction
for Fraction) and that tests/bench/test_law_bench.py times them against. Not used by rheo itself.
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction

from rheo.eagle_law import LEAF_BONUS, TREE, _normalise, tree_children
from rheo.hf_laws import Processing
from rheo_ref.errors import CaseError
from rheo_ref.models import Context, Row, TableModel

Law = dict[tuple[int, ...], Fraction]
ZERO, ONE = Fraction(0), Fraction(1)


class EagleEnumeration:
    """rheo.eagle_law.Eagle as it was before it went one token at a time, line for line: `node_law`
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
                    r2 = _normalise([max(ZERO, r[y] - qc[y]) for y in range(V)])
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
