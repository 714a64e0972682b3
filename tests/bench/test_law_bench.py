"""Benchmark of the exact laws built one token at a time against the old enumerations, in one process
(pytest -m bench tests/bench/test_law_bench.py -s).

eagle's law (`rheo.decoders.eagle.law.Eagle`, tree mc_sim_7b_63) on random first-order tables (style `close`:
the target a mix of the draft and an independent row), V = 12 and V = 16, the first 2 and 4 tokens,
against `baseline_laws.EagleEnumeration` (the law as rheo computed it before: everything a round can
accept below a node, then cut to n tokens). The old one runs under a cap (RHEO_BENCH_CAP_S seconds,
default 60); a capped run reports how far it got (node laws finished, first tokens whose law was
composed and their probability mass), and its ratio is a lower bound. Where both finish the laws
must be equal (Fraction for Fraction).

sequential-speculative-decoding's naive_hsd and capped_hsd (`rheo.decoders.seqspec.law.SeqSpec`, γ = 5,
the first 3 tokens), the walk over the draft's prefixes against `baseline_laws.SeqSpecEnumeration` (every
round's V^γ drafts, each verified coin by coin), at V = 12 and 16, under the same cap.
"""

from __future__ import annotations

import os
import random
import signal
import time
from fractions import Fraction

import pytest
from baseline_laws import EagleEnumeration, SeqSpecEnumeration

from rheo.decoders.eagle.law import TREE, Eagle
from rheo.decoders.laws import Processing
from rheo.decoders.seqspec.law import SeqSpec
from rheo_ref.generate import random_pair

pytestmark = pytest.mark.bench
CAP_S = float(os.environ.get("RHEO_BENCH_CAP_S", "60"))


class Capped(Exception):
    pass


class CountedEnumeration(EagleEnumeration):
    """The old enumeration, counting what it finished: node laws, and first tokens whose law is composed."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.nodes_done, self.first_done, self.mass_done, self.context_len = 0, 0, Fraction(0), 0

    def node_law(self, path, ctx):
        known = (path, self._key(ctx)) in self._nodes
        law = super().node_law(path, ctx)
        self.nodes_done += not known
        return law

    def after_root(self, ctx, n):
        law = super().after_root(ctx, n)
        if len(ctx) == self.context_len + 1:  # the first token's law composed
            self.first_done += 1
            self.mass_done += self.p.row(list(ctx[:-1]))[ctx[-1]]
        return law

    def token_law(self, context, n):
        self.context_len = len(context)
        return super().token_law(context, n)


def capped(f, cap: float):
    """(result or None, seconds): f() stopped by SIGALRM after `cap` seconds."""

    def alarm(signum, frame):
        raise Capped

    old = signal.signal(signal.SIGALRM, alarm)
    signal.setitimer(signal.ITIMER_REAL, cap)
    t0 = time.perf_counter()
    try:
        return f(), time.perf_counter() - t0
    except Capped:
        return None, time.perf_counter() - t0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.mark.parametrize("n", [2, 4])
@pytest.mark.parametrize("V", [12, 16])
def test_eagle_law_one_token_at_a_time_vs_the_old_enumeration(benchmark, V, n):
    q, p = random_pair(random.Random(V), V, 1, style="close")
    context = (0,)
    t0 = time.perf_counter()
    new = benchmark.pedantic(
        lambda: Eagle(p, q, Processing()).token_law(context, n, show=False), rounds=1, iterations=1
    )
    new_s = time.perf_counter() - t0
    old = CountedEnumeration(p, q, Processing())
    law, old_s = capped(lambda: old.token_law(context, n), CAP_S)
    nodes = len(TREE) + 1  # the root and the tree's 25 nodes
    if law is not None:
        assert law == new
        verdict = f"old {old_s:.1f} s: {old_s / new_s:.1f}x"
    else:
        verdict = (
            f"old capped at {old_s:.0f} s (> {old_s / new_s:.0f}x): {old.nodes_done} node laws of at most "
            f"{nodes * V} finished, {old.first_done} of {V} first tokens composed "
            f"({float(old.mass_done):.1%} of the law's mass)"
        )
    assert sum(new.values()) == 1 and len(new) == V**n
    benchmark.extra_info.update(V=V, tokens=n, new_s=new_s, old_s=old_s, old_finished=law is not None)
    print(f"\neagle exact law V = {V}, {n} tokens: new {new_s:.2f} s; {verdict}")


class CountedSeqSpec(SeqSpecEnumeration):
    """The old seqspec enumeration, counting the drafts it verified."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.drafts = 0

    def _naive(self, *args):
        self.drafts += 1
        return super()._naive(*args)

    def _capped(self, *args):
        self.drafts += 1
        return super()._capped(*args)


@pytest.mark.parametrize("method", ["naive_hsd", "capped_hsd"])
@pytest.mark.parametrize("V", [12, 16])
def test_seqspec_hsd_law_prefix_walk_vs_the_old_enumeration(benchmark, V, method):
    """naive_hsd and capped_hsd with the package's default γ = 5, the first 3 tokens: the walk over the
    draft's prefixes against the enumeration of its V^5 drafts (capped like eagle's above)."""
    q, p = random_pair(random.Random(V), V, 1, style="close")
    context, n, gamma = (0,), 3, 5
    t0 = time.perf_counter()
    new = benchmark.pedantic(
        lambda: SeqSpec(p, q, Processing(), method=method, gamma=gamma).token_law(context, n, show=False),
        rounds=1,
        iterations=1,
    )
    new_s = time.perf_counter() - t0
    old = CountedSeqSpec(p, q, Processing(), method=method, gamma=gamma)
    law, old_s = capped(lambda: old.token_law(context, n), CAP_S)
    if law is not None:
        assert law == new
        verdict = f"old {old_s:.1f} s: {old_s / new_s:.1f}x"
    else:
        verdict = (
            f"old capped at {old_s:.0f} s (> {old_s / new_s:.0f}x): {old.drafts:,} drafts verified of the "
            f"{V**gamma:,} of its first round ({old.drafts / V**gamma:.1%})"
        )
    assert sum(new.values()) == 1 and len(new) == V**n
    benchmark.extra_info.update(V=V, tokens=n, method=method, new_s=new_s, old_s=old_s, old_finished=law is not None)
    print(f"\nseqspec {method} exact law V = {V}, γ = {gamma}, {n} tokens: new {new_s:.2f} s; {verdict}")
