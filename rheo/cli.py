"""The `rheo` command line. Every subcommand prints machine-readable output where it says so;
bad input exits with status 2 and one line naming the problem, never a traceback."""
from __future__ import annotations

import argparse
import importlib
import json
import sys
from typing import Sequence

from rheo_ref.errors import RheoError

EXACT_EPILOG = """\
output (one JSON object; probabilities are exact rationals as strings; keys are comma-joined
token ids; zero entries are omitted):
  law            law of the first N tokens decoded by repeated rounds of the scheme
  target         the target law p(s_1..s_N | context) = prod p(s_i | context, s_<i)
  tv             exact total-variation distance between law and target ("0": lossless)
  tau            expected tokens emitted by the first round (from the case's context)
  round_lengths  law of the number of tokens the first round emits (1..D+1)
  acceptance     one-level acceptance rate: P(some child of the root is accepted)
  method         the enumerator used (dp, classes or brute; all are exact and must agree)
  enumerated     how many trees (outcomes) the enumerator visited over all rounds it needed
                 (dp: the kept trees its best-first construction branched into, before
                 merging, docs/EXACT_AT_SCALE.md; family static: brute counts joint draws of
                 the tree, classes and dp the sibling draws its subtree recursion visited,
                 docs/SCHEMES.md)
  seconds        wall time of the computation
exit status: 0 ok, 2 bad input or an enumeration refused as too large (see --force)."""

# Subcommands living in other modules: each exposes register(subparsers).
PLUGINS = ("rheo.cli_sample", "rheo.cli_mutants", "rheo.cli_lm", "rheo.cli_sweep")


def _cmd_exact(args: argparse.Namespace) -> int:
    from rheo_ref.exact import exact_report
    from rheo_ref.models import load_case

    case = load_case(args.case)
    report = exact_report(case, args.method, args.tokens, max_trees=None if args.force else args.max_trees)
    print(json.dumps(report.to_json()))
    return 0


def _cmd_audit(args: argparse.Namespace) -> int:
    from .audit import run_audit

    return run_audit(json_path=args.json, statistical=not args.no_stats, seed=args.seed)


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="rheo", description="RheoSampling: exact reference, fast path, proofs and lossless gate.")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ex = sub.add_parser("exact", help="exact output law, TV, tau of a case (section-10 JSON)",
                        description="Compute exactly (Fractions) what a scheme emits on a table-model case.",
                        epilog=EXACT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    ex.add_argument("case", help="case file in the section-10 JSON format")
    ex.add_argument("--method", choices=("dp", "classes", "brute"), default="dp",
                    help="dp (default): kept trees built best-first and lazily, verified by a memoised recursion "
                         "(family static: the subtree recursion); classes: every tree, sampled identities grouped "
                         "into classes; brute: every sampled identity (static: every joint draw)")
    ex.add_argument("--tokens", type=int, default=None, help="number of tokens N (default: the case's `tokens`)")
    ex.add_argument("--max-trees", type=int, default=2_000_000,
                    help="refuse when the estimated trees per round exceed this (dp: stop when one round passes it)")
    ex.add_argument("--force", action="store_true", help="run even when the size estimate exceeds --max-trees")
    ex.set_defaults(func=_cmd_exact)

    au = sub.add_parser("audit", help="the main job: a matrix of schemes, exact TV, tau, enumeration sizes",
                        description="Audit a built-in matrix of schemes: exact TV to the target, tau, brute vs classes "
                                    "enumeration sizes and times, and the fast path's statistical verdict.")
    au.add_argument("--json", metavar="FILE", help="also write the table as JSON to FILE")
    au.add_argument("--no-stats", action="store_true", help="skip the fast path's statistical verdict column")
    au.add_argument("--seed", type=int, default=0, help="seed of the statistical column (default 0)")
    au.set_defaults(func=_cmd_audit)

    for mod in PLUGINS:
        try:
            module = importlib.import_module(mod)
        except ModuleNotFoundError as e:  # optional part not present in this checkout
            if e.name is None or not (mod == e.name or mod.startswith(e.name + ".")):
                raise
            continue
        module.register(sub)
    return ap


def main(argv: Sequence[str] | None = None) -> int:
    ap = build_parser()
    args = ap.parse_args(argv)
    if getattr(args, "tokens", None) is not None and args.tokens < 1:
        ap.exit(2, f"rheo: error: --tokens {args.tokens} must be >= 1\n")
    try:
        return args.func(args)
    except RheoError as e:
        print(f"rheo: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("rheo: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
