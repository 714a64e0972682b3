"""Benchmarks of the static family's exact reference (pytest -m bench tests/bench/test_static_bench.py).

Random rational first-order tables (`random_table`, seed 0), one round from context [0]. Goals:
- top-down verifiers (specinfer, rrsw) on V = 8, branching [3, 2, 2] (21 draft nodes) in <= 10 s
  with the subtree recursion (`classes`; brute force would be 8^21 trees and is refused);
- traversal on V = 6, delayed [3, 1, 2] (7 nodes) in <= 60 s, brute force and `classes` side by side.
Brute against classes is also measured side by side for top-down verifiers on V = 6, branching
[2, 2], where brute force is feasible. Each test prints the times, outcomes and ratios.
"""

from __future__ import annotations

import random
import time

import pytest

from rheo_ref.exact import Exact
from rheo_ref.families.static.scheme import StaticScheme
from rheo_ref.family import family_of
from rheo_ref.models import Case
from rheo_ref.strategies import random_table
from rheo_ref.variants import SPEC

pytestmark = pytest.mark.bench
TOP_DOWN = [("iid", "specinfer"), ("wor", "rrsw"), ("iid", "rrsw")]


def bench_case(V: int, kind: str, sizes: tuple[int, ...], sampling: str, verify: str, seed: int = 0) -> Case:
    rng = random.Random(seed)
    return Case(
        random_table(rng, V, "draft"),
        random_table(rng, V, "target"),
        StaticScheme(kind, sizes, sampling, verify),
        (0,),
        1,
    )


def timed_round(case: Case, method: str) -> tuple[Exact, dict, float]:
    t0 = time.perf_counter()
    ex = Exact(case, method, max_trees=None)
    law = ex.round_law()
    return ex, law, time.perf_counter() - t0


def side_by_side(benchmark, case: Case, label: str) -> None:
    brute, law_b, t_brute = timed_round(case, "brute")
    cls, law_c = benchmark.pedantic(lambda: timed_round(case, "classes")[:2], rounds=1, iterations=1)
    t_cls = benchmark.stats.stats.mean
    assert law_c == law_b
    ratio_n, ratio_t = brute.counter.enumerated / cls.counter.enumerated, t_brute / t_cls
    benchmark.extra_info.update(
        brute_outcomes=brute.counter.enumerated,
        class_outcomes=cls.counter.enumerated,
        brute_seconds=t_brute,
        class_seconds=t_cls,
        outcome_ratio=ratio_n,
        time_ratio=ratio_t,
    )
    print(
        f"\n{label}: brute {brute.counter.enumerated} trees {t_brute:.2f}s | classes {cls.counter.enumerated} "
        f"sibling draws {t_cls:.3f}s | ratios: outcomes {ratio_n:.0f}x, time {ratio_t:.0f}x"
    )


@pytest.mark.parametrize("sampling,verify", TOP_DOWN)
def test_top_down_goal_V8_branching_3_2_2(benchmark, sampling, verify):
    case = bench_case(8, "branching", (3, 2, 2), sampling, verify)
    ex, law = benchmark.pedantic(lambda: timed_round(case, "classes")[:2], rounds=1, iterations=1)
    secs = benchmark.stats.stats.mean
    brute_trees = family_of(case.scheme).estimate(case, "brute", SPEC)
    benchmark.extra_info.update(class_outcomes=ex.counter.enumerated, class_seconds=secs, brute_trees=brute_trees)
    print(
        f"\n{sampling}+{verify} V=8 [3,2,2]: classes {ex.counter.enumerated} sibling draws {secs:.2f}s, "
        f"tau {float(ex.tau()):.4f} | brute would be {brute_trees:.2e} trees"
    )
    assert sum(law.values()) == 1
    assert secs <= 10


@pytest.mark.parametrize("sampling,verify", TOP_DOWN)
def test_top_down_brute_vs_classes_V6_branching_2_2(benchmark, sampling, verify):
    side_by_side(benchmark, bench_case(6, "branching", (2, 2), sampling, verify), f"{sampling}+{verify} V=6 [2,2]")


@pytest.mark.parametrize("sampling", ["iid", "wor"])
def test_traversal_goal_V6_delayed_3_1_2(benchmark, sampling):
    side_by_side(
        benchmark,
        bench_case(6, "delayed", (3, 1, 2), sampling, "traversal"),
        f"{sampling}+traversal V=6 delayed [3,1,2]",
    )
    assert benchmark.stats.stats.mean <= 60
