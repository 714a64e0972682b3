"""The `dp` round law of the rheo family: kept trees grown best-first and lazily, merged, and
verified together, pushed down level by level (docs/EXACT_AT_SCALE.md).

1. **Best-first.** The global rerank keeps the R nodes first in `rerank_key` order, and a
   frontier is the W nodes of a depth first in that same order. Since a child never outranks
   its parent, popping created nodes in that order gives exactly the kept set (the first R pops)
   and the frontiers (the first W pops of each depth). Nothing ranked after the R-th pop can
   change a kept node, so the round stops there, and the rest of the tree is never built.
2. **Lazy choices.** A random choice is made only when an entry whose key depends on it comes
   first in the queue; until then the queue holds the best key it can give:
   - popping a frontier node queues its *expansion*; when that comes first, the node (if it holds
     a class of sampled tokens) is split into single tokens and its K children are created;
   - a sampled child whose factor does not depend on y is created holding its whole support,
     and its fills wait behind one entry; when that comes first, the class of y is chosen (as in
     `classes`: the ids that give the same fills) and the fills are created.
3. **Merging.** Branches that end with the same kept tree (as verification sees it: kinds,
   slots, tokens) are one outcome; their probabilities add.
4. **Verification pushed down.** Verification's law is linear in what each accepted child's
   subtree emits, so the merged kept trees are verified together, one level at a time: weights
   flow from a node to its kept children and add up wherever trees share a subtree (`KeptLaws`).

Ids: a node is created when its parent, the f-th frontier node of its depth, is expanded, so its
creation id orders like (depth, f, slot), and `Key` (-score as a float then exactly, depth, f, slot) orders like
`rerank_key`.
"""

from __future__ import annotations

from bisect import insort
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from fractions import Fraction

from rheo_ref.errors import TooLargeError
from rheo_ref.families.rheo.enumerate import ClassChooser
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.rheo.slots import Expansion, expand, proxy_factor, ranked
from rheo_ref.families.rheo.tree import Node, Nodes, path_tokens
from rheo_ref.families.rheo.verify import Law, level_law, verification_order
from rheo_ref.models import Case, Context, Row

ZERO, ONE = Fraction(0), Fraction(1)
# (-float(score), -score, depth, frontier index of the parent, slot): a correctly rounded float is
# monotone, so the floats order the queue and the Fractions are compared only when they tie
Key = tuple[float, Fraction, int, int, int]
MORE = -1  # marks a round cut at its horizon: it emits more tokens than the law looks at
Shape = tuple  # a kept subtree as verification sees it: ((kind, slot, tokens, Shape of the child), ...)
# one level of verification: ([(child index, token, P(accepted holding it))], [(bonus token, P)])
Step = tuple[list[tuple[int, int, Fraction]], list[tuple[int, Fraction]]]


def key(score: Fraction, depth: int, f: int, slot: int) -> Key:
    """The queue key of an entry of this score: orders like `rerank_key`."""
    return (-float(score), -score, depth, f, slot)


@dataclass(frozen=True, order=True)
class Entry:
    """An entry of the best-first queue, in key order. `what`:
    - "node": a created node waiting to be popped;
    - "expand": the children of kept node `parent`, at the best key any of them can have (slot -1);
    - "fills": the fills of kept node `parent`'s sampled child, at the best key the first fill can
      have over the classes of y (slot m + 1)."""

    key: Key
    what: str = field(compare=False, default="node")
    node: Node | None = field(compare=False, default=None)
    parent: int = field(compare=False, default=0)


def best_factor(plan: Expansion) -> Fraction:
    """The largest factor any child of this expansion can have: q_rank(x_1), or the sampled slot's
    proxy when it is larger (const:a, scaled:s)."""
    top = plan.q_rank[plan.order[0]]
    return max(top, plan.factor_for(plan.support()[0])) if plan.qtilde is not None else top


class Plans:
    """The expansion plan of each context, by the part of it the models see (a pure function)."""

    def __init__(self, case: Case) -> None:
        self.case, self.scheme = case, case.scheme_as(Scheme)
        self._plans: dict[Context, Expansion] = {}
        self._sees = case.sees  # `Case.visible`, without recomputing `sees` at each of millions of calls

    def memo(self, ctx: Context) -> Context:
        return tuple(ctx)[-self._sees :] if self._sees else ()

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
    s = case.scheme_as(Scheme)
    if s.proxy.kind != "scaled" or s.m >= s.K:
        return
    for row in case.draft.probs.values():
        order = ranked(row)
        proxy_factor(s.proxy, row, order, s.m, sum((row[t] for t in order[s.m :]), ZERO), order[s.m])


def kept_trees(case: Case, context: Context, plans: Plans) -> Iterator[tuple[Fraction, Nodes]]:
    """(probability, kept nodes in pop order) of every branch of the best-first construction of one
    round from `context`. Node ids are pop indices (the root is 0); a sampled node that was never
    expanded may still hold a class of tokens."""
    scheme: Scheme = case.scheme_as(Scheme)
    context = tuple(context)
    chooser = ClassChooser()
    m = scheme.m

    def ctx_of(kept: Nodes, nid: int) -> Context:
        return context + path_tokens(kept, nid)

    def expansion(kept: Nodes, node: Node, f: int) -> Entry:
        """Queue the expansion of kept node `node`, the f-th frontier node of its depth, at the best
        key any of its children can have, whichever token of its class the node holds."""
        if node.id == 0:
            best = best_factor(plans(context))
        else:
            above = ctx_of(kept, node.parent)
            best = max(best_factor(plans(above + (y,))) for y in node.tokens)
        return Entry(key(node.score * best, node.depth + 1, f, -1), "expand", None, node.id)

    def child(
        parent: Node, f: int, slot: int, tokens: tuple[int, ...], kind: str, factor: Fraction, qt: Row | None = None
    ) -> Entry:
        score, depth = parent.score * factor, parent.depth + 1
        return Entry(key(score, depth, f, slot), "node", Node(-1, parent.id, depth, kind, slot, tokens, score, qt))

    def fills(parent: Node, f: int, plan: Expansion, y: int) -> list[Entry]:
        return [child(parent, f, m + 1 + i, (t,), "fill", q) for i, (t, q) in enumerate(plan.fills_for(y))]

    def children(parent: Node, f: int, plan: Expansion) -> list[tuple[Fraction, list[Entry]]]:
        """The K children of `parent`, as alternatives (probability, entries)."""
        dets = [child(parent, f, i, (t,), "det", q) for i, (t, q) in enumerate(plan.det)]
        if plan.qtilde is None:
            return [(ONE, dets)]
        groups = chooser.sample_groups(plan, parent)
        factors = {plan.factor_for(ys[0]) for _, ys in groups}
        if len(groups) > 1 and len(factors) == 1:  # y moves only the fills: choose its class later
            sampled = child(parent, f, m, tuple(plan.support()), "sampled", factors.pop(), plan.qtilde)
            first_fill = max(plan.fills_for(ys[0])[0][1] for _, ys in groups)
            later = Entry(key(parent.score * first_fill, parent.depth + 1, f, m + 1), "fills", None, parent.id)
            return [(ONE, dets + [sampled, later])]
        return [
            (
                w,
                dets
                + [child(parent, f, m, ys, "sampled", plan.factor_for(ys[0]), plan.qtilde)]
                + fills(parent, f, plan, ys[0]),
            )
            for w, ys in groups
        ]

    def sampled_child(queue: list[Entry], kept: Nodes, pid: int) -> Node:
        """The sampled child of kept node `pid`, kept already or still queued."""
        found = [n for n in kept[1:] if n.parent == pid and n.slot == m]
        found += [e.node for e in queue if e.node is not None and e.node.parent == pid and e.node.slot == m]
        return found[0]

    def with_tokens(queue: list[Entry], kept: Nodes, node: Node, ys: tuple[int, ...]) -> tuple[list[Entry], Nodes]:
        """Queue and kept nodes once `node` (kept or queued) holds `ys`."""
        new = replace(node, tokens=ys)
        if node.id >= 0:
            return queue, kept[: node.id] + (new,) + kept[node.id + 1 :]
        return [replace(e, node=new) if e.node is node else e for e in queue], kept

    def identities(node: Node) -> list[tuple[Fraction, tuple[int, ...]]]:
        """The tokens `node` may hold, one at a time (a class splits by q̃ restricted to it)."""
        if len(node.tokens) <= 1:
            return [(ONE, node.tokens)]
        return [(w, (y,)) for w, y in chooser.resolve(node)]

    Outcome = Iterator[tuple[Fraction, Nodes]]

    def grow(queue: list[Entry], kept: Nodes, pops_at: tuple[int, ...], prob: Fraction) -> Outcome:
        """Pop in key order until R nodes are kept; branch where an entry needs a choice."""
        while queue and len(kept) <= scheme.R:  # kept holds the root too
            head, queue = queue[0], queue[1:]
            if head.node is not None:  # pop: this node is kept
                node = replace(head.node, id=len(kept))
                kept = kept + (node,)
                d = node.depth
                if d < scheme.D and pops_at[d] < scheme.W:  # in its depth's frontier
                    insort(queue, expansion(kept, node, pops_at[d]))
                pops_at = pops_at[:d] + (pops_at[d] + 1,) + pops_at[d + 1 :]
                continue
            parent, f = kept[head.parent], head.key[3]
            if head.what == "expand":  # split the node if it holds a class, then create its children
                for w, tokens in identities(parent):
                    _, now = with_tokens(queue, kept, parent, tokens)
                    for w2, kids in children(now[parent.id], f, plans(ctx_of(now, parent.id))):
                        yield from grow(sorted(queue + kids), now, pops_at, prob * w * w2)
                return
            # "fills": choose the class of y among the tokens its sampled child still holds
            plan = plans(ctx_of(kept, parent.id))
            qt, node = plan.qtilde_row(), sampled_child(queue, kept, parent.id)
            mass = sum((qt[y] for y in node.tokens), ZERO)
            for _, group in chooser.sample_groups(plan, parent):
                ys = tuple(y for y in node.tokens if y in group)
                if ys:
                    q2, k2 = with_tokens(queue, kept, node, ys)
                    w = sum((qt[y] for y in ys), ZERO) / mass
                    yield from grow(sorted(q2 + fills(parent, f, plan, ys[0])), k2, pops_at, prob * w)
            return
        yield prob, kept

    root = Node(0, -1, 0, "root", -1, (), ONE)
    # pops per depth: a kept node's depth is at most R (R nodes below the root), whatever D is
    yield from grow([expansion((root,), root, 0)], (root,), (0,) * (min(scheme.D, scheme.R) + 1), ONE)


def shape_of(kept: Nodes, nid: int = 0) -> Shape:
    """The kept subtree below node `nid` as verification sees it (kinds, slots, tokens)."""
    kids: dict[int, list[Node]] = defaultdict(list)
    for n in kept[1:]:
        kids[n.parent].append(n)

    def below(i: int) -> Shape:
        return tuple((n.kind, n.slot, n.tokens, below(n.id)) for n in sorted(kids[i], key=lambda n: n.slot))

    return below(nid)


class KeptLaws:
    """What verification emits from a mixture of kept trees, pushed down level by level.

    Verification's law is linear in the law below each accepted child (`level_law`): a node with
    kept children `kids`, reached with weight w, emits its bonus token with w times the bonus law
    and hands w times the acceptance probability of child c to c's kept subtree. So the law of a
    mixture of kept trees, sum_T P(T) law(T), is computed one level at a time over (context,
    kept subtree) pairs whose weights add up wherever two trees share a subtree below the same
    emitted prefix, with no law of a subtree ever stored: a level's step (its acceptance
    probabilities and bonus law) depends only on the context as the models see it and the kinds,
    slots and tokens of its kept children, and is memoised by those."""

    def __init__(self, case: Case, plans: Plans) -> None:
        self.case, self.plans = case, plans
        self.verify = case.scheme_as(Scheme).verify
        self._steps: dict[tuple[Context, tuple], Step] = {}

    def step(self, ctx: Context, shape: Shape) -> Step:
        """One level of verification at `ctx` with kept children `shape`: ([(child index, token,
        probability it is accepted holding that token)], [(bonus token, probability)])."""
        seen = self.plans.memo(ctx)
        key = (seen, tuple(k[:3] for k in shape))
        if key not in self._steps:
            qt = self.plans(seen).qtilde if shape else None
            kids = [
                Node(i, 0, 0, kind, slot, tokens, ZERO, qt if kind == "sampled" else None)
                for i, (kind, slot, tokens, _) in enumerate(shape)
            ]

            def below(ch: Node, y: int, r: Row) -> Law:  # a marker for "child ch.id accepted" (the spec ignores r)
                return {(-2 - ch.id,): ONE}

            law = level_law(self.case.target.row(seen), verification_order(kids, self.verify), below)
            accepts = [(-2 - s[1], s[0], pr) for s, pr in law.items() if len(s) == 2]
            bonus = [(s[0], pr) for s, pr in law.items() if len(s) == 1]
            self._steps[key] = (accepts, bonus)
        return self._steps[key]

    def mixture(self, context: Context, weights: dict[Shape | None, Fraction]) -> Law:
        """sum over kept trees of weight x (what verification emits from `context`); a shape None
        (a node at the horizon) emits the marker MORE: the round goes on, and is not looked at."""
        context = tuple(context)
        start = len(context)
        out: Law = defaultdict(Fraction)
        layer: dict[tuple[Context, Shape | None], Fraction] = defaultdict(Fraction)
        for shape, w in weights.items():
            layer[context, shape] += w
        while layer:
            nxt: dict[tuple[Context, Shape | None], Fraction] = defaultdict(Fraction)
            for (ctx, shape), w in layer.items():
                emitted = ctx[start:]
                if shape is None:
                    out[emitted + (MORE,)] += w
                    continue
                accepts, bonus = self.step(ctx, shape)
                for v, pv in bonus:
                    out[emitted + (v,)] += w * pv
                for i, y, a in accepts:
                    nxt[ctx + (y,), shape[i][3]] += w * a
            layer = nxt
        return dict(out)


class BestFirstRounds:
    """Round laws of a rheo-family case by `dp`. `enumerated` counts the branches (kept trees
    before merging) over every round computed; `max_outcomes` bounds them per round."""

    def __init__(
        self, case: Case, *, max_outcomes: int | None = None, progress: Callable[[int], None] | None = None
    ) -> None:
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
                raise TooLargeError(
                    f"method 'dp' passed {self.max_outcomes:,} kept trees in one round (the limit); "
                    f"use a smaller scheme, or --force to run anyway"
                )
        self.enumerated += n
        self.distinct += len(merged)
        return self.laws.mixture(context, dict(merged))
