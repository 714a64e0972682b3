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

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rheo_ref.errors import CaseError
from rheo_ref.family import layer_registry
from rheo_ref.registry import Registry


@dataclass(frozen=True)
class FastFamily:
    """One family on the fast path (see the module docstring for each field)."""

    name: str
    layout: Callable[[Any], Any]
    play_round: Callable[..., Any]
    rows: Callable[[Any], tuple[int, int]]
    lm_methods: Mapping[str, Callable[[Any], Any]] = field(default_factory=dict)


_REGISTRY: Registry[FastFamily] = layer_registry(FastFamily, "rheo_fast.families", "FAST")
register, unregister = _REGISTRY.register, _REGISTRY.unregister


def fast_families() -> Mapping[str, FastFamily]:
    return _REGISTRY.entries()


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
