"""What a downstream decoder author needs beside the gate (docs/GATE.md "What you import"): the
processed target, the exact target law, the exact TV and the sample planner, all pure Python."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from fractions import Fraction

from rheo_ref.errors import StatsError
from rheo_ref.exact import Law, target_law
from rheo_ref.exact import tv as _tv
from rheo_ref.models import Case

from .hf_laws import Processing
from .stats import DEFAULT_BETA, _check_rate, law_detectable_tv, samples_for


def processed(
    case: Case, *, temperature: float | None = None, top_k: int | None = None, top_p: float | None = None
) -> Case:
    """The case whose target p (and draft q) are processed as transformers' sampling does it:
    temperature (1/k only: rows to the power k), then top-k, then top-p, exactly in rationals. A
    boundary that float rounding would decide is refused (`rheo.hf_laws.Processing`)."""
    gen = {k: v for k, v in (("temperature", temperature), ("top_k", top_k), ("top_p", top_p)) if v is not None}
    return Processing.from_gen(gen).case(case)


def total_variation(a: Law, b: Law) -> Fraction:
    """Exact total-variation distance between two laws (dicts of token tuples to Fractions)."""
    return _tv(a, b)


def tv(a: Law, b: Law) -> Fraction:
    """Deprecated spelling of `total_variation` (`tv=` is the detectable distance δ everywhere else)."""
    warnings.warn("rheo.tv is deprecated; use rheo.total_variation", DeprecationWarning, stacklevel=2)
    return _tv(a, b)


def plan_samples(
    target: Case | Mapping[tuple[int, ...], Fraction],
    *,
    alpha: float,
    tv: float,
    beta: float = DEFAULT_BETA,
    tokens: int | None = None,
    horizon: int | None = None,
    rounds: bool = False,
) -> int:
    """N that `check_lossless` / `assert_lossless` draws: for a case, with the same arguments (the
    first `tokens` tokens, default `case.tokens`, or the horizon test's windows); for an exact law
    (a dict of token tuples to Fractions), the N at which `check_law` detects TV ≥ `tv` of that full
    law with power ≥ 1 − β at level α (docs/GATE.md, "What the statistics promise")."""
    if isinstance(target, Case):
        if horizon is not None:
            if tokens is not None:
                raise StatsError(f"tokens={tokens!r} and horizon={horizon!r}: give one (a horizon test reads H tokens)")
            from .horizon import plan

            a, b, d = _check_rate("alpha", alpha), _check_rate("beta", beta), _check_rate("tv", tv)
            return plan(target, horizon, alpha=a, tv=d, beta=b, rounds=rounds).n
        n_tok = target.tokens if tokens is None else tokens
        if isinstance(n_tok, bool) or not isinstance(n_tok, int) or n_tok < 1:
            raise StatsError(f"tokens={n_tok!r} must be an integer >= 1")
        return samples_for(target_law(target, n_tok), tv, alpha, beta)
    if isinstance(target, Mapping):
        if tokens is not None or horizon is not None or rounds:
            raise StatsError("tokens=, horizon= and rounds= apply to a case; an exact law is planned as it is")
        return samples_for(target, tv, alpha, beta)
    raise StatsError(f"plan_samples needs a Case or an exact law (a dict of token tuples to Fractions), got {target!r}")


def detectable_tv(
    law: Mapping[tuple[int, ...], Fraction], n: int, *, alpha: float, beta: float = DEFAULT_BETA
) -> float:
    """The smallest TV of the full law that `check_law` with `n` samples detects with power ≥ 1 − β
    at level α (the tested cells' plus the pooled mass)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise StatsError(f"n={n!r} must be an integer >= 1 (the number of samples)")
    return law_detectable_tv(law, n, _check_rate("alpha", alpha), _check_rate("beta", beta))


__all__ = ["detectable_tv", "plan_samples", "processed", "target_law", "total_variation"]
