"""The static family's coin layout (docs/SCHEMES.md §7, "The coin stream"): the shape every round
draws on (node ids, depths, who is drawn when, the traversal's orders) and where its coins sit.

Node ids are the shape's creation order (the root is 0); the coin block is
`rheo_ref.coins.CoinLayout`'s over the shape's N draft nodes: node i's draw coin at i, its accept
coin at N+1+i, the bonus coin at 2N+2. `rheo_fast` draws and verifies on the same `StaticLayout`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache

from rheo_ref.coins import CoinLayout
from rheo_ref.families.static.scheme import StaticScheme, depths
from rheo_ref.verifier_laws import children_lists


@dataclass(frozen=True)
class StaticLayout(CoinLayout):
    """The shape of every round: node ids, depths, who is drawn when and the traversal's order."""

    parents: tuple[int, ...]  # node i+1's parent (0 = root)
    sampling: str

    @property
    def N(self) -> int:
        return len(self.parents)

    @cached_property
    def kids(self) -> list[list[int]]:
        return children_lists(self.parents)

    @cached_property
    def depth(self) -> list[int]:
        return depths(self.parents)

    @property
    def D(self) -> int:
        return max(self.depth)

    @cached_property
    def levels(self) -> list[tuple[list[int], list[list[tuple[int, int]]]]]:
        """Per depth d < D: (the depth-d nodes with children, F of them; their children by sibling
        rank j: [(child id, index f of its parent)])."""
        out = []
        for d in range(self.D):
            expanders = [v for v in range(self.N + 1) if self.depth[v] == d and self.kids[v]]
            ranks: list[list[tuple[int, int]]] = [[] for _ in range(max(len(self.kids[v]) for v in expanders))]
            for f, v in enumerate(expanders):
                for j, c in enumerate(self.kids[v]):
                    ranks[j].append((c, f))
            out.append((expanders, ranks))
        return out

    @cached_property
    def euler(self) -> list[tuple[bool, int]]:
        """(entering, v) for every non-root node: entering in pre-order, leaving in post-order."""
        out: list[tuple[bool, int]] = []

        def walk(v: int) -> None:
            for c in self.kids[v]:
                out.append((True, c))
                walk(c)
                out.append((False, c))

        walk(0)
        return out

    @cached_property
    def kid_table(self) -> tuple[tuple[int, ...], ...]:
        """Per node, its children padded with -1 to the widest node's count (the by-leaf walk)."""
        k = max(len(ks) for ks in self.kids)
        return tuple(tuple(ks) + (-1,) * (k - len(ks)) for ks in self.kids)

    @cached_property
    def below(self) -> tuple[tuple[int, ...], ...]:
        """below[u][c] = 1 when c is a proper descendant of u."""
        out = [[0] * (self.N + 1) for _ in range(self.N + 1)]
        for c in range(1, self.N + 1):
            u = self.parents[c - 1]
            while True:
                out[u][c] = 1
                if u == 0:
                    break
                u = self.parents[u - 1]
        return tuple(map(tuple, out))


def static_layout(scheme: StaticScheme) -> StaticLayout:
    return _layout(scheme.parents, scheme.sampling)


@lru_cache(maxsize=64)
def _layout(parents: tuple[int, ...], sampling: str) -> StaticLayout:
    return StaticLayout(parents, sampling)
