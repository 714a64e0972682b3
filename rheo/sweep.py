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
whose (case hash, method) is in the table is skipped. Nothing in the folder is lost: a table that
holds rows of another grid, a folder another sweep is writing (a lock, `.sweep.lock`), a path
pyarrow cannot take and a row whose exact τ or TV disagrees with its float are refused before
any cell runs. Dask, pyarrow and matplotlib are imported only where they are used.
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
from fractions import Fraction
from pathlib import Path
from typing import Any

from rheo_ref import numbers
from rheo_ref.atomic import write_with
from rheo_ref.errors import CaseError, MissingDependencyError, OutputError
from rheo_ref.grid import COLUMN_NAMES, COLUMNS, GridCell, grid_cells, run_cell
from rheo_ref.models import read_json_file, read_text_file
from rheo_ref.validate import integer, show

Runner = Callable[[list[GridCell]], Iterator[dict]]
WRITE_EVERY = 5.0  # seconds between rewrites of the CSV while cells finish


MAX_GRID_BYTES = 16 * 2**20  # a grid file (a `given` table of V = 100 with context_length 2 is ~2 MiB)
MAX_TABLE_BYTES = 256 * 2**20  # a sweep.csv read back on resume
MAX_WORKERS = 1024  # local processes
FILES = ("sweep.csv", "sweep.parquet", "sweep.png")
LOCK = ".sweep.lock"  # held (fcntl.lockf) by the sweep writing the folder; gone when it ends


def load_grid(path: str, *, force: bool = False) -> list[GridCell]:
    """The cells of a grid file; every problem is one `CaseError` line, before any work."""
    return grid_cells(read_json_file(path, "grid file", MAX_GRID_BYTES), force=force)


# --- engines -----------------------------------------------------------------------------------


@contextmanager
def engine(scheduler: str | None = None, workers: int | None = None, *, fn: Callable | None = None) -> Iterator[Runner]:
    """A runner that yields each cell's row (`fn(cell)`, default `run_cell`) as it finishes, on
    local processes or on Dask."""
    if scheduler is not None:  # a cell's own parts (method chain) go to the cluster too
        with _dask(scheduler, fn or _cell_on_cluster) as run:
            yield run
        return
    fn = fn or run_cell  # looked up at call time, so a patched module-level run_cell is the one used
    if workers is None:
        workers = min(os.cpu_count() or 1, MAX_WORKERS)
    integer("--workers", workers, min=1, max=MAX_WORKERS)
    if workers == 1:
        yield lambda cells: (fn(c) for c in cells)
        return
    pool = ProcessPoolExecutor(max_workers=workers)
    run = _Harvest(lambda c: pool.submit(fn, c), as_completed)
    try:
        yield run
    except BaseException:  # Ctrl-C, an error: stop the workers now, not after their cells
        pool.shutdown(wait=False, cancel_futures=True)
        _terminate(pool)
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)


class _Harvest:
    """A runner over futures that also hands back, after an interruption, the rows of the cells
    that finished but were not yielded yet (`finished`), so that the table keeps them."""

    def __init__(self, submit: Callable[[GridCell], Any], completed: Callable[[list], Iterator[Any]]) -> None:
        self.submit, self.completed = submit, completed
        self.futures: list[Any] = []

    def __call__(self, cells: list[GridCell]) -> Iterator[dict]:
        self.futures = [self.submit(c) for c in cells]
        for f in self.completed(self.futures):
            yield f.result()

    def finished(self) -> list[dict]:
        rows = []
        for f in self.futures:
            try:
                if f.done() and not f.cancelled() and f.exception() is None:
                    rows.append(f.result())
            except Exception:  # a future of a lost worker or a closed client
                continue
        return rows


def _terminate(pool: ProcessPoolExecutor) -> None:
    """SIGTERM the pool's worker processes (the executor has no public way to stop running calls)."""
    for proc in list((getattr(pool, "_processes", None) or {}).values()):
        try:
            proc.terminate()
        except (OSError, AttributeError):
            pass


def check_engine(scheduler: str | None, workers: int | None) -> None:
    """Refuse a bad --scheduler or --workers up front (before the grid is read)."""
    if scheduler is not None:
        _check_address(scheduler)
    if workers is not None:
        integer("--workers", workers, min=1, max=MAX_WORKERS)


def _check_address(address: str) -> None:
    m = re.fullmatch(r"tcp://([A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:]{2,39}\]):([0-9]{1,5})", address)
    if not m or not 1 <= int(m.group(2)) <= 65535:
        raise CaseError(
            f"--scheduler {show(address)} must be a Dask scheduler address tcp://HOST:PORT (port 1-65535; "
            f"tls:// and ws:// need a security configuration rheo does not take)"
        )


def _cell_on_cluster(cell: GridCell) -> dict:
    """One cell's row on a Dask worker; a method that cuts a round into parts (chain) maps them onto
    the same cluster (rheo.engines.dask_parallel)."""
    from rheo.engines import dask_parallel

    return run_cell(cell, parallel=dask_parallel())


@contextmanager
def _dask(address: str, fn: Callable) -> Iterator[Runner]:
    _check_address(address)
    try:
        import distributed
    except ModuleNotFoundError:
        raise MissingDependencyError("--scheduler needs Dask: pip install 'dask[distributed]'") from None
    try:
        client = distributed.Client(address, timeout="30s")
    except OSError as e:
        raise CaseError(f"--scheduler {address}: no Dask scheduler answers there ({e})") from None
    with client:
        yield _Harvest(lambda c: client.submit(fn, c, pure=False), distributed.as_completed)


# --- the table ---------------------------------------------------------------------------------


def _typed(row: dict) -> dict:
    """A row read back from CSV (strings) with the columns' types; empty cells are None."""
    out: dict = {}
    for name, kind in COLUMNS:
        v = row.get(name) or ""
        if kind is str or not v:
            out[name] = v if kind is str else None
        else:
            out[name] = numbers.integer_text(v, name) if kind is int else float(numbers.rational(v, name))
    return out


def _agrees(row: dict, where: str, fix: str) -> None:
    """A row's exact τ and TV and their floats say the same (a resumed row is trusted only then)."""
    for name in ("tau", "tv"):
        exact, approx = row[name], row[f"{name}_float"]
        if not exact and approx is None:
            continue
        try:  # not numbers.rational: an exact τ may have hundreds of digits
            value = float(Fraction(exact)) if exact else None
        except (ValueError, ZeroDivisionError, OverflowError):
            raise CaseError(f"{where}: {name} {show(exact)} is not an exact rational; {fix}") from None
        if value is None or approx is None or value != approx:
            raise CaseError(
                f"{where}: {name} {show(exact)} is {value!r} but {name}_float is {approx!r}: the row disagrees "
                f"with itself and is not trusted; {fix}"
            )


def _field_count(r: dict) -> str:
    """What is wrong with a CSV row of the wrong length, as `csv.DictReader` read it: a short row has
    None for its missing columns, a long one its extra fields under the key None."""
    if None in r:
        n = len(COLUMN_NAMES) + len(r[None])
        return f"{n} fields ({n - len(COLUMN_NAMES)} more than the columns)"
    n = sum(v is not None for v in r.values())
    missing = [k for k, v in r.items() if v is None]
    return f"{n} fields (the row stops before column {missing[0]!r})"


def read_table(path: Path) -> list[dict]:
    """The rows of a sweep's CSV (none if it does not exist); a file that is not one this command
    wrote (other columns, a value of the wrong type, damaged bytes) is refused in one line."""
    if not os.path.lexists(path):
        return []
    text = read_text_file(str(path), "sweep table", MAX_TABLE_BYTES)
    fix = "allowed: a sweep.csv this command wrote; use another --out, or delete the file"
    try:
        reader = csv.DictReader(io.StringIO(text, newline=""))
        if reader.fieldnames != COLUMN_NAMES:
            raise CaseError(f"{path}: not a sweep table (columns {show(reader.fieldnames)}); {fix}")
        rows = []
        for i, r in enumerate(reader, start=2):
            if None in r or any(v is None for v in r.values()):
                raise CaseError(f"{path} line {i}: {_field_count(r)}, the table has {len(COLUMN_NAMES)}; {fix}")
            row = _typed(r)
            if not re.fullmatch(r"[0-9a-f]{16}", row["case_hash"] or "") or not row["method"]:
                raise CaseError(f"{path} line {i}: case_hash {show(row['case_hash'])} is not a case hash; {fix}")
            _agrees(row, f"{path} line {i}", fix)
            rows.append(row)
        return rows
    except (csv.Error, ValueError, OverflowError) as e:
        if isinstance(e, CaseError):
            raise
        raise CaseError(f"{path}: not a sweep table ({show(str(e))}); {fix}") from None


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
    import matplotlib.pyplot as plt

    ok = [r for r in rows if not r["error"]]
    fig, (a_tau, a_tv) = plt.subplots(1, 2, figsize=(11, 4))
    for i, scheme in enumerate(sorted({r["scheme"] for r in ok})):
        by_t: dict[Fraction, list[dict]] = {}
        for r in ok:
            if r["scheme"] == scheme:
                by_t.setdefault(Fraction(r["temperature"]), []).append(r)
        ts = sorted(by_t)
        # method walk computes rounds only up to the law's n tokens: its rows have no τ
        t_tau = [t for t in ts if any(r["tau_float"] is not None for r in by_t[t])]
        taus = [[r["tau_float"] for r in by_t[t] if r["tau_float"] is not None] for t in t_tau]
        label = " ".join(f"{k}={v}" for k, v in json.loads(scheme).items())
        a_tau.plot([float(t) for t in t_tau], [sum(v) / len(v) for v in taus], "o-", color=f"C{i}", label=label)
        a_tau.fill_between(
            [float(t) for t in t_tau], [min(v) for v in taus], [max(v) for v in taus], color=f"C{i}", alpha=0.15
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
    cells: list[GridCell], *, scheduler: str | None = None, workers: int | None = None, progress: bool = False
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
    cells: list[GridCell],
    out: Path,
    *,
    scheduler: str | None = None,
    workers: int | None = None,
    progress: bool = True,
    summary_plot: bool = True,
    retry_failed: bool = False,
) -> SweepResult:
    """Run the cells not yet in `out`/sweep.csv, writing the table as they finish (module docstring);
    `retry_failed`: the cells whose row there has an error run again. After an interruption the
    table keeps every cell that finished, the ones not yet reported by the engine included."""
    t0 = time.perf_counter()
    check_paths(out)
    out.mkdir(parents=True, exist_ok=True)
    with _locked(out):
        return _sweep(cells, out, t0, scheduler, workers, progress, summary_plot, retry_failed)


def check_paths(out: Path) -> None:
    """Refuse up front an output folder whose files pyarrow or matplotlib could not open (they take
    UTF-8 names; a name that is not UTF-8 would fail after every cell ran)."""
    for path in (out, *(out / name for name in FILES)):
        try:
            str(path).encode("utf-8")
        except UnicodeEncodeError:
            raise OutputError(
                f"cannot write {str(path)!r}: the path is not UTF-8 (the Parquet and PNG writers refuse it); "
                f"allowed: an --out whose name is UTF-8"
            ) from None


@contextmanager
def _locked(out: Path) -> Iterator[None]:
    """Hold `out`/.sweep.lock while the sweep writes the folder: a second sweep into it is refused.
    A POSIX record lock (fcntl.lockf) is released by the system when the process ends, however it
    ends, and is not inherited by the worker processes."""
    import fcntl

    path = out / LOCK
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    except OSError as e:
        raise OutputError(f"cannot write {str(path)!r}: {e.strerror or e}; allowed: a writable --out folder") from None
    held = False
    try:
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held = os.path.exists(path) and os.stat(path).st_ino == os.fstat(fd).st_ino  # not unlinked meanwhile
        except OSError:
            pass
        if not held:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            raise OutputError(
                f"{str(out)!r} is being written by another rheo sweep (process {holder}); allowed: wait until "
                f"it ends, or another --out"
            )
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        if held:
            try:
                os.unlink(path)
            except OSError:  # the folder is gone: nothing to tidy
                pass
        os.close(fd)


def _sweep(
    cells: list[GridCell],
    out: Path,
    t0: float,
    scheduler: str | None,
    workers: int | None,
    progress: bool,
    summary_plot: bool,
    retry_failed: bool,
) -> SweepResult:
    from tqdm import tqdm

    csv_path, pq_path, png_path = (out / name for name in FILES)
    keys = [c.key for c in cells]
    if len(set(keys)) != len(keys):
        cells = list({c.key: c for c in cells}.values())  # the same case twice is one cell
        keys = [c.key for c in cells]
    found = {(r["case_hash"], r["method"]): r for r in read_table(csv_path)}
    ours = set(keys)
    foreign = [r for k, r in found.items() if k not in ours]
    if foreign:
        r = foreign[0]
        raise OutputError(
            f"{str(csv_path)!r} holds {len(foreign):,} row(s) of another grid (the first: table {show(r['table'])}, "
            f"scheme {r['scheme']}, T={r['temperature']}, method {r['method']}): this grid's table would drop "
            f"them; allowed: the same grid (a resume), a grid that contains those cells, or another --out"
        )
    done = {k: found[k] for k in keys if k in found and not (retry_failed and found[k]["error"])}
    todo = [c for c in cells if c.key not in done]

    def ordered() -> list[dict]:
        return [done[k] for k in keys if k in done]

    last = -WRITE_EVERY  # the first finished cell is written at once, then every WRITE_EVERY seconds
    runner: Any = None
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
        for row in getattr(runner, "finished", list)():  # finished, not yet reported (an interruption)
            done.setdefault((row["case_hash"], row["method"]), row)
        rows = ordered()
        write_csv(rows, csv_path)
    write_parquet(rows, pq_path)
    files = {"csv": str(csv_path), "parquet": str(pq_path)}
    if summary_plot and any(not r["error"] for r in rows):  # nothing to draw when every cell failed
        plot(rows, png_path)
        files["plot"] = str(png_path)
    return SweepResult(rows, len(todo), len(cells) - len(todo), files, time.perf_counter() - t0)
