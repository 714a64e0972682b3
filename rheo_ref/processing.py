"""Logits processing, exactly: every setting a served request can carry, in one place
(docs/PROCESSING.md).

A row here is a tuple of non-negative weights over the vocabulary (Fractions for exact laws,
floats for samplers: the code is the same), read as logits = log(weight). Each processor is what
the named library does to logits, written on weights:

| processor | on logits | on weights | library |
|---|---|---|---|
| logit bias b_t | logit + b_t | w·f_t, f_t = e^(b_t) given as a rational factor (0: banned) | vLLM `logit_bias`, transformers `sequence_bias` (one-token sequences) |
| repetition θ | logit/θ if > 0, else logit·θ, on tokens of prompt or output | w^θ (θ an integer; the row normalised, so every logit ≤ 0) | `RepetitionPenaltyLogitsProcessor`, vLLM `repetition_penalty` |
| frequency ρ | logit − c·ln(1/ρ), c = count in the output | w·ρ^c | vLLM `frequency_penalty` |
| presence π | logit − ln(1/π) if the token is in the output | w·π | vLLM `presence_penalty` |
| temperature T | logit/T | w^(1/T) (1/T an integer); T = 0: the argmax, ties to the lower id | `TemperatureLogitsWarper`, vLLM |
| top-k | keep logits ≥ the k-th largest | ties with the k-th value all kept | `TopKLogitsWarper`, vLLM `apply_top_k_top_p` |
| top-p | sort ascending, drop while the cumulative probability ≤ 1 − p, keep the largest | ties in the ascending sort broken by token id (lower id first, so dropped first) | `TopPLogitsWarper`, vLLM |
| min-p | drop probability < m·(largest probability) | ties with m·max kept | `MinPLogitsWarper`, vLLM `min_p` |

Orders (`ORDERS`): transformers (`GenerationMixin._get_logits_processor`): bias, repetition,
(frequency, presence: not in transformers; where vLLM has them), temperature, top-k, top-p,
min-p. SGLang (its fixed sampling paths): top-p's cut-off from the row before top-k, then
top-k, i.e. the intersection of the two supports ("joint"). vLLM v1 (`Sampler`: logits processors, then penalties, then temperature, then the
argmax-invariant min-p, then `apply_top_k_top_p`): bias, repetition, frequency, presence,
temperature, min-p, top-k, top-p. Top-p and min-p read the row renormalised after what came
before them (both libraries soft-max the masked logits). Greedy (T = 0) takes the argmax after
bias and penalties.

Exact ties: every cut-off above compares exact numbers, so a tie is a tie (floats would decide
it by rounding; `rheo.decoders.laws` refuses a case whose cut-off float rounding could decide).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from fractions import Fraction
from typing import Any, Protocol

from .errors import CaseError
from .laws import normalise

Num = Any  # a Fraction (exact law) or a float (samples)
Weights = tuple  # non-negative numbers over the vocabulary, not necessarily normalised
ORDERS = {
    "transformers": ("bias", "repetition", "frequency", "presence", "temperature", "top_k", "top_p", "min_p"),
    "vllm": ("bias", "repetition", "frequency", "presence", "temperature", "min_p", "top_k", "top_p"),
    "sglang": ("bias", "repetition", "frequency", "presence", "temperature", "top_p", "top_k", "min_p"),
}


class Settings(Protocol):
    """What a request sets (`rheo_ref.bugclasses.decoder.Request` is one): temperature (0: greedy;
    else 1/T an integer), top_k (0: off), top_p (1: off), min_p (0: off), penalty (frequency ρ,
    1: off), presence (π, 1: off), repetition (θ, 1: off), bias ((token, factor) pairs), order."""

    @property
    def temperature(self) -> Fraction: ...

    @property
    def top_k(self) -> int: ...

    @property
    def top_p(self) -> Fraction: ...

    @property
    def min_p(self) -> Fraction: ...

    @property
    def penalty(self) -> Fraction: ...

    @property
    def presence(self) -> Fraction: ...

    @property
    def repetition(self) -> int: ...

    @property
    def bias(self) -> tuple[tuple[int, Fraction], ...]: ...

    @property
    def order(self) -> str: ...


def logit_bias(w: Weights, factors: Iterable[tuple[int, Num]]) -> Weights:
    out = list(w)
    for t, f in factors:
        out[t] = out[t] * f
    return tuple(out)


def repetition(w: Weights, seen: Iterable[int], theta: int) -> Weights:
    """logit·θ on the seen tokens: w^θ, valid while every seen logit is ≤ 0 (w ≤ 1)."""
    if theta == 1:
        return w
    out = list(w)
    for t in set(seen):
        if out[t] > 1:
            raise CaseError(f"repetition penalty on weight {out[t]} > 1 (a positive logit): its exact value is a root")
        out[t] = out[t] ** theta
    return tuple(out)


def frequency(w: Weights, counts: Sequence[int], rho: Num) -> Weights:
    return w if rho == 1 else tuple(x * rho ** counts[i] for i, x in enumerate(w))


def presence(w: Weights, counts: Sequence[int], pi: Num) -> Weights:
    return w if pi == 1 else tuple(x * pi if counts[i] else x for i, x in enumerate(w))


def temperature(w: Weights, T: Fraction) -> Weights:
    """w^(1/T) for 1/T an integer; T = 0: the point mass on the argmax (ties: lower id)."""
    if T == 0:
        return one_hot(w, argmax(w))
    inv = 1 / Fraction(T)
    if inv.denominator != 1:
        raise CaseError(f"temperature={T}; the exact law needs 1/T an integer (or T = 0, greedy)")
    power = int(inv)
    return w if power == 1 else tuple(x**power for x in w)


def top_k(w: Weights, k: int) -> Weights:
    """Keep every weight ≥ the k-th largest (ties with it kept); k = 0: off."""
    if k == 0 or k >= len(w):
        return w
    kth = sorted(w, reverse=True)[k - 1]
    return tuple(x if x >= kth else 0 * x for x in w)


def top_p(w: Weights, p: Num) -> Weights:
    """Sort ascending (ties: lower id first), drop while the cumulative probability ≤ 1 − p; the
    largest is kept; p = 1: off."""
    if p == 1:
        return w
    z = sum(w)
    order = sorted(range(len(w)), key=lambda i: (w[i], i))
    out, cum = list(w), 0 * z
    for i in order[:-1]:
        cum += w[i] / z
        if cum > 1 - p:
            break
        out[i] = 0 * w[i]
    return tuple(out)


def min_p(w: Weights, m: Num) -> Weights:
    """Drop every weight < m·max (ties with m·max kept); m = 0: off."""
    if m == 0:
        return w
    cut = m * max(w)
    return tuple(x if x >= cut else 0 * x for x in w)


def argmax(w: Weights) -> int:
    best = max(w)
    return next(i for i, x in enumerate(w) if x == best)


def one_hot(w: Weights, t: int) -> Weights:
    return tuple(x * 0 + (1 if i == t else 0) for i, x in enumerate(w))


def like(w: Weights, x: Any) -> Num:
    """`x` in the number type of the row (floats for samples, Fractions for exact laws)."""
    return float(x) if w and isinstance(w[0], float) else x


STEPS: dict[str, Callable[[Weights, Settings, Sequence[int], Iterable[int]], Weights]] = {
    "bias": lambda w, s, counts, seen: logit_bias(w, ((t, like(w, f)) for t, f in s.bias)),
    "repetition": lambda w, s, counts, seen: repetition(w, seen, s.repetition),
    "frequency": lambda w, s, counts, seen: frequency(w, counts, like(w, s.penalty)),
    "presence": lambda w, s, counts, seen: presence(w, counts, like(w, s.presence)),
    "temperature": lambda w, s, counts, seen: normalise(temperature(w, s.temperature)),
    "top_k": lambda w, s, counts, seen: normalise(top_k(w, s.top_k)),
    "top_p": lambda w, s, counts, seen: normalise(top_p(w, like(w, s.top_p))),
    "min_p": lambda w, s, counts, seen: normalise(min_p(w, like(w, s.min_p))),
}
PENALTIES = frozenset({"repetition", "frequency", "presence"})


def process(
    row: Weights,
    s: Settings,
    counts: Sequence[int],
    seen: Iterable[int] = (),
    *,
    replace: tuple[tuple[str, Callable], ...] = (),
) -> Weights:
    """The processed, normalised row: `s`'s processors (`STEPS`) in `ORDERS[s.order]` (module
    docstring). `counts`: each token's count in the output (frequency, presence); `seen`: the tokens
    of prompt and output (repetition). `replace`: (step, function) pairs standing in for steps (a
    mutant's; empty for the correct row)."""
    steps = {**STEPS, **dict(replace)}
    seen = tuple(seen)
    w = tuple(row)
    for name in ORDERS[s.order]:
        w = steps[name](w, s, counts, seen)
    return normalise(w)


def skipped(w: Weights, s: Settings, counts: Sequence[int], seen: Iterable[int]) -> Weights:
    """A step left out (for `replace`)."""
    return w


__all__ = [
    "ORDERS",
    "PENALTIES",
    "STEPS",
    "Settings",
    "argmax",
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
