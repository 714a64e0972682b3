"""The tsubame family driven by an explicit stream of uniforms: the reference side of the coupled
replay between `rheo_ref` and `rheo_fast.families.tsubame.round` (docs/SCHEMES.md, "Family tsubame").

Pass 1 (the plan) draws nothing. Pass 2 is the static family's round on the planned shape, read
from one block of 2(R+1)+1 uniforms (`rheo_ref.families.tsubame.layout.TsubameLayout`) laid out
as the static family lays out a shape of N = R nodes, indexed by the *plan's* node ids (creation
order among the kept nodes): the draw coin of planned node i at i, its accept coin at R+1+i, the bonus coin at 2R+2. Every plan keeps
n = min(R, K·expansions) nodes; when n < R the coins of nodes n+1..R are never read (skipped,
never shifted), so the block's size is the scheme's, whatever the context.

The plan is exact too, and float64 may order two of its scores differently when they are within
rounding of each other (docs/ALGORITHM.md §8; e.g. an exact tie 1/3 = 5/9·3/5 that log-space
floats split). So a round's `margin` is also at most the plan's closest call (`plan_margin`: the
smallest log-score gap between two nodes whose order the plan decides and that float64 computes
differently); a round whose plan has such a near-tie is not comparable outcome for outcome, as in
the rheo family's replay.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from math import inf, log

from rheo_ref.coins import replay_rounds
from rheo_ref.families.rheo.replay import float_signature
from rheo_ref.families.rheo.tree import Node, Nodes, rerank_key
from rheo_ref.families.static.replay import CoinReader, StaticReplayRound, draw_tree, verify_topdown, verify_traversal
from rheo_ref.families.tsubame.exact import Planner, topk_scheme
from rheo_ref.families.tsubame.layout import tsubame_layout
from rheo_ref.families.tsubame.scheme import TsubameScheme
from rheo_ref.models import Case, Context
from rheo_ref.variants import SPEC, Variant


def plan_margin(case: Case, context: Context, nodes: Nodes) -> float:
    """The plan's closest call at `context`: the smallest |log s_a - log s_b| over the pairs whose
    order pass 1 decides (inf: none is close). Those are, at every expanded depth d >= 1, each
    of the W frontier nodes against every depth-d node ranked after it (the frontier's order
    is the children's creation order), and every kept node against every dropped one (the
    rerank keeps a set). A pair counts only when both scores are positive and their float
    signatures differ: equal signatures give bit-equal floats, whose ties float64 breaks as the
    exact order does (earlier creation), and a zero score is -inf on both sides. A factor 1
    adds log(1.0) = 0.0 exactly, so it is left out of a signature."""
    sch = case.scheme_as(TsubameScheme)
    topk = Case(case.draft, case.target, topk_scheme(sch), case.context, case.tokens, case.draft_sample)
    sig = {n.id: tuple(f for f in float_signature(topk, context, nodes, n.id) if f != 1) for n in nodes[1:]}

    def gap(a: Node, b: Node) -> float:
        if a.score <= 0 or b.score <= 0 or sig[a.id] == sig[b.id]:
            return inf
        return abs(log(a.score) - log(b.score))

    pairs = []
    for d in range(1, max(n.depth for n in nodes)):
        ranked = sorted((n for n in nodes if n.depth == d), key=lambda n: (-n.score, n.id))
        pairs += [(a, b) for i, a in enumerate(ranked[: sch.W]) for b in ranked[i + 1 :]]
    ranked = sorted(nodes[1:], key=rerank_key)
    pairs += [(a, b) for a in ranked[: sch.R] for b in ranked[sch.R :]]
    return min((gap(a, b) for a, b in pairs), default=inf)


def replay_tsubame_round(
    case: Case, context: Context, coins: Sequence[float], *, planner: Planner | None = None
) -> StaticReplayRound:
    """One round from `context`: the plan, then the static round on it, every random decision
    read from `coins`. `drawn.ids` are the plan's node ids; `margin` covers the plan's scores too."""
    sch = case.scheme_as(TsubameScheme)
    planner = planner or Planner(case)
    scase = planner.static_case(context)
    reader = CoinReader(coins, tsubame_layout(sch))
    drawn = draw_tree(scase, context, reader)
    if sch.verify == "traversal":
        emitted = verify_traversal(drawn, scase, context, reader, sch.sampling)
    else:
        emitted = verify_topdown(drawn, scase, context, reader, sch.verify)
    margin = min(reader.margin, plan_margin(case, context, planner.nodes(context)))
    return StaticReplayRound(emitted, drawn, margin)


def replay_tsubame_decode(
    case: Case, coins: Callable[[int], Sequence[float]], n: int | None = None, variant: Variant = SPEC
) -> list[StaticReplayRound]:
    """Rounds until n tokens (default case.tokens); round i reads the block `coins(i)`."""
    variant.check_family("tsubame")
    if variant.plan_tokens != "top_k":
        from rheo_ref.errors import CaseError

        raise CaseError(f"variant {variant.name!r}: the coupled replay runs the spec's plan only")
    planner = Planner(case)
    return replay_rounds(case, lambda ctx, block: replay_tsubame_round(case, ctx, block, planner=planner), coins, n)
