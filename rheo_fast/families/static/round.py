"""Family `static` on the fast path: a fixed shape, sampled tokens and one of three verifiers,
vectorised over B trials (docs/SCHEMES.md §7), coupled coin for coin to `rheo_ref.families.static.replay`.

The shape and the drawing of the trees are `rheo_fast.families.static.tree`; here, verification and the
round. Coins per round and trial, `StaticLayout.n_coins` = 2(N+1)+1: draw coin of node i at i
(1..N), accept coin at N+1+i, the bonus coin at 2N+2. Loops run over the shape's nodes in
Python, every tensor op over the B trials.

- `verify_topdown` (`specinfer`, `rrsw`): the nodes u with children in creation order, u's
  children in draw order. A child is tried by the trials standing at u; a trial leaves u only by
  accepting a child, whose children come later in creation order, so every trial tries its nodes
  in draw order.
- `verify_traversal`: the nodes in Euler-tour order. Entering v sets α[v] from its parent's
  current state (nothing above v changes while v's subtree is visited); leaving v (post-order)
  is v being the first leaf: accepted iff its coin is below α[v], else its parent is updated
  (`traversal_reject`). This is the reference's loop: its first leaf, removal after removal,
  walks the drafted nodes in post-order.
Float hygiene as in `rheo_fast.verify`: entries of a difference below RTOL * max(operands) are
rounding noise of an exact 0 and are cleared, so a coin of 0 agrees with exact arithmetic.

The steps read a `rheo_ref.variants.Variant`'s static settings (`variant=`, the spec by default),
as the reference's do: `sibling_order` and `proposal_update` in `verify_topdown`, the traversal's
`traversal_rate`, `ms_update` and `traversal_bonus` in `traversal_reject` and the walks. An order
that depends on the trial (`leaf_order` "min_index", `sibling_order` "token_id") has no Euler
tour: `verify_traversal_by_leaves` then runs the reference's loop, one leaf per step.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from rheo_fast.families.static.tree import StaticTree, draw_tree, index
from rheo_fast.models import TargetRows, TreeModel, as_rows
from rheo_fast.slots import inverse_cdf
from rheo_fast.tree import rows_at
from rheo_fast.verify import RTOL, Verdict, gather1, normalise, residual_sampled, row_at
from rheo_ref.errors import CaseError
from rheo_ref.families.static.layout import StaticLayout, static_layout
from rheo_ref.families.static.scheme import StaticScheme
from rheo_ref.variants import SPEC, Variant

__all__ = [
    "StaticLayout",
    "StaticResult",
    "StaticTree",
    "Walk",
    "check_static_round",
    "draw_tree",
    "emit",
    "static_layout",
    "static_round",
    "verify_topdown",
    "verify_traversal",
    "verify_traversal_by_leaves",
]


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

    def row(self, v: int | Tensor, used: Tensor) -> Tensor:
        """p at node v (or v[b], v [B]) [B, V]; a NaN row where `used` [B] is recorded as missing."""
        r = self.p.at(self.ids[:, v] if isinstance(v, int) else v)  # [B, V]
        self.missing = torch.where(used & r[:, 0].isnan() & (self.missing < 0), v, self.missing)  # [B]
        return r


def at(x: Tensor, c: int | Tensor) -> Tensor:
    """x[:, c] for a node id c, or x[b, c[b]] for per-trial ids c [B]; x [B, 1+N]."""
    return x[:, c] if isinstance(c, int) else gather1(x, c)  # [B]


def tries(
    tree: StaticTree, q_rows: list, layout: StaticLayout, variant: Variant
) -> Iterator[tuple[int, int | Tensor, Tensor | None]]:
    """(u, c, q_samp row at c or None) for every child c of every node u with children, nodes u in
    creation order, u's children in the order they are tried: draw order (c a node id), or by token
    id (`sibling_order` "token_id": c [B] per-trial node ids, undrafted children last)."""
    for u, ks in enumerate(layout.kids):
        if not ks:
            continue
        if variant.sibling_order == "draw":
            yield from ((u, c, q_rows[c]) for c in ks)
            continue
        ids = index(tuple(ks), tree.tokens.device)  # [k]
        big = torch.iinfo(torch.int64).max
        key = torch.where(tree.drafted.index_select(1, ids), tree.tokens.index_select(1, ids), big)  # [B, k]
        rank = torch.sort(key, dim=1, stable=True).indices  # [B, k] sibling ranks by token (ties: draw order)
        order = ids[rank]  # [B, k] node ids
        q = stack_rows([q_rows[c] for c in ks])  # [B, k, V] (None: no child of u has children)
        for j in range(len(ks)):
            yield u, order[:, j], None if q is None else row_at(q, rank[:, j])


def stack_rows(rows: list) -> Tensor | None:
    """[B, k, V] from k rows [B, V] or None (zeros there); None when every one is None."""
    ref = next((r for r in rows if r is not None), None)
    if ref is None:
        return None
    return torch.stack([torch.zeros_like(ref) if r is None else r for r in rows], 1)  # [B, k, V]


def verify_topdown(
    tree: StaticTree,
    walk: Walk,
    q_rows: list,
    layout: StaticLayout,
    accept_c: Tensor,
    verify: str,
    variant: Variant = SPEC,
) -> tuple[Tensor, Tensor]:
    """`specinfer` / `rrsw` from the root. Returns (the node each trial ends at [B], the final
    residual r there [B, V]: the bonus row)."""
    B = accept_c.shape[0]
    cur = torch.zeros(B, dtype=torch.int64, device=accept_c.device)  # [B] the root
    r, s = walk.row(0, cur == 0), q_rows[0]  # [B, V] each (s: specinfer's fixed q, rrsw's shrinking s)
    shrink = verify == "rrsw" and variant.proposal_update == "verifier"
    for u, c, q_c in tries(tree, q_rows, layout, variant):
        x = at(tree.tokens, c).clamp(min=0)  # [B]
        sx, rx = gather1(s, x), gather1(r, x)  # [B] each
        tried = at(tree.drafted, c) & (cur == u)  # [B]
        if verify == "rrsw":
            tried = tried & (sx > 0)  # [B] a duplicate of a rejected sibling: skipped
        acc = tried & accepts(at(accept_c, c), rx, sx)  # [B]
        rej = (tried & ~acc).unsqueeze(1)  # [B, 1]
        r = torch.where(rej, residual_sampled(r, s), r)  # [B, V]
        if shrink:
            s = torch.where(rej, rrsw_s(s, x), s)  # [B, V]
        r = torch.where(acc.unsqueeze(1), walk.row(c, acc), r)  # [B, V]
        if q_c is not None:
            s = torch.where(acc.unsqueeze(1), q_c, s)  # [B, V]
        cur = torch.where(acc, c, cur)  # [B]
    return cur, r


def child_rate(alpha: Tensor, Mb: Tensor, Ms: Tensor, x: Tensor) -> Tensor:
    """α of a child with token x [B]: min(1, α·Mb(x)/Ms(x)), 0 where Ms(x) = 0."""
    b, s = gather1(Mb, x), gather1(Ms, x)  # [B] each
    return torch.where(s > 0, torch.clamp(alpha * b / torch.where(s > 0, s, 1.0), max=1.0), 0.0)  # [B]


OTHER_SAMPLING = {"iid": "wor", "wor": "iid"}


def traversal_reject(
    alpha: Tensor, Mb: Tensor, Ms: Tensor, x: Tensor, sampling: str, root: bool, variant: Variant = SPEC
) -> tuple[Tensor, Tensor, Tensor]:
    """(α, Mb, Ms) of a node once its child with token x [B] is removed: R = (α·Mb - Ms)+,
    S = ΣR; α <- S/(S + 1 - α) (0 when S = 0; the root's stays 1); Mb <- R/S when S > 0;
    `wor`: Ms loses x and is renormalised; `iid`: Ms unchanged. Settings: `traversal_rate`
    "one_minus_ms": α <- min(1, S/(1 - Ms(x))) (1 when Ms(x) = 1); `ms_update` "other": the
    other sampling mode's Ms update."""
    aMb = alpha.unsqueeze(1) * Mb  # [B, V]
    d = aMb - Ms  # [B, V]
    R = torch.where(d > RTOL * torch.maximum(aMb, Ms), d, 0.0)  # [B, V]
    S = R.sum(-1)  # [B]
    pos = S > 0  # [B]
    if root:
        new_alpha = alpha  # [B] (1)
    elif variant.traversal_rate == "one_minus_ms":
        rest = 1 - gather1(Ms, x)  # [B]
        rate = torch.where(rest > 0, torch.clamp(S / torch.where(rest > 0, rest, 1.0), max=1.0), 1.0)  # [B]
        new_alpha = torch.where(pos, rate, 0.0)  # [B]
    else:
        new_alpha = torch.where(pos, S / torch.where(pos, S + 1 - alpha, 1.0), 0.0)  # [B]
    new_Mb = torch.where(pos.unsqueeze(1), R / torch.where(pos, S, 1.0).unsqueeze(1), Mb)  # [B, V]
    mode = sampling if variant.ms_update == "own" else OTHER_SAMPLING[sampling]
    new_Ms = rrsw_s(Ms, x) if mode == "wor" else Ms  # [B, V]
    return new_alpha, new_Mb, new_Ms


def verify_traversal(
    tree: StaticTree,
    walk: Walk,
    q_rows: list,
    layout: StaticLayout,
    accept_c: Tensor,
    sampling: str,
    variant: Variant = SPEC,
) -> tuple[Tensor, Tensor]:
    """Traversal Verification; `sampling` chooses the Ms update (the tree's own: lossless).
    Returns (the accepted node [B], 0: none, and the bonus row Mb there [B, V]; p there under
    `traversal_bonus` "target")."""
    if variant.leaf_order != "post_order" or variant.sibling_order != "draw":
        return verify_traversal_by_leaves(tree, walk, q_rows, layout, accept_c, sampling, variant)
    B, dev = accept_c.shape[0], accept_c.device
    every = torch.ones(B, dtype=torch.bool, device=dev)  # [B]
    alpha: list = [every.to(accept_c.dtype)] + [None] * layout.N  # [B] per node
    Mb: list = [walk.row(0, every)] + [None] * layout.N  # [B, V] per node
    P = list(Mb)  # [B, V] per node: p, never updated (the bonus row under `traversal_bonus` "target")
    Ms: list = list(q_rows)  # [B, V] per node with children
    running = every  # [B] no accept yet
    end = torch.zeros(B, dtype=torch.int64, device=dev)  # [B]
    bonus = P if variant.traversal_bonus == "target" else Mb
    end_row = bonus[0]  # [B, V]
    for entering, v in layout.euler:
        u = layout.parents[v - 1]
        x = tree.tokens[:, v].clamp(min=0)  # [B]
        live = running & tree.drafted[:, v]  # [B]
        if entering:
            alpha[v] = child_rate(alpha[u], Mb[u], Ms[u], x)  # [B]
            Mb[v] = P[v] = walk.row(v, live)  # [B, V]
            continue
        acc = live & (accept_c[:, v] < alpha[v])  # [B]
        end = torch.where(acc, v, end)  # [B]
        end_row = torch.where(acc.unsqueeze(1), bonus[v], end_row)  # [B, V]
        running = running & ~acc  # [B]
        rej = (live & ~acc).unsqueeze(1)  # [B, 1]
        a2, Mb2, Ms2 = traversal_reject(alpha[u], Mb[u], Ms[u], x, sampling, u == 0, variant)  # [B], [B, V], [B, V]
        alpha[u] = torch.where(rej[:, 0], a2, alpha[u])  # [B]
        Mb[u] = torch.where(rej, Mb2, Mb[u])  # [B, V]
        Ms[u] = torch.where(rej, Ms2, Ms[u])  # [B, V]
    return end, torch.where(running.unsqueeze(1), bonus[0], end_row)  # [B], [B, V]


def next_leaf(live: Tensor, x: Tensor, layout: StaticLayout, variant: Variant) -> Tensor:
    """The next leaf of each trial [B] (0: none left) among the live non-root nodes live [B, 1+N]:
    the first in post-order with siblings in the `sibling_order` (descend from the root through
    the first live child), or the live leaf created first (`leaf_order` "min_index")."""
    B, dev = live.shape[0], live.device
    if variant.leaf_order == "min_index":
        parents = index(layout.parents, dev)  # [N]
        kids = torch.zeros(live.shape, dtype=torch.int64, device=dev)  # [B, 1+N] live children per node
        kids.index_add_(1, parents, live[:, 1:].long())  # [B, 1+N]
        leaf = live & (kids == 0)  # [B, 1+N] (the root is never live)
        return torch.where(leaf.any(1), leaf.int().argmax(1), 0)  # [B] argmax: the first maximum
    table = index(layout.kid_table, dev)  # [1+N, k]
    k = table.shape[1]
    rank = torch.arange(k, device=dev)  # [k]
    v = torch.zeros(B, dtype=torch.int64, device=dev)  # [B]
    for _ in range(layout.D):
        cand = table.index_select(0, v)  # [B, k] children of v (-1: none)
        ok = (cand >= 0) & live.gather(1, cand.clamp(min=0))  # [B, k]
        key = rank + (x.gather(1, cand.clamp(min=0)) * k if variant.sibling_order == "token_id" else 0)  # [B, k]
        j = torch.where(ok, key, torch.iinfo(torch.int64).max).argmin(1)  # [B]
        v = torch.where(ok.any(1), gather1(cand, j), v)  # [B]
    return v


def verify_traversal_by_leaves(
    tree: StaticTree,
    walk: Walk,
    q_rows: list,
    layout: StaticLayout,
    accept_c: Tensor,
    sampling: str,
    variant: Variant = SPEC,
) -> tuple[Tensor, Tensor]:
    """Traversal one leaf per step, as `rheo_ref.verifier_laws.TraversalState` runs it: the next leaf
    by `next_leaf`, accepted iff its coin is below α, else removed, its parent updated and α of
    every live node below the parent recomputed at once. For the spec's order it is the Euler
    walk's result (tests/test_static_gate.py checks it); the by-leaf loop serves the orders
    that differ between trials. Returns what `verify_traversal` returns."""
    B, n, dev = accept_c.shape[0], layout.N + 1, accept_c.device
    P = torch.stack([walk.row(v, tree.drafted[:, v]) for v in range(n)], 1)  # [B, 1+N, V]
    Mb, Ms = P.clone(), stack_rows(list(q_rows))  # [B, 1+N, V] each (Ms: zeros at leaves of the shape)
    assert Ms is not None, "the root has children"
    x = tree.tokens.clamp(min=0)  # [B, 1+N]
    parent = index((0,) + layout.parents, dev)  # [1+N] (the root's: itself)
    below = index(layout.below, dev).bool()  # [1+N, 1+N]
    live = tree.drafted.clone()  # [B, 1+N] non-root nodes not removed yet
    live[:, 0] = False
    alpha = torch.zeros(live.shape, dtype=accept_c.dtype, device=dev)  # [B, 1+N]
    alpha[:, 0] = 1.0
    rates_below(alpha, Mb, Ms, x, layout, live)
    running = torch.ones(B, dtype=torch.bool, device=dev)  # [B] no accept yet
    end = torch.zeros(B, dtype=torch.int64, device=dev)  # [B]
    for _ in range(layout.N):
        v = next_leaf(live, x, layout, variant)  # [B]
        act = running & (v > 0)  # [B]
        acc = act & (gather1(accept_c, v) < gather1(alpha, v))  # [B]
        end = torch.where(acc, v, end)  # [B]
        running = running & ~acc  # [B]
        rej = act & ~acc  # [B]
        u = parent.index_select(0, v)  # [B]
        au, Mbu, Msu = gather1(alpha, u), row_at(Mb, u), row_at(Ms, u)  # [B], [B, V], [B, V]
        a2, Mb2, Ms2 = traversal_reject(au, Mbu, Msu, gather1(x, v), sampling, False, variant)  # [B], [B, V], [B, V]
        a2 = torch.where(u == 0, au, a2)  # [B] the root's stays 1
        alpha.scatter_(1, u[:, None], torch.where(rej, a2, au)[:, None])  # [B, 1+N]
        at_u = u[:, None, None].expand(B, 1, Mb.shape[2])  # [B, 1, V]
        Mb.scatter_(1, at_u, torch.where(rej[:, None], Mb2, Mbu)[:, None])  # [B, 1+N, V]
        Ms.scatter_(1, at_u, torch.where(rej[:, None], Ms2, Msu)[:, None])  # [B, 1+N, V]
        live = live & ~(rej[:, None] & (torch.arange(n, device=dev) == v[:, None]))  # [B, 1+N]
        rates_below(alpha, Mb, Ms, x, layout, rej[:, None] & live & below.index_select(0, u))
    rows = P if variant.traversal_bonus == "target" else Mb  # [B, 1+N, V]
    return end, row_at(rows, end)  # [B], [B, V] (end 0: the root's row)


def rates_below(alpha: Tensor, Mb: Tensor, Ms: Tensor, x: Tensor, layout: StaticLayout, which: Tensor) -> None:
    """α[c] <- min(1, α[u]·Mb[u][x]/Ms[u][x]) (u: c's parent) for the nodes which [B, 1+N], in
    creation order (parents first), in place."""
    for c in range(1, layout.N + 1):
        u = layout.parents[c - 1]
        rate = child_rate(alpha[:, u], Mb[:, u], Ms[:, u], x[:, c])  # [B]
        alpha[:, c] = torch.where(which[:, c], rate, alpha[:, c])  # [B]


def emit(tree: StaticTree, layout: StaticLayout, end: Tensor, row: Tensor, bonus_c: Tensor) -> Tensor:
    """emitted [B, D+1]: the path to node end [B], then the bonus drawn from row [B, V], -1 after."""
    toks = rows_at(tree.path, end.unsqueeze(1))[:, 0, tree.P :]  # [B, D]
    out = torch.cat([toks, torch.full_like(toks[:, :1], -1)], 1)  # [B, D+1]
    bonus = inverse_cdf(row, bonus_c)  # [B]
    return out.scatter_(1, tree.depth.index_select(0, end).unsqueeze(1), bonus.unsqueeze(1))  # [B, D+1]


@dataclass
class StaticResult:
    tree: StaticTree
    verdict: Verdict  # emitted [B, D+1], n_emitted [B]; visited [B, 1]: the node the round ended at
    missing_draft: Tensor  # [B] first drafted node with children whose q_samp row is missing (-1: none)
    missing_target: Tensor  # [B] first node whose p row verification read and found missing (-1: none)


def static_round(
    model: TreeModel,
    state: Any,
    scheme: StaticScheme,
    coins: Tensor,
    *,
    layout: StaticLayout | None = None,
    variant: Variant = SPEC,
) -> StaticResult:
    """Draw and verify one tree per trial; coins [B, n_coins] (layout in the module docstring)."""
    if scheme.ensemble_weight is not None:
        raise CaseError(
            f"ensemble_weight {scheme.ensemble_weight}: the fast path runs plain specinfer only; "
            f"`rheo exact` computes the ensemble's exact law, `rheo gate-hf --decoder ensemble:W` gates it"
        )
    layout = layout or static_layout(scheme)
    draw_c, accept_c, bonus_c = layout.split(coins)  # [B, 1+N], [B, 1+N], [B]
    tree, q_rows, missing_q = draw_tree(model, state, layout, draw_c)  # q_rows: [B, V] per node with children
    walk = Walk(as_rows(model.target(state, tree)), coins.shape[0], layout.N, coins.device)
    if scheme.verify == "traversal":
        end, row = verify_traversal(tree, walk, q_rows, layout, accept_c, scheme.sampling, variant)  # [B], [B, V]
    else:
        end, row = verify_topdown(tree, walk, q_rows, layout, accept_c, scheme.verify, variant)  # [B], [B, V]
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
