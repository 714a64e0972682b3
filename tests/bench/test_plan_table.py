"""N against the support and ‖p‖₂/₃: the gate's proved planner beside the old asymptotic one.

The case is `tests/cases/v12-first-order.json` (V = 12, a first-order target), its first 1–4
tokens, at α = 1e-3, β = 0.01, δ = 0.1. "old" is the planner the gate used before the promise was
proved (Pearson over cells pooled below an expected count of 10, N from the noncentral χ² at
β/2, plus the pooled mass charged to δ), kept here only as this table's baseline: its N carried no
finite-N guarantee. "proved" is `rheo.lossless.stats.samples_for` (docs/STATISTICS.md, "What the
statistics promise"). Run: `pytest -m bench tests/bench/test_plan_table.py -s`.
"""

from __future__ import annotations

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


@pytest.mark.bench
def test_n_against_support_and_two_thirds_norm():
    case = load_case(str(CASE))
    rows = [
        "| tokens | support | ‖p‖₂/₃ | old N | proved N | proved / old | seconds to plan |",
        "|---|---|---|---|---|---|---|",
    ]
    for tokens in range(1, 5):  # 5 tokens: 248,832 outcomes, past the planner's [grid × K] arrays
        law = target_law(case, tokens)
        probs = [float(v) for v in law.values() if v > 0]
        norm = sum(x ** (2 / 3) for x in probs) ** 1.5
        old = old_samples_for(law, DELTA, ALPHA, BETA)
        t0 = time.perf_counter()
        new = samples_for(law, DELTA, ALPHA, BETA)
        sec = time.perf_counter() - t0
        rows.append(f"| {tokens} | {len(probs):,} | {norm:.1f} | {old:,} | {new:,} | {new / old:.2f} | {sec:.1f} |")
        print(rows[-1], flush=True)
    print("\n".join(rows))
