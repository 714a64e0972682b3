"""`rheo compare CASE.json`: every family x compatible verifier at the same number of draft nodes.

The logic lives in `rheo.compare` (also used by notebooks/verifiers.py); this module is the
command line: arguments, the progress bar, the table or the JSON object, the plot. Exact
reference only: it never imports torch.
"""

from __future__ import annotations

import argparse
import sys
import textwrap
import time

from rheo.cli import flags
from rheo_ref import strict_json
from rheo_ref.atomic import check_writable
from rheo_ref.errors import CaseError
from rheo_ref.exact import DEFAULT_MAX_LAW_SIZE, DEFAULT_MAX_TREES
from rheo_ref.family import MAX_NODES
from rheo_ref.models import load_case
from rheo_ref.validate import integer

EPILOG = """\
cells for a budget of N draft nodes (the case's own scheme only gives the default N: its R, or
its number of draft nodes for a static scheme), one rule per registered family (rheo.families.registry;
docs/SCHEMES.md):
{rules}
columns: tau = exact expected tokens of the first round from the case's context (float, then
exact; '*' marks the best lossless tau of a budget), exact TV = of the law of the case's
`tokens` tokens to the target (0: lossless), seconds = wall time of that cell.
--json prints one object instead: {{"case", "context", "tokens", "nodes", "rules", "rows":
[{{"nodes", "family", "scheme", "series", "verifier", "params", "tau", "tau_float", "tv",
"seconds", "enumerated"}}], "seconds"}}; exact values are rational strings.
--plot FILE (.png, .svg or .pdf) draws tau against N, one line per scheme, one panel per family
or pairing (each cell's panel); give several --nodes values for lines.
exit status: 0 ok, 2 bad input or a cell refused as too large (see --force)."""


def epilog() -> str:
    """EPILOG with each registered family's `compare_rule`, wrapped under a bullet."""
    from rheo.families.registry import suite_families

    rules = [
        textwrap.fill(fam.compare_rule, 96, initial_indent="  - ", subsequent_indent="    ")
        for fam in suite_families().values()
        if fam.compare_rule
    ]
    return EPILOG.format(rules="\n".join(rules))


def register(subparsers) -> None:
    sp = subparsers.add_parser(
        "compare",
        help="every family x compatible verifier at the same node budget, exact",
        description="Exact tau and TV of every scheme family and compatible verifier at the "
        "same number of draft nodes, on one case's tables and context.",
        epilog=epilog(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sp.add_argument("case", help="case file in the section-10 JSON format (its tables, context and tokens are used)")
    sp.add_argument(
        "--nodes",
        type=int,
        nargs="+",
        action="extend",
        metavar="N",
        help="draft-node budgets (several: a line per scheme in --plot; default: the case scheme's)",
    )
    sp.add_argument(
        "--tokens", type=int, default=None, help="length of the law whose TV is reported (default: the case's)"
    )
    flags.json_table(sp)
    sp.add_argument("--plot", metavar="FILE", help="write tau against the node budget to FILE (.png, .svg, .pdf)")
    sp.add_argument(
        "--max-trees",
        type=int,
        default=DEFAULT_MAX_TREES,
        help="refuse when a cell's estimated outcomes per round exceed this (default %(default)s)",
    )
    sp.add_argument(
        "--max-law-size",
        type=int,
        default=DEFAULT_MAX_LAW_SIZE,
        help="refuse a --tokens law estimated above this many tokens in all (default %(default)s)",
    )
    sp.add_argument(
        "--force", action="store_true", help="run even when a size estimate exceeds --max-trees or --max-law-size"
    )
    sp.set_defaults(func=run_compare)


MAX_BUDGETS = 64  # --nodes values of one run


def run_compare(args: argparse.Namespace) -> int:
    from tqdm import tqdm

    from rheo.compare import check_plot_path, compare, default_nodes, format_table, plot, to_json

    integer("--max-trees", args.max_trees, min=1)
    integer("--max-law-size", args.max_law_size, min=1)
    for n in args.nodes or []:  # the cells of a budget grow with it (delayed shapes: ~N^2 / 2)
        integer("--nodes", n, min=1, max=MAX_NODES)
    if args.tokens is not None:
        integer("--tokens", args.tokens, min=1)
    if len(args.nodes or []) > MAX_BUDGETS:
        raise CaseError(f"--nodes gives {len(args.nodes)} budgets; allowed: at most {MAX_BUDGETS}")
    if args.plot is not None:
        check_plot_path(args.plot)
        check_writable(args.plot, inputs=(args.case,))
    case = load_case(args.case)
    nodes = args.nodes or [default_nodes(case)]
    tokens = case.tokens if args.tokens is None else args.tokens
    t0 = time.perf_counter()

    def bar(cells):
        return tqdm(
            cells, desc="compare", unit="cell", file=sys.stderr, leave=False, disable=None
        )  # hidden off a terminal

    rows = compare(
        case,
        nodes,
        tokens=tokens,
        max_trees=None if args.force else args.max_trees,
        max_law_size=None if args.force else args.max_law_size,
        progress=bar,
    )
    seconds = time.perf_counter() - t0
    if args.plot:
        plot(rows, args.plot)
    if args.json:
        print(strict_json.dumps(to_json(rows, case_path=args.case, case=case, tokens=tokens, seconds=seconds)))
    else:
        print(format_table(rows, tokens=tokens))
        print(f"{len(rows)} cells in {seconds:.2f} s" + (f"; plot: {args.plot}" if args.plot else ""))
    return 0
