"""`rheo exact` without --method (rheo_ref.choose, docs/EXACT_AT_SCALE.md §11): the method predicted
to be the fastest, from cheap estimates, never one the estimates say will not fit where another
does; the output says which and why. Brute force where the case is tiny, dp where its probe of the
first round's kept trees ends, chain at the paper's budget (R = 60, D = 8)."""

from __future__ import annotations

import json
import math
import random
import time
from dataclasses import replace
from fractions import Fraction

import pytest
from helpers import CASES, load_json, run_rheo, write_case

from rheo_ref.choose import NEVER_SECONDS, TINY_SECONDS, Cost, choose, choose_method
from rheo_ref.exact import exact_report
from rheo_ref.families.rheo.chain import PROBE_DEPTHS, ChainProbe, ChainRounds
from rheo_ref.families.rheo.choose import PROBE_TREES
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.generate import random_pair
from rheo_ref.models import Case, Proxy, load_case
from rheo_ref.strategies import random_table


def flat_case(V: int, D: int, R: int, *, K: int = 4, W: int = 3, proxy: str = "rheo") -> Case:
    rng = random.Random(0)
    scheme = Scheme(K, 1, W, D, R, Proxy.parse(proxy))
    return Case(random_table(rng, V, "draft"), random_table(rng, V, "target"), scheme, (0,), 1)


def test_tiny_cases_run_brute_force():
    """small.json: 8 brute-force trees a round; the reason names brute and its count."""
    choice = choose_method(load_case(str(CASES / "small.json")))
    assert choice.method == "brute"
    assert choice.reason.startswith("brute: 8 trees a round") and "tiny" in choice.reason
    assert set(choice.to_json()["estimates"]) == {"brute", "classes", "dp", "chain", "walk"}


def test_a_few_kept_trees_run_dp():
    """V = 16, D = 4, R = 12 (docs/EXACT_AT_SCALE.md §4: 161 kept trees, brute 5.8e11 trees):
    dp, with its probe's exact count."""
    choice = choose_method(flat_case(16, 4, 12))
    assert choice.method == "dp"
    assert choice.reason.startswith("dp: ") and "kept trees in the first round (probe)" in choice.reason


def test_the_papers_budget_runs_chain_and_the_estimate_is_cheap():
    """R = 60, D = 8, V = 16 (tests/cases/paper16.json): dp's probe passes PROBE_TREES, brute and
    classes are far over the limit, chain's probe predicts it to finish: chain, decided in a few
    seconds at most (about 1.2 s on this project's 2-core machine; the run takes about 18 s)."""
    case = load_case(str(CASES / "paper16.json"))
    t0 = time.perf_counter()
    choice = choose_method(case, max_trees=2_000_000)
    assert time.perf_counter() - t0 < 5.0
    assert choice.method == "chain"
    assert choice.reason.startswith("chain: ") and "frontier splits" in choice.reason
    estimates = choice.to_json()["estimates"]
    assert f"more than {PROBE_TREES:,} kept trees" in estimates["dp"]
    assert "over the limit" in estimates["brute"] and "over the limit" in estimates["classes"]
    chain = next(c for c in choice.costs if c.method == "chain")
    assert chain.fits and chain.seconds is not None and chain.seconds < 600


def test_a_chain_that_blows_up_is_predicted_not_to_finish_and_not_chosen():
    """The flat V = 16 table with the `const:1/4` proxy at R = 60, D = 8: the sampled child enters
    every frontier, split into its 15 identities, so the chain grows like 15^W per depth (over
    5.7 GiB before depth 3 was built, docs/EXACT_AT_SCALE.md §12). chain's probe stops at depth 2,
    predicts it far past a day and past the limit, and it is not chosen; the reason says so."""
    case = flat_case(16, 8, 60, proxy="const:1/4")
    t0 = time.perf_counter()
    choice = choose_method(case, max_trees=2_000_000)
    assert time.perf_counter() - t0 < 5.0
    chain = next(c for c in choice.costs if c.method == "chain")
    assert chain.seconds is not None and chain.seconds > NEVER_SECONDS and not chain.fits
    assert choice.method != "chain"
    assert "chain: " in choice.reason and "over the limit" in choice.reason and "probe stopped" in choice.reason
    # with no limit (--force) it fits, and is still not chosen over a method not predicted not to finish
    assert choose_method(case, max_trees=None).method != "chain"


def test_chains_probe_counts_the_chain_it_builds():
    """Where the probe builds the whole chain, its counts are the chain's own: its frontiers are the
    frontiers a round's chain enumerates, and its branches are the entries of the splits built."""
    case = flat_case(16, 4, 12, proxy="scaled:1/2")
    probed = ChainRounds(case)
    probe = probed.probe(case.context, 10**6)
    assert probe.complete and probe.splits == 3 and len(probe.frontiers) == 4
    assert sum(probe.branches) == sum(len(v) for v in probed._splits.values())
    run = ChainRounds(case)
    run.round_law(case.context)
    assert sum(probe.frontiers) == run.enumerated
    assert probe.predicted() == (sum(probe.branches), sum(probe.frontiers))
    stopped = ChainRounds(case).probe(case.context, 1)
    assert not stopped.complete and stopped.predicted()[0] >= sum(stopped.branches)


def test_chains_extrapolation_follows_the_last_growth_seen():
    """Stopped at depth 2: each depth still to split multiplies the branches by the last growth
    (here 1: 100 per depth), and a depth's frontiers are its parent depth's branches times the
    distinct share last seen (20 of 100)."""
    probe = ChainProbe((1, 10, 20), (10, 100, 100), splits=4, complete=False)
    assert probe.predicted() == (10 + 100 + 100 + 100, 1 + 10 + 20 + 0.2 * 100 + 0.2 * 100)
    growing = ChainProbe((1, 10, 20), (10, 100, 1000), splits=4, complete=False)
    assert growing.predicted()[0] == 10 + 100 + 1000 + 10_000
    # the extrapolation is a closed form: a depth beyond any loop is predicted at once
    huge = ChainProbe((1, 10, 20), (10, 100, 100), splits=10**18, complete=False)
    assert huge.predicted() == pytest.approx((210 + 100 * (10**18 - 3), 31 + 20 * (10**18 - 2)))
    assert ChainProbe((1, 10, 20), (10, 100, 1000), splits=10**18, complete=False).predicted()[0] == math.inf


def test_chains_probe_ends_on_an_astronomical_depth():
    """A case's D is bounded by its size checks only: the probe builds at most PROBE_DEPTHS depths
    and extrapolates the rest (it looped over D = 10^18 depths once), or ends where a depth has
    no branch."""
    case = flat_case(16, 4, 12, proxy="scaled:1/2")
    deep = replace(case, scheme=replace(case.scheme, D=10**18))
    probe = ChainRounds(deep).probe(deep.context, 10**6)
    assert probe.splits == 10**18 - 1
    assert len(probe.branches) <= PROBE_DEPTHS
    assert probe.complete or probe.predicted()[0] > sum(probe.branches)


def test_a_method_over_the_limit_is_never_chosen():
    """The fastest prediction loses to a slower one that fits the limit, and a method giving only
    the first N tokens (walk) loses to one giving the whole round; with every whole-round method
    over the limit, walk is taken and the reason says τ is not computed."""
    fast_but_over = Cost("brute", TINY_SECONDS / 10, False, "8 trees")
    slower = Cost("dp", 2.0, True, "4 kept trees")
    walk = Cost("walk", 0.1, True, "3 shallow trees", whole=False)
    assert choose([fast_but_over, slower, walk]).method == "dp"
    alone = choose([fast_but_over, Cost("dp", 2.0, False, "x"), walk])
    assert alone.method == "walk" and "τ is not computed" in alone.reason
    nothing = choose([Cost("dp", None, True, "past the probe"), Cost("chain", None, True, "chain")], ("chain", "dp"))
    assert nothing.method == "chain"
    # the case's own limit: with --max-trees below brute's 8 trees, brute is not chosen
    limited = choose_method(load_case(str(CASES / "small.json")), max_trees=5)
    assert limited.method in ("dp", "chain") and next(c for c in limited.costs if c.method == limited.method).fits


def test_the_chosen_method_gives_the_forced_methods_law(tmp_path):
    """`rheo exact CASE` prints the law of every forced method, and its choice; a forced method
    prints no choice."""
    path = write_case(tmp_path, load_json("small.json"))
    auto = run_rheo("exact", path)
    assert auto.returncode == 0, auto.stderr
    out = json.loads(auto.stdout)
    assert out["method"] == "brute" and out["choice"]["method"] == "brute"
    assert out["choice"]["reason"].startswith("brute:")
    forced = json.loads(run_rheo("exact", path, "--method", "dp").stdout)
    assert "choice" not in forced and forced["law"] == out["law"] and forced["tau"] == out["tau"]


def test_the_report_of_a_chosen_method_is_exact():
    """Without a method the report equals a forced one's, on a case that chooses dp."""
    case = flat_case(16, 4, 12)
    chosen, forced = exact_report(case, None), exact_report(case, "dp")
    assert chosen.choice is not None and chosen.method == "dp"
    assert (chosen.law, chosen.tau, chosen.tv) == (forced.law, forced.tau, forced.tv)


@pytest.mark.parametrize("style", ["zipf"])
def test_a_peaked_deep_case_past_the_probe_runs_chain(style):
    """zipf V = 12 at R = 60, D = 8 (docs/EXACT_AT_SCALE.md §9): chain."""
    q, p = random_pair(random.Random(0), 12, 1, style=style)
    assert choose_method(Case(q, p, Scheme(4, 1, 3, 8, 60), (0,), 1)).method == "chain"


def test_a_method_predicted_not_to_finish_is_never_chosen_over_one_that_may():
    """With no limit (--force) brute and classes fit, but are predicted past NEVER_SECONDS: the
    family's fallback (chain, not predicted up front) is chosen, and the reason says why; with
    nothing else to run, the fastest predicted is taken and the reason says it may not finish."""
    slow = [Cost("brute", NEVER_SECONDS * 10, True, "1e25 trees"), Cost("classes", NEVER_SECONDS * 2, True, "1e23")]
    picked = choose([*slow, Cost("chain", None, True, "not predicted")], ("chain", "dp"))
    assert picked.method == "chain" and "no other is predicted to finish" in picked.reason
    alone = choose(slow, ("chain",))
    assert alone.method == "classes" and "not predicted to finish" in alone.reason
    assert choose([*slow, Cost("dp", NEVER_SECONDS / 2, True, "x")], ("chain",)).method == "dp"


@pytest.mark.slow
def test_the_held_out_v16_case_without_a_flag_is_exact():
    """`rheo exact tests/cases/paper16.json` (V = 16, R = 60, D = 8, no flag): chain, chosen, with
    two workers; the whole round's law sums to 1, TV 0 on the first token (about 20 s on 2 cores,
    docs/EXACT_AT_SCALE.md §10)."""
    res = run_rheo("exact", str(CASES / "paper16.json"), "--workers", "2")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["method"] == out["choice"]["method"] == "chain" and out["tv"] == "0"
    assert sum(Fraction(v) for v in out["law"].values()) == 1
