"""Benchmarks of the exact reference (pytest -m bench tests/bench -s). Ratios, side by side.

Random rational first-order tables (`random_table`, seed 0), K = 3 (4 for V = 16), m = 1, rheo
proxy, one round from context [0], the three enumerators in one process:
- `dp` (docs/EXACT_AT_SCALE.md), timed by pytest-benchmark;
- `classes`, the enumerator `dp` replaces, and `brute`, each stopped after a cap: a stopped run
  gives a lower bound of its ratio to dp, and brute's tree count is exact ((V - m)^E here, every
  row being positive) even when stopped.
Goals (the issue): V = 8, D = 3: dp >= 100x brute; V = 8, D = 4: dp <= 2 s; V = 12, D = 4: <= 5 s;
V = 16, K = 4, W = 3, D = 4, R = 12: <= 60 s (moonshot: <= 10 s). Each run prints its row and
stores it in the benchmark's extra_info; `test_three_token_law_costs_its_contexts` checks that a
3-token law costs about one round per context it reaches.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from fractions import Fraction

import pytest

from rheo_ref.exact import Exact, Law, target_law, tv
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.family import family_of
from rheo_ref.models import Case
from rheo_ref.strategies import random_table
from rheo_ref.variants import SPEC

pytestmark = pytest.mark.bench

# name: (V, K, W, D, R), dp's goal in seconds (None: the ratio goal), caps of classes and brute (s)
CASES = {
    "V8-D3": ((8, 3, 2, 3, 8), None, 120, 120),
    "V8-D4": ((8, 3, 2, 4, 10), 2.0, 120, 20),
    "V12-D4": ((12, 3, 2, 4, 10), 5.0, 120, 20),
    "V16-K4-W3-D4": ((16, 4, 3, 4, 12), 60.0, 120, 20),
}
MOONSHOT = 10.0


def bench_case(V: int = 8, K: int = 3, W: int = 2, D: int = 3, R: int = 8, *, seed: int = 0, tokens: int = 1) -> Case:
    rng = random.Random(seed)
    return Case(random_table(rng, V, "draft"), random_table(rng, V, "target"), Scheme(K, 1, W, D, R), (0,), tokens)


class Stopped(Exception):
    """A run passed its cap."""


@dataclass
class Run:
    method: str
    law: Law | None  # None: stopped at the cap
    outcomes: int  # trees (kept trees for dp) visited; a lower bound when stopped
    seconds: float  # a lower bound when stopped

    @property
    def done(self) -> bool:
        return self.law is not None


def run(case: Case, method: str, cap: float | None = None) -> Run:
    """One round law by `method`, stopped after `cap` seconds."""
    seen = 0
    t0 = time.perf_counter()

    def progress(n: int) -> None:
        nonlocal seen
        seen += n
        if cap is not None and time.perf_counter() - t0 > cap:
            raise Stopped

    ex = Exact(case, method, max_trees=None, progress=progress)
    try:
        law = ex.round_law()
    except Stopped:
        return Run(method, None, seen, time.perf_counter() - t0)
    return Run(method, law, ex.counter.enumerated, time.perf_counter() - t0)


def fmt(r: Run, exact_count: int | None = None) -> str:
    """`method outcomes in seconds`; a stopped run with a known count adds its extrapolated time."""
    if r.done:
        return f"{r.method} {r.outcomes:,} in {r.seconds:.3f} s"
    if exact_count is None:
        return f"{r.method} > {r.outcomes:,} in > {r.seconds:.1f} s"
    estimate = r.seconds * exact_count / max(r.outcomes, 1)
    return f"{r.method} {exact_count:,} in > {r.seconds:.1f} s (est. {estimate:,.0f} s)"


@pytest.mark.parametrize("name", list(CASES))
def test_dp_side_by_side(benchmark, name):
    params, goal, cap_classes, cap_brute = CASES[name]
    case = bench_case(*params)
    dp_runs: list[Run] = []
    benchmark.pedantic(lambda: dp_runs.append(run(case, "dp")), rounds=3, iterations=1)
    dp, t_dp = dp_runs[0], benchmark.stats.stats.min
    classes = run(case, "classes", cap_classes)
    brute = run(case, "brute", cap_brute)
    for other in (classes, brute):
        if other.done:
            assert other.law == dp.law, f"{other.method} and dp disagree on {name}"
    est = family_of(case.scheme).estimate(case, "brute", SPEC)  # exact here: every row is positive
    brute_trees = int(est) if est.exact is not None else int(10**est.log10)
    ratio = {r.method: r.seconds / t_dp for r in (classes, brute)}
    row = (
        f"{name}: dp {dp.outcomes:,} in {t_dp:.3f} s | {fmt(classes)} | {fmt(brute, brute_trees)} | "
        f"classes/dp {'' if classes.done else '> '}{ratio['classes']:.0f}x, "
        f"brute/dp {'' if brute.done else '> '}{ratio['brute']:.0f}x"
    )
    print("\n" + row)
    benchmark.extra_info.update(
        case=name,
        params=params,
        dp_outcomes=dp.outcomes,
        dp_seconds=t_dp,
        classes_outcomes=classes.outcomes,
        classes_seconds=classes.seconds,
        classes_done=classes.done,
        brute_trees=brute_trees,
        brute_seconds=brute.seconds,
        brute_done=brute.done,
        classes_ratio=ratio["classes"],
        brute_ratio=ratio["brute"],
        row=row,
    )
    first: Law = {}
    for seq, pr in (dp.law or {}).items():
        first[seq[:1]] = first.get(seq[:1], Fraction(0)) + pr
    assert tv(first, target_law(case, 1)) == 0  # the rheo proxy is lossless
    if goal is None:
        assert brute.done and ratio["brute"] >= 100, row
    else:
        assert t_dp <= goal, row
    if name == "V16-K4-W3-D4":
        benchmark.extra_info["moonshot"] = t_dp <= MOONSHOT


def test_three_token_law_costs_its_contexts(benchmark):
    """V = 16, K = 4, W = 3, D = 4, R = 12, tokens = 3: the round laws are cached by context, so
    the law costs about (contexts reached) x (one round), measured side by side."""
    case = bench_case(16, 4, 3, 4, 12, tokens=3)
    one = run(case, "dp")

    def three():
        ex = Exact(case, "dp", max_trees=None)
        return ex, ex.token_law(3)

    ex, law = benchmark.pedantic(three, rounds=1, iterations=1)
    t3 = benchmark.stats.stats.min
    per_round = t3 / (ex.counter.rounds * one.seconds)
    print(
        f"\n3 tokens: {ex.counter.rounds} round laws (contexts), {t3:.2f} s = {per_round:.2f} x "
        f"(contexts x one round of {one.seconds:.3f} s)"
    )
    benchmark.extra_info.update(rounds=ex.counter.rounds, seconds=t3, one_round=one.seconds, ratio=per_round)
    assert sum(law.values(), Fraction(0)) == 1 and tv(law, target_law(case, 3)) == 0
    assert per_round < 2
