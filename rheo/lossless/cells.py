"""The cells a χ² test counts: every outcome of positive probability, the rare ones pooled
(`pool_cells`), shared by the gate's tests (`rheo.lossless.stats`) and the diagnosis of where a decoder
broke (`rheo.lossless.diagnosis`), which tests conditional laws the same way."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, TypeVar

MIN_EXPECTED = 10.0  # at α ~ 1e-6 a cell of expected count 5 alone reaches the χ² tail too often
Outcome = TypeVar("Outcome")  # a law's outcome: a token sequence, or one token of a conditional law


def pool_cells(law: Mapping[Outcome, Any], n: int, min_expected: float = MIN_EXPECTED) -> list[tuple[Outcome, ...]]:
    """The tested cells: outcomes of positive probability, those with n·p < `min_expected` pooled.

    Returns groups of outcomes (one group per tested cell), largest expected count first. The
    pooled group, if still below `min_expected`, absorbs the smallest remaining cells.
    """
    cells = sorted((k for k, p in law.items() if p > 0), key=lambda k: (law[k], k), reverse=True)
    big: list[tuple[Outcome, ...]] = [(k,) for k in cells if n * law[k] >= min_expected]
    small = tuple(k for k in cells if n * law[k] < min_expected)
    if small:
        pool = small
        while big and n * sum(law[k] for k in pool) < min_expected:
            pool = big.pop() + pool
        big.append(pool)
    return big


def pooled_mass(law: Mapping[Outcome, Any], groups: list[tuple[Outcome, ...]]) -> float:
    """Exact probability of the outcomes pooled into one cell (0 when every cell is one outcome)."""
    return float(sum((sum(law[o] for o in g) for g in groups if len(g) > 1), start=0))


class PoolShape:
    """The shape of `pool_cells(law, n)` (tested cells, pooled mass) at any n, in O(log K) per n.

    `pool_cells` sorts K outcomes for every n; the planner asks at hundreds of n. With the
    probabilities sorted once and their prefix sums, the outcomes below n·p < `min_expected`
    are a prefix, and the absorption of the smallest big cells is a short walk up that order.
    `breakpoints()` are the n at which the shape can change (an outcome leaves the pool).
    """

    def __init__(self, law: Mapping[Outcome, Any], min_expected: float = MIN_EXPECTED):
        from bisect import bisect_left
        from itertools import accumulate

        self._bisect = bisect_left
        self.probs = sorted(float(p) for p in law.values() if p > 0)  # ascending
        self.prefix = [0.0, *accumulate(self.probs)]
        self.min_expected = min_expected

    def at(self, n: int) -> tuple[int, float]:
        """(number of tested cells, pooled mass) of `pool_cells(law, n)`."""
        k_all = len(self.probs)
        s = self._bisect(self.probs, self.min_expected / n)  # outcomes with n·p < min_expected: probs[:s]
        if s == 0:
            return k_all, 0.0
        j = s  # the pool is probs[:j]; absorb the smallest big cells while its expected count is short
        while j < k_all and n * self.prefix[j] < self.min_expected:
            j += 1
        cells = k_all - j + 1
        mass = self.prefix[j] if j > 1 else 0.0  # a pool of one outcome is a cell of its own
        return cells, mass

    def breakpoints(self) -> list[int]:
        """Every n at which an outcome's expected count reaches `min_expected`, ascending."""
        return sorted({max(1, math.ceil(self.min_expected / p)) for p in self.probs})
