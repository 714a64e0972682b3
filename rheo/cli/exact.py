"""`rheo exact CASE.json`: the exact output law, TV and τ of a case (rheo_ref.exact)."""

from __future__ import annotations

import argparse

from rheo_ref import strict_json
from rheo_ref.validate import integer

EXACT_EPILOG = """\
output (one JSON object; probabilities are exact rationals as strings; keys are comma-joined
token ids; zero entries are omitted):
  law            law of the first N tokens decoded by repeated rounds of the scheme
  target         the target law p(s_1..s_N | context) = prod p(s_i | context, s_<i)
  tv             exact total-variation distance between law and target ("0": lossless)
  tau            expected tokens emitted by the first round (from the case's context);
                 null with --method walk (it computes rounds only up to N tokens)
  round_lengths  law of the number of tokens the first round emits (1..D+1; walk: 1..N and
                 ">N" for a round that emits more)
  acceptance     one-level acceptance rate: P(some child of the root is accepted)
  method         the enumerator used (dp, classes, brute, walk or chain; all are exact and must agree)
  choice         without --method: {"method", "reason", "estimates"}: the method predicted to be the
                 fastest and why (brute where tiny; else the fastest predicted; chain where dp's
                 kept trees are past a cheap probe), with every method's estimate
                 (docs/EXACT_AT_SCALE.md §11)
  enumerated     how many trees (outcomes) the enumerator visited over all rounds it needed
                 (dp: the kept trees its best-first construction branched into, before
                 merging, docs/EXACT_AT_SCALE.md; chain: the distinct frontiers of its
                 chain; walk: shallow trees; family static: brute counts joint draws of
                 the tree, classes and dp the sibling draws its subtree recursion visited,
                 docs/SCHEMES.md)
  seconds        wall time of the computation
size limits: refused up front, before any work, with the estimate: --max-trees (trees per round)
and --max-law-size (tokens in all the sequences of the N-token law, b^N x N); --force overrides both.
exit status: 0 ok, 2 bad input or a size refused as too large, 130 interrupted (docs/CLI.md)."""


def run_exact(args: argparse.Namespace) -> int:
    from rheo.engines import MAX_WORKERS, local_parallel
    from rheo_ref.exact import exact_report
    from rheo_ref.models import load_case

    integer("--max-trees", args.max_trees, min=1)
    integer("--max-law-size", args.max_law_size, min=1)
    if args.workers is not None:
        integer("--workers", args.workers, min=1, max=MAX_WORKERS)
    case = load_case(args.case)
    with local_parallel(args.workers) as parallel:
        report = exact_report(
            case,
            args.method,
            args.tokens,
            max_trees=None if args.force else args.max_trees,
            max_law_size=None if args.force else args.max_law_size,
            parallel=parallel,
        )
    print(strict_json.dumps(report.to_json()))
    return 0


def register(sub) -> None:
    ex = sub.add_parser(
        "exact",
        help="exact output law, TV, tau of a case (section-10 JSON)",
        description="Compute exactly (Fractions) what a scheme emits on a table-model case.",
        epilog=EXACT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ex.add_argument("case", help="case file in the section-10 JSON format")
    ex.add_argument(
        "--method",
        choices=("dp", "classes", "brute", "walk", "chain"),
        default=None,
        help="default: the method predicted to be the fastest for the case (the output's `choice` says "
        "which and why); dp: kept trees built best-first and lazily, verified together level by level "
        "(family static: the subtree recursion); classes: every tree, sampled identities grouped "
        "into classes; brute: every sampled identity (static: every joint draw); walk (family rheo): "
        "the law of the first N tokens from the kept nodes of depth <= N and counts of the deeper "
        "ones, at the paper's budget; chain (family rheo): whole rounds by conditioning on the key "
        "of the R-th kept node, a pass over the chain of frontiers per cut, at the paper's budget "
        "(docs/EXACT_AT_SCALE.md)",
    )
    ex.add_argument(
        "--workers",
        type=int,
        default=None,
        help="local processes for the parts of a round that can run apart (method chain); default: the "
        "number of CPUs; 1: everything in this process (the law is the same)",
    )
    ex.add_argument("--tokens", type=int, default=None, help="number of tokens N (default: the case's `tokens`)")
    ex.add_argument(
        "--max-trees",
        type=int,
        default=2_000_000,
        help="refuse when the estimated trees per round exceed this (dp: stop when one round passes it; "
        "chain: stop when a computation passes this many distinct frontiers)",
    )
    ex.add_argument(
        "--max-law-size",
        type=int,
        default=10_000_000,
        metavar="N",
        help="refuse when the N-token law's estimated size (b^N sequences x N tokens) exceeds this",
    )
    ex.add_argument("--force", action="store_true", help="run even when a size estimate exceeds its limit")
    ex.set_defaults(func=run_exact)
