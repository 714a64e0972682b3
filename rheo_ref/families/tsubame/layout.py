"""The tsubame family's coin layout (docs/SCHEMES.md §12): the Top-K tree of pass 1 (the rheo
family's `RheoLayout`, which draws no coin) and the coin block of pass 2.

Pass 2 is a static round on the planned shape of n <= R nodes, so the block is
`rheo_ref.coins.CoinLayout`'s over N = R node slots: planned node i's draw coin at i, its accept
coin at R+1+i, the bonus coin at 2R+2. A shape of n < R nodes reads the first n of each kind and
skips the rest (`shape_positions`), so the block's size is the scheme's whatever the plan.
`rheo_fast` plans and draws on the same `TsubameLayout`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from rheo_ref.coins import CoinLayout
from rheo_ref.families.rheo.layout import RheoLayout
from rheo_ref.families.tsubame.scheme import TsubameScheme


@dataclass(frozen=True)
class TsubameLayout(CoinLayout):
    """Sizes of one round: `plan`, the Top-K tree of pass 1, and the coin block (N = R slots per kind)."""

    plan: RheoLayout
    R: int

    @property
    def N(self) -> int:
        return self.R

    @property
    def planned_nodes(self) -> int:
        """Nodes of every plan: min(R, the Top-K tree's size)."""
        return min(self.R, self.plan.N)

    def shape_positions(self, n: int) -> tuple[int, ...]:
        """The positions in this block of the static layout's block of a shape of n nodes."""
        R = self.R
        return (*range(n + 1), *range(R + 1, R + 2 + n), 2 * R + 2)

    def coins_for(self, coins: Any, n: int) -> Any:
        """The static layout's blocks [B, 2(n+1)+1] of a shape of n nodes, from blocks [B, 2(R+1)+1]."""
        return coins[:, list(self.shape_positions(n))]


def tsubame_layout(scheme: TsubameScheme) -> TsubameLayout:
    return TsubameLayout(RheoLayout(scheme.K, scheme.W, scheme.D), scheme.R)
