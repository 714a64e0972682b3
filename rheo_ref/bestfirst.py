"""The `dp` round law of the rheo family: kept trees grown best-first and lazily, merged, and
verified by a memoised recursion over kept subtrees (docs/EXACT_AT_SCALE.md).

1. **Best-first.** The global rerank keeps the R nodes first in `rerank_key` order, and a
   frontier is the W nodes of a depth first in that same order. Since a child never outranks
   its parent, popping created nodes in that order gives exactly the kept set (the first R pops)
   and the frontiers (the first W pops of each depth). Nothing ranked after the R-th pop can
   change a kept node, so the round stops there, and the rest of the tree is never built.
2. **Lazy expansion.** Popping a frontier node does not create its children: it queues their
   *expansion* at the best key any of them can have. Only when that entry comes first can a child
   enter the kept set; then the node, if it holds a class of sampled tokens, is split into single
   tokens, and its K children are created (one branch per class of its own sampled slot).
3. **Merging.** Different branches that end with the same kept tree (as verification sees it:
   kinds, slots, tokens) are one outcome; their probabilities add.
4. **Memoised verification.** What verification emits below a node depends only on the node's
   context (as far as the models see it) and its kept subtree: `KeptLaws` computes it once.

Ids: a node is created when its parent, the f-th frontier node of its depth, is expanded, so its
creation id orders like (depth, f, slot), and `Key` (-score, depth, f, slot) orders like
`rerank_key`.
"""
from __future__ import annotations

from bisect import insort
from collections import defaultdict
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Callable, Iterator

from .enumerate import ClassChooser
from .errors import TooLargeError
from .models import Case, Context, Row, Scheme
from .slots import Expansion, expand, proxy_factor, ranked
from .tree import Node, Nodes, path_tokens
from .verify import Law, level_law, verification_order

ZERO, ONE = Fraction(0), Fraction(1)
Key = tuple[Fraction, int, int, int]  # (-score, depth, parent's frontier index, slot); slot -1: an expansion
Shape = tuple  # a kept subtree as verification sees it: ((kind, slot, tokens, Shape of the child), ...)


@dataclass(frozen=True, order=True)
class Entry:
    """An entry of the best-first queue: a created node waiting to be popped, or (node None) the
    expansion of kept node `parent`, keyed by the best key any of its children can have."""

    key: Key
    node: Node | None = field(compare=False, default=None)
    parent: int = field(compare=False, default=0)  # the kept node to expand (expansions only)


def best_factor(plan: Expansion) -> Fraction:
    """The largest factor any child of this expansion can have: q_rank(x_1), or the sampled slot's
    proxy when it is larger (const:a, scaled:s)."""
    top = plan.q_rank[plan.order[0]]
    return max(top, plan.factor_for(plan.support()[0])) if plan.qtilde is not None else top


class Plans:
    """The expansion plan of each context, by the part of it the models see (a pure function)."""

    def __init__(self, case: Case) -> None:
        self.case, self.scheme = case, case.rheo_scheme()
        self._plans: dict[Context, Expansion] = {}

    def memo(self, ctx: Context) -> Context:
        return self.case.visible(ctx)

    def __call__(self, ctx: Context) -> Expansion:
        key = self.memo(ctx)
        if key not in self._plans:
            s = self.scheme
            self._plans[key] = expand(self.case.draft.row(ctx), self.case.q_samp_model.row(ctx), s.K, s.m, s.proxy)
        return self._plans[key]


def check_factors_at_most_one(case: Case) -> None:
    """Best-first needs every factor <= 1 (a child never outranks its parent). Only scaled:s with
    s > 1 can break it. The full enumerations refuse it at an expansion they make; `dp` makes few
    of them, so it refuses it up front, at any draft row (`proxy_factor` raises)."""
    s = case.rheo_scheme()
    if s.proxy.kind != "scaled" or s.m >= s.K:
        return
    for row in case.draft.probs.values():
        order = ranked(row)
        proxy_factor(s.proxy, row, order, s.m, sum((row[t] for t in order[s.m:]), ZERO), order[s.m])


def kept_trees(case: Case, context: Context, plans: Plans) -> Iterator[tuple[Fraction, Nodes]]:
    """(probability, kept nodes in pop order) of every branch of the best-first construction of one
    round from `context`. Node ids are pop indices (the root is 0); a sampled node that was never
    expanded may still hold a class of tokens."""
    scheme: Scheme = case.rheo_scheme()
    context = tuple(context)
    chooser = ClassChooser()

    def expansion(kept: Nodes, node: Node, f: int) -> Entry:
        """Queue the expansion of kept node `node`, the f-th frontier node of its depth, at the best
        key any of its children can have, whichever token of its class the node holds."""
        if node.id == 0:
            best = best_factor(plans(context))
        else:
            above = context + path_tokens(kept, node.parent)
            best = max(best_factor(plans(above + (y,))) for y in node.tokens)
        return Entry((-node.score * best, node.depth + 1, f, -1), None, node.id)

    def children(parent: Node, f: int, ctx: Context) -> list[tuple[Fraction, list[Entry]]]:
        """The K children of `parent` (context ctx): one alternative per class of its sampled slot."""
        plan = plans(ctx)

        def entry(slot: int, tokens: tuple[int, ...], kind: str, factor: Fraction, qt: Row | None = None) -> Entry:
            score, depth = parent.score * factor, parent.depth + 1
            return Entry((-score, depth, f, slot), Node(-1, parent.id, depth, kind, slot, tokens, score, qt))

        dets = [entry(i, (t,), "det", q) for i, (t, q) in enumerate(plan.det)]
        if plan.qtilde is None:
            return [(ONE, dets)]
        m, out = scheme.m, []
        for w, ys in chooser.sample_groups(plan, parent):
            sampled = entry(m, ys, "sampled", plan.factor_for(ys[0]), plan.qtilde)
            fills = [entry(m + 1 + i, (t,), "fill", q) for i, (t, q) in enumerate(plan.fills_for(ys[0]))]
            out.append((w, dets + [sampled] + fills))
        return out

    Outcome = Iterator[tuple[Fraction, Nodes]]

    def grow(queue: list[Entry], kept: Nodes, pops_at: tuple[int, ...], prob: Fraction) -> Outcome:
        """Pop in key order until R nodes are kept; branch where an expansion needs a choice."""
        while queue and len(kept) <= scheme.R:  # kept holds the root too
            head, queue = queue[0], queue[1:]
            if head.node is not None:  # pop: this node is kept
                node = replace(head.node, id=len(kept))
                kept = kept + (node,)
                d = node.depth
                if d < scheme.D and pops_at[d] < scheme.W:  # in its depth's frontier
                    insort(queue, expansion(kept, node, pops_at[d]))
                pops_at = pops_at[:d] + (pops_at[d] + 1,) + pops_at[d + 1:]
                continue
            # an expansion comes first: split its node if it holds a class, then create its children.
            node, f = kept[head.parent], head.key[2]
            tokens = [(ONE, node.tokens)] if len(node.tokens) <= 1 else [(w, (y,)) for w, y in chooser.resolve(node)]
            for w, split in ((w, replace(node, tokens=ys)) for w, ys in tokens):
                now = kept[:split.id] + (split,) + kept[split.id + 1:]
                for w2, kids in children(split, f, context + path_tokens(now, split.id)):
                    yield from grow(sorted(queue + kids), now, pops_at, prob * w * w2)
            return
        yield prob, kept

    root = Node(0, -1, 0, "root", -1, (), ONE)
    yield from grow([expansion((root,), root, 0)], (root,), (0,) * (scheme.D + 1), ONE)


def shape_of(kept: Nodes, nid: int = 0) -> Shape:
    """The kept subtree below node `nid` as verification sees it (kinds, slots, tokens)."""
    kids = sorted((n for n in kept[1:] if n.parent == nid), key=lambda n: n.slot)
    return tuple((n.kind, n.slot, n.tokens, shape_of(kept, n.id)) for n in kids)


class KeptLaws:
    """What verification emits below a node, memoised by (context as the models see it, kept
    subtree). A node's law depends on nothing else: it starts from r = p at its context, and its
    children's kinds, tokens and q̃ (the latter fixed by the context) decide the rest."""

    def __init__(self, case: Case, plans: Plans) -> None:
        self.case, self.plans = case, plans
        self._laws: dict[tuple[Context, Shape], Law] = {}

    def law(self, ctx: Context, shape: Shape) -> Law:
        ctx = self.plans.memo(ctx)
        key = (ctx, shape)
        if key not in self._laws:
            qt = self.plans(ctx).qtilde if shape else None
            kids = [Node(i, 0, 0, kind, slot, tokens, ZERO, qt if kind == "sampled" else None)
                    for i, (kind, slot, tokens, _) in enumerate(shape)]

            def below(ch: Node, y: int, r) -> Law:
                return self.law(ctx + (y,), shape[ch.id][3])

            order = verification_order(kids, self.case.rheo_scheme().verify)
            self._laws[key] = dict(level_law(self.case.target.row(ctx), order, below))
        return self._laws[key]


class BestFirstRounds:
    """Round laws of a rheo-family case by `dp`. `enumerated` counts the branches (kept trees
    before merging) over every round computed; `max_outcomes` bounds them per round."""

    def __init__(self, case: Case, *, max_outcomes: int | None = None,
                 progress: Callable[[int], None] | None = None) -> None:
        check_factors_at_most_one(case)
        self.case = case
        self.plans = Plans(case)
        self.laws = KeptLaws(case, self.plans)
        self.enumerated = 0
        self.distinct = 0
        self.max_outcomes, self.progress = max_outcomes, progress

    def round_law(self, context: Context) -> Law:
        merged: dict[Shape, Fraction] = defaultdict(Fraction)
        n = 0
        for prob, kept in kept_trees(self.case, context, self.plans):
            merged[shape_of(kept)] += prob
            n += 1
            if self.progress is not None:
                self.progress(1)
            if self.max_outcomes is not None and n > self.max_outcomes:
                raise TooLargeError(f"method 'dp' passed {self.max_outcomes:,} kept trees in one round (the limit); "
                                    f"use a smaller scheme, or --force to run anyway")
        self.enumerated += n
        self.distinct += len(merged)
        law: Law = defaultdict(Fraction)
        for shape, prob in merged.items():
            for s, pr in self.laws.law(tuple(context), shape).items():
                law[s] += prob * pr
        return dict(law)

