"""The suite's registry of scheme families: what each family adds on top of the two implementations.

Keyed by the names of `rheo_ref.family` (the built-in ones are `rheo.families.<name>`, each
defining `SUITE`, loaded on first use; a test's toy family or a third party's joins by
`register`). The gate, `rheo compare` and `rheo audit` iterate it and never name a family:

- `gate_schemes`: the gate's schemes by name (unique across families);
- `gate_rows()`: the family's rows of the gate matrix (`rheo.selfgate.matrix.GateCase` by row name);
- `mutant_rows`: the rows its mutants' negative controls run on, and `mutant_cases(mutant)` those
  of them one mutant may run on (default: all of them);
- `compare_cells(N, V)` and `compare_rule`: its `rheo compare` cells at a budget of N draft nodes
  on V tokens, and the one-line rule that makes them (printed with the table);
- `audit_rows(q, p)`: its `rheo audit` rows (label, case) on the audit's tables.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rheo_ref.family import layer_registry
from rheo_ref.registry import Registry


@dataclass(frozen=True)
class SuiteFamily:
    """One family in the suite (see the module docstring for each field)."""

    name: str
    gate_schemes: Mapping[str, Any] = field(default_factory=dict)
    gate_rows: Callable[[], dict[str, Any]] = dict
    mutant_rows: tuple[str, ...] = ()
    mutant_cases: Callable[[str], tuple[str, ...]] | None = None
    compare_cells: Callable[[int, int], list[Any]] = lambda N, V: []
    compare_rule: str = ""
    audit_rows: Callable[[Any, Any], list[tuple[str, Any]]] = lambda q, p: []


_REGISTRY: Registry[SuiteFamily] = layer_registry(SuiteFamily, "rheo.families", "SUITE")
register, unregister = _REGISTRY.register, _REGISTRY.unregister


def mutant_cases_of(family: SuiteFamily, mutant: str) -> tuple[str, ...]:
    """The rows of `family` one of its mutants may run on."""
    return family.mutant_rows if family.mutant_cases is None else family.mutant_cases(mutant)


def suite_families() -> Mapping[str, SuiteFamily]:
    """Every family of the suite by name, the built-in ones first, in table order."""
    return _REGISTRY.entries()
