"""Verification of one round, vectorised over B trees (docs/ALGORITHM.md §5).

Level by level from the root: r = p(.|node); the node's kept children are tried in the
verification order (`rheo`: sampled, top-m, fills; `rrsw`: slot order), each with its own accept coin u:
- sampled child y (drawn from q̃): accept iff u * q̃(y) < r(y)  (u < min(1, r/q̃), u < 1);
  on reject r <- norm(max(0, r - q̃));
- point mass t: accept iff u < r(t); on reject r <- norm(r with t zeroed).
Strict `<`: a coin of exactly 0 never accepts a token of probability 0. On accept we move to the
child with r = p(.|child); when every kept child is rejected (or there is none) the round ends
with one bonus token drawn from r by the bonus coin (inverse CDF in token-id order).

Float hygiene: entries of r - q̃ below RTOL * max(r, q̃) are rounding noise of an exact zero and
are cleared; a residual whose mass is then 0 (possible only through rounding, never in exact
arithmetic, where such a rejection has probability 0) keeps the previous r instead of dividing
0 by 0.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from rheo_ref.slot_steps import SLOT_SPEC, SlotSteps

from .slots import inverse_cdf, qtilde_of
from .tree import Tree

RTOL = 1e-12


def normalise(x: Tensor, fallback: Tensor) -> Tensor:
    z = x.sum(-1, keepdim=True)  # [B, 1]
    return torch.where(z > 0, x / torch.where(z > 0, z, 1.0), fallback)  # [B, V]


def residual_sampled(r: Tensor, qt: Tensor, steps: SlotSteps = SLOT_SPEC) -> Tensor:
    """norm(max(0, r - q̃)) with rounding noise cleared; r, qt [B, V]."""
    d = r - qt  # [B, V]
    d = torch.where(d > RTOL * torch.maximum(r, qt), d, 0.0)  # [B, V]
    return normalise(d, r) if steps.normalise_residual else d  # [B, V]


def residual_point(r: Tensor, t: Tensor, steps: SlotSteps = SLOT_SPEC) -> Tensor:
    """norm(r with t zeroed); r [B, V], t [B]. The sequential rule, one try at a time; the round
    uses its closed form over a whole run (`try_points`), tests check that they agree."""
    d = r.scatter(1, t[:, None], 0.0)  # [B, V]
    return normalise(d, r) if steps.normalise_residual else d  # [B, V]


def try_orders(K: int, m: int, verify: str, steps: SlotSteps = SLOT_SPEC) -> tuple[list[int], int]:
    """Slot order of the tries at an expansion with a sampled slot, and the sampled child's
    position in it. Expansions without one are tried in slot order (all point masses)."""
    if m >= K:
        return list(range(K)), K
    rest = list(range(m)) + list(range(m + 1, K))
    if steps.try_order == "fills_first":
        return rest + [m], K - 1
    if verify == "rheo":
        return [m] + rest, 0
    return list(range(K)), m


def rounded(x: Tensor, steps: SlotSteps) -> Tensor:
    """x as verification sees it: float64, or rounded through float16 by the `rounding` setting."""
    return x.half().double() if steps.rounding == "float16" else x


def accepts(lhs: Tensor, rhs: Tensor, steps: SlotSteps) -> Tensor:
    """The coin comparison: u-scaled lhs < rhs (strict: a coin of 0 never accepts probability 0)."""
    return lhs <= rhs if steps.accept_on_equal else lhs < rhs


@dataclass
class Verdict:
    emitted: Tensor  # [B, D+1] accepted tokens then the bonus, -1 after
    n_emitted: Tensor  # [B] 1..D+1
    visited: Tensor  # [B, D+1] node ids whose p row was used (-1 after the last)
    missing: Tensor  # [B] bool: one of them has no target row (NaN)


def gather1(x: Tensor, i: Tensor) -> Tensor:
    return x.gather(1, i[:, None])[:, 0]  # [B]


def row_at(x: Tensor, i: Tensor) -> Tensor:
    """x[b, i[b]] for x [B, n, V], i [B] (index_select: much faster than advanced indexing on CPU)."""
    B, n, V = x.shape
    return x.reshape(B * n, V).index_select(0, torch.arange(B, device=i.device) * n + i)  # [B, V]


def qtilde_rows(tree: Tree, e: Tensor, level: int | None) -> Tensor:
    """q̃ of expansions e [B] (a valid id wherever it is read): from the depth-`level` rows when
    every read e is a depth-`level` expansion, else from all of them. Only these B rows are
    divided by their tail mass."""
    if level is None:
        return row_at(tree.qtilde, e)  # [B, V]
    d = min(level, len(tree.qtilde_d) - 1)  # (no node at depth D is expanded: nothing is read there)
    e0 = sum(t.shape[1] for t, _ in tree.qtilde_d[:d])
    tail, mass = tree.qtilde_d[d]  # [B, W_d, V], [B, W_d, 1]
    i = (e - e0).clamp(0, tail.shape[1] - 1)  # [B]
    return qtilde_of(row_at(tail, i), row_at(mass, i))  # [B, V]


def try_points(
    r: Tensor, toks: Tensor, tried: Tensor, u: Tensor, steps: SlotSteps = SLOT_SPEC
) -> tuple[Tensor, Tensor, Tensor]:
    """A run of point-mass children toks [B, J] (tried [B, J]) against r [B, V], in order.

    Sequentially, t_k meets r with the earlier rejected t_j zeroed and renormalised, so it is
    accepted iff u_k * (Σr - Σ_{j<k} r(t_j)) < r(t_k): one vectorised comparison. Returns
    (accepted [B], first accepted position [B], r with the rejected tokens zeroed [B, V]: the
    residual at the accept, or after the whole run when nothing was accepted).
    """
    rt = torch.where(tried, r.gather(1, toks), 0.0)  # [B, J]
    before = rt.cumsum(-1) - rt  # [B, J] mass of the earlier rejections
    denom = r.sum(-1, keepdim=True) - before if steps.normalise_residual else 1.0  # [B, J]
    acc = tried & accepts(u * denom, rt, steps)  # [B, J]
    rejected = tried & (acc.cumsum(-1) == 0)  # [B, J] tried before the first accept
    zeroed = torch.zeros_like(r).scatter_add_(1, toks, rejected.to(r.dtype)) > 0  # [B, V] (duplicates safe)
    after = torch.where(zeroed, 0.0, r)  # [B, V]
    if steps.normalise_residual:
        after = normalise(after, r)  # [B, V]
    return acc.any(-1), acc.int().argmax(-1), after


def try_sampled(
    r: Tensor, qt: Tensor, y: Tensor, tried: Tensor, u: Tensor, steps: SlotSteps = SLOT_SPEC
) -> tuple[Tensor, Tensor]:
    """The sampled child y [B] (tried [B]): accept iff u q̃(y) < r(y); else r <- norm((r - q̃)+)."""
    if steps.sampled_as_point:
        acc, _, after = try_points(r, y[:, None], tried[:, None], u[:, None], steps)  # [B], _, [B, V]
        return acc, torch.where((tried & ~acc)[:, None], after, r)  # [B], [B, V]
    acc = tried & accepts(u * gather1(qt, y), gather1(r, y), steps)  # [B]
    return acc, torch.where((tried & ~acc)[:, None], residual_sampled(r, qt, steps), r)  # [B], [B, V]


def verify_level(
    tree: Tree,
    r: Tensor,
    cur: Tensor,
    active: Tensor,
    exp_of: Tensor,
    acc_coins: Tensor,
    K: int,
    m: int,
    verify: str,
    steps: SlotSteps = SLOT_SPEC,
    level: int | None = None,
) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    """Try the kept children of node cur [B] in the verification order, as three runs: point masses
    before the sampled child, the sampled child, point masses after it. level (optional): the
    depth of cur wherever `active`, so that q̃ is read from that depth's rows only.
    Returns (accepted [B], new node [B], r after the rejections [B, V], some child tried [B])."""
    dev = cur.device
    e = gather1(exp_of, cur)  # [B] expansion of cur, -1 if never expanded
    has = active & (e >= 0)  # [B]
    e = e.clamp(min=0)  # [B]
    samp = gather1(tree.sampling, e) & has  # [B]
    order, sp = try_orders(K, m, verify, steps)
    slots = torch.where(samp[:, None], torch.tensor(order, device=dev), torch.arange(K, device=dev))  # [B, K]
    child = 1 + K * e[:, None] + slots  # [B, K] node ids in try order
    tok = tree.tokens.gather(1, child)  # [B, K]
    tried = has[:, None] & tree.kept.gather(1, child)  # [B, K]
    u, r = rounded(acc_coins.gather(1, child), steps), rounded(r, steps)  # [B, K], [B, V]
    pos = torch.arange(K, device=dev)  # [K]
    s_at = torch.where(samp, sp, K)  # [B] position of the sampled child (K: none)
    acc_a, first_a, r = try_points(r, tok, tried & (pos < s_at[:, None]), u, steps)  # [B], [B], [B, V]
    accepted, at = acc_a, first_a  # [B] each
    if m < K:
        qt, r = rounded(qtilde_rows(tree, e, level), steps), rounded(r, steps)  # [B, V] each
        acc_b, r_b = try_sampled(r, qt, tok[:, sp], samp & tried[:, sp] & ~accepted, u[:, sp], steps)  # [B], [B, V]
        r = torch.where(accepted[:, None], r, r_b)  # [B, V]
        at = torch.where(acc_b, sp, at)  # [B]
        accepted = accepted | acc_b  # [B]
        acc_c, first_c, r_c = try_points(
            r, tok, tried & (pos > s_at[:, None]) & ~accepted[:, None], u, steps
        )  # [B], [B], [B, V]
        r = torch.where(accepted[:, None], r, r_c)  # [B, V]
        at = torch.where(acc_c, first_c, at)  # [B]
        accepted = accepted | acc_c  # [B]
    nxt = torch.where(accepted, gather1(child, at), cur)  # [B]
    return accepted, nxt, r, tried.any(-1)


def verify(
    tree: Tree,
    p,
    acc_coins: Tensor,
    bonus_coin: Tensor,
    K: int,
    m: int,
    D: int,
    verify: str,
    steps: SlotSteps = SLOT_SPEC,
) -> Verdict:
    """Walk the kept tree from the root; p: target rows (`.at(nodes [B]) -> [B, V]`),
    acc_coins [B, 1+N], bonus_coin [B]."""
    B = tree.tokens.shape[0]
    dev = acc_coins.device
    exp_of = torch.full(tree.tokens.shape, -1, dtype=torch.int64, device=dev)  # [B, 1+N]
    exp_of.scatter_(
        1, tree.expanded, torch.arange(tree.expanded.shape[1], device=dev).expand_as(tree.expanded)
    )  # [B, 1+N]
    cur = torch.zeros(B, dtype=torch.int64, device=dev)  # [B] the root
    r = p.at(cur)  # [B, V]
    missing = r[:, 0].isnan()  # [B] a visited node without a target row
    stale = r  # [B, V] r at the last accept (read by bonus_row = "stale")
    active = torch.ones(B, dtype=torch.bool, device=dev)  # [B]
    emitted = torch.full((B, D + 2), -1, dtype=torch.int64, device=dev)  # [B, D+2]
    visited = torch.full((B, D + 1), -1, dtype=torch.int64, device=dev)  # [B, D+1]
    n_acc = torch.zeros(B, dtype=torch.int64, device=dev)  # [B]
    final = r  # [B, V] the row the bonus is drawn from
    for level in range(D + 1):
        visited[:, level] = torch.where(active, cur, -1)  # [B]
        accepted, nxt, r_after, tried = verify_level(
            tree, r, cur, active, exp_of, acc_coins, K, m, verify, steps, level
        )  # [B] x2, [B, V], [B]
        ending = active & ~accepted  # [B]
        if steps.bonus_row == "target":
            end_row = p.at(cur)  # [B, V]
        elif steps.bonus_row == "stale" and level > 0:
            end_row = torch.where(tried[:, None], r_after, stale)  # [B, V]
        else:
            end_row = r_after  # [B, V]
        final = torch.where(ending[:, None], end_row, final)  # [B, V]
        emitted[:, level] = torch.where(accepted, gather1(tree.tokens, nxt), -1)  # [B]
        n_acc += accepted.long()
        stale = torch.where(accepted[:, None], r_after, stale)  # [B, V]
        cur = nxt  # [B]
        p_cur = p.at(cur)  # [B, V]
        missing |= accepted & p_cur[:, 0].isnan()  # [B]
        r = torch.where(accepted[:, None], p_cur, r_after)  # [B, V]
        active = accepted  # [B]
    bonus = inverse_cdf(final, rounded(bonus_coin, steps))  # [B]
    emitted.scatter_(1, n_acc[:, None], bonus[:, None])  # [B, D+2]
    return Verdict(emitted[:, : D + 1], n_acc + 1, visited, missing)
