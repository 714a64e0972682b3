"""The tsubame family on the fast path: the plan (the rheo family's Top-K tree) and a static round
on it (`round`), the mutant plan-after-sampling (`mutant`: the reference sampler per trial), and
its real-model method. `FAST` is its entry in `rheo_fast.family`; torch is imported when a round
first runs.
"""

from __future__ import annotations

from typing import Any

from rheo_fast.family import FastFamily
from rheo_ref.families.tsubame.layout import tsubame_layout
from rheo_ref.families.tsubame.scheme import TsubameScheme


def _play(model: Any, state: Any, scheme: TsubameScheme, coins: Any, todo: Any, *, variant: Any, layout: Any) -> Any:
    from rheo_fast.families.tsubame.mutant import sampled_plan_round
    from rheo_fast.families.tsubame.round import tsubame_round

    if variant.plan_tokens == "sampled":  # the mutant: reference sampler per trial (rheo_fast.families.tsubame.mutant)
        return sampled_plan_round(model, state, scheme, coins, todo)
    return tsubame_round(model, state, scheme, coins, todo, layout=layout, variant=variant).verdict


def _rows(s: TsubameScheme) -> tuple[int, int]:
    return s.nodes + 1, s.nodes + 1  # q_samp rows of every node, [B, nodes + 1, V] per round


FAST = FastFamily(
    name="tsubame",
    layout=tsubame_layout,
    play_round=_play,
    rows=_rows,
    lm_methods={"tsubame": lambda z: TsubameScheme(z.K, z.W, z.D, z.R, "wor", "traversal")},
)
