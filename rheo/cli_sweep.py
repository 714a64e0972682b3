"""`rheo sweep GRID.json`: exact τ and TV over a grid of tables × schemes × temperatures, on local
processes or a Dask cluster (rheo.sweep; the grid format: rheo_ref.grid, docs/EXACT_AT_SCALE.md §5).
Building the parser imports neither torch nor Dask."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

EPILOG = """\
output: OUT/sweep.csv and OUT/sweep.parquet (one row per cell, in grid order: case_hash, table,
generator, vocab_size, seed, family, scheme, temperature, tokens, method, tau, tau_float, tv,
tv_float, acceptance, enumerated, seconds, error), OUT/sweep.png (τ and TV against temperature,
one line per scheme), and one JSON line on stdout: cells, computed, skipped, errors, the files,
seconds. A cell already in OUT/sweep.csv (same case hash and method) is skipped: an interrupted
sweep resumes where it stopped. A cell that fails (a refused enumeration, a missing row) gets a
row with `error` set; the sweep goes on.
engines: local processes (default, --workers N; 1 runs in this process) or a running Dask
scheduler (--scheduler tcp://HOST:PORT; its workers need rheo installed).
exit status: 0 ok (even with failed cells), 2 bad input (the grid, the scheduler address)."""


def register(subparsers) -> None:
    sp = subparsers.add_parser(
        "sweep",
        help="exact tau and TV over a grid of tables x schemes x temperatures",
        description="Sweep a grid of table generators x schemes x temperatures: one tidy table "
        "of exact tau and TV (CSV, Parquet), a summary plot, resumable.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sp.add_argument("grid", help="grid file (JSON: tables, schemes, temperatures, context, tokens, method, max_trees)")
    sp.add_argument("--out", metavar="DIR", help="output folder (default: reports/sweep-<grid file name>)")
    sp.add_argument("--scheduler", metavar="ADDRESS", help="run on this Dask scheduler, e.g. tcp://127.0.0.1:8786")
    sp.add_argument(
        "--workers", type=int, default=None, help="local processes (default: the number of CPUs; 1: no pool)"
    )
    sp.add_argument("--no-progress", action="store_true", help="no progress bar")
    sp.add_argument("--no-plot", action="store_true", help="no summary plot")
    sp.set_defaults(func=_cmd_sweep)


def _cmd_sweep(args: argparse.Namespace) -> int:
    from .sweep import load_grid, sweep

    cells = load_grid(args.grid)
    out = Path(args.out) if args.out else Path("reports") / f"sweep-{Path(args.grid).stem}"
    result = sweep(
        cells,
        out,
        scheduler=args.scheduler,
        workers=args.workers,
        progress=not args.no_progress,
        summary_plot=not args.no_plot,
    )
    print(json.dumps(result.to_json()))
    return 0
