"""N against the support and ‖p‖₂/₃: the gate's proved planner beside the old asymptotic one.

The case is `tests/cases/v12-first-order.json` (V = 12, a first-order target), its first 1–6
tokens, at α = 1e-3, β = 0.01, δ = 0.1. "old" is the planner the gate used before the promise was
proved (Pearson over cells pooled below an expected count of 10, N from the noncentral χ² at
β/2, plus the pooled mass charged to δ), kept here only as this table's baseline: its N carried no
finite-N guarantee. "variance bounds" is the first proved planner (Pearson's weights floored at
1/(2K), the variance-bound certificate alone, β/4 on the mass off the support), recomputed here by
setting those constants back. "proved" is `rheo.lossless.stats.samples_for` as it is: the 2/3-power
weights and the dual certificate (docs/STATISTICS.md). Run:
`pytest -m bench tests/bench/test_plan_table.py -s`.
"""

from __future__ import annotations

import contextlib
import math
import time
from pathlib import Path

import pytest

from rheo.lossless.stats import samples_for
from rheo_ref.exact import target_law
from rheo_ref.models import load_case

CASE = Path(__file__).parents[1] / "cases" / "v12-first-order.json"
ALPHA, BETA, DELTA = 1e-3, 0.01, 0.1


def old_samples_for(law: dict, tv: float, alpha: float, beta: float) -> int:
    """The old planner (the baseline): least N with δ_cells(N) + p(pooled at N) ≤ tv, δ_cells from
    the noncentral χ² at β/2 over the cells left after pooling outcomes of expected count < 10."""
    from scipy.optimize import brentq
    from scipy.stats import chi2, ncx2

    probs = sorted(float(p) for p in law.values() if p > 0)

    def shape(n: int) -> tuple[int, float]:
        light = [p for p in probs if n * p < 10]
        heavy = [p for p in probs if n * p >= 10]
        pool = sum(light)
        while heavy and light and n * pool < 10:
            pool += heavy.pop(0)
        cells = len(heavy) + (1 if light else 0)
        return cells, (pool if len(light) > 1 else 0.0)

    def detectable(n: int) -> float:
        cells, mass = shape(n)
        if cells < 2:
            return 1.0
        crit = chi2.isf(alpha, cells - 1)
        lam = brentq(lambda x: ncx2.sf(crit, cells - 1, x) - (1 - beta / 2), 0, 1e7)
        return math.sqrt(lam / (4 * n)) + mass

    lo, hi = 1, 2
    while detectable(hi) > tv:
        lo, hi = hi, hi * 2
    while hi - lo > max(1, lo // 1000):
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if detectable(mid) <= tv else (mid, hi)
    return hi


@contextlib.contextmanager
def variance_bounds_only():
    """The first proved planner: Pearson's weights floored at 1/(2K), no dual certificate, β/4 off the support."""
    from rheo.lossless import promise

    saved = promise.POWER, promise.FLOOR, promise.OFF_SHARE, promise.Planner.dual

    class Never:
        def certified(self, delta: float, log_target: float) -> bool:
            return False

    promise.POWER, promise.FLOOR, promise.OFF_SHARE = 1.0, 0.5, 0.25
    promise.Planner.dual = lambda self, n: Never()
    promise._PLANNERS.clear()
    try:
        yield
    finally:
        promise.POWER, promise.FLOOR, promise.OFF_SHARE, promise.Planner.dual = saved
        promise._PLANNERS.clear()


@pytest.mark.bench
def test_n_against_support_and_two_thirds_norm():
    case = load_case(str(CASE))
    rows = [
        "| tokens | support | distinct p | ‖p‖₂/₃ | old N (no guarantee) | variance bounds | proved N | proved / old | seconds to plan |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for tokens in range(1, 7):
        law = target_law(case, tokens)
        probs = [float(v) for v in law.values() if v > 0]
        norm = sum(x ** (2 / 3) for x in probs) ** 1.5
        old = old_samples_for(law, DELTA, ALPHA, BETA)
        first: int | str = "—"  # the variance bounds' [grid × K] arrays do not fit past 4 tokens
        if tokens <= 4:
            with variance_bounds_only():
                first = samples_for(law, DELTA, ALPHA, BETA)
        t0 = time.perf_counter()
        new = samples_for(law, DELTA, ALPHA, BETA)
        sec = time.perf_counter() - t0
        rows.append(
            f"| {tokens} | {len(probs):,} | {len(set(probs)):,} | {norm:.1f} | {old:,} | {first if isinstance(first, str) else f'{first:,}'} | {new:,} | {new / old:.2f} | {sec:.1f} |"
        )
        print(rows[-1], flush=True)
    print("\n".join(rows))


@pytest.mark.bench
def test_the_self_gates_and_the_audits_rows_against_the_old_planner():
    """Every self-gate test (row × check, at the matrix's per-test α, δ = 0.025) and every audit row (its
    tokens, α = 1e-3, δ = 0.02): N of the proved planner against the old one's, which had no guarantee.
    The proved N must stay within 1.2× the old on every row."""
    from rheo.selfgate import audit, matrix

    jobs = []
    for name, gc in matrix.gate_cases().items():
        for check in matrix.CHECKS:
            jobs.append(
                (f"self-gate {name} {check}", matrix.check_law_of(gc, check), matrix.DELTA, matrix.alpha_per_test())
            )
    for name, case in audit.audit_cases():
        jobs.append((f"audit {name}", target_law(case, case.tokens), audit.DELTA, audit.ALPHA))
    rows = [
        "| row | support | old N (no guarantee) | proved N | proved / old | test | seconds to plan |",
        "|---|---|---|---|---|---|---|",
    ]
    worst = 0.0
    for label, law, delta, alpha in jobs:
        k = sum(1 for v in law.values() if v > 0)
        if k < 2:
            continue
        old = old_samples_for(law, delta, alpha, BETA)
        t0 = time.perf_counter()
        new = samples_for(law, delta, alpha, BETA)
        sec = time.perf_counter() - t0
        from rheo.lossless import promise

        kind = promise.planner(law, alpha, BETA).kind(new)
        worst = max(worst, new / old)
        rows.append(f"| {label} | {k} | {old:,} | {new:,} | {new / old:.2f} | {kind} | {sec:.1f} |")
        print(rows[-1], flush=True)
    print("\n".join(rows))
    print(f"largest proved / old: {worst:.2f}")
    assert worst <= 1.2, f"a row needs {worst:.2f}x the old planner's N"
