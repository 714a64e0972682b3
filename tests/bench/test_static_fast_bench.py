"""Benchmark of the static family's fast path against the rheo family's, side by side in one run
(pytest -m bench tests/bench/test_static_fast_bench.py -s).

Random first-order tables (`random_table`, seed 0), V = 8, B = 4096 trials per batch, one round
from context [0], torch on one thread. Both families draft 15 nodes to depth 3: the rheo family's
benchmark configuration (K = 3, m = 1, W = 2, D = 3, R = 8: 15 drafted, 8 kept and verified) and
the static shapes branching [3, 2, 1] and delayed [7, 1, 2] (all 15 verified) under the four
lossless pairings of `specinfer`, `rrsw` and `traversal`. Configurations are timed interleaved
(so every one sees the same load); each reports rounds/s (B over the median batch time) and its
ratio to the rheo family's. No goal is asserted: the ratios are the result.
"""

from __future__ import annotations

import random
import statistics
import time

import pytest
import torch

from rheo_fast.decode import play_round, round_coins
from rheo_fast.family import layout_for
from rheo_fast.models import TableTreeModel
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.static.scheme import StaticScheme
from rheo_ref.models import Case
from rheo_ref.strategies import random_table
from rheo_ref.variants import SPEC

pytestmark = [pytest.mark.bench, pytest.mark.usefixtures("one_thread")]
B = 4096
STATIC = [
    (kind, sizes, sampling, verify)
    for kind, sizes in (("branching", (3, 2, 1)), ("delayed", (7, 1, 2)))
    for sampling, verify in (("iid", "specinfer"), ("wor", "rrsw"), ("iid", "traversal"), ("wor", "traversal"))
]


def tables():
    rng = random.Random(0)
    return random_table(rng, 8, "draft"), random_table(rng, 8, "target")


def runner(case: Case):
    """A zero-argument function running one round of B trials (model, state and coins prepared),
    through `rheo_fast.decode.play_round`, the registry's dispatch that `decode` uses."""
    model = TableTreeModel(case)
    state = model.start([case.context] * B)
    gen = torch.Generator().manual_seed(0)
    layout = layout_for(case.scheme)
    coins = round_coins(gen, B, layout)  # [B, n_coins]
    todo = torch.ones(B, dtype=torch.bool)
    return lambda: play_round(model, state, case.scheme, coins, todo, variant=SPEC, layout=layout)


def test_static_vs_rheo_rounds_per_second(benchmark):
    draft, target = tables()
    rheo = Scheme(3, 1, 2, 3, 8)
    configs = {"rheo K=3 m=1 W=2 D=3 R=8": Case(draft, target, rheo, (0,), 3)}
    for kind, sizes, sampling, verify in STATIC:
        sch = StaticScheme(kind, sizes, sampling, verify)
        assert sch.nodes == layout_for(rheo).N == 15 and sch.D == rheo.D
        configs[f"{kind} {list(sizes)} {sampling}+{verify}"] = Case(draft, target, sch, (0,), 3)
    runs = {name: runner(case) for name, case in configs.items()}
    times: dict[str, list[float]] = {name: [] for name in runs}
    for run in runs.values():  # warm-up
        run()
    for _ in range(15):
        for name, run in runs.items():
            for _ in range(2):
                t0 = time.perf_counter()
                run()
                times[name].append(time.perf_counter() - t0)
    rps = {name: B / statistics.median(ts) for name, ts in times.items()}
    base = rps[next(iter(rps))]
    benchmark.extra_info.update(batch=B, rounds_per_second=rps, ratio_to_rheo={k: v / base for k, v in rps.items()})
    benchmark.pedantic(lambda: None, rounds=1)
    print(f"\nrounds/s, B = {B}, V = 8, 15 draft nodes, depth 3 (median of 30 batches each, interleaved):")
    for name, v in rps.items():
        print(f"  {name:38s} {v:>10,.0f}   x{v / base:.2f} of rheo")
    assert all(v > 0 for v in rps.values())
