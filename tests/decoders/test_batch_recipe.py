"""The batch recipe of docs/GATE.md ("A batched decoder's suite"), run as written: its batch sampler with
per-request settings (plain, T = 1/2, top-k 2, greedy) passes `assert_batch`; its twin whose rows share one
random stream per batch is rejected through the public API alone, by the pairs' independence tests."""

from __future__ import annotations

import pytest
from helpers import doc_example

import rheo.testing

ROW_STREAM = 'random.Random(f"{seed}/{i}/{r}")'  # one stream per row of a batch
BATCH_STREAM = 'random.Random(f"{seed}/{i}")'  # the planted bug: one stream per batch, every row reads it


def _recipe(source: str) -> dict:
    ns: dict = {}
    exec(compile(source, "docs/GATE.md", "exec"), ns)
    return ns


def test_the_recipe_passes_as_written():
    src = doc_example("def my_batch_sampler")
    ns = _recipe(src)
    assert [r.get("temperature", 1) for r in ns["REQUESTS"]] == [1, 0.5, 1, 0]  # per-request settings
    ns["test_my_batched_decoder"]()  # assert_batch: raises BatchError on a rejection


def test_rows_sharing_one_random_stream_are_rejected():
    src = doc_example("def my_batch_sampler")
    assert src.count(ROW_STREAM) == 1
    ns = _recipe(src.replace(ROW_STREAM, BATCH_STREAM))
    with pytest.raises(rheo.testing.BatchError, match="a shared random stream couples them"):
        ns["test_my_batched_decoder"]()
    res = rheo.testing.check_batch(ns["my_batch_sampler"], ns["CASE"], ns["REQUESTS"], alpha=1e-3, tv=0.2)
    alone = [t for t in res.tests if t.label.endswith(" alone")]
    assert alone and not any(t.rejected for t in alone)  # each row's own law is right: only the pairs catch it
