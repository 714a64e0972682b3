"""The cost model of method `walk` (docs/EXACT_AT_SCALE.md §6), computed before any work.

A round of walk to horizon h visits its shallow trees (`classes`' bound of the tree cut at depth
h) and, for each, the deep frontiers of its relevance floor: a deep frontier is an ordered set of
<= W *relevant* nodes of one depth, a relevant node being one with a child that can pass the floor
s_min, the smallest shallow score. So the deep chain is bounded by the relevant nodes of each depth
below h, counted here over every tree at once:

- a lower bound of s_min: the smallest score of any node of depth <= h any tree can hold;
- the nodes (context as the models see it, score) each depth can hold, grown from the root by every
  child an expansion can make (the det slots, every sampled token with its factor, every token a
  fill can be), keeping below depth h only those with a child above the floor bound.

`rheo_ref.sizes.walk_round` turns the counts into the bound of outcomes per round. It is an upper
bound (tests/test_ref_walk.py measures it against real runs); counting stops at `CAP` nodes a depth
and the bound is then reported as too large.
"""

from __future__ import annotations

from fractions import Fraction

from rheo_ref.families.rheo.bestfirst import Plans, best_factor
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.models import Case, Context
from rheo_ref.sizes import Size, walk_round

CAP = 20_000  # relevant nodes counted per depth before the bound is reported as too large
Reach = set[tuple[Context, Fraction]]


def children(plans: Plans, ctx: Context, score: Fraction) -> Reach:
    """Every (context, score) a child of node (ctx, score) can have, in any tree."""
    plan = plans(ctx)
    out = {(ctx + (t,), score * q) for t, q in plan.det}
    if plan.qtilde is not None:
        n = plan.K - plan.m - 1
        for y in plan.support():
            out.add((ctx + (y,), score * plan.factor_for(y)))
            out.update((ctx + (t,), score * q) for t, q in plan.fills_for(y)[:n])
    return out


def relevant_nodes(case: Case, horizon: int) -> list[int] | None:
    """Relevant nodes per depth h..last-1 of a walk round to `horizon`, over every tree (None: more
    than CAP at some depth)."""
    s: Scheme = case.scheme_as(Scheme)
    plans = Plans(case)
    top, last = min(horizon, s.D, s.R), min(s.D, horizon + s.R)
    if top == min(s.D, s.R):
        return []  # nothing deep
    level: Reach = {((), Fraction(1))}
    floor = Fraction(1)
    for _ in range(top):  # the shallow nodes of every tree: their smallest score bounds s_min
        level = {(case.visible(c), sc) for ctx, sc in level for c, sc in children(plans, ctx, sc)}
        if len(level) > CAP:
            return None
        floor = min(floor, min(sc for _, sc in level))

    def relevant(ctx: Context, sc: Fraction) -> bool:
        return sc * best_factor(plans(ctx)) > floor

    counts = []
    level = {(c, sc) for c, sc in level if relevant(c, sc)}
    for _ in range(top, last):
        counts.append(len(level))
        grown = {(case.visible(kid), ks) for ctx, sc in level for kid, ks in children(plans, ctx, sc) if ks > floor}
        level = {(kid, ks) for kid, ks in grown if relevant(kid, ks)}
        if len(level) > CAP:
            return None
    return counts


def walk_estimate(case: Case, shallow: Size, horizon: int) -> Size:
    """Outcomes (shallow trees + deep frontiers) one walk round to `horizon` visits at most."""
    s: Scheme = case.scheme_as(Scheme)
    members = relevant_nodes(case, horizon)
    if members is None:  # more than CAP relevant nodes at a depth: the bound is at least this
        return walk_round(shallow, [CAP + 1], s.W)
    return walk_round(shallow, members, s.W)
