"""Deprecated: the suite's family registry is `rheo.families.registry` (`rheo.deprecated` has the row and the
release that removes this module); every name read here is that module's, with a `DeprecationWarning`."""

from __future__ import annotations

from rheo import deprecated


def __getattr__(name: str) -> object:
    from rheo.families import registry

    names = {"SuiteFamily", "register", "unregister", "mutant_cases_of", "suite_families"}
    return deprecated.attribute(__name__, name, {n: (lambda n=n: getattr(registry, n)) for n in names})
