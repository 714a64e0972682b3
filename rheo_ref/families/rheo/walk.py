"""The `walk` round law of the rheo family: what a round emits up to a horizon of h tokens
(docs/EXACT_AT_SCALE.md §6). It is what the law of the first n tokens needs (h = n for the first
round, n - k after a round of k tokens), and it does not grow with the budget R.

Verification walks down from the root; the first h tokens it emits depend only on the kept nodes
of depth <= h ("shallow"). Deeper nodes matter only through *how many* of them outrank each
shallow node in the global rerank, and only through those of higher score (a deeper node ranks
before a shallower one iff its score is strictly larger):

1. **Shallow trees.** The tree to depth h is built as `classes` builds it (frontiers of depth < h
   expanded, a sampled node split into single tokens only when expanded), without the rerank.
2. **Deep counts.** Let s_min be the smallest shallow score. A deep node of score <= s_min never
   outranks a shallow node, and neither does any descendant of it (a child's score is at most its
   parent's), nor does it push a node of larger score out of a frontier: it is dropped. What is
   left is a chain over depths, d = h, h+1, ..., D: the relevant part of the frontier of depth d
   (its nodes' contexts and scores, in frontier order) gives the relevant children of depth d + 1
   (one branch per class of each sampled slot), their counts above each shallow score, and the
   relevant part of the next frontier, whose sampled nodes are split only if a child of theirs
   can pass s_min. `DeepCounts` memoises the law of the counts below a frontier by (frontier,
   depth): different shallow trees and different deep histories share it.
3. **The kept shallow nodes.** Shallow nodes in rerank order u_1, u_2, ...: u_j is kept iff
   j + (deep nodes of score > score(u_j)) <= R, a prefix of that order.
4. **Verification to the horizon.** `KeptLaws` (`dp`'s memoised verification) on the kept shallow
   nodes; a node at depth h ends its branch with the marker `MORE` (the round emits more than h
   tokens there). With h > D nothing is deep or cut, and the law is `dp`'s round law.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Callable, Iterator
from dataclasses import replace
from fractions import Fraction
from itertools import product

from rheo_ref.families.rheo.bestfirst import MORE, KeptLaws, Plans, best_factor, check_factors_at_most_one
from rheo_ref.families.rheo.enumerate import ClassChooser
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.rheo.tree import Node, Nodes, build_tree, frontier, path_tokens, rerank_key
from rheo_ref.families.rheo.verify import Law
from rheo_ref.models import Case, Context

ZERO, ONE = Fraction(0), Fraction(1)
Member = tuple[Context, Fraction]  # a relevant frontier node: (its context as the models see it, score)
Child = tuple[Fraction, int, int, Context, tuple[int, ...], tuple[Fraction, ...] | None]
Counts = tuple[int, ...]  # deep nodes of score > each threshold (thresholds descending), capped at R

__all__ = ["MORE", "DeepCounts", "WalkRounds", "kept_prefix", "shallow_trees"]


class DeepCounts:
    """Law of the counts of deep nodes above each threshold, below a relevant frontier (step 2).
    One instance per set of thresholds (the distinct shallow scores, descending)."""

    def __init__(self, case: Case, plans: Plans, thresholds: tuple[Fraction, ...], last: int) -> None:
        self.case, self.plans = case, plans
        self.scheme: Scheme = case.scheme_as(Scheme)
        self.last = last  # the deepest depth that can matter: min(D, h + R)
        self.thresholds, self.floor = thresholds, thresholds[-1]
        self.chooser = ClassChooser()
        self._ascending = sorted(thresholds)
        self._memo: dict[tuple[tuple[Member, ...], int], dict[Counts, Fraction]] = {}
        self._best: dict[Context, Fraction] = {}
        self.frontiers = 0  # frontiers whose law was computed (the memo's size)

    def counts_of(self, scores: list[Fraction]) -> Counts:
        """Scores above each threshold (descending thresholds): a score above the k smallest
        thresholds counts for the last k."""
        J = len(self.thresholds)
        above = [0] * (J + 1)
        for s in scores:
            above[bisect_left(self._ascending, s)] += 1
        out, run = [], 0
        for k in range(J, 0, -1):  # threshold J - k (descending index) is passed by scores above >= k
            run += above[k]
            out.append(run)
        return tuple(out)

    def can_pass(self, ctx: Context, score: Fraction) -> bool:
        """Whether a child of a node (context, score) can have a score above the floor."""
        key = self.case.visible(ctx)
        if key not in self._best:
            self._best[key] = best_factor(self.plans(key))
        return score * self._best[key] > self.floor

    def law(self, members: tuple[Member, ...], depth: int) -> dict[Counts, Fraction]:
        """Counts of nodes of depth > `depth` below the relevant frontier `members` of `depth`."""
        if not members:
            return {(0,) * len(self.thresholds): ONE}
        key = (members, depth)
        if key not in self._memo:
            self._memo[key] = self._law(members, depth)
            self.frontiers += 1
        return self._memo[key]

    def _children(self, members: tuple[Member, ...]) -> Iterator[tuple[Fraction, list[Child]]]:
        """Alternatives (probability, relevant children) of one level: one per combination of the
        members' sampled classes. A child: (-score, parent index, slot, context of its parent,
        tokens, sampled q̃ or None), so children sort in frontier order."""
        options: list[list[tuple[Fraction, list[Child]]]] = []
        for f, (ctx, score) in enumerate(members):
            plan = self.plans(ctx)
            dets: list[Child] = [(-score * q, f, i, ctx, (t,), None) for i, (t, q) in enumerate(plan.det)]
            if plan.qtilde is None:
                options.append([(ONE, dets)])
                continue
            m, alts = self.scheme.m, []
            for w, ys in self.chooser.sample_groups(plan, Node(0, -1, 0, "root", -1, (), score)):
                kids = dets + [(-score * plan.factor_for(ys[0]), f, m, ctx, ys, plan.qtilde)]
                kids += [(-score * q, f, m + 1 + i, ctx, (t,), None) for i, (t, q) in enumerate(plan.fills_for(ys[0]))]
                alts.append((w, kids))
            options.append(alts)
        for combo in product(*options):
            prob, kids = ONE, list[Child]()
            for w, ks in combo:
                prob *= w
                kids += [k for k in ks if -k[0] > self.floor]
            yield prob, sorted(kids, key=lambda k: k[:3])

    def _law(self, members: tuple[Member, ...], depth: int) -> dict[Counts, Fraction]:
        s, R = self.scheme, self.scheme.R
        nexts: dict[tuple[Counts, tuple[Member, ...]], Fraction] = defaultdict(Fraction)
        for prob, kids in self._children(members):
            here = self.counts_of([-k[0] for k in kids])
            if depth + 1 >= self.last or min(here) >= R:  # the last depth that matters, or every count full
                nexts[(here, ())] += prob
                continue
            # the relevant part of the next frontier; a sampled node is split only if it matters
            branches: list[tuple[Fraction, tuple[Member, ...]]] = [(ONE, ())]
            for neg, _, _, ctx, tokens, qt in kids[: s.W]:
                score = -neg
                ids = [(ONE, tokens[0])] if qt is None else self._identities(tokens, qt)
                branches = [
                    (
                        w * v,
                        ms + (((self.case.visible(ctx + (y,))), score),) if self.can_pass(ctx + (y,), score) else ms,
                    )
                    for w, ms in branches
                    for v, y in ids
                ]
            for w, ms in branches:
                nexts[(here, ms)] += prob * w
        out: dict[Counts, Fraction] = defaultdict(Fraction)
        for (here, ms), prob in nexts.items():
            for below, pb in self.law(ms, depth + 1).items():
                out[tuple(min(R, a + b) for a, b in zip(here, below))] += prob * pb
        return dict(out)

    def _identities(self, tokens: tuple[int, ...], qt: tuple[Fraction, ...]) -> list[tuple[Fraction, int]]:
        z = sum((qt[y] for y in tokens), ZERO)
        return [(qt[y] / z, y) for y in tokens]


def shallow_trees(case: Case, context: Context, depth: int) -> Iterator[tuple[Fraction, Nodes]]:
    """Step 1: every tree to `depth` with its probability (`classes`' builder)."""
    scheme = case.scheme_as(Scheme)
    yield from build_tree(case.draft, case.q_samp_model, tuple(context), replace(scheme, D=depth), ClassChooser())


def kept_prefix(shallow: list[Node], thresholds: tuple[Fraction, ...], counts: Counts, R: int) -> int:
    """Step 3: how many shallow nodes (in rerank order) are kept given the deep counts."""
    above = dict(zip(thresholds, counts))
    j = 0
    while j < len(shallow) and j + 1 + above[shallow[j].score] <= R:
        j += 1
    return j


class WalkRounds:
    """Round laws of a rheo-family case up to a horizon (`round_law(context, horizon)`); with no
    horizon, the whole round (horizon D + 1). `enumerated` counts the shallow trees built and
    `frontiers` the deep frontiers whose count law was computed, over every round."""

    method = "walk"
    takes_horizon = True

    def __init__(self, case: Case, *, progress: Callable[[int], None] | None = None) -> None:
        check_factors_at_most_one(case)
        self.case, self.scheme = case, case.scheme_as(Scheme)
        self.plans = Plans(case)
        self.laws = KeptLaws(case, self.plans)
        self._deep: dict[tuple[tuple[Fraction, ...], int], DeepCounts] = {}
        self.enumerated = 0
        self.frontiers = 0
        self.progress = progress

    def deep(self, thresholds: tuple[Fraction, ...], last: int) -> DeepCounts:
        if (thresholds, last) not in self._deep:
            self._deep[thresholds, last] = DeepCounts(self.case, self.plans, thresholds, last)
        return self._deep[thresholds, last]

    def kept_shapes(self, context: Context, horizon: int) -> dict[tuple, Fraction]:
        """(kept shallow subtree as verification sees it, probability), merged."""
        s, context = self.scheme, tuple(context)
        # a kept node has depth <= R (its ancestors are kept), and a node deeper than h + R that
        # outranks a shallow node brings R ancestors that do too: nothing past these depths matters
        top, last = min(horizon, s.D, s.R), min(s.D, horizon + s.R)
        merged: dict[tuple, Fraction] = defaultdict(Fraction)
        for prob, nodes in shallow_trees(self.case, context, top):
            self.enumerated += 1
            if self.progress is not None:
                self.progress(1)
            order = sorted(nodes[1:], key=rerank_key)
            if top == min(s.D, s.R):  # nothing deep can be kept or outrank a kept node
                merged[self.shape(nodes, order[: s.R], horizon)] += prob
                continue
            thresholds = tuple(sorted({n.score for n in order}, reverse=True))
            deep = self.deep(thresholds, last)
            before = deep.frontiers
            for w, members in self.deep_frontier(nodes, context, deep):
                for counts, pc in deep.law(members, horizon).items():
                    j = kept_prefix(order, thresholds, counts, s.R)
                    merged[self.shape(nodes, order[:j], horizon)] += prob * w * pc
            self.frontiers += deep.frontiers - before
        return merged

    def deep_frontier(
        self, nodes: Nodes, context: Context, deep: DeepCounts
    ) -> list[tuple[Fraction, tuple[Member, ...]]]:
        """The relevant part of the frontier of depth h, its sampled classes split into tokens
        where a child can pass the floor (one alternative per combination)."""
        s = self.scheme
        depth = max(n.depth for n in nodes)
        out: list[tuple[Fraction, tuple[Member, ...]]] = [(ONE, ())]
        for nid in frontier(nodes, depth, s.W):
            n = nodes[nid]
            above = context + path_tokens(nodes, n.parent)
            ids = [(ONE, n.tokens[0])] if len(n.tokens) == 1 else deep._identities(n.tokens, n.qtilde_row())
            out = [
                (
                    w * v,
                    ms + ((self.case.visible(above + (y,)), n.score),) if deep.can_pass(above + (y,), n.score) else ms,
                )
                for w, ms in out
                for v, y in ids
            ]
        return out

    @staticmethod
    def shape(nodes: Nodes, kept: list[Node], horizon: int) -> tuple:
        """The kept shallow nodes as verification sees them (`bestfirst.shape_of`'s form); a kept
        node at depth `horizon` ends in None (the round goes on there)."""
        ids = {n.id for n in kept}

        def below(nid: int) -> tuple | None:
            if nid and nodes[nid].depth >= horizon:
                return None
            kids = sorted((n for n in kept if n.parent == nid), key=lambda n: n.slot)
            return tuple((n.kind, n.slot, n.tokens, below(n.id)) for n in kids)

        assert all(n.parent == 0 or n.parent in ids for n in kept), "kept shallow set not closed under parents"
        return below(0) or ()

    def round_law(self, context: Context, horizon: int | None = None) -> Law:
        """What a round from `context` emits, cut at `horizon` tokens (a sequence that goes on past
        it ends with MORE); None: the whole round."""
        h = self.scheme.D + 1 if horizon is None else horizon
        law: Law = defaultdict(Fraction)
        for shape, prob in self.kept_shapes(context, h).items():
            for seq, pr in self.laws.law(tuple(context), shape).items():
                law[seq] += prob * pr
        return dict(law)
