"""`rheo paper-tables`: the seeds' Tables 4/5 and Figures 3/4 on SmolLM2 + the draft head
(rheo_fast.lm.paper_tables). Arguments are checked before any model loads (docs/CLI.md)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from rheo.cli import flags
from rheo.cli.lm import MAX_SEED, MAX_THREADS
from rheo_ref import strict_json
from rheo_ref.atomic import check_writable, write_text_atomic
from rheo_ref.errors import CaseError
from rheo_ref.validate import integer, show


def cmd_paper_tables(args: argparse.Namespace) -> int:
    integer("--seed", args.seed, min=0, max=MAX_SEED)
    if args.threads is not None:
        integer("--threads", args.threads, min=1, max=MAX_THREADS)
    if args.draft is not None and not Path(args.draft).is_file():
        raise CaseError(
            f"--draft {show(args.draft)} is not a file; allowed: a draft head written by `rheo train-draft`"
        )
    out = check_writable(args.out, folder=True)
    from rheo_fast.lm.paper_report import markdown, plot
    from rheo_fast.lm.paper_tables import quick_or_full, run

    res = run(
        quick_or_full(args.quick, args.seed), out, draft=args.draft, progress=not args.quiet, threads=args.threads
    )
    name = "paper_tables_quick" if args.quick else "paper_tables"
    write_text_atomic(out / f"{name}.json", strict_json.dumps(res, indent=1))
    md = markdown(res)
    write_text_atomic(out / f"{name}.md", md)
    plot(res, out / f"{name}.png")
    print(md)
    print(f"wrote {out / (name + '.json')}, .md and .png")
    return 0


def register(sub: Any) -> None:
    p = sub.add_parser(
        "paper-tables",
        help="the seeds' Tables 4/5 and Figures 3/4 on SmolLM2 (exact rates, paired RB intervals)",
        description="Exact depth-1 acceptance (Table 4) and support coverage (Table 5) at real contexts, "
        "and τ against m and T (Figures 3/4) with common random numbers and the Rao-Blackwellised "
        "round length; writes reports/paper_tables.{json,md,png} (paper_tables_quick.* with --quick). "
        "Resumable: finished units are kept under <out>/paper_tables.work/.",
    )
    p.add_argument("--quick", action="store_true", help="the test size (a minute), not the documented run")
    p.add_argument("--out", default="reports", help="report folder (default reports/)")
    flags.seed(p, of="the sampling")
    p.add_argument("--draft", default=None, help="draft head file (default: the cache folder)")
    p.add_argument("--threads", type=int, default=None)
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=cmd_paper_tables)
