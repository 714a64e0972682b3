"""Exact round laws of the static family (docs/SCHEMES.md), by two methods that must agree.

`brute`: every joint draw of every node (iid: |supp|^k per node with k children; wor: the ordered
draws without replacement), each tree verified by `rheo_ref.verifier_laws.verify_tree_law`'s rules.

`classes` (the subtree recursion): a child's subtree is drawn independently of its siblings
given the child's token, and what happens at its parent after the child is left depends only on
that token. So a child enters its parent's computation only through the law of its subtree
averaged over the subtree's draws, computed once per context the models can tell apart:
- top-down (`specinfer`, `rrsw`): `node_law(c, shape)` is the law of what verification emits
  from a node with context c; the parent accepts child x (prob a) and then emits x followed by
  `node_law(c + x, shape of x)`, or rejects it and moves on with its residual. The recursion
  over the siblings carries (sibling index, r, s, tokens drawn so far).
- `traversal`: a child's subtree is visited completely before its next sibling, and inside it
  only the child's incoming rate α (min(1, α·Mb(x)/Ms(x)) at the parent) matters; the parent's
  state is updated only once the whole child is rejected. So `traversal_node(c, shape, α)`
  returns (law emitted on an accept inside the subtree, probability that the whole subtree is
  rejected), memoised by (context, shape, α), and the recursion over siblings carries the
  parent's (α, Mb, Ms, tokens drawn so far).

Both read the family's settings, a `rheo_ref.verifier_laws.VerifierSteps` (the spec's, or a
mutant's: `rheo_ref.variants.Variant.steps_of`), so a mutant of the static family gets its exact
law from the same code: `brute` every setting; `classes` the ones
that change a step inside a node (`proposal_update`, `traversal_rate`, `ms_update`,
`traversal_bonus`) and refuses those that make the order of the tries depend on more than one
subtree (`sibling_order`, `leaf_order`: `ORDER_SETTINGS`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator, Sequence
from fractions import Fraction

from rheo_ref.errors import CaseError
from rheo_ref.families.static.scheme import (
    Shape,
    StaticScheme,
    children_lists,
    estimate_brute,
    estimate_subtrees,
    next_draw,
)
from rheo_ref.laws import Law
from rheo_ref.models import Case, Context, Row
from rheo_ref.variants import SPEC, Variant
from rheo_ref.verifier_laws import (
    VERIFIER_SPEC,
    DraftTree,
    VerifierSteps,
    child_rate,
    topdown_accept,
    topdown_law,
    topdown_reject,
    traversal_law,
    traversal_reject,
)

METHODS = ("classes", "brute")
ORDER_SETTINGS = ("sibling_order", "leaf_order")  # settings the subtree recursion cannot model (brute only)
ZERO, ONE = Fraction(0), Fraction(1)


def context_length(case: Case) -> int:
    """How many last tokens of a context any of the case's models can see."""
    return max(case.draft.context_length, case.q_samp_model.context_length, case.target.context_length)


def q_support(case: Case) -> int:
    """The largest support of a q_samp row: the most tokens one draw can give."""
    return max(sum(1 for x in row if x) for row in case.q_samp_model.probs.values())


def estimate(case: Case, method: str, variant: Variant = SPEC) -> int:
    """An upper bound of the outcomes one round visits: joint draws (brute) or sibling steps
    (classes; dp is the subtree recursion too), whatever the variant."""
    method = "classes" if method == "dp" else method
    s = q_support(case)
    if method == "brute":
        return estimate_brute(case.scheme_as(StaticScheme), s)
    if method == "classes":
        return estimate_subtrees(case.scheme_as(StaticScheme), s, case.vocab_size ** context_length(case))
    raise CaseError(f"unknown method {method!r}; allowed: {', '.join(METHODS)}")


def _add(out: Law, weight: Fraction, head: tuple[int, ...], law: Law) -> None:
    """out += weight * (head followed by law)."""
    if weight:
        for seq, pr in law.items():
            out[head + seq] += weight * pr


def _bonus(r: Row) -> Law:
    return {(y,): ry for y, ry in enumerate(r) if ry}


# --- brute -------------------------------------------------------------------------------------


def draws_of_tree(case: Case, context: Context) -> Iterator[tuple[Fraction, DraftTree]]:
    """(probability, DraftTree) for every joint draw of a round's nodes; under `wor` a node past
    its parent's support is not drafted, and neither is its subtree."""
    sch, q = case.scheme_as(StaticScheme), case.q_samp_model
    assert isinstance(sch, StaticScheme)
    kids = children_lists(sch.parents)
    N = sch.nodes

    def draw(v: int, tokens: list, prob: Fraction):
        if v > N:
            yield prob, _present(sch.parents, tokens)
            return
        u = sch.parents[v - 1]
        if u and tokens[u - 1] is None:  # the parent was not drafted
            yield from draw(v + 1, tokens + [None], prob)
            return
        drawn = [tokens[c - 1] for c in kids[u] if c < v and tokens[c - 1] is not None]
        law = next_draw(q.row(tuple(context) + _path(sch.parents, tokens, u)), drawn, sch.sampling)
        if not law:  # wor: the parent's support is used up
            yield from draw(v + 1, tokens + [None], prob)
            return
        for x, px in law:
            yield from draw(v + 1, tokens + [x], prob * px)

    yield from draw(1, [], ONE)


def _path(parents: Sequence[int], tokens: Sequence[int | None], v: int) -> tuple[int, ...]:
    out: list[int] = []
    while v > 0:
        t = tokens[v - 1]
        if t is None:
            raise CaseError(f"node {v} on the path has no token yet")
        out.append(t)
        v = parents[v - 1]
    return tuple(reversed(out))


def _present(parents: Sequence[int], tokens: Sequence[int | None]) -> DraftTree:
    """The tree of the drafted nodes, renumbered in creation order."""
    new_id = {0: 0}
    ps: list[int] = []
    ts: list[int] = []
    for i, (u, x) in enumerate(zip(parents, tokens), start=1):
        if x is not None:
            new_id[i] = len(ps) + 1
            ps.append(new_id[u])
            ts.append(x)
    return DraftTree(tuple(ps), tuple(ts))


def brute_round_law(case: Case, context: Context, steps: VerifierSteps = VERIFIER_SPEC) -> tuple[Law, int]:
    """(round law, trees enumerated)."""
    sch = case.scheme_as(StaticScheme)
    law: Law = defaultdict(Fraction)
    trees = 0
    for prob, tree in draws_of_tree(case, context):
        trees += 1
        if sch.verify == "traversal":
            sub = traversal_law(tree, case.target, case.q_samp_model, context, sch.sampling, steps)
        else:
            sub = topdown_law(tree, case.target, case.q_samp_model, context, sch.verify, steps, sch.weight)
        _add(law, prob, (), sub)
    return dict(law), trees


# --- the subtree recursion ---------------------------------------------------------------------


class SubtreeLaws:
    """Memoised subtree laws of one static case (shared by all the rounds of a computation)."""

    def __init__(self, case: Case, variant: Variant = SPEC) -> None:
        self.p, self.q, self.scheme = case.target, case.q_samp_model, case.scheme_as(StaticScheme)
        self.settings: VerifierSteps = variant.steps_of("static")
        order = [name for name in ORDER_SETTINGS if name in variant.changed()]
        if order:
            raise CaseError(
                f"variant {variant.name!r} changes {order[0]}: the subtree recursion (method 'classes') "
                f"cannot order tries across subtrees; use method 'brute'"
            )
        self.L = context_length(case)
        self.steps = 0  # sibling draws visited (memo misses only)
        self._nodes: dict = {}
        self._siblings: dict = {}

    def key(self, context: Context) -> Context:
        """The part of a context the models can see."""
        return tuple(context)[-self.L :] if self.L else ()

    def round_law(self, context: Context) -> Law:
        ctx, shape = self.key(context), self.scheme.shape
        if self.scheme.verify == "traversal":
            law, rejected = self.traversal_node(ctx, shape, ONE, root=True)
            assert rejected == 0, "the root is never rejected"
            return law
        return self.node_law(ctx, shape)

    def _draw(self, ctx: Context, drawn: tuple[int, ...]) -> list[tuple[int, Fraction]]:
        return next_draw(self.q.row(ctx), drawn, self.scheme.sampling)

    def _drawn_after(self, drawn: tuple[int, ...], x: int) -> tuple[int, ...]:
        """Tokens drawn at a node, as far as its next draw cares (iid: none)."""
        return tuple(sorted(drawn + (x,))) if self.scheme.sampling == "wor" else ()

    # top-down: specinfer, rrsw

    def node_law(self, ctx: Context, shape: Shape) -> Law:
        """Law of what a top-down verifier emits from a node with context ctx and this subtree shape."""
        key = (ctx, shape)
        if key not in self._nodes:
            self._nodes[key] = self.sibling_law(ctx, shape, 0, self.p.row(ctx), self.q.row(ctx), ())
        return self._nodes[key]

    def sibling_law(self, ctx: Context, shape: Shape, i: int, r: Row, s: Row, drawn: tuple[int, ...]) -> Law:
        """From child i on, with residual r, verifier row s (specinfer: q; rrsw: q without the
        rejected tokens) and the tokens drawn so far at this node."""
        key = (ctx, shape, i, r, s, drawn)
        if key in self._siblings:
            return self._siblings[key]
        draws = self._draw(ctx, drawn) if i < len(shape) else []
        if not draws:  # no child left (or wor's support used up): the bonus
            self._siblings[key] = _bonus(r)
            return self._siblings[key]
        verify = self.scheme.verify
        out: Law = defaultdict(Fraction)
        for x, px in draws:
            self.steps += 1
            nxt = self._drawn_after(drawn, x)
            if verify == "rrsw" and s[x] == 0:  # a duplicate: skipped
                _add(out, px, (), self.sibling_law(ctx, shape, i + 1, r, s, nxt))
                continue
            a = topdown_accept(r, s, x, verify, self.scheme.weight)
            if a:
                _add(out, px * a, (x,), self.node_law(self.key(ctx + (x,)), shape[i]))
            if a < 1:
                r2, s2 = topdown_reject(r, s, x, verify, self.settings)
                _add(out, px * (1 - a), (), self.sibling_law(ctx, shape, i + 1, r2, s2, nxt))
        self._siblings[key] = dict(out)
        return self._siblings[key]

    # traversal

    def traversal_node(
        self, ctx: Context, shape: Shape, alpha: Fraction, *, root: bool = False
    ) -> tuple[Law, Fraction]:
        """(law emitted when the round ends inside this subtree, P(the whole subtree is rejected))
        for a node with context ctx, this shape and incoming rate α."""
        key = (ctx, shape, alpha, root)
        if key not in self._nodes:
            self._nodes[key] = self.traversal_siblings(ctx, shape, 0, alpha, self.p.row(ctx), self.q.row(ctx), (), root)
        return self._nodes[key]

    def traversal_siblings(
        self, ctx: Context, shape: Shape, i: int, alpha: Fraction, Mb: Row, Ms: Row, drawn: tuple[int, ...], root: bool
    ) -> tuple[Law, Fraction]:
        """From child i on, the node being in state (α, Mb, Ms) with `drawn` tokens drawn so far."""
        key = (ctx, shape, i, alpha, Mb, Ms, drawn, root)
        if key in self._siblings:
            return self._siblings[key]
        draws = self._draw(ctx, drawn) if i < len(shape) else []
        if not draws:  # the node is now a leaf: accept its path w.p. α, bonus from Mb (or p: `traversal_bonus`)
            bonus = self.p.row(ctx) if self.settings.traversal_bonus == "target" else Mb
            self._siblings[key] = ({(y,): alpha * b for y, b in enumerate(bonus) if alpha * b}, 1 - alpha)
            return self._siblings[key]
        out: Law = defaultdict(Fraction)
        rejected = ZERO
        for x, px in draws:
            self.steps += 1
            accepted_below, rej = self.traversal_node(self.key(ctx + (x,)), shape[i], child_rate(alpha, Mb, Ms, x))
            _add(out, px, (x,), accepted_below)
            if rej:
                a2, Mb2, Ms2 = traversal_reject(alpha, Mb, Ms, x, self.scheme.sampling, root=root, steps=self.settings)
                law, rej2 = self.traversal_siblings(ctx, shape, i + 1, a2, Mb2, Ms2, self._drawn_after(drawn, x), root)
                _add(out, px * rej, (), law)
                rejected += px * rej * rej2
        self._siblings[key] = (dict(out), rejected)
        return self._siblings[key]


class StaticRounds:
    """Round laws of a static case by one method (under a variant's settings, the spec by
    default); `enumerated` counts trees (brute) or sibling draws visited (classes) over every
    round computed."""

    def __init__(self, case: Case, method: str, variant: Variant = SPEC) -> None:
        if method not in METHODS:
            raise CaseError(f"unknown method {method!r}; allowed: {', '.join(METHODS)}")
        self.settings: VerifierSteps = variant.steps_of("static")
        self.case, self.method, self.variant = case, method, variant
        self.enumerated = 0
        self._subtrees = SubtreeLaws(case, variant) if method == "classes" else None

    def round_law(self, context: Context) -> Law:
        if self._subtrees is None:
            law, trees = brute_round_law(self.case, tuple(context), self.settings)
            self.enumerated += trees
            return law
        before = self._subtrees.steps
        law = self._subtrees.round_law(tuple(context))
        self.enumerated += self._subtrees.steps - before
        return law
