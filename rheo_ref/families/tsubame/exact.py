"""Exact round laws of the tsubame family (docs/SCHEMES.md, "Family tsubame").

A Tsubame round at context c is a `static` round on the shape `plan(c)`:
- pass 1 (`plan_parents`): the rheo family's builder with m = K (deterministic Top-K: EAGLE
  expand-then-rerank with K, W, D, R on q_rank, `rheo_ref.families.rheo.tree.build_tree`), of which only the
  topology is kept: the R kept nodes in creation order, each one's parent re-indexed among them,
  so that a node's children in index order are its slot order. It reads q_rank only (the draft
  table, along the Top-K paths), never q_samp nor the target;
- pass 2: the static family's round on that shape (`rheo_ref.families.static.exact`: `brute`, every joint
  draw, or `classes`, the subtree recursion; method `dp` is `classes`), at the same context.

The plan depends on the context only through what the models can see (`Case.visible`), so
`Planner` caches it per visible context. `TsubameRounds` shares one memo of subtree laws over
every planned shape (its keys hold the shape), so two contexts whose plans share a subtree share
its law. The mutant `tsubame-plan-after-sampling` (setting `plan_tokens` "sampled") gets its law
from `rheo_ref.families.tsubame.mutant` by brute force.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from rheo_ref.errors import CaseError
from rheo_ref.families.rheo.enumerate import BruteChooser
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.rheo.tree import Nodes, build_tree, check_build, rerank
from rheo_ref.families.static.exact import METHODS, Law, SubtreeLaws, brute_round_law, context_length, q_support
from rheo_ref.families.static.scheme import StaticScheme, estimate_subtrees, shape_of
from rheo_ref.families.tsubame.scheme import TsubameScheme
from rheo_ref.families.tsubame.settings import TsubameSteps
from rheo_ref.models import Case, Context
from rheo_ref.variants import SPEC, Variant

ONE = Fraction(1)


def topk_scheme(sch: TsubameScheme) -> Scheme:
    """The planning pass's scheme: the rheo family's builder with m = K (no sampled slot)."""
    return Scheme(sch.K, sch.K, sch.W, sch.D, sch.R)


def kept_parents(nodes: Nodes, kept: frozenset[int]) -> tuple[int, ...]:
    """The kept nodes as a `parents` list: creation order (parents first, a node's children in
    slot order), node i+1's parent re-indexed among the kept nodes (0 = root)."""
    ids = sorted(kept)
    new = {0: 0, **{nid: i for i, nid in enumerate(ids, start=1)}}
    return tuple(new[nodes[nid].parent] for nid in ids)


def plan_nodes(case: Case, context: Context) -> Nodes:
    """Pass 1's whole Top-K tree at `context`: every node with its exact score, kept or not."""
    sch = case.scheme_as(TsubameScheme)
    trees = list(build_tree(case.draft, case.draft, tuple(context), topk_scheme(sch), BruteChooser()))
    assert len(trees) == 1, "m = K samples nothing: one tree"
    return trees[0][1]


def plan_parents(case: Case, context: Context) -> tuple[int, ...]:
    """Pass 1 at `context`: the planned topology as a `parents` list (uncached; `Planner` caches)."""
    nodes = plan_nodes(case, context)
    return kept_parents(nodes, rerank(nodes, case.scheme_as(TsubameScheme).R))


class Planner:
    """`plan_parents` of one case, cached per visible context."""

    def __init__(self, case: Case) -> None:
        self.case = case
        sch = case.scheme_as(TsubameScheme)
        check_build(topk_scheme(sch), f"the tsubame plan of D={sch.D}, R={sch.R}")
        self._nodes: dict[Context, Nodes] = {}
        self._plans: dict[Context, tuple[int, ...]] = {}

    def nodes(self, context: Context) -> Nodes:
        """Pass 1's whole Top-K tree at `context` (`plan_nodes`), cached."""
        key = self.case.visible(tuple(context))
        if key not in self._nodes:
            self._nodes[key] = plan_nodes(self.case, tuple(context))
        return self._nodes[key]

    def parents(self, context: Context) -> tuple[int, ...]:
        key = self.case.visible(tuple(context))
        if key not in self._plans:
            nodes = self.nodes(context)
            self._plans[key] = kept_parents(nodes, rerank(nodes, self.case.scheme_as(TsubameScheme).R))
        return self._plans[key]

    def static_scheme(self, context: Context) -> StaticScheme:
        sch = self.case.scheme_as(TsubameScheme)
        return StaticScheme("parents", self.parents(context), sch.sampling, sch.verify)

    def static_case(self, context: Context) -> Case:
        """The case as a static one on the shape planned at `context`."""
        c = self.case
        return Case(c.draft, c.target, self.static_scheme(context), c.context, c.tokens, c.draft_sample)


def estimate(case: Case, method: str, variant: Variant = SPEC) -> int:
    """An upper bound of the outcomes one round visits. Every plan keeps the same number n of
    nodes (min(R, K·expansions): the Top-K tree's size does not depend on the context), so
    `brute` visits at most s^n joint draws (s: the largest q_samp support) whatever the shape;
    `classes` is estimated on the shape planned at the case's start context. The mutant
    `tsubame-plan-after-sampling` draws K children at every expansion: s^(K·expansions). dp is
    the subtree recursion (`classes`)."""
    method = "classes" if method == "dp" else method
    sch = case.scheme_as(TsubameScheme)
    s = q_support(case)
    if variant.steps_of("tsubame").plan_tokens == "sampled":
        from rheo_ref.families.rheo.enumerate import expansions_per_round

        return s ** (sch.K * expansions_per_round(topk_scheme(sch)))
    plan = Planner(case).static_scheme(case.context)
    if method == "brute":
        return s**plan.nodes
    if method == "classes":
        return estimate_subtrees(plan, s, case.vocab_size ** context_length(case))
    raise CaseError(f"unknown method {method!r}; allowed: {', '.join(METHODS)}")


class _PlannedSubtrees(SubtreeLaws):
    """The static subtree recursion with the shape given per call (its memo keys hold the shape)."""

    def law_on(self, context: Context, parents: Sequence[int]) -> Law:
        ctx, shape = self.key(context), shape_of(parents)
        if self.scheme.verify == "traversal":
            law, rejected = self.traversal_node(ctx, shape, ONE, root=True)
            assert rejected == 0, "the root is never rejected"
            return law
        return self.node_law(ctx, shape)


class TsubameRounds:
    """Round laws of a tsubame case by one method; `enumerated` counts trees (brute) or sibling
    draws visited (classes) over every round computed."""

    def __init__(self, case: Case, method: str, variant: Variant = SPEC) -> None:
        if method not in METHODS:
            raise CaseError(f"unknown method {method!r}; allowed: {', '.join(METHODS)}")
        self.settings: TsubameSteps = variant.steps_of("tsubame")
        self.case, self.method, self.variant = case, method, variant
        self.planner = Planner(case)
        self.enumerated = 0
        self._subtrees: _PlannedSubtrees | None = None
        if self.settings.plan_tokens == "sampled":
            if method != "brute":
                raise CaseError(
                    f"variant {variant.name!r} plans on the drawn tokens: its law is enumerated by "
                    f"method 'brute' only, not {method!r}"
                )
        elif method == "classes":
            self._subtrees = _PlannedSubtrees(self.planner.static_case(case.context))

    def round_law(self, context: Context) -> Law:
        ctx = tuple(context)
        if self.settings.plan_tokens == "sampled":
            from rheo_ref.families.tsubame.mutant import sampled_plan_round_law

            law, trees = sampled_plan_round_law(self.case, ctx)
            self.enumerated += trees
            return law
        if self._subtrees is None:
            law, trees = brute_round_law(self.planner.static_case(ctx), ctx)
            self.enumerated += trees
            return law
        before = self._subtrees.steps
        law = self._subtrees.law_on(ctx, self.planner.parents(ctx))
        self.enumerated += self._subtrees.steps - before
        return law
