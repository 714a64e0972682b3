"""Exact laws of the bug-class decoder (`rheo_ref.bugclasses.decoder`) and of the request's target.

`decoder_law` runs the decoder itself under an enumerating `Random`: every uniform of the stream
is kept as the interval [lo, hi) it is known to lie in (uniform on it), a test `u < a` splits the
interval, and an inverse-CDF draw splits it at the row's cumulative sums. The decoder is re-run
once per path of choices (depth-first over a trail of choices), and each path's probability is
the product of the conditional probabilities of its choices. Because a uniform's interval is kept
across uses, a uniform used twice (one stream position read by two draws) gets its exact joint
law. All in Fractions: the law is exact wherever the rows are rational (every processor here keeps
them so, docs in the decoder module).

`target_law` is the law the request asks for: tokens drawn one by one from the target's
processed rows (the penalties counting the generated tokens; a grammar constraint masking each
row by its state before processing).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from functools import lru_cache
from typing import Any

from rheo_ref.laws import Law

from ..constraint import Constraint
from ..errors import TieError
from ..models import TableModel
from .decoder import CORRECT, Models, Request, Steps, Weights, decode, process

ZERO, ONE = Fraction(0), Fraction(1)


@dataclass
class Enumerating:
    """A `Random` that follows a trail of choices and records the choice points it meets."""

    trail: list[int]
    arity: list[int] = field(default_factory=list)
    prob: Fraction = ONE
    intervals: dict[tuple[str, int], tuple[Fraction, Fraction]] = field(default_factory=dict)

    def uniform(self, position: int) -> tuple[str, int]:
        """The uniform at a stream position (a handle; a plain number is a constant uniform)."""
        u = ("u", position)
        self.intervals.setdefault(u, (ZERO, ONE))
        return u

    def next_trail(self) -> list[int] | None:
        """The trail of the next path after the one just followed (an odometer over the choice points
        met, the last one turning fastest); None when every path has been followed."""
        trail = self.trail[: len(self.arity)]
        while trail and trail[-1] + 1 >= self.arity[len(trail) - 1]:
            trail.pop()
        if not trail:
            return None
        trail[-1] += 1
        return trail

    def _choose(self, options: list[tuple[Fraction, Any]]) -> Any:
        options = [o for o in options if o[0] > 0]
        k = len(self.arity)
        if k == len(self.trail):
            self.trail.append(0)
        self.arity.append(len(options))
        prob, value = options[self.trail[k]]
        self.prob *= prob
        return value

    def below(self, u: Any, a: Fraction) -> bool:
        if not isinstance(u, tuple):  # a constant
            return bool(u < a)
        lo, hi = self.intervals[u]
        c = min(max(Fraction(a), lo), hi)
        hit = self._choose([((c - lo) / (hi - lo), (True, (lo, c))), ((hi - c) / (hi - lo), (False, (c, hi)))])
        self.intervals[u] = hit[1]
        return hit[0]

    def pick(self, u: Any, row: Weights, closed: bool = False) -> int:
        """Continuous uniforms: a boundary has probability 0, so `closed` changes nothing."""
        lo, hi = self.intervals[u]
        options = []
        for t, (a, b) in enumerate(_bounds(row)):
            if b > lo and a < hi and b > a:
                a, b = max(lo, a), min(hi, b)
                options.append(((b - a) / (hi - lo), (t, (a, b))))
        t, iv = self._choose(options)
        self.intervals[u] = iv
        return t


@dataclass
class GridEnumerating(Enumerating):
    """`Enumerating` with every uniform on the grid {0, 1/M, ..., (M − 1)/M} (M = `grid`), as a
    replay that feeds exact coins does: a uniform is kept as the integer range [lo, hi) of its k,
    and a coin exactly on a cumulative sum is possible, so `pick(closed=True)` (u ≤ the sum) differs."""

    grid: int = 16

    def uniform(self, position: int) -> tuple[str, int]:
        u = ("u", position)
        self.intervals.setdefault(u, (ZERO, Fraction(self.grid)))
        return u

    def below(self, u: Any, a: Fraction) -> bool:
        if not isinstance(u, tuple):
            return bool(u < a)
        lo, hi = self.intervals[u]
        c = min(max(Fraction(math.ceil(Fraction(a) * self.grid)), lo), hi)  # k/M < a  <=>  k < ceil(aM)
        hit = self._choose([((c - lo) / (hi - lo), (True, (lo, c))), ((hi - c) / (hi - lo), (False, (c, hi)))])
        self.intervals[u] = hit[1]
        return hit[0]

    def pick(self, u: Any, row: Weights, closed: bool = False) -> int:
        lo, hi = self.intervals[u]
        M, options = self.grid, []
        for t, (a, b) in enumerate(_bounds(row)):
            if closed:  # k/M <= b and (t = 0 or k/M > a): disjoint in t; token 0 takes k = 0 even at mass 0
                ka = ZERO if t == 0 else Fraction(math.floor(a * M) + 1)
                kb = Fraction(math.floor(b * M) + 1)
            else:  # a <= k/M < b
                ka, kb = Fraction(math.ceil(a * M)), Fraction(math.ceil(b * M))
            ka, kb = max(lo, ka), min(hi, kb)
            if kb > ka:
                options.append(((kb - ka) / (hi - lo), (t, (ka, kb))))
        t, iv = self._choose(options)
        self.intervals[u] = iv
        return t


@lru_cache(maxsize=1 << 16)
def _bounds(row: Weights) -> tuple[tuple[Fraction, Fraction], ...]:
    """Token t's interval [a, b) of the inverse CDF of a row (normalised by its sum)."""
    z = sum(row, ZERO)
    out, below = [], ZERO
    for w in row:
        out.append((below / z, (below + w) / z))
        below += w
    return tuple(out)


def decoder_law(
    draft: TableModel,
    target: TableModel,
    context: Sequence[int],
    n: int,
    req: Request,
    steps: Steps = CORRECT,
    *,
    first_round: bool = False,
    constraint: Constraint | None = None,
    logprobs: bool = False,
    grid: int | None = None,
) -> Law:
    """Exact law of the first n tokens the decoder (with `steps`) emits (`first_round`: of the
    prefill token and the first verification step's tokens). `logprobs`: of the tokens followed by
    1 when every probability the decoder reports is the processed target's (`reported_ok`), else 0.
    `grid`: every uniform on the exact grid {k/grid} instead of continuous (`GridEnumerating`)."""
    law: Law = {}
    models = Models(draft, target)
    trail: list[int] = []
    while True:
        rand = Enumerating(trail) if grid is None else GridEnumerating(trail, grid=grid)
        reported: list = []
        out = decode(
            models, context, n, req, rand, steps, first_round=first_round, constraint=constraint, logprobs=reported
        )
        if logprobs:
            out = (*out, int(reported_ok(target, context, req, constraint, out, reported)))
        law[out] = law.get(out, ZERO) + rand.prob
        next_trail = rand.next_trail()
        if next_trail is None:
            return law
        trail = next_trail


def target_row(
    target: TableModel, context: Sequence[int], seq: tuple[int, ...], req: Request, constraint: Constraint | None
) -> Weights:
    """The request's processed row after context + seq (masked by the constraint's state after seq)."""
    raw = target.row(tuple(context) + seq)
    if constraint is not None:
        raw = constraint.mask(raw, constraint.state(seq))
    try:
        return process(raw, [seq.count(t) for t in range(target.vocab_size)], req, (*context, *seq))
    except TieError as e:  # name the row: the target after context + seq
        raise TieError(f"target row after {[*context, *seq]}{str(e).removeprefix('row')}") from None


def reported_ok(
    target: TableModel,
    context: Sequence[int],
    req: Request,
    constraint: Constraint | None,
    out: Sequence[int],
    reported: Sequence[Any],
) -> bool:
    """Whether every reported probability is the processed target's at its position, exactly."""

    def same(rep: Any, exact: Fraction) -> bool:  # a float report is the exact value held as float64
        return rep == (float(exact) if isinstance(rep, float) else exact)

    rows = (target_row(target, context, tuple(out[:i]), req, constraint) for i in range(len(out)))
    return len(reported) == len(out) and all(same(rep, row[t]) for row, t, rep in zip(rows, out, reported))


def target_law(
    target: TableModel, context: Sequence[int], n: int, req: Request, constraint: Constraint | None = None
) -> Law:
    """Exact law of n tokens drawn one by one from the target's processed rows (masked by the
    constraint: the masked, renormalised target)."""
    law: Law = {(): ONE}
    for _ in range(n):
        nxt: Law = {}
        for seq, pr in law.items():
            p = target_row(target, context, seq, req, constraint)
            for t, x in enumerate(p):
                if x > 0:
                    nxt[seq + (t,)] = nxt.get(seq + (t,), ZERO) + pr * x
        law = nxt
    return law


def marginal(law: Mapping[tuple[int, ...], Fraction], n: int) -> Law:
    """The law of the first n tokens."""
    out: Law = {}
    for seq, pr in law.items():
        out[seq[:n]] = out.get(seq[:n], ZERO) + pr
    return out
