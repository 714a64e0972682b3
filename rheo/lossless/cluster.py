"""The gate's sampling on a Dask cluster (`rheo.on_dask`, `rheo gate --scheduler`; docs/GATE.md, "Sampling
on a cluster").

A call `sampler(case, seed, num_samples)` is cut into chunks of `chunk` samples (the last one shorter):
chunk i is drawn by one call `sampler(case, chunk_seed(seed, i), size_i)`, and the rows come back in
chunk order. The chunks and their seeds depend on (seed, num_samples, chunk) only, never on the
workers: the samples, and so the verdict, are the same on one worker or fifty, in whatever order the
chunks ran, and the same as `chunked(sampler, chunk=...)` draws in this process (the reference the
tests compare with).

Faults: a chunk is a pure function of its seed and size, so a chunk whose worker dies is drawn again by
the scheduler on another worker with the same seed (Dask reschedules the tasks of a lost worker): the
redrawn rows replace the lost ones, no sample is counted twice and the verdict is unchanged. A chunk
whose workers died `distributed.scheduler.allowed-failures` + 1 times (Dask's default: 4) is an
`EnvironmentFailure` naming the chunk; an exception the sampler raises is raised as it is (drawing that
chunk again would raise it again).

The sampler and the case travel to the workers by pickle (cloudpickle: a function defined in a module is
sent by reference, so that module must be importable on the workers; `rheo gate --sampler` sends the
module by value). Dask (`dask` and `distributed`) is the `dask` extra: `pip install 'rheo[dask]'`.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

from rheo.lossless import validate
from rheo_ref.errors import CaseError, EnvironmentFailure, MissingDependencyError, SamplerOutputError
from rheo_ref.validate import show

CHUNK = 500  # samples per chunk (a served driver starts once per chunk: seconds, against ~25 s of vLLM's sampling)
MAX_CHUNK = 10**6  # the gate's own sample limit
MAX_WORKERS = 1024  # processes of a local cluster
LOCAL = "local"
INSTALL = "pip install 'rheo[dask]'"
_ADDRESS = re.compile(r"tcp://([A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:]{2,39}\]):([0-9]{1,5})")
SCHEDULERS = f"{LOCAL!r} (a local cluster of `workers` processes), tcp://HOST:PORT, or a distributed.Client"


def chunk_seed(seed: int, index: int) -> int:
    """The seed of chunk `index` of a call with `seed`: a 63-bit hash of (seed, index), every chunk's
    (the first's too: `rheo.lossless.sequential.chunk_seed` hands a look the call's seed itself, and a
    look's chunk 0 must not repeat a chunk of the first look)."""
    digest = hashlib.blake2b(f"{seed}:chunk:{index}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def check_chunk(chunk: Any) -> int:
    """`chunk`: samples per chunk, an integer in [1, 10^6]."""
    if isinstance(chunk, bool) or not isinstance(chunk, int) or not 1 <= chunk <= MAX_CHUNK:
        raise CaseError(f"chunk={show(chunk)}; allowed: an integer number of samples per chunk in [1, {MAX_CHUNK:,}]")
    return chunk


def chunk_plan(seed: int, num_samples: int, chunk: int) -> list[tuple[int, int]]:
    """[(seed, size)] of the chunks of a call: ⌈num_samples / chunk⌉ chunks of `chunk` samples, the last
    one the rest."""
    check_chunk(chunk)
    return [
        (chunk_seed(seed, i), min(chunk, num_samples - start)) for i, start in enumerate(range(0, num_samples, chunk))
    ]


def draw_chunk(sampler: Any, case: Any, seed: int, size: int) -> tuple[list[tuple[int, ...]], list[int] | None]:
    """One chunk (on a worker): the sampler's `size` rows, cut to `case.tokens` and checked as the gate checks
    them, and, where it returned `Rounds`, the first-round lengths."""
    batch = sampler(case, seed, size)
    rows = validate.sampler_rows(batch, case.tokens, size)
    if hasattr(batch, "tokens") and hasattr(batch, "first_lengths"):
        return rows, validate.first_lengths(batch.first_lengths, size)
    return rows, None


def join(parts: Sequence[tuple[list[tuple[int, ...]], list[int] | None]]) -> Any:
    """The chunks' rows in chunk order (a `Rounds` where the chunks returned first-round lengths)."""
    rows = [r for part, _ in parts for r in part]
    kinds = {lengths is None for _, lengths in parts}
    if kinds == {False}:
        from rheo.lossless.horizon import Rounds

        return Rounds(rows, [x for _, lengths in parts for x in lengths or ()])
    if len(kinds) > 1:
        raise SamplerOutputError("the sampler returned Rounds for some chunks and plain rows for others; allowed: "
                                 "one kind for every call")  # fmt: skip
    return rows


class Chunked:
    """`chunked(sampler, chunk=...)`: the chunks of `on_dask`, drawn one after another in this process."""

    def __init__(self, sampler: Any, chunk: int = CHUNK) -> None:
        if not callable(sampler):
            raise CaseError(f"sampler {show(sampler)} is not callable; allowed: a function (case, seed, num_samples)")
        self.sampler, self.chunk = sampler, check_chunk(chunk)

    def __call__(self, case: Any, seed: int, num_samples: int) -> Any:
        return join([draw_chunk(self.sampler, case, s, k) for s, k in chunk_plan(seed, num_samples, self.chunk)])


def chunked(sampler: Any, *, chunk: int = CHUNK) -> Chunked:
    """The sampler cut into the chunks `on_dask` draws (same seeds, same rows), drawn here, in order."""
    return Chunked(sampler, chunk)


def require_dask() -> Any:
    """The `distributed` module, or MissingDependencyError naming the extra."""
    try:
        import distributed
    except ModuleNotFoundError:
        raise MissingDependencyError(f"sampling on a Dask cluster needs dask and distributed: {INSTALL}") from None
    return distributed


def check_scheduler(scheduler: Any, workers: int | None) -> None:
    """`scheduler` is 'local', tcp://HOST:PORT or a Client; `workers` goes with 'local' only (1..1024)."""
    if scheduler == LOCAL:
        if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                    or not 1 <= workers <= MAX_WORKERS):  # fmt: skip
            raise CaseError(f"workers={show(workers)}; allowed: an integer in [1, {MAX_WORKERS}] (processes of the "
                            "local cluster)")  # fmt: skip
        return
    if workers is not None:
        raise CaseError(f"workers={show(workers)} with scheduler={show(scheduler)}: a cluster has its own workers; "
                        f"allowed: workers with scheduler={LOCAL!r} only")  # fmt: skip
    if isinstance(scheduler, str):
        m = _ADDRESS.fullmatch(scheduler)
        if m and 1 <= int(m.group(2)) <= 65535:
            return
    elif type(scheduler).__name__ == "Client" and type(scheduler).__module__.startswith("distributed"):
        return
    raise CaseError(f"scheduler={show(scheduler)}; allowed: {SCHEDULERS} (port 1-65535; tls:// and ws:// need a "
                    "security configuration rheo does not take)")  # fmt: skip


@contextlib.contextmanager
def connect(scheduler: Any, workers: int | None = None) -> Iterator[Any]:
    """A `distributed.Client` of `scheduler`: a `Client` itself (left open), tcp://HOST:PORT (closed on
    leaving), or 'local': a cluster of `workers` processes (default one a core), one thread each, on
    127.0.0.1, stopped on leaving."""
    check_scheduler(scheduler, workers)
    distributed = require_dask()
    if not isinstance(scheduler, str):
        yield scheduler
    elif scheduler == LOCAL:
        n = workers if workers is not None else (os.cpu_count() or 1)
        with (
            distributed.LocalCluster(
                n_workers=n, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address="127.0.0.1:0"
            ) as local,
            distributed.Client(local) as client,
        ):
            yield client
    else:
        try:
            client = distributed.Client(scheduler, timeout="30s")
        except OSError as e:
            raise CaseError(f"scheduler={scheduler}: no Dask scheduler answers there ({e})") from None
        with client:
            yield client


class DaskSampler:
    """A sampler whose chunks run on a Dask cluster (`rheo.on_dask`). A context manager: leaving it closes
    the client and the local cluster it started (a Client passed in is the caller's and stays open)."""

    def __init__(self, sampler: Any, scheduler: Any, *, chunk: int = CHUNK, workers: int | None = None) -> None:
        Chunked(sampler, chunk)  # (checks the sampler and the chunk)
        self.sampler, self.chunk = sampler, chunk
        check_scheduler(scheduler, workers)
        self.scheduler, self.workers = scheduler, workers
        self._client: Any = None
        self._stack: contextlib.ExitStack | None = None
        require_dask()  # missing Dask: refused here, before any sampling

    @property
    def client(self) -> Any:
        """The client (connected, or the local cluster started, on first use)."""
        if self._client is None:
            self._stack = contextlib.ExitStack()
            self._client = self._stack.enter_context(connect(self.scheduler, self.workers))
        return self._client

    def __call__(self, case: Any, seed: int, num_samples: int) -> Any:
        distributed = require_dask()
        plan = chunk_plan(seed, num_samples, self.chunk)
        client = self.client
        call = uuid.uuid4().hex[:12]
        futures = [
            client.submit(draw_chunk, self.sampler, case, s, k, key=f"rheo-chunk-{call}-{i}", pure=False)
            for i, (s, k) in enumerate(plan)
        ]
        parts = []
        try:
            for i, f in enumerate(futures):
                try:
                    parts.append(f.result())
                except distributed.KilledWorker as e:
                    raise EnvironmentFailure(
                        f"chunk {i} (seed {plan[i][0]}, {plan[i][1]} samples): every worker that drew it died "
                        f"({e}); Dask gives a chunk up after distributed.scheduler.allowed-failures deaths"
                    ) from None
                except (distributed.comm.CommClosedError, distributed.client.FutureCancelledError) as e:
                    # (an OSError the sampler raises is its own: raised as it is)
                    raise EnvironmentFailure(
                        f"chunk {i}: the Dask scheduler was lost or cancelled it ({type(e).__name__}: {e})"
                    ) from None
        finally:
            client.cancel([f for f in futures if not f.done()])
        return join(parts)

    def close(self) -> None:
        """Close the client and the local cluster this sampler started (a Client passed in stays open)."""
        if self._stack is not None:
            self._stack.close()
        self._client = self._stack = None

    def __enter__(self) -> DaskSampler:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def on_dask(sampler: Any, scheduler: Any, *, chunk: int = CHUNK, workers: int | None = None) -> DaskSampler:
    """`rheo.on_dask`: `sampler` with its samples drawn on a Dask cluster, in chunks of `chunk` whose seeds
    depend on the call's seed and the chunk's index only (the rows, and so the verdict, do not depend on
    the workers). `scheduler`: 'local' (a cluster of `workers` processes on this machine, default one a
    core, started on the first call), tcp://HOST:PORT (a running scheduler), or a `distributed.Client`.
    Use it as a context manager, or `close()` it. Without Dask: `MissingDependencyError` (the `dask`
    extra)."""
    return DaskSampler(sampler, scheduler, chunk=chunk, workers=workers)
