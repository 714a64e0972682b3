"""`rheo sweep GRID.json`: exact τ and TV over a grid of tables × schemes × temperatures, on local
processes or a Dask cluster (rheo.sweep; the grid format: rheo_ref.grid, docs/EXACT_AT_SCALE.md §5).
Building the parser imports neither torch nor Dask."""

from __future__ import annotations

import argparse
from pathlib import Path

from rheo_ref import strict_json
from rheo_ref.errors import EnvironmentFailure

EPILOG = """\
output: OUT/sweep.csv and OUT/sweep.parquet (one row per cell, in grid order: case_hash, table,
generator, vocab_size, seed, family, scheme, temperature, tokens, method, tau, tau_float, tv,
tv_float, acceptance, enumerated, seconds, error), OUT/sweep.png (τ and TV against temperature,
one line per scheme), and one JSON line on stdout: cells, computed, skipped, errors, the files,
seconds (no plot when every cell failed). A cell already in OUT/sweep.csv (same case hash and method) is skipped: an interrupted
sweep resumes where it stopped. Refused up front (exit 2): an OUT whose table holds rows of
another grid, an OUT another sweep is writing (OUT/.sweep.lock), an OUT whose name is not UTF-8,
a row whose exact tau or tv disagrees with its float. A cell that fails (a refused enumeration, a missing row) gets a
row with `error` set; the sweep goes on.
engines: local processes (default, --workers N; 1 runs in this process) or a running Dask
scheduler (--scheduler tcp://HOST:PORT; its workers need rheo installed).
size limits, refused up front: at most 100,000 cells; each cell's `tokens`-token law at most
max_law_size (grid field, default 10^7) tokens in all, as `rheo exact`; --force lifts both.
exit status: 0 ok (some cells may have failed: their rows say why; --retry-failed runs them again),
1 every cell failed or an I/O error (OUT removed mid-run), 2 bad input (the grid, the scheduler
address, --workers, a size refused, OUT refused as above),
130 interrupted (the cells finished so far are kept in the table for the resume)."""


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
    sp.add_argument("--retry-failed", action="store_true", help="run again the cells whose row in the table failed")
    sp.add_argument(
        "--force", action="store_true", help="run even when the cell count or a law's size is over its limit"
    )
    sp.set_defaults(func=_cmd_sweep)


def _cmd_sweep(args: argparse.Namespace) -> int:
    from rheo.sweep import FILES, check_engine, check_paths, load_grid, sweep
    from rheo_ref.atomic import check_writable

    check_engine(args.scheduler, args.workers)
    out = Path(args.out) if args.out is not None else Path("reports") / f"sweep-{Path(args.grid).stem}"
    check_paths(out)
    cells = load_grid(args.grid, force=args.force)
    check_writable(out, folder=True)
    for name in FILES:
        check_writable(out / name)
    result = sweep(
        cells,
        out,
        scheduler=args.scheduler,
        workers=args.workers,
        progress=not args.no_progress,
        summary_plot=not args.no_plot,
        retry_failed=args.retry_failed,
    )
    print(strict_json.dumps(result.to_json()))
    if result.rows and all(r["error"] for r in result.rows):
        raise CellsFailed(f"every cell failed ({len(result.rows)}), the first with: {result.rows[0]['error']}")
    return 0


class CellsFailed(EnvironmentFailure):
    """Every cell of a sweep failed: the table is written, and the exit status says so (1)."""
