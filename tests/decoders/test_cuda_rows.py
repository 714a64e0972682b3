"""The CUDA rows' script (`python -m rheo.decoders.cuda_rows`), its CPU half: the dry run resolves every row (its
law, the verdict its exact TV promises, N a seed, as the gate plans them), checks the environments and stops
before any driver starts; bad flags exit 2 with one line; without a CUDA device a real run exits 2 with the one line
the first row's driver writes. Nothing here samples (no Triton kernel runs)."""

from __future__ import annotations

import json
from fractions import Fraction
from pathlib import Path

import pytest
from helpers import needs_env

from rheo.decoders import cuda_rows, decoders
from rheo.decoders.device import DEVICE_VAR
from rheo.decoders.rows import expected
from rheo.decoders.served import PYTHON_VAR, env_missing_reason, env_python


def _dry(tmp_path: Path, *argv: str) -> tuple[int, dict]:
    out = tmp_path / "plan.json"
    code = cuda_rows.main(["--dry-run", "--json", str(out), *argv])
    return code, json.loads(out.read_text())


def test_the_dry_run_plans_every_row_and_starts_no_driver(tmp_path, monkeypatch, capsys):
    """Every row resolves to its table's setting, an exact TV, the verdict it promises and N; no driver runs
    (run_row and the drivers are replaced by a failure); exit 0 when every environment is built, else 2."""
    from rheo.decoders import served

    def no_driver(*args, **kwargs):
        raise AssertionError("the dry run started a driver")

    monkeypatch.setattr(served.Served, "run", no_driver)
    monkeypatch.setattr(cuda_rows, "run_row", no_driver)
    code, plan = _dry(tmp_path)
    rows = plan["rows"]
    assert [(r["env"], r["setting"]) for r in rows] == [(r.env, r.setting) for r in cuda_rows.ROWS]
    ready = all(env_missing_reason(e) is None for e in {r.env for r in cuda_rows.ROWS})
    assert code == (0 if ready else 2)
    for r in rows:
        table = decoders()[r["decoder"]].table
        assert table is not None
        etv = None if r["exact_tv"] is None else Fraction(r["exact_tv"])
        assert r["expected"] == expected(etv, r["tv"], r["control"])  # the CPU table's rule, on this row's TV
        assert isinstance(r["N"], int) and r["N"] > 0 and r["seeds"] == [1, 2]
        if r["setting"] != "processed-triton":  # the rows of the CPU table keep their δ, α and case
            row = table.resolved(table.row(r["setting"]))
            assert (r["tv"], r["alpha"], r["case"], r["gen"]) == (row.tv, row.alpha, row.case, dict(row.gen))
    controls = [r for r in rows if r["control"]]
    assert controls and all(r["expected"] == "REJECT" for r in controls)
    triton = next(r for r in rows if r["setting"] == "processed-triton")
    processed = decoders()["vllm"].table.row("processed")  # the same setting, on the Triton top-k/top-p kernel
    assert triton["gen"] == {**processed.gen, "topk_topp": "triton"} and triton["expected"] == "pass"
    assert {a["piece"].split(" (")[0] for a in plan["not_driven"]} >= {"tree_speculative_sampling_target_only"}
    out = capsys.readouterr().out
    assert "dry run: nothing ran on a device" in out and out.count("| vllm034 | vllm |") == 3


def test_a_missing_environment_is_named_with_its_make_command(tmp_path, monkeypatch):
    from rheo.decoders import served

    monkeypatch.setattr(cuda_rows, "env_missing_reason", lambda env: f"the {env} environment is not built: run make")
    monkeypatch.setattr(served, "REPO", tmp_path)
    code, plan = _dry(tmp_path, "--only", "sglang:top-k 2")
    assert code == 2 and [e["env"] for e in plan["environments"]] == ["sglang"]
    assert plan["environments"][0]["ready"] is False and "run make" in plan["environments"][0]["why"]
    assert cuda_rows.main(["--only", "sglang:top-k 2"]) == 2  # (a real run stops before any driver)


@pytest.mark.parametrize(
    "argv, says",
    [(["--only", "vllm:nope"], "allowed: vllm:processed-triton"), (["--seeds", "1,x"], "--seeds '1,x'"),
     (["--python", "nope=/bin/python"], "allowed: ENV=PATH")],
)  # fmt: skip
def test_bad_flags_exit_2_with_one_line(argv, says, capsys):
    assert cuda_rows.main(["--dry-run", *argv]) == 2
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert len(err) == 1 and says in err[0], err


@needs_env("vllm")
def test_without_cuda_a_real_run_exits_2_with_the_drivers_one_line(capsys, monkeypatch):
    """The first row's driver (vLLM's, in .venv-vllm) finds no CUDA device in its torch: exit 2, one line, before
    any sampling (the driver checks torch.cuda before it imports vLLM)."""
    import subprocess

    probe = subprocess.run([str(env_python("vllm")), "-c", "import torch; print(torch.cuda.is_available())"],
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    if probe.stdout.strip() == "True":
        pytest.skip("a CUDA device is visible here: the script would run on it")
    monkeypatch.setenv(DEVICE_VAR, "cpu")  # (the script sets both for the drivers: restored after the test)
    monkeypatch.setenv(PYTHON_VAR, "")
    code = cuda_rows.main(["--only", "vllm:block-one-hot", "--seeds", "1"])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip() and "Warning" not in ln]
    assert code == 2 and len(err) == 1, err
    assert "--device cuda: torch.cuda.is_available() is false" in err[0] and "Traceback" not in err[0], err


def test_python_m_dry_run_runs_end_to_end(tmp_path):
    """`python -m rheo.decoders.cuda_rows --dry-run`, as a maintainer types it: a process of its own, its plan
    written for every row; exit 0 when every environment is built, else 2 naming the missing one."""
    import subprocess
    import sys

    from rheo.decoders.served import REPO

    out = tmp_path / "plan.json"
    proc = subprocess.run([sys.executable, "-m", "rheo.decoders.cuda_rows", "--dry-run", "--json", str(out)],
                          cwd=REPO, capture_output=True, text=True, timeout=300)  # fmt: skip
    ready = all(env_missing_reason(e) is None for e in {r.env for r in cuda_rows.ROWS})
    assert proc.returncode == (0 if ready else 2), proc.stderr[-2000:]
    assert len(json.loads(out.read_text())["rows"]) == len(cuda_rows.ROWS)
    assert "Traceback" not in proc.stderr
