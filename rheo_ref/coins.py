"""Coins: what every family's coupled replay shares (docs/FAST_PATH.md, docs/SCHEMES.md §7).

A round of any family reads one fixed-size block of uniforms in [0, 1) (floats, read exactly as
Fractions); `coin` reads one, `inverse_cdf` turns one into a token, `replay_rounds` is the
multi-round loop (each round continues from what the previous ones emitted). `CoinLayout` is
where each coin of the block sits, the same in every family: each family's layout (a frozen
dataclass in `rheo_ref/families/<name>/layout.py`, which `rheo_fast` uses too) says what N is.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from fractions import Fraction
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from rheo_ref.errors import CaseError
from rheo_ref.models import Case, Context

ZERO = Fraction(0)


class CoinLayout:
    """The coin block of one round, 2(N+1)+1 coins for N node slots (the root is node 0): node i's
    draw (sample) coin at i, its accept coin at N+1+i, the bonus coin at 2N+2. The root's draw and
    accept coins are never read. A family's layout subclasses this and defines `N` (a field or a
    property)."""

    if TYPE_CHECKING:

        @property
        def N(self) -> int: ...

    @property
    def n_coins(self) -> int:
        return 2 * (self.N + 1) + 1

    def accept(self, i: int) -> int:
        """The position of node i's accept coin (its draw coin is at i)."""
        return self.N + 1 + i

    @property
    def bonus(self) -> int:
        return 2 * self.N + 2

    def split(self, coins: Any) -> tuple[Any, Any, Any]:
        """A batch of blocks [B, n_coins] as (draw [B, 1+N], accept [B, 1+N], bonus [B])."""
        n = self.N + 1
        return coins[:, :n], coins[:, n : 2 * n], coins[:, 2 * n]


def coin(x: float) -> Fraction:
    u = Fraction(x)
    if not 0 <= u < 1:
        raise CaseError(f"coin {x!r} is outside [0, 1)")
    return u


def inverse_cdf(row: Sequence[Fraction], u: Fraction) -> int:
    """Inverse CDF in token-id order: the first t with u * Σ row < Σ_{s<=t} row(s)."""
    total = sum(row, ZERO)
    cum = ZERO
    for t, x in enumerate(row):
        cum += x
        if x > 0 and u * total < cum:
            return t
    raise AssertionError(f"coin {u} at or past the end of a row of mass {total}")


class Emits(Protocol):
    """A replayed round: what it emitted."""

    @property
    def emitted(self) -> tuple[int, ...]: ...


R = TypeVar("R", bound=Emits)


def replay_rounds(
    case: Case,
    round_at: Callable[[Context, Sequence[float]], R],
    coins: Callable[[int], Sequence[float]],
    n: int | None = None,
) -> list[R]:
    """The multi-round loop of every family's replay: `round_at(context, coins(i))` for round i,
    each continuing from what the previous ones emitted (`.emitted`), until n tokens (default
    case.tokens)."""
    n = case.tokens if n is None else n
    ctx, total = tuple(case.context), 0
    rounds: list[R] = []
    while total < n:
        rd = round_at(ctx, coins(len(rounds)))
        rounds.append(rd)
        ctx += rd.emitted
        total += len(rd.emitted)
    return rounds
