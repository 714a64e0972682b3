"""The planning helpers (`rheo.plan_samples`, `rheo.detectable_tv`, `rheo.total_variation`,
`rheo.lossless.horizon.default_horizon`) refuse what the gate refuses: an invalid law, a value of
the wrong type, a plan over the gate's sample cap, `rounds=` without a horizon, a switch that is not
a bool. Each refusal is one `RheoError` subclass line naming the value, never a raw Python error and
never a number computed from a law that is not one."""

from __future__ import annotations

from fractions import Fraction

import pytest
from helpers import load_json

import rheo
from rheo.lossless.horizon import default_horizon
from rheo_ref.errors import RheoError, StatsError, TooLargeError
from rheo_ref.models import Case

F = Fraction
LAW = {(0,): F(1, 2), (1,): F(1, 4), (2,): F(1, 4)}
CASE = Case.from_json({"target": {"vocab_size": 3, "context_length": 0, "probs": {"": ["1/2", "1/4", "1/4"]}}})
EAGLE12 = Case.from_json(load_json("eagle12.json"))  # V = 12: 144 cells a window

BAD_LAWS = [
    ({(0,): F(-1, 2), (1,): F(3, 2)}, r"law\[\(0,\)\] = .*-1, 2.* must be a finite number >= 0"),
    ({(0,): F(1, 4), (1,): F(1, 4)}, r"sum to 0\.5; allowed: 1"),
    ({(0,): F(1), (1,): F(1)}, r"sum to 2; allowed: 1"),
    ({(0,): float("nan"), (1,): 1.0}, r"law\[\(0,\)\] = nan must be a finite number"),
    ({}, "the law is empty"),
    ({(0,): "x"}, r"law\[\(0,\)\] = 'x' must be a finite number"),
    (None, "law None .* must be a mapping"),
]


@pytest.mark.parametrize(("law", "match"), BAD_LAWS)
def test_detectable_tv_refuses_what_is_not_a_law(law, match):
    with pytest.raises(StatsError, match=match):
        rheo.detectable_tv(law, 1000, alpha=1e-3)


@pytest.mark.parametrize(("law", "match"), [*BAD_LAWS[:-1], (None, "needs a Case or an exact law .* got None")])
def test_plan_samples_refuses_what_is_not_a_law(law, match):
    with pytest.raises(StatsError, match=match):
        rheo.plan_samples(law, alpha=1e-3, tv=0.1)


@pytest.mark.parametrize(("law", "match"), BAD_LAWS)
def test_total_variation_refuses_what_is_not_a_law(law, match):
    with pytest.raises(StatsError, match=match):
        rheo.total_variation(law, LAW)
    with pytest.raises(StatsError, match=match):
        rheo.total_variation(LAW, law)


def test_a_valid_law_is_still_planned_and_measured():
    assert rheo.total_variation(LAW, {(0,): F(1)}) == F(1, 2)
    assert rheo.plan_samples(LAW, alpha=1e-3, tv=0.2) == rheo.plan_samples(CASE, alpha=1e-3, tv=0.2)
    assert 0 < rheo.detectable_tv(LAW, 1000, alpha=1e-3) < 1


def test_default_horizon_refuses_a_non_case():
    with pytest.raises(StatsError, match=r"case must be a rheo_ref\.models\.Case .* got NoneType"):
        default_horizon(None)
    small = Case.from_json(load_json("small.json"))
    assert default_horizon(small) == max(8, 1 + small.scheme.D)


def test_plan_samples_with_a_horizon_has_check_lossless_cap():
    """Over H = 8 windows of V = 12 at tv = 0.005, N is past the 10^6 limit (the two-cell bound,
    ~3e5, passes): `check_lossless` refuses it before sampling, and so does the planner, with the
    same message, found by one certificate at the limit rather than a search for N."""
    kw = dict(alpha=1e-3, tv=0.005, horizon=8)
    with pytest.raises(TooLargeError, match=r"estimated more than 1,000,000, over the limit of 1,000,000") as gate:
        rheo.check_lossless(lambda case, seed, n: [], EAGLE12, **kw)
    with pytest.raises(TooLargeError) as plan:
        rheo.plan_samples(EAGLE12, **kw)
    assert str(plan.value) == str(gate.value)


@pytest.mark.slow
def test_force_lifts_the_horizon_cap_and_plans_the_largest_window():
    """force=True searches for N: past the limit, certified for every window at the per-test α,
    and not certified 1% below for at least one (N is the largest window's, to the search's 0.5%)."""
    from rheo.lossless import promise
    from rheo.lossless.horizon import plan
    from rheo.lossless.stats import DEFAULT_BETA

    n = rheo.plan_samples(EAGLE12, alpha=1e-3, tv=0.005, horizon=8, force=True)
    p = plan(EAGLE12, 8, alpha=1e-3, tv=0.005, beta=DEFAULT_BETA, rounds=False)
    assert n == p.n > 10**6
    planners = [promise.planner(law, p.alpha_each, DEFAULT_BETA) for law in p.windows.values()]
    assert all(pl.holds(n, 0.005) for pl in planners)
    assert not all(pl.holds(int(n / 1.01), 0.005) for pl in planners)


def test_plan_samples_first_tokens_has_the_same_cap():
    big = Case.from_json({**EAGLE12.to_json(), "tokens": 2})
    with pytest.raises(TooLargeError, match="over the limit of 1,000,000"):
        rheo.plan_samples(big, alpha=1e-3, tv=0.005)


@pytest.mark.slow
def test_force_lifts_the_first_tokens_cap():
    big = Case.from_json({**EAGLE12.to_json(), "tokens": 2})
    assert rheo.plan_samples(big, alpha=1e-3, tv=0.005, force=True) > 10**6


def test_plan_samples_refuses_rounds_without_a_horizon():
    with pytest.raises(StatsError, match=r"rounds=True needs a horizon"):
        rheo.plan_samples(CASE, alpha=1e-3, tv=0.1, rounds=True)


@pytest.mark.parametrize(("kw", "match"), [({"force": "no"}, "force='no'"), ({"rounds": 1}, "rounds=1")])
def test_plan_samples_switches_are_bools(kw, match):
    with pytest.raises(StatsError, match=match + " must be True or False"):
        rheo.plan_samples(CASE, alpha=1e-3, tv=0.1, **kw)


def test_every_refusal_is_a_rheo_error():
    for call in (
        lambda: rheo.detectable_tv({(0,): "x"}, 10, alpha=1e-3),
        lambda: rheo.total_variation(None, LAW),
        lambda: default_horizon(None),
        lambda: rheo.plan_samples(LAW, alpha=1e-3, tv=0.1, force="no"),
    ):
        with pytest.raises(RheoError):
            call()
