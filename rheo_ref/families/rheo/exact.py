"""Exact round laws of the rheo family (docs/ALGORITHM.md §6-§7) by its three methods.

`brute` and `classes` enumerate every kept tree of a round (`rheo_ref.families.rheo.enumerate`)
and verify each by `verify_law` under a set of verification `Rules` (the spec's, or a rheo mutant's);
`dp` is the best-first, lazy enumeration of `rheo_ref.families.rheo.bestfirst`, its kept trees
verified together, pushed down level by level.
`rheo_ref.exact.Exact` composes these round laws into token laws, as it does for every family.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

from rheo_ref.errors import CaseError
from rheo_ref.families.rheo.bestfirst import BestFirstRounds
from rheo_ref.families.rheo.chain import ChainRounds
from rheo_ref.families.rheo.enumerate import enumerate_trees
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.rheo.tree import check_build
from rheo_ref.families.rheo.verify import SPEC_RULES, Rules, verify_law
from rheo_ref.families.rheo.walk import WalkRounds
from rheo_ref.families.rheo.walk_cost import walk_estimate
from rheo_ref.laws import Law
from rheo_ref.models import Case, Context
from rheo_ref.parallel import SERIAL, Parallel
from rheo_ref.sizes import Size, expansions
from rheo_ref.validate import show
from rheo_ref.variants import SPEC, Variant

Trees = Callable[[Context], Iterable[tuple[Fraction, Any, frozenset[int]]]]


class RheoRounds:
    """Round laws of a rheo-family case: `dp` by BestFirstRounds, `brute`/`classes` by verifying
    every tree that `trees(context)` yields (default: `enumerate_trees`) under `rules`.
    `enumerated` counts trees (dp: kept-tree branches) over every round computed; `progress`
    hears of each one as it is visited."""

    reports_progress = True

    def __init__(
        self,
        case: Case,
        method: str,
        *,
        rules: Rules = SPEC_RULES,
        max_trees: int | None = None,
        progress: Callable[[int], None] | None = None,
        trees: Trees | None = None,
    ) -> None:
        if method == "dp" and rules is not SPEC_RULES:
            raise CaseError("method 'dp' verifies by the spec's rules only; mutants run with method 'brute'")
        self.case, self.method, self.rules = case, method, rules
        if method != "dp":  # dp builds its trees best-first, without recursion
            check_build(
                case.scheme_as(Scheme), f"method {method!r} on the rheo scheme {case.scheme_as(Scheme).describe()}"
            )
        self.enumerated = 0
        self._progress = progress
        self._trees: Trees = trees or (lambda ctx: enumerate_trees(case, ctx, method))
        self._dp = BestFirstRounds(case, max_outcomes=max_trees, progress=progress) if method == "dp" else None

    def round_law(self, context: Context) -> Law:
        if self._dp is not None:
            before = self._dp.enumerated
            out = self._dp.round_law(context)
            self.enumerated += self._dp.enumerated - before
            return out
        law: Law = defaultdict(Fraction)
        verify = self.case.scheme_as(Scheme).verify
        for prob, nodes, kept in self._trees(context):
            self.enumerated += 1
            if self._progress is not None:
                self._progress(1)
            for s, pr in verify_law(nodes, kept, self.case.target, context, verify, self.rules).items():
                law[s] += prob * pr
        return dict(law)


def rounds(
    case: Case,
    method: str,
    *,
    variant: Variant = SPEC,
    rules: Rules = SPEC_RULES,
    max_trees: int | None = None,
    progress: Callable[[int], None] | None = None,
    parallel: Parallel = SERIAL,
) -> RheoRounds | WalkRounds | ChainRounds:
    """The family's `rounds` (rheo_ref.family.Family): its mutants come as `rules` (built by
    rheo_ref.families.rheo.mutants), never as `variant`. `walk` answers round laws up to a
    horizon (rheo_ref.families.rheo.walk); `chain` whole rounds by conditioning on the cut
    (rheo_ref.families.rheo.chain), its parts run through `parallel` (the other methods run here)."""
    if variant is not SPEC:
        raise CaseError(
            f"variant {variant.name!r}: the rheo family's exact counterparts are built by "
            f"rheo_ref.families.rheo.mutants (MutantExact), not by variant="
        )
    if method == "walk":
        if rules is not SPEC_RULES:
            raise CaseError("method 'walk' verifies by the spec's rules only; mutants run with method 'brute'")
        return WalkRounds(case, progress=progress)
    if method == "chain":
        if rules is not SPEC_RULES:
            raise CaseError("method 'chain' verifies by the spec's rules only; mutants run with method 'brute'")
        return ChainRounds(case, max_outcomes=max_trees, progress=progress, parallel=parallel)
    return RheoRounds(case, method, rules=rules, max_trees=max_trees, progress=progress)


def estimate(case: Case, method: str, variant: Variant = SPEC) -> Size:
    """An upper bound of the outcomes per round that a method visits (dp and chain: 0, their
    limits, on kept trees and on distinct frontiers, are enforced while they run), never computed when large: brute (V-m)^E trees, with E the expansions of a
    round; classes (V-m)^(E-last) x min(V-m, K-m)^last (the sampled nodes created by the last
    level of expansions are never expanded, and distinct fills bound their classes; with the
    `true` proxy the factor tells them apart too: (V-m)^last); walk: over its rounds to horizons
    h = 1..n (n = the case's tokens), the classes bound of the tree cut at depth h (its shallow
    trees) and the deep frontiers each can visit (`walk_cost`)."""
    if method in ("dp", "chain"):
        return Size.of(0)
    s = case.scheme_as(Scheme)
    if s.m >= s.K:
        return Size.of(1)
    if method == "walk":
        rounds = [walk_estimate(case, trees(case, "classes", min(h, s.D)), h) for h in range(1, case.tokens + 1)]
        return max(rounds, key=lambda z: z.log10)
    return trees(case, method, s.D)


def trees(case: Case, method: str, D: int) -> Size:
    """brute's or classes' bound of the trees of a round cut at depth D."""
    s = case.scheme_as(Scheme)
    branch = case.vocab_size - s.m  # possible sampled identities per expansion
    E = expansions(s.K, s.W, D)
    if method == "brute":
        return Size.power(branch, E)
    last = E - expansions(s.K, s.W, D - 1) if D > 1 else E
    leaf = branch if s.proxy.kind == "true" else min(branch, s.K - s.m)
    return Size.power(branch, E - last) * Size.power(leaf, last)


def estimate_what(case: Case, method: str) -> str:
    s = case.scheme_as(Scheme)
    return (
        f"method {show(method)}: {'shallow trees and deep frontiers' if method == 'walk' else 'trees'} per round (K={show(s.K)}, "
        f"W={show(s.W)}, D={show(min(case.tokens, s.D) if method == 'walk' else s.D)}, V={show(case.vocab_size)})"
    )
