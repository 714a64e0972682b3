"""Method `chain` (rheo_ref.families.rheo.chain, docs/EXACT_AT_SCALE.md §9-§10): whole round laws by
conditioning on the key of the R-th kept node, one walk over the chain of frontiers for every cut of
the band, in this process or cut into parts run by worker processes. Exact: it equals brute force,
classes and dp wherever they run, Fraction for Fraction (every proxy, both verification orders,
budgets that cut and budgets that keep every node, with and without workers), and it answers the
whole first round at the paper's budget (R = 60, D = 8)."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from fractions import Fraction

import pytest
from helpers import run_rheo, write_case
from hypothesis import HealthCheck, given, settings
from test_ref_dp import DOC_CASE

from rheo.engines import local_parallel
from rheo_ref.errors import CaseError, TooLargeError
from rheo_ref.exact import Exact, Law, target_law, tv
from rheo_ref.families.rheo.chain import _LIVE, ChainRounds
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.rheo.strategies import cases
from rheo_ref.families.rheo.verify import Rules
from rheo_ref.generate import random_pair
from rheo_ref.models import Case, Proxy
from rheo_ref.parallel import Parallel
from rheo_ref.strategies import random_table

SETTINGS = settings(suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow], deadline=None)


def zipf_case(V: int, R: int, *, K: int = 4, W: int = 3, D: int = 8, proxy: str = "rheo", seed: int = 0) -> Case:
    q, p = random_pair(random.Random(seed), V, 1, style="zipf")
    return Case(q, p, Scheme(K, 1, W, D, R, Proxy.parse(proxy)), (0,), 1)


@SETTINGS
@given(cases(proxy=None, max_trees=300, method="brute", max_tokens=3))
def test_chain_equals_brute_force(case):
    """Every proxy, both orders, separate sampling tables or not: whole rounds and token laws."""
    b, c = Exact(case, "brute"), Exact(case, "chain")
    assert c.round_law() == b.round_law()
    assert c.token_law() == b.token_law()


@SETTINGS
@given(cases(proxy=None, max_trees=1500, method="classes", max_tokens=2, max_depth=4, max_vocab=5))
def test_chain_equals_classes_and_dp_on_deeper_trees(case):
    """Depth 4, where the budget cuts nodes behind deeper ones."""
    whole = Exact(case, "classes").round_law()
    assert Exact(case, "dp").round_law() == whole
    assert Exact(case, "chain").round_law() == whole


BUDGETS = [(R, proxy) for proxy in ("rheo", "true", "const:1/4") for R in (2, 5, 9, 14)]
BUDGETS += [(40, "rheo"), (40, "const:1/4")]  # the `true` proxy keeping every node: 5 min of dp


@pytest.mark.parametrize(("R", "proxy"), BUDGETS)
def test_chain_equals_dp_budget_by_budget(R, proxy):
    """Peaked tables, depth 5: budgets that cut a few nodes, many, and none (40 > the 34 nodes of a
    round), where the law changes with R (a negative control for the cut: the laws differ)."""
    laws = {}
    case = zipf_case(6, R, K=3, W=2, D=5, proxy=proxy)
    laws[R] = Exact(case, "chain").round_law()
    assert laws[R] == Exact(case, "dp").round_law()
    if R == 2:
        assert laws[R] != Exact(zipf_case(6, 9, K=3, W=2, D=5, proxy=proxy), "chain").round_law()


@pytest.mark.parametrize("R", [3, 6, 20])
def test_chain_equals_dp_and_brute_where_sampled_children_enter_every_frontier(R):
    """The regime of docs/EXACT_AT_SCALE.md §12's missing cell, small enough for brute force: a
    constant factor (1/2) above every draft probability of a flat V = 4 table (at most 17/37), so
    the sampled child enters every frontier, split into its V − m = 3 identities: 3 frontiers at
    depth 1, 3^W = 9 at depth 2 (K = 3, W = 2, D = 3), at budgets that cut many nodes, a few, and
    none (20 > the 15 nodes of a round)."""
    rng = random.Random(0)
    scheme = Scheme(3, 1, 2, 3, R, Proxy.parse("const:1/2"))
    case = Case(random_table(rng, 4, "draft"), random_table(rng, 4, "target"), scheme, (0,), 1)
    chain = ChainRounds(case)
    assert chain.probe(case.context, 10**6).frontiers == (1, 3, 9)
    law = chain.round_law(case.context)
    assert law == Exact(case, "dp").round_law() == Exact(case, "brute").round_law()
    assert sum(law.values()) == 1


def test_chain_refuses_mutant_rules_and_a_frontier_limit():
    case = zipf_case(6, 5, K=3, W=2, D=3)
    with pytest.raises(CaseError, match="chain"):
        Exact(case, "chain", rules=Rules())
    with pytest.raises(TooLargeError, match="distinct frontiers"):
        Exact(case, "chain", max_trees=2).round_law()


def test_whole_first_round_at_the_papers_budget():
    """R = 60, D = 8, V = 12 (K = 4, W = 3, m = 1): the whole first round's law, a probability law
    whose first token has exactly the target's law, and whose τ lies in walk's exact bounds from
    the round cut at 2 tokens (τ >= 1 + P(len > 1) + P(len > 2))."""
    case = zipf_case(12, 60)
    ex = Exact(case, "chain")
    law = ex.round_law()
    assert sum(law.values()) == 1
    first: Law = defaultdict(Fraction)
    for s, p in law.items():
        first[s[:1]] += p
    assert tv(dict(first), target_law(case, 1)) == 0
    cut = Exact(case, "walk").round_law_to(None, 2)
    longer = [sum((p for s, p in cut.items() if len(s) > h), Fraction(0)) for h in (1, 2)]
    tau = sum((len(s) * p for s, p in law.items()), Fraction(0))
    assert 1 + sum(longer) <= tau <= 1 + longer[0] + 7 * longer[1]
    assert ex.counter.enumerated < 10_000  # distinct frontiers: the chain is small


def test_cli_chain(tmp_path):
    """The whole round's τ comes with it (walk has none), and equals dp's."""
    runs = {}
    for method in ("chain", "dp"):
        res = run_rheo("exact", write_case(tmp_path, DOC_CASE), "--method", method, "--tokens", "2")
        assert res.returncode == 0, res.stderr
        runs[method] = json.loads(res.stdout)
    out = runs["chain"]
    assert out["tv"] == "0" and out["method"] == "chain" and out["tau"] is not None
    assert out["tau"] == runs["dp"]["tau"] and out["law"] == runs["dp"]["law"]


PARALLEL_CASES = [(5, "rheo"), (14, "rheo"), (14, "true"), (40, "const:1/4")]


@pytest.mark.parametrize(("R", "proxy"), PARALLEL_CASES)
def test_chain_in_worker_processes_equals_chain_here(R, proxy):
    """The walks cut into parts and finished in two worker processes (forked: they start with the
    chain built here) give the law computed here, Fraction for Fraction, and dp's; so do parts run
    one after the other in this process (the builtin map), where a worker builds its own chain."""
    case = zipf_case(6, R, K=3, W=2, D=5, proxy=proxy)
    here = Exact(case, "chain").round_law()
    with local_parallel(2) as parallel:
        assert parallel.parts > 1
        workers = Exact(case, "chain", parallel=parallel).round_law()
    _LIVE.clear()  # the map below finds no chain of this case: each part builds one
    mapped = Exact(case, "chain", parallel=Parallel(map, 3)).round_law()
    assert workers == here == mapped == Exact(case, "dp").round_law()
    with local_parallel(1) as serial:
        assert Exact(case, "chain", parallel=serial).round_law() == here


def test_a_lost_part_is_caught():
    """Negative control: a map that drops a part loses mass, and the round refuses its law."""
    case = zipf_case(6, 14, K=3, W=2, D=5)
    lossy = Parallel(lambda fn, tasks: map(fn, list(tasks)[1:]), 4)
    with pytest.raises(AssertionError, match="does not sum to 1"):
        Exact(case, "chain", parallel=lossy).round_law()


def test_the_band_holds_every_cut():
    """The band (the keys the R-th kept node can have) starts where some round has R nodes of key <= θ
    and ends where every round has: below it no round is cut, at its end every round is."""
    case = zipf_case(6, 12, K=3, W=2, D=5)  # a band of 3 keys
    chain = ChainRounds(case)
    f0 = chain.frontier_id(((chain.plans.memo((0,)), Fraction(1)),))
    keys = chain.keys(f0)
    band = chain.band(f0, keys)
    assert band is not None and len(band) > 1
    first = keys.index(band[0])
    assert chain.most(f0, band[0], max) >= 12 > chain.most(f0, keys[first - 1], max)
    assert chain.most(f0, band[-1], min) >= 12 > chain.most(f0, band[-2], min)
    every = ChainRounds(zipf_case(6, 40, K=3, W=2, D=5))  # 34 nodes < R: all kept, no cut
    assert every.band(every.frontier_id(((every.plans.memo((0,)), Fraction(1)),)), []) is None


@pytest.mark.parametrize("chunk", [1, 2])
def test_the_band_in_chunks_gives_the_same_law(chunk):
    """A band of 3 keys walked in chunks of 1 or 2 keys (independent passes, here or in two worker
    processes): the law of one walk over the whole band, and dp's."""
    case = zipf_case(6, 12, K=3, W=2, D=5)
    whole = Exact(case, "chain").round_law()
    assert ChainRounds(case, chunk=chunk).round_law((0,)) == whole == Exact(case, "dp").round_law()
    with local_parallel(2) as parallel:
        assert ChainRounds(case, chunk=chunk, parallel=parallel).round_law((0,)) == whole
    with pytest.raises(CaseError, match="chunk=0"):
        ChainRounds(case, chunk=0)
