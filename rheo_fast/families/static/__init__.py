"""The static family on the fast path: its tree (`tree`: a fixed shape drawn for B trials) and its
round (`round`: SpecInfer, RRSw, Traversal Verification), coupled coin for coin to
`rheo_ref.families.static.replay`; and its real-model methods. `FAST` is its entry in
`rheo_fast.family`; torch is imported when a round first runs.
"""

from __future__ import annotations

from typing import Any

from rheo_fast.family import FastFamily
from rheo_ref.families.static.layout import static_layout
from rheo_ref.families.static.scheme import StaticScheme


def _play(model: Any, state: Any, scheme: StaticScheme, coins: Any, todo: Any, *, variant: Any, layout: Any) -> Any:
    from rheo_fast.families.static.round import check_static_round, static_round

    res = static_round(model, state, scheme, coins, layout=layout, variant=variant)
    check_static_round(model, state, res, todo)
    return res.verdict


def _rows(s: StaticScheme) -> tuple[int, int]:
    return s.nodes + 1, s.nodes + 1  # q_samp rows of every node, [B, nodes + 1, V] per round


def rollouts(size: Any) -> StaticScheme:
    """`static-traversal`: R // D rollouts of depth D from the root (branching [R // D, 1, ..., 1]),
    wor siblings at the root (distinct first tokens), traversal verification. R // D * D <= R nodes:
    the whole budget when D divides R (16 = 4 x 4 by default). docs/REAL_MODELS.md says why."""
    return StaticScheme("branching", (max(1, size.R // size.D),) + (1,) * (size.D - 1), "wor", "traversal")


def delayed(size: Any) -> StaticScheme:
    """`delayed-traversal`: delayed [K, L1, L2] with a trunk of L1 = 1 and K = (R - 1) // (D - 1)
    rollouts of L2 = D - 1 from its tip (depth D, L1 + K·L2 <= R nodes: 1 + 5 x 3 = 16 by default);
    D = 1: [R, 0, 1] (R root children). wor siblings, traversal verification."""
    if size.D == 1:
        return StaticScheme("delayed", (size.R, 0, 1), "wor", "traversal")
    return StaticScheme("delayed", (max(1, (size.R - 1) // (size.D - 1)), 1, size.D - 1), "wor", "traversal")


FAST = FastFamily(
    name="static",
    layout=static_layout,
    play_round=_play,
    rows=_rows,
    lm_methods={"static-traversal": rollouts, "delayed-traversal": delayed},
)
