"""Statistical tests of losslessness: the χ²/G goodness-of-fit trio (after
tensorflow_probability's `statistical_testing.py`: the assertion, what N detects, the N needed).

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
  cross the critical value on its own too often); the power statement is about the TV of the
  law coarsened to the tested cells, which the result reports (`pooled_mass`). A sample on an
  outcome of exact probability 0 rejects outright (impossible under the null: α unchanged).
- `assert_lossless` applies this to the first n tokens of a decoder against the target law;
  `rheo.selfgate.matrix.fast_verdict` does it for the fast path (the `rheo audit` column).
"""

from __future__ import annotations

import hashlib
import math
import os
import random
from bisect import bisect_right
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from itertools import accumulate
from typing import Any

from rheo.lossless.cells import (
    MIN_EXPECTED as MIN_EXPECTED,  # (part of this module's interface: the gate's pooling threshold)
)
from rheo.lossless.cells import pool_cells
from rheo.lossless.diagnosis import Cell, Conditional, top_cells, worst_conditional
from rheo_ref.errors import LosslessError, StatsError
from rheo_ref.laws import Law
from rheo_ref.models import Case

Sampler = Callable[[Case, int, int], Iterable[Sequence[int]]]

STATISTICS = ("pearson", "g")
DEFAULT_BETA = 0.01
MARGIN = 2.0  # the noncentrality is solved for miss probability β / MARGIN (see the docstring)


# --- the trio ------------------------------------------------------------------------------


def _check_rate(name: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, Fraction)) or not 0 < value < 1:
        raise StatsError(f"{name}={value!r} must be a number strictly between 0 and 1")
    return float(value)


def _check_cells(cells: Any) -> int:
    if isinstance(cells, bool) or not isinstance(cells, int) or cells < 2:
        raise StatsError(f"cells={cells!r} must be an integer >= 2 (a χ² test over k cells has k-1 degrees of freedom)")
    return cells


def noncentrality(df: int, alpha: float, beta: float) -> float:
    """λ* with P(χ'²_df(λ*) > χ²_{df,1−α}) = 1−β: the noncentrality a level-α test detects with power 1−β."""
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
    tv = _check_rate("tv", tv) if tv != 1 else 1.0
    alpha, beta, cells = _check_rate("alpha", alpha), _check_rate("beta", beta), _check_cells(cells)
    lam = noncentrality(cells - 1, alpha, beta / _check_margin(margin))
    return max(1, math.ceil(lam / (4 * tv * tv)))


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
    """Detectable TV of a test over these pooled cells. One cell is a test only when it is one
    outcome (a point-mass law): then any sample elsewhere rejects; else it detects nothing."""
    if len(groups) >= 2:
        return min_detectable_tv(n, alpha, beta, len(groups))
    return min_detectable_tv(n, alpha, beta, 1) if len(groups[0]) == 1 else 1.0


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
    detectable_tv: float  # smallest TV detected with power 1−β at this n
    rejected: bool
    top_cells: tuple[Cell, ...] = ()  # largest standardised residuals first (rheo.lossless.diagnosis)
    worst_conditional: Conditional | None = None  # the conditional law that deviates most

    def summary(self, top: int = 3) -> str:
        """One line; a rejected test adds where it broke: the worst conditional law and the `top` cells."""
        verdict = "REJECT" if self.rejected else "pass"
        imp = f", {self.impossible} impossible" if self.impossible else ""
        line = (
            f"{self.label}: {verdict} (p={self.p_value:.3g}, α={self.alpha:g}, N={self.n}, "
            f"{self.cells} cells, {self.statistic}{imp}; detects TV≥{self.detectable_tv:.4f} "
            f"with power {1 - self.beta:g}, stated δ={self.tv:g})"
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


def _as_tuple(seq: Any) -> tuple[int, ...]:
    if hasattr(seq, "tolist"):
        seq = seq.tolist()
    return tuple(int(t) for t in seq)


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

    alpha, beta = _check_rate("alpha", alpha), _check_rate("beta", beta)
    tv = _check_rate("tv", tv) if tv != 1 else 1.0
    if statistic not in STATISTICS:
        raise StatsError(f"statistic={statistic!r}; allowed: {', '.join(STATISTICS)}")
    counts: Counter = Counter()
    if isinstance(samples, Mapping):
        for key, c in samples.items():
            counts[_as_tuple(key)] += int(c)
    else:
        counts.update(_as_tuple(s) for s in samples)
    n = sum(counts.values())
    if n < 1:
        raise StatsError("no samples: the sampler returned an empty batch")
    if not any(p > 0 for p in law.values()):
        raise StatsError("the exact law has no outcome of positive probability")
    impossible = sum(c for k, c in counts.items() if law.get(k, 0) == 0)
    groups = pool_cells(law, n)
    pooled = [g for g in groups if len(g) > 1]
    pooled_mass = float(sum(law[k] for k in pooled[0])) if pooled else 0.0
    k = len(groups)
    stat, pval = 0.0, 1.0
    if k >= 2:
        for g in groups:
            e = n * float(sum(law[o] for o in g))
            o = sum(counts.get(x, 0) for x in g)
            if statistic == "pearson":
                stat += (o - e) ** 2 / e
            elif o > 0:
                stat += 2 * o * math.log(o / e)
        stat = max(stat, 0.0)
        pval = float(chi2_dist.sf(stat, k - 1))
    if impossible:
        stat, pval = math.inf, 0.0
    det = _detectable(groups, n, alpha, beta)
    law_f = {o: float(p) for o, p in law.items() if p > 0}
    return LawTest(
        label,
        statistic,
        n,
        k,
        pooled_mass,
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
    too weak for its claim (detectable TV at this N above the stated `tv`)."""
    res = check_law(
        samples, law, alpha=alpha, tv=tv, beta=beta, statistic=statistic, label=label, names=names, condition=condition
    )
    if res.detectable_tv > res.tv + 1e-12:
        raise LosslessError(
            f"{res.summary()}: too few samples to detect TV {tv:g}; "
            f"need N >= {min_num_samples(tv, alpha, beta, max(res.cells, 2))}",
            res,
        )
    if res.rejected:
        raise LosslessError(res.summary(), res)
    return res


def samples_for(law: Law, tv: float, alpha: float, beta: float) -> int:
    """N for testing `law`: the fixed point of N ↦ min_num_samples(tv, α, β, cells after pooling at N).

    Starting from every possible outcome as a cell is conservative (λ* grows with the degrees
    of freedom); a smaller N pools at least as many cells, so each step keeps the power claim,
    which the last loop checks.
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


def assert_lossless(
    sampler: Sampler,
    case: Case,
    *,
    alpha: float,
    tv: float,
    beta: float = DEFAULT_BETA,
    tokens: int | None = None,
    seed: int | None = None,
    statistic: str = "pearson",
) -> LawTest:
    """Gate a decoder: its first n tokens (n = `tokens` or `case.tokens`) against the exact target law.

    `sampler(case, seed, num_samples)` returns `num_samples` emitted token sequences (lists,
    tuples or rows of a tensor), each at least n tokens long, starting after `case.context`.
    The number of samples is chosen so that TV ≥ `tv` is detected with power 1−`beta` at
    level `alpha`. The seed defaults to one derived from the running pytest test id.
    `rheo.assert_lossless` (rheo.lossless.horizon) is this, plus the horizon tests (`horizon=H`).
    """
    from rheo_ref.exact import target_law

    check_gate_args(sampler, case)
    alpha, beta = _check_rate("alpha", alpha), _check_rate("beta", beta)
    tv = _check_rate("tv", tv)
    seed = current_test_seed(repr(case.to_json())) if seed is None else seed
    n_tok = case.tokens if tokens is None else tokens
    if isinstance(n_tok, bool) or not isinstance(n_tok, int) or n_tok < 1:
        raise StatsError(f"tokens={n_tok!r} must be an integer >= 1")
    law = target_law(case, n_tok)
    n = samples_for(law, tv, alpha, beta)
    out = read_batch(sampler(case, seed, n), n_tok, n)
    return assert_law(
        out, law, alpha=alpha, tv=tv, beta=beta, statistic=statistic, label=f"first {n_tok} tokens vs target law"
    )


def check_gate_args(sampler: Any, case: Any) -> None:
    if not isinstance(case, Case):
        raise StatsError(
            f"case must be a rheo_ref.models.Case (use Case.from_json or load_case), got {type(case).__name__}"
        )
    if not callable(sampler):
        raise StatsError(f"sampler {sampler!r} is not callable; it must take (case, seed, num_samples)")


def read_batch(batch: Any, n_tok: int, n: int) -> list[tuple[int, ...]]:
    """A sampler's n sequences (lists, tuples or rows of a tensor, or the `tokens` of an object that
    also carries `first_lengths`: rheo.lossless.horizon.Rounds, rheo_fast's Decoded), each cut to n_tok tokens."""
    if hasattr(batch, "tokens") and hasattr(batch, "first_lengths"):
        batch = batch.tokens
    if hasattr(batch, "tolist"):  # a tensor or array of rows: convert once, not row by row
        batch = batch.tolist()
    out = []
    for i, s in enumerate(batch):
        t = _as_tuple(s)
        if len(t) < n_tok:
            raise StatsError(f"sample {i} has {len(t)} tokens {list(t)}; the sampler must return at least {n_tok}")
        out.append(t[:n_tok])
    if len(out) != n:
        raise StatsError(f"the sampler returned {len(out)} sequences for num_samples={n}")
    return out
