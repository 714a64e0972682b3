"""The `chain` round law of the rheo family: the whole round, by conditioning on the cut
(docs/EXACT_AT_SCALE.md §9). It reaches the paper's budget (R = 60, D = 8) where `dp`, which lists
the kept trees, cannot: the tree is a Markov chain over frontiers with few states, and the kept
trees are paths through it.

1. **The frontier chain.** Depth d + 1's nodes are the K children of depth d's frontier, and depth
   d + 1's frontier is the W of them first in key order (-score, depth, parent's frontier index,
   slot), the order of `rerank_key`. A frontier, as the rest of the round sees it, is the tuple
   of its members' (context as the models see it, score): equal tuples have the same future. A
   sampled child is split into its identities only when it enters a frontier (`classes`' rule).
2. **The cut.** The kept set is the R nodes first in key order. Condition on the key θ of the R-th
   one: given θ, a node is kept iff its key is <= θ, and a node of key > θ (with every descendant:
   a child never outranks its parent) matters to nothing. The event "the R-th key is θ" is
   "exactly R nodes have key <= θ, one of them has key θ", a count carried along the chain.
   G(θ) = P(at least R nodes have key <= θ) is monotone in θ and jumps by P(the R-th key is θ) at
   each θ that carries mass; bisection over the keys the chain can create finds those jumps.
3. **Verification along the chain.** For each θ with mass, one forward pass over (frontier, nodes
   of key <= θ so far, seen θ?, the frontier member verification stands on, what it has emitted):
   at each expansion the member's kept children (key <= θ) are verified with `KeptLaws.step`; an
   accepted child that enters the next frontier carries the walk on, one that does not is a leaf
   (verification ends there with p's row); a walk that ends is weighted by the probability that
   the rest of the chain ends the count at exactly R with θ seen, memoised by (frontier, depth,
   count, seen).

Exact: the round's law is Σ_θ P(the emitted sequence, the R-th key is θ), and each pass sums, in
the chain's own order, the same products of probabilities the kept-tree enumeration multiplies.
Checked against `dp` and `brute` (tests/test_ref_chain.py); dp = chain at R = 30, D = 8 in the
benchmark.
"""

from __future__ import annotations

from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable
from fractions import Fraction

from rheo_ref.errors import TooLargeError
from rheo_ref.families.rheo.bestfirst import KeptLaws, Plans, check_factors_at_most_one
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.rheo.verify import Law
from rheo_ref.models import Case, Context
from rheo_ref.sizes import nodes

ZERO, ONE = Fraction(0), Fraction(1)
Member = tuple[Context, Fraction]  # a frontier member: (context as the models see it, score)
Key = tuple[float, Fraction, int, int, int]  # (-float(score), -score, depth, parent's frontier index, slot)
Child = tuple[Key, str, tuple[tuple[Fraction, int], ...]]  # (key, kind, ((P(identity), token), ...))
Slot = tuple[Fraction, int, str, tuple[tuple[Fraction, int], ...]]  # (score, slot, kind, ((P(identity), token), ...))
Split = list[tuple[Fraction, int, tuple[int, ...]]]  # (probability, next frontier's id, identities of its members)
ABOVE = "~"  # sorts after every kind: (θ, ABOVE) bisects a sorted list of children just after key θ

__all__ = ["ChainRounds"]


class ChainRounds:
    """Whole round laws of a rheo-family case by the cut-conditioned frontier chain
    (`round_law(context)`). `enumerated` counts the distinct frontiers met over every round and
    `passes` the passes over the chain (bisection steps and conditioned verifications);
    `max_outcomes` bounds the frontiers of one computation."""

    method = "chain"
    takes_horizon = False

    def __init__(
        self, case: Case, *, max_outcomes: int | None = None, progress: Callable[[int], None] | None = None
    ) -> None:
        check_factors_at_most_one(case)
        self.case, self.scheme = case, case.scheme_as(Scheme)
        self.plans = Plans(case)
        self.laws = KeptLaws(case, self.plans)
        self.max_outcomes, self.progress = max_outcomes, progress
        self._options: dict[Member, list[tuple[Fraction, tuple[Slot, ...]]]] = {}
        self._moves: dict[tuple[int, int], list[tuple[Fraction, tuple[Child, ...]]]] = {}
        self._splits: dict[tuple[int, int, int, int], Split] = {}
        self._frontiers: list[tuple[Member, ...]] = []
        self._ids: dict[tuple[Member, ...], int] = {}
        self.passes = 0
        self.enumerated = 0  # distinct frontiers met (the chain's states)

    # -- the chain ---------------------------------------------------------------------------------

    def frontier_id(self, members: tuple[Member, ...]) -> int:
        i = self._ids.get(members)
        if i is None:
            i = self._ids[members] = len(self._frontiers)
            self._frontiers.append(members)
            self.enumerated += 1
            if self.progress is not None:
                self.progress(1)
            if self.max_outcomes is not None and len(self._frontiers) > self.max_outcomes:
                raise TooLargeError(
                    f"method 'chain' passed {self.max_outcomes:,} distinct frontiers (the limit); "
                    f"use a smaller scheme, or --force to run anyway"
                )
        return i

    def options(self, member: Member) -> list[tuple[Fraction, tuple[Slot, ...]]]:
        """A member's K children as alternatives over its sampled slot's classes: (probability,
        ((score, slot, kind, ((P(identity | class), token), ...)), ...))."""
        if member not in self._options:
            ctx, s = member
            plan, m = self.plans(ctx), self.scheme.m
            dets: list[Slot] = [(s * q, i, "det", ((ONE, t),)) for i, (t, q) in enumerate(plan.det)]
            if plan.qtilde is None:
                self._options[member] = [(ONE, tuple(dets))]
            else:
                out = []
                for g, ys in plan.classes:
                    z = sum((plan.qtilde[y] for y in ys), ZERO)
                    sampled: Slot = (
                        s * plan.factor_for(ys[0]),
                        m,
                        "sampled",
                        tuple((plan.qtilde[y] / z, y) for y in ys),
                    )
                    fills: list[Slot] = [
                        (s * q, m + 1 + i, "fill", ((ONE, t),)) for i, (t, q) in enumerate(plan.fills_for(ys[0]))
                    ]
                    out.append((g, tuple(dets + [sampled] + fills)))
                self._options[member] = out
        return self._options[member]

    def moves(self, fid: int, depth: int) -> list[tuple[Fraction, tuple[Child, ...]]]:
        """Depth + 1's nodes from frontier `fid` of `depth`, as alternatives (probability, children
        sorted by key)."""
        if (fid, depth) not in self._moves:
            alts: list[tuple[Fraction, tuple[Child, ...]]] = [(ONE, ())]
            for f, member in enumerate(self._frontiers[fid]):
                alts = [
                    (
                        a * g,
                        kids + tuple(((-float(sc), -sc, depth + 1, f, slot), kind, ids) for sc, slot, kind, ids in opt),
                    )
                    for a, kids in alts
                    for g, opt in self.options(member)
                ]
            self._moves[fid, depth] = [(a, tuple(sorted(kids, key=lambda c: c[0]))) for a, kids in alts]
        return self._moves[fid, depth]

    def split(self, fid: int, depth: int, j: int, width: int) -> Split:
        """The next frontier from move j's first `width` children, their sampled identities split:
        (probability of the move and the identities, its id, the identities)."""
        key = (fid, depth, j, width)
        if key not in self._splits:
            members = self._frontiers[fid]
            a, kids = self._moves[fid, depth][j]
            branches: list[tuple[Fraction, tuple[Member, ...], tuple[int, ...]]] = [(a, (), ())]
            for k, _, ids in kids[:width]:
                above = members[k[3]][0]
                branches = [
                    (b * w, ms + ((self.plans.memo(above + (y,)), -k[1]),), ys + (y,))
                    for b, ms, ys in branches
                    for w, y in ids
                ]
            self._splits[key] = [(b, self.frontier_id(ms), ys) for b, ms, ys in branches]
        return self._splits[key]

    # -- the cut -----------------------------------------------------------------------------------

    def keys(self, f0: int) -> list[Key]:
        """Every key a node of the round can have, sorted."""
        s, layer = self.scheme, {f0}
        found: set[Key] = set()
        for d in range(s.D):
            nxt: set[int] = set()
            for fid in layer:
                for j, (_, kids) in enumerate(self.moves(fid, d)):
                    found.update(k for k, _, _ in kids)
                    if d + 1 < s.D:
                        nxt.update(f2 for _, f2, _ in self.split(fid, d, j, min(s.W, len(kids))))
            layer = nxt
        return sorted(found)

    def at_least(self, f0: int, theta: Key) -> Fraction:
        """G(θ) = P(at least R nodes have key <= θ)."""
        s, memo = self.scheme, {}

        def g(fid: int, d: int, count: int) -> Fraction:
            if count >= s.R:
                return ONE
            if d == s.D:
                return ZERO
            if (fid, d, count) not in memo:
                total = ZERO
                for j, (a, kids) in enumerate(self.moves(fid, d)):
                    n = bisect_right(kids, (theta, ABOVE))
                    if count + n >= s.R:
                        total += a
                    elif d + 1 < s.D and n:
                        for b, f2, _ in self.split(fid, d, j, min(s.W, n)):
                            total += b * g(f2, d + 1, count + n)
                memo[fid, d, count] = total
            return memo[fid, d, count]

        self.passes += 1
        return g(f0, 0, 0)

    def cuts(self, f0: int) -> list[tuple[Key | None, Fraction]]:
        """(θ, P(the R-th key is θ)) for every θ with mass; [(None, 1)] when every node is kept."""
        s = self.scheme
        if nodes(s.K, s.W, s.D) - 1 < s.R:  # fewer non-root nodes than the budget: all kept
            return [(None, ONE)]
        keys = self.keys(f0)
        G: dict[int, Fraction] = {-1: ZERO}
        out: list[tuple[Key | None, Fraction]] = []

        def at(i: int) -> Fraction:
            if i not in G:
                G[i] = self.at_least(f0, keys[i])
            return G[i]

        def jumps(lo: int, hi: int) -> None:  # the jumps of G in (keys[lo], keys[hi]]
            if at(lo) == at(hi):
                return
            if hi == lo + 1:
                out.append((keys[hi], at(hi) - at(lo)))
                return
            mid = (lo + hi) // 2
            jumps(lo, mid)
            jumps(mid, hi)

        jumps(-1, len(keys) - 1)
        assert sum(p for _, p in out) == ONE, "the law of the cut does not sum to 1"
        return out

    # -- verification along the chain ---------------------------------------------------------------

    def law_at(self, context: Context, f0: int, theta: Key | None, out: Law) -> None:
        """Add to `out` the law of what the round emits on the event "the R-th key is θ" (θ None:
        every node is kept)."""
        s, memo = self.scheme, {}

        def kept(kids: tuple[Child, ...]) -> int:  # how many (a prefix: they are sorted) have key <= θ
            return len(kids) if theta is None else bisect_right(kids, (theta, ABOVE))

        def seen_now(seen: bool, kids: tuple[Child, ...], n: int) -> bool:
            return seen or (theta is not None and n > 0 and kids[n - 1][0] == theta)

        def ends(fid: int, d: int, count: int, seen: bool) -> Fraction:
            """P(the chain from frontier fid of depth d ends with exactly R nodes of key <= θ, θ among them)."""
            if theta is None:
                return ONE
            if d == s.D:
                return ONE if count == s.R and seen else ZERO
            if (fid, d, count, seen) not in memo:
                total = ZERO
                for j, (a, kids) in enumerate(self.moves(fid, d)):
                    n = kept(kids)
                    c2, s2 = count + n, seen_now(seen, kids, n)
                    if c2 > s.R:
                        continue
                    if d + 1 == s.D or not n:
                        total += a if c2 == s.R and s2 else ZERO
                        continue
                    for b, f2, _ in self.split(fid, d, j, min(s.W, n)):
                        total += b * ends(f2, d + 1, c2, s2)
                memo[fid, d, count, seen] = total
            return memo[fid, d, count, seen]

        # (frontier, count, seen, member verification stands on, emitted so far): probability
        layer: dict[tuple[int, int, bool, int, Context], Fraction] = {(f0, 0, False, 0, ()): ONE}
        stopped: dict[tuple[Context, tuple], Fraction] = defaultdict(Fraction)  # (emitted, kept children): weight
        for d in range(s.D):
            nxt: dict[tuple[int, int, bool, int, Context], Fraction] = defaultdict(Fraction)
            for (fid, count, seen, at, emitted), w in layer.items():
                ctx = context + emitted
                for j, (_, kids) in enumerate(self.moves(fid, d)):
                    n = kept(kids)
                    c2, s2 = count + n, seen_now(seen, kids, n)
                    if theta is not None and c2 > s.R:
                        continue
                    width = min(s.W, n) if d + 1 < s.D else 0
                    place = {
                        c[0][3:]: i for i, c in enumerate(kids[:width])
                    }  # (frontier index, slot): next frontier index
                    mine = sorted((c for c in kids[:n] if c[0][3] == at), key=lambda c: c[0][4])
                    for b, f2, ys in self.split(fid, d, j, width):
                        shape = tuple(
                            (kind, k[4], (ys[place[k[3:]]],) if k[3:] in place else tuple(y for _, y in ids), None)
                            for k, kind, ids in mine
                        )
                        if width:
                            rest = ends(f2, d + 1, c2, s2)
                        else:
                            rest = ONE if theta is None or (c2 == s.R and s2) else ZERO
                        accepts, bonus = self.laws.step(ctx, shape)
                        if rest and bonus:
                            stopped[emitted, shape] += w * b * rest
                        for i, y, acc in accepts:
                            k = mine[i][0]
                            if k[3:] in place:  # the walk goes on from the next frontier
                                nxt[f2, c2, s2, place[k[3:]], emitted + (y,)] += w * b * acc
                            elif rest:  # a kept leaf: verification ends there, with p's row
                                stopped[emitted + (y,), ()] += w * b * acc * rest
            layer = nxt
        assert not layer, "verification went past depth D"
        for (emitted, shape), w in stopped.items():  # each stop's bonus law, expanded once
            for v, pv in self.laws.step(context + emitted, shape)[1]:
                out[emitted + (v,)] += w * pv

    def round_law(self, context: Context) -> Law:
        """What a round from `context` emits (the whole round)."""
        context = tuple(context)
        f0 = self.frontier_id(((self.plans.memo(context), ONE),))
        out: Law = defaultdict(Fraction)
        for theta, _ in self.cuts(f0):
            self.passes += 1
            self.law_at(context, f0, theta, out)
        return dict(out)
