"""The cells a χ² test counts: every outcome of positive probability, the rare ones pooled
(`pool_cells`), shared by the gate's tests (`rheo.lossless.stats`) and the diagnosis of where a decoder
broke (`rheo.lossless.diagnosis`), which tests conditional laws the same way."""

from __future__ import annotations

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
