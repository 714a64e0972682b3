"""pytest plugin (entry point `pytest11`, so installing rheo enables it): the `lossless` marker,
the lossless gate for downstream decoders, and its fixtures. It is loaded into every session of
every project that installs rheo, so it registers nothing else: rheo's own markers (slow, gpu,
...) live in rheo's pyproject.toml, and a downstream `--strict-markers` still catches them.

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

MARKERS = {"lossless": "the statistical and exact lossless gate (pytest -m lossless)"}


def pytest_configure(config) -> None:
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")


def pytest_report_header(config) -> str | None:
    salt = os.environ.get("RHEO_SEED_SALT")
    return f"rheo: seeds from test ids, RHEO_SEED_SALT={salt!r}" if salt else None


@pytest.fixture
def rheo_seed(request) -> int:
    """A 63-bit seed fixed by this test's id (and $RHEO_SEED_SALT)."""
    from rheo.lossless.stats import seed_for

    return seed_for(request.node.nodeid)


@pytest.fixture
def rheo_lossless(rheo_seed):
    """`assert_lossless` with the seed of this test: rheo_lossless(sampler, case, alpha=, tv=[, horizon=H])."""

    from .gate import assert_lossless
    from .stats import hide_lossless

    def gate(sampler, case, *, alpha: float, tv: float, **kwargs: Any):
        __tracebackhide__ = hide_lossless
        kwargs.setdefault("seed", rheo_seed)
        return assert_lossless(sampler, case, alpha=alpha, tv=tv, **kwargs)

    return gate
