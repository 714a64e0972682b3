"""`rheo compare`: its cells, its numbers against `rheo exact` on the same schemes, the table,
--json, the plot (written atomically), size refusals and bad input (exit 2, one line)."""

from __future__ import annotations

import json
import re
from fractions import Fraction

import pytest
from helpers import CASES, load_json, run_rheo, write_case

from rheo.cli import main
from rheo.compare import case_with, cells_for, compare
from rheo.families.static import shapes as static_shapes
from rheo.families.treespark import THETAS
from rheo_ref.errors import CaseError, TooLargeError
from rheo_ref.families.static.scheme import LOSSLESS_PAIRINGS as PAIRINGS
from rheo_ref.families.static.scheme import StaticScheme
from rheo_ref.families.treespark.scheme import TreeSparkScheme
from rheo_ref.models import load_case

SMALL = str(CASES / "small.json")


@pytest.fixture(scope="module")
def small_json():
    """`rheo compare small.json --json` and its table, run once as a user would."""
    js = run_rheo("compare", SMALL, "--json")
    table = run_rheo("compare", SMALL)
    assert js.returncode == 0 and table.returncode == 0, js.stderr + table.stderr
    return json.loads(js.stdout), table


# --- the cells -----------------------------------------------------------------------------------


@pytest.mark.parametrize("N", range(1, 13))
def test_every_cell_has_the_budget_and_a_compatible_pairing(N):
    cells = cells_for(N, 4)
    assert [c.family for c in cells[:4]] == ["rheo"] * 4
    for c in cells:
        if c.family in ("rheo", "tsubame"):
            assert c.scheme.R == N and c.scheme.K <= 4
            assert c.family == "rheo" or c.scheme.lossless
        elif c.family == "treespark":
            s = c.scheme
            assert isinstance(s, TreeSparkScheme) and (s.N, s.k, s.D) == (N, 3, N) and s.lossless
            assert c.pairing == f"wor+{s.verify}" and str(s.calibration) == "identity"
        else:
            assert isinstance(c.scheme, StaticScheme) and c.scheme.nodes == N and c.scheme.lossless
    shapes = static_shapes(N)
    assert len({(k, s) for k, s, _ in shapes}) == len(shapes), "a shape listed twice"
    assert len([c for c in cells if c.family == "static"]) == len(shapes) * len(PAIRINGS)
    assert len([c for c in cells if c.family == "tsubame"]) == len(PAIRINGS)
    spark = [(c.scheme.theta, c.scheme.verify) for c in cells if isinstance(c.scheme, TreeSparkScheme)]
    assert sorted(spark) == sorted((t, v) for t in THETAS for v in ("rrsw", "traversal"))
    delayed = [s for k, s, _ in shapes if k == "delayed"]
    assert all(K >= 2 and L1 >= 1 and L2 >= 1 and L1 + K * L2 == N for K, L1, L2 in delayed)
    assert len(delayed) == sum(1 for K in range(2, N) for L2 in range(1, N) if N - K * L2 >= 1)


def test_cells_refuse_a_bad_budget():
    for bad in (0, -1, 257):
        with pytest.raises(CaseError, match="--nodes"):
            cells_for(bad, 3)


# --- the numbers agree with rheo exact ---------------------------------------------------------------


def test_every_row_agrees_with_rheo_exact_on_the_same_scheme(small_json, tmp_path, capsys):
    out, _ = small_json
    base = load_json("small.json")
    assert out["nodes"] == [4] and out["tokens"] == base["tokens"] and out["context"] == base["context"]
    assert len(out["rows"]) == len(cells_for(4, 3))
    for i, row in enumerate(out["rows"]):
        path = write_case(tmp_path, dict(base, scheme=row["params"]), f"cell{i}.json")
        assert main(["exact", path]) == 0
        exact = json.loads(capsys.readouterr().out)
        assert (row["tau"], row["tv"]) == (exact["tau"], exact["tv"]), row
        assert abs(float(Fraction(row["tau"])) - row["tau_float"]) < 1e-12


def test_the_table_shows_the_json_rows_aligned(small_json):
    out, table = small_json
    lines = table.stdout.splitlines()
    head = lines[0]
    assert [c.strip() for c in head.split(" | ")] == [
        "nodes",
        "family",
        "scheme",
        "verifier",
        "tau",
        "exact tau",
        "exact TV",
        "seconds",
    ]
    bars = [m.start() for m in re.finditer(r"\|", head)]
    body = [ln for ln in lines[2:] if " | " in ln]
    assert len(body) == len(out["rows"])
    for ln, row in zip(body, out["rows"]):
        assert [m.start() for m in re.finditer(r"\|", ln)] == bars, ln
        cols = [c.strip() for c in ln.split(" | ")]
        assert cols[:4] == [str(row["nodes"]), row["family"], row["scheme"], row["verifier"]]
        assert float(cols[4].rstrip(" *")) == pytest.approx(row["tau_float"], abs=5e-5)
        assert cols[5] in (row["tau"], "...") and cols[6] == row["tv"]
    best = max(Fraction(r["tau"]) for r in out["rows"])
    starred = [Fraction(r["tau"]) for ln, r in zip(body, out["rows"]) if ln.split(" | ")[4].strip().endswith("*")]
    assert starred and set(starred) == {best}
    assert "cells in" in lines[-1] and table.stderr == ""  # the progress bar stays off stderr when it is not a terminal


def test_the_comparison_holds_its_own_identities(small_json):
    """Equalities the claims predict, from the JSON rows (each can fail on a wrong row)."""
    rows = {(r["scheme"], r["verifier"], r["series"]): Fraction(r["tau"]) for r in small_json[0]["rows"]}
    chain = {v: t for (s, v, _), t in rows.items() if s == "branching [1, 1, 1, 1]"}
    fan = {v: t for (s, v, _), t in rows.items() if s == "branching [4]"}
    rheo_chain = rows[("chain K=1 D=4", "OT", "chain (rheo)")]
    assert chain["iid+specinfer"] == chain["wor+rrsw"] == chain["iid+rrsw"] == rheo_chain
    assert chain["iid+traversal"] == chain["wor+traversal"] >= chain["iid+specinfer"]  # claim 6.3
    assert fan["iid+traversal"] == fan["iid+specinfer"] and fan["wor+traversal"] == fan["wor+rrsw"]  # claim 6.1
    assert all(r["tv"] == "0" for r in small_json[0]["rows"])  # every pairing listed is lossless


def test_treespark_cells_theta_binds_where_documented_and_k_follows_the_vocabulary():
    """θ = 1/5 is the binding threshold of the compare cells: on small.json it leaves τ unchanged at
    N = 4 (no best bound falls below it within 4 nodes) and lowers it at N = 5 (the round stops
    before the fifth node); k = min(3, V) on a V = 2 vocabulary."""
    case = load_case(SMALL)
    assert THETAS == (0, Fraction(1, 5))
    for N, binds in ((4, False), (5, True)):
        rows = compare(case, [N], tokens=1, select=lambda c: c.family == "treespark" and c.pairing == "wor+rrsw")
        tau = {r.cell.scheme.theta: r.tau for r in rows}
        assert all(r.tv == 0 for r in rows) and (tau[THETAS[1]] < tau[0]) == binds, tau
    assert {c.scheme.k for c in cells_for(3, 2) if c.family == "treespark"} == {2}
    ts = next(c for c in cells_for(4, 3) if c.family == "treespark")
    assert case_with(case, ts.scheme).scheme is ts.scheme


def test_several_budgets_and_the_function_the_notebook_uses():
    case = load_case(SMALL)
    rows = compare(case, [2, 3, 2], tokens=1, select=lambda c: c.pairing == "iid+specinfer")
    assert [r.cell.nodes for r in rows] == [2] * len([c for c in cells_for(2, 3) if c.pairing == "iid+specinfer"]) + [
        3
    ] * len([c for c in cells_for(3, 3) if c.pairing == "iid+specinfer"])
    assert all(r.tv == 0 and 1 <= r.tau <= r.cell.nodes + 1 for r in rows)
    with pytest.raises(TooLargeError, match=r"would enumerate up to ~[\d,]+ outcomes per round \(limit 5\).*--force"):
        compare(case, [4], max_trees=5)


# --- plot ---------------------------------------------------------------------------------------------


def test_the_plot_is_written_atomically(tmp_path):
    plot = tmp_path / "tau.png"
    res = run_rheo("compare", SMALL, "--nodes", "2", "3", "--tokens", "1", "--plot", str(plot), "--json")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["nodes"] == [2, 3]
    data = plot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tau.png"], "a temporary file was left behind"


# --- refusals and bad input --------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args,needle",
    [
        (["--nodes", "0"], "--nodes 0 must be an integer in [1, 256]"),
        (["--max-trees", "10"], "would enumerate up to ~"),
        (["--max-trees", "0"], "--max-trees 0 must be an integer >= 1"),
        (["--tokens", "0"], "--tokens 0 must be an integer >= 1"),
        (["--plot", "/nonexistent-dir/x.png"], "does not exist"),
        (["--plot", "x.txt"], "allowed suffixes .png, .svg, .pdf"),
    ],
)
def test_bad_arguments_exit_2_with_one_line(args, needle):
    res = run_rheo("compare", SMALL, *args)
    assert res.returncode == 2, res.stdout + res.stderr
    err = [ln for ln in res.stderr.splitlines() if ln.strip() and "cell/s" not in ln]
    assert len(err) == 1 and needle in err[0] and err[0].startswith("rheo: error: "), res.stderr
    assert res.stdout == ""


def test_a_refused_size_runs_with_force():
    res = run_rheo("compare", SMALL, "--max-trees", "10", "--force", "--tokens", "1", "--json")
    assert res.returncode == 0, res.stderr
    assert len(json.loads(res.stdout)["rows"]) == len(cells_for(4, 3))


def test_a_bad_case_file_exits_2_with_one_line(tmp_path):
    res = run_rheo("compare", write_case(tmp_path, "{not json"))
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "not JSON" in res.stderr, res.stderr
