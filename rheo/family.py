"""Deprecated: the suite's family registry is `rheo.families.registry` (`rheo.deprecated` has the row and the
release that removes this module); every name read here is that module's, with a `DeprecationWarning`."""

from __future__ import annotations

from collections.abc import Callable

from rheo import deprecated

NAMES = ("SuiteFamily", "register", "unregister", "mutant_cases_of", "suite_families")


def _reader(name: str) -> Callable[[], object]:
    def read() -> object:
        from rheo.families import registry

        return getattr(registry, name)

    return read


def __getattr__(name: str) -> object:
    return deprecated.attribute(__name__, name, {n: _reader(n) for n in NAMES})
