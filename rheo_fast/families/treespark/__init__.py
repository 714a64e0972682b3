"""The treespark family on the fast path: best-first trees for B trials and their verification
(`round`, built on the static family's walks), and its real-model method (the paper's calibration).
`FAST` is its entry in `rheo_fast.family`; torch is imported when a round first runs.
"""

from __future__ import annotations

from typing import Any

from rheo_fast.family import FastFamily
from rheo_ref.families.treespark.layout import treespark_layout
from rheo_ref.families.treespark.scheme import PAPER_SIGMOID, Calibration, TreeSparkScheme


def _play(model: Any, state: Any, scheme: TreeSparkScheme, coins: Any, todo: Any, *, variant: Any, layout: Any) -> Any:
    from rheo_fast.families.treespark.round import check_treespark_round, treespark_round

    res = treespark_round(model, state, scheme, coins, layout=layout, variant=variant)
    check_treespark_round(model, state, res, todo)
    return res.verdict


def _rows(s: TreeSparkScheme) -> tuple[int, int]:
    return s.nodes + 1, s.nodes + 1  # q_samp rows of every node, [B, nodes + 1, V] per round


FAST = FastFamily(
    name="treespark",
    layout=treespark_layout,
    play_round=_play,
    rows=_rows,
    lm_methods={
        "treespark": lambda z: TreeSparkScheme(z.R, z.K, z.D, "0", Calibration("sigmoid", *PAPER_SIGMOID), "rrsw")
    },
)
