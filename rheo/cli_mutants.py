"""`rheo mutants`: the negative controls of the lossless gate and its false-alarm rate.

For every mutant (`rheo_ref.variants.MUTANTS`, every family) on its gate case (per mutant, the
one of its family's mutant cases where its exact TV is largest): its exact TV per check (from
its exact counterpart, `rheo_ref.families.rheo.mutants`), the gate's tests run on the fast path running that
variant (N, p-values) and whether they reject. Then the correct fast path under
`--seeds` seeds: how often the gate's test rejects it, with a two-sided binomial p-value
against α (and against 0.05, where a miscalibrated test shows at 100 seeds).
"""

from __future__ import annotations

import argparse
import sys
import time
from fractions import Fraction
from typing import Any

from rheo_ref import strict_json

EPILOG = """\
columns: mutant · gate case · exact TV of each check (joint2, joint3: first 2/3 tokens vs the target law;
round: first round's sequence vs the spec's round law; lengths: its length law), as rationals
in --json · N of each test · rejected (any check at level α) · expected (some exact TV >= δ).
Under each rejected mutant: where its most significant check says the law goes wrong (the
conditional law that deviates most, e.g. "token 3 given token 1 = 1, token 2 = 0") and its worst
cell; --json: `diagnosis` (check, where, conditional, the three worst cells).
A mutant whose exact TV is below δ on every check (float-level effects) is reported as such.
--case C runs the mutants of C's scheme family (a mutant of another family named in --only is
refused). tsubame-plan-after-sampling has no vectorised fast path: its sampler is the reference replay.
exit status: 0 when every expected mutant is rejected and the false-alarm count is consistent
with α (binomial p >= 0.001); 1 otherwise; 2 bad input; 130 interrupted (docs/CLI.md).
size limits: --seeds <= 100,000 (each seed runs one gate test); the samples of one gate test
<= 10^7 (refused up front from --tv, --alpha, --beta: a --tv of 1e-4 would need ~10^9)."""

MAX_SEEDS = 100_000
MAX_SAMPLES = 10**7  # samples of one gate test (a lower bound, from --tv, --alpha, --beta)


def register(subparsers) -> None:
    from .family import suite_families
    from .gate import BETA, DELTA, MUTANT_CASE, alpha_per_test

    ALPHA = alpha_per_test()

    per_family = "; ".join(f"{f.name}: {', '.join(f.mutant_rows)}" for f in suite_families().values() if f.mutant_rows)

    sp = subparsers.add_parser(
        "mutants",
        help="the lossless gate's negative controls and false-alarm rate",
        description="Run the lossless gate on every deliberately broken fast path (mutant) "
        "and on the correct one under many seeds.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sp.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    sp.add_argument(
        "--alpha", type=float, default=ALPHA, help=f"false-alarm probability of each test (default {ALPHA:g})"
    )
    sp.add_argument("--beta", type=float, default=BETA, help=f"miss probability at TV = --tv (default {BETA:g})")
    sp.add_argument(
        "--tv", type=float, default=DELTA, help=f"the TV δ each test detects with power 1-β (default {DELTA:g})"
    )
    sp.add_argument(
        "--case",
        default="auto",
        help=f"gate case of the mutants (default auto: per mutant, the one of its family's mutant cases "
        f"where its exact TV is largest; {per_family}); a case runs its own family's mutants",
    )
    sp.add_argument(
        "--fa-case", default=MUTANT_CASE, help=f"gate case of the false-alarm measurement (default {MUTANT_CASE})"
    )
    sp.add_argument("--only", nargs="+", metavar="MUTANT", help="only these mutants")
    sp.add_argument(
        "--seeds",
        type=int,
        default=100,
        help=f"seeds of the false-alarm measurement (default 100; 0 skips it; at most {MAX_SEEDS:,})",
    )
    sp.add_argument(
        "--hunt",
        type=int,
        metavar="CASES",
        help="search CASES small cases (seeded, resumable: --hunt-out) for the one where each bug-class mutant is "
        "convicted with the fewest samples, and the shared case of each verification mode and of each algorithmic "
        "family's pairing (docs/GATE.md)",
    )
    sp.add_argument(
        "--fewest",
        action="store_true",
        help="only print every mutant's samples_to_convict before and after the hunt (its gate or library case; its "
        "best hunted case, rheo.best_cases), from exact laws, no sampling: docs/GATE.md's table (--json: rows)",
    )
    sp.add_argument("--hunt-seed", type=int, default=0, help="seed of the hunt's cases (default 0)")
    sp.add_argument(
        "--hunt-draw",
        choices=("random", "block"),
        default="random",
        help="how the hunt draws bug-class cases: random (default) or block (block verification with the skeleton "
        "where block-token-residual is largest planted, rheo.hunt_block)",
    )
    sp.add_argument("--hunt-out", default="hunt", help="folder of the hunt's cells (hunt.jsonl; default ./hunt)")
    sp.add_argument(
        "--refine",
        type=int,
        default=0,
        metavar="STEPS",
        help="after the hunt, improve each bug-class mutant's best case by STEPS steps of seeded local search "
        "(rheo.hunt.refine, seed --hunt-seed) that lower its samples_to_convict (default 0: off; ~0.1 s a step)",
    )
    sp.add_argument("--workers", type=int, default=1, help="local processes of the hunt (default 1)")
    sp.set_defaults(func=run_mutants)


def _rational(x: Fraction, width: int = 14) -> str:
    s = str(x)
    return s if len(s) <= width else f"{float(x):.3g}"


def mutant_rows(case: str, names: list[str], *, alpha: float, beta: float, tv: float) -> list[dict]:
    from rheo_ref.variants import MUTANTS

    from .bugclasses import CLASS_OF
    from .gate import CHECKS, exact_tvs, gate_cases, gate_samples_to_convict, mutant_case, run_check

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

    from .gate import CHECKS, gate_cases, run_check
    from .stats import seed_for

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


def run_mutants(args: argparse.Namespace) -> int:
    from rheo_ref.errors import CaseError
    from rheo_ref.validate import integer
    from rheo_ref.variants import MUTANTS, variant_named

    from .gate import gate_cases
    from .lossless.validate import samples_lower_bound
    from .stats import _check_rate, min_num_samples

    for name in ("alpha", "beta", "tv"):
        _check_rate(name, getattr(args, name))
    samples_lower_bound(  # each gate test draws at least the two-cell χ² test's N
        min_num_samples(args.tv, args.alpha, args.beta, 2),
        alpha=args.alpha,
        tv=args.tv,
        beta=args.beta,
        flags=True,
        limit=MAX_SAMPLES,
        what="samples per gate test",
    )
    for opt, value in (("--case", args.case), ("--fa-case", args.fa_case)):
        if value not in gate_cases() and not (opt == "--case" and value == "auto"):
            raise CaseError(f"{opt} {value!r} is not a gate case; allowed: {', '.join(gate_cases())}")
    integer("--seeds", args.seeds, min=0, max=MAX_SEEDS)
    if args.fewest:
        from .fewest import fewest, markdown

        result = fewest(alpha=args.alpha, beta=args.beta, only=args.only)
        print(strict_json.dumps(result) if args.json else markdown(result))
        return 0
    if args.hunt is not None:
        from .cli_cases import run_hunt

        return run_hunt(args)
    from rheo_ref.bugclasses.mutants import BUG_MUTANTS

    names = (
        list(dict.fromkeys(variant_named(n).name for n in args.only if n not in BUG_MUTANTS))
        if args.only
        else list(MUTANTS)
    )
    if "spec" in names:
        raise CaseError(f"--only spec: the spec is not a mutant; allowed: {', '.join(MUTANTS)}")
    if args.case != "auto":  # the case's family's mutants; one of another family is refused
        family = gate_cases()[args.case].case.scheme.family
        if args.only:
            for n in names:
                MUTANTS[n].check_family(family)
        else:
            names = [n for n in names if MUTANTS[n].family == family]
    t0 = time.perf_counter()
    rows = mutant_rows(args.case, names, alpha=args.alpha, beta=args.beta, tv=args.tv)
    if args.case == "auto":  # the bug classes, each on its library case (rheo.cli_cases)
        from .cli_cases import bug_mutant_rows

        rows += bug_mutant_rows(args.only, alpha=args.alpha, beta=args.beta)
    fa = false_alarms(args.fa_case, args.seeds, alpha=args.alpha, beta=args.beta, tv=args.tv) if args.seeds else None
    ok = all(r["verdict"] != "MISSED" for r in rows) and (fa is None or fa["at_alpha"]["binomial_p"] >= 1e-3)
    out = {
        "case": args.case,
        "fa_case": args.fa_case,
        "alpha": args.alpha,
        "beta": args.beta,
        "tv": args.tv,
        "family_alpha_per_mutant": 4 * args.alpha,
        "mutants": rows,
        "false_alarm": fa,
        "ok": ok,
        "seconds": round(time.perf_counter() - t0, 1),
    }
    if args.json:
        print(strict_json.dumps(out))
    else:
        _print_table(out)
    return 0 if ok else 1


def _print_table(out: dict) -> None:
    w = sys.stdout.write
    w(
        f"lossless gate negative controls (case: {out['case']}): α={out['alpha']:g} per test "
        f"(4 checks: ≤{out['family_alpha_per_mutant']:g} per mutant), power {1 - out['beta']:g} at TV δ={out['tv']:g}\n"
    )
    w(
        f"{'mutant':24} {'case':34} {'TV joint2':>11} {'TV joint3':>11} {'TV round':>11} {'TV lengths':>11} {'N (j2/j3/r/l)':>24} "
        f"{'min p':>9} {'convict N':>9}  verdict\n"
    )
    for r in out["mutants"]:
        tv = {ch: _rational(Fraction(v), 11) for ch, v in r["exact_tv"].items()}
        tv = {ch: tv.get(ch, "-") for ch in ("joint2", "joint3", "round", "lengths")}
        n = "/".join(str(x) for x in r["N"].values())
        w(
            f"{r['mutant']:24} {r['case']:34} {tv['joint2']:>11} {tv['joint3']:>11} {tv['round']:>11} {tv['lengths']:>11} {n:>24} "
            f"{min(r['p_value'].values()):9.2g} {r['samples_to_convict'] or '-'!s:>9}  {r['verdict']}"
            f"{'  (' + r['note'] + ')' if r['note'] else ''}\n"
        )
        d = r.get("diagnosis")
        if d and d["rejected"] and d["conditional"]:
            w(f"    where ({d['check']}): {d['conditional']}\n")
            if d["cells"]:
                w(f"    worst cell: {d['cells'][0]}\n")
    fa = out["false_alarm"]
    if fa:
        for key in ("at_alpha", "at_0.05"):
            x = fa[key]
            w(
                f"false alarms, correct fast path on {out['fa_case']}, {fa['seeds']} seeds, level {x['level']:g}: {x['rejections']} rejected "
                f"(expected {x['expected']:g}), binomial p = {x['binomial_p']:.3g}\n"
            )
        w(f"p-values vs uniform (KS): p = {fa['ks_uniform_p']:.3g}\n")
    w(f"{'ok' if out['ok'] else 'FAILED'} in {out['seconds']} s\n")


def main(argv: list[str] | None = None) -> int:
    """`python -m rheo.cli_mutants ARGS` is `rheo mutants ARGS` (one error handler: rheo.cli)."""
    from .cli import main as rheo_main

    return rheo_main(["mutants", *(sys.argv[1:] if argv is None else argv)])


if __name__ == "__main__":
    sys.exit(main())
