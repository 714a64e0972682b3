"""The child slots of one expansion, vectorised (docs/ALGORITHM.md §3).

For a batch of frontiers (B trials x F nodes) with rows q_rank, q_samp [B, F, V]:
slots 0..m-1 hold the top-m tokens by q_rank (`top_k`: ties by lower id), slot m holds y
drawn from the tail q̃ by one coin each (inverse CDF in token-id order: the first t with
u < Σ_{s<=t} q̃(s)), slots m+1..K-1 the next K-m-1 tail tokens other than y. Nodes whose tail
has no q_samp mass get x_1..x_K, all `det`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import torch
from torch import Tensor

from rheo_ref.models import Proxy
from rheo_ref.slot_steps import SLOT_SPEC, SlotSteps

from .models import DraftRows

DET, SAMPLED, FILL = 0, 1, 2


def ranked(q_rank: Tensor) -> Tensor:
    """All token ids by q_rank descending, ties by lower id (torch.topk promises no tie order)."""
    return torch.sort(q_rank, dim=-1, descending=True, stable=True).indices  # [..., V]


def top_k(x: Tensor, k: int, *, lift: bool = True) -> Tensor:
    """Indices of the k largest entries of x [..., n], best first, ties by lower index.

    k passes of argmax (which returns the first maximum) instead of a stable sort: for the small
    k of a tree (K, W, R) this is several times faster than torch.sort on CPU. -inf entries (zero
    probability) are lifted to the lowest finite value so that taken entries (-inf) stay below
    them and keep their creation order; lift=False skips that for x without -inf (probabilities).
    """
    key = rank_key(x) if lift else x.clone()  # [..., n] a fresh copy
    out = torch.empty(x.shape[:-1] + (k,), dtype=torch.int64, device=x.device)  # [..., k]
    for j in range(k):
        take_best(key, out, j, last=j == k - 1)
    return out


def rank_key(x: Tensor) -> Tensor:
    """The key `top_k` ranks by: x with -inf lifted to the lowest finite value (a fresh copy)."""
    return torch.where(x == float("-inf"), torch.finfo(x.dtype).min, x)  # [..., n]


def take_best(key: Tensor, out: Tensor, j: int, last: bool = False) -> None:
    """One pass of `top_k`: out[..., j] = the first maximum of key [..., n], which is then taken
    out of key (set to -inf, below every lifted entry) unless this is the last pass."""
    i = key.argmax(-1, keepdim=True)  # [..., 1]
    out[..., j : j + 1] = i
    if not last:
        key.scatter_(-1, i, float("-inf"))  # [..., n]


def inverse_cdf(probs: Tensor, u: Tensor) -> Tensor:
    """First t with u * Σ probs < Σ_{s<=t} probs(s) (probs [..., V] >= 0, unnormalised, u [...]);
    -1 for a row without mass."""
    cum = probs.cumsum(-1)  # [..., V]
    total = cum.narrow(-1, cum.shape[-1] - 1, 1).contiguous()  # [..., 1]
    return torch.where(total.squeeze(-1) > 0, first_past(cum, total, u), -1)  # [...]


def first_past(cum: Tensor, total: Tensor, u: Tensor) -> Tensor:
    """`inverse_cdf` from the cumulative sums cum [..., V] and their last entry total [..., 1],
    without the no-mass fix-up: V where the total is 0 (callers that already know which rows
    have mass skip the fix-up).

    x = u * total is capped just below the total, so rounding can never run past the last token
    with mass: cumsum of non-negative floats is monotone, so the first cum > x is an increment.
    (Scaling u by 1 - 2^-52 instead would be cheaper but moves exact boundaries: u = 1/4 against
    cumulative 1/4 must not pick the earlier token.)"""
    x = torch.minimum(u.unsqueeze(-1) * total, torch.nextafter(total, zero(total.dtype, total.device)))  # [..., 1]
    return torch.searchsorted(cum, x, right=True).squeeze(-1)  # [...]


@lru_cache(maxsize=16)
def zero(dtype: torch.dtype, device: torch.device) -> Tensor:
    """A 0-d zero (never written), to step towards with nextafter."""
    return torch.zeros((), dtype=dtype, device=device)  # []


@dataclass
class Expansion:
    tokens: Tensor  # [B, F, K] child tokens in slot order
    kind: Tensor  # [B, F, K] DET / SAMPLED / FILL
    log_factor: Tensor  # [B, F, K] log of each child's factor (-inf for 0)
    sampling: Tensor  # [B, F] bool: slot m holds a sampled token
    tail: Tensor | None  # [B, F, V] q_samp on the tail (unnormalised); None when m = K
    tail_mass: Tensor | None  # [B, F, 1] its mass (0 where nothing is sampled)
    bad_factor: Tensor  # [B, F] bool: a proxy factor > 1 (scaled:s), refused like the reference

    @property
    def qtilde(self) -> Tensor | None:
        """[B, F, V] q̃, the row the sampled child is verified against (0 where nothing is
        sampled). Verification divides only the rows it reads (`qtilde_of`)."""
        return None if self.tail is None else qtilde_of(self.tail, self.tail_mass)


def qtilde_of(tail: Tensor, mass: Tensor) -> Tensor:
    """q̃ = tail / mass ([..., V], [..., 1]); rows without mass stay 0."""
    return tail / mass.clamp_min(torch.finfo(mass.dtype).tiny)  # [..., V]


def proxy_factor(proxy: Proxy, q_top: Tensor, z_r: Tensor | None, q_y: Tensor | None, m: int) -> Tensor:
    """Factor of the sampled slot (docs/ALGORITHM.md §3); q_top [B,F,K] ranked q_rank, z_r and q_y [B,F]
    (each needed only by the proxies that read it: z_r by rheo / scaled with m >= 1, q_y by true)."""
    if proxy.kind == "true":
        return q_y  # [B, F]
    if proxy.kind == "const":
        return torch.full_like(q_top[..., 0], float(proxy.value))  # [B, F]
    rheo = torch.minimum(q_top[..., m - 1], z_r) if m >= 1 else q_top[..., 0]  # [B, F]
    return rheo if proxy.kind == "rheo" else rheo * float(proxy.value)  # [B, F]


def fills_after(cand: Tensor, y: Tensor) -> Tensor:
    """The first K-m-1 of the ranked tail tokens cand [B,F,K-m] other than y [B,F]: position i
    takes cand[i], or cand[i+1] once y has been passed."""
    n = cand.shape[-1] - 1
    passed = (cand == y[..., None]).cumsum(-1)[..., :n]  # [B, F, K-m-1] 1 from y's position on
    return cand.gather(-1, torch.arange(n, device=cand.device) + passed)  # [B, F, K-m-1]


@lru_cache(maxsize=64)
def slot_kinds(K: int, m: int, device: torch.device, batch: tuple[int, ...] = ()) -> Tensor:
    """[*batch, K] the kinds of an expansion with a sampled slot: DET x m, SAMPLED, FILL x (K-m-1)
    (cached and shared: never write into it)."""
    kinds = torch.tensor([DET] * m + [SAMPLED] + [FILL] * (K - m - 1), device=device)  # [K]
    return kinds.expand(*batch, K).contiguous()  # [*batch, K]


def expand(rows: DraftRows, u: Tensor, K: int, m: int, proxy: Proxy, steps: SlotSteps = SLOT_SPEC) -> Expansion:
    """Slots of F nodes per trial; u [B, F] are their sampling coins.

    With a sampled slot (0 < m < K) the ranking stops after x_1..x_m: y is drawn from the tail,
    taken out of the ranking key, and the next K-m-1 passes are the fills (the ranked tail
    without y), one pass fewer than x_1..x_K. Nodes whose tail has no q_samp mass keep
    x_1..x_K, which takes that pass; on CPU it runs only when such a node exists (elsewhere
    always: knowing it would need a device sync). When the rows are `shared` (q_samp = q_rank,
    T = 1) the ranking key, with x_1..x_m at -inf, gives the tail by one clamp, and z_r = z_s."""
    q_rank, q_samp = rows.q_rank, rows.q_samp  # [B, F, V] each
    if m == K:  # plain Top-K: no sampled slot
        top = top_k(q_rank, K, lift=False)  # [B, F, K] ranked x_1..x_K (probabilities: no -inf)
        factor = q_rank.gather(-1, top)  # [B, F, K] q_rank(x_i): det factors
        none = torch.zeros(u.shape, dtype=torch.bool, device=u.device)  # [B, F]
        kind = torch.full_like(top, DET)  # [B, F, K]
        return Expansion(top, kind, torch.log(factor), none, None, None, none)
    if m == 0:
        return expand_by_masks(q_rank, q_samp, u, K, m, proxy, steps)
    B, F, V = q_rank.shape
    dev = q_rank.device
    pr = steps.proxy or proxy
    key = q_rank.clone()  # [B, F, V] the ranking key (probabilities: no -inf to lift)
    tokens = torch.empty((B, F, K), dtype=torch.int64, device=dev)  # [B, F, K] x_1..x_m, y, fills
    for j in range(m):
        take_best(key, tokens, j)  # x_j at -inf in key
    if rows.shared:
        q_tail = key.clamp_min(0.0)  # [B, F, V] the tail of q_rank = q_samp
    else:
        q_tail = q_samp.masked_fill(key < 0, 0.0)  # [B, F, V] q_samp on the tail
    cum = q_tail.cumsum(-1)  # [B, F, V]
    z_s = cum.narrow(-1, V - 1, 1).contiguous()  # [B, F, 1] tail mass of q_samp
    z_r = z_s if rows.shared else key.clamp_min(0.0).sum(-1, keepdim=True)  # [B, F, 1] of q_rank
    sampling = z_s.squeeze(-1) > 0  # [B, F]
    every = dev.type == "cpu" and bool(sampling.all())  # every node has a sampled slot (CPU: no sync cost)
    if steps.sample_from == "whole":
        y = inverse_cdf(q_samp, u)  # [B, F]
    else:  # y = V where the tail has no mass: never read
        y = first_past(cum, z_s, u)  # [B, F]
    tokens.select(-1, m).copy_(y)
    gone = y if every else torch.where(sampling, y, tokens.select(-1, 0))  # [B, F] (no sampled slot: x_1 again)
    key.scatter_(-1, gone.unsqueeze(-1), -math.inf)  # [B, F, V]
    for j in range(m + 1, K):
        take_best(key, tokens, j, last=every and j == K - 1)
    if not every:  # nodes without a sampled slot: x_1..x_m, then the passes after y (which took nothing)
        last = torch.empty((B, F, 1), dtype=torch.int64, device=dev)  # [B, F, 1] x_K
        take_best(key, last, 0, last=True)
        det = torch.cat([tokens[..., :m], tokens[..., m + 1 :], last], -1)  # [B, F, K] x_1..x_K
        tokens = torch.where(sampling[..., None], tokens, det)  # [B, F, K]
    factor = q_rank.gather(-1, tokens)  # [B, F, K] q_rank of each token: det and fill factors
    f_m = factor.select(-1, m)  # [B, F] slot m: q_rank(y), replaced by the proxy factor
    f = proxy_factor(pr, factor, z_r.squeeze(-1), f_m, m)  # [B, F]
    bad = sampling & (f > 1) if pr.kind == "scaled" else torch.zeros_like(sampling)  # [B, F]
    if f is not f_m:  # (the true proxy: q_rank(y) already)
        f_m.copy_(f if every else torch.where(sampling, f, f_m))  # [B, F]
    if every:
        kind = slot_kinds(K, m, dev, (B, F)).clone()  # [B, F, K]
    else:
        kind = torch.where(sampling.unsqueeze(-1), slot_kinds(K, m, dev), DET)  # [B, F, K]
    if steps.verify_row != "tail":
        q_tail, z_s = other_verify_row(steps, q_tail, z_s, q_rank, q_samp, tokens[..., :m])  # [B, F, V], [B, F, 1]
    return Expansion(tokens, kind, torch.log(factor), sampling, q_tail, z_s, bad)


def expand_by_masks(
    q_rank: Tensor, q_samp: Tensor, u: Tensor, K: int, m: int, proxy: Proxy, steps: SlotSteps = SLOT_SPEC
) -> Expansion:
    """`expand` from the full ranking x_1..x_K, fills by skipping y (any m < K; used for m = 0)."""
    top = top_k(q_rank, K)  # [B, F, K] ranked x_1..x_K
    factor = q_rank.gather(-1, top)  # [B, F, K] q_rank(x_i): det factors
    q_tail = q_samp.scatter(-1, top[..., :m], 0.0)  # [B, F, V] q_samp on the tail
    z_s = q_tail.sum(-1, keepdim=True)  # [B, F, 1]
    sampling = z_s[..., 0] > 0  # [B, F]
    y = inverse_cdf(q_samp if steps.sample_from == "whole" else q_tail, u)  # [B, F]
    with_y = torch.cat([top[..., :m], y[..., None], fills_after(top[..., m:], y)], -1)  # [B, F, K]
    tokens = torch.where(sampling[..., None], with_y, top)  # [B, F, K]
    z_r = q_rank.scatter(-1, top[..., :m], 0.0).sum(-1)  # [B, F]
    pr = steps.proxy or proxy
    f = proxy_factor(pr, factor, z_r, q_rank.gather(-1, y[..., None].clamp(min=0))[..., 0], m)  # [B, F]
    bad = sampling & (f > 1) if pr.kind == "scaled" else torch.zeros_like(sampling)  # [B, F]
    factor = torch.cat(
        [factor[..., :m], torch.where(sampling, f, factor[..., m])[..., None], q_rank.gather(-1, tokens[..., m + 1 :])],
        -1,
    )  # [B, F, K]
    kind = torch.where(sampling[..., None], slot_kinds(K, m, q_rank.device), DET)  # [B, F, K]
    if steps.verify_row != "tail":
        q_tail, z_s = other_verify_row(steps, q_tail, z_s, q_rank, q_samp, top[..., :m])  # [B, F, V], [B, F, 1]
    return Expansion(tokens, kind, torch.log(factor), sampling, q_tail, z_s, bad)


def other_verify_row(
    steps: SlotSteps, q_tail: Tensor, z_s: Tensor, q_rank: Tensor, q_samp: Tensor, top_m: Tensor
) -> tuple[Tensor, Tensor]:
    """The row (unnormalised, mass) the sampled child is checked against when the settings'
    `verify_row` is not the tail q̃: the whole q_samp, or the tail of q_rank."""
    has = z_s > 0  # [B, F, 1]
    if steps.verify_row == "q_samp":
        return torch.where(has, q_samp, 0.0), has.to(z_s.dtype)  # [B, F, V], [B, F, 1]
    if steps.verify_row == "q_rank_tail":
        q = q_rank.scatter(-1, top_m, 0.0) * has  # [B, F, V] q_rank's tail
        return q, q.sum(-1, keepdim=True)  # [B, F, V], [B, F, 1]
    return q_tail, z_s
