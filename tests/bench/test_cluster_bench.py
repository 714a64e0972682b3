"""Benchmark of the gate's sampling on a local Dask cluster against the same sampler in this process
(pytest -m bench tests/bench/test_cluster_bench.py -s).

The sampler is deliberately slow and CPU-bound (as vLLM's sampler in Triton's interpreter is): each
sample costs RHEO_BENCH_MS_PER_SAMPLE (default 4) milliseconds of pure-Python arithmetic, then is drawn
from the exact target law. The same gate (tests/cases/small.json, α = 10^-3, δ = 0.1) runs once in this
process (one call `sampler(case, seed, N)`) and once on a LocalCluster of RHEO_BENCH_WORKERS (default
2) processes, one thread each, in chunks of RHEO_BENCH_CHUNK (default 250); the cluster's start is timed
apart and left out of the ratio. The ratio is in-process seconds / cluster seconds; it cannot pass the
number of cores the workers get (2 on rheo's CI machine, shared with other jobs), and the records must
agree with the chunks drawn in this process (`chunked`), the rows being the same.
"""

from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path

import pytest

import rheo
from rheo.lossless.cluster import chunked, on_dask

pytestmark = pytest.mark.bench
MS = float(os.environ.get("RHEO_BENCH_MS_PER_SAMPLE", "4"))
WORKERS = int(os.environ.get("RHEO_BENCH_WORKERS", "2"))
CHUNK = int(os.environ.get("RHEO_BENCH_CHUNK", "250"))
CASE = rheo.load_case(str(Path(__file__).parents[1] / "cases" / "small.json"))


def _spin(seconds: float) -> None:
    end = time.process_time() + seconds
    x = 0
    while time.process_time() < end:
        x += 1


class Slow:
    """Exact target-law samples at `ms` milliseconds of CPU each."""

    def __init__(self, ms: float) -> None:
        self.ms = ms

    def __call__(self, case, seed, num_samples):
        law = rheo.target_law(case, case.tokens)
        keys = sorted(law)
        _spin(self.ms * num_samples / 1000)
        return random.Random(seed).choices(keys, [float(law[k]) for k in keys], k=num_samples)


def test_cluster_speed_up_over_in_process_sampling(strict):
    distributed = pytest.importorskip("distributed")
    import cloudpickle

    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    slow = Slow(MS)
    t0 = time.perf_counter()
    here = rheo.check_lossless(slow, CASE, alpha=1e-3, tv=0.1, seed=1)
    t_here = time.perf_counter() - t0
    t0 = time.perf_counter()
    with (
        distributed.LocalCluster(
            n_workers=WORKERS, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address="127.0.0.1:0"
        ) as local,
        distributed.Client(local) as client,
    ):
        client.wait_for_workers(WORKERS)
        t_start = time.perf_counter() - t0
        with on_dask(slow, client, chunk=CHUNK) as s:
            t0 = time.perf_counter()
            there = rheo.check_lossless(s, CASE, alpha=1e-3, tv=0.1, seed=1)
            t_there = time.perf_counter() - t0
    reference = rheo.check_lossless(chunked(Slow(0), chunk=CHUNK), CASE, alpha=1e-3, tv=0.1, seed=1)
    ratio = t_here / t_there
    print(
        f"\nN={here.n}, {MS:g} ms/sample CPU, {os.cpu_count()} cores: in process {t_here:.2f} s; LocalCluster of "
        f"{WORKERS} workers, chunk {CHUNK}: {t_there:.2f} s (+ {t_start:.2f} s to start it); speed-up {ratio:.2f}x"
    )
    assert there == reference and there.n == here.n and not there.rejected
    if strict:
        assert ratio > 1.3 * min(WORKERS, os.cpu_count() or 1) / 2
