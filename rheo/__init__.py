"""rheo: the user-facing suite on top of the two implementations of RheoSampling.

Layers, one direction (enforced by import-linter contracts in pyproject.toml):
`rheo` (this package: the `rheo` command, the audit, the lossless gate and its mutants runner,
the pytest plugin) -> `rheo_fast` (vectorised torch) -> `rheo_ref` (exact, pure Python).

What a downstream decoder author imports (stable; see docs/GATE.md):

    from rheo import Case, load_case, assert_lossless, LosslessError

and the pytest plugin (`rheo.pytest_plugin`, loaded by the `pytest11` entry point) gives the
`lossless` marker and the `rheo_seed` / `rheo_lossless` fixtures. Importing this package does
not import torch or scipy.
"""

from rheo_ref.errors import RheoError
from rheo_ref.models import Case, load_case

from .stats import (
    LawTest,
    LosslessError,
    StatsError,
    assert_law,
    assert_lossless,
    check_law,
    min_detectable_tv,
    min_num_samples,
    seed_for,
)

__all__ = [
    "Case",
    "LawTest",
    "LosslessError",
    "RheoError",
    "StatsError",
    "assert_law",
    "assert_lossless",
    "check_law",
    "load_case",
    "min_detectable_tv",
    "min_num_samples",
    "seed_for",
]
