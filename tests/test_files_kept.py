"""Files: nothing lost. `rheo sweep` refuses up front an --out that holds another grid's table, one
another sweep is writing (its lock), a name pyarrow cannot take, and a resumed row whose exact τ or
TV disagrees with its float; a resume of the same grid still works. An output folder removed
mid-run is an I/O error (exit 1). No JSON rheo writes holds NaN or Infinity (`rheo paper-tables`'
variance ratios included): a value that cannot be computed is null with its reason beside it.
A tree built by recursion is refused up front when it would exhaust Python's stack (a tsubame
plan of D = 400), and the frames it takes are measured against the bound the refusal relies on."""

from __future__ import annotations

import ast
import csv
import inspect
import io
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from helpers import write_case

import rheo.sweep as sweep_mod
from rheo.cli import main

ROOT = Path(__file__).resolve().parents[1]
SCHEME = {"K": 2, "m": 1, "W": 2, "D": 2, "R": 4}


def grid(tmp_path: Path, seeds: list[int], name: str = "grid.json") -> str:
    path = tmp_path / name
    obj = {
        "tables": [{"generator": "random", "vocab_size": 3, "seeds": seeds}],
        "schemes": [SCHEME],
        "temperatures": ["1"],
        "context": [0],
        "tokens": 1,
    }
    path.write_text(json.dumps(obj))
    return str(path)


def sweep(capsys, grid_path: str, out: Path | str) -> tuple[int, str, str]:
    code = main(["sweep", grid_path, "--out", str(out), "--workers", "1", "--no-progress", "--no-plot"])
    got = capsys.readouterr()
    return code, got.out, got.err


@pytest.fixture
def cells_run(monkeypatch) -> list:
    """The cells the sweep computes (run_cell, counted)."""
    calls: list = []
    real = sweep_mod.run_cell

    def counted(cell):
        calls.append(cell.key)
        return real(cell)

    monkeypatch.setattr(sweep_mod, "run_cell", counted)
    return calls


def test_a_second_grid_into_the_same_out_is_refused_and_a_resume_works(tmp_path, capsys, cells_run):
    out = tmp_path / "out"
    first, second = grid(tmp_path, [0, 1], "first.json"), grid(tmp_path, [2], "second.json")
    assert sweep(capsys, first, out)[0] == 0
    table = (out / "sweep.csv").read_bytes()
    ran = len(cells_run)
    code, _, err = sweep(capsys, second, out)
    assert code == 2 and "holds 2 row(s) of another grid" in err and "random V=3 seed=0" in err, err
    assert len(cells_run) == ran and (out / "sweep.csv").read_bytes() == table  # refused before any cell
    code, stdout, _ = sweep(capsys, first, out)  # the same grid: a resume, nothing to compute
    assert code == 0 and json.loads(stdout)["skipped"] == 2 and json.loads(stdout)["computed"] == 0
    bigger = grid(tmp_path, [0, 1, 2], "bigger.json")  # a grid that holds the table's cells: nothing dropped
    code, stdout, _ = sweep(capsys, bigger, out)
    assert code == 0 and (json.loads(stdout)["skipped"], json.loads(stdout)["computed"]) == (2, 1)
    assert sorted(p.name for p in out.iterdir()) == ["sweep.csv", "sweep.parquet"]  # the lock is gone


HOLDER = """
import sys
from pathlib import Path
from rheo.sweep import _locked
with _locked(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.read()
"""


def test_an_out_another_sweep_is_writing_is_refused_until_it_ends(tmp_path, capsys, cells_run):
    out = tmp_path / "out"
    out.mkdir()
    g = grid(tmp_path, [0])
    with subprocess.Popen(
        [sys.executable, "-c", HOLDER, str(out)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=dict(os.environ, PYTHONPATH=str(ROOT)),
    ) as holder:
        try:
            assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
            code, _, err = sweep(capsys, g, out)
            assert code == 2 and f"being written by another rheo sweep (process {holder.pid})" in err, err
            assert cells_run == [] and not (out / "sweep.csv").exists()
        finally:
            holder.kill()  # SIGKILL: the system releases the lock of a process that ends however it ends
            holder.wait(timeout=60)
    code, stdout, err = sweep(capsys, g, out)
    assert code == 0 and json.loads(stdout)["computed"] == 1, err


def test_an_out_that_is_not_utf8_is_refused_before_any_cell(tmp_path, capsys, cells_run):
    out = tmp_path / os.fsdecode(b"bad\xff")
    code, _, err = sweep(capsys, grid(tmp_path, [0]), out)
    assert code == 2 and "is not UTF-8" in err and "allowed: an --out whose name is UTF-8" in err, err
    assert cells_run == [] and not os.path.lexists(out)


@pytest.mark.parametrize(
    ("column", "change"),
    [("tau_float", lambda v: repr(float(v) + 1e-9)), ("tau", lambda v: v + "1"), ("tv_float", lambda v: "0.5")],
)
def test_a_resumed_row_whose_exact_value_disagrees_with_its_float_is_refused(
    tmp_path, capsys, cells_run, column, change
):
    out = tmp_path / "out"
    g = grid(tmp_path, [0])
    assert sweep(capsys, g, out)[0] == 0
    rows = list(csv.DictReader(io.StringIO((out / "sweep.csv").read_text())))
    rows[0][column] = change(rows[0][column])
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(rows[0]), lineterminator="\n")
    w.writeheader()
    w.writerows(rows)
    (out / "sweep.csv").write_text(buf.getvalue())
    ran = len(cells_run)
    code, _, err = sweep(capsys, g, out)
    name = column.removesuffix("_float")
    assert code == 2 and f"line 2: {name} " in err and "disagrees with itself and is not trusted" in err, err
    assert len(cells_run) == ran


def test_an_output_folder_removed_mid_run_is_an_io_error(tmp_path, capsys, monkeypatch):
    out = tmp_path / "out"
    real = sweep_mod.run_cell

    def remove_then_run(cell):
        shutil.rmtree(out, ignore_errors=True)
        return real(cell)

    monkeypatch.setattr(sweep_mod, "run_cell", remove_then_run)
    code, _, err = sweep(capsys, grid(tmp_path, [0]), out)
    assert code == 1, err
    assert "No such file or directory" in err and "writable when checked before the work" in err, err


def test_strict_json_writes_null_and_the_reason_for_what_cannot_be_computed():
    from rheo_ref.strict_json import dumps, undefined

    text = dumps({"a": undefined("no rounds"), "b": [1.0, float("nan"), [float("inf")]], "c": {"d": float("-inf")}})
    obj = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in {text}"))
    assert obj == {
        "a": None,
        "a_reason": "no rounds",
        "b": [1.0, None, [None]],
        "b_reason": "item 1: not a number (NaN); item 2.0: infinite",
        "c": {"d": None, "d_reason": "minus infinite"},
    }
    assert f"{undefined('x'):.3f}" == "nan"  # the markdown reports still print it


def paper_units() -> list[dict]:
    """Ablation units of two prompts: at m = 0 every round emits one token (no variance)."""
    units = []
    for m, emitted in ((0, [1, 1, 1]), (1, [1, 3, 2]), (3, [2, 2, 4])):
        for i in range(2):
            units.append(
                {"set": "s", "id": i, "m": m, "T": 1.0, "rounds": 3, "emitted": emitted, "expected": [1.5, 2.0, 2.5]}
            )
    return units


def test_paper_tables_writes_no_nan(tmp_path, capsys, monkeypatch):
    """`rheo paper-tables`' variance ratio at a setting whose round lengths do not vary (m = 0) is
    NaN: its JSON says null and why. The model run is replaced by the report's own `ablation` on
    two prompts' units; the writer is the command's."""
    pytest.importorskip("torch")
    import rheo_fast.lm.paper_report as report
    import rheo_fast.lm.paper_tables as tables

    _, var = report.ablation(paper_units(), "m", [0, 1, 3], 1, ("T", 1.0))
    assert var["m=0"]["per_round"] != var["m=0"]["per_round"]  # NaN
    monkeypatch.setattr(tables, "run", lambda *a, **k: {"rb_variance_ratio": {"by_setting": var}})
    monkeypatch.setattr(report, "markdown", lambda res: "")
    monkeypatch.setattr(report, "plot", lambda res, path: None)
    assert main(["paper-tables", "--quick", "--out", str(tmp_path), "--quiet"]) == 0, capsys.readouterr().err
    text = (tmp_path / "paper_tables_quick.json").read_text()
    obj = json.loads(text, parse_constant=lambda c: pytest.fail(f"{c} in {text}"))
    m0 = obj["rb_variance_ratio"]["by_setting"]["m=0"]
    assert m0["per_round"] is None and "do not vary" in m0["per_round_reason"], m0


def test_every_json_writer_refuses_nan():
    """Every json.dump / json.dumps call in rheo's packages and proofs/ passes allow_nan=False
    (strict_json's own do; the writers call strict_json)."""
    loose = []
    for pkg in ("rheo", "rheo_fast", "rheo_ref", "proofs"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in ("dump", "dumps")
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "json"
                ):
                    strict = any(
                        k.arg == "allow_nan" and isinstance(k.value, ast.Constant) and k.value.value is False
                        for k in node.keywords
                    )
                    if not strict:
                        loose.append(f"{path.relative_to(ROOT)}:{node.lineno}")
    assert not loose, f"json writers that would write NaN: {loose}"


TSUBAME_D400 = {
    "draft": {"vocab_size": 2, "context_length": 0, "probs": {"": ["1/2", "1/2"]}},
    "target": {"vocab_size": 2, "context_length": 0, "probs": {"": ["1/3", "2/3"]}},
    "tokens": 1,
    "scheme": {"family": "tsubame", "K": 1, "W": 1, "D": 400, "R": 3, "sampling": "wor", "verify": "specinfer"},
}


@pytest.mark.parametrize("method", ["dp", "classes", "brute"])
def test_rheo_exact_on_a_deep_tsubame_plan_is_refused_up_front_not_out_of_stack(tmp_path, capsys, method):
    code = main(["exact", write_case(tmp_path, TSUBAME_D400), "--method", method])
    err = capsys.readouterr().err
    assert code == 2 and "400 expansions a round" in err and "at most 200" in err, err


def test_rheo_exact_on_a_deep_rheo_scheme_is_refused_for_the_recursive_methods_only(tmp_path, capsys):
    case = dict(TSUBAME_D400, scheme={"K": 1, "m": 1, "W": 1, "D": 400, "R": 3})
    path = write_case(tmp_path, case)
    assert main(["exact", path, "--method", "brute"]) == 2
    assert "400 expansions a round" in capsys.readouterr().err
    assert main(["exact", path, "--method", "dp"]) == 0  # best-first, no recursion
    assert json.loads(capsys.readouterr().out)["tv"] == "0"


@pytest.mark.parametrize(
    ("K", "m", "W", "D", "V"), [(1, 1, 1, 200, 2), (2, 2, 8, 26, 2), (2, 1, 2, 100, 2), (3, 3, 64, 5, 3)]
)
def test_tree_building_takes_the_frames_its_bound_says(K, m, W, D, V):
    """The refusal's bound, measured: `build_tree` needs at most 2E + D + 32 frames (E expansions),
    so at the limit (E = D = 200) at most BUILD_FRAMES, which with the CLI's own frames stays under
    Python's default limit of 1,000."""
    from rheo_ref.families.rheo.enumerate import chooser_for
    from rheo_ref.families.rheo.scheme import Scheme
    from rheo_ref.families.rheo.tree import BUILD_FRAMES, MAX_BUILD_EXPANSIONS, build_tree
    from rheo_ref.models import Case
    from rheo_ref.sizes import expansions

    row = [f"1/{V}"] * V
    case = Case.from_json({"target": {"vocab_size": V, "context_length": 0, "probs": {"": row}}})
    scheme = Scheme(K, m, W, D, 3)
    E = expansions(K, W, D)
    assert E <= MAX_BUILD_EXPANSIONS

    def builds(limit: int) -> bool:
        old = sys.getrecursionlimit()
        sys.setrecursionlimit(limit)
        try:
            next(iter(build_tree(case.target, case.target, (), scheme, chooser_for("brute"))))
            return True
        except RecursionError:
            return False
        finally:
            sys.setrecursionlimit(old)

    base = len(inspect.stack(0))
    lo, hi = base + 10, base + 4 * BUILD_FRAMES  # the fewest frames that suffice, by bisection
    assert builds(hi)
    while lo < hi:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if builds(mid) else (mid + 1, hi)
    needed = lo - base
    assert 2 * E <= needed <= 2 * E + D + 32 <= BUILD_FRAMES, (needed, E, D)
    assert BUILD_FRAMES + 100 < 1000  # the CLI's frames (about 20) and a test runner's fit beside it
