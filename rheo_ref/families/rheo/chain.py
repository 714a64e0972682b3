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
   G(θ) = P(at least R nodes have key <= θ) is monotone in θ; the keys it can jump at, the *band*,
   run from the first key where some round has R nodes of key <= θ to the first where every round
   has (`band`: binary searches by integer counts, `most`).
3. **Verification along the chain** (`rheo_ref.families.rheo.chain_walk`). One forward walk for the
   whole band: its θ share a walk until a child's key falls among them, and are followed apart only
   there. At each expansion the member's kept children are verified with `KeptLaws.step`
   (`transitions`); an accepted child that enters the next frontier carries the walk on, one that
   does not is a leaf (verification ends there with p's row); a walk that ends is weighted by the
   probability that the rest of the chain makes one of its θ the cut.
4. **In parallel** (a `Parallel`'s map). The band's θ partition the round's law, so the band is
   cut into chunks of at most CHUNK_KEYS keys, each walked from the root by `walk_chunk` in a
   worker (forked from here, it finds the chain built; elsewhere it builds its own); with one
   chunk (the scores near the cut far apart), the walks are grouped after each depth by what they
   have emitted, which never meet again, and the smaller groups are finished by `continue_walks` in
   the workers. The parts' laws add.

Exact: the round's law is Σ_θ P(the emitted sequence, the R-th key is θ), and the walk sums, in
the chain's own order, the same products of probabilities the kept-tree enumeration multiplies;
the law is checked to sum to 1. Checked against `dp` and `brute` (tests/test_ref_chain.py), with
and without worker processes.
"""

from __future__ import annotations

import json
import math
import os
import threading
from bisect import bisect_right
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from fractions import Fraction
from math import prod

from rheo_ref.errors import CaseError, TooLargeError
from rheo_ref.families.rheo.bestfirst import KeptLaws, Plans, check_factors_at_most_one
from rheo_ref.families.rheo.chain_walk import Layer, Transition, Walk
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.rheo.verify import Law
from rheo_ref.models import Case, Context
from rheo_ref.parallel import SERIAL, Parallel
from rheo_ref.sizes import nodes

ZERO, ONE = Fraction(0), Fraction(1)
Member = tuple[Context, Fraction]  # a frontier member: (context as the models see it, score)
Key = tuple[float, Fraction, int, int, int]  # (-float(score), -score, depth, parent's frontier index, slot)
Child = tuple[Key, str, tuple[tuple[Fraction, int], ...]]  # (key, kind, ((P(identity), token), ...))
Slot = tuple[Fraction, int, str, tuple[tuple[Fraction, int], ...]]  # (score, slot, kind, ((P(identity), token), ...))
Split = list[tuple[Fraction, int, tuple[int, ...]]]  # (probability, next frontier's id, identities of its members)
Band = tuple[Key, ...]  # the keys the R-th kept node can have, sorted
Span = tuple[int, int] | None
# θ per walk where worker processes run them: a walk over a span carries a state per run of θ it
# has split into, so a long band (close scores) walked at once grows its states and memos with the
# band; chunks bound them and are independent passes, run in parallel. In one process the whole
# band is one walk (sharing the most: the flat V = 16 table, a band of 302 keys, 8.9 s as one walk,
# 19.7 s in chunks of 32; with two workers 9.8 s as one walk cut by prefixes, 9.0 s in chunks of 64)
CHUNK_KEYS = 64
# the probe builds at most this many depths and extrapolates the rest (a case's D is bounded only
# by its size checks: a saturated chain of D = 10^18 adds a few branches per depth for ever)
PROBE_DEPTHS = 32

__all__ = ["ChainProbe", "ChainRounds", "continue_walks", "walk_chunk"]


@dataclass(frozen=True)
class ChainProbe:
    """What `ChainRounds.probe` saw of a round's chain: the distinct frontiers of each depth it
    built, and the branches (split entries) of each depth it counted; `splits` depths are split in
    all (D - 1: the last depth's frontiers are never expanded). `complete`: every depth was built,
    so the counts are the chain's own.

    When it stopped, the rest is extrapolated (`predicted`): each depth still to split multiplies the
    branches by the growth of the last step seen (the branches of the depth it stopped at over the
    depth before), and a depth's distinct frontiers are its branches times the share of the last
    branches that were distinct. An estimate, not a bound: a chain whose frontiers stop growing
    past the probe's depths is over-predicted."""

    frontiers: tuple[int, ...]
    branches: tuple[int, ...]
    splits: int
    complete: bool

    def predicted(self) -> tuple[float, float]:
        """(branches, distinct frontiers) of the whole chain: counted when complete, else
        extrapolated as the class docstring says."""
        if self.complete:
            return float(sum(self.branches)), float(sum(self.frontiers))
        b, f = self.branches, self.frontiers
        k = len(b) - 1  # the depth it stopped at: its branches counted, its next frontiers not built
        growth = b[k] / b[k - 1] if k and b[k - 1] else float(max(b[k], 1))
        distinct = f[k] / b[k - 1] if k and b[k - 1] else 1.0
        # depths k + 1 .. splits get frontiers b[k]·g^i·distinct (i = 0 .. n - 1), depths k + 1 ..
        # splits - 1 get branches b[k]·g^i (i = 1 .. n - 1): geometric sums, in closed form (D
        # may be astronomically large; a loop over it would not end)
        ahead = _geometric(growth, self.splits - k)
        total_f = float(sum(f)) + b[k] * distinct * ahead
        total_b = float(sum(b)) + b[k] * (ahead - 1.0)
        return total_b, total_f


def _geometric(g: float, n: int) -> float:
    """1 + g + ... + g^(n - 1) as a float (inf past the float range)."""
    if n <= 0:
        return 0.0
    if g == 1.0:
        return float(n)
    if g > 1.0 and n * math.log(g) > 700:
        return math.inf
    return (g**n - 1.0) / (g - 1.0)


class ChainRounds:
    """Whole round laws of a rheo-family case by the cut-conditioned frontier chain
    (`round_law(context)`). `enumerated` counts the frontiers of each round's chain (distinct at
    each depth; the same whether or not parts run elsewhere) over every round, and
    `passes` the passes over the chain (steps of the band's binary searches, and one verification
    walk per round); `max_outcomes` bounds the frontiers of one computation. With a `parallel` of
    several parts, each round's walks are cut into that many parts run through its map
    (`continue_walks`, in worker processes or on a Dask cluster); else everything runs here. Both
    give the same law."""

    method = "chain"
    takes_horizon = False

    def __init__(
        self,
        case: Case,
        *,
        max_outcomes: int | None = None,
        progress: Callable[[int], None] | None = None,
        parallel: Parallel = SERIAL,
        chunk: int | None = None,
    ) -> None:
        check_factors_at_most_one(case)
        self.case, self.scheme = case, case.scheme_as(Scheme)
        self.parallel = parallel
        if chunk is not None and (isinstance(chunk, bool) or not isinstance(chunk, int) or chunk < 1):
            raise CaseError(f"chunk={chunk!r}: the band's keys per walk must be an integer >= 1 (or None)")
        self.chunk = chunk  # None: CHUNK_KEYS with worker processes, else the whole band in one walk
        self.key = json.dumps(case.to_json(), sort_keys=True, allow_nan=False)  # names the case to worker processes
        self.plans = Plans(case)
        self.laws = KeptLaws(case, self.plans)
        self.max_outcomes, self.progress = max_outcomes, progress
        self._options: dict[Member, list[tuple[Fraction, tuple[Slot, ...]]]] = {}
        self._moves: dict[tuple[int, int], list[tuple[Fraction, tuple[Child, ...]]]] = {}
        self._splits: dict[tuple[int, int, int, int], Split] = {}
        self._next: dict[tuple[int, int, int, int], list[tuple[Fraction, int]]] = {}
        self._keys: dict[tuple[int, int, int], list[Key]] = {}
        self._transitions: dict[tuple[int, int, int, int, int], list[Transition]] = {}
        self._frontiers: list[tuple[Member, ...]] = []
        self._ids: dict[tuple[Member, ...], int] = {}
        self.passes = 0
        self.parts_here = False  # built by `continue_walks` for parts only (no round of its own runs on it)
        self.enumerated = 0  # frontiers of the chain of each round, depth by depth (the chain's states)

    # -- the chain ---------------------------------------------------------------------------------

    def frontier_id(self, members: tuple[Member, ...]) -> int:
        i = self._ids.get(members)
        if i is None:
            i = self._ids[members] = len(self._frontiers)
            self._frontiers.append(members)
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

    def next_frontiers(self, fid: int, depth: int, j: int, width: int) -> list[tuple[Fraction, int]]:
        """`split` with the identities summed out: (probability, next frontier's id), one per id."""
        key = (fid, depth, j, width)
        if key not in self._next:
            merged: dict[int, Fraction] = defaultdict(Fraction)
            for b, f2, _ in self.split(fid, depth, j, width):
                merged[f2] += b
            self._next[key] = [(b, f2) for f2, b in merged.items()]
        return self._next[key]

    def keys_of(self, fid: int, depth: int, j: int) -> list[Key]:
        """The keys of move j's children, sorted."""
        if (fid, depth, j) not in self._keys:
            self._keys[fid, depth, j] = [k for k, _, _ in self._moves[fid, depth][j][1]]
        return self._keys[fid, depth, j]

    def probe(self, context: Context, cap: int) -> ChainProbe:
        """The chain's size, depth by depth, as far as `cap` branches (a move's next frontiers with
        their sampled members split, `split`'s entries, the chain's unit of work and memory) reach:
        depth d's frontiers are built only while the branches built so far and depth d's stay within
        `cap`; the branches of the depth it stops at are counted, not built (a product of the
        children's identities per move), over its frontiers in id order until the cap is passed and
        scaled from those to the whole depth. It builds at most PROBE_DEPTHS depths (the rest is
        extrapolated) and ends early, complete, at a depth with no branch."""
        s = self.scheme
        layer = {self.frontier_id(((self.plans.memo(tuple(context)), ONE),))}
        frontiers: list[int] = []
        branches: list[int] = []
        for d in range(s.D - 1):  # the last depth's frontiers are not split (never expanded)
            frontiers.append(len(layer))
            count, looked = 0, 0
            for fid in sorted(layer):
                count += sum(prod(len(ids) for _, _, ids in kids[: s.W]) for _, kids in self.moves(fid, d))
                looked += 1
                if sum(branches) + count > cap:  # past the cap within the depth: scaled to the depth
                    count = count * len(layer) // looked
                    break
            branches.append(count)
            if sum(branches) > cap or (d + 1 >= PROBE_DEPTHS and d + 1 < s.D - 1):
                return ChainProbe(tuple(frontiers), tuple(branches), s.D - 1, complete=False)
            if not count:  # no branch at this depth: none below it, the chain ends here
                frontiers.append(0)
                return ChainProbe(tuple(frontiers), tuple(branches), s.D - 1, complete=True)
            nxt: set[int] = set()
            for fid in layer:
                for j, (_, kids) in enumerate(self.moves(fid, d)):
                    nxt.update(f2 for _, f2, _ in self.split(fid, d, j, min(s.W, len(kids))))
            layer = nxt
        frontiers.append(len(layer))
        return ChainProbe(tuple(frontiers), tuple(branches), s.D - 1, complete=True)

    # -- the cut -----------------------------------------------------------------------------------

    def keys(self, f0: int) -> list[Key]:
        """Every key a node of the round can have, sorted; the chain's frontiers, depth by depth, are
        counted in `enumerated`."""
        s, layer = self.scheme, {f0}
        found: set[Key] = set()
        for d in range(s.D):
            self.enumerated += len(layer)
            nxt: set[int] = set()
            for fid in layer:
                for f, member in enumerate(self._frontiers[fid]):  # a member's children, whatever the others do
                    found.update(
                        (-float(sc), -sc, d + 1, f, slot) for _, opt in self.options(member) for sc, slot, _, _ in opt
                    )
                for j, (_, kids) in enumerate(self.moves(fid, d)):
                    if d + 1 < s.D:
                        nxt.update(f2 for _, f2, _ in self.split(fid, d, j, min(s.W, len(kids))))
            layer = nxt
        return sorted(found)

    def most(self, f0: int, theta: Key, pick: Callable[[Iterable[int]], int]) -> int:
        """The most (pick=max) or fewest (pick=min) nodes of key <= θ that a round of positive
        probability has, capped at R: integers only, one memo entry per frontier and depth."""
        s, memo = self.scheme, {}

        def count(fid: int, d: int) -> int:
            if (fid, d) not in memo:
                found = []
                for j in range(len(self.moves(fid, d))):
                    n = bisect_right(self.keys_of(fid, d, j), theta)
                    below = 0
                    if d + 1 < s.D and n:
                        below = pick(count(f2, d + 1) for _, f2 in self.next_frontiers(fid, d, j, min(s.W, n)))
                    found.append(min(s.R, n + below))
                memo[fid, d] = pick(found)
            return memo[fid, d]

        self.passes += 1
        return count(f0, 0)

    def band(self, f0: int, keys: list[Key]) -> Band | None:
        """The keys the R-th kept node can have, sorted (None: the round has fewer nodes than R,
        all kept). With G(θ) = P(at least R nodes of key <= θ), monotone in θ, the band runs from the
        first key with G > 0 (some round has R nodes of key <= θ) to the first with G = 1 (every
        round has): two binary searches over `keys` (every key the chain can create), by `most`."""
        s = self.scheme
        if nodes(s.K, s.W, s.D) - 1 < s.R:
            return None

        def first(pick: Callable[[Iterable[int]], int]) -> int:  # the first key where `pick` reaches R
            lo, hi = 0, len(keys) - 1  # the last key counts every node: R at least
            while lo < hi:
                mid = (lo + hi) // 2
                lo, hi = (lo, mid) if self.most(f0, keys[mid], pick) >= s.R else (mid + 1, hi)
            return lo

        return tuple(keys[first(max) : first(min) + 1])

    # -- verification along the chain (rheo_ref.families.rheo.chain_walk) ---------------------------

    def transitions(self, fid: int, d: int, j: int, n: int, at: int) -> list[Transition]:
        """Verification at member `at` of frontier fid (depth d) when move j keeps its first n
        children: for each next frontier (its sampled members split), (probability, its id, the
        member's kept children as verification sees them, [(next frontier's member the walk goes
        on from, or -1 at a kept leaf, token, P(accepted))], whether a bonus can end the round)."""
        key = (fid, d, j, n, at)
        if key not in self._transitions:
            s = self.scheme
            kids = self._moves[fid, d][j][1]
            width = min(s.W, n) if d + 1 < s.D else 0
            place = {c[0][3:]: i for i, c in enumerate(kids[:width])}  # (frontier index, slot): next frontier index
            mine = sorted((c for c in kids[:n] if c[0][3] == at), key=lambda c: c[0][4])
            ctx = self._frontiers[fid][at][0]  # the member's context as the models see it
            out: list[Transition] = []
            for b, f2, ys in self.split(fid, d, j, width):
                shape = tuple(
                    (kind, k[4], (ys[place[k[3:]]],) if k[3:] in place else tuple(y for _, y in ids), None)
                    for k, kind, ids in mine
                )
                accepts, bonus = self.laws.step(ctx, shape)
                moves = [(place.get(mine[i][0][3:], -1), y, acc) for i, y, acc in accepts]
                out.append((b, f2, shape, moves, bool(bonus)))
            self._transitions[key] = out
        return self._transitions[key]

    def chunks(self, band: Band | None) -> list[Span]:
        """The band cut into runs of at most `chunk` keys (one walk each), or [None] (no cut)."""
        if band is None:
            return [None]
        n = len(band)
        c = self.chunk or (CHUNK_KEYS if self.parallel.parts > 1 else n)
        return [(i, min(i + c, n)) for i in range(0, n, c)]

    def round_law(self, context: Context) -> Law:
        """What a round from `context` emits (the whole round): Σ over the band's chunks of one walk
        each. With `parallel.parts` > 1 and several chunks, the chunks are the parts, each walked by
        `walk_chunk` through `parallel.map`; with one chunk, after each depth the walks are grouped
        by what they have emitted (walks of different prefixes never meet again); the largest group
        goes on here, the others are sent as parts to `continue_walks`, which finishes them while
        this process goes on."""
        context = tuple(context)
        f0 = self.frontier_id(((self.plans.memo(context), ONE),))
        band = self.band(f0, self.keys(f0))
        chunks = self.chunks(band)
        out: Law = defaultdict(Fraction)
        sent: list[Iterable[list[tuple[Context, int, int]]]] = []
        if len(chunks) > 1 and self.parallel.parts > 1:
            self.share(band, None)
            sent.append(self.parallel.map(walk_chunk, [(self.key, self.case, context, band, c) for c in chunks]))
            chunks = []
        for chunk in chunks:
            walk = Walk(self, band)
            layer = walk.start(f0, chunk)
            self.passes += 1
            for d in range(self.scheme.D):
                layer = walk.advance(layer, d)
                if self.parallel.parts > 1 and d + 1 < self.scheme.D:
                    layer, parts = self.cut(layer)
                    if parts:
                        self.share(band, walk)
                        sent.append(
                            self.parallel.map(
                                continue_walks, [(self.key, self.case, context, band, d + 1, p) for p in parts]
                            )
                        )
            assert not layer, "verification went past depth D"
            for seq, p in walk.finish(context).items():
                out[seq] += p
        for laws in sent:
            for law in laws:
                for seq, num, den in law:
                    out[seq] += Fraction(num, den)
        assert sum(out.values()) == ONE, "the round's law does not sum to 1"
        return dict(out)

    def share(self, band: Band | None, walk: Walk | None) -> None:
        """Let a worker forked from here find this chain built (and `walk`'s memos): one assignment,
        so that a part running in a thread of this process reads the old entry or this one."""
        _LIVE.clear()
        _LIVE[self.key] = (self, os.getpid(), band, walk or Walk(self, band))

    def cut(self, layer: Layer) -> tuple[Layer, list[list[tuple]]]:
        """(the walks of the largest group of a layer by what they have emitted, the other groups in
        at most `parallel.parts` parts of about equal size, portable: a frontier as its members, a
        weight as two integers). Walks that have emitted the same tokens stay together: they may
        meet again on one state below, and are then advanced once."""
        prefixes: dict[Context, Layer] = defaultdict(dict)
        for state, w in layer.items():
            prefixes[state[5]][state] = w
        if len(prefixes) < 2:
            return layer, []
        groups = sorted(prefixes.values(), key=len, reverse=True)
        parts: list[list[tuple]] = [[] for _ in range(min(self.parallel.parts, len(groups) - 1))]
        sizes = [0] * len(parts)
        for group in groups[1:]:
            i = sizes.index(min(sizes))  # the largest groups first, each to the smallest part
            emitted = next(iter(group))[5]
            walks = [
                (self._frontiers[f], c, s, sp, at, w.numerator, w.denominator)
                for (f, c, s, sp, at, _), w in group.items()
            ]
            parts[i].append((emitted, walks))
            sizes[i] += len(walks)
        return groups[0], parts


# The chain a process last used (or inherited when forked): key -> (chain, the process that built it,
# a band and a walk over it whose memos its parts share). One entry, replaced whole (one assignment).
_LIVE: dict[str, tuple[ChainRounds, int, Band | None, Walk]] = {}
_LOCK = threading.Lock()  # one part at a time per process (a Dask worker may run several threads)


def continue_walks(task: tuple) -> list[tuple[Context, int, int]]:
    """Advance one part of a round's walks to the end of the round (`ChainRounds.cut`'s parts, in a
    worker process): the law of what they emit, as (sequence, numerator, denominator).

    A worker forked from the process that cut the round finds its chain and walk built (copies);
    a part run in that very process (a Dask worker thread beside the cell's own) never touches the
    cell's chain, which goes on in the other thread: it builds its own, as any other process does."""
    key, case, context, band, d, part = task
    with _LOCK:
        chain, memos = _chain_for(key, case, band)
        walk = Walk(chain, band, memos=memos)
        layer: Layer = {}
        for emitted, walks in part:
            for members, count, seen, span, at, num, den in walks:
                layer[chain.frontier_id(members), count, seen, span, at, emitted] = Fraction(num, den)
        for depth in range(d, chain.scheme.D):
            layer = walk.advance(layer, depth)
        return [(seq, p.numerator, p.denominator) for seq, p in walk.finish(context).items()]


def _chain_for(key: str, case: Case, band: Band | None) -> tuple[ChainRounds, Walk]:
    """The chain of `key` in this process (`continue_walks`' rule) and a walk whose memos it shares;
    called under `_LOCK`."""
    live = _LIVE.get(key)
    if live is None or (live[1] == os.getpid() and not live[0].parts_here):
        chain = ChainRounds(case)
        chain.parts_here = True
        live = (chain, os.getpid(), band, Walk(chain, band))
    elif live[2] != band:
        live = (live[0], live[1], band, Walk(live[0], band))
    _LIVE.clear()
    _LIVE[key] = live
    return live[0], live[3]


def walk_chunk(task: tuple) -> list[tuple[Context, int, int]]:
    """One chunk of a round's band walked from the root to the end of the round, in a worker
    process: the law of what it emits, as (sequence, numerator, denominator)."""
    key, case, context, band, span = task
    with _LOCK:
        chain, _ = _chain_for(key, case, band)
        walk = Walk(chain, band)  # memos of its own: freed with it
        f0 = chain.frontier_id(((chain.plans.memo(context), ONE),))
        layer = walk.start(f0, span)
        for depth in range(chain.scheme.D):
            layer = walk.advance(layer, depth)
        return [(seq, p.numerator, p.denominator) for seq, p in walk.finish(context).items()]
