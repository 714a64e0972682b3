"""Exact laws of round-based decoders, in Fractions: from one round's law to the law of n tokens.

A round from a context emits one or more tokens (the accepted drafts, then a correction or a bonus);
`token_law` strings rounds together until every outcome has n tokens, cutting the last round at n.
It is lazy in n: a prefix that already has n tokens is never extended, so the cost is the number of
round-outcome prefixes shorter than n, not the law of whole rounds to a depth past n. Round laws are
memoised by context. `temper` is a temperature T = 1/k on an exact row (p^k normalised), the only
temperatures whose law is rational.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from fractions import Fraction

from rheo_ref.errors import CaseError

Law = dict[tuple[int, ...], Fraction]
Row = tuple[Fraction, ...]
ZERO, ONE = Fraction(0), Fraction(1)


def power_of(temperature: float | Fraction) -> int:
    """k for T = 1/k (k a positive integer); other temperatures have no rational law."""
    t = Fraction(temperature).limit_denominator(10**6)
    if t <= 0 or t.numerator != 1:
        raise CaseError(f"temperature {temperature!r} must be 1/k for an integer k >= 1 (1, 0.5, 0.25, ...)")
    return t.denominator


def temper(row: Sequence[Fraction], temperature: float | Fraction) -> Row:
    """The row at temperature T = 1/k: p^k normalised."""
    k = power_of(temperature)
    powered = [Fraction(x) ** k for x in row]
    z = sum(powered, ZERO)
    if z == 0:
        raise CaseError("a row with no positive entry has no law at any temperature")
    return tuple(x / z for x in powered)


def normalise(row: Sequence[Fraction]) -> Row | None:
    """The row over its sum; None when the sum is 0."""
    z = sum(row, ZERO)
    return None if z == 0 else tuple(Fraction(x) / z for x in row)


def token_law(round_law: Callable[[tuple[int, ...]], Law], context: Sequence[int], n: int, *, label: str = "") -> Law:
    """The law of the first n tokens of rounds played from `context` (see the module docstring)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise CaseError(f"tokens={n!r} must be an integer >= 1")
    from tqdm import tqdm

    memo: dict[tuple[int, ...], Law] = {}
    out: Law = defaultdict(Fraction)
    pending: list[tuple[tuple[int, ...], Fraction]] = [((), ONE)]
    with tqdm(desc=f"exact law {label}".strip(), unit=" prefixes", leave=False, disable=None) as bar:
        while pending:
            prefix, prob = pending.pop()
            bar.update(1)
            if len(prefix) >= n:
                out[prefix[:n]] += prob
                continue
            ctx = tuple(context) + prefix
            law = memo.get(ctx)
            if law is None:
                law = memo[ctx] = round_law(ctx)
            for emitted, w in law.items():
                if w:
                    pending.append((prefix + emitted, prob * w))
    return {k: v for k, v in out.items() if v}


def single_token_law(row_of: Callable[[tuple[int, ...]], Row], context: Sequence[int], n: int) -> Law:
    """The law of n tokens drawn one at a time from `row_of(context)` (a target's own sampler)."""

    def one(ctx: tuple[int, ...]) -> Law:
        return {(t,): w for t, w in enumerate(row_of(ctx)) if w}

    return token_law(one, context, n, label="target")
