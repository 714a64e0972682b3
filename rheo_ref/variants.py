"""Variants of the algorithm: the spec, and the deliberately broken mutants that the lossless
gate must reject (its negative controls).

Each family declares its own typed step settings, a frozen dataclass whose defaults are the spec
(`rheo_ref.family.Family.steps`: `rheo_ref.slot_steps.SlotSteps` for the rheo family,
`rheo_ref.verifier_laws.VerifierSteps` for the static family, one in the folder of each other
family), and its mutants (`Family.mutants`, declared in `rheo_ref/families/<name>/settings.py`).
A `Variant` is one of them, or the spec: a name, a description, the family it belongs to and a
settings object of that family's type that changes exactly one step (docs/FAMILIES.md).

A round reads only its own family's settings (`Variant.steps_of`): the spec gives each family its
default settings, a mutant its own, and a mutant of another family is refused with the allowed
names (`Variant.check_family`). Both implementations read the settings, never a name; names exist
only at the edges (the CLI, the gate), where `variant_named` turns a name into a variant or
refuses it. `MUTANTS` is a view of every registered family's mutants, in table order.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, fields
from typing import Any

from .errors import CaseError
from .family import families, family_named


@dataclass(frozen=True)
class Variant:
    """How one round runs: the spec (`family` None), or a mutant of `family` whose `steps` (a
    settings object of that family's type) change one step of the family's spec."""

    name: str
    description: str
    family: str | None = None
    steps: Any = None
    note: str = ""  # what the gate can and cannot see of it

    def changed(self) -> dict[str, object]:
        """The settings that differ from the spec's, by name."""
        if self.steps is None:
            return {}
        spec = type(self.steps)()
        return {
            f.name: getattr(self.steps, f.name)
            for f in fields(self.steps)
            if getattr(self.steps, f.name) != getattr(spec, f.name)
        }

    def check_family(self, family: str) -> None:
        """Refuse this variant on a case of `family` when it is a mutant of another family."""
        if self.family is not None and self.family != family:
            own = ", ".join(v.name for v in family_named(family).mutants)
            raise CaseError(
                f"mutant {self.name!r} belongs to the {self.family} family; a case of family {family!r} "
                f"runs the spec or its own family's mutants ({own})"
            )

    def steps_of(self, family: str) -> Any:
        """The settings a round of `family` reads: this mutant's, or the family's spec (None for a
        family without settings); a mutant of another family is refused."""
        self.check_family(family)
        if self.family == family:
            return self.steps
        kind = family_named(family).steps
        return None if kind is None else kind()


SPEC = Variant("spec", "the algorithm as pinned in docs/ALGORITHM.md")


class Mutants(Mapping[str, Variant]):
    """Every registered family's mutants by name, in table order (a view of the registry, so a
    family registered later brings its own)."""

    def _all(self) -> dict[str, Variant]:
        return {v.name: v for fam in families().values() for v in fam.mutants}

    def __getitem__(self, name: str) -> Variant:
        return self._all()[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())


MUTANTS = Mutants()


def variant_named(name: str | None) -> Variant:
    """The variant called `name` (None or "spec": the spec); an unknown name is refused here,
    so a typo can never run the spec silently."""
    if name is None or name == SPEC.name:
        return SPEC
    if not isinstance(name, str) or name not in MUTANTS:
        raise CaseError(f"unknown mutant {name!r}; allowed: {', '.join(MUTANTS)}")
    return MUTANTS[name]
