"""Benchmark of `chain` at the paper's budget against the chain it replaced (pytest -m bench
tests/bench/test_chain_bench.py -s).

The whole first round's law (τ) of RheoSampling (K = 4, m = 1, W = 3, D = 8, R = 60, rheo proxy,
context [0]) on three tables: the V = 16 case of tests/cases/paper16.json (zipf rows, seed 2), the
flat V = 16 table of docs/EXACT_AT_SCALE.md (`random`, seed 0) and the zipf V = 12 table of §9. In
one process, side by side: today's `chain` in this process (workers 1), the same with two worker
processes (`rheo.engines.local_parallel`), then the chain it replaced (`PerCutChain`: the cuts
found by bisection, one verification walk per cut). Equal laws Fraction for Fraction, summing to
1, the first token with the target's law. Goal: V = 16 in <= 60 s and <= 4 GB on 2 cores.
"""

from __future__ import annotations

import random
import resource
import time
from bisect import bisect_right
from collections import defaultdict
from fractions import Fraction

import pytest
from helpers import CASES

from rheo.engines import local_parallel
from rheo_ref.exact import Exact, Law, target_law, tv
from rheo_ref.families.rheo.chain import ChainRounds, Key
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.generate import random_pair
from rheo_ref.models import Case, Context, load_case
from rheo_ref.sizes import nodes
from rheo_ref.strategies import random_table

pytestmark = pytest.mark.bench

ZERO, ONE = Fraction(0), Fraction(1)
ABOVE = "~"  # sorts after every kind: (θ, ABOVE) bisects a sorted list of children just after key θ
GOAL_SECONDS, GOAL_BYTES = 60.0, 4 * 2**30


def table_case(name: str) -> Case:
    if name == "paper16":
        return load_case(str(CASES / "paper16.json"))
    rng = random.Random(0)
    if name == "zipf12":
        q, p = random_pair(rng, 12, 1, style="zipf")
    else:  # the flat V = 16 table
        q, p = random_table(rng, 16, "draft"), random_table(rng, 16, "target")
    return Case(q, p, Scheme(4, 1, 3, 8, 60), (0,), 1)


class PerCutChain(ChainRounds):
    """The chain before docs/EXACT_AT_SCALE.md §10: every cut θ with mass found by bisection of
    G(θ) = P(at least R nodes of key <= θ), one pass each, then one verification walk per cut."""

    def at_least(self, f0: int, theta: Key) -> Fraction:
        s, memo = self.scheme, {}

        def g(fid: int, d: int, count: int) -> Fraction:
            if count >= s.R:
                return ONE
            if d == s.D:
                return ZERO
            if (fid, d, count) not in memo:
                total = ZERO
                for j, (a, kids) in enumerate(self.moves(fid, d)):
                    n = bisect_right(kids, (theta, ABOVE))
                    if count + n >= s.R:
                        total += a
                    elif d + 1 < s.D and n:
                        for b, f2, _ in self.split(fid, d, j, min(s.W, n)):
                            total += b * g(f2, d + 1, count + n)
                memo[fid, d, count] = total
            return memo[fid, d, count]

        self.passes += 1
        return g(f0, 0, 0)

    def cuts(self, f0: int) -> list[tuple[Key | None, Fraction]]:
        s = self.scheme
        if nodes(s.K, s.W, s.D) - 1 < s.R:
            return [(None, ONE)]
        keys = self.keys(f0)
        G: dict[int, Fraction] = {-1: ZERO}
        out: list[tuple[Key | None, Fraction]] = []

        def at(i: int) -> Fraction:
            if i not in G:
                G[i] = self.at_least(f0, keys[i])
            return G[i]

        def jumps(lo: int, hi: int) -> None:
            if at(lo) == at(hi):
                return
            if hi == lo + 1:
                out.append((keys[hi], at(hi) - at(lo)))
                return
            mid = (lo + hi) // 2
            jumps(lo, mid)
            jumps(mid, hi)

        jumps(-1, len(keys) - 1)
        assert sum(p for _, p in out) == ONE
        return out

    def law_at(self, context: Context, f0: int, theta: Key | None, out: Law) -> None:
        s, memo = self.scheme, {}

        def kept(kids: tuple) -> int:
            return len(kids) if theta is None else bisect_right(kids, (theta, ABOVE))

        def seen_now(seen: bool, kids: tuple, n: int) -> bool:
            return seen or (theta is not None and n > 0 and kids[n - 1][0] == theta)

        def ends(fid: int, d: int, count: int, seen: bool) -> Fraction:
            if theta is None:
                return ONE
            if d == s.D:
                return ONE if count == s.R and seen else ZERO
            if (fid, d, count, seen) not in memo:
                total = ZERO
                for j, (a, kids) in enumerate(self.moves(fid, d)):
                    n = kept(kids)
                    c2, s2 = count + n, seen_now(seen, kids, n)
                    if c2 > s.R:
                        continue
                    if d + 1 == s.D or not n:
                        total += a if c2 == s.R and s2 else ZERO
                        continue
                    for b, f2, _ in self.split(fid, d, j, min(s.W, n)):
                        total += b * ends(f2, d + 1, c2, s2)
                memo[fid, d, count, seen] = total
            return memo[fid, d, count, seen]

        layer: dict[tuple, Fraction] = {(f0, 0, False, 0, ()): ONE}
        stopped: dict[tuple, Fraction] = defaultdict(Fraction)
        for d in range(s.D):
            nxt: dict[tuple, Fraction] = defaultdict(Fraction)
            for (fid, count, seen, at, emitted), w in layer.items():
                ctx = context + emitted
                for j, (_, kids) in enumerate(self.moves(fid, d)):
                    n = kept(kids)
                    c2, s2 = count + n, seen_now(seen, kids, n)
                    if theta is not None and c2 > s.R:
                        continue
                    width = min(s.W, n) if d + 1 < s.D else 0
                    place = {c[0][3:]: i for i, c in enumerate(kids[:width])}
                    mine = sorted((c for c in kids[:n] if c[0][3] == at), key=lambda c: c[0][4])
                    for b, f2, ys in self.split(fid, d, j, width):
                        shape = tuple(
                            (kind, k[4], (ys[place[k[3:]]],) if k[3:] in place else tuple(y for _, y in ids), None)
                            for k, kind, ids in mine
                        )
                        if width:
                            rest = ends(f2, d + 1, c2, s2)
                        else:
                            rest = ONE if theta is None or (c2 == s.R and s2) else ZERO
                        accepts, bonus = self.laws.step(ctx, shape)
                        if rest and bonus:
                            stopped[emitted, shape] += w * b * rest
                        for i, y, acc in accepts:
                            k = mine[i][0]
                            if k[3:] in place:
                                nxt[f2, c2, s2, place[k[3:]], emitted + (y,)] += w * b * acc
                            elif rest:
                                stopped[emitted + (y,), ()] += w * b * acc * rest
            layer = nxt
        for (emitted, shape), w in stopped.items():
            for v, pv in self.laws.step(context + emitted, shape)[1]:
                out[emitted + (v,)] += w * pv

    def round_law(self, context: Context) -> Law:
        context = tuple(context)
        f0 = self.frontier_id(((self.plans.memo(context), ONE),))
        out: Law = defaultdict(Fraction)
        for theta, _ in self.cuts(f0):
            self.passes += 1
            self.law_at(context, f0, theta, out)
        return dict(out)


def peak_rss() -> tuple[int, int]:
    """(this process, its largest child) peak RSS in bytes (Linux: KiB)."""
    own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    return own, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024


def check(case: Case, law: Law) -> float:
    """The law sums to 1 and its first token has the target's law; its τ."""
    assert sum(law.values()) == 1
    first: Law = defaultdict(Fraction)
    for seq, p in law.items():
        first[seq[:1]] += p
    assert tv(dict(first), target_law(case, 1)) == 0
    return float(sum(len(seq) * p for seq, p in law.items()))


@pytest.mark.parametrize("name", ["paper16", "random16", "zipf12"])
def test_chain_at_the_papers_budget(name, strict):
    case = table_case(name)
    rows, laws = [], {}
    for workers in (1, 2):
        t0 = time.perf_counter()
        with local_parallel(workers) as parallel:
            ex = Exact(case, "chain", max_trees=None, parallel=parallel)
            laws[workers] = ex.round_law()
        t = time.perf_counter() - t0
        own, child = peak_rss()
        tau = check(case, laws[workers])
        rows.append(
            (
                t,
                f"{name} R=60 D=8 chain, workers {workers}: {t:.1f} s ({ex.counter.enumerated:,} frontiers, "
                f"{ex._laws.passes} passes), τ {tau:.6f}, {len(laws[workers]):,} sequences, peak RSS "
                f"{own / 2**30:.2f} GiB (largest worker {child / 2**30:.2f} GiB)",
            )
        )
        if strict and name == "paper16" and workers == 2:
            assert t <= GOAL_SECONDS and own + 2 * child <= GOAL_BYTES, rows[-1][1]
    assert laws[1] == laws[2]
    t0 = time.perf_counter()
    old = PerCutChain(case)
    before = old.round_law((0,))
    t_old = time.perf_counter() - t0
    assert before == laws[1], "the chain and the per-cut chain disagree"
    print(
        "\n"
        + "\n".join(f"{row} | per-cut chain / this {t_old / t:.1f}x" for t, row in rows)
        + f"\n{name} per-cut chain (before): {t_old:.1f} s ({old.passes} passes), peak RSS {peak_rss()[0] / 2**30:.2f} GiB"
    )
