"""The exact law of EAGLE-1 as coded in eagle-llm 1.2.1 (docs/THIRD_PARTY.md §6), in pure Fractions.

One round of `EaModel.eagenerate` from a context ending with the round's root token (the first
round's root is drawn by `EaModel.forward` from the processed p; later roots are the previous
round's bonus):
- the draft expands the tree `mc_sim_7b_63` (`TREE`): at a node with k tree children it draws 10
  children without replacement from the processed q of the node's path (`cnets.Model.sample`), and
  the first k drawn are the tree children 0..k−1, in order;
- `utils.evaluate_posterior` walks down from the root: at a node, child c (token x, drawn with
  conditional probability q_c(x) = q(x)/(1 − q(earlier siblings))) is accepted w.p.
  min(1, r(x)/q_c(x)), r starting as the processed p of the node's path; on a rejection
  r ← norm((r − q_c)+) with q_c the q row with the earlier siblings zeroed and renormalised (the
  recursive rejection sampling without replacement of SpecInfer / EAGLE). A child with
  q_c(x) = 0 (drawn after q's support is exhausted) is skipped without a coin.
  An accepted child becomes the node, and the walk goes on;
- the bonus, which is the next round's root: from r when the last node visited had a coin flipped
  and all its children rejected; **from the raw, unprocessed p** (softmax of the logits, no
  temperature / top-k / top-p) when no coin was flipped there — the accepted node is a leaf of the
  tree, or all its children have q = 0 (eagle/model/utils.py lines 407-411: `sample_p = torch.softmax(gt_logits)`
  of `logits[best_candidate, accept_length − 1]`, which the processor never touched).
`leaf_bonus="processed"` models the corrected rule (the bonus from the processed p); `Eagle` with
it is lossless, which the tests check exactly: the defect is that one line.

The law of the first n tokens is built one token at a time: `Eagle.moves` is the law of the next
token from a tree node together with the node after it (an accepted child, or the next round's root
after a bonus): one walk over the rejection orders of the node's children, memoised by node and
visible context. `rheo_ref.laws.compose` strings the moves together, the tree node being the
decoder's state: the work grows with the prefixes shorter than n and the nodes they reach, never
with everything a round can accept below a node; a progress bar shows it on a terminal, and a
stopped run says where it was (`rheo.decoders.law_progress`).

Processing: eagle builds its processors in the order temperature, top-p, top-k
(`utils.prepare_logits_processor`), transformers in the order temperature, top-k, top-p; with only
one of top-k / top-p given they agree, and `rheo gate-hf --decoder eagle` refuses both.
"""

from __future__ import annotations

from collections import defaultdict
from fractions import Fraction

from rheo.decoders.law_progress import LawProgress
from rheo.decoders.laws import Processing
from rheo_ref.errors import CaseError
from rheo_ref.laws import Law, compose, normalise
from rheo_ref.models import Context, Row, TableModel

Node = tuple[int, ...] | None  # a tree node's path (() the root); None: START
Move = tuple[tuple[int, ...], Node]  # ((token,), the node after it: an accepted child's path, or () after a bonus)
START: Node = None  # compose's state before the first token (drawn by EaModel.forward from the processed p)
ZERO, ONE = Fraction(0), Fraction(1)

# eagle.model.choices.mc_sim_7b_63 (eagle-llm 1.2.1): the paths of the 25 tree nodes below the root
TREE: tuple[tuple[int, ...], ...] = (
    (0,), (1,), (2,), (3,), (0, 0), (0, 1), (0, 2), (1, 0), (1, 1), (2, 0), (2, 1), (3, 0),
    (0, 0, 0), (0, 0, 1), (0, 0, 2), (0, 1, 0), (0, 1, 1), (0, 2, 0), (0, 2, 1), (1, 0, 0),
    (0, 0, 0, 0), (0, 0, 0, 1), (0, 0, 0, 2), (0, 0, 0, 0, 0), (0, 0, 0, 0, 1),
)  # fmt: skip
LEAF_BONUS = ("raw", "processed")


def tree_children(tree: tuple[tuple[int, ...], ...]) -> dict[tuple[int, ...], int]:
    """path -> number of tree children (children are numbered 0..k−1, as eagle's choices are)."""
    kids: dict[tuple[int, ...], int] = defaultdict(int)
    for path in tree:
        kids[path[:-1]] = max(kids[path[:-1]], path[-1] + 1)
    for path, k in kids.items():
        if any(path + (c,) not in tree for c in range(k)):
            raise CaseError(f"tree node {list(path)} has children numbered with gaps; eagle numbers them 0..k-1")
    return dict(kids)


class Eagle:
    """The law of eagle-llm 1.2.1's `eagenerate` on tables p (target) and q (draft), both processed by
    `proc` (see the module docstring)."""

    def __init__(self, p: TableModel, q: TableModel, proc: Processing, *, leaf_bonus: str = "raw", tree=TREE) -> None:
        if leaf_bonus not in LEAF_BONUS:
            raise CaseError(f"leaf_bonus={leaf_bonus!r}; allowed: {', '.join(LEAF_BONUS)}")
        self.raw, self.p, self.q = p, proc.table(p), proc.table(q)
        self.leaf_bonus, self.kids = leaf_bonus, tree_children(tree)
        self.L, self.V = p.context_length, p.vocab_size
        self._moves: dict[tuple, dict[Move, Fraction]] = {}

    def _key(self, ctx: Context) -> tuple[int, ...]:
        return tuple(ctx[-self.L :]) if self.L else ()

    def moves(self, path: tuple[int, ...], ctx: Context) -> dict[Move, Fraction]:
        """The law of the next token from a node whose path ends `ctx`, with the node after it:
        (token, an accepted child's path) when a child is accepted (the walk goes on there), or
        (token, ()) for the bonus (the next round's root)."""
        key = (path, self._key(ctx))
        if key in self._moves:
            return self._moves[key]
        k, V = self.kids.get(path, 0), self.V
        q, p = self.q.row(list(ctx)), self.p.row(list(ctx))
        raw = p if self.leaf_bonus == "processed" else self.raw.row(list(ctx))
        out: dict[Move, Fraction] = defaultdict(Fraction)

        def bonus(r: Row, weight: Fraction) -> None:
            for y, py in enumerate(r):
                if py:
                    out[((y,), ())] += weight * py

        def walk(c: int, r: Row, drawn: tuple[int, ...], weight: Fraction, flipped: bool) -> None:
            rest = ONE - sum((q[x] for x in drawn), ZERO)
            if c == k or rest == 0:  # no child left, or the rest have q = 0 (skipped without a coin)
                bonus(r if flipped else raw, weight)
                return
            qc = [ZERO if y in drawn else q[y] / rest for y in range(V)]  # q with earlier siblings removed
            r2: Row | None = None  # the residual after a rejection here: the same whichever x was rejected
            last = ZERO  # rejections after which no child is left: their bonus comes from r2 at once
            for x in range(V):
                if not qc[x]:
                    continue
                a = min(ONE, r[x] / qc[x])
                if a:
                    out[((x,), path + (c,))] += weight * qc[x] * a
                if a < 1:
                    if r2 is None:
                        r2 = normalise([max(ZERO, r[y] - qc[y]) for y in range(V)])
                    if c + 1 == k or rest == q[x]:
                        last += weight * qc[x] * (1 - a)
                    else:
                        walk(c + 1, r2, drawn + (x,), weight * qc[x] * (1 - a), True)
            if last and r2 is not None:
                bonus(r2, last)

        walk(0, p, (), ONE, False)
        self._moves[key] = dict(out)
        return self._moves[key]

    def step(self, ctx: Context, m: int, node: Node) -> dict[Move, Fraction]:
        """One move for `compose`: from `START` the first token, drawn from the processed p (the round's
        root); from a tree node, `moves`."""
        if node is None:  # START
            return {((t,), ()): pt for t, pt in enumerate(self.p.row(list(ctx))) if pt}
        return self.moves(node, ctx)

    def token_law(self, context: Context, n: int, *, show: bool | None = None) -> Law:
        """Law of the first n tokens eagenerate emits from `context` (the first from the processed p,
        the round's root), the moves composed (`rheo_ref.laws.compose`). `show`: the progress bar
        (None: on a terminal only)."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise CaseError(f"n={n!r} must be an integer >= 1")
        describe = lambda node: "none (the first token)" if node is START else list(node)
        with LawProgress("eagle exact law", n, context, state_name="tree node", describe=describe, show=show) as bar:
            return compose(self.step, context, n, state=START, progress=bar)
