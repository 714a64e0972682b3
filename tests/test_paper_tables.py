"""`rheo paper-tables --quick` on the real model with the tiny head (marker `model`), and the
notebook that reads its JSON. Like tests/test_model_real.py, the head is trained by
`rheo train-draft --tiny`'s code in a temporary folder (seconds), so the test runs from a fresh
clone; the numbers it checks do not depend on the head's quality: ranges, the JSON's shape,
the exact-vs-float64 agreement and the resume path."""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

from rheo_fast.lm.target import model_available

REASON = model_available()
pytestmark = [
    pytest.mark.model,
    pytest.mark.skipif(REASON is not None, reason=REASON or ""),
    pytest.mark.xdist_group("model"),
]
ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(scope="module")
def quick_run(tmp_path_factory):
    import torch

    from rheo.cli import main
    from rheo_fast.lm.train_draft import TrainConfig, train

    torch.set_num_threads(1)  # two threads on two shared cores spin more than they gain
    tmp = tmp_path_factory.mktemp("paper")
    head = tmp / "tiny.safetensors"
    train(TrainConfig.tiny(seed=0), out=head, progress=False, log=lambda *_: None)
    out = tmp / "reports"
    assert main(["paper-tables", "--quick", "--quiet", "--draft", str(head), "--out", str(out)]) == 0
    return head, out


def test_quick_json_has_the_issues_keys_and_sane_numbers(quick_run):
    from rheo_fast.lm.paper_report import KEYS
    from rheo_fast.lm.paper_tables import PaperConfig

    _, out = quick_run
    res = json.loads((out / "paper_tables_quick.json").read_text())
    assert tuple(res) == KEYS
    t4 = res["table4"]
    cfg = PaperConfig.quick()
    for k in ("topk", "rheo_rrsw", "rheo_ot"):
        assert set(t4[k]) >= {"mean", "ci95", "n_contexts"} and 0 <= t4[k]["mean"] <= 1
        assert 0 < t4[k]["n_contexts"] <= 2 * cfg.table_tokens
    assert 0 <= t4["ot_below_rrsw_fraction"] <= 1
    assert t4["cost"]["exact_checked"] >= 1 and t4["cost"]["exact_check_max_abs"] < 1e-9
    assert t4["cost"]["target_forwards"] == 2  # one teacher-forced forward per prompt
    assert [r["S"] for r in res["table5"]] == list(cfg.supports) + ["full"]
    cov = [r["coverage"] for r in res["table5"]]
    assert cov == sorted(cov) and abs(cov[-1] - 1) < 1e-9  # the full draft vocabulary covers all of q
    assert [r["m"] for r in res["ablation_m"]["settings"]] == list(cfg.ms)
    assert [r["T"] for r in res["ablation_T"]["settings"]] == list(cfg.temps)
    for a in ("ablation_m", "ablation_T"):
        for r in res[a]["settings"]:
            assert 1 <= r["tau"] <= cfg.D + 1 and 1 <= r["tau_plain"] <= cfg.D + 1
            assert "diff_ci95" in r and len(r["diff_ci95"]) == 2
        ref = [r for r in res[a]["settings"] if r["m" if a == "ablation_m" else "T"] == 1]
        assert ref and abs(ref[0]["diff"]) < 1e-12  # the reference against itself
    rb = res["rb_variance_ratio"]
    # Var(E[L | tree]) <= Var(L) is a population fact; the quick run has too few rounds for the ratio of
    # two sample variances to show it (1.12 was measured on one machine), so it is asserted on table
    # models with enough rounds (tests/test_expected.py); here only that the ratio was computed.
    assert 0 < rb["per_round"] < math.inf and rb["by_setting"]
    assert res["drafting_ratio_rheo_topk"]["ratio"] > 0
    assert (out / "paper_tables_quick.md").read_text().startswith("# The seeds' tables")
    assert (out / "paper_tables_quick.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_quick_run_resumes_from_its_work_folder(quick_run, capsys):
    from rheo.cli import main

    head, out = quick_run
    first = (out / "paper_tables_quick.json").read_text()
    units = list((out / "paper_tables.work").rglob("*.json"))
    assert units
    assert main(["paper-tables", "--quick", "--quiet", "--draft", str(head), "--out", str(out)]) == 0
    again = json.loads((out / "paper_tables_quick.json").read_text())
    before = json.loads(first)
    assert again["table4"]["rheo_ot"] == before["table4"]["rheo_ot"]  # read back, not recomputed
    assert again["ablation_m"] == before["ablation_m"]


def test_notebook_reads_the_quick_json(quick_run, tmp_path):
    _, out = quick_run
    env = dict(
        os.environ, MPLBACKEND="Agg", RHEO_REPORTS=str(tmp_path), RHEO_PAPER_JSON=str(out / "paper_tables_quick.json")
    )
    proc = subprocess.run(
        [sys.executable, str(ROOT / "notebooks" / "real_model.py")],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=ROOT,
    )
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    for png in ("real_model_table4.png", "real_model_ablations.png"):
        assert (tmp_path / png).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    s = json.loads((tmp_path / "real_model.json").read_text())
    assert set(s["table4"]) == {"topk", "rheo_rrsw", "rheo_ot"}
    assert "Rao-Blackwellised" in proc.stdout


def test_paper_tables_rejects_bad_arguments_before_loading(tmp_path):
    from tests.helpers import run_rheo

    bad = run_rheo("paper-tables", "--quick", "--draft", str(tmp_path / "none.safetensors"))
    assert bad.returncode == 2 and "--draft" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
