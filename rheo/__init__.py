"""rheo: the user-facing suite on top of the two implementations of RheoSampling.

Layers, one direction (enforced by import-linter contracts in pyproject.toml):
`rheo` (this package: the `rheo` command, the audit, the lossless gate and its mutants runner,
the pytest plugin) -> `rheo_fast` (vectorised torch) -> `rheo_ref` (exact, pure Python).

What a downstream decoder author imports (stable; docs/GATE_REFERENCE.md "What you import" lists exactly
`__all__`, and a test compares them):

    from rheo import Case, load_case, check_lossless, assert_lossless, LosslessError
    from rheo import processed, unprocessed, target_law, total_variation, plan_samples, detectable_tv
    from rheo import RheoError, CaseError, TieError, StatsError, SamplerOutputError  # each a RheoError

and, for stand-in models (torch and transformers needed), `rheo.testing`. Every rate is a
keyword (`alpha=`, `tv=` the detectable distance δ, `beta=`); `alpha` is always what one call may
cost a correct decoder. `check_lossless` returns the record (`LawTest`, or `HorizonTest` with
`horizon=H`); `assert_lossless` raises `LosslessError` on a rejection, carrying the record
(`.result`), where it broke (`.top_cells`, `.conditional`); verdicts read `pass` or `REJECT`.

The pytest plugin (`rheo.lossless.plugin`, loaded by the `pytest11` entry point) gives the
`lossless` marker and the `rheo_seed` / `rheo_lossless` fixtures. Importing this package does
not import torch or scipy. Deprecated spellings (`tv`, `min_num_samples`, `min_detectable_tv`) still
work with a warning until the release `rheo.deprecated` names for each.
"""

from rheo import deprecated
from rheo.decoders.settings import processed, unprocessed
from rheo.lossless import stats as _stats
from rheo.lossless.cluster import on_dask
from rheo.lossless.gate import assert_lossless, check_lossless
from rheo.lossless.horizon import HorizonTest, Rounds, default_horizon
from rheo.lossless.planning import detectable_tv, plan_samples, target_law, total_variation
from rheo.lossless.stats import LawTest, assert_law, check_law, seed_for
from rheo_ref.errors import (
    CaseError,
    LosslessError,
    MissingDependencyError,
    OutputError,
    RheoError,
    SamplerOutputError,
    StatsError,
    TieError,
    TooLargeError,
)
from rheo_ref.models import Case, load_case

__all__ = [
    "Case",
    "CaseError",
    "HorizonTest",
    "LawTest",
    "LosslessError",
    "MissingDependencyError",
    "OutputError",
    "RheoError",
    "Rounds",
    "SamplerOutputError",
    "StatsError",
    "TieError",
    "TooLargeError",
    "assert_law",
    "assert_lossless",
    "check_law",
    "check_lossless",
    "default_horizon",
    "detectable_tv",
    "load_case",
    "on_dask",
    "plan_samples",
    "processed",
    "seed_for",
    "target_law",
    "total_variation",
    "unprocessed",
]

# The errors are defined in the reference (which cannot import rheo); they are public here, and print
# as such: `rheo.CaseError: ...`, not `rheo_ref.errors.CaseError` (pickling finds them here too).
for _name in __all__:
    _error = globals()[_name]
    if isinstance(_error, type) and issubclass(_error, RheoError):
        _error.__module__ = __name__
del _name, _error


def __getattr__(name: str) -> object:
    """The deprecated spellings (PEP 562; `rheo.deprecated` lists them with the release that removes each)."""
    renamed = {"tv": lambda: total_variation, "min_num_samples": lambda: _stats.min_num_samples}
    renamed["min_detectable_tv"] = lambda: _stats.min_detectable_tv
    return deprecated.attribute(__name__, name, renamed)
