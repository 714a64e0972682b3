"""Logits processing on the fast path: `rheo_ref.processing` (docs/PROCESSING.md) vectorised over a
batch of rows, float64 torch, the same processors, orders and tie rules under the same names.

A row is a tensor of non-negative weights [B, V] (logits = log(weight)); a step returns the rows it
acts on, and the steps that renormalise in the reference renormalise here. Settings are the
reference's (`rheo_ref.processing.Settings`, e.g. `rheo_ref.bugclasses.decoder.Request`): one set
for the whole batch; the penalties' state is per row (`counts` [B, V], `seen` [B, V] bool).

Exact ties in floats. The reference compares exact numbers, so a tie is a tie; here a processed row
is the exact row rounded a few times, and an exact tie can come out as two floats one ulp apart.
Every cut-off therefore treats numbers within `TIE` · (the row's largest weight) as equal: top-k
keeps every weight ≥ the k-th largest − TIE·max, min-p every weight ≥ m·max − TIE·max, greedy takes
the lowest id within TIE·max of the largest; top-p sorts ascending with weights within TIE·max of
each other grouped as one value (ties broken by token id, the lower id first, as the reference) and
drops while the cumulative probability ≤ 1 − p + TIE. The rounding of these few float64 operations
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

from rheo_ref.errors import CaseError
from rheo_ref.processing import ORDERS, PENALTIES, Settings

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


def top_k(w: Tensor, k: int) -> Tensor:
    """Keep every weight ≥ the k-th largest (ties with it kept); k = 0: off."""
    if k == 0 or k >= w.shape[-1]:
        return w
    kth = w.topk(k, -1).values[:, k - 1 :]  # [B, 1]
    return torch.where(w >= kth - TIE * _top(w), w, 0.0)  # [B, V]


def ascending(w: Tensor) -> Tensor:
    """Token ids sorted by weight ascending, weights within TIE·max one value, ties by id [B, V]."""
    B, V = w.shape
    vals, idx = w.sort(dim=-1, stable=True)  # [B, V] ascending, ties by id
    step = vals.diff(dim=-1) > TIE * _top(w)  # [B, V-1] a new value starts
    group = torch.cat([torch.zeros_like(step[:, :1]), step], -1).long().cumsum(-1)  # [B, V]
    key = torch.empty_like(group).scatter_(-1, idx, group) * V + torch.arange(V)  # [B, V] (value, id)
    return key.argsort(-1)  # [B, V]


def top_p(w: Tensor, p: Any) -> Tensor:
    """Sort ascending (ties: lower id first), drop while the cumulative probability ≤ 1 − p; the
    largest is kept; p = 1: off."""
    if p == 1:
        return w
    order = ascending(w)  # [B, V]
    cum = (w.gather(-1, order) / w.sum(-1, keepdim=True)).cumsum(-1)  # [B, V]
    drop = cum <= 1 - float(p) + TIE  # [B, V] a prefix (cum is monotone)
    drop[:, -1] = False
    return w.scatter(-1, order, torch.where(drop, 0.0, w.gather(-1, order)))  # [B, V]


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
    "top_k": lambda w, s, counts, seen: normalise(top_k(w, s.top_k)),
    "top_p": lambda w, s, counts, seen: normalise(top_p(w, s.top_p)),
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
