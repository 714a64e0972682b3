"""`rheo cases`: the case library (rheo.mutants.library, rheo.selfgate.case_library) on the command line."""

from __future__ import annotations

import argparse
import sys

from rheo.cli import flags
from rheo.mutants.library import false_alarms, library_rows
from rheo_ref import strict_json

EPILOG = """\
columns: name · family/pairing · floor (every listed mutant's exact TV on its best check is >= it)
· N: samples a gate check needs at δ = floor, α and β (the largest over the case's checks)
· mutants covered. --show NAME prints one case's JSON (the bug-class case format, docs/GATE_REFERENCE.md).
exit status: 0 ok, 2 bad input (docs/CLI.md)."""


def register(subparsers) -> None:
    from rheo.selfgate.matrix import BETA, alpha_per_test

    ALPHA = alpha_per_test()

    sp = subparsers.add_parser(
        "cases",
        help="the case library: shared hunted cases that convict every known mutant with few samples",
        description="List the case library: per family and pairing, a hunted case on which every known "
        "mutant has exact TV >= the stated floor, and the samples a gate check needs there.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    flags.json_table(sp)
    sp.add_argument("--show", metavar="NAME", help="print the case NAME (JSON)")
    flags.alpha(sp, default=ALPHA, what="level of each check")
    flags.beta(sp, default=BETA, at="floor")
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


def run_cases(args: argparse.Namespace) -> int:
    from rheo.selfgate.case_library import LIBRARY
    from rheo_ref.errors import CaseError

    if args.show is not None:
        if args.show not in LIBRARY:
            raise CaseError(f"--show {args.show!r} is not a library case; allowed: {', '.join(LIBRARY)}")
        print(strict_json.dumps(LIBRARY[args.show]["case"], indent=1))
        return 0
    from rheo_ref.validate import integer

    integer("--false-alarms", args.false_alarms, min=0, max=100_000)
    rows = library_rows(args.alpha, args.beta)  # (the library checks the rates)
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
