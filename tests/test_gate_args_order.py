"""Every gate call checks its arguments before the sampler runs, by one helper
(`rheo.lossless.stats.gate_call`), in a fixed order: a call with two bad arguments reports the same one
whichever path (the first n tokens, or a horizon) it takes. The sampler here must never run."""

from __future__ import annotations

import pytest

from rheo import check_lossless
from rheo.lossless.stats import check_first_tokens
from rheo_ref.errors import CaseError, StatsError
from rheo_ref.models import load_case

CASE = load_case("tests/cases/small.json")


def never(case, seed, n):
    raise AssertionError("the sampler ran before the arguments were checked")


GOOD = {"alpha": 1e-3, "tv": 0.3}


@pytest.mark.parametrize("check", [check_first_tokens, check_lossless])
def test_first_tokens_order_sampler_then_rates_then_tokens_then_seed(check):
    with pytest.raises(StatsError, match="sampler"):
        check(42, CASE, alpha=2.0, tv=0.3, tokens=0)
    with pytest.raises(StatsError, match="alpha"):
        check(never, CASE, alpha=2.0, tv=0.3, tokens=0, seed=-1)
    with pytest.raises(StatsError, match="tokens"):
        check(never, CASE, **GOOD, tokens=0, seed=-1)
    with pytest.raises(StatsError, match="seed"):
        check(never, CASE, **GOOD, seed=-1)


def test_horizon_order_sampler_then_tokens_and_horizon_then_rates_then_seed():
    with pytest.raises(StatsError, match="sampler"):
        check_lossless(42, CASE, alpha=2.0, tv=0.3, horizon=0, tokens=3)
    with pytest.raises(StatsError, match="give one"):
        check_lossless(never, CASE, alpha=2.0, tv=0.3, horizon=4, tokens=3)
    with pytest.raises(CaseError, match="horizon"):
        check_lossless(never, CASE, alpha=2.0, tv=0.3, horizon="4", seed=-1)
    with pytest.raises(StatsError, match="alpha"):
        check_lossless(never, CASE, alpha=2.0, tv=0.3, horizon=4, seed=-1)
    with pytest.raises(StatsError, match="seed"):
        check_lossless(never, CASE, **GOOD, horizon=4, seed=-1)
