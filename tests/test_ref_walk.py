"""Method `walk` (rheo_ref.families.rheo.walk, docs/EXACT_AT_SCALE.md §6): the round law up to a
horizon of h tokens, from the kept nodes of depth <= h and counts of the deeper ones. Exact: it
equals brute force, classes and dp wherever they run (whole rounds, cut rounds, token laws), and
it answers the first tokens' law at the paper's budget (R = 60, D = 8)."""

from __future__ import annotations

import json
import random
from collections import defaultdict
from dataclasses import replace
from fractions import Fraction

import pytest
from helpers import run_rheo, write_case
from hypothesis import HealthCheck, given, settings
from test_ref_dp import DOC_CASE

from rheo_ref.errors import CaseError
from rheo_ref.exact import Exact, Law, exact_report, target_law, tv
from rheo_ref.families.rheo.exact import estimate
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.rheo.strategies import cases
from rheo_ref.families.rheo.verify import Rules
from rheo_ref.families.rheo.walk import MORE
from rheo_ref.generate import random_pair
from rheo_ref.models import Case, Proxy

SETTINGS = settings(suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow], deadline=None)


def cut(law: Law, h: int) -> Law:
    """A whole round law cut at h tokens, as walk states it (a longer sequence ends with MORE)."""
    out: Law = defaultdict(Fraction)
    for s, p in law.items():
        out[s if len(s) <= h else s[:h] + (MORE,)] += p
    return dict(out)


@SETTINGS
@given(cases(proxy=None, max_trees=300, method="brute", max_tokens=3))
def test_walk_equals_brute_force(case):
    """Every proxy, both orders, separate sampling tables or not: whole rounds, rounds cut at
    1..3 tokens, and token laws."""
    b, w = Exact(case, "brute"), Exact(case, "walk")
    whole = b.round_law()
    assert w.round_law() == whole
    for h in (1, 2, 3):
        assert w.round_law_to(None, h) == cut(whole, h)
    assert w.token_law() == b.token_law()


@SETTINGS
@given(cases(proxy=None, max_trees=1500, method="classes", max_tokens=2, max_depth=4, max_vocab=5))
def test_walk_equals_classes_and_dp_on_deeper_trees(case):
    """Depth 4, where the budget cuts shallow nodes behind deep ones."""
    c, d, w = Exact(case, "classes"), Exact(case, "dp"), Exact(case, "walk")
    whole = c.round_law()
    assert d.round_law() == whole
    assert w.round_law_to(None, 1) == cut(whole, 1) and w.round_law_to(None, 2) == cut(whole, 2)
    assert w.token_law(2) == c.token_law(2)


def zipf_case(V: int, R: int, *, K: int = 4, W: int = 3, D: int = 8, proxy: str = "rheo", seed: int = 0) -> Case:
    """Peaked rows like a language model's (rheo_ref.generate's zipf style): deep x_1 chains outrank
    shallow tails, so the budget R decides which shallow nodes are kept."""
    q, p = random_pair(random.Random(seed), V, 1, style="zipf")
    return Case(q, p, Scheme(K, 1, W, D, R, Proxy.parse(proxy)), (0,), 1)


def test_budget_cuts_shallow_nodes_and_walk_sees_it():
    """A negative control for the deep counts: on peaked tables a smaller budget changes the
    first round's law up to 2 tokens, and walk agrees with dp at every budget."""
    laws = {}
    for R in (3, 5, 8):
        case = zipf_case(6, R, K=3, W=2, D=4)
        laws[R] = Exact(case, "walk").round_law_to(None, 2)
        assert laws[R] == cut(Exact(case, "dp").round_law(), 2)
    assert laws[3] != laws[5] != laws[8]


@pytest.mark.parametrize("proxy", ["rheo", "const:1/4", "scaled:1/2", "top-k"])
def test_first_token_at_the_papers_budget(proxy):
    """R = 60, D = 8, V = 12: the first token's law in well under a second, TV 0 exactly (Top-K:
    m = K)."""
    case = zipf_case(12, 60, proxy="rheo" if proxy == "top-k" else proxy)
    if proxy == "top-k":
        case = case.with_scheme(m=4)
    assert tv(Exact(case, "walk").token_law(1), target_law(case, 1)) == 0


def test_walk_refuses_mutant_rules():
    with pytest.raises(CaseError, match="walk"):
        Exact(zipf_case(6, 5, K=3, W=2, D=3), "walk", rules=Rules())


def test_report_has_no_tau_and_cut_lengths():
    case = Case.from_json(DOC_CASE)
    full, walk = exact_report(case, "dp", 2), exact_report(case, "walk", 2)
    assert walk.law == full.law and walk.tv == full.tv and walk.acceptance == full.acceptance
    out = walk.to_json()
    assert out["tau"] is None and out["method"] == "walk"
    more = sum((Fraction(v) for k, v in full.round_lengths.items() if k > 2), Fraction(0))
    assert Fraction(out["round_lengths"][">2"]) == more
    assert {k: Fraction(v) for k, v in out["round_lengths"].items() if k != ">2"} == {
        str(k): v for k, v in full.round_lengths.items() if k <= 2
    }


def test_cli_walk(tmp_path):
    res = run_rheo("exact", write_case(tmp_path, DOC_CASE), "--method", "walk", "--tokens", "2")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["tv"] == "0" and out["tau"] is None and out["method"] == "walk"


def test_cli_walk_refuses_a_hopeless_horizon_up_front(tmp_path):
    """The cost model counts walk's shallow trees (the tree cut at depth n): refused before work."""
    case = dict(DOC_CASE) | {"scheme": {"K": 3, "m": 1, "W": 3, "D": 8, "R": 60}}
    res = run_rheo("exact", write_case(tmp_path, case), "--method", "walk", "--tokens", "8", "--max-trees", "1000")
    assert res.returncode == 2 and "walk" in res.stderr and "--force" in res.stderr


@pytest.mark.slow
def test_first_two_tokens_at_the_papers_budget():
    """R = 60, D = 8, V = 12, K = 4, W = 3: the exact law of the first two tokens, TV 0."""
    case = zipf_case(12, 60)
    assert tv(Exact(case, "walk", max_trees=None).token_law(2), target_law(case, 2)) == 0


def test_cost_model_refuses_before_any_work():
    """R = 60, D = 8, n = 3 on V = 12: the bound (shallow trees and deep frontiers) is over the
    default limit, and the refusal comes before a single shallow tree is built."""
    from rheo_ref.errors import TooLargeError

    seen = []
    case = replace(zipf_case(12, 60), tokens=3)
    with pytest.raises(TooLargeError, match=r"walk.: shallow trees and deep frontiers per round"):
        Exact(case, "walk", progress=seen.append)
    assert seen == []


@pytest.mark.parametrize(
    "case",
    [
        replace(zipf_case(6, 8, K=3, W=2, D=4), tokens=2),
        replace(zipf_case(6, 5, K=3, W=2, D=5, proxy="true"), tokens=2),
        replace(zipf_case(12, 60), tokens=1),
        replace(zipf_case(8, 10, K=3, W=2, D=6, proxy="const:1/4"), tokens=2),
    ],
    ids=["V6-D4-R8", "V6-D5-R5-true", "V12-D8-R60", "V8-D6-R10-const"],
)
def test_cost_model_bounds_every_round_it_admits(case):
    """Each round walk computes (the first to n tokens, the next ones to fewer) visits at most the
    estimate's shallow trees plus deep frontiers."""
    bound = estimate(case, "walk")
    ex = Exact(case, "walk")
    rounds, laws = [], ex._laws
    orig = laws.round_law

    def counted(ctx, horizon=None):
        e, f = laws.enumerated, laws.frontiers
        out = orig(ctx, horizon)
        rounds.append(laws.enumerated - e + laws.frontiers - f)
        return out

    laws.round_law = counted
    ex.token_law(case.tokens)
    assert rounds and max(rounds) <= int(bound), (rounds, bound)
