"""How an exact computation may run its independent parts elsewhere (docs/EXACT_AT_SCALE.md §10).

A `Parallel` is a map and a number of parts: `map(fn, tasks)` yields fn(task) for each task, in
any process that can import rheo_ref (the builtin `map`: here, one after the other; an executor's
`map`: local worker processes; a Dask client's: a cluster). The reference never starts processes
itself: the suite's engines (`rheo.engines`) make the maps, as `rheo_ref.grid.run_cells` takes
one. A computation that has nothing to cut ignores it; every part's result is exact, so the answer
is the same whatever runs them.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

from .errors import CaseError

Mapper = Callable[[Callable[[Any], Any], Iterable[Any]], Iterable[Any]]


@dataclass(frozen=True)
class Parallel:
    """`map` over about `parts` tasks (a few per worker, so that uneven parts even out)."""

    map: Mapper
    parts: int = 16

    def __post_init__(self) -> None:
        if isinstance(self.parts, bool) or not isinstance(self.parts, int) or self.parts < 1:
            raise CaseError(f"parts={self.parts!r} must be an integer >= 1")


SERIAL = Parallel(map, 1)  # the builtin map, one part: the computation runs here, uncut
