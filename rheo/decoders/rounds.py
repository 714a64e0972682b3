"""Exact laws of round-based served decoders, in Fractions: the helpers their law modules share.

A round from a context emits one or more tokens (the accepted drafts, then a correction or a bonus);
`token_law` is `rheo_ref.laws.compose` (the one composition of rounds) with the checks and the progress
bar a served decoder's law wants. `temper` is a temperature T = 1/k on an exact row (p^k normalised,
`rheo_ref.processing`), the only temperatures whose law is rational.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Mapping, Sequence
from fractions import Fraction
from typing import Any

from rheo.decoders.law_progress import LawProgress
from rheo_ref import processing
from rheo_ref.errors import CaseError
from rheo_ref.laws import Law, Row, compose, one_token_rounds


def power_of(temperature: float | Fraction) -> int:
    """k for T = 1/k (k a positive integer); other temperatures have no rational law."""
    t = Fraction(temperature).limit_denominator(10**6)
    if t <= 0 or t.numerator != 1:
        raise CaseError(f"temperature {temperature!r} must be 1/k for an integer k >= 1 (1, 0.5, 0.25, ...)")
    return t.denominator


def temper(row: Sequence[Fraction], temperature: float | Fraction) -> Row:
    """The row at temperature T = 1/k: p^k normalised (a row of zero mass is refused)."""
    return processing.normalise(processing.temperature(tuple(row), Fraction(1, power_of(temperature))))


def token_law(
    round_law: Callable[..., Mapping[Any, Fraction]],
    context: Sequence[int],
    n: int,
    *,
    label: str,
    key: Callable[[tuple[int, ...]], Hashable] | None = None,
    show: bool | None = None,
    state: Hashable | None = None,
) -> Law:
    """The law of the first n tokens of rounds played from `context` (`rheo_ref.laws.compose`), with a
    progress bar over the law's mass (`show`: None on a terminal only) and a stop report. `state`: the
    decoder's state at the start (then `round_law(ctx, m, state)` gives (tokens, state after) pairs)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise CaseError(f"tokens={n!r} must be an integer >= 1")
    with LawProgress(f"{label} exact law", n, context, show=show) as progress:
        if state is None:
            return compose(round_law, context, n, key=key, progress=progress)
        return compose(round_law, context, n, key=key, progress=progress, state=state)


def visible(context_length: int) -> Callable[[tuple[int, ...]], tuple[int, ...]]:
    """What a table model's rows read of a context: its last `context_length` tokens (a `key` for
    `token_law`: round laws are memoised by it)."""
    return lambda ctx: tuple(ctx[-context_length:]) if context_length else ()


class RowMemo:
    """A law's processed rows, each computed once per (kind, visible context): a table model's rows
    read only its last `context_length` tokens."""

    def __init__(self, context_length: int) -> None:
        self.visible = visible(context_length)
        self._rows: dict[tuple[str, tuple[int, ...]], Row] = {}

    def get(self, kind: str, ctx: tuple[int, ...], make: Callable[[], Row]) -> Row:
        """The row of `kind` after ctx, made by `make()` the first time its visible context is met."""
        key = (kind, self.visible(ctx))
        row = self._rows.get(key)
        if row is None:
            row = self._rows[key] = make()
        return row


def single_token_law(row_of: Callable[[tuple[int, ...]], Row], context: Sequence[int], n: int) -> Law:
    """The law of n tokens drawn one at a time from `row_of(context)` (a target's own sampler)."""
    return token_law(one_token_rounds(row_of), context, n, label="target")
