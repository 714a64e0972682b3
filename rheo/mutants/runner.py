"""The mutants' negative controls on the self-gate matrix and the false-alarm measurement of the correct
fast path: the rows `rheo mutants` prints (rheo.cli.mutants is its command line)."""

from __future__ import annotations

from typing import Any


def mutant_rows(case: str, names: list[str], *, alpha: float, beta: float, tv: float) -> list[dict]:
    from rheo.selfgate.bugclasses import CLASS_OF
    from rheo.selfgate.matrix import CHECKS, exact_tvs, gate_cases, gate_samples_to_convict, mutant_case, run_check
    from rheo_ref.variants import MUTANTS

    rows = []
    for name in names:
        gc = gate_cases()[mutant_case(name) if case == "auto" else case]
        tvs = exact_tvs(gc, name)
        tests = [run_check(gc, ch, mutant=name, alpha=alpha, beta=beta, tv=tv) for ch in CHECKS]
        rejected = any(t.rejected for t in tests)
        expected = max(tvs.values()) >= tv
        verdict = ("caught" if rejected else "MISSED") if expected else ("caught (below δ)" if rejected else "below δ")
        n_convict, by = gate_samples_to_convict(gc, name, alpha, beta)
        rows.append(
            {
                "mutant": name,
                "class": CLASS_OF[name],
                "samples_to_convict": n_convict,
                "convicting_check": by,
                "case": gc.name,
                "description": MUTANTS[name].description,
                "exact_tv": {ch: str(v) for ch, v in tvs.items()},
                "exact_tv_float": {ch: float(v) for ch, v in tvs.items()},
                "N": {t.label.split()[1]: t.n for t in tests},
                "p_value": {t.label.split()[1]: t.p_value for t in tests},
                "detectable_tv": {t.label.split()[1]: t.detectable_tv for t in tests},
                "rejected": rejected,
                "expected": expected,
                "verdict": verdict,
                "note": MUTANTS[name].note,
                "diagnosis": diagnosis(tests),
            }
        )
    return rows


def diagnosis(tests: list) -> dict | None:
    """Where the most significant of a mutant's tests says its law goes wrong: the check, the
    conditional law that deviates most and the three cells with the largest residuals."""
    worst = min(tests, key=lambda t: (not t.rejected, -t.impossible, t.p_value, -t.chi2))
    cond = worst.worst_conditional
    return {
        "check": worst.label.split()[1],
        "rejected": worst.rejected,
        "where": None if cond is None else cond.where,
        "conditional": None if cond is None else cond.text(),
        "cells": [c.text() for c in worst.top_cells[:3]],
    }


def false_alarms(case: str, seeds: int, *, alpha: float, beta: float, tv: float, mutant: str | None = None) -> dict:
    """The correct fast path under `seeds` seeds (seed i runs check i mod 4): rejections at α and at 0.05.
    `mutant` runs that mutant's fast path instead (the measurement's negative control)."""
    from scipy.stats import binomtest, kstest

    from rheo.lossless.stats import seed_for
    from rheo.selfgate.matrix import CHECKS, gate_cases, run_check

    gc = gate_cases()[case]
    pvals = []
    for i in range(seeds):
        ch = CHECKS[i % len(CHECKS)]
        res = run_check(gc, ch, seed=seed_for(f"false-alarm|{case}|{i}"), mutant=mutant, alpha=alpha, beta=beta, tv=tv)
        pvals.append(res.p_value)
    out: dict[str, Any] = {"seeds": seeds, "alpha": alpha}
    for a, key in ((alpha, "at_alpha"), (0.05, "at_0.05")):
        k = sum(p < a for p in pvals)
        out[key] = {"level": a, "rejections": k, "expected": seeds * a, "binomial_p": binomtest(k, seeds, a).pvalue}
    out["ks_uniform_p"] = float(kstest(pvals, "uniform").pvalue)  # χ² p-values are near-uniform under the null
    return out
