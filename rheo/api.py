"""What a downstream decoder author needs beside the gate (docs/GATE.md "What you import"): the
processed target, the exact target law, the exact TV and the sample planner, all pure Python."""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from rheo_ref.exact import DEFAULT_MAX_LAW_SIZE, Law, check_law_size
from rheo_ref.exact import target_law as _target_law
from rheo_ref.exact import tv as _tv
from rheo_ref.models import Case
from rheo_ref.validate import index

from .hf_laws import Processing
from .lossless import validate
from .stats import DEFAULT_BETA, check_case, gate_rates, min_num_samples, samples_for


def processed(
    case: Case, *, temperature: float | None = None, top_k: int | None = None, top_p: float | None = None
) -> Case:
    """The case whose target p (and draft q) are processed as transformers' sampling does it:
    temperature (1/k only: rows to the power k), then top-k, then top-p, exactly in rationals. A
    boundary that float rounding would decide is refused (`rheo.hf_laws.Processing`)."""
    gen = {k: v for k, v in (("temperature", temperature), ("top_k", top_k), ("top_p", top_p)) if v is not None}
    return Processing.from_gen(gen).case(case)


def target_law(case: Case, n: int | None = None, context: Sequence[int] | None = None, *, force: bool = False) -> Law:
    """The exact law p(s_1..s_n | context) of the first `n` tokens (default `case.tokens`) from
    `context` (default the case's), zero entries omitted. `n` >= 1 and the context's tokens are
    checked; a law over `rheo exact`'s size limit (b^n sequences x n tokens > 10^7) is refused up
    front (`force=True` computes it anyway)."""
    check_case(case)
    n = case.tokens if n is None else index("n", n, min=1)
    if not force:
        check_law_size(case, n, DEFAULT_MAX_LAW_SIZE, name="n", override="use a smaller n, or force=True to run anyway")
    return _target_law(case, n, context)


def tv(a: Law, b: Law) -> Fraction:
    """Exact total-variation distance between two laws (dicts of token tuples to Fractions)."""
    return _tv(a, b)


def plan_samples(
    case: Case, *, alpha: float, tv: float, beta: float = DEFAULT_BETA, tokens: int | None = None, force: bool = False
) -> int:
    """N that `assert_lossless` draws for `case`: the first `tokens` (default `case.tokens`) tokens'
    target law is tested at level α and detects TV ≥ `tv` with power ≥ 1 − β. The arguments and
    sizes are checked as `assert_lossless` checks them (`force=True` lifts the size limits)."""
    check_case(case)
    alpha, beta, tv = gate_rates(alpha, beta, tv, "pearson")
    n_tok = case.tokens if tokens is None else validate.whole("tokens", tokens, min=1)
    validate.gate_size(
        case, n_tok, needed=min_num_samples(tv, alpha, beta, 2), alpha=alpha, tv=tv, beta=beta, force=bool(force)
    )
    return samples_for(_target_law(case, n_tok), tv, alpha, beta)


__all__ = ["plan_samples", "processed", "target_law", "tv"]
