"""The batch draw of the hunt cuts a batch to its first requests for the mutants whose requests share a
stream (their exact law is the whole batch's), decided by what the mutant's steps do, not by its name."""

from __future__ import annotations

import pytest

from rheo.mutants import hunt_batch
from rheo.mutants.hunt_batch import SHARED_STREAM_REQUESTS, batch_case, couples_streams, for_mutant
from rheo_ref.bugclasses.batch import BATCH_MUTANTS, CORRECT_BATCH, BatchSteps, Keyed, SharedStream


def test_only_the_stream_coupling_mutants_are_cut():
    cases, seeds = batch_case(0, 0)
    assert len(cases) == len(seeds) == 3 > SHARED_STREAM_REQUESTS
    cut = {m for m in BATCH_MUTANTS if len(for_mutant(m, cases, seeds)[0]) == SHARED_STREAM_REQUESTS}
    assert cut == {"batch-shared-stream"}
    assert for_mutant("batch-padding-temperature", cases, seeds) == (cases, seeds)
    assert not couples_streams(CORRECT_BATCH)


class OffsetStream(BatchSteps):
    """Another coupling under another name: every request starts one position further into one stream."""

    def stream(self, rand, seed, before):
        return Keyed(rand, "one", len(before))


@pytest.mark.parametrize("steps", [SharedStream(), OffsetStream()])
def test_a_coupling_mutant_under_any_name_is_cut(monkeypatch, steps):
    monkeypatch.setitem(hunt_batch.BATCH_MUTANTS, "batch-renamed", ("a test", steps, "coupled streams"))
    cases, seeds = batch_case(1, 2)
    assert for_mutant("batch-renamed", cases, seeds) == (cases[:SHARED_STREAM_REQUESTS], seeds[:SHARED_STREAM_REQUESTS])
