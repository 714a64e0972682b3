"""The rheo family: RheoSampling's dynamic trees (docs/ALGORITHM.md), one module per step.

`scheme` (K, m, W, D, R, proxy, verify), `slots` (§3), `tree` (§4), `verify` (§5), `enumerate`
(brute and class enumerators, §7), `bestfirst` (the `dp` method, docs/EXACT_AT_SCALE.md), `exact`
(its round laws and size `estimate`), `replay` (the coupled replay, docs/FAST_PATH.md), `settings`
(its mutants, as `rheo_ref.slot_steps.SlotSteps`), `mutants` (their exact counterparts). `FAMILY`
is its entry in `rheo_ref.family`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rheo_ref.errors import CaseError
from rheo_ref.families.rheo import exact
from rheo_ref.families.rheo.choose import FALLBACK, costs
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.rheo.settings import MUTANTS
from rheo_ref.family import Family
from rheo_ref.slot_steps import SlotSteps
from rheo_ref.variants import SPEC


def _replay(case: Any, context: tuple[int, ...], coins: Sequence[float], variant: Any = SPEC) -> tuple[int, ...]:
    from rheo_ref.families.rheo.replay import replay_round

    if variant is not SPEC:
        raise CaseError(f"variant {variant.name!r}: the rheo family's replay runs the spec (rules=) only")
    return replay_round(case, tuple(context), coins).emitted


def _cases(*, max_trees: int, max_tokens: int) -> Any:
    from rheo_ref.families.rheo.strategies import cases

    return cases(max_trees=max_trees, max_tokens=max_tokens, proxy=None)


def _mutant_exact(case: Any, mutant: str, *, max_trees: int | None = None) -> Any:
    from rheo_ref.families.rheo.mutants import MutantExact

    return MutantExact(case, mutant, max_trees=max_trees)


FAMILY = Family(
    name="rheo",
    scheme=Scheme,
    summary="RheoSampling's dynamic trees: Top-K slots plus m sampled ones, expand-then-rerank (docs/ALGORITHM.md)",
    rounds=exact.rounds,
    estimate=exact.estimate,
    estimate_what=exact.estimate_what,
    replay=_replay,
    steps=SlotSteps,
    mutants=MUTANTS,
    cases=_cases,
    mutant_exact=_mutant_exact,
    takes_rules=True,
    takes_parallel=True,
    costs=costs,
    fallback=FALLBACK,
)
