"""Family `treespark` on the fast path, vectorised over B trials (docs/SCHEMES.md §13), coupled
coin for coin to `rheo_ref.families.treespark.replay`.

Coins per round and trial, `TreeSparkLayout.n_coins` = 2(N+1)+1 (the static family's layout):
draw coin of node i at i (1..N, creation order), accept coin at N+1+i, the bonus coin at 2N+2.

The builder's priority queue becomes N batched selections. Every node has at most one open slot
(its next child), so the heap is a [B, 1+N] tensor of slot bounds, `open` flags and insertion
indices; a step pops, per trial, the open slot with the largest bound, ties by the smallest
insertion index (compared lexicographically), stops a trial on an empty heap or (θ > 0) a best
bound < θ, draws node i's token from q_samp(.|v) with v's drawn tokens zeroed, creates the node
and pushes its slot (depth < D and a token left) then v's (< k children and a token left). Node
i's draft rows come from one `model.draft` call per step (F = 1 node per trial), so any
`TreeModel` works, the real language model included (it runs B = 1; `SparkTree.depth` is trial
0's depths, indexed by node id). Calibration g is computed in float64, as the reference's.

The trees differ per trial, so verification runs on per-trial parent tensors:
- rrsw: nodes in creation order; a trial standing at u tries node c iff c's parent is u (u's
  children come in draw order, and c's own children after c), as the static family's top-down
  walk does;
- traversal: the reference's loop one leaf per step (first live child from the root until a
  leaf), α of the live nodes below an updated parent recomputed in creation order.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from rheo_fast.families.static.round import Walk, accepts, child_rate, rrsw_s, traversal_reject
from rheo_fast.models import TreeModel, as_rows
from rheo_fast.slots import inverse_cdf
from rheo_fast.tree import rows_at
from rheo_fast.verify import Verdict, gather1, residual_sampled, row_at
from rheo_ref.errors import CaseError
from rheo_ref.families.treespark.layout import TreeSparkLayout, treespark_layout
from rheo_ref.families.treespark.scheme import Calibration, TreeSparkScheme
from rheo_ref.variants import SPEC, Variant

__all__ = ["SparkTree", "TreeSparkLayout", "TreeSparkResult", "check_treespark_round", "treespark_round"]


@dataclass
class SparkTree:
    """The drawn trees of B trials, node ids in creation order (root 0; undrafted: token -1)."""

    tokens: Tensor  # [B, 1+N]
    drafted: Tensor  # [B, 1+N] bool (root True)
    parent: Tensor  # [B, 1+N] (root and undrafted: -1)
    depths: Tensor  # [B, 1+N] per-trial depths (undrafted: 0)
    path: Tensor  # [B, 1+N, P+D] the P context tokens before the root, then root->node (-1 padding)
    P: int = 0

    @property
    def kept(self) -> Tensor:
        return self.drafted  # [B, 1+N]

    @property
    def depth(self) -> Tensor:
        """Trial 0's depths [1+N], indexed by node id (models that run one trial, B = 1)."""
        return self.depths[0]

    def windows(self, nodes: Tensor, length: int) -> Tensor:
        """The last `length` <= P context tokens of each node in nodes [B, F] (-1: none)."""
        rows = rows_at(self.path, nodes)  # [B, F, P+D]
        depth = self.depths.gather(1, nodes).unsqueeze(-1)  # [B, F, 1]
        idx = depth + torch.arange(self.P - length, self.P, device=nodes.device)  # [B, F, L]
        return rows.gather(-1, idx)  # [B, F, L]

    def all_windows(self, length: int) -> Tensor:
        """The last `length` <= P context tokens of every node: [B, 1+N, length]."""
        idx = self.depths.unsqueeze(-1) + torch.arange(self.P - length, self.P, device=self.path.device)  # [B, n, L]
        return self.path.gather(-1, idx)  # [B, 1+N, L]

    def position_ids(self) -> Tensor:
        return self.depths  # [B, 1+N]

    def attention_mask(self) -> Tensor:
        """[B, 1+N, 1+N] bool: node i attends to j iff j is i or an ancestor."""
        B, n = self.tokens.shape
        anc = torch.eye(n, dtype=torch.bool, device=self.tokens.device).expand(B, n, n).clone()  # [B, n, n]
        up = self.parent.clamp(min=0)  # [B, n]
        hop = torch.arange(n, device=up.device).expand(B, n)  # [B, n]
        for _ in range(int(self.depths.max())):
            hop = up.gather(1, hop)  # [B, n]
            anc.scatter_(2, hop[..., None], True)  # [B, n, n]
        return anc


def calibrate(q: Tensor, cal: Calibration) -> Tensor:
    """g(q) in float64: identity, or σ(a·logit(q) + b) with g(0) = 0, g(1) = 1."""
    if cal.kind == "identity":
        return q
    inside = (q > 0) & (q < 1)
    qc = torch.where(inside, q, 0.5)
    z = cal.a * (torch.log(qc) - torch.log1p(-qc)) + cal.b
    s = torch.where(
        z >= 0, 1.0 / (1.0 + torch.exp(-z.clamp(min=0))), torch.exp(z.clamp(max=0)) / (1.0 + torch.exp(z.clamp(max=0)))
    )
    return torch.where(inside, s, torch.where(q >= 1, 1.0, 0.0))


@dataclass
class TreeSparkResult:
    tree: SparkTree
    verdict: Verdict
    missing_draft: Tensor  # [B] first node whose draft row a slot needed and found missing (-1: none)
    missing_target: Tensor  # [B] first node whose p row verification read and found missing (-1: none)


class _Heap:
    """Per trial, one slot per node: bound, open flag, insertion index."""

    def __init__(self, B: int, n: int, device: torch.device) -> None:
        self.bound = torch.full((B, n), float("-inf"), dtype=torch.float64, device=device)  # [B, 1+N]
        self.open = torch.zeros((B, n), dtype=torch.bool, device=device)  # [B, 1+N]
        self.ins = torch.zeros((B, n), dtype=torch.int64, device=device)  # [B, 1+N]
        self.pushes = torch.zeros(B, dtype=torch.int64, device=device)  # [B]

    def best(self) -> tuple[Tensor, Tensor, Tensor]:
        """(node [B], its bound [B], any open [B]): largest bound, ties by smallest insertion index."""
        b = torch.where(self.open, self.bound, float("-inf"))  # [B, 1+N]
        top = b.max(1).values  # [B]
        cand = self.open & (b == top[:, None])  # [B, 1+N]
        v = torch.where(cand, self.ins, torch.iinfo(torch.int64).max).argmin(1)  # [B]
        return v, top, self.open.any(1)

    def push(self, node: Tensor, bound: Tensor, mask: Tensor) -> None:
        """Open node's [B] slot with bound [B] where mask [B]."""
        col = node[:, None]  # [B, 1]
        self.bound.scatter_(1, col, torch.where(mask, bound, gather1(self.bound, node))[:, None])
        self.ins.scatter_(1, col, torch.where(mask, self.pushes, gather1(self.ins, node))[:, None])
        self.open.scatter_(1, col, (mask | gather1(self.open, node))[:, None])
        self.pushes += mask.long()

    def close(self, node: Tensor, mask: Tensor) -> None:
        self.open.scatter_(1, node[:, None], (gather1(self.open, node) & ~mask)[:, None])


def treespark_round(
    model: TreeModel,
    state: Any,
    scheme: TreeSparkScheme,
    coins: Tensor,
    *,
    layout: TreeSparkLayout | None = None,
    variant: Variant = SPEC,
) -> TreeSparkResult:
    """Build and verify one tree per trial; coins [B, n_coins] (layout in the module docstring)."""
    layout = layout or treespark_layout(scheme)
    N, D, k, cal = scheme.N, scheme.D, scheme.k, scheme.calibration
    theta = float(scheme.theta)
    draw_c, accept_c, bonus_c = layout.split(coins)  # [B, 1+N], [B, 1+N], [B]
    B, n, dev, V = coins.shape[0], N + 1, coins.device, model.vocab_size
    prefix = model.prefix(state) if model.prefix_len else None  # [B, P]
    P = 0 if prefix is None else prefix.shape[1]
    i64 = dict(dtype=torch.int64, device=dev)
    tree = SparkTree(
        tokens=torch.full((B, n), -1, **i64),
        drafted=torch.zeros((B, n), dtype=torch.bool, device=dev),
        parent=torch.full((B, n), -1, **i64),
        depths=torch.zeros((B, n), **i64),
        path=torch.full((B, n, P + D), -1, **i64),
        P=P,
    )
    tree.drafted[:, 0] = True
    if P:
        tree.path[:, 0, :P] = prefix
    q_rank = torch.zeros((B, n, V), dtype=torch.float64, device=dev)  # [B, 1+N, V]
    q_samp = torch.zeros((B, n, V), dtype=torch.float64, device=dev)  # [B, 1+N, V]
    drawn = torch.zeros((B, n, V), dtype=torch.bool, device=dev)  # [B, 1+N, V] tokens drawn at each node
    nkids = torch.zeros((B, n), **i64)  # [B, 1+N]
    surv = torch.zeros((B, n), dtype=torch.float64, device=dev)  # [B, 1+N]
    surv[:, 0] = 1.0
    heap = _Heap(B, n, dev)
    missing = torch.full((B,), -1, **i64)  # [B]
    everyone = torch.ones(B, dtype=torch.bool, device=dev)  # [B]

    def fetch(i: int, need: Tensor) -> None:
        nonlocal missing
        rows = model.draft(state, tree, torch.full((B, 1), i, **i64))
        q_rank[:, i], q_samp[:, i] = rows.q_rank[:, 0], rows.q_samp[:, 0]
        bad = need & (q_rank[:, i, 0].isnan() | q_samp[:, i, 0].isnan())  # [B]
        missing = torch.where(bad & (missing < 0), i, missing)

    def push(node: Tensor, mask: Tensor) -> None:
        qr, qs, dn = row_at(q_rank, node), row_at(q_samp, node), row_at(drawn, node)  # [B, V] each
        left = (qs > 0) & ~dn  # [B, V]
        best = torch.where(left, qr, float("-inf")).max(1).values  # [B]
        has = left.any(1)  # [B]
        bound = gather1(surv, node) * calibrate(torch.where(has, best, 0.0), cal)  # [B]
        heap.push(node, bound, mask & has)

    fetch(0, everyone)
    push(torch.zeros(B, **i64), everyone)
    active = everyone.clone()  # [B] still building
    for i in range(1, N + 1):
        v, top, any_open = heap.best()  # [B] each
        active = active & any_open
        if variant.admission == "slot" and theta > 0:
            active = active & ~(top < theta)
        heap.close(v, active)
        row = torch.where(row_at(drawn, v), 0.0, row_at(q_samp, v))  # [B, V]
        x = inverse_cdf(row, draw_c[:, i])  # [B]
        xc = x.clamp(min=0)  # [B]
        own = gather1(surv, v) * calibrate(gather1(row_at(q_rank, v), xc), cal)  # [B]
        if variant.admission == "own_survival" and theta > 0:
            active = active & ~(own < theta)
        act = active & (x >= 0)  # [B]
        tree.tokens[:, i] = torch.where(act, x, -1)
        tree.drafted[:, i] = act
        tree.parent[:, i] = torch.where(act, v, -1)
        d = gather1(tree.depths, v) + 1  # [B]
        tree.depths[:, i] = torch.where(act, d, 0)
        path = row_at(tree.path, v).clone()  # [B, P+D]
        path.scatter_(1, (P + d - 1).clamp(max=P + D - 1)[:, None], xc[:, None])
        tree.path[:, i] = torch.where(act[:, None], path, -1)
        surv[:, i] = torch.where(act, own, 0.0)
        hit = torch.zeros((B, V), dtype=torch.bool, device=dev).scatter_(1, xc[:, None], act[:, None])  # [B, V]
        drawn[torch.arange(B, device=dev), v] = row_at(drawn, v) | hit
        nkids.scatter_add_(1, v[:, None], act.long()[:, None])
        deep = act & (d < D)  # [B]
        if bool(deep.any()):
            fetch(i, deep)
            push(torch.full((B,), i, **i64), deep)
        push(v, act & (gather1(nkids, v) < k))
    walk = Walk(as_rows(model.target(state, tree)), B, N, dev)
    if scheme.verify == "traversal":
        end, row = _traversal(tree, walk, q_samp, accept_c, D)
    else:
        end, row = _rrsw(tree, walk, q_samp, accept_c)
    toks = rows_at(tree.path, end[:, None])[:, 0, P:]  # [B, D]
    emitted = torch.cat([toks, torch.full_like(toks[:, :1], -1)], 1)  # [B, D+1]
    depth_end = gather1(tree.depths, end)  # [B]
    emitted.scatter_(1, depth_end[:, None], inverse_cdf(row, bonus_c)[:, None])
    verdict = Verdict(emitted, depth_end + 1, end[:, None], walk.missing >= 0)
    return TreeSparkResult(tree, verdict, missing, walk.missing)


def _rrsw(tree: SparkTree, walk: Walk, q_samp: Tensor, accept_c: Tensor) -> tuple[Tensor, Tensor]:
    """rrsw on per-trial trees. Returns (the node each trial ends at [B], the final residual [B, V])."""
    B, n = tree.tokens.shape
    cur = torch.zeros(B, dtype=torch.int64, device=accept_c.device)  # [B]
    r, s = walk.row(0, cur == 0), q_samp[:, 0]  # [B, V] each
    for c in range(1, n):
        x = tree.tokens[:, c].clamp(min=0)  # [B]
        sx, rx = gather1(s, x), gather1(r, x)  # [B]
        tried = tree.drafted[:, c] & (tree.parent[:, c] == cur) & (sx > 0)  # [B]
        acc = tried & accepts(accept_c[:, c], rx, sx)  # [B]
        rej = (tried & ~acc)[:, None]  # [B, 1]
        r = torch.where(rej, residual_sampled(r, s), r)
        s = torch.where(rej, rrsw_s(s, x), s)
        r = torch.where(acc[:, None], walk.row(c, acc), r)
        s = torch.where(acc[:, None], q_samp[:, c], s)
        cur = torch.where(acc, c, cur)
    return cur, r


def _traversal(tree: SparkTree, walk: Walk, q_samp: Tensor, accept_c: Tensor, D: int) -> tuple[Tensor, Tensor]:
    """Traversal Verification (wor update) on per-trial trees, one leaf per step. Returns (the
    accepted node [B], 0: none, and Mb there [B, V]: the bonus row)."""
    B, n = tree.tokens.shape
    dev = accept_c.device
    Mb = torch.stack([walk.row(v, tree.drafted[:, v]) for v in range(n)], 1)  # [B, 1+N, V]
    Ms = q_samp.clone()  # [B, 1+N, V]
    x = tree.tokens.clamp(min=0)  # [B, 1+N]
    par = tree.parent.clamp(min=0)  # [B, 1+N]
    live = tree.drafted.clone()  # [B, 1+N]
    live[:, 0] = False
    alpha = torch.zeros((B, n), dtype=torch.float64, device=dev)  # [B, 1+N]
    alpha[:, 0] = 1.0

    def rates(which: Tensor) -> None:
        for c in range(1, n):
            u = par[:, c]
            a = child_rate(gather1(alpha, u), row_at(Mb, u), row_at(Ms, u), x[:, c])  # [B]
            alpha[:, c] = torch.where(which[:, c], a, alpha[:, c])

    rates(live)
    running = torch.ones(B, dtype=torch.bool, device=dev)  # [B]
    end = torch.zeros(B, dtype=torch.int64, device=dev)  # [B]
    ids = torch.arange(n, device=dev)  # [1+N]
    for _ in range(n):
        v = torch.zeros(B, dtype=torch.int64, device=dev)  # [B]
        for _ in range(D):
            kids = live & (tree.parent == v[:, None])  # [B, 1+N]
            v = torch.where(kids.any(1), kids.int().argmax(1), v)  # first live child in creation order
        act = running & (v > 0)  # [B]
        acc = act & (gather1(accept_c, v) < gather1(alpha, v))  # [B]
        end = torch.where(acc, v, end)
        running = running & ~acc
        rej = act & ~acc  # [B]
        u = gather1(par, v)  # [B]
        au, Mbu, Msu = gather1(alpha, u), row_at(Mb, u), row_at(Ms, u)
        a2, Mb2, Ms2 = traversal_reject(au, Mbu, Msu, gather1(x, v), "wor", False)
        a2 = torch.where(u == 0, au, a2)  # the root's stays 1
        alpha.scatter_(1, u[:, None], torch.where(rej, a2, au)[:, None])
        at_u = u[:, None, None].expand(B, 1, Mb.shape[2])  # [B, 1, V]
        Mb.scatter_(1, at_u, torch.where(rej[:, None], Mb2, Mbu)[:, None])
        Ms.scatter_(1, at_u, torch.where(rej[:, None], Ms2, Msu)[:, None])
        live = live & ~(rej[:, None] & (ids == v[:, None]))
        desc = torch.zeros((B, n), dtype=torch.bool, device=dev)  # [B, 1+N] strict descendants of u
        for c in range(1, n):
            desc[:, c] = tree.drafted[:, c] & ((tree.parent[:, c] == u) | gather1(desc, par[:, c]))
        rates(rej[:, None] & live & desc)
        if not bool(running.any()):
            break
    return end, row_at(Mb, end)


def check_treespark_round(model: TreeModel, state: Any, res: TreeSparkResult, todo: Tensor) -> None:
    """Refuse what the reference refuses (a row missing where the round reads one), one sync per round."""
    flags = torch.stack([((res.missing_draft >= 0) & todo).any(), ((res.missing_target >= 0) & todo).any()])
    miss_q, miss_p = flags.tolist()
    if not (miss_q or miss_p):
        return
    which, nodes, table = ("draft", res.missing_draft, "q_samp") if miss_q else ("target", res.missing_target, "p")
    ctx = model.missing_context(state, res.tree, nodes.clamp(min=0).unsqueeze(1), table)
    where = f" (ending {ctx})" if ctx is not None else ""
    raise CaseError(f"{which}: a reachable context{where} has no row (NaN); every reachable context needs one")
