"""Benchmarks of the exact reference (pytest -m bench tests/bench). Ratios, side by side.

The configuration: random rational first-order tables, V = 8, K = 3, m = 1, W = 2, D = 3,
R = 8, one round from context [0]. Goals: `classes` enumerates >= 10x fewer trees and runs
>= 10x faster than `brute`; the exact 3-token law takes < 60 s.
"""
from __future__ import annotations

import random
import time

import pytest

from rheo_ref.exact import Exact, target_law, tv
from rheo_ref.models import Case, Scheme
from rheo_ref.strategies import random_table

pytestmark = pytest.mark.bench


def bench_case(seed: int = 0) -> Case:
    rng = random.Random(seed)
    return Case(random_table(rng, 8, "draft"), random_table(rng, 8, "target"), Scheme(3, 1, 2, 3, 8), (0,), 3)


def test_classes_vs_brute_one_round(benchmark):
    case = bench_case()
    t0 = time.perf_counter()
    brute = Exact(case, "brute", max_trees=None)
    law_b = brute.round_law()
    t_brute = time.perf_counter() - t0

    def run_classes():
        e = Exact(case, "classes")
        return e, e.round_law()

    cls, law_c = benchmark.pedantic(run_classes, rounds=3, iterations=1)
    t_cls = benchmark.stats.stats.mean
    assert law_c == law_b
    benchmark.extra_info.update(brute_trees=brute.counter.enumerated, class_trees=cls.counter.enumerated,
                                brute_seconds=t_brute, class_seconds=t_cls,
                                tree_ratio=brute.counter.enumerated / cls.counter.enumerated, time_ratio=t_brute / t_cls)
    print(f"\nbrute {brute.counter.enumerated} trees {t_brute:.2f}s | classes {cls.counter.enumerated} trees "
          f"{t_cls:.3f}s | ratios: trees {brute.counter.enumerated / cls.counter.enumerated:.1f}x, time {t_brute / t_cls:.1f}x")
    assert brute.counter.enumerated >= 10 * cls.counter.enumerated
    assert t_brute >= 10 * t_cls


def test_exact_three_token_law(benchmark):
    case = bench_case()

    def run():
        e = Exact(case, "classes")
        return e, e.token_law(3)

    e, law = benchmark.pedantic(run, rounds=1, iterations=1)
    benchmark.extra_info.update(trees=e.counter.enumerated, rounds=e.counter.rounds)
    assert tv(law, target_law(case, 3)) == 0
    assert benchmark.stats.stats.max < 60
