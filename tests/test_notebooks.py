"""The notebooks/ (jupytext percent format) run top to bottom, write their PNGs and numbers, and
the numbers make sense (lossless where the proofs say so, τ within [1, D+1])."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest

from rheo.families.registry import suite_families

pytestmark = pytest.mark.proof
NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


def run_notebook(name: str, reports: Path) -> str:
    # the repository root on the path: the notebooks import proofs/, which the wheel does not install
    path = os.pathsep.join(p for p in (str(NOTEBOOKS.parent), os.environ.get("PYTHONPATH")) if p)
    env = dict(os.environ, MPLBACKEND="Agg", RHEO_REPORTS=str(reports), PYTHONPATH=path)
    proc = subprocess.run(
        [sys.executable, str(NOTEBOOKS / name)],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
        cwd=NOTEBOOKS.parent,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout


def assert_pngs(reports: Path, names: list[str]) -> None:
    for n in names:
        f = reports / n
        assert f.exists() and f.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and f.stat().st_size > 5000, n


@pytest.mark.parametrize("name", ["proxy_choices.py", "rheostat.py", "verifiers.py", "real_model.py"])
def test_notebook_is_jupytext_percent_with_question_and_answer(name):
    jupytext = pytest.importorskip("jupytext")
    nb = jupytext.read(NOTEBOOKS / name)
    md = [c for c in nb.cells if c.cell_type == "markdown"]
    assert any("**Question.**" in c.source for c in md) and any("## Answer" in c.source for c in md)
    assert sum(c.cell_type == "code" for c in nb.cells) >= 3


def test_proxy_choices(tmp_path):
    out = run_notebook("proxy_choices.py", tmp_path)
    assert_pngs(tmp_path, ["proxy_tv_vs_scale.png", "proxy_tau_vs_m.png", "proxy_survival_bias.png"])
    s = json.loads((tmp_path / "proxy_choices.json").read_text())
    tv = {k: None if v is None else Fraction(v) for k, v in s["tv"].items()}
    assert all(v == 0 for k, v in tv.items() if k.endswith(("|rheo", "|scaled:1")))
    assert any(v for k, v in tv.items() if k.endswith("|true"))
    assert all(0 <= v <= 1 for v in tv.values() if v is not None)
    for taus in s["tau_vs_m"].values():
        assert all(1 <= Fraction(t) <= 3 for t in taus)  # D = 2: a round emits 1..3 tokens
    assert all(Fraction(d) == 0 for ds in s["tv_vs_m"].values() for d in ds)
    assert all(b in (None, "0") for b in s["bias"]["rheo"]) and any(b not in (None, "0") for b in s["bias"]["true"])
    assert "lossy in 0/12 settings" in out


def test_rheostat(tmp_path):
    out = run_notebook("rheostat.py", tmp_path)
    assert_pngs(tmp_path, ["rheostat_tau.png"])
    s = json.loads((tmp_path / "rheostat.json").read_text())
    temps = [Fraction(t) for t in s["temps"]]
    assert temps[0] == 0 and Fraction(1) in temps
    taus = {k: [Fraction(t) for t in v] for k, v in s["tau"].items()}
    assert all(1 <= t <= 4 for v in taus.values() for t in v)  # D = 3
    one = temps.index(Fraction(1))
    for table in {k.split("|")[0] for k in taus}:
        topk = taus[f"{table}|3"][one]
        assert max(taus[f"{table}|{m}"][one] for m in range(3)) > topk
    assert "best gain over Top-K" in out


def test_verifiers(tmp_path):
    out = run_notebook("verifiers.py", tmp_path)
    assert_pngs(tmp_path, ["verifiers_tau.png"])
    s = json.loads((tmp_path / "verifiers.json").read_text())
    temps = [Fraction(t) for t in s["temps"]]
    assert temps[0] == 0 and len(temps) >= 4 and s["nodes"] == 4
    assert s["pairings"] == ["iid+specinfer", "wor+rrsw", "iid+rrsw", "iid+traversal", "wor+traversal"]
    assert len(s["shapes"]) == 5 and "branching [1, 1, 1, 1]" in s["shapes"] and "delayed [2, 2, 1]" in s["shapes"]
    taus = {k: [Fraction(t) for t in v] for k, v in s["tau"].items()}
    assert len(taus) == 2 * len(s["shapes"]) * len(s["pairings"])
    assert all(1 <= t <= s["nodes"] + 1 for v in taus.values() for t in v)  # a round emits 1..D+1 <= N+1 tokens
    assert all(Fraction(v) == 0 for v in s["tv"].values())  # compatible pairings only: lossless
    for table in {k.split("|")[0] for k in taus}:
        for shape in s["shapes"]:
            by_t = [{taus[f"{table}|{shape}|{pr}"][i] for pr in s["pairings"]} for i in range(len(temps))]
            assert len(by_t[0]) == 1 and any(len(v) > 1 for v in by_t[1:])  # T = 0: every pairing is the greedy one
    assert "best scheme per T" in out and "iid+rrsw - iid+specinfer" in out
    others = {f: {k: [Fraction(t) for t in v] for k, v in rows.items()} for f, rows in s["others"].items()}
    assert list(others) == [f for f in suite_families() if f != "static"]  # every other family, registry order
    assert all(1 <= t <= s["nodes"] + 1 for rows in others.values() for v in rows.values() for t in v)
    assert {k.split("|")[1] for k in others["rheo"]} == {"Rheo m=1"}
    ts = others["tsubame"]  # the tsubame row: plan D = 2
    assert len(ts) == 2 * len(s["pairings"]) and all(1 <= t <= 3 for v in ts.values() for t in v)
    assert "Tsubame wor+traversal" in out
    sp = others["treespark"]  # N = 4, k = 3, D = 4, θ 0 and 1/5
    assert len(sp) == 2 * 2 * 2
    for key, v in sp.items():
        table, series, pr = key.split("|")
        if series.endswith("=0"):
            assert v[0] == taus[f"{table}|branching [1, 1, 1, 1]|{pr}"][0]  # T = 0: the greedy chain
        else:
            assert all(a <= b for a, b in zip(v, sp[f"{table}|TreeSpark theta=0|{pr}"]))  # θ stops rounds earlier
    assert "TreeSpark theta=0" in out
