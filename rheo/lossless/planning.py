"""What a downstream decoder author needs beside the gate (docs/GATE_REFERENCE.md "What you import"): the
exact target law, the exact TV and the sample planner, all pure Python (the processed target,
`rheo.processed`, is `rheo.decoders.settings.processed`)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction

from rheo.lossless import validate
from rheo.lossless.stats import DEFAULT_BETA, check_case, chi2_samples, law_detectable_tv, law_samples
from rheo.lossless.windows import check_horizon
from rheo_ref.errors import StatsError
from rheo_ref.exact import DEFAULT_MAX_LAW_SIZE, Law, check_law_size
from rheo_ref.exact import target_law as _target_law
from rheo_ref.exact import tv as _tv
from rheo_ref.models import Case
from rheo_ref.validate import index


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


def total_variation(a: Law, b: Law) -> Fraction:
    """Exact total-variation distance between two laws (dicts of token tuples to Fractions)."""
    validate.exact_law(a)
    validate.exact_law(b)
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
    force: bool = False,
    sequential: bool = False,
) -> int:
    """N that `check_lossless` / `assert_lossless` draws: for a case, with the same arguments (the
    first `tokens` tokens, default `case.tokens`, or the horizon test's windows), checked as they
    check them (`force=True` lifts the size limits); for an exact law (a dict of token tuples to
    Fractions), the N at which `check_law` detects TV ≥ `tv` of that full law with power ≥ 1 − β
    at level α (docs/STATISTICS.md, "What the statistics promise"). `sequential=True`: the N of the
    sequential gate's last look (planned at its level, `rheo.lossless.sequential.final_alpha`), the
    most `check_lossless(..., sequential=True)` draws."""
    from rheo.lossless.gate import check_switches, tokens_or_horizon

    alpha, beta, tv = validate.gate_rates(alpha, beta, tv)
    check_switches(horizon=horizon, rounds=rounds, force=force, sequential=sequential)  # (the gate's own check)
    if sequential:
        from rheo.lossless.sequential import final_alpha

        alpha = final_alpha(alpha)
    if isinstance(target, Case):
        check_case(target)
        tokens_or_horizon(tokens, horizon)
        if horizon is not None:
            from rheo.lossless.horizon import plan

            validate.gate_size(
                target, 1, needed=chi2_samples(tv, alpha, beta, 2), alpha=alpha, tv=tv, beta=beta, force=force
            )
            p = plan(
                target,
                check_horizon(horizon),
                alpha=alpha,
                tv=tv,
                beta=beta,
                rounds=rounds,
                limit=validate.sample_limit(force),
            )
            return validate.planned_samples(p.n, alpha=p.alpha_each, tv=tv, beta=beta, force=force)
        n_tok = target.tokens if tokens is None else validate.whole("tokens", tokens, min=1)
        validate.gate_size(
            target, n_tok, needed=chi2_samples(tv, alpha, beta, 2), alpha=alpha, tv=tv, beta=beta, force=force
        )
        n = law_samples(_target_law(target, n_tok), tv, alpha, beta, limit=validate.sample_limit(force))
        return validate.planned_samples(n, alpha=alpha, tv=tv, beta=beta, force=force)
    if isinstance(target, Mapping):
        if tokens is not None or horizon is not None or rounds:
            raise StatsError("tokens=, horizon= and rounds= apply to a case; an exact law is planned as it is")
        return law_samples(validate.exact_law(target), tv, alpha, beta)
    raise StatsError(f"plan_samples needs a Case or an exact law (a dict of token tuples to Fractions), got {target!r}")


def detectable_tv(
    law: Mapping[tuple[int, ...], Fraction], n: int, *, alpha: float, beta: float = DEFAULT_BETA
) -> float:
    """The smallest TV of the full law (every outcome, none pooled) that `check_law` with `n`
    samples detects with power ≥ 1 − β at level α, as proved at that n (docs/STATISTICS.md, "What the
    statistics promise")."""
    alpha, beta = validate.rates(alpha, beta)
    validate.exact_law(law)
    return law_detectable_tv(law, validate.whole("n", n, min=1), alpha, beta)


__all__ = ["detectable_tv", "plan_samples", "target_law", "total_variation"]


def __getattr__(name: str) -> object:
    """The deprecated `tv` (PEP 562; a second spelling of `rheo.tv`): `rheo.deprecated` has its row."""
    from rheo import deprecated

    return deprecated.attribute(__name__, name, {"tv": lambda: total_variation})
