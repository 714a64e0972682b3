"""Exact laws, written once: the `Law` type (token tuples to `Fraction`s), the total-variation
distance `tv`, `normalise` (a row over its mass, with the zero-mass case said out loud) and
`compose` (the law of the next n tokens from the law of one round, rounds composed).

Every layer uses these: the reference's round and token laws, the decoders' exact laws
(`rheo.decoders`), the gate's checks and windows (`rheo.lossless`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from fractions import Fraction
from typing import Literal, overload

ZERO, ONE = Fraction(0), Fraction(1)

Law = dict[tuple[int, ...], Fraction]  # an exact law of token sequences (zero entries omitted)
Row = tuple[Fraction, ...]  # one next-token law (rheo_ref.models.Row)


def tv(a: Mapping, b: Mapping) -> Fraction:
    """Exact total-variation distance between two laws given as dicts: Σ|a − b| / 2."""
    return sum((abs(a.get(k, ZERO) - b.get(k, ZERO)) for k in set(a) | set(b)), ZERO) / 2


@overload
def normalise(r: Sequence[Fraction], *, on_zero: Literal["raise", "zeros"] = ...) -> Row: ...
@overload
def normalise(r: Sequence[Fraction], *, on_zero: Literal["none"]) -> Row | None: ...
def normalise(r: Sequence[Fraction], *, on_zero: str = "raise") -> Row | None:
    """r / Σr. A row of zero mass: `raise` (ZeroDivisionError: a branch of positive probability with
    nothing to draw is a bug), `zeros` (it stays zero: a sibling law with nothing left to draw) or
    `none` (None: a decoder whose code crashes there, e.g. torch.multinomial on a zero row)."""
    z = sum(r, ZERO)
    if z:
        return tuple(x / z for x in r)
    if on_zero == "zeros":
        return tuple(ZERO for _ in r)
    if on_zero == "none":
        return None
    raise ZeroDivisionError(f"normalise: a row of zero mass ({len(r)} entries) on a branch of positive probability")


def compose(
    round_law: Callable[[tuple[int, ...]], Mapping[tuple[int, ...], Fraction]],
    context: tuple[int, ...],
    n: int,
    *,
    memo: dict[tuple[Hashable, int], Law],
    key: Callable[[tuple[int, ...]], Hashable] = lambda ctx: ctx,
    absorbing: int | None = None,
) -> Law:
    """Law of the next n tokens after `context`: a round emits s with probability round_law(ctx)[s]; if
    s has n tokens or more its first n are kept, else the rest is the law of the next n − |s| tokens
    after ctx + s. `memo` keeps the tails by (key(ctx), n) (key: what the round law depends on).
    `absorbing`: a round that emits exactly (absorbing,) ends the decode (a crash), every token left
    is `absorbing`."""
    if n == 0:
        return {(): ONE}
    k = (key(context), n)
    if k in memo:
        return memo[k]
    out: dict[tuple[int, ...], Fraction] = defaultdict(Fraction)
    for s, ps in round_law(context).items():
        if absorbing is not None and s == (absorbing,):
            out[(absorbing,) * n] += ps
        elif len(s) >= n:
            out[s[:n]] += ps
        else:
            rest = compose(round_law, context + s, n - len(s), memo=memo, key=key, absorbing=absorbing)
            for s2, p2 in rest.items():
                if absorbing is not None and s2[:1] == (absorbing,):  # crashed later: n tokens of it
                    out[(absorbing,) * n] += ps * p2
                else:
                    out[s + s2] += ps * p2
    memo[k] = dict(out)
    return memo[k]
