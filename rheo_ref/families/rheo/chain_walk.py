"""Verification along the frontier chain of method `chain`, for every cut of a band at once
(docs/EXACT_AT_SCALE.md §9-§10).

The round's law is Σ_θ P(the emitted sequence, the R-th key is θ) over the keys θ the R-th kept node
can have (the band, `ChainRounds.band`). Given θ, a node is kept iff its key is <= θ. The walk for
one θ (frontier, nodes of key <= θ so far, θ seen?, the member verification stands on, what it has
emitted) depends on θ only where a child's key falls among the θ still possible: until then every
θ of a run of the band (a *span*) has the same count, the same kept children and the same walk. So
the walk carries a span instead of a θ, and a move whose children's keys fall inside it splits it
(`pieces`) into the runs that keep the same number of those children, and the θ equal to a child's
key (seen). Where the scores are close, the band is long and the cuts many, but they share the
walk down to the depths where their keys lie, and are followed apart only there.

- `ends(frontier, depth, span, count, seen)`: Σ over θ in the span of P(the rest of the chain ends
  with exactly R nodes of key <= θ, θ among them), memoised;
- `advance(layer, depth)`: one expansion of every walk: each move, each piece of its span, each
  next frontier (`ChainLike.transitions`: the member's kept children verified by
  `KeptLaws.step`); an accepted child that enters the next frontier carries the walk on, one that
  does not is a kept leaf (verification ends there with p's row); a walk that stops is weighted by
  `ends`, and a walk from which no θ of its span can be the cut (`ends` = 0) is dropped, since
  everything below it would be weighted by 0;
- `finish(context)`: each stop's bonus law, expanded once.

Exact: a span's walk is the walk of each of its θ, whose weights are the same up to the last
factor, `ends`, which sums over the span; splitting a span partitions its θ. Walks from different
frontiers are independent, so a layer can be cut into parts and each part advanced elsewhere
(`rheo_ref.families.rheo.chain.continue_walks`); the laws add.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from fractions import Fraction
from typing import Any, Protocol

from rheo_ref.families.rheo.verify import Law
from rheo_ref.models import Context

ZERO, ONE = Fraction(0), Fraction(1)
Span = tuple[int, int] | None  # θ in band[i:j]; None: no cut, every node is kept
Piece = tuple[Span, int, bool]  # (the θ of a span that keep n children, n, θ is one of their keys)
# a walk: (frontier, nodes of key <= θ so far, θ seen, span, member it stands on, emitted so far)
WalkState = tuple[int, int, bool, Span, int, Context]
Layer = dict[WalkState, Fraction]
# verification at one member for one next frontier: (probability, next frontier's id, the member's
# kept children as verification sees them, [(next frontier's member or -1 at a kept leaf, token,
# P(accepted))], whether a bonus can end the round there)
Transition = tuple[Fraction, int, tuple, list[tuple[int, int, Fraction]], bool]


class ChainLike(Protocol):
    """What the walk reads of `ChainRounds`: the chain's moves and their verification steps."""

    scheme: Any
    laws: Any

    def moves(self, fid: int, depth: int) -> list[tuple[Fraction, tuple]]: ...

    def keys_of(self, fid: int, depth: int, j: int) -> list[Any]: ...

    def next_frontiers(self, fid: int, depth: int, j: int, width: int) -> list[tuple[Fraction, int]]: ...

    def transitions(self, fid: int, depth: int, j: int, n: int, at: int) -> list[Transition]: ...


class Walk:
    """The verification walks of one round over the cuts of `band` (None: every node is kept)."""

    def __init__(self, chain: ChainLike, band: tuple | None, memos: Walk | None = None) -> None:
        """`memos`: a walk of the same chain and band whose memos (`ends`, `pieces`) this one shares
        (a part of a round, finished beside it); its stops stay its own."""
        self.chain, self.band, self.scheme = chain, band, chain.scheme
        self._ends: dict[tuple[int, int, Span, int, bool], Fraction] = {} if memos is None else memos._ends
        self._pieces: dict[tuple[int, int, int, Span], list[Piece]] = {} if memos is None else memos._pieces
        self.stopped: dict[tuple[Context, tuple], Fraction] = defaultdict(Fraction)  # (emitted, kept children)

    def start(self, f0: int, span: Span = None) -> Layer:
        """The walk from the root's frontier f0 over the θ of `span` (default: the whole band)."""
        if self.band is not None and span is None:
            span = (0, len(self.band))
        return {(f0, 0, False, span, 0, ()): ONE}

    def pieces(self, fid: int, d: int, j: int, span: Span) -> list[Piece]:
        """Move j's children kept by the θ of `span`: the runs of θ that keep the same number n of
        them (a prefix: they are sorted by key), in increasing n, the θ equal to a child's key alone."""
        if span is None:
            return [(None, len(self.chain.moves(fid, d)[j][1]), False)]
        if (fid, d, j, span) not in self._pieces:
            band, keys = self.band, self.chain.keys_of(fid, d, j)
            assert band is not None
            i, end = span
            n = bisect_left(keys, band[i])
            out: list[Piece] = []
            for k in keys[n:]:
                if k > band[end - 1]:
                    break
                p = bisect_left(band, k, i, end)  # band[i:p] < k <= band[p]
                if i < p:
                    out.append(((i, p), n, False))
                n += 1
                here = p < end and band[p] == k
                if here:
                    out.append(((p, p + 1), n, True))
                i = p + here
            if i < end:
                out.append(((i, end), n, False))
            self._pieces[fid, d, j, span] = out
        return self._pieces[fid, d, j, span]

    def ends(self, fid: int, d: int, span: Span, count: int, seen: bool) -> Fraction:
        """Σ over θ in band[span] of P(the chain from frontier fid of depth d ends with exactly R
        nodes of key <= θ, θ among them), given `count` such nodes so far (the same for every θ of
        the span) and whether θ was one of them (then the span is θ alone)."""
        s = self.scheme
        if span is None:
            return ONE
        if d == s.D:
            return ONE if count == s.R and seen else ZERO
        key = (fid, d, span, count, seen)
        if key not in self._ends:
            total = ZERO
            for j, (a, _) in enumerate(self.chain.moves(fid, d)):
                for sub, n, here in self.pieces(fid, d, j, span):
                    c2, s2 = count + n, seen or here
                    if c2 > s.R:
                        break
                    if d + 1 == s.D or not n:  # nothing below can have a key <= θ
                        total += a if c2 == s.R and s2 else ZERO
                        continue
                    for b, f2 in self.chain.next_frontiers(fid, d, j, min(s.W, n)):
                        total += b * self.ends(f2, d + 1, sub, c2, s2)
            self._ends[key] = total
        return self._ends[key]

    def advance(self, layer: Layer, d: int) -> Layer:
        """The walks after the expansion of depth d's frontiers; those that stop go to `stopped`."""
        s, chain, stopped = self.scheme, self.chain, self.stopped
        nxt: Layer = defaultdict(Fraction)
        for (fid, count, seen, span, at, emitted), w in layer.items():
            for j in range(len(chain.moves(fid, d))):
                for sub, n, here in self.pieces(fid, d, j, span):
                    c2, s2 = count + n, seen or here
                    if sub is not None and c2 > s.R:
                        break
                    deeper = d + 1 < s.D and n > 0
                    for b, f2, shape, accepts, bonus in chain.transitions(fid, d, j, n, at):
                        if deeper:
                            rest = self.ends(f2, d + 1, sub, c2, s2)
                        else:
                            rest = ONE if sub is None or (c2 == s.R and s2) else ZERO
                        if not rest:  # no θ of the piece is the cut below: every walk from here weighs 0
                            continue
                        wb = w * b
                        if bonus:
                            stopped[emitted, shape] += wb * rest
                        for i, y, acc in accepts:
                            if i >= 0:  # the walk goes on from the next frontier's member i
                                nxt[f2, c2, s2, sub, i, emitted + (y,)] += wb * acc
                            else:  # a kept leaf: verification ends there, with p's row
                                stopped[emitted + (y,), ()] += wb * acc * rest
        return nxt

    def finish(self, context: Context) -> Law:
        """The law of every stop so far: its bonus law, expanded once per (emitted, kept children)."""
        out: Law = defaultdict(Fraction)
        for (emitted, shape), w in self.stopped.items():
            for v, pv in self.chain.laws.step(context + emitted, shape)[1]:
                out[emitted + (v,)] += w * pv
        return dict(out)
