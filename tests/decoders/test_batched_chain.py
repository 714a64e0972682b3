"""The worked example (docs/GATE.md, "A batched decoder's suite"): a numpy batched chain decoder with
per-request settings passes rheo's public checks, and each of its three planted bugs is rejected
through the public API alone (`rheo`, `rheo.testing`, the plugin's fixtures). α and δ are stated per
call; every seed comes from the test id (`rheo_seed`)."""

from __future__ import annotations

import pytest
from batched_chain import ChainDecoder

import rheo
from rheo.testing import BatchError, GreedyError, LogprobError, assert_batch, check_greedy, check_logprobs, request_case

ALPHA, TV = 1e-3, 0.08  # per call: total false-alarm probability, and the TV each test detects (β = 0.01)
DRAFT = {
    (t,): w for t, w in enumerate([[6, 1, 2, 4, 3], [2, 7, 3, 1, 5], [4, 2, 6, 1, 3], [1, 5, 2, 8, 3], [3, 3, 1, 2, 9]])
}
TARGET = {
    (t,): w
    for t, w in enumerate([[9, 2, 4, 1, 5], [3, 11, 1, 6, 2], [2, 5, 10, 4, 1], [4, 1, 3, 12, 2], [5, 2, 1, 3, 13]])
}


def table(weights: dict) -> dict:
    """A first-order table as a case file writes it: rows of rationals, normalised integer weights."""
    probs = {str(t): [f"{x}/{sum(w)}" for x in w] for (t,), w in weights.items()}
    return {"vocab_size": 5, "context_length": 1, "probs": probs}


CASE = rheo.Case.from_json({"draft": table(DRAFT), "target": table(TARGET), "context": [0], "tokens": 2})
REQUESTS = [
    {},
    {"temperature": 0.5, "top_p": 0.8},
    {"top_k": 2},
    {"min_p": 0.3},
    {"repetition": 2},
    {"temperature": 0, "ties": "low"},
]


@pytest.mark.lossless
@pytest.mark.parametrize("i", range(len(REQUESTS)))
def test_each_request_has_its_processed_law(rheo_lossless, i):
    """One request alone through the plugin's fixture: the law of its first two tokens."""
    req = REQUESTS[i]

    def alone(case, seed, n):
        return ChainDecoder()(CASE, [req], seed, n)[:, 0, :]

    rheo_lossless(alone, request_case(CASE, req), alpha=ALPHA, tv=TV)


@pytest.mark.lossless
def test_the_batch_is_invariant_and_the_shared_stream_is_caught(rheo_seed):
    res = assert_batch(ChainDecoder(), CASE, REQUESTS, alpha=ALPHA, tv=TV, seed=rheo_seed)
    print(res.summary(), "N =", res.tests[0].n)
    with pytest.raises(BatchError, match="first tokens independent") as e:
        assert_batch(ChainDecoder(frozenset({"shared-stream"})), CASE, REQUESTS, alpha=ALPHA, tv=TV, seed=rheo_seed)
    print(e.value)


@pytest.mark.lossless
def test_a_penalty_that_forgets_the_drafts_is_caught(rheo_seed):
    """Only the repetition request changes law; the batch check names its row."""
    with pytest.raises(BatchError, match=r"request 4 \{'repetition': 2\}") as e:
        assert_batch(
            ChainDecoder(frozenset({"penalty-forgets-drafts"})), CASE, REQUESTS, alpha=ALPHA, tv=TV, seed=rheo_seed
        )
    print(e.value)


def test_reported_logprobs_are_the_processed_target_s(rheo_seed):
    tokens, logprobs = ChainDecoder().generate(CASE, REQUESTS, rheo_seed, 50)
    assert check_logprobs(CASE, REQUESTS, tokens, logprobs) == 50 * len(REQUESTS) * CASE.tokens
    tokens, logprobs = ChainDecoder(frozenset({"raw-logprobs"})).generate(CASE, REQUESTS, rheo_seed, 50)
    with pytest.raises(LogprobError, match="it is the unprocessed target's logprob"):
        check_logprobs(CASE, REQUESTS, tokens, logprobs)


def test_greedy_is_the_argmax_path():
    """The correct decoder at T = 0 (forced by the check) follows the argmax path; a decoder that
    ignores T = 0 and samples is caught at the first position it leaves the path."""
    assert (
        check_greedy(ChainDecoder(), CASE, {"repetition": 2})
        == rheo.target_law(request_case(CASE, {"repetition": 2, "temperature": 0, "ties": "low"})).popitem()[0]
    )

    def ignores_greedy(case, requests, seed, n):
        return ChainDecoder()(case, [{**r, "temperature": 1} for r in requests], seed, n)

    with pytest.raises(GreedyError, match=r"at T = 0 position \d emitted \d where the processed target's argmax"):
        check_greedy(ignores_greedy, CASE, {})
