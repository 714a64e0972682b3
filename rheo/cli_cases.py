"""`rheo cases`: the case library — per decoder family and pairing, one shared hunted case on which
every known mutant of that kind has exact TV ≥ the case's floor (docs/GATE.md, "Pick a case").

Gating a decoder of that kind at δ = the floor needs the N the case states (a few thousand
samples at the gate's α) instead of the ~50,000–70,000 the gate's δ = 0.025 needs, and still
catches every known class. The cases come from `rheo mutants --hunt` (seed and index recorded)
and are gate rows (tests/test_bugclasses.py). Also here: the bug-class rows of `rheo mutants`
and its `--hunt`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from rheo_ref import strict_json

EPILOG = """\
columns: name · family/pairing · floor (every listed mutant's exact TV on its best check is >= it)
· N: samples a gate check needs at δ = floor, α and β (the largest over the case's checks)
· mutants covered. --show NAME prints one case's JSON (the bug-class case format, docs/GATE.md).
exit status: 0 ok, 2 bad input (docs/CLI.md)."""


def register(subparsers) -> None:
    from .gate import BETA, alpha_per_test

    ALPHA = alpha_per_test()

    sp = subparsers.add_parser(
        "cases",
        help="the case library: shared hunted cases that convict every known mutant with few samples",
        description="List the case library: per family and pairing, a hunted case on which every known "
        "mutant has exact TV >= the stated floor, and the samples a gate check needs there.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sp.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    sp.add_argument("--show", metavar="NAME", help="print the case NAME (JSON)")
    sp.add_argument("--alpha", type=float, default=ALPHA, help=f"level of each check (default {ALPHA:g})")
    sp.add_argument("--beta", type=float, default=BETA, help=f"miss probability at TV = floor (default {BETA:g})")
    sp.add_argument(
        "--false-alarms",
        type=int,
        default=0,
        metavar="SEEDS",
        help="also run the baseline decoder on each bug-class case (or the --fa-case ones) under SEEDS seeds (seed i: "
        "check i mod checks, at δ = the floor) and report the rejections at α and at 0.05 with binomial p-values "
        "(default 0: skip; at most 100,000). Cost: each seed draws the case's N (the N column) from a pure-Python "
        "decoder on one core: ~0.4 s a seed at N ~ 900 (bugclasses-token: 200 seeds in 90 s; bugclasses-block, "
        "N ~ 2,400: ~1 s a seed; pick cases with --fa-case); a progress bar shows on a terminal",
    )
    sp.add_argument(
        "--fa-case",
        action="append",
        metavar="NAME",
        help="measure the false alarms on this bug-class case only (repeatable; default: every bug-class case)",
    )
    sp.set_defaults(func=run_cases)


def library_rows(alpha: float, beta: float) -> list[dict]:
    from rheo_ref.bugclasses.cases import BugCase, request_law

    from .case_library import LIBRARY
    from .stats import samples_for

    rows = []
    for name, entry in LIBRARY.items():
        if entry["family"] == "bugclasses":
            case = BugCase.from_json(entry["case"])
            laws = [request_law(case, k) for k in range(1, case.tokens + 1)]
        else:  # an algorithmic family's shared case: the gate's four checks
            from .gate import CHECKS, check_law_of

            gc = library_gate_case(name)
            laws = [check_law_of(gc, ch) for ch in CHECKS]
        n = max(samples_for(law, entry["floor"], alpha, beta) for law in laws)
        rows.append(
            {
                "name": name,
                "family": entry["family"],
                "pairing": entry["pairing"],
                "floor": entry["floor"],
                "N": n,
                "alpha": alpha,
                "beta": beta,
                "mutants": entry["mutants"],
                "hunt": entry["hunt"],
            }
        )
    return rows


def library_gate_case(name: str):
    """An algorithmic family's library case as a gate row (the fast path runs its tables at T = 1:
    q_samp is a table)."""
    from rheo_ref.models import Case

    from .case_library import LIBRARY
    from .gate import GateCase

    case = Case.from_json(LIBRARY[name]["case"])
    return GateCase(f"library/{name}", case, case, 1.0)


def run_cases(args: argparse.Namespace) -> int:
    from rheo_ref.errors import CaseError

    from .case_library import LIBRARY
    from .stats import _check_rate

    _check_rate("alpha", args.alpha)
    _check_rate("beta", args.beta)
    if args.show is not None:
        if args.show not in LIBRARY:
            raise CaseError(f"--show {args.show!r} is not a library case; allowed: {', '.join(LIBRARY)}")
        print(strict_json.dumps(LIBRARY[args.show]["case"], indent=1))
        return 0
    from rheo_ref.validate import integer

    integer("--false-alarms", args.false_alarms, min=0, max=100_000)
    rows = library_rows(args.alpha, args.beta)
    bug_cases = [n for n, e in LIBRARY.items() if e["family"] == "bugclasses"]
    for name in args.fa_case or ():
        if name not in bug_cases:
            raise CaseError(f"--fa-case {name!r} is not a bug-class library case; allowed: {', '.join(bug_cases)}")
    if args.false_alarms:
        for r in rows:
            if r["name"] not in (args.fa_case or bug_cases):  # (the gate's measurement: `rheo mutants --seeds`)
                continue
            r["false_alarm"] = false_alarms(r["name"], args.false_alarms, alpha=args.alpha, beta=args.beta)
    if args.json:
        print(strict_json.dumps({"alpha": args.alpha, "beta": args.beta, "cases": rows}))
        return 0
    w = sys.stdout.write
    w(f"case library: α={args.alpha:g} per check, power {1 - args.beta:g} at δ = the floor\n")
    w(f"{'name':27} {'family/pairing':22} {'floor':>7} {'N':>6}  mutants\n")
    for r in rows:
        w(f"{r['name']:27} {r['family'] + '/' + r['pairing']:22} {r['floor']:7.3f} {r['N']:6}  {len(r['mutants'])}\n")
        for key in ("at_alpha", "at_0.05") if "false_alarm" in r else ():
            x = r["false_alarm"][key]
            w(
                f"  false alarms of the baseline, {r['false_alarm']['seeds']} seeds, level {x['level']:g}: "
                f"{x['rejections']} (expected {x['expected']:g}), binomial p = {x['binomial_p']:.3g}\n"
            )
    return 0


def false_alarms(name: str, seeds: int, *, alpha: float, beta: float) -> dict:
    """The baseline decoder on library case `name` under `seeds` seeds (seed i runs check i mod the
    case's checks, at δ = its floor): rejections at α and at 0.05, binomial p-values."""
    from scipy.stats import binomtest
    from tqdm import tqdm

    from rheo_ref.bugclasses.cases import BugCase

    from .bugclasses import checks, run_check, seed
    from .case_library import LIBRARY

    case = BugCase.from_json(LIBRARY[name]["case"])
    cs = checks(case)
    bar = tqdm(
        range(seeds), desc=f"false alarms {name}", unit="seed", file=sys.stderr, disable=None
    )  # hidden off a terminal
    pvals = [
        run_check(
            case, cs[i % len(cs)], alpha=alpha, beta=beta, tv=LIBRARY[name]["floor"], seed=seed(f"fa|{name}|{i}")
        ).p_value
        for i in bar
    ]
    out: dict = {"seeds": seeds}
    for a, key in ((alpha, "at_alpha"), (0.05, "at_0.05")):
        k = sum(p < a for p in pvals)
        out[key] = {"level": a, "rejections": k, "expected": seeds * a, "binomial_p": binomtest(k, seeds, a).pvalue}
    return out


# --- for `rheo mutants` --------------------------------------------------------------------------


def library_case_of(mutant: str) -> str:
    """The library case a bug-class mutant runs on: the case of its verification mode that covers it."""
    from .case_library import LIBRARY

    for name, entry in LIBRARY.items():
        if mutant in entry["mutants"] or mutant in entry.get("below_floor", {}):
            return name
    return next(iter(LIBRARY))


def before_case(mutant: str):
    """(label, case) a bug-class mutant runs on before any hunt: its library case for the seam
    classes (1–14), else the report case of its kind (`rheo_ref.bugclasses.report_cases`)."""
    from rheo_ref.bugclasses.cases import BugCase
    from rheo_ref.bugclasses.mutants import BUG_MUTANTS
    from rheo_ref.bugclasses.report_cases import CASE_OF, REPORT_CASE, report_cases

    from .case_library import LIBRARY

    kind = BUG_MUTANTS[mutant].kind
    if kind == "seam":
        lib = library_case_of(mutant)
        return lib, BugCase.from_json(LIBRARY[lib]["case"])
    name = CASE_OF.get(mutant, REPORT_CASE[kind])
    return f"report case {name}", report_cases()[name]


def bug_mutant_rows(only: list[str] | None, *, alpha: float, beta: float, max_n: int = 200_000) -> list[dict]:
    """The bug-class mutants (all, or those named in `only`), each on its best case (rheo.best_cases;
    else its library case): exact TVs, samples_to_convict, and the convicting check run at that N
    (power ≥ 1 − β at its exact TV); and its samples_to_convict on its library case."""
    from rheo_ref.bugclasses.cases import BugCase
    from rheo_ref.bugclasses.mutants import BUG_MUTANTS

    from .best_cases import BEST_CASES
    from .bugclasses import bug_row, run_check, seed
    from .hunt import FLOAT_LEVEL

    out = []
    for name in BUG_MUTANTS:
        if only and name not in only:
            continue
        lib, case = before_case(name)
        row = bug_row(case, name, alpha=alpha, beta=beta)
        on_library = {"library_case": lib, "library_samples_to_convict": row["samples_to_convict"]}
        if name in BEST_CASES:
            lib, case = f"best/{name}", BugCase.from_json(BEST_CASES[name]["case"])
            row = {**bug_row(case, name, alpha=alpha, beta=beta), "hunt": BEST_CASES[name]["hunt"]}
        row.update(on_library)
        n, ch = row["samples_to_convict"], row["convicting_check"]
        tvs = row["exact_tv_float"]
        if n is None or n > max_n:  # lossless here, or float-level (or above max_n): not run
            res = None
        else:
            res = run_check(
                case, ch, alpha=alpha, beta=beta, tv=min(1.0, tvs[ch]), seed=seed(f"{lib}|{name}"), mutant=name, n=n
            )
        expected = res is not None
        rejected = bool(res and res.rejected)
        note = "" if expected else f"samples_to_convict {n} (float-level)" if n else "lossless on this case"
        if name in FLOAT_LEVEL:
            row.update(float_level_fields(case, alpha=alpha, beta=beta))
            note = (
                f"float-level: exact TV <= {row['tv_bound_hunt_space']:.4g} on every hunted case (proofs 10.1), "
                f"so no case convicts it with fewer than {row['min_possible_samples']:,} samples"
            )
        out.append(
            {
                **row,
                "case": lib,
                "description": BUG_MUTANTS[name].description,
                "N": {ch: res.n} if res else {},
                "p_value": {ch: res.p_value} if res else {"-": 1.0},
                "detectable_tv": {ch: res.detectable_tv} if res else {},
                "rejected": rejected,
                "expected": expected,
                "verdict": ("caught" if rejected else "MISSED") if expected else "below δ",
                "note": note,
            }
        )
    return out


def float_level_fields(case, *, alpha: float, beta: float) -> dict:
    """The proved bound of the float-level class (rheo_ref.bugclasses.float_level): per check on this
    case, and on the whole hunt space with the fewest samples it allows there."""
    from rheo_ref.bugclasses.float_level import case_bounds

    from .bugclasses import min_possible_samples
    from .hunt import float_level_bound

    space = float_level_bound()
    return {
        "float_level": True,
        "tv_bound": {c: float(b) for c, b in case_bounds(case).items()},
        "tv_bound_hunt_space": space,
        "min_possible_samples": min_possible_samples(space, alpha, beta),
        "bound_proof": "proofs claim 10.1 (python -m proofs --only 10)",
    }


def run_hunt(args: argparse.Namespace) -> int:
    from rheo_ref.validate import integer

    from .hunt import best, hunt, shared_bases, shared_mutants

    integer("--hunt", args.hunt, min=1, max=100_000)
    integer("--workers", args.workers, min=1, max=256)
    integer("--refine", args.refine, min=0, max=100_000)
    from rheo_ref.variants import MUTANTS

    from .gate import mutant_case

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


def refined(per_mutant: dict, *, seed: int, steps: int, alpha: float, beta: float) -> dict:
    """Each bug-class mutant's best hunted case after `steps` steps of `rheo.hunt.refine` aimed at its
    samples_to_convict (seeded by `seed`), where that lowers it; the float-level class is left as it is."""
    from rheo_ref.bugclasses.cases import BugCase
    from rheo_ref.bugclasses.mutants import BUG_MUTANTS

    from .bugclasses import bug_row
    from .hunt import FLOAT_LEVEL, refine

    out = {}
    for name, r in per_mutant.items():
        if name not in BUG_MUTANTS or name in FLOAT_LEVEL:
            continue
        case, _ = refine(BugCase.from_json(r["case"]), seed=seed, steps=steps, alpha=alpha, beta=beta, mutant=name)
        row = bug_row(case, name, alpha=alpha, beta=beta)
        if row["samples_to_convict"] is not None and row["samples_to_convict"] < r["samples_to_convict"]:
            out[name] = {
                **row,
                "case": case.to_json(),
                "seed": r["seed"],
                "i": r["i"],
                "draw": r.get("draw", "random"),
                "refine": {"seed": seed, "steps": steps, "from": r["samples_to_convict"]},
            }
    return out
