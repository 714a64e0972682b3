"""The child slots of one expansion, vectorised (ALGORITHM.md section 3).

For a batch of frontiers (B trials x F nodes) with rows q_rank, q_samp [B, F, V]:
slots 0..m-1 hold the top-m tokens by q_rank (`top_k`: ties by lower id), slot m holds y
drawn from the tail q̃ by one coin each (inverse CDF in token-id order: the first t with
u < Σ_{s<=t} q̃(s)), slots m+1..K-1 the next K-m-1 tail tokens other than y. Nodes whose tail
has no q_samp mass get x_1..x_K, all `det`.
"""
from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor

from rheo_ref.models import Proxy

DET, SAMPLED, FILL = 0, 1, 2


def ranked(q_rank: Tensor) -> Tensor:
    """All token ids by q_rank descending, ties by lower id (torch.topk promises no tie order)."""
    return torch.sort(q_rank, dim=-1, descending=True, stable=True).indices  # [..., V]


def top_k(x: Tensor, k: int) -> Tensor:
    """Indices of the k largest entries of x [..., n], best first, ties by lower index.

    k passes of argmax (which returns the first maximum) instead of a stable sort: for the small
    k of a tree (K, W, R) this is several times faster than torch.sort on CPU. -inf entries (zero
    probability) are lifted to the lowest finite value so that taken entries (-inf) stay below
    them and keep their creation order.
    """
    key = torch.where(x == float("-inf"), torch.finfo(x.dtype).min, x)  # [..., n] a fresh copy
    out = torch.empty(x.shape[:-1] + (k,), dtype=torch.int64, device=x.device)  # [..., k]
    for j in range(k):
        i = key.argmax(-1, keepdim=True)  # [..., 1]
        out[..., j:j + 1] = i
        key.scatter_(-1, i, float("-inf"))  # [..., n]
    return out


def inverse_cdf(probs: Tensor, u: Tensor) -> Tensor:
    """First t with u * Σ probs < Σ_{s<=t} probs(s) (probs [..., V] >= 0, unnormalised, u [...]);
    -1 for a row without mass.

    x = u * total is capped just below the total, so rounding can never run past the last token
    with mass: cumsum of non-negative floats is monotone, so the first cum > x is an increment.
    (Scaling u by 1 - 2^-52 instead would be cheaper but moves exact boundaries: u = 1/4 against
    cumulative 1/4 must not pick the earlier token.)"""
    cum = probs.cumsum(-1)  # [..., V]
    total = cum[..., -1:]  # [..., 1]
    x = torch.minimum(u[..., None] * total, torch.nextafter(total, torch.zeros_like(total)))  # [..., 1]
    t = torch.searchsorted(cum, x, right=True)[..., 0]  # [...]
    return torch.where(total[..., 0] > 0, t, -1)  # [...]


@dataclass
class Expansion:
    tokens: Tensor      # [B, F, K] child tokens in slot order
    kind: Tensor        # [B, F, K] DET / SAMPLED / FILL
    log_factor: Tensor  # [B, F, K] log of each child's factor (-inf for 0)
    sampling: Tensor    # [B, F] bool: slot m holds a sampled token
    qtilde: Tensor | None  # [B, F, V] the row the sampled child is verified against; None when m = K
    bad_factor: Tensor  # [B, F] bool: a proxy factor > 1 (scaled:s), refused like the reference


def proxy_factor(proxy: Proxy, q_top: Tensor, z_r: Tensor, q_y: Tensor, m: int) -> Tensor:
    """Factor of the sampled slot (section 3); q_top [B,F,K] ranked q_rank, z_r and q_y [B,F]."""
    if proxy.kind == "true":
        return q_y  # [B, F]
    if proxy.kind == "const":
        return torch.full_like(q_y, float(proxy.value))  # [B, F]
    rheo = torch.minimum(q_top[..., m - 1], z_r) if m >= 1 else q_top[..., 0]  # [B, F]
    return rheo if proxy.kind == "rheo" else rheo * float(proxy.value)  # [B, F]


def fills_after(cand: Tensor, y: Tensor) -> Tensor:
    """The first K-m-1 of the ranked tail tokens cand [B,F,K-m] other than y [B,F]: position i
    takes cand[i], or cand[i+1] once y has been passed."""
    n = cand.shape[-1] - 1
    passed = (cand == y[..., None]).cumsum(-1)[..., :n]  # [B, F, K-m-1] 1 from y's position on
    return cand.gather(-1, torch.arange(n, device=cand.device) + passed)  # [B, F, K-m-1]


def expand(q_rank: Tensor, q_samp: Tensor, u: Tensor, K: int, m: int, proxy: Proxy,
           mutant: str | None = None) -> Expansion:
    """Slots of F nodes per trial; u [B, F] are their sampling coins."""
    top = top_k(q_rank, K)  # [B, F, K] ranked x_1..x_K
    factor = q_rank.gather(-1, top)  # [B, F, K] q_rank(x_i): det factors
    if m == K:  # plain Top-K: no sampled slot
        none = torch.zeros(u.shape, dtype=torch.bool, device=u.device)  # [B, F]
        kind = torch.full_like(top, DET)  # [B, F, K]
        return Expansion(top, kind, torch.log(factor), none, None, none)
    q_tail = q_samp.scatter(-1, top[..., :m], 0.0)  # [B, F, V] q_samp on the tail
    z_s = q_tail.sum(-1, keepdim=True)  # [B, F, 1]
    sampling = z_s[..., 0] > 0  # [B, F]
    qtilde = q_tail / z_s.clamp_min(torch.finfo(z_s.dtype).tiny)  # [B, F, V] (0 where nothing to sample)
    y = inverse_cdf(q_samp if mutant == "sample-whole-q" else q_tail, u)  # [B, F]
    with_y = torch.cat([top[..., :m], y[..., None], fills_after(top[..., m:], y)], -1)  # [B, F, K]
    tokens = torch.where(sampling[..., None], with_y, top)  # [B, F, K]
    z_r = q_rank.scatter(-1, top[..., :m], 0.0).sum(-1)  # [B, F]
    pr = {"proxy-true": Proxy("true"), "proxy-const": Proxy.parse("const:1/4")}.get(mutant, proxy)
    f = proxy_factor(pr, factor, z_r, q_rank.gather(-1, y[..., None].clamp(min=0))[..., 0], m)  # [B, F]
    bad = sampling & (f > 1) if pr.kind == "scaled" else torch.zeros_like(sampling)  # [B, F]
    factor = torch.cat([factor[..., :m], torch.where(sampling, f, factor[..., m])[..., None],
                        q_rank.gather(-1, tokens[..., m + 1:])], -1)  # [B, F, K]
    kinds = torch.tensor([DET] * m + [SAMPLED] + [FILL] * (K - m - 1), device=q_rank.device)  # [K]
    kind = torch.where(sampling[..., None], kinds, DET)  # [B, F, K]
    if mutant in ("verify-q-not-qtilde", "temp-sample-only"):
        qtilde = verify_row(mutant, qtilde, q_rank, q_samp, top[..., :m])  # [B, F, V]
    return Expansion(tokens, kind, torch.log(factor), sampling, qtilde, bad)


def verify_row(mutant: str | None, qtilde: Tensor, q_rank: Tensor, q_samp: Tensor, top_m: Tensor) -> Tensor:
    """A mutant's wrong row to check the sampled child against, instead of q̃."""
    if mutant == "verify-q-not-qtilde":
        return torch.where(qtilde.sum(-1, keepdim=True) > 0, q_samp, 0.0)  # [B, F, V]
    if mutant == "temp-sample-only":
        q = q_rank.scatter(-1, top_m, 0.0) * (qtilde.sum(-1, keepdim=True) > 0)  # [B, F, V] q_rank's tail
        return q / q.sum(-1, keepdim=True).clamp_min(torch.finfo(q.dtype).tiny)  # [B, F, V]
    return qtilde
