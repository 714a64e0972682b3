"""Family `static` on the fast path, the tree: the drawing of B trials' trees from their coins on
the shape's layout (`rheo_ref.families.static.layout.StaticLayout`: node ids, depths, draw groups,
the traversal's orders; docs/SCHEMES.md §7). Verification and the round are
`rheo_fast.families.static.round`.

The shape is the same in every trial, so the loops here run over the shape's nodes in Python and
every tensor op runs over the B trials. `draw_tree` draws depth by depth, one `model.draft` call
per depth for the nodes with children. `iid` children are drawn all at once, each the inverse CDF
of q_samp(.|parent) at its coin; `wor` children sibling rank by sibling rank, from the parent's
row with the tokens drawn so far zeroed. A row without mass leaves the child, and its subtree,
undrafted (token -1).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import torch
from torch import Tensor

from rheo_fast.models import TreeModel
from rheo_fast.slots import inverse_cdf
from rheo_fast.tree import Tree
from rheo_fast.verify import gather1
from rheo_ref.families.static.layout import StaticLayout


@lru_cache(maxsize=256)
def index(values: tuple[int, ...], device: torch.device) -> Tensor:
    """A cached int64 index tensor (shared: never write into it)."""
    return torch.tensor(values, dtype=torch.int64, device=device)  # [n]


@dataclass
class StaticTree:
    """The drawn trees of B trials on one shape. Node ids are the shape's (creation order);
    `windows`, `all_windows`, `attention_mask` and `position_ids` are `rheo_fast.tree.Tree`'s."""

    tokens: Tensor  # [B, 1+N] (root and undrafted nodes: -1)
    drafted: Tensor  # [B, 1+N] bool (root True)
    parent: Tensor  # [B, 1+N] the shape's parents (root -1)
    depth: Tensor  # [1+N]
    path: Tensor  # [B, 1+N, P+D] the P context tokens before the root, then root->node (-1 padding)
    P: int = 0

    windows = Tree.windows
    all_windows = Tree.all_windows
    attention_mask = Tree.attention_mask
    position_ids = Tree.position_ids


def empty_static_tree(B: int, layout: StaticLayout, device: torch.device, prefix: Tensor | None) -> StaticTree:
    n, P = layout.N + 1, 0 if prefix is None else prefix.shape[1]
    tree = StaticTree(
        tokens=torch.full((B, n), -1, dtype=torch.int64, device=device),  # [B, 1+N]
        drafted=torch.zeros((B, n), dtype=torch.bool, device=device),  # [B, 1+N]
        parent=index((-1,) + layout.parents, device).expand(B, n),  # [B, 1+N]
        depth=index(tuple(layout.depth), device),  # [1+N]
        path=torch.full((B, n, P + layout.D), -1, dtype=torch.int64, device=device),  # [B, 1+N, P+D]
        P=P,
    )
    tree.drafted[:, 0] = True
    if P:
        tree.path[:, 0, :P] = prefix  # [B, P]
    return tree


def first_flag(found: Tensor, flags: Tensor, nodes: Tensor) -> Tensor:
    """found [B] (node id, -1: none yet) updated with the first flagged node of flags, nodes [B, F]."""
    hit = flags.any(-1) & (found < 0)  # [B]
    return torch.where(hit, gather1(nodes, flags.int().argmax(-1)), found)  # [B]


def add_children(tree: StaticTree, children: Tensor, parents: Tensor, y: Tensor, d: int) -> None:
    """Write tokens y [B, C] of the depth-(d+1) nodes `children` [C] whose parents are `parents` [C]."""
    tree.tokens.index_copy_(1, children, y)  # [B, 1+N]
    tree.drafted.index_copy_(1, children, y >= 0)  # [B, 1+N]
    path = tree.path.index_select(1, parents)  # [B, C, P+D]
    path[..., tree.P + d] = y  # [B, C]
    tree.path.index_copy_(1, children, path)  # [B, 1+N, P+D]


def draw_level(
    q: Tensor, alive: Tensor, u: Tensor, ranks: list[list[tuple[int, int]]], sampling: str, device: torch.device
) -> list[tuple[Tensor, Tensor, Tensor]]:
    """Tokens of the children of F nodes from their q_samp rows q [B, F, V] (alive [B, F]: the node
    is drafted), u [B, 1+N] the draw coins. Returns (children [C], parent index f [C], y [B, C]) per
    group drawn together: all children (iid) or one sibling rank at a time (wor)."""
    groups = [[cf for rank in ranks for cf in rank]] if sampling == "iid" else ranks
    left = q.clone() if sampling == "wor" else q  # [B, F, V] wor: the drawn tokens get zeroed
    out = []
    for g, group in enumerate(groups):
        cs, fs = index(tuple(c for c, _ in group), device), index(tuple(f for _, f in group), device)  # [C] each
        rows = left.index_select(1, fs)  # [B, C, V]
        y = inverse_cdf(rows, u.index_select(1, cs))  # [B, C] -1: no mass left (wor) or no row
        y = torch.where(alive.index_select(1, fs), y, -1)  # [B, C]
        if sampling == "wor" and g < len(groups) - 1:
            left.index_copy_(1, fs, rows.scatter_(-1, y.clamp(min=0).unsqueeze(-1), 0.0))  # [B, F, V]
        out.append((cs, fs, y))
    return out


def draw_tree(model: TreeModel, state: Any, layout: StaticLayout, draw_c: Tensor) -> tuple[StaticTree, list, Tensor]:
    """Draw every trial's tree depth by depth. Returns (tree, q_samp rows [B, V] of every node with
    children (None for the others), the first drafted node whose q_samp row is missing [B], -1: none)."""
    B, dev = draw_c.shape[0], draw_c.device
    prefix = model.prefix(state) if model.prefix_len else None  # [B, P]
    tree = empty_static_tree(B, layout, dev, prefix)
    q_rows: list[Tensor | None] = [None] * (layout.N + 1)
    missing = torch.full((B,), -1, dtype=torch.int64, device=dev)  # [B]
    for d, (expanders, ranks) in enumerate(layout.levels):
        nodes = index(tuple(expanders), dev).expand(B, len(expanders))  # [B, F]
        q = model.draft(state, tree, nodes).q_samp  # [B, F, V]
        alive = tree.drafted.index_select(1, nodes[0])  # [B, F]
        missing = first_flag(missing, alive & q[..., 0].isnan(), nodes)  # [B]
        for f, v in enumerate(expanders):
            q_rows[v] = q[:, f]  # [B, V]
        for cs, fs, y in draw_level(q, alive, draw_c, ranks, layout.sampling, dev):
            add_children(tree, cs, nodes[0].index_select(0, fs), y, d)
    return tree, q_rows, missing
