"""The fast path's registry of scheme families: what each family adds on the torch side.

Keyed by the names of `rheo_ref.family` (the built-in ones are `rheo_fast.families.<name>`, each
defining `FAST`, loaded on first use; a test's toy family or a third party's joins by `register`).
`rheo_fast.decode` and `rheo_fast.lm.decode` read it instead of choosing by the scheme's class:

- `layout(scheme)`: the per-round coin layout (`.n_coins` sizes the block of one round);
- `play_round(model, state, scheme, coins [B, n_coins], todo [B], *, variant, layout)`: one
  round for B trials, refusals checked for the trials still decoding; returns a `Verdict`;
- `rows(scheme)`: (rows of one round's draft tensor [B, E, V], nodes of its tree) for size limits;
- `lm_methods`: real-model method names -> a function of a `rheo_fast.lm.decode.TreeSize` giving
  the scheme (`rheo lm` / `rheo bench` methods).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rheo_ref.errors import CaseError
from rheo_ref.family import DEFAULT_FAMILIES, family_named


@dataclass(frozen=True)
class FastFamily:
    """One family on the fast path (see the module docstring for each field)."""

    name: str
    layout: Callable[[Any], Any]
    play_round: Callable[..., Any]
    rows: Callable[[Any], tuple[int, int]]
    lm_methods: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)


_REGISTRY: dict[str, FastFamily] = {}
_LOADED: list[bool] = []


def _load_defaults() -> None:
    if not _LOADED:
        _LOADED.append(True)
        for name in DEFAULT_FAMILIES:
            register(importlib.import_module(f"rheo_fast.families.{name}").FAST)


def register(family: FastFamily) -> FastFamily:
    """Add a family's fast path; its name must be a family of `rheo_ref.family`."""
    _load_defaults()
    if not isinstance(family, FastFamily):
        raise CaseError(f"register: {family!r} is not a rheo_fast.family.FastFamily")
    family_named(family.name)
    _REGISTRY[family.name] = family
    return family


def unregister(name: str) -> None:
    """Remove a family added by `register`; the built-in ones stay."""
    if name in DEFAULT_FAMILIES:
        raise CaseError(f"family {name!r} is built in; allowed: families added by register()")
    _REGISTRY.pop(name, None)


def fast_families() -> Mapping[str, FastFamily]:
    _load_defaults()
    return dict(_REGISTRY)


def fast_family_of(scheme: Any) -> FastFamily:
    """The fast path of a scheme's family; a family without one is refused by name."""
    name = getattr(scheme, "family", None)
    fams = fast_families()
    if name not in fams:
        raise CaseError(f"scheme family {name!r} has no fast path; families with one: {', '.join(fams)}")
    return fams[name]


def layout_for(scheme: Any) -> Any:
    """The per-round coin layout of a scheme of any family (`.n_coins` sizes the block)."""
    return fast_family_of(scheme).layout(scheme)
