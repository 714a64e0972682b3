"""The child slots of one expansion (docs/ALGORITHM.md §3).

For a node with context c, tokens are ranked by q_rank(.|c) (descending, ties by lower id).
Slots 0..m-1 hold the top-m tokens (kind `det`); slot m holds one token y sampled from the
renormalised tail q̃ (kind `sampled`, factor = the proxy); slots m+1..K-1 hold the next K-m-1
tail tokens other than y in ranked order (kind `fill`). When the tail has no q_samp mass, the
node's K children are simply x_1..x_K (all `det`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from functools import cached_property

from rheo_ref.errors import CaseError
from rheo_ref.models import Proxy, Row

ZERO = Fraction(0)


def ranked(row: Sequence[Fraction]) -> list[int]:
    """Token ids by probability descending, ties by lower id."""
    return sorted(range(len(row)), key=lambda t: (-row[t], t))


def proxy_factor(proxy: Proxy, q_rank: Row, order: list[int], m: int, z_r: Fraction, y: int) -> Fraction:
    """The ranking factor of the sampled slot (docs/ALGORITHM.md §3); only `true` looks at y."""
    if proxy.kind == "true":
        return q_rank[y]
    if proxy.kind == "const":
        return proxy.number
    rheo = min(q_rank[order[m - 1]], z_r) if m >= 1 else q_rank[order[0]]
    if proxy.kind == "rheo":
        return rheo
    f = proxy.number * rheo  # scaled:s
    if f > 1:
        raise CaseError(
            f"proxy scaled:{proxy.value} gives factor {f} > 1; the kept tree would not be closed under parents"
        )
    return f


@dataclass(frozen=True)
class Expansion:
    """Everything about one expansion that does not depend on the sampled token y."""

    K: int
    m: int
    proxy: Proxy
    q_rank: Row
    order: list[int]  # all tokens, ranked by q_rank
    det: list[tuple[int, Fraction]]  # slots 0..m-1 (or 0..K-1 when nothing is sampled)
    qtilde: Row | None  # q̃ over the whole vocabulary (0 outside the tail); None: no sampled slot
    z_r: Fraction

    @property
    def tail(self) -> list[int]:
        """Ranked tail tokens V minus the top-m."""
        return self.order[self.m :]

    def qtilde_row(self) -> Row:
        """q̃ of the sampled slot (an expansion without one has none)."""
        if self.qtilde is None:
            raise CaseError("this expansion has no sampled slot (m = K, or no q_samp mass on the tail): no q̃")
        return self.qtilde

    def support(self) -> list[int]:
        """Tokens y with q̃(y) > 0, in ranked order (a list the caller must not change)."""
        return self._support

    @cached_property
    def _support(self) -> list[int]:
        qt = self.qtilde_row()
        return [t for t in self.tail if qt[t] > 0]

    def fills_for(self, y: int) -> list[tuple[int, Fraction]]:
        """Slots m+1..K-1 given the sampled token y (a list the caller must not change)."""
        fills = self._fills.get(y)
        if fills is None:
            n = self.K - self.m - 1
            fills = self._fills[y] = [(t, self.q_rank[t]) for t in [t for t in self.tail if t != y][:n]]
        return fills

    @cached_property
    def _fills(self) -> dict[int, list[tuple[int, Fraction]]]:
        return {}  # fills by sampled token, filled on demand (an expansion is a pure function of its rows)

    @cached_property
    def classes(self) -> list[tuple[Fraction, tuple[int, ...]]]:
        """The sampled token's equivalence classes: ids that give the same fills and the same
        factor, each with its q̃ mass, in ranked order of their first id."""
        groups: dict[tuple, list[int]] = {}
        for y in self.support():
            groups.setdefault((tuple(self.fills_for(y)), self.factor_for(y)), []).append(y)
        qt = self.qtilde_row() if groups else ()
        return [(sum((qt[y] for y in ys), ZERO), tuple(ys)) for ys in groups.values()]

    def factor_for(self, y: int) -> Fraction:
        return proxy_factor(self.proxy, self.q_rank, self.order, self.m, self.z_r, y)


def expand(q_rank: Row, q_samp: Row, K: int, m: int, proxy: Proxy) -> Expansion:
    """Plan the K child slots of one node from its q_rank and q_samp rows."""
    order = ranked(q_rank)
    if m < K:
        tail = order[m:]
        z_r = sum((q_rank[t] for t in tail), ZERO)
        z_s = sum((q_samp[t] for t in tail), ZERO)
        if z_s > 0:
            in_tail = set(tail)
            qtilde = tuple(q_samp[t] / z_s if t in in_tail else ZERO for t in range(len(q_samp)))
            det = [(t, q_rank[t]) for t in order[:m]]
            return Expansion(K, m, proxy, q_rank, order, det, qtilde, z_r)
    det = [(t, q_rank[t]) for t in order[:K]]
    return Expansion(K, m, proxy, q_rank, order, det, None, ZERO)
