"""Shared test configuration.

Hypothesis profiles, chosen by RHEO_HYPOTHESIS_PROFILE (docs/GATE.md):
- `ci` (default when $CI is set): derandomized, so a CI run is reproducible;
- `dev` (default otherwise): random, modest example counts;
- `nightly`: many more examples, random.
Seeds of statistical tests come from the test id (rheo_ref.pytest_plugin's `rheo_seed`);
RHEO_SEED_SALT varies them all (nightly). The plugin itself is loaded through its pytest11
entry point; tests/ only chooses the profile.
"""
from __future__ import annotations

import os

import pytest

from hypothesis import HealthCheck, settings

PROFILE_ENV = "RHEO_HYPOTHESIS_PROFILE"

settings.register_profile("ci", derandomize=True, max_examples=40, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("nightly", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get(PROFILE_ENV, "ci" if os.environ.get("CI") else "dev"))



@pytest.fixture(scope="module")
def one_thread():
    """Tiny tensors: intra-op threads only contend on this 2-core machine (about 10x slower).
    Fast-path test modules use it with `pytestmark = pytest.mark.usefixtures("one_thread")`."""
    import torch

    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)
