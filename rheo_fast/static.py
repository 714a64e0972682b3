"""Family `static` on the fast path: a fixed shape, sampled tokens and one of three verifiers,
vectorised over B trials (docs/SCHEMES.md §7), coupled coin for coin to `rheo_ref.static_replay`.

The shape is the same in every trial, so the loops here run over the shape's nodes in Python and
every tensor op runs over the B trials. Coins per round and trial, `StaticLayout.n_coins` =
2(N+1)+1: draw coin of node i at i (1..N), accept coin at N+1+i, the bonus coin at 2N+2.

- `draw_tree`: depth by depth, one `model.draft` call per depth for the nodes with children.
  `iid` children are drawn all at once, each the inverse CDF of q_samp(.|parent) at its coin;
  `wor` children sibling rank by sibling rank, from the parent's row with the tokens drawn so far
  zeroed. A row without mass leaves the child, and its subtree, undrafted (token -1).
- `verify_topdown` (`specinfer`, `rrsw`): the nodes in creation order. Node c is tried by the
  trials standing at its parent; a trial leaves a node only by accepting a child, whose children
  come later in creation order, so every trial tries its nodes in draw order.
- `verify_traversal`: the nodes in Euler-tour order. Entering v sets α[v] from its parent's
  current state (nothing above v changes while v's subtree is visited); leaving v (post-order)
  is v being the first leaf: accepted iff its coin is below α[v], else its parent is updated
  (`traversal_reject`). This is the reference's loop: its first leaf, removal after removal,
  walks the drafted nodes in post-order.
Float hygiene as in `rheo_fast.verify`: entries of a difference below RTOL * max(operands) are
rounding noise of an exact 0 and are cleared, so a coin of 0 agrees with exact arithmetic.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache
from typing import Any

import torch
from torch import Tensor

from rheo_ref.errors import CaseError
from rheo_ref.static import StaticScheme, children_lists, depths

from .models import TargetRows, TreeModel, as_rows
from .slots import inverse_cdf
from .tree import Tree, rows_at
from .verify import RTOL, Verdict, gather1, normalise, residual_sampled


@dataclass(frozen=True)
class StaticLayout:
    """The shape of every round: node ids, depths, who is drawn when and the traversal's order."""

    parents: tuple[int, ...]  # node i+1's parent (0 = root)
    sampling: str

    @property
    def N(self) -> int:
        return len(self.parents)

    @property
    def n_coins(self) -> int:
        """Coins per round: draw[0..N], accept[0..N], bonus (index 0 of each: the root, unused)."""
        return 2 * (self.N + 1) + 1

    @cached_property
    def kids(self) -> list[list[int]]:
        return children_lists(self.parents)

    @cached_property
    def depth(self) -> list[int]:
        return depths(self.parents)

    @property
    def D(self) -> int:
        return max(self.depth)

    @cached_property
    def levels(self) -> list[tuple[list[int], list[list[tuple[int, int]]]]]:
        """Per depth d < D: (the depth-d nodes with children, F of them; their children by sibling
        rank j: [(child id, index f of its parent)])."""
        out = []
        for d in range(self.D):
            expanders = [v for v in range(self.N + 1) if self.depth[v] == d and self.kids[v]]
            ranks: list[list[tuple[int, int]]] = [[] for _ in range(max(len(self.kids[v]) for v in expanders))]
            for f, v in enumerate(expanders):
                for j, c in enumerate(self.kids[v]):
                    ranks[j].append((c, f))
            out.append((expanders, ranks))
        return out

    @cached_property
    def euler(self) -> list[tuple[bool, int]]:
        """(entering, v) for every non-root node: entering in pre-order, leaving in post-order."""
        out: list[tuple[bool, int]] = []

        def walk(v: int) -> None:
            for c in self.kids[v]:
                out.append((True, c))
                walk(c)
                out.append((False, c))

        walk(0)
        return out

    def split(self, coins: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        n = self.N + 1
        return coins[:, :n], coins[:, n:2 * n], coins[:, 2 * n]  # [B, 1+N], [B, 1+N], [B]


def static_layout(scheme: StaticScheme) -> StaticLayout:
    return _layout(scheme.parents, scheme.sampling)


@lru_cache(maxsize=64)
def _layout(parents: tuple[int, ...], sampling: str) -> StaticLayout:
    return StaticLayout(parents, sampling)


@lru_cache(maxsize=256)
def index(values: tuple[int, ...], device: torch.device) -> Tensor:
    """A cached int64 index tensor (shared: never write into it)."""
    return torch.tensor(values, dtype=torch.int64, device=device)  # [n]


@dataclass
class StaticTree:
    """The drawn trees of B trials on one shape. Node ids are the shape's (creation order);
    `windows`, `all_windows`, `attention_mask` and `position_ids` are `rheo_fast.tree.Tree`'s."""

    tokens: Tensor   # [B, 1+N] (root and undrafted nodes: -1)
    drafted: Tensor  # [B, 1+N] bool (root True)
    parent: Tensor   # [B, 1+N] the shape's parents (root -1)
    depth: Tensor    # [1+N]
    path: Tensor     # [B, 1+N, P+D] the P context tokens before the root, then root->node (-1 padding)
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


def draw_level(q: Tensor, alive: Tensor, u: Tensor, ranks: list[list[tuple[int, int]]], sampling: str,
               device: torch.device) -> list[tuple[Tensor, Tensor, Tensor]]:
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


# --- verification ------------------------------------------------------------------------------

def accepts(u: Tensor, num: Tensor, den: Tensor) -> Tensor:
    """u < min(1, num/den) for den > 0, as u * den < num (strict: a coin of 0 never accepts num = 0)."""
    return u * den < num  # [B]


def rrsw_s(s: Tensor, x: Tensor) -> Tensor:
    """rrsw's s once x [B] is rejected: s(x) = 0, renormalised (nothing left: the zero row)."""
    d = s.scatter(1, x.unsqueeze(1), 0.0)  # [B, V]
    return normalise(d, d)  # [B, V]


class Walk:
    """Where each trial stands and which target rows it read (the first missing one)."""

    def __init__(self, p: TargetRows, B: int, N: int, device: torch.device) -> None:
        self.p, self.ids = p, torch.arange(N + 1, device=device).expand(B, N + 1)  # [B, 1+N]
        self.missing = torch.full((B,), -1, dtype=torch.int64, device=device)  # [B]

    def row(self, v: int, used: Tensor) -> Tensor:
        """p at node v [B, V]; a NaN row where `used` [B] is recorded as missing."""
        r = self.p.at(self.ids[:, v])  # [B, V]
        self.missing = torch.where(used & r[:, 0].isnan() & (self.missing < 0), v, self.missing)  # [B]
        return r


def verify_topdown(tree: StaticTree, walk: Walk, q_rows: list, layout: StaticLayout, accept_c: Tensor,
                   verify: str) -> tuple[Tensor, Tensor]:
    """`specinfer` / `rrsw` from the root. Returns (the node each trial ends at [B], the final
    residual r there [B, V]: the bonus row)."""
    B = accept_c.shape[0]
    cur = torch.zeros(B, dtype=torch.int64, device=accept_c.device)  # [B] the root
    r, s = walk.row(0, cur == 0), q_rows[0]  # [B, V] each (s: specinfer's fixed q, rrsw's shrinking s)
    for c in range(1, layout.N + 1):
        x = tree.tokens[:, c].clamp(min=0)  # [B]
        sx, rx = gather1(s, x), gather1(r, x)  # [B] each
        tried = tree.drafted[:, c] & (cur == layout.parents[c - 1])  # [B]
        if verify == "rrsw":
            tried = tried & (sx > 0)  # [B] a duplicate of a rejected sibling: skipped
        acc = tried & accepts(accept_c[:, c], rx, sx)  # [B]
        rej = (tried & ~acc).unsqueeze(1)  # [B, 1]
        r = torch.where(rej, residual_sampled(r, s), r)  # [B, V]
        if verify == "rrsw":
            s = torch.where(rej, rrsw_s(s, x), s)  # [B, V]
        r = torch.where(acc.unsqueeze(1), walk.row(c, acc), r)  # [B, V]
        if q_rows[c] is not None:
            s = torch.where(acc.unsqueeze(1), q_rows[c], s)  # [B, V]
        cur = torch.where(acc, c, cur)  # [B]
    return cur, r


def child_rate(alpha: Tensor, Mb: Tensor, Ms: Tensor, x: Tensor) -> Tensor:
    """α of a child with token x [B]: min(1, α·Mb(x)/Ms(x)), 0 where Ms(x) = 0."""
    b, s = gather1(Mb, x), gather1(Ms, x)  # [B] each
    return torch.where(s > 0, torch.clamp(alpha * b / torch.where(s > 0, s, 1.0), max=1.0), 0.0)  # [B]


def traversal_reject(alpha: Tensor, Mb: Tensor, Ms: Tensor, x: Tensor, sampling: str,
                     root: bool) -> tuple[Tensor, Tensor, Tensor]:
    """(α, Mb, Ms) of a node once its child with token x [B] is removed: R = (α·Mb - Ms)+,
    S = ΣR; α <- S/(S + 1 - α) (0 when S = 0; the root's stays 1); Mb <- R/S when S > 0;
    `wor`: Ms loses x and is renormalised; `iid`: Ms unchanged."""
    aMb = alpha.unsqueeze(1) * Mb  # [B, V]
    d = aMb - Ms  # [B, V]
    R = torch.where(d > RTOL * torch.maximum(aMb, Ms), d, 0.0)  # [B, V]
    S = R.sum(-1)  # [B]
    pos = S > 0  # [B]
    if root:
        new_alpha = alpha  # [B] (1)
    else:
        new_alpha = torch.where(pos, S / torch.where(pos, S + 1 - alpha, 1.0), 0.0)  # [B]
    new_Mb = torch.where(pos.unsqueeze(1), R / torch.where(pos, S, 1.0).unsqueeze(1), Mb)  # [B, V]
    new_Ms = rrsw_s(Ms, x) if sampling == "wor" else Ms  # [B, V]
    return new_alpha, new_Mb, new_Ms


def verify_traversal(tree: StaticTree, walk: Walk, q_rows: list, layout: StaticLayout, accept_c: Tensor,
                     sampling: str) -> tuple[Tensor, Tensor]:
    """Traversal Verification; `sampling` chooses the Ms update (the tree's own: lossless).
    Returns (the accepted node [B], 0: none, and the bonus row Mb there [B, V])."""
    B, dev = accept_c.shape[0], accept_c.device
    every = torch.ones(B, dtype=torch.bool, device=dev)  # [B]
    alpha: list = [every.to(accept_c.dtype)] + [None] * layout.N  # [B] per node
    Mb: list = [walk.row(0, every)] + [None] * layout.N  # [B, V] per node
    Ms: list = list(q_rows)  # [B, V] per node with children
    running = every  # [B] no accept yet
    end = torch.zeros(B, dtype=torch.int64, device=dev)  # [B]
    end_row = Mb[0]  # [B, V]
    for entering, v in layout.euler:
        u = layout.parents[v - 1]
        x = tree.tokens[:, v].clamp(min=0)  # [B]
        live = running & tree.drafted[:, v]  # [B]
        if entering:
            alpha[v] = child_rate(alpha[u], Mb[u], Ms[u], x)  # [B]
            Mb[v] = walk.row(v, live)  # [B, V]
            continue
        acc = live & (accept_c[:, v] < alpha[v])  # [B]
        end = torch.where(acc, v, end)  # [B]
        end_row = torch.where(acc.unsqueeze(1), Mb[v], end_row)  # [B, V]
        running = running & ~acc  # [B]
        rej = (live & ~acc).unsqueeze(1)  # [B, 1]
        a2, Mb2, Ms2 = traversal_reject(alpha[u], Mb[u], Ms[u], x, sampling, root=u == 0)  # [B], [B, V], [B, V]
        alpha[u] = torch.where(rej[:, 0], a2, alpha[u])  # [B]
        Mb[u] = torch.where(rej, Mb2, Mb[u])  # [B, V]
        Ms[u] = torch.where(rej, Ms2, Ms[u])  # [B, V]
    return end, torch.where(running.unsqueeze(1), Mb[0], end_row)  # [B], [B, V]


def emit(tree: StaticTree, layout: StaticLayout, end: Tensor, row: Tensor, bonus_c: Tensor) -> Tensor:
    """emitted [B, D+1]: the path to node end [B], then the bonus drawn from row [B, V], -1 after."""
    toks = rows_at(tree.path, end.unsqueeze(1))[:, 0, tree.P:]  # [B, D]
    out = torch.cat([toks, torch.full_like(toks[:, :1], -1)], 1)  # [B, D+1]
    bonus = inverse_cdf(row, bonus_c)  # [B]
    return out.scatter_(1, tree.depth.index_select(0, end).unsqueeze(1), bonus.unsqueeze(1))  # [B, D+1]


@dataclass
class StaticResult:
    tree: StaticTree
    verdict: Verdict         # emitted [B, D+1], n_emitted [B]; visited [B, 1]: the node the round ended at
    missing_draft: Tensor    # [B] first drafted node with children whose q_samp row is missing (-1: none)
    missing_target: Tensor   # [B] first node whose p row verification read and found missing (-1: none)


def static_round(model: TreeModel, state: Any, scheme: StaticScheme, coins: Tensor, *,
                 layout: StaticLayout | None = None) -> StaticResult:
    """Draw and verify one tree per trial; coins [B, n_coins] (layout in the module docstring)."""
    layout = layout or static_layout(scheme)
    draw_c, accept_c, bonus_c = layout.split(coins)  # [B, 1+N], [B, 1+N], [B]
    tree, q_rows, missing_q = draw_tree(model, state, layout, draw_c)  # q_rows: [B, V] per node with children
    walk = Walk(as_rows(model.target(state, tree)), coins.shape[0], layout.N, coins.device)
    if scheme.verify == "traversal":
        end, row = verify_traversal(tree, walk, q_rows, layout, accept_c, scheme.sampling)  # [B], [B, V]
    else:
        end, row = verify_topdown(tree, walk, q_rows, layout, accept_c, scheme.verify)  # [B], [B, V]
    emitted = emit(tree, layout, end, row, bonus_c)  # [B, D+1]
    n = tree.depth.index_select(0, end) + 1  # [B]
    return StaticResult(tree, Verdict(emitted, n, end.unsqueeze(1), walk.missing >= 0), missing_q, walk.missing)


def check_static_round(model: TreeModel, state: Any, res: StaticResult, todo: Tensor) -> None:
    """Refuse what the reference refuses (a row missing where the round reads one), one sync per round."""
    flags = torch.stack([((res.missing_draft >= 0) & todo).any(), ((res.missing_target >= 0) & todo).any()])  # [2]
    miss_q, miss_p = flags.tolist()  # (the sync)
    if not (miss_q or miss_p):
        return
    which, nodes, table = ("draft", res.missing_draft, "q_samp") if miss_q else ("target", res.missing_target, "p")
    ctx = model.missing_context(state, res.tree, nodes.clamp(min=0).unsqueeze(1), table)
    where = f" (ending {ctx})" if ctx is not None else ""
    raise CaseError(f"{which}: a reachable context{where} has no row (NaN); every reachable context needs one")
