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
| top-k | keep the k largest | a cut between tied tokens: the caller's `ties` rule | `TopKLogitsWarper`, vLLM `apply_top_k_top_p` |
| top-p | sort ascending, drop while the cumulative probability ≤ 1 − p, keep the largest | the n tokens kept are the n largest; a cut between tied tokens: the caller's `ties` rule | `TopPLogitsWarper`, vLLM |
| min-p | drop probability < m·(largest probability) | ties with m·max kept (a threshold never splits tied tokens) | `MinPLogitsWarper`, vLLM `min_p` |

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

Ties at a cut are the caller's to name (`keep_largest`, the one rule for top-k and top-p). Top-k
keeps k tokens and top-p keeps n (how many depends only on the sorted probabilities, never on the
order of tied tokens); when the n-th and (n+1)-th largest are tied, which of the tied tokens a
decoder keeps is its own rule, not the law's: transformers' top-k keeps every tied token (`logits <
kth value` masked), a decoder built on `torch.topk` keeps exactly k, and a sort-based top-p keeps
whatever its sort leaves last. `ties`: "all" (every tied token kept: transformers' top-k), "low" (the
lowest ids among the tied first), "high" (the highest ids first), or a rule per cut ({"top_k": "all",
"top_p": "high"}); None (the default) refuses such a cut with one line naming the row, the tied
tokens, their probability and these options (`TieError`).
A cut where the tied tokens are all kept or all dropped, or tied at probability 0, needs no rule.
A decoder that models an engine declares the engine's rule and the caller names the rest
(`merge_ties`; docs/PROCESSING.md, "Ties", cites each engine's code).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, Protocol

from .errors import CaseError, TieError
from .laws import normalise

Num = Any  # a Fraction (exact law) or a float (samples)
Weights = tuple  # non-negative numbers over the vocabulary, not necessarily normalised
ORDERS = {
    "transformers": ("bias", "repetition", "frequency", "presence", "temperature", "top_k", "top_p", "min_p"),
    "vllm": ("bias", "repetition", "frequency", "presence", "temperature", "min_p", "top_k", "top_p"),
    "sglang": ("bias", "repetition", "frequency", "presence", "temperature", "top_p", "top_k", "min_p"),
}
TIES = ("all", "low", "high")  # who is kept of tokens tied across a top-k / top-p cut (module docstring)
CUTS = ("top_k", "top_p")  # the cuts a tie rule applies to
Ties = str | tuple[tuple[str, str], ...] | None  # one rule for every cut, (cut, rule) pairs, or None
TIES_HELP = (
    'ties="all" (keep every tied token, as transformers\' top-k), "low" (the lowest ids first) or '
    '"high" (the highest ids first)'
)


class Settings(Protocol):
    """What a request sets, as `process` reads it (`Sampling` is the model; any object with these fields
    will do): temperature (0: greedy;
    else 1/T an integer), top_k (0: off), top_p (1: off), min_p (0: off), penalty (frequency ρ,
    1: off), presence (π, 1: off), repetition (θ, 1: off), bias ((token, factor) pairs), order, ties (`TIES`; None: a cut between tied tokens is refused)."""

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

    @property
    def ties(self) -> Ties: ...


@dataclass(frozen=True, kw_only=True)
class Sampling:
    """One request's processing settings: the one model of them, which every layer reads (`rheo.processed`
    builds one, `rheo.decoders.laws.Processing` is its transformers subset, a bug-class `Request` is one with
    the decoder's shape). Fields as `Settings` reads them: temperature (0: greedy; else 1/T an integer),
    top_k (0: off), top_p (1: off), min_p (0: off), penalty (frequency ρ, 1: off), presence (π, 1: off),
    repetition (θ, 1: off), bias ((token, factor) pairs, factor = e^bias, 0 bans), order (`ORDERS`), ties
    (`TIES` at a top-k / top-p cut; None: such a cut refused), greedy_ties (at T = 0, who an argmax picks of
    tied tokens: "low", "high"; None: refused). Keyword-only; a user's values are checked where they come in
    (`rheo.decoders.settings.sampling`, `Request`), not here."""

    temperature: Fraction = Fraction(1)
    top_k: int = 0
    top_p: Fraction = Fraction(1)
    min_p: Fraction = Fraction(0)
    penalty: Fraction = Fraction(1)
    presence: Fraction = Fraction(1)
    repetition: int = 1
    bias: tuple[tuple[int, Fraction], ...] = ()
    order: str = "transformers"
    ties: Ties = None
    greedy_ties: str | None = None

    @property
    def history(self) -> bool:
        """Whether a row depends on the tokens emitted before it (a penalty)."""
        return (self.penalty, self.presence, self.repetition) != (1, 1, 1)

    @property
    def cuts(self) -> bool:
        """Whether a step keeps some tokens and drops others (which a grammar's mask changes)."""
        return self.temperature == 0 or self.top_k > 0 or self.top_p < 1 or self.min_p > 0


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


def check_ties(ties: Any) -> Ties:
    """`ties` in its one hashable form: None (refuse a cut between tied tokens), one of `TIES` (every
    cut), or a rule per cut (a mapping or (cut, rule) pairs, cuts from `CUTS`) as sorted pairs."""
    allowed = (
        f"allowed: {', '.join(TIES)}, a rule per cut such as {{'top_k': 'all', 'top_p': 'high'}}, or None "
        "(a cut between tied tokens refused)"
    )
    if ties is None or (isinstance(ties, str) and ties in TIES):
        return ties
    if isinstance(ties, str):
        raise CaseError(f"ties={ties!r}; {allowed}")
    try:
        pairs = sorted(dict(ties.items() if isinstance(ties, Mapping) else ties).items())
    except (TypeError, ValueError):
        raise CaseError(f"ties={ties!r}; {allowed}") from None
    if not pairs or any(c not in CUTS or not isinstance(r, str) or r not in TIES for c, r in pairs):
        raise CaseError(f"ties={ties!r}; {allowed}")
    return tuple(pairs)


def tie_rule(ties: Ties, cut: str) -> str | None:
    """The rule `ties` names for `cut` ("top_k" or "top_p"); None: none named."""
    if ties is None or isinstance(ties, str):
        return ties
    return dict(ties).get(cut)


def merge_ties(default: Any, given: Any) -> Ties:
    """The rule per cut of `given` (the caller's), `default`'s (an engine's own) where `given` names
    none: a decoder that models an engine declares the engine's rule and the caller names the rest."""
    d, g = check_ties(default), check_ties(given)
    rules = {c: tie_rule(g, c) or tie_rule(d, c) for c in CUTS}
    named = tuple((c, r) for c, r in rules.items() if r is not None)
    if not named:
        return None
    return named[0][1] if len(named) == len(CUTS) and len({r for _, r in named}) == 1 else named


def keep_largest(w: Weights, n: int, ties: str | None, *, cut: str, where: str = "row") -> Weights:
    """The n largest weights of `w`, the rest set to 0 (n >= len(w): all kept). Where the n-th and
    (n+1)-th largest are tied (and > 0) the cut falls between tied tokens: `ties` names who is kept
    ("all", "low", "high"; module docstring), None refuses it (`TieError`, naming `where`, the tied
    tokens, their probability and `cut`, the setting that made it)."""
    check_ties(ties)  # (one rule here: `top_k` / `top_p` pick theirs with `tie_rule`)
    if n >= len(w):
        return w
    by_size = sorted(range(len(w)), key=lambda i: -w[i])  # ties: lower id first (stable)
    kth = w[by_size[n - 1]]
    if not kth or w[by_size[n]] != kth:  # no positive tie across the cut
        keep = set(by_size[:n])
    else:
        tied = [i for i in range(len(w)) if w[i] == kth]
        above = [i for i in range(len(w)) if w[i] > kth]
        room = n - len(above)  # tied tokens the cut has room for: 1 <= room < len(tied)
        if ties is None:
            raise TieError(
                f"{where}: {cut} cuts between tied tokens {tied} (probability {kth / sum(w)} each, "
                f"{room} of {len(tied)} kept); name the tie rule: {TIES_HELP}"
            )
        chosen = tied if ties == "all" else tied[:room] if ties == "low" else tied[len(tied) - room :]
        keep = set(above) | set(chosen)
    return tuple(x if i in keep else 0 * x for i, x in enumerate(w))


def top_k(w: Weights, k: int, ties: Ties = None, *, where: str = "row") -> Weights:
    """The k largest weights (a cut between tied tokens: `ties`, `keep_largest`); k = 0: off."""
    if k == 0 or k >= len(w):
        return w
    return keep_largest(w, k, tie_rule(check_ties(ties), "top_k"), cut=f"top_k={k}", where=where)


def top_p_count(w: Weights, p: Num) -> int:
    """How many tokens top-p keeps: sort ascending, drop while the cumulative probability ≤ 1 − p,
    the largest always kept. The count depends on the sorted weights only, not on tied tokens' order."""
    z = sum(w)
    cum, dropped = 0 * z, 0
    for x in sorted(w)[:-1]:
        cum += x / z
        if cum > 1 - p:
            break
        dropped += 1
    return len(w) - dropped


def show_p(p: Num) -> str:
    """A top-p (min-p) value as a message names it: a short rational as one (7/10), else its float (0.72)."""
    if isinstance(p, Fraction) and p.denominator <= 10**6:
        return str(p)
    return f"{float(p):g}"


def top_p(w: Weights, p: Num, ties: Ties = None, *, where: str = "row") -> Weights:
    """The `top_p_count` largest weights (a cut between tied tokens: `ties`, `keep_largest`); p = 1: off."""
    if p == 1:
        return w
    return keep_largest(
        w, top_p_count(w, p), tie_rule(check_ties(ties), "top_p"), cut=f"top_p={show_p(p)}", where=where
    )


def min_p(w: Weights, m: Num) -> Weights:
    """Drop every weight < m·max (ties with m·max kept: a threshold keeps or drops tied tokens
    together, so min-p needs no tie rule); m = 0: off."""
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
    "top_k": lambda w, s, counts, seen: normalise(top_k(w, s.top_k, s.ties)),
    "top_p": lambda w, s, counts, seen: normalise(top_p(w, like(w, s.top_p), s.ties)),
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
    where: str = "row",
) -> Weights:
    """The processed, normalised row: `s`'s processors (`STEPS`) in `ORDERS[s.order]` (module
    docstring). `counts`: each token's count in the output (frequency, presence); `seen`: the tokens
    of prompt and output (repetition). `replace`: (step, function) pairs standing in for steps (a
    mutant's; empty for the correct row). `where`: the row's name in a refusal (`TieError`)."""
    steps = {**STEPS, **dict(replace)}
    seen = tuple(seen)
    w = tuple(row)
    try:
        for name in ORDERS[s.order]:
            w = steps[name](w, s, counts, seen)
    except TieError as e:  # the steps name the row "row"; the caller knows which
        raise TieError(f"{where}{str(e).removeprefix('row')}") from None
    return normalise(w)


def skipped(w: Weights, s: Settings, counts: Sequence[int], seen: Iterable[int]) -> Weights:
    """A step left out (for `replace`)."""
    return w


__all__ = [
    "CUTS",
    "ORDERS",
    "PENALTIES",
    "STEPS",
    "TIES",
    "TIES_HELP",
    "Sampling",
    "Settings",
    "Ties",
    "argmax",
    "check_ties",
    "frequency",
    "keep_largest",
    "logit_bias",
    "merge_ties",
    "min_p",
    "normalise",
    "one_hot",
    "presence",
    "process",
    "repetition",
    "show_p",
    "skipped",
    "temperature",
    "tie_rule",
    "top_k",
    "top_p",
    "top_p_count",
]
