"""Shared test configuration: hypothesis profiles chosen by RHEO_HYPOTHESIS_PROFILE.

- `ci` (default when CI is set): derandomized, so a CI run is reproducible;
- `dev` (default otherwise): random, modest example counts;
- `nightly`: many more examples, random.
"""
from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

settings.register_profile("ci", derandomize=True, max_examples=40, deadline=None, print_blob=True,
                          suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("nightly", max_examples=1000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("RHEO_HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))
