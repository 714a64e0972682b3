"""rheo: the user-facing suite on top of the two implementations of RheoSampling.

Layers, one direction (enforced by import-linter contracts in pyproject.toml):
`rheo` (this package: the `rheo` command, the audit, the lossless gate and its mutants runner,
the pytest plugin) -> `rheo_fast` (vectorised torch) -> `rheo_ref` (exact, pure Python).

What a downstream decoder author imports (stable; see docs/GATE.md):

    from rheo import Case, load_case, assert_lossless, LosslessError
    from rheo import processed, target_law, tv, plan_samples   # the exact laws around the gate

`assert_lossless(..., horizon=H)` tests every window (x_{k-1}, x_k) up to token H instead of the
joint law of the first tokens (`HorizonTest`; with `rounds=True` and a sampler returning `Rounds`,
also given the first round's length); a rejection carries where it broke (`LawTest.top_cells`,
`LawTest.worst_conditional`; `LosslessError.cells`, `LosslessError.conditional`).

and the pytest plugin (`rheo.lossless.plugin`, loaded by the `pytest11` entry point) gives the
`lossless` marker and the `rheo_seed` / `rheo_lossless` fixtures. Importing this package does
not import torch or scipy.
"""

from rheo.decoders.laws import processed
from rheo.lossless.horizon import HorizonTest, Rounds, assert_lossless, default_horizon
from rheo.lossless.planning import plan_samples, target_law, tv
from rheo.lossless.stats import (
    LawTest,
    LosslessError,
    StatsError,
    assert_law,
    check_law,
    min_detectable_tv,
    min_num_samples,
    seed_for,
)
from rheo_ref.errors import RheoError
from rheo_ref.models import Case, load_case

__all__ = [
    "Case",
    "HorizonTest",
    "LawTest",
    "LosslessError",
    "RheoError",
    "Rounds",
    "StatsError",
    "assert_law",
    "assert_lossless",
    "check_law",
    "default_horizon",
    "load_case",
    "min_detectable_tv",
    "min_num_samples",
    "plan_samples",
    "processed",
    "seed_for",
    "target_law",
    "tv",
]
