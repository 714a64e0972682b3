"""What a downstream decoder author needs beside the gate (docs/GATE.md "What you import"): the
processed target, the exact target law, the exact TV and the sample planner, all pure Python."""

from __future__ import annotations

from fractions import Fraction

from rheo_ref.exact import Law, target_law
from rheo_ref.exact import tv as _tv
from rheo_ref.models import Case

from .hf_laws import Processing
from .stats import DEFAULT_BETA, samples_for


def processed(
    case: Case, *, temperature: float | None = None, top_k: int | None = None, top_p: float | None = None
) -> Case:
    """The case whose target p (and draft q) are processed as transformers' sampling does it:
    temperature (1/k only: rows to the power k), then top-k, then top-p, exactly in rationals. A
    boundary that float rounding would decide is refused (`rheo.hf_laws.Processing`)."""
    gen = {k: v for k, v in (("temperature", temperature), ("top_k", top_k), ("top_p", top_p)) if v is not None}
    return Processing.from_gen(gen).case(case)


def tv(a: Law, b: Law) -> Fraction:
    """Exact total-variation distance between two laws (dicts of token tuples to Fractions)."""
    return _tv(a, b)


def plan_samples(case: Case, *, alpha: float, tv: float, beta: float = DEFAULT_BETA, tokens: int | None = None) -> int:
    """N that `assert_lossless` draws for `case`: the first `tokens` (default `case.tokens`) tokens'
    target law is tested at level α and detects TV ≥ `tv` with power ≥ 1 − β."""
    return samples_for(target_law(case, case.tokens if tokens is None else tokens), tv, alpha, beta)


__all__ = ["plan_samples", "processed", "target_law", "tv"]
