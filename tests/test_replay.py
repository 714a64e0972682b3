"""Coupled replay (docs/ALGORITHM.md §8): rheo_ref.families.rheo.replay and rheo_fast, fed the same stream of
uniforms, emit the same tokens round for round.

Every hypothesis case is compared round by round while the exact tree of the round is
`comparable` (no two positive scores within 1e-9 that floats compute differently); a case whose
first round is not comparable is discarded (`assume`). Coins are uniforms from a seeded torch
generator with a hypothesis-chosen share of exact zeros (a coin of 0 must not accept a token of
probability 0, nor draw a token of probability 0).
"""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
import torch
from helpers import Stream
from hypothesis import HealthCheck, assume, event, example, given, settings
from hypothesis import strategies as st

from rheo_fast.decode import decode
from rheo_fast.models import TableTreeModel
from rheo_ref.coins import inverse_cdf
from rheo_ref.errors import CaseError
from rheo_ref.families.rheo.layout import rheo_layout
from rheo_ref.families.rheo.replay import comparable, replay_decode, replay_round
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.rheo.strategies import schemes
from rheo_ref.generate import greedy_case
from rheo_ref.models import Case, TableModel
from rheo_ref.strategies import distinct_weights, tables
from rheo_ref.variants import MUTANTS

pytestmark = pytest.mark.usefixtures("one_thread")


RELAXED = settings(suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow], deadline=None)


def budget(share: float) -> settings:
    """A share of the profile's example count (dev/ci 40, nightly 1000)."""
    return settings(RELAXED, max_examples=max(5, int(settings.default.max_examples * share)))


@st.composite
def replay_cases(draw, *, proxy: str | None = None, verify: str | None = None, max_vocab: int = 6):
    """Small cases with zeros in rows; weights up to 40 keep accidental exact ties rare."""
    V = draw(st.integers(2, max_vocab))
    scheme = draw(schemes(V, max_depth=3, proxy=proxy, verify=verify))
    L = draw(st.integers(0, 2)) if V <= 3 else draw(st.integers(0, 1))
    t = lambda name: tables(V, L, name=name, max_weight=40)
    sample = draw(st.one_of(st.none(), t("draft_sample")))
    ctx = tuple(draw(st.lists(st.integers(0, V - 1), min_size=L, max_size=L + 1)))  # every reachable key has a row
    return Case(draw(t("draft")), draw(t("target")), scheme, ctx, draw(st.integers(1, 5)), sample)


def compare(case: Case, ref_case: Case, stream: Stream, fast_rounds: list, b: int) -> int:
    """Round-by-round equality for trial b; returns the number of rounds compared."""
    ref = replay_decode(ref_case, stream.trial(b))
    ctx, compared = tuple(case.context), 0
    for i, rd in enumerate(ref):
        if not comparable(ref_case, ctx, rd.nodes):
            break
        got = tuple(t for t in fast_rounds[i][b].tolist() if t >= 0)
        assert got == rd.emitted, f"trial {b} round {i}: fast {got} != reference {rd.emitted}"
        compared += 1
        ctx += rd.emitted
    return compared


def run_fast(case: Case, stream: Stream, T: float = 1.0):
    model = TableTreeModel(case, T=T)
    return decode(model, [case.context] * stream.trials, case.scheme, case.tokens, coins=stream, keep_rounds=True)


def refuses_factor(case: Case) -> bool:
    return case.scheme.proxy.kind == "scaled"


TABLE1 = Case(
    TableModel.from_rows({(): ["1/2", "3/10", "1/5"]}, context_length=0, name="draft"),
    TableModel.from_rows({(): ["1/3", "1/3", "1/3"]}, context_length=0, name="target"),
    Scheme(3, 1, 2, 1, 2),
    (),
    2,
)


@budget(5)
@given(replay_cases(), st.integers(0, 2**31), st.sampled_from([0.0, 0.1, 0.5]))
@example(TABLE1, 0, 0.5)
def test_fast_replays_reference_coin_for_coin(case, seed, zeros):
    stream = Stream(case.scheme, seed, zeros)
    try:
        ref0 = replay_round(case, case.context, stream.trial(0)(0))
    except CaseError as e:  # scaled:s with a factor > 1: the fast path must refuse too
        assert refuses_factor(case), e
        with pytest.raises(CaseError, match="factor"):
            run_fast(case, stream)
        return
    assume(comparable(case, case.context, ref0.nodes))
    n = compare(case, case, stream, run_fast(case, stream).per_round, 0)
    event(f"rounds compared: {n}")
    assert n >= 1


@budget(1)
@given(replay_cases(proxy="rheo"), st.integers(0, 2**31), st.sampled_from([0.0, 0.2]))
def test_batched_trials_replay_their_own_streams(case, seed, zeros):
    """B = 12 trials in one vectorised batch, each against its own reference run."""
    stream = Stream(case.scheme, seed, zeros, trials=12)
    try:
        fast = run_fast(case, stream)
    except CaseError:
        assert refuses_factor(case)
        return
    compared = [compare(case, case, stream, fast.per_round, b) for b in range(12)]
    assume(sum(compared) > 0)
    for b in range(12):
        rounds = replay_decode(case, stream.trial(b))
        if compared[b] == len(rounds):  # every round comparable: the n tokens agree too
            assert fast.tokens[b].tolist() == [t for rd in rounds for t in rd.emitted][: case.tokens]


@budget(2)
@given(replay_cases(proxy="rheo"), st.integers(0, 2**31), st.sampled_from([0.0, 0.3]))
def test_greedy_T0_replays_reference(case, seed, zeros):
    """T = 0: the fast path's greedy q_samp and p against the reference on the argmax tables."""
    ref_case = greedy_case(case)
    stream = Stream(case.scheme, seed, zeros)
    ref0 = replay_round(ref_case, case.context, stream.trial(0)(0))
    assume(comparable(ref_case, case.context, ref0.nodes))
    assert compare(case, ref_case, stream, run_fast(case, stream, T=0).per_round, 0) >= 1


def fixed_case(m: int, verify: str) -> Case:
    """V = 6, K = 3, W = 2 < K, R = 7 < N = 15, a zero in every row, distinct weights (no ties)."""
    rng = random.Random(7)

    rows = {
        (): distinct_weights(rng, 6, zero=5),
        **{(c,): distinct_weights(rng, 6, zero=(c + 1) % 6) for c in range(6)},
    }
    tgt = {k: distinct_weights(rng, 6, zero=(i + 3) % 6) for i, k in enumerate(rows)}
    return Case(
        TableModel.from_weights(rows, name="draft"),
        TableModel.from_weights(tgt, name="target"),
        Scheme(3, m, 2, 3, 7, verify=verify),
        (0,),
        4,
    )


@pytest.mark.parametrize("verify", ["rheo", "rrsw"])
@pytest.mark.parametrize("m", [0, 1, 2, 3])
def test_every_m_and_order_on_a_fixed_case(m, verify):
    """m = 0..K for K = 3, both orders, 40 trials in one batch: every round of every trial is
    comparable here (no near-ties), so all of them must be equal (~100 rounds per setting)."""
    case = fixed_case(m, verify)
    stream = Stream(case.scheme, 1000 + m, 0.05, trials=40)
    fast = run_fast(case, stream)
    compared = sum(compare(case, case, stream, fast.per_round, b) for b in range(40))
    assert compared == sum(len(replay_decode(case, stream.trial(b))) for b in range(40)) >= 80


@pytest.mark.parametrize("mutant", ["fills-first", "stale-bonus", "proxy-true"])
def test_the_coupled_comparison_catches_a_mutant(mutant):
    """The comparison has teeth: a fast path with one step wrong disagrees with the reference."""
    case = fixed_case(1, "rheo")
    stream = Stream(case.scheme, 99, 0.05, trials=40)
    fast = decode(
        TableTreeModel(case),
        [case.context] * 40,
        case.scheme,
        case.tokens,
        coins=stream,
        keep_rounds=True,
        variant=MUTANTS[mutant],
    )
    with pytest.raises(AssertionError, match="!= reference"):
        for b in range(40):
            compare(case, case, stream, fast.per_round, b)


def test_zero_coins_take_the_first_positive_token():
    """All coins 0: y is the first tail token (id order) with q̃ > 0; every child with r(t) > 0 is
    accepted at once, none with r(t) = 0; the bonus is the first token with r > 0."""
    case = Case(
        TableModel.from_rows({(): ["0", "1/2", "1/4", "1/4"]}, context_length=0, name="draft"),
        TableModel.from_rows({(): ["0", "0", "1/2", "1/2"]}, context_length=0, name="target"),
        Scheme(2, 1, 1, 1, 2),
        (),
        1,
    )
    C = rheo_layout(case.scheme).n_coins
    zeros = lambda i: [0.0] * C
    rd = replay_round(case, (), zeros(0))
    assert [n.token for n in rd.nodes[1:]] == [1, 2]  # x_1 = 1 (det), y = 2: first tail id with q̃ > 0
    assert rd.emitted == (2, 2)  # y accepted (p(2) > 0 = coin), then the bonus at the leaf
    fast = decode(TableTreeModel(case), [()], case.scheme, 2, coins=lambda i: torch.zeros((1, C), dtype=torch.float64))
    assert fast.tokens[0].tolist() == [2, 2]


def test_reference_inverse_cdf_is_strict():
    row = (Fraction(0), Fraction(1, 2), Fraction(1, 2))
    assert inverse_cdf(row, Fraction(0)) == 1
    assert inverse_cdf(row, Fraction(1, 2)) == 2  # u = 1/2 is not < 1/2
