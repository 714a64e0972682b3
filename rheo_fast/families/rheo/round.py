"""The rheo family's round on the fast path (docs/ALGORITHM.md §4-§5): build, rerank and verify
one tree per trial, coupled coin for coin to `rheo_ref.families.rheo.replay`.

Coins per round and trial (`RheoLayout.n_coins` = 2(N+1)+1, N = non-root nodes): the sample coin of
node i at i, its accept coin at N+1+i, the bonus coin at 2N+2 (docs/FAST_PATH.md).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from rheo_fast.models import TreeModel, as_rows
from rheo_fast.tree import Tree, build_tree
from rheo_fast.verify import Verdict, verify
from rheo_ref.errors import CaseError
from rheo_ref.families.rheo.layout import RheoLayout, rheo_layout
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.variants import SPEC, Variant


@dataclass
class RoundResult:
    tree: Tree
    verdict: Verdict
    missing_target: Tensor  # [B] bool: a visited node's context has no target row
    seconds: tuple[float, float, float] = (0.0, 0.0, 0.0)  # wall time of build, target, verify (host clock:
    # on CUDA only meaningful when the model syncs)


def run_round(
    model: TreeModel,
    state: Any,
    scheme: Scheme,
    coins: Tensor,
    *,
    variant: Variant = SPEC,
    layout: RheoLayout | None = None,
) -> RoundResult:
    """Build, rerank and verify one tree per trial; coins [B, n_coins]."""
    layout = layout or rheo_layout(scheme)
    sample_c, accept_c, bonus_c = layout.split(coins)  # [B, 1+N], [B, 1+N], [B]
    t0 = time.perf_counter()
    tree = build_tree(model, state, scheme, layout, sample_c, variant)
    t1 = time.perf_counter()
    p = as_rows(model.target(state, tree))  # rows [B, V] at any nodes [B]
    t2 = time.perf_counter()
    v = verify(tree, p, accept_c, bonus_c, scheme.K, scheme.m, scheme.D, scheme.verify, variant)
    return RoundResult(tree, v, v.missing, (t1 - t0, t2 - t1, time.perf_counter() - t2))


def check_round(model: TreeModel, state: Any, res: RoundResult, scheme: Scheme, todo: Tensor) -> None:
    """Refuse what the reference refuses (missing rows, proxy factors > 1), one sync per round."""
    t = res.tree
    flags = torch.stack(
        [(t.missing & todo).any(), (res.missing_target & todo).any(), (t.bad_factor & todo).any()]
    )  # [3]
    miss_d, miss_t, bad = flags.tolist()
    if miss_d or miss_t:
        which, nodes, table = (
            ("draft", t.expanded, "q_rank") if miss_d else ("target", res.verdict.visited.clamp(min=0), "p")
        )
        ctx = model.missing_context(state, t, nodes, table)
        if ctx is None and miss_d:
            ctx = model.missing_context(state, t, nodes, "q_samp")
        where = f" (ending {ctx})" if ctx is not None else ""
        raise CaseError(f"{which}: a reachable context{where} has no row (NaN); every reachable context needs one")
    if bad:
        raise CaseError(f"proxy {scheme.proxy} gives a factor > 1; the kept tree would not be closed under parents")


def rheo_round(
    model: TreeModel, state: Any, scheme: Scheme, coins: Tensor, todo: Tensor, *, variant: Variant, layout: RheoLayout
) -> Verdict:
    """`rheo_fast.family.FastFamily.play_round` of the rheo family."""
    res = run_round(model, state, scheme, coins, variant=variant, layout=layout)
    check_round(model, state, res, scheme, todo)
    return res.verdict
