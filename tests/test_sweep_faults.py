"""Sweeps that survive faults: on a local Dask cluster bound to 127.0.0.1, a worker
SIGKILLed mid-run (Dask reschedules its cells: the table equals the fault-free one) and the
driver SIGKILLed then resumed (the same table, no duplicate or lost row); on local processes,
Ctrl-C exits 130 at once and keeps the cells finished so far. Each is bounded in time (every wait
has a deadline); together they take about 20 s on two cores, so they run in the default suite."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rheo.sweep import load_grid, read_table
from rheo_ref.grid import run_cells, same_rows

ROOT = Path(__file__).resolve().parents[1]
# 32 cells of about 0.2 s each: long enough for a fault to land mid-run
GRID = {
    "tables": [{"generator": "random", "vocab_size": 8, "seeds": list(range(8))}],
    "schemes": [{"K": 4, "m": 1, "W": 3, "D": 3, "R": 12}, {"K": 4, "m": 2, "W": 3, "D": 3, "R": 12}],
    "temperatures": ["1", "1/2"],
    "context": [0],
    "tokens": 1,
}
DEADLINE = 180  # seconds any one sweep may take here before the test fails


def start_sweep(tmp_path: Path, out: Path, *args: str) -> subprocess.Popen:
    grid = tmp_path / "grid.json"
    grid.write_text(json.dumps(GRID))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    cmd = [sys.executable, "-m", "rheo", "sweep", str(grid), "--out", str(out), "--no-progress", "--no-plot", *args]
    return subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, preexec_fn=default_sigint
    )


def default_sigint() -> None:
    """A job started in the background by a non-interactive shell inherits SIGINT ignored (and so
    would every process it starts): give the sweep the default, as a terminal's Ctrl-C finds it."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def wait_until(condition, what: str, deadline: float = DEADLINE, step: float = 0.05) -> None:
    end = time.monotonic() + deadline
    while not condition():
        assert time.monotonic() < end, f"timed out waiting for {what}"
        time.sleep(step)


def rows_in(path: Path) -> int:
    try:
        return len(read_table(path))
    except Exception:  # being replaced right now
        return 0


@pytest.fixture(scope="module")
def fault_free(tmp_path_factory) -> list[dict]:
    path = tmp_path_factory.mktemp("grid") / "grid.json"
    path.write_text(json.dumps(GRID))
    return list(run_cells(load_grid(str(path))))


def assert_same_table(rows: list[dict], expected: list[dict]) -> None:
    keys = [(r["case_hash"], r["method"]) for r in rows]
    assert len(keys) == len(set(keys)), "a cell appears twice"
    assert len(rows) == len(expected), (len(rows), len(expected))
    assert all(same_rows(a, b) for a, b in zip(rows, expected, strict=True))


@pytest.fixture
def cluster():
    distributed = pytest.importorskip("distributed")
    with (
        distributed.LocalCluster(
            n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address="127.0.0.1:0"
        ) as c,
        distributed.Client(c) as client,
    ):
        yield c, client


def test_a_worker_killed_mid_run_is_rescheduled_and_the_table_is_the_fault_free_one(tmp_path, cluster, fault_free):
    c, client = cluster
    out = tmp_path / "out"
    proc = start_sweep(tmp_path, out, "--scheduler", c.scheduler_address)
    try:
        wait_until(lambda: any(client.processing().values()) or proc.poll() is not None, "cells on the workers")
        busy = next(w for w, tasks in client.processing().items() if tasks)
        pid = client.run(os.getpid, workers=[busy])[busy]
        os.kill(pid, signal.SIGKILL)  # mid-run: it had cells in hand
        stdout, stderr = proc.communicate(timeout=DEADLINE)
    finally:
        proc.kill()
    assert proc.returncode == 0, stderr
    assert json.loads(stdout)["computed"] == len(fault_free)
    assert_same_table(read_table(out / "sweep.csv"), fault_free)


def test_a_driver_killed_with_sigkill_resumes_to_the_same_table(tmp_path, cluster, fault_free):
    c, _ = cluster
    out = tmp_path / "out"
    proc = start_sweep(tmp_path, out, "--scheduler", c.scheduler_address)
    try:
        wait_until(lambda: rows_in(out / "sweep.csv") > 0 or proc.poll() is not None, "the first rows")
        proc.send_signal(signal.SIGKILL)
        proc.communicate(timeout=DEADLINE)
    finally:
        proc.kill()
    partial = read_table(out / "sweep.csv")
    assert 0 < len(partial) < len(fault_free)  # killed mid-run
    again = start_sweep(tmp_path, out, "--scheduler", c.scheduler_address)
    stdout, stderr = again.communicate(timeout=DEADLINE)
    assert again.returncode == 0, stderr
    summary = json.loads(stdout)
    assert summary["skipped"] >= len(partial) and summary["skipped"] + summary["computed"] == len(fault_free)
    assert_same_table(read_table(out / "sweep.csv"), fault_free)


def test_ctrl_c_with_workers_exits_at_once_and_keeps_the_finished_cells(tmp_path, fault_free):
    out = tmp_path / "out"
    proc = start_sweep(tmp_path, out, "--workers", "2")
    try:
        wait_until(lambda: rows_in(out / "sweep.csv") > 0 or proc.poll() is not None, "the first rows")
        proc.send_signal(signal.SIGINT)
        sent = time.monotonic()
        _, stderr = proc.communicate(timeout=DEADLINE)
        waited = time.monotonic() - sent
    finally:
        proc.kill()
    assert proc.returncode == 130 and stderr.strip().splitlines()[-1] == "rheo: interrupted", stderr
    rows = read_table(out / "sweep.csv")
    assert 0 < len(rows) < len(fault_free), "interrupted mid-run, the finished cells kept"
    by_key = {(r["case_hash"], r["method"]): r for r in fault_free}
    assert all(same_rows(r, by_key[(r["case_hash"], r["method"])]) for r in rows)
    # the cells left would take far longer than the exit did (no timing assertion on the machine's speed:
    # the bound is what the remaining cells cost in this very run)
    per_cell = max(r["seconds"] for r in rows)
    assert waited < max(5.0, per_cell * (len(fault_free) - len(rows)) / 2), (waited, per_cell)
