"""Exact expectations over the verification coins, in float64 (docs/ALGORITHM.md §5).

Two closed forms of the verification rule, for measuring with less variance what a round does:

- `expected_emitted(tree, p, ...)`: E[tokens emitted | the built tree, the target rows at its nodes],
  the Rao–Blackwellised round length. On a fixed tree every accept probability is a function of
  the rows: at a node with residual r, a run of point masses t_1..t_J is accepted first at t_k
  with probability r(t_k)/Σr (the sequential rule telescopes); the sampled child y with
  min(1, r(y)/q̃(y)), after which r <- norm((r - q̃)+) whatever y is. So, bottom-up over the
  expansions, A(node) = Σ_children P(child accepted first) (1 + A(child)) and the round emits
  1 + A(root) tokens on average. Averaging it in place of the realised length keeps the mean
  (tower rule) and removes the verification coins' share of the variance.
- `one_level_acceptance(p, q_rank, q_samp, K, m, verify)`: the probability that some root child is
  accepted, averaged exactly over the sampled token y ~ q̃ as well (the seeds' Table 4 setting:
  depth 1, slots top-m, sampled, fills). With the det tokens D, the fills F(y) (the next
  K - m - 1 tail tokens other than y) and a(y) = min(1, r(y)/q̃(y)):
  `rrsw` (det, y, fills): P(y) = p(D) + (1 - p(D)) [a1(y) + (1 - a1(y)) r2(F(y))],
  r1 = norm(p with D zeroed), a1 on r1, r2 = norm((r1 - q̃)+);
  `rheo` (y first): P(y) = a0(y) + (1 - a0(y)) r1(D ∪ F(y)), a0 on p, r1 = norm((p - q̃)+);
  m = K (Top-K): p(x_1..x_K). The answer is Σ_y q̃(y) P(y); F(y) depends on y only through
  whether y is one of the first K - m tail tokens, so the sum is one vectorised pass over V.
Both are checked against rheo_ref's exact Fractions on table models (tests/test_expected.py).
"""

from __future__ import annotations

import torch
from torch import Tensor

from .tree import Tree
from .verify import gather1, normalise, residual_sampled, try_orders


def expected_emitted(tree: Tree, p, K: int, m: int, verify: str) -> Tensor:
    """E[emitted tokens | tree, p] [B] for a rheo-family tree after rerank (`tree.kept` set);
    p: target rows (`.at(nodes [B]) -> [B, V]`, NaN rows where the target did not run)."""
    assert tree.kept is not None, "expected_emitted reads the kept tree (after rerank)"
    B, n = tree.tokens.shape
    dev = tree.tokens.device
    E = tree.expanded.shape[1]
    below = torch.zeros(B, n, dtype=torch.float64, device=dev)  # [B, 1+N] expected accepted tokens below a node
    qt_all = tree.qtilde if m < K else None  # [B, E, V]
    order, sp = try_orders(K, m, verify)
    for e in range(E - 1, -1, -1):  # children's expansions come after their parents' (depth-major)
        node = tree.expanded[:, e]  # [B]
        has = gather1(tree.kept, node)  # [B] the node is in the kept tree
        r = p.at(node)  # [B, V]
        r = torch.where(has[:, None], r, torch.zeros_like(r).fill_(1.0 / r.shape[1]))  # [B, V] (no NaN)
        samp = tree.sampling[:, e] & has  # [B]
        slots = torch.where(samp[:, None], torch.tensor(order, device=dev), torch.arange(K, device=dev))  # [B, K]
        child = 1 + K * e + slots  # [B, K] node ids in try order
        tok = tree.tokens.gather(1, child).clamp(min=0)  # [B, K]
        tried = has[:, None] & tree.kept.gather(1, child)  # [B, K]
        gain = 1.0 + below.gather(1, child)  # [B, K]
        pos = torch.arange(K, device=dev)  # [K]
        s_at = torch.where(samp, sp, K)  # [B] try position of the sampled child (K: none)
        value, stay, r = _points(r, tok, tried & (pos < s_at[:, None]), gain)  # [B], [B], [B, V]
        if qt_all is not None:
            qt = qt_all[:, e]  # [B, V]
            y = tok[:, sp]  # [B]
            ok = samp & tried[:, sp]  # [B]
            qy = gather1(qt, y)  # [B]
            a = torch.where(ok & (qy > 0), (gather1(r, y) / torch.where(qy > 0, qy, 1.0)).clamp(max=1.0), 0.0)  # [B]
            value = value + stay * a * gain[:, sp]  # [B]
            stay = stay * (1 - a)  # [B]
            r = torch.where(ok[:, None], residual_sampled(r, qt), r)  # [B, V]
            v2, stay2, _ = _points(r, tok, tried & (pos > s_at[:, None]), gain)  # [B] x2
            value = value + stay * v2  # [B]
        below.scatter_(1, node[:, None], torch.where(has, value, 0.0)[:, None])  # [B, 1+N]
    return 1.0 + below[:, 0]  # [B]


def _points(r: Tensor, toks: Tensor, tried: Tensor, gain: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """A run of point masses toks [B, J] (tried [B, J]) against r [B, V]: (Σ_k P(first accept at k)
    gain_k [B], P(all rejected) [B], norm(r with the tried tokens zeroed) [B, V])."""
    z = r.sum(-1)  # [B]
    rt = torch.where(tried, r.gather(1, toks), 0.0) / torch.where(z > 0, z, 1.0)[:, None]  # [B, J]
    zeroed = torch.zeros_like(r).scatter_add_(1, toks, tried.to(r.dtype)) > 0  # [B, V]
    return (rt * gain).sum(-1), 1.0 - rt.sum(-1), normalise(torch.where(zeroed, 0.0, r), r)


def ranked_ids(q_rank: Tensor) -> Tensor:
    """Token ids by q_rank descending, ties by lower id: [B, V] (a stable sort)."""
    return torch.sort(-q_rank, dim=-1, stable=True).indices  # [B, V]


def one_level_acceptance(p: Tensor, q_rank: Tensor, q_samp: Tensor, *, K: int, m: int, verify: str) -> Tensor:
    """P(some root child accepted) [B], exactly averaged over y ~ q̃ (module docstring); p, q_rank,
    q_samp [B, V] float64 rows (the draft's support may be any subset of V)."""
    if not (1 <= K and 0 <= m <= K):
        raise ValueError(f"need 1 <= K and 0 <= m <= K, got K={K}, m={m}")
    if verify not in ("rheo", "rrsw"):
        raise ValueError(f"verify={verify!r}; allowed: rheo, rrsw")
    order = ranked_ids(q_rank)  # [B, V]
    det = order[:, :m]  # [B, m]
    top_k = p.gather(1, order[:, :K]).sum(-1)  # [B] m = K, or a tail without q_samp mass
    if m == K:
        return top_k
    tail = torch.ones_like(p, dtype=torch.bool).scatter(1, det, False)  # [B, V]
    zs = torch.where(tail, q_samp, 0.0).sum(-1, keepdim=True)  # [B, 1]
    qt = torch.where(tail, q_samp, 0.0) / torch.where(zs > 0, zs, 1.0)  # [B, V] q̃
    n_f = K - m - 1  # fills per expansion
    lead = order[:, m : m + n_f + 1]  # [B, K-m] the first K - m tail tokens

    def fill_mass(r: Tensor) -> Tensor:
        """r(F(y)) for every y [B, V]: the first n_f tail tokens, or the first n_f + 1 but y."""
        r_lead = r.gather(1, lead)  # [B, K-m]
        generic = r_lead[:, :n_f].sum(-1, keepdim=True).expand_as(r).clone()  # [B, V]
        return generic.scatter(1, lead, r_lead.sum(-1, keepdim=True) - r_lead)  # [B, V]

    def accept(r: Tensor) -> Tensor:
        """a(y) = min(1, r(y)/q̃(y)) [B, V] (0 where q̃ = 0: y is never drawn there)."""
        return torch.where(qt > 0, r / torch.where(qt > 0, qt, 1.0), 0.0).clamp(max=1.0)

    if verify == "rheo":
        a0 = accept(p)  # [B, V]
        r1 = residual_sampled(p, qt)  # [B, V]
        d = r1.gather(1, det).sum(-1, keepdim=True)  # [B, 1]
        per_y = a0 + (1 - a0) * (d + fill_mass(r1))  # [B, V]
    else:
        pd = p.gather(1, det).sum(-1, keepdim=True)  # [B, 1]
        r1 = normalise(p.scatter(1, det, 0.0), p)  # [B, V]
        a1 = accept(r1)  # [B, V]
        r2 = residual_sampled(r1, qt)  # [B, V]
        per_y = pd + (1 - pd) * (a1 + (1 - a1) * fill_mass(r2))  # [B, V]
    out = (qt * per_y).sum(-1)  # [B]
    return torch.where(zs[:, 0] > 0, out, top_k)  # [B]
