"""Maps for the exact reference's independent parts (rheo_ref.parallel): local worker processes or
a Dask cluster, never a scheduler of ours (docs/EXACT_AT_SCALE.md §10).

- `local_parallel(workers)`: a `concurrent.futures.ProcessPoolExecutor` of `workers` processes
  (1: none, everything runs in this process), forked where the platform can, so that a worker
  starts with what this process had built when the first part was sent (a chain of frontiers);
- `dask_parallel()`: inside a task running on a Dask worker (a `rheo sweep --scheduler` cell), the
  cluster itself, through `distributed.worker_client` (the task leaves the worker's thread pool
  while its parts run, so the parts never wait for it).
Dask is imported only where it is used.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from contextlib import contextmanager
from typing import Any

from rheo_ref.parallel import SERIAL, Parallel
from rheo_ref.validate import integer

MAX_WORKERS = 1024
PARTS_PER_WORKER = 4  # parts are uneven: a few per worker even them out


def default_workers() -> int:
    """The CPUs this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


@contextmanager
def local_parallel(workers: int | None = None) -> Iterator[Parallel]:
    """`workers` local processes (default: the CPUs this process may run on; 1: this process)."""
    workers = default_workers() if workers is None else workers
    integer("--workers", workers, min=1, max=MAX_WORKERS)
    if workers == 1:
        yield SERIAL
        return
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else None)
    pool = ProcessPoolExecutor(max_workers=workers, mp_context=context)
    try:
        yield Parallel(lambda fn, tasks: pool.map(fn, tasks), PARTS_PER_WORKER * workers)
    except BaseException:  # Ctrl-C, an error: stop the workers now, not after their parts
        pool.shutdown(wait=False, cancel_futures=True)
        for proc in list((getattr(pool, "_processes", None) or {}).values()):
            proc.terminate()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


def dask_parallel() -> Parallel:
    """Inside a task on a Dask worker: parts mapped onto its cluster, `PARTS_PER_WORKER` per worker.
    The parts are sent at once and gathered when read; the task leaves the worker's thread pool
    only while it sends or waits (`distributed.worker_client`), so a cell that cuts nothing holds
    its thread as any other."""
    import distributed

    workers = max(1, len(distributed.get_client().scheduler_info().get("workers", {})))

    def run(fn: Callable[[Any], Any], tasks: Iterable[Any]) -> Iterator[Any]:
        with distributed.worker_client() as client:  # sent now; gathered when the caller reads them
            futures = client.map(fn, list(tasks), pure=False)
        return gathered(futures)

    def gathered(futures: list[Any]) -> Iterator[Any]:
        with distributed.worker_client() as client:
            yield from client.gather(futures)

    return Parallel(run, PARTS_PER_WORKER * workers)
