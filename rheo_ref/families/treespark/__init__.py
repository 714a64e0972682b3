"""The treespark family: best-first trees of N nodes grown by a calibrated survival score and
stopped at θ (docs/SCHEMES.md §13), verified by RRSw or Traversal Verification. `scheme`,
`exact` (the builder, the round laws and its size `estimate`), `settings` (`TreeSparkSteps` and
its mutant), `replay` (coupled to `rheo_fast.families.treespark`). Builds on the static family (its coin reader and top-down verification). `FAMILY` is its entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rheo_ref.families.treespark import exact
from rheo_ref.families.treespark.exact import TreeSparkRounds
from rheo_ref.families.treespark.scheme import TreeSparkScheme
from rheo_ref.families.treespark.settings import MUTANTS, TreeSparkSteps
from rheo_ref.family import Family
from rheo_ref.validate import show
from rheo_ref.variants import SPEC


def _rounds(case: Any, method: str, *, variant: Any = SPEC, **_: Any) -> TreeSparkRounds:
    # every method enumerates the draw sequences; dp is `classes` (memoised subtree verification)
    return TreeSparkRounds(case, "classes" if method == "dp" else method, variant)


def _what(case: Any, method: str) -> str:
    s = case.scheme_as(TreeSparkScheme)
    return f"method {show(method)}: trees per round (treespark N={s.N}, V={case.vocab_size})"


def _replay(case: Any, context: tuple[int, ...], coins: Sequence[float], variant: Any = SPEC) -> tuple[int, ...]:
    from rheo_ref.families.treespark.replay import replay_treespark_round

    return replay_treespark_round(case, tuple(context), coins, variant).emitted


def _cases(*, max_trees: int, max_tokens: int) -> Any:
    from rheo_ref.families.treespark.strategies import treespark_cases

    return treespark_cases(max_trees=max_trees, max_tokens=max_tokens)


FAMILY = Family(
    name="treespark",
    scheme=TreeSparkScheme,
    summary="best-first trees by calibrated survival, stopped at θ, rrsw or traversal",
    rounds=_rounds,
    estimate=exact.estimate,
    estimate_what=_what,
    replay=_replay,
    steps=TreeSparkSteps,
    mutants=MUTANTS,
    builds_on=("static",),
    cases=_cases,
    kept_depth=lambda s: (min(s.D, s.N), f"treespark scheme D={s.D}, N={s.N}"),
)
