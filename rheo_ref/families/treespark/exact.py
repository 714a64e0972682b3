"""Family `treespark`: the round's builder and its exact round law (docs/SCHEMES.md §13).

`Builder` is one round's state, exactly as the spec's loop (SCHEMES.md §5) runs it:
- a *slot* of node v is "v's next child", pushed with its bound surv(v)·g(max q_rank(x|v) over
  the x not yet drawn at v with q_samp(x|v) > 0) and an insertion index (a counter);
- `next_slot` pops the best slot (bound descending, then insertion order) or says the round
  stops: N nodes, an empty heap, or θ > 0 and the best bound < θ (strict);
- `add` draws nothing itself: it takes the drawn token x (the caller draws it from `draw_row`,
  q_samp(.|v) with the tokens already drawn at v zeroed), creates the child u = (v, x) with
  surv(u) = surv(v)·g(q_rank(x|v)), pushes u's slot if depth(u) < D and u has a token to draw,
  then v's slot again if v has < k children and a token left.
The slot is admitted before its token is drawn. Node ids are in creation order (root 0), so the
tree is a `rheo_ref.verifier_laws.DraftTree` whose children lists are in draw order.

A variant's `admission` setting "own_survival" (the mutant `treespark-own-survival`) replaces the
bound test: the popped slot's token is drawn, and if θ > 0 and its own survival
surv(v)·g(q_rank(x|v)) < θ the draw is discarded and the round stops (`own_survival_stops`).

Exact round law, two methods that must agree:
- `brute`: branch over every draw (each draw over the rest of q_samp(.|v)); every finished tree
  weighted by the product of its draws' probabilities and verified by `rheo_ref.verifier_laws`
  (`rrsw`, or `traversal` with the wor update).
- `classes`: the same enumeration of trees (the tree's shape depends on every token drawn
  anywhere, through the heap, so the static family's recursion over subtree *shapes* does not
  apply), but each tree's verification law from subtree laws memoised across trees by
  (visible context, subtree with tokens) (rrsw) or (visible context, subtree, incoming α)
  (traversal). Every draw sequence gives a different tree (the builder is a deterministic
  function of the tokens it drew, and the tree lists them in creation order), so there are no
  draw sequences to merge; the memo saves the verification work of shared subtrees only.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from math import prod

from rheo_ref.errors import CaseError
from rheo_ref.families.static.scheme import next_draw
from rheo_ref.families.treespark.scheme import Score, TreeSparkScheme
from rheo_ref.families.treespark.settings import TreeSparkSteps
from rheo_ref.laws import Law
from rheo_ref.models import Case, Context, Row, TableModel
from rheo_ref.variants import SPEC, Variant
from rheo_ref.verifier_laws import (
    DraftTree,
    child_rate,
    rrsw_accept,
    rrsw_reject,
    topdown_law,
    traversal_law,
    traversal_reject,
)

METHODS = ("classes", "brute")
ZERO, ONE = Fraction(0), Fraction(1)
Subtree = tuple[tuple[int, "Subtree"], ...]  # a node's children (token, subtree) in draw order


def slot_bound(scheme: TreeSparkScheme, surv: Score, q_rank: Row, q_samp: Row, drawn: list[int]) -> Score | None:
    """surv·g(max q_rank(x) over x not drawn with q_samp(x) > 0); None when no token is left."""
    left = [q_rank[x] for x, qs in enumerate(q_samp) if qs and x not in drawn]
    if not left:
        return None
    return surv * scheme.calibration(max(left))


@dataclass
class Builder:
    """One round's draft tree under construction (see the module docstring)."""

    case: Case
    context: Context
    steps: TreeSparkSteps = field(default_factory=TreeSparkSteps)  # the family's settings (a mutant's or the spec)
    parents: list[int] = field(default_factory=list)  # node i+1's parent
    tokens: list[int] = field(default_factory=list)  # node i+1's token
    depth: list[int] = field(default_factory=lambda: [0])
    surv: list[Score] = field(default_factory=lambda: [ONE])
    drawn: list[list[int]] = field(default_factory=lambda: [[]])  # tokens drawn at each node, in order
    heap: list[tuple[Score, int, int]] = field(default_factory=list)  # (bound, insertion index, node)
    pushes: int = 0
    stopped: bool = False

    def __post_init__(self) -> None:
        self.scheme = self.case.scheme_as(TreeSparkScheme)
        self.q_rank, self.q_samp = self.case.draft, self.case.q_samp_model

    @classmethod
    def start(cls, case: Case, context: Context, variant: Variant = SPEC) -> Builder:
        """A round's start: the root alone, its slot in the heap."""
        b = cls(case, tuple(context), variant.steps_of("treespark"))
        b._push(0)
        return b

    def clone(self) -> Builder:
        b = Builder(
            self.case,
            self.context,
            self.steps,
            list(self.parents),
            list(self.tokens),
            list(self.depth),
            list(self.surv),
            [list(d) for d in self.drawn],
            list(self.heap),
            self.pushes,
            self.stopped,
        )
        return b

    @property
    def n(self) -> int:
        """Draft nodes so far."""
        return len(self.tokens)

    def ctx(self, v: int) -> Context:
        path: list[int] = []
        while v > 0:
            path.append(self.tokens[v - 1])
            v = self.parents[v - 1]
        return tuple(self.context) + tuple(reversed(path))

    def rows(self, v: int, model: TableModel) -> Row:
        return model.row(self.ctx(v))

    def _push(self, v: int) -> None:
        b = slot_bound(self.scheme, self.surv[v], self.rows(v, self.q_rank), self.rows(v, self.q_samp), self.drawn[v])
        if b is not None:
            self.heap.append((b, self.pushes, v))
            self.pushes += 1

    def best(self) -> tuple[Score, int, int] | None:
        """The best slot (bound descending, then insertion order), not popped; None: empty heap."""
        if not self.heap:
            return None
        return min(self.heap, key=lambda e: (-e[0], e[1]))

    def next_slot(self) -> int | None:
        """Pop the best slot and return its node, or None when the round stops (N nodes, empty
        heap, or θ > 0 and the best bound < θ; the own-survival variant skips the bound test)."""
        top = None if self.stopped or self.n >= self.scheme.N else self.best()
        if top is None:
            self.stopped = True
            return None
        bound, _, v = top
        theta = self.scheme.theta
        if self.steps.admission == "slot" and theta > 0 and bound < theta:
            self.stopped = True
            return None
        self.heap.remove(top)
        return v

    def draw_row(self, v: int) -> Row:
        """q_samp(.|v) with the tokens drawn at v zeroed (unnormalised; mass > 0 for a popped slot)."""
        return tuple(ZERO if t in self.drawn[v] else x for t, x in enumerate(self.rows(v, self.q_samp)))

    def draw_law(self, v: int) -> list[tuple[int, Fraction]]:
        return next_draw(self.rows(v, self.q_samp), self.drawn[v], "wor")

    def own_survival(self, v: int, x: int) -> Score:
        return self.surv[v] * self.scheme.calibration(self.rows(v, self.q_rank)[x])

    def own_survival_stops(self, v: int, x: int) -> bool:
        """Under the own-survival variant: whether the drawn x fails surv(v)·g(q_rank(x|v)) >= θ
        (then the draw is discarded and the round stops)."""
        theta = self.scheme.theta
        if self.steps.admission == "own_survival" and theta > 0 and self.own_survival(v, x) < theta:
            self.stopped = True
            return True
        return False

    def add(self, v: int, x: int) -> int:
        """Create child u = (v, x) and push the slots; returns u."""
        self.parents.append(v)
        self.tokens.append(x)
        u = self.n
        self.depth.append(self.depth[v] + 1)
        self.surv.append(self.own_survival(v, x))
        self.drawn[v].append(x)
        self.drawn.append([])
        if self.depth[u] < self.scheme.D:
            self._push(u)
        if len(self.drawn[v]) < self.scheme.k:
            self._push(v)
        return u

    def tree(self) -> DraftTree:
        return DraftTree(tuple(self.parents), tuple(self.tokens))


def draws_of_round(case: Case, context: Context, variant: Variant = SPEC) -> Iterator[tuple[Fraction, DraftTree]]:
    """(probability, tree) for every draw sequence of one round (a loop over pending builders)."""
    pending = [(ONE, Builder.start(case, context, variant))]
    while pending:
        prob, b = pending.pop()
        v = b.next_slot()
        if v is None:
            yield prob, b.tree()
            continue
        for x, px in b.draw_law(v):
            nb = b.clone()
            if nb.own_survival_stops(v, x):
                yield prob * px, nb.tree()
                continue
            nb.add(v, x)
            pending.append((prob * px, nb))


def estimate(case: Case, method: str = "classes", variant: Variant = SPEC) -> int:
    """An upper bound of the trees of one round: each of the N draws has at most s outcomes (s:
    the largest q_samp support), so s^N (summed over the rounds that stop early: at most that),
    whatever the method and variant."""
    s = max(sum(1 for x in row if x) for row in case.q_samp_model.probs.values())
    sch = case.scheme_as(TreeSparkScheme)
    return sum(prod([s] * i) for i in range(sch.N + 1))


class SubtreeVerifier:
    """Verification laws of given trees, memoised by subtree (method `classes`)."""

    def __init__(self, case: Case) -> None:
        self.p, self.q = case.target, case.q_samp_model
        self.L = max(case.draft.context_length, case.q_samp_model.context_length, case.target.context_length)
        self._memo: dict = {}

    def key(self, ctx: Context) -> Context:
        return tuple(ctx)[-self.L :] if self.L else ()

    def law(self, tree: DraftTree, context: Context, verify: str) -> Law:
        sub = subtree_of(tree)
        ctx = self.key(context)
        if verify == "rrsw":
            return self.rrsw(ctx, sub)
        law, rejected = self.traversal(ctx, sub, ONE, True)
        assert rejected == 0, "the root is never rejected"
        return law

    def rrsw(self, ctx: Context, sub: Subtree) -> Law:
        key = ("rrsw", ctx, sub)
        if key in self._memo:
            return self._memo[key]
        r, s = self.p.row(ctx), self.q.row(ctx)
        out: Law = defaultdict(Fraction)
        stay = ONE
        for x, child in sub:
            a = rrsw_accept(r, s, x)
            if a:
                for seq, pr in self.rrsw(self.key(ctx + (x,)), child).items():
                    out[(x,) + seq] += stay * a * pr
            stay *= 1 - a
            if not stay:
                break
            r, s = rrsw_reject(r, s, x)
        if stay:
            for y, ry in enumerate(r):
                if ry:
                    out[(y,)] += stay * ry
        self._memo[key] = dict(out)
        return self._memo[key]

    def traversal(self, ctx: Context, sub: Subtree, alpha: Fraction, root: bool) -> tuple[Law, Fraction]:
        """(law emitted when the round ends inside this subtree, P(the whole subtree is rejected))."""
        key = ("traversal", ctx, sub, alpha, root)
        if key in self._memo:
            return self._memo[key]
        Mb, Ms = self.p.row(ctx), self.q.row(ctx)
        out: Law = defaultdict(Fraction)
        stay = ONE  # every child so far rejected with its subtree
        for x, child in sub:
            below, rej = self.traversal(self.key(ctx + (x,)), child, child_rate(alpha, Mb, Ms, x), False)
            for seq, pr in below.items():
                out[(x,) + seq] += stay * pr
            stay *= rej
            if not stay:
                break
            alpha, Mb, Ms = traversal_reject(alpha, Mb, Ms, x, "wor", root=root)
        for y, by in enumerate(Mb):
            if stay * alpha * by:
                out[(y,)] += stay * alpha * by
        self._memo[key] = (dict(out), stay * (1 - alpha))
        return self._memo[key]


def subtree_of(tree: DraftTree, v: int = 0) -> Subtree:
    kids = tree.children()

    def sub(u: int) -> Subtree:
        return tuple((tree.token(c), sub(c)) for c in kids[u])

    return sub(v)


class TreeSparkRounds:
    """Round laws of a treespark case by one method (under a variant: the spec by default);
    `enumerated` counts the trees verified over every round computed."""

    def __init__(self, case: Case, method: str, variant: Variant = SPEC) -> None:
        if method not in METHODS:
            raise CaseError(f"unknown treespark method {method!r}; allowed: {', '.join(METHODS)}")
        variant.check_family("treespark")  # (its rounds read the settings through the builder)
        self.case, self.method, self.variant = case, method, variant
        self.scheme = case.scheme_as(TreeSparkScheme)
        self.enumerated = 0
        self._sub = SubtreeVerifier(case) if method == "classes" else None

    def verify_law(self, tree: DraftTree, context: Context) -> Law:
        if self._sub is not None:
            return self._sub.law(tree, context, self.scheme.verify)
        p, q = self.case.target, self.case.q_samp_model
        if self.scheme.verify == "traversal":
            return traversal_law(tree, p, q, tuple(context), "wor")
        return topdown_law(tree, p, q, tuple(context), "rrsw")

    def round_law(self, context: Context) -> Law:
        law: Law = defaultdict(Fraction)
        for prob, tree in draws_of_round(self.case, tuple(context), self.variant):
            self.enumerated += 1
            for seq, pr in self.verify_law(tree, context).items():
                law[seq] += prob * pr
        return dict(law)
