"""Every deprecated spelling of rheo's API, in one table, each with the release that removes it.

A deprecated name keeps working until that release, with a `DeprecationWarning` that names its
replacement and the release (`Deprecated.message`). `DEPRECATED` is the whole list; the modules that
serve a deprecated attribute ask `attribute` for it, so the text and the release are written here once.

| deprecated | use instead | removed in | its shim |
|---|---|---|---|
| `rheo.tv` | `rheo.total_variation` | 0.2.0 | `rheo/__init__.py`, served by `attribute` |
| `rheo.min_num_samples` | `rheo.plan_samples` | 0.2.0 | `rheo/__init__.py`, served by `attribute` |
| `rheo.min_detectable_tv` | `rheo.detectable_tv` | 0.2.0 | `rheo/__init__.py`, served by `attribute` |
| `rheo.selfgate.matrix.ALPHA` | `rheo.selfgate.matrix.alpha_per_test()` | 0.2.0 | `rheo/selfgate/matrix.py`, served by `attribute` |
| `LosslessError.cells` | `LosslessError.top_cells` | 0.2.0 | `rheo_ref/errors.py`: the reference may not import rheo (the layers point rheo → rheo_fast → rheo_ref), so the property stays there and writes this table's message itself |
| `rheo.lossless.planning.tv` | `rheo.total_variation` | 0.2.0 | `rheo/lossless/planning.py`, served by `attribute` (a second spelling of `rheo.tv` that nothing in rheo calls) |
| `rheo.family` (the module: every name in it) | `rheo.families.registry` | 0.2.0 | `rheo/family.py`, served by `attribute` (the registry moved into the folder of the families it lists) |
| `rheo.decoders.settings.Sampling` | `rheo_ref.processing.Sampling` | 0.2.0 | `rheo/decoders/settings.py`, served by `attribute` (the settings are modelled once, in the lowest layer that reads them) |

Removing them: the release named in a row deletes the row and its shim; `tests/test_deprecated.py`
fails once rheo's version reaches a row's release, and checks that every shim warns with its row's text.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass


@dataclass(frozen=True)
class Deprecated:
    """One deprecated spelling: `old` as a user writes it, `new` its replacement, `removed_in` the release
    that removes it, `shim` the file that keeps it working until then."""

    old: str
    new: str
    removed_in: str
    shim: str

    def message(self) -> str:
        return f"{self.old} is deprecated and will be removed in rheo {self.removed_in}; use {self.new}"

    def warn(self, stacklevel: int = 2) -> None:
        """The warning, attributed to the caller `stacklevel` frames up (1: the caller of `warn`)."""
        warnings.warn(self.message(), DeprecationWarning, stacklevel=stacklevel + 1)


DEPRECATED: tuple[Deprecated, ...] = (
    Deprecated("rheo.tv", "rheo.total_variation", "0.2.0", "rheo/__init__.py"),
    Deprecated("rheo.min_num_samples", "rheo.plan_samples", "0.2.0", "rheo/__init__.py"),
    Deprecated("rheo.min_detectable_tv", "rheo.detectable_tv", "0.2.0", "rheo/__init__.py"),
    Deprecated(
        "rheo.selfgate.matrix.ALPHA", "rheo.selfgate.matrix.alpha_per_test()", "0.2.0", "rheo/selfgate/matrix.py"
    ),
    Deprecated("LosslessError.cells", "LosslessError.top_cells", "0.2.0", "rheo_ref/errors.py"),
    Deprecated("rheo.lossless.planning.tv", "rheo.total_variation", "0.2.0", "rheo/lossless/planning.py"),
    Deprecated("rheo.family", "rheo.families.registry", "0.2.0", "rheo/family.py"),
    Deprecated("rheo.decoders.settings.Sampling", "rheo_ref.processing.Sampling", "0.2.0", "rheo/decoders/settings.py"),
)
BY_NAME = {d.old: d for d in DEPRECATED}


def attribute(module: str, name: str, values: Mapping[str, Callable[[], object]]) -> object:
    """A module's deprecated attribute (for its PEP 562 `__getattr__`): `values[name]()` after the row's
    warning (the row of `module.name`, or of the whole `module` where the module is deprecated), attributed to
    the code that read `module.name`; AttributeError for any other name."""
    entry = BY_NAME.get(f"{module}.{name}", BY_NAME.get(module))
    if entry is None or name not in values:
        raise AttributeError(f"module {module!r} has no attribute {name!r}")
    entry.warn(stacklevel=3)  # (attribute <- the module's __getattr__ <- the reader)
    return values[name]()


__all__ = ["BY_NAME", "DEPRECATED", "Deprecated", "attribute"]
