"""The treespark family's coin layout (docs/SCHEMES.md §13, "The coin stream"): the static family's
block over the scheme's node budget N, indexed by node id in creation order (the root is 0).

Node i's draw coin at i (1..N), its accept coin at N+1+i, the bonus coin at 2N+2
(`rheo_ref.coins.CoinLayout`); a round that stops before N nodes skips the rest. `rheo_fast`
draws and verifies on the same `TreeSparkLayout`.
"""

from __future__ import annotations

from dataclasses import dataclass

from rheo_ref.coins import CoinLayout
from rheo_ref.families.treespark.scheme import TreeSparkScheme


@dataclass(frozen=True)
class TreeSparkLayout(CoinLayout):
    """N node slots (the budget) and the deepest level D of one round's tree."""

    N: int
    D: int


def treespark_layout(scheme: TreeSparkScheme) -> TreeSparkLayout:
    return TreeSparkLayout(scheme.N, scheme.D)
