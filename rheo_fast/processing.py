"""Logits processing on the fast path: `rheo_ref.processing` (docs/PROCESSING.md) vectorised over a
batch of rows, float64 torch, the same processors, orders and tie rules under the same names.

A row is a tensor of non-negative weights [B, V] (logits = log(weight)); a step returns the rows it
acts on, and the steps that renormalise in the reference renormalise here. Settings are the
reference's (`rheo_ref.processing.Settings`, e.g. `rheo_ref.bugclasses.decoder.Request`): one set
for the whole batch; the penalties' state is per row (`counts` [B, V], `seen` [B, V] bool).

Exact ties in floats. The reference compares exact numbers, so a tie is a tie; here a processed row
is the exact row rounded a few times, and an exact tie can come out as two floats one ulp apart.
Every cut-off therefore treats numbers within `TIE` · (the row's largest weight) as equal: weights
within TIE·max of each other are one value (`groups`); top-k keeps the k largest and top-p the n
largest, n counted by sorting ascending and dropping while the cumulative probability ≤ 1 − p + TIE,
a cut between tied tokens resolved by the request's tie rule as the reference's `keep_largest` does
("all": every weight ≥ the n-th largest − TIE·max; "low" / "high": by token id; none named: refused);
min-p keeps every weight ≥ m·max − TIE·max, greedy takes the lowest id within TIE·max of the largest. The rounding of these few float64 operations
on a row of V ≤ 10^5 weights is far below TIE = 1e-12, and two distinct rationals of small
denominators (every table rheo builds) differ by far more, so on such rows the fast cut-offs are
the reference's exactly (`tests/test_fast_processing.py` checks it on random tables with planted
ties). A real model's logits are not rationals: there two weights within TIE·max count as a tie.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from fractions import Fraction
from typing import Any

import torch
from torch import Tensor

from rheo_ref.errors import CaseError, TieError
from rheo_ref.processing import ORDERS, PENALTIES, TIES_HELP, Settings, Ties, check_ties, show_p, tie_rule

TIE = 1e-12  # relative to the row's largest weight: closer numbers are one number (module docstring)


def _top(w: Tensor) -> Tensor:
    return w.amax(-1, keepdim=True)  # [B, 1]


def normalise(w: Tensor) -> Tensor:
    """w / Σw per row; a row of zero mass is refused (nothing to sample)."""
    z = w.sum(-1, keepdim=True)  # [B, 1]
    if bool((z <= 0).any()):
        bad = int((z[:, 0] <= 0).nonzero()[0, 0])
        raise CaseError(f"row {bad} {w[bad].tolist()} has zero mass after processing; nothing can be sampled")
    return w / z  # [B, V]


def logit_bias(w: Tensor, factors: Iterable[tuple[int, Any]]) -> Tensor:
    out = w.clone()  # [B, V]
    for t, f in factors:
        out[:, t] *= float(f)
    return out


def repetition(w: Tensor, seen: Tensor, theta: int) -> Tensor:
    """w^θ on the seen tokens ([B, V] bool), valid while every seen weight is ≤ 1 (logit ≤ 0)."""
    if theta == 1:
        return w
    over = seen & (w > 1 + TIE)  # [B, V]
    if bool(over.any()):
        b, t = (int(i) for i in over.nonzero()[0])
        raise CaseError(
            f"repetition penalty on weight {float(w[b, t])} > 1 (a positive logit): its exact value is a root"
        )
    return torch.where(seen, w**theta, w)  # [B, V]


def frequency(w: Tensor, counts: Tensor, rho: Any) -> Tensor:
    return w if rho == 1 else w * float(rho) ** counts.to(w.dtype)  # [B, V]


def presence(w: Tensor, counts: Tensor, pi: Any) -> Tensor:
    return w if pi == 1 else torch.where(counts > 0, w * float(pi), w)  # [B, V]


def argmax(w: Tensor) -> Tensor:
    """The lowest id within TIE·max of the largest weight, per row [B] (`torch.argmax` on the
    mask returns its first maximum)."""
    top = _top(w)  # [B, 1]
    return (w >= top - TIE * top).to(torch.int8).argmax(-1)  # [B]


def one_hot(w: Tensor, t: Tensor) -> Tensor:
    return torch.nn.functional.one_hot(t, w.shape[-1]).to(w.dtype)  # [B, V]


def temperature(w: Tensor, T: Any) -> Tensor:
    """w^(1/T) for 1/T an integer; T = 0: the point mass on the argmax (ties: lower id)."""
    if T == 0:
        return one_hot(w, argmax(w))
    inv = 1 / Fraction(T)
    if inv.denominator != 1:
        raise CaseError(f"temperature={T}; the exact law needs 1/T an integer (or T = 0, greedy)")
    return w if inv == 1 else w ** int(inv)  # [B, V]


def groups(w: Tensor) -> Tensor:
    """Each token's value group [B, V] (0 the smallest), weights within TIE·max of each other one value."""
    vals, idx = w.sort(dim=-1, stable=True)  # [B, V] ascending
    step = vals.diff(dim=-1) > TIE * _top(w)  # [B, V-1] a new value starts
    group = torch.cat([torch.zeros_like(step[:, :1]), step], -1).long().cumsum(-1)  # [B, V]
    return torch.empty_like(group).scatter_(-1, idx, group)  # [B, V]


def ascending(w: Tensor) -> Tensor:
    """Token ids sorted by weight ascending, weights within TIE·max one value, ties by id [B, V]."""
    V = w.shape[-1]
    return (groups(w) * V + torch.arange(V)).argsort(-1)  # [B, V]


def keep_largest(w: Tensor, n: Tensor, ties: str | None, cut: str) -> Tensor:
    """The n [B, 1] largest weights of each row, the rest 0 (`rheo_ref.processing.keep_largest`): a
    cut between tied tokens (> 0) keeps all of them ("all"), the lowest ids ("low") or the highest
    ("high"); with no rule it is refused (`TieError`, naming the row, the tokens and `cut`)."""
    B, V = w.shape
    g, ids = groups(w), torch.arange(V)  # [B, V], [V]
    by_size = (-g * V + ids).argsort(-1)  # [B, V] descending, ties: lower id first
    kth = g.gather(-1, by_size.gather(-1, (n - 1).clamp(0, V - 1)))  # [B, 1] the n-th largest's value group
    tied_all = g >= kth  # [B, V] every token tied with the n-th largest, and those above
    kth_w = w.gather(-1, by_size.gather(-1, (n - 1).clamp(0, V - 1)))  # [B, 1] the n-th largest weight
    split = (tied_all.sum(-1, keepdim=True) > n) & (kth_w > TIE * _top(w))  # [B, 1] (a tie at weight 0 is none)
    if ties is None and bool(split.any()):
        b = int(split[:, 0].nonzero()[0, 0])
        tied = (g[b] == kth[b]).nonzero()[:, 0].tolist()
        prob = float(w[b, tied[0]] / w[b].sum())
        room = int(n[b]) - int((g[b] > kth[b]).sum())
        raise TieError(
            f"row {b}: {cut} cuts between tied tokens {tied} (probability {prob:.6g} each, {room} of {len(tied)} "
            f"kept); name the tie rule: {TIES_HELP}"
        )
    if ties == "all":
        kept = tied_all  # [B, V]
    else:
        order = by_size if ties == "low" else (-g * V + (V - 1 - ids)).argsort(-1)  # [B, V] who goes first
        kept = order.argsort(-1) < n  # [B, V] rank < n
    return torch.where(kept | (n >= V), w, 0.0)  # [B, V]


def top_k(w: Tensor, k: int, ties: Ties = None) -> Tensor:
    """The k largest weights (a cut between tied tokens: the rule `ties` names for top-k); k = 0: off."""
    if k == 0 or k >= w.shape[-1]:
        return w
    n = torch.full((w.shape[0], 1), k)  # [B, 1]
    return keep_largest(w, n, tie_rule(check_ties(ties), "top_k"), f"top_k={k}")


def top_p(w: Tensor, p: Any, ties: Ties = None) -> Tensor:
    """Sort ascending, drop while the cumulative probability ≤ 1 − p (the largest is kept): that
    many largest weights kept (a cut between tied tokens: the rule `ties` names for top-p); p = 1: off."""
    if p == 1:
        return w
    order = ascending(w)  # [B, V]
    cum = (w.gather(-1, order) / w.sum(-1, keepdim=True)).cumsum(-1)  # [B, V]
    drop = cum <= 1 - float(p) + TIE  # [B, V] a prefix (cum is monotone)
    drop[:, -1] = False
    n = w.shape[-1] - drop.sum(-1, keepdim=True)  # [B, 1] tokens kept
    return keep_largest(w, n, tie_rule(check_ties(ties), "top_p"), f"top_p={show_p(p)}")


def min_p(w: Tensor, m: Any) -> Tensor:
    """Drop every weight < m·max (ties with m·max kept); m = 0: off."""
    if m == 0:
        return w
    top = _top(w)  # [B, 1]
    return torch.where(w >= float(m) * top - TIE * top, w, 0.0)  # [B, V]


Step = Callable[[Tensor, Settings, Tensor, Tensor], Tensor]
STEPS: dict[str, Step] = {
    "bias": lambda w, s, counts, seen: logit_bias(w, s.bias),
    "repetition": lambda w, s, counts, seen: repetition(w, seen, s.repetition),
    "frequency": lambda w, s, counts, seen: frequency(w, counts, s.penalty),
    "presence": lambda w, s, counts, seen: presence(w, counts, s.presence),
    "temperature": lambda w, s, counts, seen: normalise(temperature(w, s.temperature)),
    "top_k": lambda w, s, counts, seen: normalise(top_k(w, s.top_k, s.ties)),
    "top_p": lambda w, s, counts, seen: normalise(top_p(w, s.top_p, s.ties)),
    "min_p": lambda w, s, counts, seen: normalise(min_p(w, s.min_p)),
}


def process(
    rows: Tensor,
    s: Settings,
    counts: Tensor | None = None,
    seen: Tensor | None = None,
    *,
    replace: tuple[tuple[str, Step], ...] = (),
) -> Tensor:
    """The processed, normalised rows [B, V]: `s`'s processors (`STEPS`) in `ORDERS[s.order]`.
    `counts` [B, V]: each token's count in the output (frequency, presence; None: zeros); `seen`
    [B, V] bool: the tokens of prompt and output (repetition; None: none). `replace`: (step,
    function) pairs standing in for steps (a mutant's; empty for the correct rows)."""
    w = rows.to(torch.float64)  # [B, V]
    counts = torch.zeros(w.shape, dtype=torch.long) if counts is None else counts
    seen = torch.zeros(w.shape, dtype=torch.bool) if seen is None else seen
    steps = {**STEPS, **dict(replace)}
    for name in ORDERS[s.order]:
        w = steps[name](w, s, counts, seen)
    return normalise(w)


def skipped(w: Tensor, s: Settings, counts: Tensor, seen: Tensor) -> Tensor:
    """A step left out (for `replace`)."""
    return w


__all__ = [
    "ORDERS",
    "PENALTIES",
    "STEPS",
    "TIE",
    "argmax",
    "ascending",
    "frequency",
    "groups",
    "keep_largest",
    "logit_bias",
    "min_p",
    "normalise",
    "one_hot",
    "presence",
    "process",
    "repetition",
    "skipped",
    "temperature",
    "top_k",
    "top_p",
]
