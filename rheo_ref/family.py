"""The registry of scheme families: the one place the exact reference learns what families exist.

A *family* is a way of drafting and verifying a tree (docs/SCHEMES.md): the rheo family of
docs/ALGORITHM.md, the static shapes, Tsubame's planned trees, TreeSpark's best-first trees.
Each lives in its own folder, `rheo_ref/families/<name>/`, whose package defines one `FAMILY`
(a `Family`, the protocol below); code outside a family never names it and reads this registry
instead (the pattern of pytest's `default_plugins` and hypothesis' `register_type_strategy`):

- `DEFAULT_FAMILIES`: the built-in families, in table order, loaded on first use;
- `register(family)`: one more (a test's toy family, a third party's scheme);
- `families()`, `family_named(name)`, `family_of(scheme)`: lookups, a `CaseError` naming the
  allowed names for an unknown one.

The fast path (`rheo_fast.family`) and the suite (`rheo.families.registry`) keep registries of their own,
keyed by the same names, for what each layer adds (a fast round and its coin layout; gate rows,
compare cells, real-model methods). docs/FAMILIES.md says where a new family's code goes.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol, runtime_checkable

from rheo_ref.errors import CaseError
from rheo_ref.laws import Law
from rheo_ref.registry import Registry, T
from rheo_ref.validate import show

DEFAULT_FAMILIES = ("rheo", "static", "tsubame", "treespark")  # modules rheo_ref.families.<name>, each with FAMILY
MAX_DEPTH = 100  # levels of a kept tree whose verification recurses level by level (~250 exhaust Python's stack)
MAX_NODES = 256  # draft nodes per round of any scheme; larger ones are refused as bad input
DEFAULT_FAMILY = "rheo"  # the family of a scheme object without a `family` field


@runtime_checkable
class SchemeLike(Protocol):
    """What every family's scheme object offers (its own fields are the family's business)."""

    family: ClassVar[str]

    @property
    def D(self) -> int: ...  # the deepest level: a round emits 1..D+1 tokens

    def to_json(self) -> dict: ...

    def describe(self) -> str: ...  # one line naming its sizes

    def check_vocab(self, vocab_size: int) -> None: ...

    @property
    def nodes(self) -> int: ...


class RoundLaws(Protocol):
    """Exact round laws of one case by one method (memoised by the family as it likes)."""

    method: str  # the method actually run (a family may run `classes` for `dp`)
    enumerated: int  # outcomes visited so far, over every round law computed

    def round_law(self, context: tuple[int, ...]) -> Law: ...


@dataclass(frozen=True)
class Family:
    """One family of tree schemes, as the exact reference sees it.

    - `scheme`: its scheme class (from_json / to_json / nodes / check_vocab / describe);
    - `builds_on`: the families whose modules it imports (held by the import-linter contracts);
    - `rounds(case, method, *, variant, rules, max_trees, progress)`: its exact round laws;
      `takes_rules`: whether `rounds` reads `rules` (verification rules given as functions, the
      rheo family's way of running its mutants); a family that does not refuses them;
      `takes_parallel`: whether `rounds` takes `parallel` (a `rheo_ref.parallel.Parallel`: a map
      its independent parts may run through); a family that does not runs in this process;
    - `costs(case, tokens, max_trees)`: what it predicts, cheaply, of each of its methods
      (`rheo_ref.choose.Cost`s), from which `rheo exact` without --method chooses; None: brute and
      dp from `estimate`; `fallback`: the methods to take, in order, when nothing is predicted;
    - `estimate(case, method, variant)`: the outcomes per round that `rounds` visits at most
      (a `rheo_ref.sizes.Size` or an int), and `estimate_what(case, method)` what is counted;
    - `replay(case, context, coins, variant)`: the tokens one round emits, driven by coins;
    - `steps`: its typed step settings, a frozen dataclass whose defaults are the spec (None: it
      has no settings), and `mutants`: its deliberately broken variants (`rheo_ref.variants.Variant`s
      of this family, each with a `steps` object of that type that changes one step);
    - `cases(max_trees=, max_tokens=)`: a hypothesis strategy of its small cases (the fuzz
      harness's, `rheo_ref.strategies.family_cases`); None: it has none;
    - `kept_depth(scheme)`: (levels of the deepest kept tree, what the scheme is) for a family
      whose exact verification recurses once per level; `parse` refuses more than MAX_DEPTH;
    - `mutant_exact(case, mutant, max_trees=)`: the exact counterpart of one of its mutants when
      its round laws do not read the mutant's settings themselves (None: `rheo_ref.exact.VariantExact`).
    """

    name: str
    scheme: type
    summary: str
    rounds: Callable[..., RoundLaws]
    estimate: Callable[[Any, str, Any], Any]
    estimate_what: Callable[[Any, str], str]
    replay: Callable[[Any, tuple[int, ...], Sequence[float], Any], tuple[int, ...]]
    steps: type | None = None
    mutants: tuple[Any, ...] = ()
    builds_on: tuple[str, ...] = ()
    cases: Callable[..., Any] | None = None
    mutant_exact: Callable[..., Any] | None = None
    kept_depth: Callable[[Any], tuple[int, str]] | None = None
    takes_rules: bool = False
    takes_parallel: bool = False
    costs: Callable[[Any, int, int | None], list[Any]] | None = None
    fallback: tuple[str, ...] = ("dp",)

    def parse(self, obj: Any) -> SchemeLike:
        """The scheme object of this family from its JSON."""
        parse: Callable[[Any], SchemeLike] = getattr(self.scheme, "from_json")  # noqa: B009
        scheme = parse(obj)
        if self.kept_depth is not None:
            depth, what = self.kept_depth(scheme)
            if depth > MAX_DEPTH:
                raise CaseError(f"{what} keeps a tree {depth} levels deep; allowed: at most {MAX_DEPTH} levels")
        return scheme


def _check(family: Family) -> None:
    """A family's mutants are of its own settings type and their names new to the registry."""
    others = {v.name for fam in _REGISTRY.entries().values() if fam.name != family.name for v in fam.mutants}
    for v in family.mutants:
        if v.family != family.name or family.steps is None or type(v.steps) is not family.steps:
            raise CaseError(
                f"mutant {v.name!r} of family {family.name!r} must carry family={family.name!r} and its "
                f"settings type ({getattr(family.steps, '__name__', None)}); it has {v.family!r}, {type(v.steps).__name__}"
            )
        if v.name in others or v.name == "spec":
            raise CaseError(f"mutant {v.name!r} of family {family.name!r} is already a name; allowed: a new name")


_REGISTRY: Registry[Family] = Registry(Family, "rheo_ref.families", "FAMILY", DEFAULT_FAMILIES, check=_check)
register, unregister = _REGISTRY.register, _REGISTRY.unregister


def families() -> Mapping[str, Family]:
    """Every registered family by name, the built-in ones first, in table order."""
    return _REGISTRY.entries()


def family_named(name: Any) -> Family:
    """The family called `name`; an unknown one is refused with the allowed names."""
    fams = families()
    if not isinstance(name, str) or name not in fams:
        raise CaseError(f"unknown scheme family {show(name)}; allowed: {', '.join(fams)}")
    return fams[name]


def layer_registry(kind: type[T], package: str, attr: str) -> Registry[T]:
    """The registry of a layer above this one (`rheo_fast.family`, `rheo.families.registry`): each family's
    entry `attr` of `package.<name>`, the built-in families in table order; an entry must name a
    family registered here (refused by name otherwise), and a family's entry may be replaced."""

    def known(entry: T) -> None:
        family_named(getattr(entry, "name"))  # noqa: B009

    return Registry(kind, package, attr, DEFAULT_FAMILIES, check=known, replace=True)


def family_of(scheme: Any) -> Family:
    """The family of a scheme object."""
    return family_named(getattr(scheme, "family", None))


def scheme_from_json(obj: Any) -> SchemeLike:
    """The scheme object of a case: its `family` (default rheo) says which fields it has."""
    name = obj.get("family", DEFAULT_FAMILY) if isinstance(obj, dict) else DEFAULT_FAMILY
    return family_named(name).parse(obj)
