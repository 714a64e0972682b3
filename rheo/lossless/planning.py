"""What a downstream decoder author needs beside the gate (docs/GATE.md "What you import"): the
exact target law, the exact TV and the sample planner, all pure Python (the processed target,
`rheo.processed`, is `rheo.decoders.laws.processed`)."""

from __future__ import annotations

from fractions import Fraction

from rheo.lossless.stats import DEFAULT_BETA, samples_for
from rheo_ref.exact import Law, target_law
from rheo_ref.exact import tv as _tv
from rheo_ref.models import Case


def tv(a: Law, b: Law) -> Fraction:
    """Exact total-variation distance between two laws (dicts of token tuples to Fractions)."""
    return _tv(a, b)


def plan_samples(case: Case, *, alpha: float, tv: float, beta: float = DEFAULT_BETA, tokens: int | None = None) -> int:
    """N that `assert_lossless` draws for `case`: the first `tokens` (default `case.tokens`) tokens'
    target law is tested at level α and detects TV ≥ `tv` with power ≥ 1 − β."""
    return samples_for(target_law(case, case.tokens if tokens is None else tokens), tv, alpha, beta)


__all__ = ["plan_samples", "target_law", "tv"]
