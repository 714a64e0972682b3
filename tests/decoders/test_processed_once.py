"""A case is processed once: `rheo.processed` refuses a case it made (or one built from it), naming the
settings already applied; `rheo.unprocessed` gives a sampler handed a processed case the raw case and the
settings to apply itself; a sampler that follows it passes, one that processes the processed case again is
rejected; the batch checks refuse a processed case instead of processing it twice."""

from __future__ import annotations

import dataclasses
import pickle
import random
from fractions import Fraction as F

import pytest

import rheo
import rheo.testing

CASE = rheo.Case.from_json(
    {"target": {"vocab_size": 3, "context_length": 0, "probs": {"": ["1/6", "1/3", "1/2"]}}, "tokens": 1}
)


def test_a_processed_case_remembers_its_raw_case_and_settings():
    p = rheo.processed(CASE, temperature=0.5, top_k=2)
    assert p.target.row(()) == (0, F(4, 13), F(9, 13))  # (1/3)², (1/2)² renormalised, top-2
    raw, settings = rheo.unprocessed(p)
    assert raw == CASE and settings == {"temperature": 0.5, "top_k": 2}
    assert rheo.unprocessed(CASE) == (CASE, {})  # a raw case: itself, no settings
    again, settings = rheo.unprocessed(pickle.loads(pickle.dumps(p)))  # (a sampling worker gets a pickled case)
    assert again.target == CASE.target and settings == {"temperature": 0.5, "top_k": 2}
    longer = dataclasses.replace(p, tokens=2)  # a case built from a processed one is still processed
    raw, settings = rheo.unprocessed(longer)
    assert raw.target == CASE.target and raw.tokens == 2 and settings == {"temperature": 0.5, "top_k": 2}


@pytest.mark.parametrize("derive", [lambda p: p, lambda p: dataclasses.replace(p, tokens=2)], ids=["same", "replaced"])
def test_processing_a_processed_case_again_is_refused(derive):
    p = derive(rheo.processed(CASE, temperature=0.5))
    with pytest.raises(rheo.CaseError, match=r"already processed \(rheo.processed with temperature=0.5\).*twice"):
        rheo.processed(p, temperature=0.5)
    with pytest.raises(rheo.CaseError, match="already processed"):
        rheo.processed(p)  # even with no settings: the caller thinks the case is raw
    assert rheo.processed(CASE, temperature=0.5).target == p.target  # the raw case still processes, once


def test_the_batch_checks_refuse_a_processed_case():
    p = rheo.processed(CASE, temperature=0.5)
    with pytest.raises(rheo.CaseError, match="already processed"):
        rheo.testing.request_case(p, {"temperature": 0.5})


def _draw(row, rng: random.Random) -> int:
    return rng.choices(range(len(row)), [float(x) for x in row])[0]


def _t_half(row) -> list[F]:  # the decoder's own temperature 1/2: rows squared, renormalised
    w = [x * x for x in row]
    return [x / sum(w) for x in w]


def follows_unprocessed(case, seed, num_samples):
    """Builds from the raw case and applies the settings once (what the docs tell a sampler to do)."""
    raw, settings = rheo.unprocessed(case)
    assert settings == {"temperature": 0.5}
    rng = random.Random(seed)
    return [[_draw(_t_half(raw.target.row(())), rng)] for _ in range(num_samples)]


def processes_twice(case, seed, num_samples):
    """Builds from the case it received (already processed) and applies its temperature again."""
    rng = random.Random(seed)
    return [[_draw(_t_half(case.target.row(())), rng)] for _ in range(num_samples)]


def test_a_sampler_that_reads_unprocessed_passes_and_one_that_processes_twice_is_rejected():
    p = rheo.processed(CASE, temperature=0.5)  # (1, 4, 9)/14; twice: (1, 16, 81)/98, exact TV 9/49 > δ = 0.1
    twice = {(t,): x for t, x in enumerate(_t_half(p.target.row(())))}
    assert rheo.total_variation(rheo.target_law(p), twice) == F(9, 49)
    ok = rheo.check_lossless(follows_unprocessed, p, alpha=1e-3, tv=0.1, seed=3)
    assert not ok.rejected, ok.summary()
    bad = rheo.check_lossless(processes_twice, p, alpha=1e-3, tv=0.1, seed=3)
    assert bad.rejected, bad.summary()
