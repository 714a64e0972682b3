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
from pathlib import Path

from rheo.cli import flags
from rheo.mutants.library import batch_mutant_rows, bug_mutant_rows, refined
from rheo.mutants.runner import false_alarms, mutant_rows
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
    from rheo.families.registry import suite_families
    from rheo.selfgate.matrix import BETA, DELTA, MUTANT_CASE, alpha_per_test

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
    flags.json_table(sp)
    flags.alpha(sp, default=ALPHA, what="false-alarm probability of each test")
    flags.beta(sp, default=BETA, at="--tv")
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
        "family's pairing (docs/GATE_REFERENCE.md)",
    )
    sp.add_argument(
        "--fewest",
        action="store_true",
        help="only print every mutant's samples_to_convict before and after the hunt (its gate or library case; its "
        "best hunted case, rheo.mutants.best_cases), from exact laws, no sampling: docs/GATE_REFERENCE.md's table (--json: rows)",
    )
    sp.add_argument("--hunt-seed", type=int, default=0, help="seed of the hunt's cases (default 0)")
    sp.add_argument(
        "--hunt-draw",
        choices=("random", "block", "served", "batch"),
        default="random",
        help="how the hunt draws bug-class cases: random (default), block (block verification with the skeleton "
        "where block-token-residual is largest planted, rheo.mutants.hunt_block) or served (every setting, grammars, "
        "draft trees, dyadic rows: the served-decoder classes 15-28, rheo.mutants.hunt_served) or batch (batches of "
        "three requests: the batch classes, rheo.mutants.hunt_batch)",
    )
    sp.add_argument("--hunt-out", default="hunt", help="folder of the hunt's cells (hunt.jsonl; default ./hunt)")
    sp.add_argument(
        "--refine",
        type=int,
        default=0,
        metavar="STEPS",
        help="after the hunt, improve each bug-class mutant's best case by STEPS steps of seeded local search "
        "(rheo.mutants.hunt.refine, seed --hunt-seed) that lower its samples_to_convict (default 0: off; ~0.1 s a step)",
    )
    flags.workers(sp, of="local processes of the hunt")
    sp.set_defaults(func=run_mutants)


def run_mutants(args: argparse.Namespace) -> int:
    from rheo.lossless.stats import min_num_samples
    from rheo.lossless.validate import samples_lower_bound
    from rheo.selfgate.matrix import gate_cases
    from rheo_ref.errors import CaseError
    from rheo_ref.validate import integer
    from rheo_ref.variants import MUTANTS, variant_named

    samples_lower_bound(  # each gate test draws at least the two-cell χ² test's N (which checks the rates)
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
        from rheo.mutants.fewest import fewest, markdown

        result = fewest(alpha=args.alpha, beta=args.beta, only=args.only)
        print(strict_json.dumps(result) if args.json else markdown(result))
        return 0
    if args.hunt is not None:
        return run_hunt(args)
    from rheo_ref.bugclasses.batch import BATCH_MUTANTS
    from rheo_ref.bugclasses.mutants import BUG_MUTANTS

    names = (
        list(dict.fromkeys(variant_named(n).name for n in args.only if n not in BUG_MUTANTS and n not in BATCH_MUTANTS))
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
    if args.case == "auto":  # the bug classes, each on its library case (rheo.mutants.library)
        rows += bug_mutant_rows(args.only, alpha=args.alpha, beta=args.beta)
        rows += batch_mutant_rows(args.only, alpha=args.alpha, beta=args.beta)
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
    if not ok:
        missed = [r["mutant"] for r in rows if r["verdict"] == "MISSED"]
        why = [f"missed: {', '.join(missed)}"] if missed else []
        if fa is not None and fa["at_alpha"]["binomial_p"] < 1e-3:
            why.append(f"false alarms above α (binomial p = {fa['at_alpha']['binomial_p']:.2g})")
        print(f"rheo mutants: FAILED ({'; '.join(why)})", file=sys.stderr)
    return 0 if ok else 1


def _rational(x: Fraction, width: int = 14) -> str:
    s = str(x)
    return s if len(s) <= width else f"{float(x):.3g}"


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


def run_hunt(args: argparse.Namespace) -> int:
    from rheo.mutants.hunt import best, hunt, shared_bases, shared_mutants
    from rheo_ref.validate import integer

    integer("--hunt", args.hunt, min=1, max=100_000)
    integer("--workers", args.workers, min=1, max=256)
    integer("--refine", args.refine, min=0, max=100_000)
    from rheo.selfgate.matrix import mutant_case
    from rheo_ref.variants import MUTANTS

    variants = [n for n in (args.only or MUTANTS) if n in MUTANTS]
    for n in variants:
        mutant_case(n)  # (the gate case's exact laws, memoised before any worker starts)
    cells = hunt(
        Path(args.hunt_out),
        seed=args.hunt_seed,
        cases=args.hunt,
        alpha=args.alpha,
        beta=args.beta,
        workers=args.workers,
        variants=variants,
        shared=[base for base in shared_bases() if set(shared_mutants(base)) & set(variants)],
        draw=args.hunt_draw,
    )
    b = best(cells)
    if args.refine:
        chosen = {n: r for n, r in b["per_mutant"].items() if not args.only or n in args.only}
        better = refined(chosen, seed=args.hunt_seed, steps=args.refine, alpha=args.alpha, beta=args.beta)
        b["per_mutant"].update(better)
    summary = {
        "seed": args.hunt_seed,
        "cases": args.hunt,
        "alpha": args.alpha,
        "beta": args.beta,
        "per_mutant": {
            n: {
                k: r.get(k)
                for k in (
                    "samples_to_convict",
                    "convicting_check",
                    "exact_tv_float",
                    "seed",
                    "i",
                    "draw",
                    "refine",
                    "case",
                    "batch",
                )
                if k in r
            }
            for n, r in b["per_mutant"].items()
        },
        "shared": {
            m: {"floor": c["floor"], "seed": c["seed"], "i": c["i"], "draw": c.get("draw", "random"), "case": c["case"]}
            for m, c in b["shared"].items()
        },
    }
    if args.json:
        print(strict_json.dumps(summary))
        return 0
    w = sys.stdout.write
    w(
        f"hunt: {args.hunt} cases from seed {args.hunt_seed}, draw {args.hunt_draw} "
        f"(α={args.alpha:g}, power {1 - args.beta:g})\n"
    )
    for n, r in summary["per_mutant"].items():
        how = f", refined {r['refine']['steps']} steps from {r['refine']['from']}" if "refine" in r else ""
        w(
            f"{n:30} samples_to_convict {r['samples_to_convict']:>10}  ({r['convicting_check']}, case {r['seed']}/{r['i']}{how})\n"
        )
    for m, c in summary["shared"].items():
        w(f"shared {m:8} floor {c['floor']:.3f}  (case {c['seed']}/{c['i']})\n")
    return 0
