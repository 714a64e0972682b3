"""Exact laws of round-based decoders, in Fractions: from one round's law to the law of n tokens.

A round from a context emits one or more tokens (the accepted drafts, then a correction or a bonus);
`token_law` strings rounds together until every outcome has n tokens, cutting the last round at n.
It is lazy in n: a prefix that already has n tokens is never extended. Round laws are memoised by
what they read of the context (`visible`: a table model's last L tokens), and so is the law of the
next m tokens after a context: one round law per visible context, one tail per (visible context, m),
whatever the number of prefixes that reach it (at V = 12, 4 tokens, 13 round laws instead of one per
prefix of up to 3 tokens). `temper` is a temperature T = 1/k on an exact row (p^k normalised), the only
temperatures whose law is rational.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Sequence
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


def visible(context_length: int) -> Callable[[tuple[int, ...]], tuple[int, ...]]:
    """What a table model's rows read of a context: its last `context_length` tokens."""
    return lambda ctx: tuple(ctx[-context_length:]) if context_length else ()


def token_law(
    round_law: Callable[[tuple[int, ...]], Law],
    context: Sequence[int],
    n: int,
    *,
    label: str = "",
    key: Callable[[tuple[int, ...]], Hashable] | None = None,
    cut: bool = False,
) -> Law:
    """The law of the first n tokens of rounds played from `context` (see the module docstring).
    `key(ctx)`: what a round's law depends on (`visible(L)` for table models; None: the whole context).
    Round laws are memoised by it, and so is the law of the next m tokens after a context, so a round
    is computed once per key and a tail once per (key, m). `cut`: round_law takes the tokens left,
    `round_law(ctx, m)`, and cuts its outcomes to m tokens (then rounds are memoised by (key, m))."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise CaseError(f"tokens={n!r} must be an integer >= 1")
    from tqdm import tqdm

    key_of: Callable[[tuple[int, ...]], Hashable] = (lambda c: c) if key is None else key
    rounds: dict[tuple[Hashable, int], Law] = {}
    tails: dict[tuple[Hashable, int], Law] = {}
    with tqdm(desc=f"exact law {label}".strip(), unit=" round laws", leave=False, disable=None) as bar:

        def tail(ctx: tuple[int, ...], m: int) -> Law:
            """The law of the next m tokens after ctx."""
            if m == 0:
                return {(): ONE}
            k = key_of(ctx)
            if (k, m) in tails:
                return tails[(k, m)]
            rk = (k, m if cut else 0)
            law = rounds.get(rk)
            if law is None:
                law = rounds[rk] = round_law(ctx, m) if cut else round_law(ctx)  # type: ignore[call-arg]
                bar.update(1)
            out: Law = defaultdict(Fraction)
            for emitted, w in law.items():
                if not w:
                    continue
                if len(emitted) >= m:
                    out[emitted[:m]] += w
                else:
                    for rest, w2 in tail(ctx + emitted, m - len(emitted)).items():
                        out[emitted + rest] += w * w2
            tails[(k, m)] = dict(out)
            return tails[(k, m)]

        law = tail(tuple(context), n)
    return {k: v for k, v in law.items() if v}


def single_token_law(row_of: Callable[[tuple[int, ...]], Row], context: Sequence[int], n: int) -> Law:
    """The law of n tokens drawn one at a time from `row_of(context)` (a target's own sampler)."""

    def one(ctx: tuple[int, ...]) -> Law:
        return {(t,): w for t, w in enumerate(row_of(ctx)) if w}

    return token_law(one, context, n, label="target")
