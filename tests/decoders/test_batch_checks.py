"""What the batched decoder's checks (`rheo.testing.check_batch`, `check_logprobs`, `check_greedy`) are
handed is checked before they draw, and a malformed output is named (the worked example in
tests/decoders/test_batched_chain.py exercises their verdicts)."""

from __future__ import annotations

import math

import pytest

import rheo
from rheo.testing import LogprobError, check_batch, check_logprobs

CASE = rheo.Case.from_json(
    {"target": {"vocab_size": 3, "context_length": 0, "probs": {"": ["1/2", "1/3", "1/6"]}}, "tokens": 1}
)


def test_a_batch_needs_two_requests_and_a_sampler_one_row_per_request():
    with pytest.raises(rheo.StatsError, match=r"1 request\(s\); allowed: at least 2"):
        check_batch(lambda c, r, s, n: [], CASE, [{}], alpha=1e-3, tv=0.2)
    with pytest.raises(
        rheo.SamplerOutputError, match=r"returned \d+ batches of sizes \[1\]; allowed: \d+ batches of 2 rows"
    ):
        check_batch(lambda c, r, s, n: [[(0,)]] * n, CASE, [{}, {}], alpha=1e-3, tv=0.2, seed=1)


def test_a_logprob_of_an_impossible_token_names_the_position():
    """top_k=2 drops token 2: a reported finite logprob for it is named with the processed probability 0."""
    ok = check_logprobs(CASE, [{"top_k": 2}], [[[0]]], [[[math.log(3 / 5)]]])
    assert ok == 1
    with pytest.raises(
        LogprobError, match=r"position 1: token 2 reported logprob -1.79176, the processed target's is log\(0\)"
    ):
        check_logprobs(CASE, [{"top_k": 2}], [[[2]]], [[[math.log(1 / 6)]]])
