"""The dynamic tree, vectorised over B trials (docs/ALGORITHM.md §4: expand, then rerank).

Every round has the same *shape*: the root (node 0) is expanded, then for d = 1..D-1 the
frontier of the min(W, #depth-d nodes) best depth-d nodes; each expansion creates K children,
slot by slot, so node ids are creation indices and the children of expansion e are the nodes
1 + K*e .. K*e + K. Creation order is depth-major, so taking the best float64 log-scores in
order with the first index winning ties (`top_k`) implements both tie-breaks: frontier (earlier
creation) and global rerank (smaller depth, then earlier creation). Only *which* nodes are
expanded, and the tokens, vary per trial. The sizes of that shape (`layout` below) are a
`rheo_ref.families.rheo.layout.RheoLayout`, which the reference's replay reads too.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from rheo_ref.variants import SPEC, Variant

from .slots import expand, qtilde_of, top_k


@dataclass
class Tree:
    tokens: Tensor  # [B, 1+N] node tokens (root: -1)
    parent: Tensor  # [B, 1+N] parent id (root: -1)
    depth: Tensor  # [1+N] (static)
    kind: Tensor  # [B, 1+N] DET / SAMPLED / FILL (root: DET)
    log_score: Tensor  # [B, 1+N] float64, root 0
    path: Tensor  # [B, 1+N, P+D] the P context tokens before the root, then the tokens
    # root->node (left-aligned, -1 padding); P = `model.prefix_len` (default 0)
    expanded: Tensor  # [B, E] node id of expansion e
    sampling: Tensor  # [B, E] bool
    qtilde_d: list  # per depth d < D: (tail [B, W_d, V], mass [B, W_d, 1]) of the sampled children of
    # the depth-d expansions (expansion ids exp_offsets[d]..), q̃ = tail / mass; None when m = K
    bad_factor: Tensor  # [B] bool: some proxy factor > 1
    missing: Tensor  # [B] bool: an expanded node's context has no draft row (NaN)
    kept: Tensor | None = None  # [B, 1+N] bool, root True (after rerank)
    P: int = 0  # context tokens carried in `path` before the root's children

    @property
    def qtilde(self) -> Tensor | None:
        """[B, E, V] verification row of expansion e's sampled child (None when m = K). `verify`
        reads `qtilde_d` instead, dividing only the rows it reads."""
        if any(q is None for q in self.qtilde_d):
            return None
        return qtilde_of(
            torch.cat([t for t, _ in self.qtilde_d], 1), torch.cat([z for _, z in self.qtilde_d], 1)
        )  # [B, E, V]

    def attention_mask(self) -> Tensor:
        """[B, 1+N, 1+N] bool: node i attends to j iff j is i or an ancestor (tree attention)."""
        B, n = self.tokens.shape
        anc = torch.eye(n, dtype=torch.bool, device=self.tokens.device).expand(B, n, n).clone()  # [B, n, n]
        up = self.parent.clamp(min=0)  # [B, n]
        hop = torch.arange(n, device=up.device).expand(B, n)  # [B, n]
        for _ in range(int(self.depth.max())):
            hop = up.gather(1, hop)  # [B, n] ancestor one level higher (the root stays)
            anc.scatter_(2, hop[..., None], True)  # [B, n, n]
        return anc

    def windows(self, nodes: Tensor, length: int) -> Tensor:
        """The last `length` <= P context tokens of each node in nodes [B, F] (-1: none)."""
        B, F = nodes.shape
        rows = rows_at(self.path, nodes)  # [B, F, P+D]
        depth = self.depth.index_select(0, nodes.reshape(-1)).reshape(B, F, 1)  # [B, F, 1]
        idx = depth + torch.arange(self.P - length, self.P, device=nodes.device)  # [B, F, L]
        return rows.gather(-1, idx)  # [B, F, L]

    def all_windows(self, length: int) -> Tensor:
        """The last `length` <= P context tokens of every node: [B, 1+N, length]."""
        B, n, width = self.path.shape
        pos = self.depth[:, None] + torch.arange(self.P - length, self.P, device=self.depth.device)  # [1+N, L]
        flat = (torch.arange(n, device=pos.device)[:, None] * width + pos).reshape(-1)  # [(1+N)*L]
        return self.path.reshape(B, n * width).index_select(1, flat).reshape(B, n, length)  # [B, 1+N, L]

    def position_ids(self) -> Tensor:
        """[1+N] offsets after the context: the node's depth (root = last context position)."""
        return self.depth


def rows_at(x: Tensor, nodes: Tensor) -> Tensor:
    """x[b, nodes[b, f]] for x [B, n, ...], nodes [B, F] (index_select: far faster than an
    expanded-index gather or advanced indexing on CPU)."""
    B, n = x.shape[:2]
    flat = (torch.arange(B, device=nodes.device)[:, None] * n + nodes).reshape(-1)  # [B*F]
    return x.reshape(B * n, *x.shape[2:]).index_select(0, flat).reshape(B, nodes.shape[1], *x.shape[2:])  # [B, F, ...]


def empty_tree(B: int, layout: Any, V: int, device: torch.device, prefix: Tensor | None = None) -> Tree:
    """Every child field is written by `add_children`; only the root's entries are set here."""
    n, E = layout.N + 1, layout.E
    P = 0 if prefix is None else prefix.shape[1]
    ints = dict(dtype=torch.int64, device=device)
    tree = Tree(
        tokens=torch.empty((B, n), **ints),  # [B, 1+N]
        parent=torch.empty((B, n), **ints),  # [B, 1+N]
        depth=torch.tensor(layout.depths(), **ints),  # [1+N]
        kind=torch.empty((B, n), **ints),  # [B, 1+N]
        log_score=torch.empty((B, n), dtype=torch.float64, device=device),  # [B, 1+N]
        path=torch.empty((B, n, P + layout.D), **ints),  # [B, 1+N, P+D]
        expanded=torch.empty((B, E), **ints),  # [B, E]
        sampling=torch.empty((B, E), dtype=torch.bool, device=device),  # [B, E]
        qtilde_d=[None] * layout.D,
        bad_factor=torch.zeros(B, dtype=torch.bool, device=device),  # [B]
        missing=torch.zeros(B, dtype=torch.bool, device=device),  # [B]
        P=P,
    )
    tree.tokens[:, 0], tree.parent[:, 0], tree.kind[:, 0], tree.log_score[:, 0] = -1, -1, 0, 0.0
    tree.path[:, 0] = -1  # [B, P+D]
    if P:
        tree.path[:, 0, :P] = prefix  # [B, P]
    return tree


def frontier(tree: Tree, layout: Any, d: int) -> Tensor:
    """Node ids [B, W_d] of the W_d best depth-d nodes, best first, ties: earlier creation."""
    if d == 0:
        return torch.zeros((tree.tokens.shape[0], 1), dtype=torch.int64, device=tree.tokens.device)  # [B, 1]
    sl = layout.depth_nodes(d)
    return top_k(tree.log_score[:, sl], layout.widths[d]) + sl.start  # [B, W_d]


def add_children(tree: Tree, layout: Any, d: int, nodes: Tensor, ex) -> None:
    """Write the K children of each frontier node (slot order) as the next node ids."""
    B, F = nodes.shape
    K = layout.K
    e0 = layout.exp_offsets[d]
    ids = slice(1 + K * e0, 1 + K * (e0 + F))
    tree.expanded[:, e0 : e0 + F] = nodes  # [B, F]
    tree.sampling[:, e0 : e0 + F] = ex.sampling  # [B, F]
    tree.qtilde_d[d] = None if ex.tail is None else (ex.tail, ex.tail_mass)  # (None when m = K: never read)
    tree.bad_factor |= ex.bad_factor.any(-1)  # [B]
    tree.tokens[:, ids] = ex.tokens.reshape(B, F * K)  # [B, F*K]
    tree.kind[:, ids] = ex.kind.reshape(B, F * K)  # [B, F*K]
    tree.parent[:, ids] = nodes.repeat_interleave(K, dim=1)  # [B, F*K]
    parent_score = tree.log_score.gather(1, nodes)  # [B, F]
    tree.log_score[:, ids] = (parent_score[..., None] + ex.log_factor).reshape(B, F * K)  # [B, F*K]
    child_path = rows_at(tree.path, nodes.repeat_interleave(K, dim=1))  # [B, F*K, P+D]
    child_path[..., tree.P + d] = ex.tokens.reshape(B, F * K)  # [B, F*K]
    tree.path[:, ids] = child_path  # [B, F*K, P+D]


def rerank(tree: Tree, R: int) -> Tensor:
    """kept [B, 1+N]: the root and the R best non-root nodes (ties: smaller depth, earlier creation)."""
    B, n = tree.log_score.shape
    if R >= n - 1:
        return torch.ones((B, n), dtype=torch.bool, device=tree.log_score.device)  # [B, 1+N]
    best = top_k(tree.log_score[:, 1:], R) + 1  # [B, R]
    kept = torch.zeros((B, n), dtype=torch.bool, device=best.device).scatter_(1, best, True)  # [B, 1+N]
    kept[:, 0] = True
    return kept


def build_tree(model, state, scheme: Any, layout: Any, sample_coins: Tensor, variant: Variant = SPEC) -> Tree:
    """Expand depth by depth, then rerank. sample_coins [B, 1+N]: coin of the node being expanded."""
    B = sample_coins.shape[0]
    prefix = model.prefix(state) if model.prefix_len else None  # [B, P]
    tree = empty_tree(B, layout, model.vocab_size, sample_coins.device, prefix)
    for d in range(scheme.D):
        nodes = frontier(tree, layout, d)  # [B, W_d]
        rows = model.draft(state, tree, nodes)  # q_rank, q_samp [B, W_d, V]
        u = sample_coins.gather(1, nodes)  # [B, W_d]
        nan = rows.q_rank[..., 0].isnan()  # [B, W_d]
        if not rows.shared:
            nan |= rows.q_samp[..., 0].isnan()  # [B, W_d]
        tree.missing |= nan.any(-1)  # [B]
        ex = expand(rows, u, scheme.K, scheme.m, scheme.proxy, variant)  # K children per node
        add_children(tree, layout, d, nodes, ex)
    tree.kept = rerank(tree, scheme.R)  # [B, 1+N]
    return tree


def check_closed(tree: Tree) -> bool:
    """Whether every kept node's parent is kept (docs/ALGORITHM.md §4; needs factors <= 1)."""
    par_kept = tree.kept.gather(1, tree.parent.clamp(min=0))  # [B, 1+N]
    return bool((par_kept | ~tree.kept).all())
