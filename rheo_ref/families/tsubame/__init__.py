"""The tsubame family: a static round on the shape planned per context by the rheo family's
Top-K tree (docs/SCHEMES.md, "Family tsubame"). `scheme`, `exact` (the planner, the round
laws and its size `estimate`), `settings` (`TsubameSteps` and its mutant), `replay` (coupled to
`rheo_fast.families.tsubame`), `mutant` (the exact law of plan-after-sampling). Builds on the rheo family (its tree) and the static family (its rounds). `FAMILY` is its entry.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rheo_ref.errors import CaseError
from rheo_ref.families.tsubame import exact
from rheo_ref.families.tsubame.exact import TsubameRounds
from rheo_ref.families.tsubame.scheme import TsubameScheme
from rheo_ref.families.tsubame.settings import MUTANTS, TsubameSteps
from rheo_ref.family import Family
from rheo_ref.validate import show
from rheo_ref.variants import SPEC


def _rounds(case: Any, method: str, *, variant: Any = SPEC, **_: Any) -> TsubameRounds:
    # a static round on the shape planned per context; dp is the subtree recursion (`classes`)
    return TsubameRounds(case, "classes" if method == "dp" else method, variant)


def _what(case: Any, method: str) -> str:
    s = case.scheme_as(TsubameScheme)
    return (
        f"method {show(method)}: outcomes per round (tsubame plan of {s.R} nodes, K={s.K}, W={s.W}, "
        f"D={s.D}, V={case.vocab_size})"
    )


def _replay(case: Any, context: tuple[int, ...], coins: Sequence[float], variant: Any = SPEC) -> tuple[int, ...]:
    from rheo_ref.families.tsubame.replay import replay_tsubame_round

    variant.check_family("tsubame")
    if variant is not SPEC:
        raise CaseError(f"variant {variant.name!r}: the coupled replay runs the spec's plan only")
    return replay_tsubame_round(case, tuple(context), coins).emitted


def _cases(*, max_trees: int, max_tokens: int) -> Any:
    from rheo_ref.families.tsubame.strategies import tsubame_cases

    return tsubame_cases(max_trees=max_trees, max_tokens=max_tokens)


FAMILY = Family(
    name="tsubame",
    scheme=TsubameScheme,
    summary="the rheo family's Top-K tree as a plan, then a static round on it",
    rounds=_rounds,
    estimate=exact.estimate,
    estimate_what=_what,
    replay=_replay,
    steps=TsubameSteps,
    mutants=MUTANTS,
    builds_on=("rheo", "static"),
    cases=_cases,
    kept_depth=lambda s: (min(s.D, s.R), f"tsubame scheme D={s.D}, R={s.R}"),
)
