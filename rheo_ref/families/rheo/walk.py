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
4. **Verification to the horizon.** `KeptLaws` (`dp`'s verification, pushed down level by
   level) on the kept shallow nodes; a node at depth h ends its branch with the marker `MORE` (the
   round emits more than h tokens there). With h > D nothing is deep or cut, and the law is `dp`'s round law.
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
Member = tuple[Context, int]  # a relevant frontier node: (its context as the models see it, score id)
# a relevant child: (-float(score), -score, slot, tokens, sampled?, thresholds below its score, score id)
Kid = tuple[float, Fraction, int, tuple[int, ...], bool, int, int]
Counts = tuple[int, ...]  # deep nodes of score > each threshold (thresholds descending), capped

__all__ = ["MORE", "DeepCounts", "WalkRounds", "kept_prefix", "shallow_trees"]


class DeepCounts:
    """Law of the counts of deep nodes above each threshold, below a relevant frontier (step 2).
    One instance per shallow ranking: its thresholds (the distinct shallow scores, descending)
    and their caps (a count at or above cap_t drops every shallow node of score t, so counts are
    kept only up to it, and a frontier whose every count is full is not looked below).

    Speed (exact, measured in docs/EXACT_AT_SCALE.md §6): a member's children are computed once
    per (context, score), with each child's threshold index; a member's alternatives (its sampled
    classes) that leave the same relevant children are one alternative (the sampled child's
    classes are unioned: the identity of the union has q̃ restricted to it); scores are interned,
    so memo keys hash integers, and ordered by (float, Fraction): a correctly rounded float is
    monotone, so the Fraction is compared only when the floats tie."""

    def __init__(self, case: Case, plans: Plans, thresholds: tuple[Fraction, ...], caps: Counts, last: int) -> None:
        self.case, self.plans = case, plans
        self.scheme: Scheme = case.scheme_as(Scheme)
        self.last = last  # the deepest depth that can matter: min(D, h + R)
        self.thresholds, self.floor, self.caps = thresholds, thresholds[-1], caps
        self.chooser = ClassChooser()
        self._ascending = sorted(thresholds)
        self._memo: dict[tuple[tuple[Member, ...], int], dict[Counts, Fraction]] = {}
        self._scores: list[Fraction] = []
        self._sid: dict[Fraction, int] = {}
        self._options: dict[Member, list[tuple[Fraction, tuple[Kid, ...]]]] = {}
        self._passes: dict[tuple[Context, int], bool] = {}
        self._best: dict[Context, Fraction] = {}
        self.frontiers = 0  # frontiers whose law was computed (the memo's size)

    def sid(self, score: Fraction) -> int:
        """The interned id of a score."""
        i = self._sid.get(score)
        if i is None:
            i = self._sid[score] = len(self._scores)
            self._scores.append(score)
        return i

    def counts_of(self, idxs: list[int]) -> Counts:
        """Capped counts above each threshold (descending) of children whose score passes the
        idx smallest thresholds."""
        J = len(self.thresholds)
        above = [0] * (J + 1)
        for i in idxs:
            above[i] += 1
        out, run = [], 0
        for k in range(J, 0, -1):  # threshold J - k (descending index) is passed by idx >= k
            run += above[k]
            out.append(min(run, self.caps[J - k]))
        return tuple(out)

    def member(self, ctx: Context, score: Fraction | int) -> Member | None:
        """The frontier member of a node (context, score or score id), or None when no child of
        it can pass the floor (it is irrelevant)."""
        key = self.case.visible(ctx)
        s = score if isinstance(score, int) else self.sid(score)
        if (key, s) not in self._passes:
            score = self._scores[s]
            if key not in self._best:
                self._best[key] = best_factor(self.plans(key))
            self._passes[key, s] = score * self._best[key] > self.floor
        return (key, s) if self._passes[key, s] else None

    def law(self, members: tuple[Member, ...], depth: int) -> dict[Counts, Fraction]:
        """Counts of nodes of depth > `depth` below the relevant frontier `members` of `depth`."""
        if not members:
            return {(0,) * len(self.thresholds): ONE}
        key = (members, depth)
        if key not in self._memo:
            self._memo[key] = self._law(members, depth)
            self.frontiers += 1
        return self._memo[key]

    def options(self, member: Member) -> list[tuple[Fraction, tuple[Kid, ...]]]:
        """A member's alternatives (probability, relevant children), its sampled classes merged
        where they leave the same relevant children. A child: (-float score, -score, slot,
        tokens, sampled?, threshold index, score id), sorted in frontier order within the member."""
        if member in self._options:
            return self._options[member]
        ctx, s = member
        score = self._scores[s]
        plan = self.plans(ctx)

        def kid(q: Fraction, slot: int, tokens: tuple[int, ...], sampled: bool) -> Kid | None:
            sc = score * q
            if not sc > self.floor:
                return None
            return (-float(sc), -sc, slot, tokens, sampled, bisect_left(self._ascending, sc), self.sid(sc))

        dets = [kid(q, i, (t,), False) for i, (t, q) in enumerate(plan.det)]
        out: list[tuple[Fraction, tuple[Kid, ...]]]
        if plan.qtilde is None:
            out = [(ONE, tuple(k for k in dets if k is not None))]
        else:
            m = self.scheme.m
            merged: dict[tuple, tuple[Fraction, list[int], list[Kid]]] = {}
            for w, ys in self.chooser.sample_groups(plan, Node(0, -1, 0, "root", -1, (), score)):
                kids = dets + [kid(plan.factor_for(ys[0]), m, ys, True)]
                kids += [kid(q, m + 1 + i, (t,), False) for i, (t, q) in enumerate(plan.fills_for(ys[0]))]
                kept = [k for k in kids if k is not None]
                sig = tuple((k[2], None if k[4] else k[3], k[6]) for k in kept)
                if sig in merged:
                    w0, ys0, _ = merged[sig]
                    merged[sig] = (w0 + w, ys0 + list(ys), kept)
                else:
                    merged[sig] = (w, list(ys), kept)
            out = []
            for w, union, kept in merged.values():
                ks: tuple[Kid, ...] = tuple(
                    k if not k[4] else (k[0], k[1], k[2], tuple(sorted(union)), k[4], k[5], k[6]) for k in kept
                )
                out.append((w, ks))
        self._options[member] = out
        return out

    def _law(self, members: tuple[Member, ...], depth: int) -> dict[Counts, Fraction]:
        s = self.scheme
        nexts: dict[tuple[Counts, tuple[Member, ...]], Fraction] = defaultdict(Fraction)
        for combo in product(*(self.options(mb) for mb in members)):
            prob = ONE
            for w, _ in combo:
                prob *= w
            here = self.counts_of([k[5] for _, ks in combo for k in ks])
            if depth + 1 >= self.last or here == self.caps:  # the last depth that matters, or every count full
                nexts[(here, ())] += prob
                continue
            # the relevant part of the next frontier; a sampled node is split only if it matters
            top = sorted(((k[0], k[1], f, k[2], k) for f, (_, ks) in enumerate(combo) for k in ks))[: s.W]
            branches: list[tuple[Fraction, tuple[Member, ...]]] = [(ONE, ())]
            for _, _, f, _, k in top:
                ctx = members[f][0]
                ids = self._identities(k[3], self.plans(ctx).qtilde_row()) if k[4] else [(ONE, k[3][0])]
                nxt = [(v, self.member(ctx + (y,), k[6])) for v, y in ids]
                branches = [(w * v, ms if mb is None else ms + (mb,)) for w, ms in branches for v, mb in nxt]
            for w, ms in branches:
                nexts[(here, ms)] += prob * w
        out: dict[Counts, Fraction] = defaultdict(Fraction)
        for (here, ms), prob in nexts.items():
            for below, pb in self.law(ms, depth + 1).items():
                out[tuple(min(c, a + b) for c, a, b in zip(self.caps, here, below))] += prob * pb
        return dict(out)

    @staticmethod
    def _identities(tokens: tuple[int, ...], qt: tuple[Fraction, ...]) -> list[tuple[Fraction, int]]:
        if len(tokens) == 1:
            return [(ONE, tokens[0])]
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
        self._deep: dict[tuple[tuple[Fraction, ...], Counts, int], DeepCounts] = {}
        self.enumerated = 0
        self.frontiers = 0
        self.progress = progress

    def deep(self, order: list[Node], last: int) -> DeepCounts:
        """The deep counts for a shallow ranking `order`: its distinct scores (descending), each
        capped at R - (shallow nodes of larger score)."""
        thresholds = tuple(sorted({n.score for n in order}, reverse=True))
        first: dict[Fraction, int] = {}
        for j, n in enumerate(order):
            first.setdefault(n.score, j)
        caps = tuple(max(0, self.scheme.R - first[t]) for t in thresholds)
        if (thresholds, caps, last) not in self._deep:
            self._deep[thresholds, caps, last] = DeepCounts(self.case, self.plans, thresholds, caps, last)
        return self._deep[thresholds, caps, last]

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
            deep = self.deep(order, last)
            before = deep.frontiers
            for w, members in self.deep_frontier(nodes, context, deep):
                for counts, pc in deep.law(members, horizon).items():
                    j = kept_prefix(order, deep.thresholds, counts, s.R)
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
            nxt = [(v, deep.member(above + (y,), n.score)) for v, y in ids]
            out = [(w * v, ms if mb is None else ms + (mb,)) for w, ms in out for v, mb in nxt]
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
        return self.laws.mixture(context, dict(self.kept_shapes(context, h)))
