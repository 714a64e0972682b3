"""Statistical tests of losslessness: the χ²/G goodness-of-fit trio (after
tensorflow_probability's `statistical_testing.py`; docs/GATE.md, "What the statistics promise").

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
  power 1−β/2) keeps the *realised* power ≥ 1−β; tests/test_stats.py measures it. margin=1
  is the textbook formula.
- Cells whose expected count is below `MIN_EXPECTED` (10) are pooled into one cell, so the
  χ² reference holds far into its tail (at α ~ 1e-6 a lone cell of expected count 5 would
  cross the critical value on its own too often). The power statement is about the **full**
  law all the same: TV(P, p) ≤ TV(P′, p′) + p(pooled), so `detectable_tv` is the cells' plus the
  pooled mass (`law_detectable_tv`), and `samples_for` plans the least N at which that is ≤ δ.
  A sample on an outcome of exact probability 0 rejects outright (impossible under the null).
- α: a χ² rejection is re-decided by a simulated null (`simulated_p_value`, M = ⌈20/α⌉
  multinomial draws) wherever the draws are affordable; the record says which null decided.
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
from rheo.lossless.cells import PoolShape, pool_cells, pooled_mass
from rheo.lossless.diagnosis import Cell, Conditional, top_cells, worst_conditional
from rheo_ref.errors import LosslessError, StatsError
from rheo_ref.models import Case
from rheo_ref.validate import show

Law = Mapping[tuple[int, ...], Fraction]
Sampler = Callable[[Case, int, int], Iterable[Sequence[int]]]

STATISTICS = ("pearson", "g")
DEFAULT_BETA = 0.01
MARGIN = 2.0  # the noncentrality is solved for miss probability β / MARGIN (see the docstring)


# --- the trio ------------------------------------------------------------------------------


def _check_rate(name: str, value: Any) -> float:
    return validate.rate(name, value)  # any real number type at its exact value (rheo.lossless.validate)


def _check_cells(cells: Any) -> int:
    if isinstance(cells, bool) or not isinstance(cells, int) or cells < 2:
        raise StatsError(f"cells={cells!r} must be an integer >= 2 (a χ² test over k cells has k-1 degrees of freedom)")
    return cells


@lru_cache(maxsize=4096)
def noncentrality(df: int, alpha: float, beta: float) -> float:
    """λ* with P(χ'²_df(λ*) > χ²_{df,1−α}) = 1−β: the noncentrality a level-α test detects with power 1−β."""
    from scipy.optimize import brentq
    from scipy.stats import chi2, ncx2

    validate.rates(alpha, beta)  # α ≥ 1 − β: power 1 − β already at λ = 0, no root to find
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
    alpha, beta = validate.rates(alpha, beta)
    tv, cells = validate.rate("tv", tv, one=True), _check_cells(cells)
    lam = noncentrality(cells - 1, alpha, beta / _check_margin(margin))
    return max(1, math.ceil(Fraction(lam) / (4 * Fraction(tv) ** 2)))  # exact: 4δ² underflows at δ = 1e-200


def min_detectable_tv(n: int, alpha: float, beta: float, cells: int, *, margin: float = MARGIN) -> float:
    """Smallest TV that a level-`alpha` χ² test over `cells` cells with `n` samples detects with power ≥ 1−`beta`.

    With one possible cell (a point-mass law, e.g. T = 0) the only test is "no sample outside
    it", which has α = 0 and misses a sampler with TV = δ with probability (1−δ)^n ≤ β.
    """
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise StatsError(f"n={n!r} must be an integer >= 1 (the number of samples)")
    alpha, beta = _check_rate("alpha", alpha), _check_rate("beta", beta)
    if cells == 1:
        return 1 - beta ** (1 / n)
    cells = _check_cells(cells)
    return min(1.0, math.sqrt(noncentrality(cells - 1, alpha, beta / _check_margin(margin)) / (4 * n)))


# --- pooling and the assertion ---------------------------------------------------------------


def _detectable(groups: list[tuple], n: int, alpha: float, beta: float) -> float:
    """Detectable TV of the test over these cells, as a distance between the *coarsened* laws
    (outcomes of one cell merged). One cell is a test only when it is one outcome (a point-mass
    law): then any sample elsewhere rejects; else it detects nothing."""
    if len(groups) >= 2:
        return min_detectable_tv(n, alpha, beta, len(groups))
    return min_detectable_tv(n, alpha, beta, 1) if len(groups[0]) == 1 else 1.0


def _full_detectable(detectable_cells: float, pooled: float) -> float:
    """The full law's detectable TV from the cells' and the pooled mass p(A) (`law_detectable_tv`)."""
    return min(1.0, detectable_cells + pooled)


def law_detectable_tv(law: Law, n: int, alpha: float, beta: float) -> float:
    """Smallest TV **of the full law** (every outcome of positive probability) that the gate's test
    of `law` with `n` samples detects with power ≥ 1−β at level α.

    That is the cells' detectable TV plus the exact mass p(A) of the pooled outcomes A: for any
    law P, TV(P, p) ≤ TV(P′, p′) + p(A), where ′ merges A into one cell (docs/GATE.md, "What the
    statistics promise"), so an alternative at full TV ≥ δ_cells + p(A) is at coarsened TV ≥ δ_cells.
    """
    groups = pool_cells(law, n)
    return _full_detectable(_detectable(groups, n, alpha, beta), pooled_mass(law, groups))


@dataclass(frozen=True)
class LawTest:
    """The outcome of one goodness-of-fit test, with everything needed to read it."""

    label: str
    statistic: str
    n: int  # samples
    cells: int  # tested cells after pooling
    pooled_mass: float  # exact probability of the outcomes pooled into one cell
    impossible: int  # samples on outcomes of exact probability 0
    chi2: float
    p_value: float
    alpha: float
    beta: float
    tv: float  # δ the test states
    detectable_tv: float  # smallest TV of the full law detected with power 1−β at this n (cells + pooled mass)
    rejected: bool
    top_cells: tuple[Cell, ...] = ()  # largest standardised residuals first (rheo.lossless.diagnosis)
    worst_conditional: Conditional | None = None  # the conditional law that deviates most
    detectable_tv_cells: float = 0.0  # the same between the laws coarsened to the tested cells
    null: str = "chi2"  # the p-value's null distribution: "chi2" (asymptotic) or "simulated"
    null_draws: int = 0  # multinomial draws of the simulated null (0 with "chi2")

    def guarantee(self) -> str:
        """What a pass means, in words: the power statement about the full law."""
        pooled = f" + pooled mass {self.pooled_mass:.4f}" if self.pooled_mass else ""
        return (
            f"detects TV≥{self.detectable_tv:.4f} of the full law (tested cells {self.detectable_tv_cells:.4f}"
            f"{pooled}) with power {1 - self.beta:g}"
        )

    def summary(self, top: int = 3) -> str:
        """One line; a rejected test adds where it broke: the worst conditional law and the `top` cells."""
        verdict = "REJECT" if self.rejected else "pass"
        imp = f", {self.impossible} impossible" if self.impossible else ""
        sim = f" simulated over {self.null_draws} draws" if self.null == "simulated" else ""
        line = (
            f"{self.label}: {verdict} (p={self.p_value:.3g}{sim}, α={self.alpha:g}, N={self.n}, "
            f"{self.cells} cells, {self.statistic}{imp}; {self.guarantee()}, stated δ={self.tv:g})"
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
) -> LawTest:
    """Goodness of fit of `samples` (sequences, or a Counter of tuples) to the exact `law`; no raise.

    The record carries where the samples deviate most (`rheo.lossless.diagnosis`): `names` name the
    outcome's components (default "token 1", "token 2", ...), `condition` what the whole test
    conditions on (e.g. "first round of length 3")."""
    from scipy.stats import chi2 as chi2_dist

    alpha, beta = validate.rates(alpha, beta)
    tv = validate.rate("tv", tv, one=True)
    validate.statistic(statistic, STATISTICS)
    law = validate.exact_law(law)
    counts = validate.sample_counts(samples)
    n = sum(counts.values())
    if n < 1:
        raise StatsError("no samples: the sampler returned an empty batch")
    if not any(p > 0 for p in law.values()):
        raise StatsError("the exact law has no outcome of positive probability")
    impossible = sum(c for k, c in counts.items() if law.get(k, 0) == 0)
    groups = pool_cells(law, n)
    mass = pooled_mass(law, groups)
    k = len(groups)
    stat, pval, null, draws = 0.0, 1.0, "chi2", 0
    if k >= 2:
        probs = [float(sum(law[o] for o in g)) for g in groups]
        observed = [sum(counts.get(x, 0) for x in g) for g in groups]
        stat = _statistic(observed, probs, n, statistic)
        pval = float(chi2_dist.sf(stat, k - 1))
        if pval < alpha and not impossible:  # confirm a rejection where the χ² tail may be off
            sim = simulated_p_value(observed, probs, stat, statistic, alpha)
            if sim is not None:
                pval, draws = sim
                null = "simulated"
    if impossible:
        stat, pval, null, draws = math.inf, 0.0, "chi2", 0
    det_cells = _detectable(groups, n, alpha, beta)
    det = _full_detectable(det_cells, mass)
    law_f = {o: float(p) for o, p in law.items() if p > 0}
    return LawTest(
        label,
        statistic,
        n,
        k,
        mass,
        impossible,
        stat,
        pval,
        alpha,
        beta,
        tv,
        det,
        bool(impossible or pval < alpha),
        top_cells(counts, law_f, groups, n),
        worst_conditional(counts, law_f, names=names, condition=condition),
        det_cells,
        null,
        draws,
    )


def _statistic(observed: Sequence[int], probs: Sequence[float], n: int, statistic: str) -> float:
    """The test statistic of one sample's cell counts (clipped at 0 against float dust)."""
    import numpy as np

    e = n * np.asarray(probs, dtype=float)
    return max(float(_statistics(np.asarray([observed]), e, statistic)[0]), 0.0)


def _statistics(counts: Any, e: Any, statistic: str) -> Any:
    """Pearson's X² or the G statistic of each row of cell counts against the expected counts `e`."""
    import numpy as np

    if statistic == "pearson":
        return ((counts - e) ** 2 / e).sum(axis=1)
    with np.errstate(divide="ignore", invalid="ignore"):
        return 2 * np.where(counts > 0, counts * np.log(counts / e), 0.0).sum(axis=1)


SIMULATION_BUDGET = 20_000_000  # multinomial cells drawn at most to confirm one rejection


def simulated_p_value(
    observed: Sequence[int], probs: Sequence[float], stat: float, statistic: str, alpha: float
) -> tuple[float, int] | None:
    """Monte Carlo p-value of `stat` under the null multinomial(n, probs): (p, draws), or None when
    M = ⌈20/α⌉ draws of the cells exceed `SIMULATION_BUDGET` (the χ² p-value then stands, and the
    record says so: `null="chi2"`).

    p̂ = (1 + #{T* ≥ T}) / (1 + M) over M null statistics T* drawn independently of the data is a
    valid p-value (P(p̂ ≤ α) ≤ α under the null, exactly, whatever the accuracy of the χ² tail;
    Davison & Hinkley 1997, §4.2). The null draws depend only on (n, probs, statistic, M), so they
    are seeded by those, drawn once per process and shared by every test of the same law and N.
    """
    m_total = math.ceil(20 / alpha)
    if m_total * len(probs) > SIMULATION_BUDGET:
        return None
    import numpy as np

    null = _null_statistics(int(sum(observed)), tuple(float(p) for p in probs), statistic, m_total)
    tol = 1e-9 * max(1.0, stat)  # ties of the statistic count as exceedances (conservative)
    exceed = m_total - int(np.searchsorted(null, stat - tol, side="left"))
    return (1 + exceed) / (1 + m_total), m_total


@lru_cache(maxsize=64)
def _null_statistics(n: int, probs: tuple[float, ...], statistic: str, m: int) -> Any:
    """M statistics of multinomial(n, probs) samples, sorted (a seeded, cached null distribution)."""
    import numpy as np

    p = np.asarray(probs, dtype=float)
    p = p / p.sum()
    e = n * p
    seed = int.from_bytes(hashlib.sha256(repr((n, probs, statistic, m)).encode()).digest()[:8], "big")
    rng = np.random.default_rng(seed)
    out = []
    for start in range(0, m, 1 << 15):
        out.append(_statistics(rng.multinomial(n, p, size=min(1 << 15, m - start)), e, statistic))
    return np.sort(np.concatenate(out))


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
            f"{res.summary()}: too few samples to detect TV {tv:g} of the full law; "
            f"need N >= {samples_for(law, tv, alpha, beta)}",
            res,
        )
    if res.rejected:
        raise LosslessError(res.summary(), res)
    return res


def samples_for(law: Law, tv: float, alpha: float, beta: float) -> int:
    """The least N at which the gate's test of `law` detects TV ≥ `tv` **of the full law** with
    power ≥ 1−β at level α: δ_cells(N) + p(pooled at N) ≤ `tv` (`law_detectable_tv`).

    Between two breakpoints (the N at which an outcome's expected count reaches the pooling
    threshold) the cells and the pooled mass m are fixed and δ_cells falls with N, so each
    segment's least N is max(start, ⌈λ*/(4(δ−m)²)⌉); the segments are scanned in order. A law
    whose light outcomes weigh more than δ at every affordable N costs the N at which they stop
    being pooled: that is the price of a promise about the full law.
    """
    tv = _check_rate("tv", tv) if tv != 1 else 1.0
    alpha, beta = _check_rate("alpha", alpha), _check_rate("beta", beta)
    shape = PoolShape(law)
    if not shape.probs:
        raise StatsError("the exact law has no outcome of positive probability")
    if len(shape.probs) == 1:
        return max(1, math.ceil(math.log(beta) / math.log(1 - tv))) if tv < 1 else 1
    starts = [1, *shape.breakpoints()]
    ends: list[int | None] = [*starts[1:], None]
    for start, end in zip(starts, ends):
        cells, mass = shape.at(start)
        if cells < 2 or mass >= tv:
            continue
        n = max(start, math.ceil(noncentrality(cells - 1, alpha, beta / MARGIN) / (4 * (tv - mass) ** 2)))
        if end is not None and n >= end:
            continue
        while True:  # the absorption of big cells into a short pool can shift the shape inside a segment
            cells, mass = shape.at(n)
            if cells >= 2 and min_detectable_tv(n, alpha, beta, cells) + mass <= tv + 1e-12:
                return n
            if end is not None and n + 1 >= end:
                break
            n += 1
    raise StatsError(f"no N detects TV {tv:g} of this law")  # unreachable: past the last breakpoint nothing pools


def samples_for_coarse(law: Law, tv: float, alpha: float, beta: float) -> int:
    """N at which the test detects TV ≥ `tv` between the laws *coarsened* to its cells (the pooled
    outcomes merged): the fixed point of N ↦ min_num_samples(tv, α, β, cells after pooling at N).

    Not a promise about the full law (`samples_for` is); used where the deviation is known
    exactly, e.g. the samples to convict a bug class, whose TV between the coarsened laws is
    computed exactly at that N (rheo.selfgate.bugclasses).
    """
    cells = sum(1 for p in law.values() if p > 0)
    if cells == 1:
        return max(1, math.ceil(math.log(beta) / math.log(1 - tv))) if tv < 1 else 1
    n = min_num_samples(tv, alpha, beta, cells)
    for _ in range(8):
        k = len(pool_cells(law, n))
        if k < 2:
            break
        n2 = min_num_samples(tv, alpha, beta, k)
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
) -> LawTest:
    """The test of a decoder's first n tokens (n = `tokens` or `case.tokens`) against the exact
    target law; no raise (`rheo.check_lossless` / `rheo.assert_lossless` without a horizon).

    `sampler(case, seed, num_samples)` is handed the case with `tokens` = n and returns
    `num_samples` emitted token sequences (`rheo.lossless.validate.sampler_rows`: lists, tuples or
    rows of an integer array), each at least n tokens long, starting after `case.context`.
    N is the least at which TV ≥ `tv` of the full law is detected with power 1−`beta` at level
    `alpha` (`samples_for`). The seed defaults to one derived from the running pytest test id.
    Every argument, and the sizes `rheo gate-hf` caps (tokens, context, the law, N), are checked
    before the sampler runs; `force=True` lifts the size limits.
    """
    __tracebackhide__ = hide_lossless
    from rheo_ref.exact import target_law

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
    )
    alpha, beta, tv, seed, n_tok = call.alpha, call.beta, call.tv, call.seed, call.tokens
    law = target_law(case, n_tok)
    n = validate.planned_samples(samples_for(law, tv, alpha, beta), alpha=alpha, tv=tv, beta=beta, force=bool(force))
    out = read_batch(sampler(with_tokens(case, n_tok), seed, n), n_tok, n)
    return check_law(
        out, law, alpha=alpha, tv=tv, beta=beta, statistic=statistic, label=f"first {n_tok} tokens vs target law"
    )


@dataclass(frozen=True)
class GateCall:
    """A gate call's arguments, checked (`gate_call`): rates as floats, the seed, the tokens read."""

    alpha: float
    beta: float
    tv: float
    seed: int
    tokens: int


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
) -> GateCall:
    """The checks every gate call makes before its sampler runs, written once, in this order (the first
    bad argument is the one reported): the sampler and the case; the rates and the statistic, with the
    tokens the test reads (`tokens()`: checks them and says how many the sizes are checked for) after
    them, or before them when `tokens_first` (a horizon test: tokens and horizon); the seed; the sizes
    `rheo gate-hf` caps (`rheo.lossless.validate.gate_size`; `force` lifts them)."""
    check_gate_args(sampler, case)
    n_tok = tokens() if tokens_first else None
    a, b, t = gate_rates(alpha, beta, tv, statistic)
    n_tok = tokens() if n_tok is None else n_tok
    s = gate_seed(seed, case)
    validate.gate_size(case, n_tok, needed=min_num_samples(t, a, b, 2), alpha=a, tv=t, beta=b, force=bool(force))
    return GateCall(a, b, t, s, n_tok)


def gate_rates(alpha: Any, beta: Any, tv: Any, statistic: Any) -> tuple[float, float, float]:
    """The gate's rates as floats and its statistic, checked (`rheo.lossless.validate`)."""
    a, b = validate.rates(alpha, beta)
    validate.statistic(statistic, STATISTICS)
    return a, b, validate.rate("tv", tv)


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
