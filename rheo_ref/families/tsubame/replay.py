"""The tsubame family driven by an explicit stream of uniforms: the reference side of the coupled
replay between `rheo_ref` and `rheo_fast.families.tsubame.round` (docs/SCHEMES.md, "Family tsubame").

Pass 1 (the plan) draws nothing. Pass 2 is the static family's round on the planned shape, read
from one block of 2(R+1)+1 uniforms laid out as `rheo_ref.families.static.replay` lays out a shape of N = R
nodes, indexed by the *plan's* node ids (creation order among the kept nodes): the draw coin of
planned node i at i, its accept coin at R+1+i, the bonus coin at 2R+2. Every plan keeps
n = min(R, K·expansions) nodes; when n < R the coins of nodes n+1..R are never read (skipped,
never shifted), so the block's size is the scheme's, whatever the context.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from rheo_ref.coins import replay_rounds
from rheo_ref.families.static.replay import CoinReader, StaticReplayRound, draw_tree, verify_topdown, verify_traversal
from rheo_ref.families.tsubame.exact import Planner
from rheo_ref.families.tsubame.scheme import TsubameScheme
from rheo_ref.models import Case, Context
from rheo_ref.variants import SPEC, Variant


def tsubame_layout(scheme: TsubameScheme) -> tuple[int, int]:
    """(N, coins per round): N = R coin slots per kind, 2(R+1)+1 coins (draw, accept, bonus)."""
    return scheme.R, 2 * (scheme.R + 1) + 1


def replay_tsubame_round(
    case: Case, context: Context, coins: Sequence[float], *, planner: Planner | None = None
) -> StaticReplayRound:
    """One round from `context`: the plan, then the static round on it, every random decision
    read from `coins`. `drawn.ids` are the plan's node ids."""
    sch = case.scheme_as(TsubameScheme)
    planner = planner or Planner(case)
    scase = planner.static_case(context)
    reader = CoinReader(coins, sch.R)
    drawn = draw_tree(scase, context, reader)
    if sch.verify == "traversal":
        emitted = verify_traversal(drawn, scase, context, reader, sch.sampling)
    else:
        emitted = verify_topdown(drawn, scase, context, reader, sch.verify)
    return StaticReplayRound(emitted, drawn, reader.margin)


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
