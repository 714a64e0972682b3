"""The rheo family on the fast path: its round (`round`: build, rerank, verify; the steps are the
shared `rheo_fast.slots`, `rheo_fast.tree`, `rheo_fast.verify`) and its real-model methods.
`FAST` is its entry in `rheo_fast.family`; torch is imported when a round first runs.
"""

from __future__ import annotations

from typing import Any

from rheo_fast.family import FastFamily
from rheo_ref.families.rheo.layout import rheo_layout
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.sizes import expansions, nodes


def _play(*args: Any, **kw: Any) -> Any:
    from rheo_fast.families.rheo.round import rheo_round

    return rheo_round(*args, **kw)


def _rows(s: Scheme) -> tuple[int, int]:
    return expansions(s.K, s.W, s.D), nodes(s.K, s.W, s.D)  # q̃ rows of the expansions [B, E, V]; N nodes


# real-model methods: a rheo_fast.lm.decode.TreeSize (K, W, D, R, chain_D) -> the scheme
METHODS = {
    "chain": lambda z: Scheme(1, 0, 1, z.chain_D, z.chain_D),
    "topk": lambda z: Scheme(z.K, z.K, z.W, z.D, z.R),
    "rheo-m0": lambda z: Scheme(z.K, 0, z.W, z.D, z.R),
    "rheo": lambda z: Scheme(z.K, 1, z.W, z.D, z.R),
    "rheo-m2": lambda z: Scheme(z.K, 2, z.W, z.D, z.R),
    "rheo-rrsw": lambda z: Scheme(z.K, 1, z.W, z.D, z.R, verify="rrsw"),
}

FAST = FastFamily(name="rheo", layout=rheo_layout, play_round=_play, rows=_rows, lm_methods=METHODS)
