"""The static family: a draft tree of fixed shape, verified by SpecInfer, RRSw or Traversal
Verification (docs/SCHEMES.md). `scheme` (shapes, sibling sampling), `exact` (brute and the
subtree recursion, its size `estimate`), `settings` (its mutants), `replay` (one round driven by
coins, coupled to `rheo_fast.families.static`). The verifiers themselves and their settings
(`VerifierSteps`, the family's) are shared: `rheo_ref.verifier_laws`. `FAMILY` is its entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rheo_ref.families.static import exact
from rheo_ref.families.static.exact import StaticRounds
from rheo_ref.families.static.scheme import StaticScheme, depths
from rheo_ref.families.static.settings import MUTANTS
from rheo_ref.family import Family
from rheo_ref.validate import show
from rheo_ref.variants import SPEC
from rheo_ref.verifier_laws import VerifierSteps


def _rounds(case: Any, method: str, *, variant: Any = SPEC, **_: Any) -> StaticRounds:
    # dp is the family's subtree recursion (`classes`), already a memoised dynamic program
    return StaticRounds(case, "classes" if method == "dp" else method, variant)


def _what(case: Any, method: str) -> str:
    s = case.scheme_as(StaticScheme)
    return f"method {show(method)}: outcomes per round (static shape of {s.nodes} nodes, V={case.vocab_size})"


def _replay(case: Any, context: tuple[int, ...], coins: Sequence[float], variant: Any = SPEC) -> tuple[int, ...]:
    from rheo_ref.families.static.replay import replay_static_round

    return replay_static_round(case, tuple(context), coins, variant).emitted


def _cases(*, max_trees: int, max_tokens: int) -> Any:
    from rheo_ref.families.static.strategies import static_cases

    return static_cases(max_trees=max_trees, max_tokens=max_tokens)


FAMILY = Family(
    name="static",
    scheme=StaticScheme,
    summary="a fixed shape (branching, delayed, parents), iid or wor siblings, specinfer/rrsw/traversal",
    rounds=_rounds,
    estimate=exact.estimate,
    estimate_what=_what,
    replay=_replay,
    steps=VerifierSteps,
    mutants=MUTANTS,
    cases=_cases,
    kept_depth=lambda s: (max(depths(s.parents)), f"static shape {s.kind} {list(s.sizes)}"),
)
