"""The tsubame family's fast path: `rheo_fast.families.tsubame.round` against the reference replay
`rheo_ref.families.tsubame.replay`, coin for coin (both samplings, every verifier, T = 1, 0.5, 0); the fast
decode's law against the exact law (χ², the gate's machinery) with a negative control; the plan
and its draft-call accounting.

Coupling as in tests/test_static_fast.py: both sides read the same coin blocks (a share of exact
zeros); a round is compared while the reference's closest decision is farther than 1e-9 from
flipping, the first round must be.
"""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
import torch
from helpers import Stream, exact_case
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from rheo.lossless.stats import check_law, seed_for
from rheo_fast.decode import decode
from rheo_fast.families.tsubame.round import TsubameLayout, tsubame_round
from rheo_fast.family import layout_for
from rheo_fast.models import TableTreeModel
from rheo_ref.exact import Exact
from rheo_ref.families.rheo.layout import RheoLayout
from rheo_ref.families.static.scheme import SAMPLINGS, VERIFIERS
from rheo_ref.families.tsubame.exact import Planner
from rheo_ref.families.tsubame.layout import tsubame_layout
from rheo_ref.families.tsubame.mutant import replay_sampled_plan_round
from rheo_ref.families.tsubame.replay import (
    plan_margin,
    replay_tsubame_decode,
    replay_tsubame_round,
)
from rheo_ref.families.tsubame.scheme import TsubameScheme
from rheo_ref.families.tsubame.strategies import tsubame_cases
from rheo_ref.models import Case, TableModel

pytestmark = pytest.mark.usefixtures("one_thread")

PAIRINGS = [(s, v) for s in SAMPLINGS for v in VERIFIERS]
TEMPERATURES = [1.0, 0.5, 0.0]


def compare(ref_case: Case, stream: Stream, per_round: list, b: int) -> int:
    compared = 0
    for i, rd in enumerate(replay_tsubame_decode(ref_case, stream.trial(b))):
        if not rd.comparable():
            break
        got = tuple(t for t in per_round[i][b].tolist() if t >= 0)
        assert got == rd.emitted, f"trial {b} round {i}: fast {got} != reference {rd.emitted}"
        compared += 1
    return compared


def run_fast(case: Case, stream: Stream, T: float, contexts=None):
    return decode(
        TableTreeModel(case, T=T),
        contexts or [case.context] * stream.trials,
        case.scheme,
        case.tokens,
        coins=stream,
        keep_rounds=True,
    )


RELAXED = settings(suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow], deadline=None)


@settings(RELAXED, max_examples=max(4, settings.default.max_examples // 5))
@given(data=st.data(), seed=st.integers(0, 2**31), zeros=st.sampled_from([0.0, 0.1, 0.4]))
@pytest.mark.parametrize("T", TEMPERATURES)
@pytest.mark.parametrize("sampling,verify", PAIRINGS)
def test_fast_replays_the_reference_coin_for_coin(sampling, verify, T, data, seed, zeros):
    """Generated cases (context lengths 0-2, zeros in rows, separate q_samp or not), 6 trials."""
    L = data.draw(st.integers(0, 2), label="context_length")
    case = data.draw(
        tsubame_cases(sampling=sampling, verify=verify, context_length=L, max_tokens=3, max_trees=10**12),
        label="case",
    )
    ref_case = exact_case(case, T)
    stream = Stream(case.scheme_as(TsubameScheme), seed, zeros, trials=6)
    assume(replay_tsubame_round(ref_case, case.context, stream.trial(0)(0)).comparable())
    fast = run_fast(case, stream, T)
    n = [compare(ref_case, stream, fast.per_round, b) for b in range(6)]
    event(f"rounds compared: {sum(n)}")
    assert n[0] >= 1


def plan_tie_case() -> Case:
    """The property test's counterexample: V = 3, contexts of length 2, mostly one-hot rows. At
    (1, 1) the draft is (5/9, 1/9, 1/3) and (1, 0) is (0, 2/5, 3/5), so the plan's scores tie
    exactly, 1/3 (depth 1) = 5/9·3/5 (depth 2); float64 log-space splits them the other way."""
    c, frac = (0, 0, 1), lambda *xs: tuple(Fraction(x) for x in xs)
    keys = [f"{i},{j}" for i in range(3) for j in range(3)]
    draft = {"": frac(*c), **{k: frac(*c) for k in keys}}
    draft["1,0"], draft["1,1"] = frac(0, "2/5", "3/5"), frac("5/9", "1/9", "1/3")
    target = {**{k: frac(*c) for k in ["", *keys]}, "0,1": frac(0, 1, 0)}
    tables = (TableModel(3, 2, rows, name) for rows, name in ((draft, "draft"), (target, "target")))
    return Case(*tables, TsubameScheme(2, 1, 2, 2, "iid", "traversal"), (0, 1), 2)


def test_a_tie_in_the_plan_is_not_compared():
    """Regression (failed as "fast (2, 2, 2) != reference (2, 2)"): the replay's margin covers
    the plan's scores, so the round planned at the exact tie is not comparable; the first round
    is, and is compared and equal."""
    case = plan_tie_case()
    planner = Planner(case)
    assert planner.parents((0, 1, 1)) == (0, 0)  # exact order: the tie goes to the smaller depth
    assert plan_margin(case, (0, 1, 1), planner.nodes((0, 1, 1))) < 1e-9
    assert plan_margin(case, (0, 1), planner.nodes((0, 1))) > 1e-9  # one-hot chains are not near-ties
    stream = Stream(case.scheme_as(TsubameScheme), 0, 0.0, trials=6)
    fast = run_fast(case, stream, 1.0)
    assert [compare(case, stream, fast.per_round, b) for b in range(6)] == [1] * 6


def fixed_case(sampling: str, verify: str, *, V: int = 5, seed: int = 3, tokens: int = 4) -> Case:
    """Random first-order tables over V = 5 with a zero in every row, a separate q_samp table;
    K = 3, W = 2, D = 3, R = 6: plans differ between contexts."""
    rng = random.Random(seed)
    keys = [()] + [(i,) for i in range(V)]
    weights = lambda shift: {
        k: [0 if t == (i + shift) % V else rng.randint(1, 20) for t in range(V)] for i, k in enumerate(keys)
    }
    draft, sample, target = (
        TableModel.from_weights(weights(s), context_length=1, name=n)
        for s, n in ((0, "draft"), (1, "draft_sample"), (3, "target"))
    )
    return Case(draft, target, TsubameScheme(3, 2, 3, 6, sampling, verify), (0,), tokens, sample)


@pytest.mark.parametrize("T", TEMPERATURES)
@pytest.mark.parametrize("sampling,verify", PAIRINGS)
def test_every_round_of_a_fixed_case_is_compared_and_equal(sampling, verify, T):
    """40 trials from five different start contexts in one batch (several planned shapes per
    round), 4 tokens: every round of every trial is comparable here and must be equal."""
    case = fixed_case(sampling, verify)
    ref_case = exact_case(case, T)
    contexts = [(b % 5,) for b in range(40)]
    shapes = {Planner(case).parents(c) for c in contexts}
    assert len(shapes) >= 2  # the batch really mixes shapes
    stream = Stream(case.scheme_as(TsubameScheme), seed_for(f"tsubame-fixed|{sampling}|{verify}|{T}"), 0.05, trials=40)
    fast = run_fast(case, stream, T, contexts)
    compared = rounds = 0
    for b in range(40):
        rc = Case(ref_case.draft, ref_case.target, case.scheme, contexts[b], case.tokens, ref_case.draft_sample)
        compared += compare(rc, stream, fast.per_round, b)
        rounds += len(replay_tsubame_decode(rc, stream.trial(b)))
    assert compared == rounds >= 40


def test_the_coupled_comparison_catches_a_wrong_plan():
    """Negative control: the replay run on a plan with R - 1 nodes (another shape, same coins)
    disagrees with the fast path on some trial."""
    case = fixed_case("iid", "specinfer", tokens=1)
    stream = Stream(case.scheme_as(TsubameScheme), 5, 0.0, trials=200)
    fast = run_fast(case, stream, 1.0)
    smaller = case.with_scheme(R=5)  # its 13-coin block: the R = 6 block mapped as the fast path maps it
    lay = TsubameLayout(RheoLayout(3, 2, 3), 6)
    diff = 0
    for b in range(200):
        block = lay.coins_for(stream(0)[b : b + 1], 5)[0].tolist()
        got = tuple(t for t in fast.per_round[0][b].tolist() if t >= 0)
        diff += got != replay_tsubame_round(smaller, case.context, block).emitted
    assert diff > 0


def test_draft_calls_of_both_passes():
    """Pass 1 makes D draft calls; pass 2 one per depth of the trial's shape that has nodes with
    children; issued calls sum over the distinct shapes of the batch."""
    case = fixed_case("wor", "rrsw")
    sch = case.scheme_as(TsubameScheme)
    model = TableTreeModel(case)
    contexts = [(0,), (1,), (2,), (3,), (4,)]
    res = tsubame_round(model, model.start(contexts), sch, Stream(sch, 1, 0.0, 5)(0))
    assert res.plan_calls == sch.D
    for b, c in enumerate(contexts):
        parents = Planner(case).parents(c)
        assert res.plan.shapes[int(res.plan.group[b])] == parents
        depth = [0]
        for u in parents:
            depth.append(depth[u] + 1)
        assert int(res.draft_calls[b]) == max(depth[u] for u in parents) + 1
    firsts = [int((res.plan.group == g).nonzero()[0]) for g in range(len(res.plan.shapes))]
    assert res.issued_calls == sum(int(res.draft_calls[b]) for b in firsts)
    assert len(firsts) >= 2


def test_layout_for_sizes_the_coin_block():
    sch = TsubameScheme(3, 2, 3, 6, "iid", "rrsw")
    assert layout_for(sch) == tsubame_layout(sch) and layout_for(sch).n_coins == 2 * 7 + 1


# --- the fast decode's law against the exact law (χ²) ------------------------------------------

N_LAW, ALPHA, DELTA = 20_000, 1e-4, 0.05


@pytest.mark.parametrize("sampling,verify", [("wor", "traversal"), ("iid", "rrsw")])
def test_the_fast_decode_samples_the_exact_law(sampling, verify):
    """20k trials, 2 tokens, against Exact(case).token_law(): χ² at α = 1e-4, N large enough to
    detect TV >= 0.05 with power 0.99 (asserted)."""
    case = fixed_case(sampling, verify, tokens=2)
    gen = torch.Generator().manual_seed(seed_for(f"tsubame-law|{sampling}|{verify}"))
    out = decode(TableTreeModel(case), [case.context] * N_LAW, case.scheme, 2, generator=gen)
    res = check_law(
        [tuple(r) for r in out.tokens.tolist()], Exact(case).token_law(), alpha=ALPHA, tv=DELTA, label="tsubame"
    )
    assert res.detectable_tv <= DELTA and not res.rejected, res.summary()


@pytest.mark.slow
def test_the_law_test_rejects_the_plan_after_sampling_sampler():
    """Negative control: rounds of the mutant `tsubame-plan-after-sampling` (its replay sampler)
    against the spec's exact round law are rejected; the mutant's exact TV on this case is >= 0.05."""
    case = fixed_case("iid", "specinfer", tokens=1).with_scheme(K=2, W=2, D=2, R=3)
    rng = random.Random(seed_for("tsubame-mutant-law"))
    samples = [replay_sampled_plan_round(case, case.context, [rng.random() for _ in range(40)]) for _ in range(N_LAW)]
    res = check_law(samples, Exact(case).round_law(), alpha=ALPHA, tv=DELTA, label="plan-after-sampling")
    assert res.detectable_tv <= DELTA and res.rejected, res.summary()
