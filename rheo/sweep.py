"""`rheo sweep GRID.json`: a grid of table generators × schemes × temperatures (rheo_ref.grid) →
one tidy table, one row per cell, written as CSV and Parquet, with a progress bar, a summary plot
and resumption (docs/EXACT_AT_SCALE.md §5).

The cells run on an existing engine, never on a scheduler of ours:
- local processes (the default): `concurrent.futures.ProcessPoolExecutor`, `--workers` of them
  (1: in this process);
- Dask distributed: `--scheduler tcp://HOST:PORT`, the address of a running scheduler (workers
  need rheo installed; `distributed.LocalCluster` makes one on this machine).
Files are written atomically (a temporary name in the same folder, then `os.replace`), the CSV
every few seconds while cells finish, so an interrupted sweep resumes from what it wrote: a cell
whose (case hash, method) is in the table is skipped. Dask, pyarrow and matplotlib are imported
only where they are used.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ProcessPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from rheo_ref.atomic import write_with
from rheo_ref.errors import CaseError, MissingDependencyError
from rheo_ref.grid import COLUMN_NAMES, COLUMNS, Cell, grid_cells, run_cell
from rheo_ref.validate import show

Runner = Callable[[list[Cell]], Iterator[dict]]
WRITE_EVERY = 5.0  # seconds between rewrites of the CSV while cells finish


def load_grid(path: str) -> list[Cell]:
    """The cells of a grid file; every problem is one `CaseError` line."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as e:
        raise CaseError(f"cannot read grid file {path!r}: {e.strerror}") from None
    try:
        grid = json.loads(text)
    except json.JSONDecodeError as e:
        raise CaseError(f"{path}: not JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    return grid_cells(grid)


# --- engines -----------------------------------------------------------------------------------


@contextmanager
def engine(scheduler: str | None = None, workers: int | None = None, *, fn: Callable = run_cell) -> Iterator[Runner]:
    """A runner that yields each cell's row (`fn(cell)`, default `run_cell`) as it finishes, on
    local processes or on Dask."""
    if scheduler is not None:
        with _dask(scheduler, fn) as run:
            yield run
        return
    if workers is None:
        workers = os.cpu_count() or 1
    if workers < 1:
        raise CaseError(f"--workers {workers} must be >= 1")
    if workers == 1:
        yield lambda cells: (fn(c) for c in cells)
        return
    pool = ProcessPoolExecutor(max_workers=workers)
    try:
        yield lambda cells: (f.result() for f in as_completed([pool.submit(fn, c) for c in cells]))
    finally:  # on an interruption, cells not started yet are dropped, not waited for
        pool.shutdown(wait=True, cancel_futures=True)


@contextmanager
def _dask(address: str, fn: Callable = run_cell) -> Iterator[Runner]:
    if not re.fullmatch(r"(tcp|tls|ws|wss)://[^\s:/]+:[0-9]{1,5}", address):
        raise CaseError(f"--scheduler {show(address)} must be a Dask scheduler address such as tcp://HOST:PORT")
    try:
        import distributed
    except ModuleNotFoundError:
        raise MissingDependencyError("--scheduler needs Dask: pip install 'dask[distributed]'") from None
    try:
        client = distributed.Client(address, timeout="30s")
    except OSError as e:
        raise CaseError(f"--scheduler {address}: no Dask scheduler answers there ({e})") from None
    with client:
        yield lambda cells: (f.result() for f in distributed.as_completed(client.map(fn, cells, pure=False)))


# --- the table ---------------------------------------------------------------------------------


def _typed(row: dict) -> dict:
    """A row read back from CSV (strings) with the columns' types; empty cells are None."""
    out: dict = {}
    for name, kind in COLUMNS:
        v = row.get(name) or ""
        out[name] = v if kind is str else (kind(v) if v else None)
    return out


def read_table(path: Path) -> list[dict]:
    """The rows of a sweep's CSV (none if it does not exist)."""
    if not path.exists():
        return []
    with open(path, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        if reader.fieldnames != COLUMN_NAMES:
            raise CaseError(f"{path}: not a sweep table (columns {reader.fieldnames}); use another --out")
        return [_typed(r) for r in reader]


def write_csv(rows: list[dict], path: Path) -> None:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=COLUMN_NAMES, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if r.get(k) is None else r[k]) for k in COLUMN_NAMES})
    write_with(path, lambda tmp: Path(tmp).write_text(buf.getvalue(), encoding="utf-8"))


def write_parquet(rows: list[dict], path: Path) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ModuleNotFoundError:
        raise MissingDependencyError("writing Parquet needs pyarrow: pip install pyarrow") from None
    types = {str: pa.string(), int: pa.int64(), float: pa.float64()}
    schema = pa.schema([(name, types[kind]) for name, kind in COLUMNS])
    table = pa.Table.from_pylist([{k: r.get(k) for k in COLUMN_NAMES} for r in rows], schema=schema)
    write_with(path, lambda tmp: pq.write_table(table, tmp))


def plot(rows: list[dict], path: Path) -> None:
    """τ and TV against temperature, one line per scheme (τ: mean over the tables, with its range)."""
    import matplotlib

    matplotlib.use("Agg")
    from fractions import Fraction

    import matplotlib.pyplot as plt

    ok = [r for r in rows if not r["error"]]
    fig, (a_tau, a_tv) = plt.subplots(1, 2, figsize=(11, 4))
    for i, scheme in enumerate(sorted({r["scheme"] for r in ok})):
        by_t: dict[Fraction, list[dict]] = {}
        for r in ok:
            if r["scheme"] == scheme:
                by_t.setdefault(Fraction(r["temperature"]), []).append(r)
        ts = sorted(by_t)
        taus = [[r["tau_float"] for r in by_t[t]] for t in ts]
        label = " ".join(f"{k}={v}" for k, v in json.loads(scheme).items())
        a_tau.plot([float(t) for t in ts], [sum(v) / len(v) for v in taus], "o-", color=f"C{i}", label=label)
        a_tau.fill_between(
            [float(t) for t in ts], [min(v) for v in taus], [max(v) for v in taus], color=f"C{i}", alpha=0.15
        )
        a_tv.plot([float(t) for t in ts], [max(r["tv_float"] for r in by_t[t]) for t in ts], "o-", color=f"C{i}")
    a_tau.set(xlabel="temperature T", ylabel="exact τ (mean over tables, range shaded)", title="τ per scheme")
    a_tv.set(xlabel="temperature T", ylabel="exact TV to the target (max over tables)", title="TV per scheme")
    a_tau.legend(fontsize=7)
    fig.tight_layout()
    write_with(path, lambda tmp: fig.savefig(tmp, format="png", dpi=110))
    plt.close(fig)


# --- the sweep ---------------------------------------------------------------------------------


@dataclass
class SweepResult:
    rows: list[dict]  # one per cell, in grid order
    computed: int  # cells run now
    skipped: int  # cells found finished in the table
    files: dict[str, str]  # csv, parquet, plot -> path
    seconds: float

    def to_json(self) -> dict:
        return {
            "cells": len(self.rows),
            "computed": self.computed,
            "skipped": self.skipped,
            "errors": sum(1 for r in self.rows if r["error"]),
            **self.files,
            "seconds": round(self.seconds, 3),
        }


def run(
    cells: list[Cell], *, scheduler: str | None = None, workers: int | None = None, progress: bool = False
) -> list[dict]:
    """The rows of `cells`, one per cell in their order, computed on an engine (no files): what
    the notebooks call. A case that appears twice is computed once."""
    from tqdm import tqdm

    unique = list({c.key: c for c in cells}.values())
    rows: dict[tuple[str, str], dict] = {}
    with engine(scheduler, workers) as runner:
        for row in tqdm(runner(unique), total=len(unique), disable=not progress, file=sys.stderr, unit="cell"):
            rows[(row["case_hash"], row["method"])] = row
    return [rows[c.key] for c in cells]


def sweep(
    cells: list[Cell],
    out: Path,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    progress: bool = True,
    summary_plot: bool = True,
) -> SweepResult:
    """Run the cells not yet in `out`/sweep.csv, writing the table as they finish (module docstring)."""
    from tqdm import tqdm

    t0 = time.perf_counter()
    out.mkdir(parents=True, exist_ok=True)
    csv_path, pq_path, png_path = out / "sweep.csv", out / "sweep.parquet", out / "sweep.png"
    keys = [c.key for c in cells]
    if len(set(keys)) != len(keys):
        cells = list({c.key: c for c in cells}.values())  # the same case twice is one cell
        keys = [c.key for c in cells]
    found = {(r["case_hash"], r["method"]): r for r in read_table(csv_path)}
    done = {k: found[k] for k in keys if k in found}
    todo = [c for c in cells if c.key not in done]

    def ordered() -> list[dict]:
        return [done[k] for k in keys if k in done]

    last = time.monotonic()
    try:
        with engine(scheduler, workers) as runner:
            bar = tqdm(
                total=len(cells),
                initial=len(cells) - len(todo),
                disable=not progress,
                file=sys.stderr,
                unit="cell",
                desc="sweep",
            )
            with bar:
                for row in runner(todo):
                    done[(row["case_hash"], row["method"])] = row
                    bar.update(1)
                    if time.monotonic() - last >= WRITE_EVERY:
                        write_csv(ordered(), csv_path)
                        last = time.monotonic()
    finally:
        rows = ordered()
        write_csv(rows, csv_path)
    write_parquet(rows, pq_path)
    files = {"csv": str(csv_path), "parquet": str(pq_path)}
    if summary_plot:
        plot(rows, png_path)
        files["plot"] = str(png_path)
    return SweepResult(rows, len(todo), len(cells) - len(todo), files, time.perf_counter() - t0)
