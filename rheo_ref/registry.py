"""One registry of scheme families per layer, all built the same way (pytest's `default_plugins`).

A `Registry` holds entries that have a `name`: the built-in ones are loaded on first use from
`<package>.<name>` (its attribute `attr`), in the order of `rheo_ref.family.DEFAULT_FAMILIES`;
others join with `register` and leave with `unregister` (a test's toy family, a third party's).
`rheo_ref.family`, `rheo_fast.family` and `rheo.families.registry` each keep one.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar

from rheo_ref.errors import CaseError

T = TypeVar("T")


class Registry(Generic[T]):
    """Entries of type `kind` by name; `check(entry)` runs on every registration."""

    def __init__(
        self,
        kind: type[T],
        package: str,
        attr: str,
        defaults: Sequence[str],
        *,
        check: Callable[[T], None] | None = None,
        replace: bool = False,
        noun: str = "family",
    ) -> None:
        self.kind, self.package, self.attr, self.defaults = kind, package, attr, tuple(defaults)
        self.check, self.replace, self.noun = check, replace, noun
        self._entries: dict[str, T] = {}
        self._loaded = False

    def _load(self) -> None:
        if not self._loaded:
            self._loaded = True
            for name in self.defaults:
                self.register(getattr(importlib.import_module(f"{self.package}.{name}"), self.attr))

    def register(self, entry: T) -> T:
        """Add an entry (after the built-in ones); a second one of the same name is refused
        unless this registry replaces (a layer's registry replaces a family's entry)."""
        self._load()
        if not isinstance(entry, self.kind):
            raise CaseError(f"register: {entry!r} is not a {self.kind.__module__}.{self.kind.__name__}")
        name: str = getattr(entry, "name")  # noqa: B009
        if not self.replace and name in self._entries and self._entries[name] is not entry:
            raise CaseError(f"{self.noun} {name!r} is already registered; allowed: a new name")
        if self.check is not None:
            self.check(entry)
        self._entries[name] = entry
        return entry

    def unregister(self, name: str) -> None:
        """Remove an entry added by `register`; the built-in ones stay."""
        if name in self.defaults:
            raise CaseError(f"{self.noun} {name!r} is built in; allowed: those added by register()")
        self._entries.pop(name, None)

    def entries(self) -> Mapping[str, Any]:
        """Every entry by name, the built-in ones first, in table order."""
        self._load()
        return dict(self._entries)
