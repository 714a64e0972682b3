"""The rheo family's coin layout (docs/ALGORITHM.md §4, docs/FAST_PATH.md): the sizes of one round's
tree, which every round shares whatever its tokens, and where its coins sit.

Node ids are creation indices: the root (0) is expanded, then for d = 1..D-1 the min(W, #depth-d
nodes) best depth-d nodes; each expansion creates K children, so the children of expansion e
are the nodes 1 + K*e .. K*e + K. The coin block is `rheo_ref.coins.CoinLayout`'s over the N
non-root nodes: node i's sample coin at i, its accept coin at N+1+i, the bonus coin at 2N+2.
`rheo_fast` builds its trees on the same `RheoLayout`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property

from rheo_ref.coins import CoinLayout
from rheo_ref.families.rheo.scheme import Scheme


@dataclass(frozen=True)
class RheoLayout(CoinLayout):
    """Sizes of one round: frontier widths, expansion offsets, node count, coin count."""

    K: int
    W: int
    D: int

    @cached_property
    def widths(self) -> list[int]:
        """Nodes expanded at depth d = 0..D-1 (the root, then min(W, K * previous))."""
        w = [1]
        for _ in range(1, self.D):
            w.append(min(self.W, self.K * w[-1]))
        return w

    @cached_property
    def exp_offsets(self) -> list[int]:
        off = [0]
        for w in self.widths:
            off.append(off[-1] + w)
        return off

    @property
    def E(self) -> int:
        """Expansions of every round."""
        return self.exp_offsets[-1]

    @property
    def N(self) -> int:
        """Non-root nodes of every round's tree."""
        return self.K * self.E

    def depth_nodes(self, d: int) -> slice:
        """Node ids of depth d >= 1: the children of the depth-(d-1) expansions."""
        return slice(1 + self.K * self.exp_offsets[d - 1], 1 + self.K * self.exp_offsets[d])

    def depths(self) -> list[int]:
        out = [0]
        for d in range(1, self.D + 1):
            out += [d] * (self.K * self.widths[d - 1])
        return out


def rheo_layout(scheme: Scheme) -> RheoLayout:
    return RheoLayout(scheme.K, scheme.W, scheme.D)
