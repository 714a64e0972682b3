"""`rheo sweep` (rheo.sweep, rheo_ref.grid): the grid's cells, the tidy table in CSV and Parquet,
the plot, resumption after an interruption, bad input (exit 2, one line), and the same table
from a local Dask cluster as from local processes."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from helpers import run_rheo

import rheo.sweep as sweep_mod
from rheo.sweep import load_grid, read_table, sweep
from rheo_ref.errors import CaseError
from rheo_ref.grid import COLUMN_NAMES, grid_cells, run_cells, same_rows

# docs/SCHEMES.md §3: wor + specinfer on one level of two children is lossy here (TV 1/40 at T = 1).
LOSSY = {
    "generator": "given",
    "name": "wor-specinfer",
    "draft": {"vocab_size": 4, "context_length": 0, "probs": {"": ["3/8", "3/8", "1/8", "1/8"]}},
    "target": {"vocab_size": 4, "context_length": 0, "probs": {"": ["1/8", "1/8", "1/2", "1/4"]}},
}
GRID = {
    "tables": [
        {"generator": "random", "vocab_size": 4, "seeds": [0, 1]},
        {"generator": "zipf", "vocab_size": 3, "seeds": [5]},
        LOSSY,
    ],
    "schemes": [
        {"K": 2, "m": 1, "W": 2, "D": 2, "R": 4},
        {"K": 2, "m": 1, "W": 2, "D": 2, "R": 4, "proxy": "true"},
        {"family": "static", "branching": [2], "sampling": "wor", "verify": "specinfer"},
    ],
    "temperatures": ["1", "1/2", 0],
    "context": [0],
    "tokens": 2,
}


def write_grid(tmp_path: Path, grid: dict = GRID) -> str:
    path = tmp_path / "grid.json"
    path.write_text(json.dumps(grid))
    return str(path)


def without_seconds(rows: list[dict]) -> list[dict]:
    return [{k: v for k, v in r.items() if k != "seconds"} for r in rows]


def test_cells_are_tables_x_schemes_x_temperatures():
    cells = grid_cells(GRID)
    assert len(cells) == 4 * 3 * 3
    assert len({c.key for c in cells}) == len(cells)
    first = cells[0]
    assert first.labels == {
        "table": "random V=4 seed=0",
        "generator": "random",
        "vocab_size": 4,
        "seed": 0,
        "temperature": "1",
    }
    assert first.case.draft_sample is None  # T = 1: q_samp is q_rank
    zero = cells[2]  # T = 0: point masses for q_samp and p, q_rank untouched
    assert zero.case.draft == first.case.draft
    assert all(sorted(r) == [0] * 3 + [1] for r in zero.case.target.probs.values())
    assert all(sorted(r) == [0] * 3 + [1] for r in zero.case.q_samp_model.probs.values())


def test_rows_are_exact_and_a_failing_cell_gets_an_error_row():
    cells = grid_cells(
        {
            **GRID,
            "tables": GRID["tables"][2:],
            "schemes": GRID["schemes"] + [{"K": 2, "m": 1, "W": 2, "D": 2, "R": 4, "proxy": "scaled:3"}],
        }
    )
    rows = list(run_cells(cells))
    assert [r["case_hash"] for r in rows] == [c.case_hash for c in cells]
    assert all(set(r) == set(COLUMN_NAMES) for r in rows)
    rheo_rows = [r for r in rows if r["scheme"].startswith('{"K":2') and "true" not in r["scheme"] and not r["error"]]
    assert rheo_rows and all(r["tv"] == "0" and 1 <= Fraction(r["tau"]) <= 3 for r in rheo_rows)
    static = [r for r in rows if r["family"] == "static"]
    assert static and any(Fraction(r["tv"]) > 0 for r in static)  # wor + specinfer is lossy
    assert next(r for r in static if r["temperature"] == "1" and r["tokens"] == 2)["tv"] != "0"
    bad = [r for r in rows if "scaled:3" in r["scheme"]]
    assert bad and all(r["error"] and r["tau"] is None for r in bad)


@pytest.mark.parametrize(
    "grid, needle",
    [
        ({**GRID, "tables": [{"generator": "magic", "vocab_size": 3}]}, "generator 'magic' unknown"),
        ({**GRID, "temperatures": ["-1"]}, "temperature '-1' is outside"),
        ({**GRID, "temperatures": [0.5]}, "must be a string"),
        ({k: v for k, v in GRID.items() if k != "schemes"}, "grid is missing 'schemes'"),
        ({**GRID, "method": "fast"}, "method 'fast' unknown"),
        ({**GRID, "tables": [{"generator": "random", "vocab_size": 10**6}]}, "at most 1,000,000 are generated"),
        ({**GRID, "tables": [{"generator": "zipf", "vocab_size": 3, "context_length": 99}]}, "~5.2e47 probabilities"),
        ({**GRID, "schemes": [{"K": 9, "m": 1, "W": 2, "D": 2, "R": 4}]}, "K=9 must be <= vocab_size"),
    ],
)
def test_bad_grid_exits_2_with_one_line(tmp_path, grid, needle):
    res = run_rheo("sweep", write_grid(tmp_path, grid), "--out", str(tmp_path / "out"))
    assert res.returncode == 2, (res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and needle in lines[0], res.stderr
    assert not (tmp_path / "out" / "sweep.csv").exists()


def test_cli_writes_csv_parquet_and_plot(tmp_path):
    out = tmp_path / "out"
    res = run_rheo("sweep", write_grid(tmp_path), "--out", str(out), "--workers", "2", "--no-progress")
    assert res.returncode == 0, res.stderr
    summary = json.loads(res.stdout)
    assert summary["cells"] == summary["computed"] == 36 and summary["skipped"] == 0
    rows = read_table(out / "sweep.csv")
    import pyarrow.parquet as pq

    assert pq.read_table(out / "sweep.parquet").to_pylist() == rows
    assert without_seconds(rows) == without_seconds(list(run_cells(load_grid(write_grid(tmp_path)))))
    assert (out / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert sorted(p.name for p in out.iterdir()) == ["sweep.csv", "sweep.parquet", "sweep.png"]  # no temp files left


def test_an_interrupted_sweep_resumes_where_it_stopped(tmp_path, monkeypatch):
    cells = load_grid(write_grid(tmp_path))
    calls = []
    real = sweep_mod.run_cell

    def stop_after_five(cell):
        if len(calls) == 5:
            raise KeyboardInterrupt
        calls.append(cell.key)
        return real(cell)

    monkeypatch.setattr(sweep_mod, "run_cell", stop_after_five)
    with pytest.raises(KeyboardInterrupt):
        sweep(cells, tmp_path / "out", workers=1, progress=False, summary_plot=False)
    partial = read_table(tmp_path / "out" / "sweep.csv")
    assert [(r["case_hash"], r["method"]) for r in partial] == calls
    monkeypatch.setattr(sweep_mod, "run_cell", real)
    result = sweep(cells, tmp_path / "out", workers=1, progress=False, summary_plot=False)
    assert (result.computed, result.skipped) == (len(cells) - 5, 5)
    assert result.rows[:5] == partial  # finished cells are not recomputed (their seconds too)
    again = sweep(cells, tmp_path / "out", workers=1, progress=False, summary_plot=False)
    assert again.computed == 0 and without_seconds(again.rows) == without_seconds(result.rows)


def test_a_local_dask_cluster_gives_the_same_table(tmp_path):
    distributed = pytest.importorskip("distributed")
    grid = {**GRID, "temperatures": ["1", 0]}
    cells = load_grid(write_grid(tmp_path, grid))
    local = sweep(cells, tmp_path / "local", workers=2, progress=False, summary_plot=False)
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address="127.0.0.1:0"
    ) as cluster:
        res = run_rheo(
            "sweep",
            write_grid(tmp_path, grid),
            "--out",
            str(tmp_path / "dask"),
            "--scheduler",
            cluster.scheduler_address,
            "--no-progress",
            "--no-plot",
        )
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["computed"] == len(cells)
    on_dask = read_table(tmp_path / "dask" / "sweep.csv")
    here = read_table(tmp_path / "local" / "sweep.csv")
    assert len(on_dask) == len(here) == len(local.rows)
    assert all(same_rows(a, b) for a, b in zip(on_dask, here, strict=True))


def test_chain_cells_send_their_parts_to_the_dask_cluster(tmp_path):
    """A chain cell on a Dask worker maps its round's parts onto the same cluster
    (rheo.engines.dask_parallel); its row is the row computed here, in one process."""
    distributed = pytest.importorskip("distributed")
    grid = {
        "tables": [{"generator": "zipf", "vocab_size": 6, "seeds": [0, 1]}],
        "schemes": [{"K": 3, "m": 1, "W": 2, "D": 5, "R": 9}],
        "context": [0],
        "method": "chain",
    }
    cells = load_grid(write_grid(tmp_path, grid))
    here = list(run_cells(cells))
    with distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1", dashboard_address="127.0.0.1:0"
    ) as cluster:
        res = run_rheo(
            "sweep", write_grid(tmp_path, grid), "--out", str(tmp_path / "dask"), "--scheduler",
            cluster.scheduler_address, "--no-progress", "--no-plot",
        )  # fmt: skip
        with distributed.Client(cluster) as client:
            parts = [t for t in client.run_on_scheduler(_task_names) if t.startswith("continue_walks")]
    assert res.returncode == 0, res.stderr
    assert parts, "no part of a chain round ran on the cluster"
    on_dask = read_table(tmp_path / "dask" / "sweep.csv")
    assert not any(r["error"] for r in on_dask)
    assert all(same_rows(a, b) for a, b in zip(on_dask, read_table_rows(here), strict=True))


def _task_names(dask_scheduler) -> list[str]:
    return [str(k) for k in dask_scheduler.task_prefixes]


def read_table_rows(rows: list[dict]) -> list[dict]:
    """Rows as the table reads them back (their types through CSV)."""
    from rheo.sweep import _typed

    return [_typed({k: "" if v is None else str(v) for k, v in r.items()}) for r in rows]


def test_a_scheduler_that_does_not_answer_exits_2(tmp_path):
    res = run_rheo("sweep", write_grid(tmp_path), "--out", str(tmp_path / "out"), "--scheduler", "nonsense")
    assert res.returncode == 2 and "tcp://HOST:PORT" in res.stderr


def test_load_grid_errors_are_case_errors(tmp_path):
    with pytest.raises(CaseError, match="cannot read grid file"):
        load_grid(str(tmp_path / "missing.json"))
    (tmp_path / "bad.json").write_text("{nope")
    with pytest.raises(CaseError, match="not JSON"):
        load_grid(str(tmp_path / "bad.json"))


def test_method_walk_in_a_grid_agrees_with_dp_and_has_no_tau():
    """`"method": "walk"`: the rheo cells' TV and acceptance equal dp's exactly; τ is left empty
    (walk computes rounds only up to the law's n tokens); a family without walk gets an error row."""
    grid = {**GRID, "tables": GRID["tables"][:2], "temperatures": ["1", 0]}
    dp = {r["case_hash"]: r for r in run_cells(grid_cells(grid))}
    walk = list(run_cells(grid_cells({**grid, "method": "walk"})))
    rheo = [r for r in walk if r["family"] == "rheo"]
    assert len(rheo) == 3 * 2 * 2 and all(not r["error"] for r in rheo)  # tables x rheo schemes x temperatures
    assert all("walk" in r["error"] for r in walk if r["family"] == "static")
    for r in rheo:
        assert r["tau"] is None and r["tau_float"] is None
        assert (r["tv"], r["acceptance"]) == (dp[r["case_hash"]]["tv"], dp[r["case_hash"]]["acceptance"])
    assert any(Fraction(r["tv"]) > 0 for r in rheo)  # the true proxy's bias is seen by walk too


def test_method_chain_in_a_grid_agrees_with_dp_tau_included():
    """`"method": "chain"`: the rheo cells' TV, τ and acceptance equal dp's exactly (chain computes
    whole rounds); a family without chain gets an error row naming it."""
    grid = {**GRID, "tables": GRID["tables"][:2], "temperatures": ["1", 0]}
    dp = {r["case_hash"]: r for r in run_cells(grid_cells(grid))}
    chain = list(run_cells(grid_cells({**grid, "method": "chain"})))
    rheo = [r for r in chain if r["family"] == "rheo"]
    assert len(rheo) == 3 * 2 * 2 and all(not r["error"] for r in rheo)
    assert all("chain" in r["error"] for r in chain if r["family"] == "static")
    for r in rheo:
        want = dp[r["case_hash"]]
        assert r["tau"] is not None and (r["tv"], r["tau"], r["acceptance"]) == (
            want["tv"],
            want["tau"],
            want["acceptance"],
        )
    assert any(Fraction(r["tv"]) > 0 for r in rheo)  # the true proxy's bias is seen by chain too


def test_cli_sweeps_method_walk_into_csv_parquet_and_plot(tmp_path):
    """`rheo sweep` with "method": "walk": the table round-trips with empty τ, and the plot is drawn
    (τ only where a row has it)."""
    out = tmp_path / "out"
    grid = {**GRID, "tables": GRID["tables"][:1], "schemes": GRID["schemes"][:2], "temperatures": ["1"]}
    res = run_rheo("sweep", write_grid(tmp_path, {**grid, "method": "walk"}), "--out", str(out), "--no-progress")
    assert res.returncode == 0, res.stderr
    rows = read_table(out / "sweep.csv")
    assert len(rows) == 4 and all(r["method"] == "walk" and r["tau"] == "" and not r["error"] for r in rows)
    assert (out / "sweep.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
