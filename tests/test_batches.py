"""Batches of different requests (rheo_ref.bugclasses.batch): the correct batch decoder's joint law
is the product of its requests' laws and every seeded request's tokens are those it gives alone
(exact TV 0 on every check); a shared random stream breaks batch invariance only (each request's
law stays exact), and one row's token broadcast into every row moves the requests' laws."""

from __future__ import annotations

from fractions import Fraction

from rheo_ref.bugclasses.batch import BATCH_MUTANTS, CORRECT_BATCH, batch_tvs
from rheo_ref.bugclasses.cases import BugCase
from rheo_ref.bugclasses.decoder import Request
from rheo_ref.models import TableModel

F = Fraction


def _case(q: list[int], p: list[int], req: Request) -> BugCase:
    t = lambda w, n: TableModel.from_weights({(): w}, context_length=0, name=n)
    return BugCase(t(q, "draft"), t(p, "target"), (), 2, req)


BATCH = [
    _case([3, 1, 2], [1, 2, 3], Request(temperature=F(1, 2), gamma=1)),
    _case([1, 1, 2], [2, 1, 1], Request(gamma=1)),
]
SEEDS = [11, 22]


def test_the_correct_batch_is_exact_and_invariant():
    assert all(v == 0 for v in batch_tvs(BATCH, SEEDS, CORRECT_BATCH).values())


def test_a_shared_stream_breaks_invariance_only():
    tvs = batch_tvs(BATCH, SEEDS, BATCH_MUTANTS["batch-shared-stream"][1])
    assert tvs["invariance"] > 0 and all(v == 0 for c, v in tvs.items() if c != "invariance"), tvs


def test_a_broadcast_token_moves_the_request_laws():
    tvs = batch_tvs(BATCH, SEEDS, BATCH_MUTANTS["batch-token-broadcast"][1])
    assert tvs["request1"] > 0 and tvs["batch"] > 0 and tvs["request0"] == 0, tvs


def test_padding_temperature_needs_an_odd_batch():
    steps = BATCH_MUTANTS["batch-padding-temperature"][1]
    assert all(v == 0 for c, v in batch_tvs(BATCH, SEEDS, steps).items() if c != "invariance")
    assert batch_tvs(BATCH[:1], SEEDS[:1], steps)["request0"] > 0  # one request: odd, and last
