"""Statistical tests of losslessness: the χ²/G goodness-of-fit trio (after
tensorflow_probability's `statistical_testing.py`; docs/STATISTICS.md, "What the statistics promise").

A sampler's outcomes are compared with an exact law (a dict from token tuples to `Fraction`s):
- `assert_law` (the assertion), `min_detectable_tv` (what N samples detect),
  `min_num_samples` (N needed to detect a total-variation distance δ). Error rates are
  arguments: α is the false-alarm probability, β the miss probability at TV = δ.
- Power: under an alternative P the Pearson statistic is approximately noncentral χ² with
  k−1 degrees of freedom and λ = N·χ²(P‖p); by Cauchy–Schwarz χ²(P‖p) ≥ 4·TV(P, p)², so
  λ ≥ 4Nδ², and N = ⌈λ*(k−1, α, β/margin)/(4δ²)⌉ where λ* solves
  P(χ'²_{k−1}(λ*) > χ²_{k−1,1−α}) = 1−β/margin. The approximation is asymptotic: simulated at
  N ≈ 10^4–10^5 and k ≤ 266 it overstates the power at the worst-case alternative by up to
  ~0.01 (0.981 for a claimed 0.99), so `margin` (default 2, i.e. the formula is solved for
  power 1−β/2) keeps the *realised* power ≥ 1−β; tests/lossless/test_stats.py measures it. margin=1
  is the textbook formula.
- Cells whose expected count is below `MIN_EXPECTED` (10) are pooled into one cell, so the
  χ² reference holds far into its tail (at α ~ 1e-6 a lone cell of expected count 5 would
  cross the critical value on its own too often). The power statement is about the **full**
  law all the same: TV(P, p) ≤ TV(P′, p′) + p(pooled), so `detectable_tv` is the cells' plus the
  pooled mass (`law_detectable_tv`), and `samples_for` plans the least N at which that is ≤ δ.
  A sample on an outcome of exact probability 0 rejects outright (impossible under the null).
- α: no null is simulated: the p-value is a proved upper bound (the exact set test, or the
  Chernoff bound of the weighted χ², `rheo.lossless.promise`), printed as `p≤…`, so a small value
  is never a simulation's floor 1/(M+1); the record says which test decided (`LawTest.null`).
- `check_first_tokens` applies this to the first n tokens of a decoder against the target law
  (`rheo.check_lossless` / `rheo.assert_lossless`); `rheo.selfgate.matrix.fast_verdict` does it for the fast
  path (the `rheo audit` column).
"""

from __future__ import annotations

import hashlib
import math
import os
import random
from bisect import bisect_right
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, replace
from fractions import Fraction
from functools import lru_cache
from itertools import accumulate
from typing import Any

from rheo.lossless import validate
from rheo.lossless.cells import (
    MIN_EXPECTED as MIN_EXPECTED,  # (part of this module's interface: the gate's pooling threshold)
)
from rheo.lossless.cells import pool_cells
from rheo.lossless.diagnosis import Cell, Conditional, top_cells, worst_conditional
from rheo_ref.errors import LosslessError, StatsError
from rheo_ref.models import Case
from rheo_ref.validate import show

Law = Mapping[tuple[int, ...], Fraction]
Sampler = Callable[[Case, int, int], Iterable[Sequence[int]]]

STATISTICS = ("pearson",)  # the floored unbiased Pearson statistic: the one with a finite-N proof
DEFAULT_BETA = 0.01
MARGIN = 2.0  # the noncentrality is solved for miss probability β / MARGIN (see the docstring)


# --- the trio ------------------------------------------------------------------------------


def _check_cells(cells: Any) -> int:
    if isinstance(cells, bool) or not isinstance(cells, int) or cells < 2:
        raise StatsError(f"cells={cells!r} must be an integer >= 2 (a χ² test over k cells has k-1 degrees of freedom)")
    return cells


@lru_cache(maxsize=4096)
def noncentrality(df: int, alpha: float, beta: float) -> float:
    """λ* with P(χ'²_df(λ*) > χ²_{df,1−α}) = 1−β: the noncentrality a level-α test detects with power 1−β.
    α and β are its callers' (`min_num_samples`, `min_detectable_tv`), checked there by `validate.rates`
    (which also refuses α ≥ 1 − β: power 1 − β already at λ = 0, no root to find)."""
    from scipy.optimize import brentq
    from scipy.stats import chi2, ncx2

    crit = chi2.isf(alpha, df)
    hi = 1.0
    while ncx2.sf(crit, df, hi) < 1 - beta:
        hi *= 2
    return float(brentq(lambda lam: ncx2.sf(crit, df, lam) - (1 - beta), 0.0, hi, xtol=1e-10, rtol=1e-12))


def _check_margin(margin: Any) -> float:
    if isinstance(margin, bool) or not isinstance(margin, (int, float)) or not margin >= 1:
        raise StatsError(f"margin={margin!r} must be a number >= 1 (1: the textbook formula)")
    return float(margin)


def min_num_samples(tv: float, alpha: float, beta: float, cells: int, *, margin: float = MARGIN) -> int:
    """Smallest N at which a level-`alpha` χ² test over `cells` cells detects TV ≥ `tv` with power ≥ 1−`beta`."""
    alpha, beta, tv = validate.gate_rates(alpha, beta, tv, tv_one=True)
    return chi2_samples(tv, alpha, beta, _check_cells(cells), margin=_check_margin(margin))


def chi2_samples(tv: float, alpha: float, beta: float, cells: int, *, margin: float = MARGIN) -> int:
    """`min_num_samples` on arguments its callers have checked (`validate.gate_rates`, cells ≥ 2, margin ≥ 1)."""
    lam = noncentrality(cells - 1, alpha, beta / margin)
    return max(1, math.ceil(Fraction(lam) / (4 * Fraction(tv) ** 2)))  # exact: 4δ² underflows at δ = 1e-200


def min_detectable_tv(n: int, alpha: float, beta: float, cells: int, *, margin: float = MARGIN) -> float:
    """Smallest TV that a level-`alpha` χ² test over `cells` cells with `n` samples detects with power ≥ 1−`beta`.

    With one possible cell (a point-mass law, e.g. T = 0) the only test is "no sample outside
    it", which has α = 0 and misses a sampler with TV = δ with probability (1−δ)^n ≤ β.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise StatsError(f"n={n!r} must be an integer >= 1 (the number of samples)")
    alpha, beta = validate.rates(alpha, beta)
    if cells != 1:
        cells = _check_cells(cells)
    return chi2_detectable_tv(n, alpha, beta, cells, margin=_check_margin(margin))


def chi2_detectable_tv(n: int, alpha: float, beta: float, cells: int, *, margin: float = MARGIN) -> float:
    """`min_detectable_tv` on arguments its callers have checked (n ≥ 1, `validate.rates`, margin ≥ 1)."""
    if cells == 1:
        return 1 - beta ** (1 / n)
    return min(1.0, math.sqrt(noncentrality(cells - 1, alpha, beta / margin) / (4 * n)))


# --- pooling and the assertion ---------------------------------------------------------------


def _detectable(groups: list[tuple], n: int, alpha: float, beta: float) -> float:
    """Detectable TV of the test over these cells, as a distance between the *coarsened* laws
    (outcomes of one cell merged). One cell is a test only when it is one outcome (a point-mass
    law): then any sample elsewhere rejects; else it detects nothing. α and β: checked by the caller."""
    if len(groups) >= 2:
        return chi2_detectable_tv(n, alpha, beta, len(groups))
    return chi2_detectable_tv(n, alpha, beta, 1) if len(groups[0]) == 1 else 1.0


def _full_detectable(detectable_cells: float, pooled: float) -> float:
    """The full law's detectable TV from the cells' and the pooled mass p(A) (`law_detectable_tv`)."""
    return min(1.0, detectable_cells + pooled)


def law_detectable_tv(law: Law, n: int, alpha: float, beta: float) -> float:
    """Smallest TV **of the full law** (every outcome, none pooled) that the gate's test of `law`
    with `n` samples detects with power ≥ 1−β at level α, as proved at that n
    (`rheo.lossless.promise`, docs/STATISTICS.md, "What the statistics promise"). The arguments are
    checked by its callers (`rheo.lossless.planning.detectable_tv` is the public entry)."""
    from rheo.lossless import promise  # numpy and scipy: imported when a law is tested, not with the parser

    return promise.planner(law, alpha, beta).detectable(n)


@dataclass(frozen=True)
class LawTest:
    """The outcome of one goodness-of-fit test, with everything needed to read it."""

    label: str
    statistic: str
    n: int  # samples
    cells: int  # tested outcomes: every outcome of positive probability (none pooled)
    pooled_mass: float  # always 0: the test pools nothing (kept for the record's readers)
    impossible: int  # samples on outcomes of exact probability 0
    chi2: float  # the statistic: S (the floored unbiased χ²) or, for the set test, −ln p (`rheo.lossless.promise`)
    p_value: float  # a valid p-value: an upper bound on P(statistic ≥ observed) under the exact law
    alpha: float
    beta: float
    tv: float  # δ the test states
    detectable_tv: float  # smallest TV of the full law detected with power 1−β at this n (cells + pooled mass)
    rejected: bool
    top_cells: tuple[Cell, ...] = ()  # largest standardised residuals first (rheo.lossless.diagnosis)
    worst_conditional: Conditional | None = None  # the conditional law that deviates most
    detectable_tv_cells: float = 0.0  # the same (no cells are merged)
    null: str = "chernoff"  # the test: "sets" (exact binomials, small support), "chernoff" (weighted χ²); "none"
    null_draws: int = 0  # the samples the statistic used: n for the set test, N' ~ Poisson(λ) ≤ n for the χ²
    critical: float = math.inf  # c: the statistic rejects at ≥ c (level α; −ln α for the set test)
    looks: tuple[int, ...] = ()  # a sequential test's planned samples per look (`rheo.lossless.sequential`)
    look: int = 0  # the look that decided (1-based; 0: not sequential)
    family_alpha: float = 0.0  # a sequential test's α over every look (`alpha` is the deciding look's)

    @property
    def margin(self) -> float:
        """S / c: how far past its critical value the statistic went (≥ 1 on a rejection by S)."""
        return math.inf if self.impossible else (self.chi2 / self.critical if self.critical > 0 else 0.0)

    def guarantee(self) -> str:
        """What a pass means, in words: the power statement about the full law, proved at this N."""
        return f"detects TV≥{self.detectable_tv:.4f} of the full law with power ≥ {1 - self.beta:g}, proved at this N"

    def summary(self, top: int = 3) -> str:
        """One line; a rejected test adds where it broke: the worst conditional law and the `top` cells."""
        verdict = "REJECT" if self.rejected else "pass"
        imp = f", {self.impossible} impossible" if self.impossible else ""
        p = (
            "0 (an impossible outcome)" if self.impossible else f"≤{max(self.p_value, 1e-300):.3g}"
        )  # an underflow reads as ≤1e-300, not ≤0
        line = (
            f"{self.label}: {verdict} (p{'=' if self.impossible else ''}{p}, α={self.alpha:g}, N={self.n}, "
            f"{self.cells} outcomes{imp}; {self.guarantee()}, stated δ={self.tv:g})"
        )
        if self.looks:
            line += (
                f"; sequential: decided at look {self.look} of {len(self.looks)} with {self.n:,} of "
                f"{self.looks[-1]:,} samples, α={self.family_alpha:g} over the looks"
            )
        return line + ("\n" + self.diagnosis(top) if self.rejected else "")

    def diagnosis(self, top: int = 3) -> str:
        """Where the law goes wrong: the conditional law that deviates most and the `top` cells."""
        lines = []
        if self.worst_conditional is not None:
            lines.append(f"  worst conditional law: {self.worst_conditional.text()}")
        lines += [f"  cell {c.text()}" for c in self.top_cells[:top]]
        return "\n".join(lines)

    def to_json(self) -> dict:
        return asdict(self)


def hide_lossless(excinfo: Any) -> bool:
    """pytest's `__tracebackhide__` for rheo's frames on the way to a `LosslessError`: a failing
    gate shows the user's test and the verdict, not rheo's internals (other errors keep them)."""
    return bool(excinfo.errisinstance(LosslessError))


def check_law(
    samples: Iterable[Sequence[int]] | Mapping[tuple[int, ...], int],
    law: Law,
    *,
    alpha: float,
    tv: float,
    beta: float = DEFAULT_BETA,
    statistic: str = "pearson",
    label: str = "law",
    names: Sequence[str] | None = None,
    condition: str = "",
    seed: int | None = None,
) -> LawTest:
    """Goodness of fit of `samples` (sequences, or a Counter of tuples) to the exact `law`; no raise.

    The test (`rheo.lossless.promise`, proved in docs/STATISTICS.md) is one of two, chosen from the law
    and n alone (whichever certifies the smaller TV): on a support of at most 18 outcomes, the set
    test (one exact binomial test per set of outcomes, Bonferroni over the 2^K − 1 sets); otherwise
    of the n samples a uniformly chosen N' ~ Poisson(λ(n)) are counted (drawn from `seed`, default
    one derived from the running pytest test id), S = Σ w_i[(X_i − λp_i)² − X_i] over every outcome
    of positive probability, rejected when the p-value bound P(S ≥ observed) ≤ α. A sample on an
    outcome of probability 0 rejects. Level ≤ α; power ≥ 1 − β at TV ≥ `detectable_tv` of the full law.

    The record carries where the samples deviate most (`rheo.lossless.diagnosis`): `names` name the
    outcome's components (default "token 1", "token 2", ...), `condition` what the whole test
    conditions on (e.g. "first round of length 3")."""
    alpha, beta, tv = validate.gate_rates(alpha, beta, tv, tv_one=True)
    validate.statistic(statistic, STATISTICS)
    return law_test(
        samples, law, alpha=alpha, tv=tv, beta=beta, statistic=statistic, label=label, names=names,
        condition=condition, seed=seed,
    )  # fmt: skip


def law_test(
    samples: Iterable[Sequence[int]] | Mapping[tuple[int, ...], int],
    law: Law,
    *,
    alpha: float,
    tv: float,
    beta: float,
    statistic: str = "pearson",
    label: str = "law",
    names: Sequence[str] | None = None,
    condition: str = "",
    seed: int | None = None,
) -> LawTest:
    """`check_law` on rates and a statistic its caller has checked (`validate.gate_rates`, once at the
    public entry: `check_law`, the gate, a horizon's windows, a sequential test's looks); the samples,
    the law and the seed are checked here, each call its own."""
    import numpy as np

    law = validate.exact_law(law)
    counts = validate.sample_counts(samples)
    n = sum(counts.values())
    if n < 1:
        raise StatsError("no samples: the sampler returned an empty batch")
    if not any(p > 0 for p in law.values()):
        raise StatsError("the exact law has no outcome of positive probability")
    seed = current_test_seed(label) if seed is None else validate.whole("seed", seed, min=0, max=2**64 - 1)
    impossible = sum(c for k, c in counts.items() if law.get(k, 0) == 0)
    from rheo.lossless import promise

    plan = promise.planner(law, alpha, beta)
    support = sorted((k for k, p in law.items() if p > 0), key=lambda k: (-law[k], k))
    stat, pval, used, critical = 0.0, 1.0, 0, math.inf
    kind = plan.kind(n)
    if kind == "sets":  # the exact set test (small support): every sample counts, no seed used
        assert plan.sets is not None
        x = np.asarray([counts.get(k, 0) for k in support], dtype=float)  # [K] in the planner's order
        pval, used = plan.sets.p_value(x, n), n
        stat, critical = -math.log(max(pval, 1e-300)), -math.log(alpha)
    elif kind == "chi2":
        null = plan.null(n)
        critical = float(null.critical)
        lam = float(null.lam)
        rng = np.random.default_rng([seed, 0x5EED])
        used = int(rng.poisson(lam))
        if used <= n:  # else (probability ≤ SPILL_SHARE·β) the statistic does not reject
            full = np.asarray([counts.get(k, 0) for k in support] + [impossible], dtype=np.int64)
            x = rng.multivariate_hypergeometric(full, used)[:-1].astype(float)  # [K] a uniform N'-subset's counts
            probs = np.asarray([float(law[k]) for k in support])
            w = plan.wt.w  # [K] the weights, over the support in the same (descending) order
            stat = float(np.sum(w * ((x - lam * probs) ** 2 - x)))
            pval = null.p_value(stat)
    if impossible:
        pval = 0.0
    det = law_detectable_tv(law, n, alpha, beta)
    if det > tv and plan.holds(n, tv):  # the bisection's last step: the stated δ itself is proved
        det = tv
    groups = pool_cells(law, n)  # the diagnosis groups rare outcomes for reading; the verdict does not
    law_f = {o: float(p) for o, p in law.items() if p > 0}
    return LawTest(
        label,
        statistic,
        n,
        len(support),
        0.0,
        impossible,
        stat,
        pval,
        alpha,
        beta,
        tv,
        det,
        bool(impossible or pval <= alpha),
        top_cells(counts, law_f, groups, n),
        worst_conditional(counts, law_f, names=names, condition=condition),
        det,
        {"sets": "sets", "chi2": "chernoff"}.get(kind, "none"),
        used,
        critical,
    )


def assert_law(
    samples: Iterable[Sequence[int]] | Mapping[tuple[int, ...], int],
    law: Law,
    *,
    alpha: float,
    tv: float,
    beta: float = DEFAULT_BETA,
    statistic: str = "pearson",
    label: str = "law",
    names: Sequence[str] | None = None,
    condition: str = "",
) -> LawTest:
    """Raise `LosslessError` when the samples reject `law` at level `alpha`; also when the test is
    too weak for its claim (detectable TV of the full law at this N above the stated `tv`)."""
    __tracebackhide__ = hide_lossless
    res = check_law(
        samples, law, alpha=alpha, tv=tv, beta=beta, statistic=statistic, label=label, names=names, condition=condition
    )
    if res.detectable_tv > res.tv + 1e-12:
        raise LosslessError(
            f"{res.summary()}: too few samples to detect TV {res.tv:g} of the full law; "
            f"need N >= {law_samples(law, res.tv, res.alpha, res.beta)}",
            res,
        )
    if res.rejected:
        raise LosslessError(res.summary(), res)
    return res


class MoreThan(int):
    """A planned N known only to exceed a limit (`samples_for(..., limit=)`): an int equal to
    limit + 1 that reads as "more than <limit>" in a refusal."""

    def __str__(self) -> str:
        return f"more than {self - 1:,}"


def samples_for(law: Law, tv: float, alpha: float, beta: float, *, limit: int | None = None) -> int:
    """The least N (to within 0.5%) at which the gate's test of `law` detects TV ≥ `tv` **of the
    full law** with power ≥ 1−β at level α, as proved at that N (`rheo.lossless.promise`).
    With a `limit`, an N over it is not searched for: `MoreThan(limit + 1)` is returned at the
    price of one certificate at the limit (the refusal's cost does not grow with N)."""
    alpha, beta, tv = validate.gate_rates(alpha, beta, tv, tv_one=True)
    return law_samples(law, tv, alpha, beta, limit=limit)


def law_samples(law: Law, tv: float, alpha: float, beta: float, *, limit: int | None = None) -> int:
    """`samples_for` on rates its caller has checked (`validate.gate_rates`, once at the public entry)."""
    if not any(p > 0 for p in law.values()):
        raise StatsError("the exact law has no outcome of positive probability")
    from rheo.lossless import promise

    n = promise.planner(law, alpha, beta).plan(tv, limit=limit)
    return MoreThan(limit + 1) if n is None and limit is not None else int(n or 0)


def samples_for_coarse(law: Law, tv: float, alpha: float, beta: float) -> int:
    """N at which the test detects TV ≥ `tv` between the laws *coarsened* to its cells (the pooled
    outcomes merged): the fixed point of N ↦ min_num_samples(tv, α, β, cells after pooling at N).

    Not a promise about the full law (`samples_for` is); used where the deviation is known
    exactly, e.g. the samples to convict a bug class, whose TV between the coarsened laws is
    computed exactly at that N (rheo.selfgate.bugclasses). Its rates are the caller's, checked there (a
    mutant's exact TV, the audit's α and β): called in a loop, it checks nothing again.
    """
    cells = sum(1 for p in law.values() if p > 0)
    if cells == 1:
        return max(1, math.ceil(math.log(beta) / math.log(1 - tv))) if tv != 1 else 1
    n = chi2_samples(tv, alpha, beta, cells)
    for _ in range(8):
        k = len(pool_cells(law, n))
        if k < 2:
            break
        n2 = chi2_samples(tv, alpha, beta, k)
        if n2 >= n:
            break
        n = n2
    while _detectable(pool_cells(law, n), n, alpha, beta) > tv + 1e-12:
        n = math.ceil(n * 1.05)
    return n


# --- seeds -------------------------------------------------------------------------------

SALT_ENV = "RHEO_SEED_SALT"


def seed_for(test_id: str, salt: str | None = None) -> int:
    """A 63-bit seed fixed in advance by the test id (and `$RHEO_SEED_SALT`, empty by default:
    set it, e.g. to the date, in a nightly job to vary every seed)."""
    salt = os.environ.get(SALT_ENV, "") if salt is None else salt
    text = f"{salt}|{test_id}".encode("utf-8", "surrogateescape")  # a salt of non-UTF-8 bytes reads as its bytes
    return int.from_bytes(hashlib.sha256(text).digest()[:8], "big") >> 1


def current_test_seed(fallback: str) -> int:
    """The seed of the running pytest test (from PYTEST_CURRENT_TEST), else of `fallback`."""
    cur = os.environ.get("PYTEST_CURRENT_TEST")
    return seed_for(cur.rsplit(" (", 1)[0] if cur else fallback)


# --- samplers from exact laws (negative and positive controls) -----------------------------


def sample_law(law: Law, n: int, seed: int) -> list[tuple[int, ...]]:
    """n outcomes drawn from an exact law (floats for the draw; exact enough for tests)."""
    keys = sorted(k for k, p in law.items() if p > 0)
    cum = list(accumulate(float(law[k]) for k in keys))
    rng = random.Random(seed)
    top = cum[-1]
    return [keys[min(bisect_right(cum, rng.random() * top), len(keys) - 1)] for _ in range(n)]


def law_sampler(law_of: Callable[[Case, int], Law]) -> Sampler:
    """A sampler (case, seed, n) -> sequences that draws the first `case.tokens` tokens from `law_of(case, tokens)`."""

    def sampler(case: Case, seed: int, num_samples: int) -> list[tuple[int, ...]]:
        return sample_law(law_of(case, case.tokens), num_samples, seed)

    return sampler


# --- the decoder gate ----------------------------------------------------------------------


def check_first_tokens(
    sampler: Sampler,
    case: Case,
    *,
    alpha: float,
    tv: float,
    beta: float = DEFAULT_BETA,
    tokens: int | None = None,
    seed: int | None = None,
    statistic: str = "pearson",
    force: bool = False,
    sequential: bool = False,
) -> LawTest:
    """The test of a decoder's first n tokens (n = `tokens` or `case.tokens`) against the exact
    target law; no raise (`rheo.check_lossless` / `rheo.assert_lossless` without a horizon).

    `sampler(case, seed, num_samples)` is handed the case with `tokens` = n and returns
    `num_samples` emitted token sequences (`rheo.lossless.validate.sampler_rows`: lists, tuples or
    rows of an integer array), each at least n tokens long, starting after `case.context`.
    N is the least at which TV ≥ `tv` of the full law is detected with power 1−`beta` at level
    `alpha` (`samples_for`). The seed defaults to one derived from the running pytest test id.
    Every argument, and the sizes `rheo gate-hf` caps (tokens, context, the law, N), are checked
    before the sampler runs; `force=True` lifts the size limits. `sequential=True`: the samples are
    drawn in looks and a rejection at a look stops the test (`rheo.lossless.sequential`; N is then
    planned at the last look's level).
    """
    __tracebackhide__ = hide_lossless
    sequential = validate.boolean("sequential", sequential)
    call = gate_call(
        sampler,
        case,
        alpha=alpha,
        beta=beta,
        tv=tv,
        statistic=statistic,
        seed=seed,
        force=force,
        tokens=lambda: case.tokens if tokens is None else validate.whole("tokens", tokens, min=1),
        sequential=sequential,
    )
    return first_tokens_test(sampler, case, call)


def first_tokens_test(sampler: Sampler, case: Case, call: GateCall) -> LawTest:
    """`check_first_tokens` on a call `gate_call` has checked (nothing is checked again here but what the
    sampler returns and the N the law asks for)."""
    __tracebackhide__ = hide_lossless
    from rheo.lossless import sequential as seq
    from rheo_ref.exact import target_law

    alpha, beta, tv, seed, n_tok, statistic = call.alpha, call.beta, call.tv, call.seed, call.tokens, call.statistic
    law = target_law(case, n_tok)
    plan_alpha = seq.final_alpha(alpha) if call.sequential else alpha
    n = validate.planned_samples(
        law_samples(law, tv, plan_alpha, beta, limit=validate.sample_limit(call.force)),
        alpha=plan_alpha,
        tv=tv,
        beta=beta,
        force=call.force,
    )
    label = f"first {n_tok} tokens vs target law"
    if call.sequential:
        shown = with_tokens(case, n_tok)
        return seq.check_sequential(
            lambda look, s, m: read_batch(sampler(shown, s, m), n_tok, m),
            law,
            n=n,
            alpha=alpha,
            tv=tv,
            beta=beta,
            seed=seed,
            statistic=statistic,
            label=label,
            check=law_test,
        )
    out = read_batch(sampler(with_tokens(case, n_tok), seed, n), n_tok, n)
    return law_test(out, law, alpha=alpha, tv=tv, beta=beta, statistic=statistic, label=label, seed=seed)


@dataclass(frozen=True)
class GateCall:
    """A gate call's arguments, checked once (`gate_call`): rates as floats, the seed, the tokens read, and
    the switches as given (`check_lossless` checks them before)."""

    alpha: float
    beta: float
    tv: float
    seed: int
    tokens: int
    statistic: str = "pearson"
    force: bool = False
    sequential: bool = False
    horizon: int | None = None
    rounds: bool = False


def gate_call(
    sampler: Any,
    case: Any,
    *,
    alpha: Any,
    beta: Any,
    tv: Any,
    statistic: Any,
    seed: Any,
    force: Any,
    tokens: Callable[[], int],
    tokens_first: bool = False,
    sequential: bool = False,
    horizon: int | None = None,
    rounds: bool = False,
) -> GateCall:
    """The checks every gate call makes before its sampler runs, written once, in this order (the first
    bad argument is the one reported): the sampler and the case; the rates and the statistic, with the
    tokens the test reads (`tokens()`: checks them and says how many the sizes are checked for) after
    them, or before them when `tokens_first` (a horizon test: tokens and horizon); the seed; the sizes
    `rheo gate-hf` caps (`rheo.lossless.validate.gate_size`; `force` lifts them). `sequential`, `horizon`
    and `rounds` are recorded as given (checked by the caller)."""
    check_gate_args(sampler, case)
    n_tok = tokens() if tokens_first else None
    a, b, t = validate.gate_rates(alpha, beta, tv)
    validate.statistic(statistic, STATISTICS)
    n_tok = tokens() if n_tok is None else n_tok
    s = gate_seed(seed, case)
    validate.gate_size(case, n_tok, needed=chi2_samples(t, a, b, 2), alpha=a, tv=t, beta=b, force=bool(force))
    return GateCall(a, b, t, s, n_tok, statistic, bool(force), sequential, horizon, rounds)


def gate_seed(seed: Any, case: Case) -> int:
    """The seed handed to the sampler: an integer in [0, 2^64 − 1], or by default one derived from the
    running pytest test id (`current_test_seed`)."""
    if seed is None:
        return current_test_seed(repr(case.to_json()))
    return validate.whole("seed", seed, min=0, max=2**64 - 1)


def with_tokens(case: Case, tokens: int) -> Case:
    """The case the sampler is handed: `case` with `tokens` tokens (what it must return)."""
    if tokens == case.tokens:
        return case
    return replace(case, tokens=tokens)


def check_case(case: Any) -> Case:
    if not isinstance(case, Case):
        raise StatsError(
            f"case must be a rheo_ref.models.Case (use Case.from_json or load_case), got {type(case).__name__}"
        )
    return case


def check_gate_args(sampler: Any, case: Any) -> None:
    check_case(case)
    if not callable(sampler):
        raise StatsError(f"sampler {show(sampler)} is not callable; it must take (case, seed, num_samples)")


def read_batch(batch: Any, n_tok: int, n: int) -> list[tuple[int, ...]]:
    """A sampler's n sequences (lists, tuples or rows of an integer array, or the `tokens` of an object
    that also carries `first_lengths`: rheo.lossless.horizon.Rounds, rheo_fast's Decoded), each cut to n_tok
    tokens; anything else is a `SamplerOutputError` (`rheo.lossless.validate.sampler_rows`)."""
    return validate.sampler_rows(batch, n_tok, n)
