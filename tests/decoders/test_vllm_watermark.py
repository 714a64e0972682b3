"""vLLM 0.34.0's watermarked speculative decoding, driven unmodified with a fresh random key per sample
(`rheo.decoders.vllm.watermark`), judged against the exact key-averaged laws of `rheo_ref.gumbel`.

The engine's configuration (`dual_key_gumbel`: the draft keyed by key A, the resample and bonus by key B)
must fit the target law; the counterfactual in which the resample reuses the draft's key must fit its own
shared-noise law, which is at TV 0.0466 from the target over 2 tokens of tests/cases/hf.json at k = 2."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from helpers import CASES, needs_env

from rheo.lossless.stats import check_law
from rheo_ref.gumbel import speculative_law, target_law
from rheo_ref.models import load_case

served034 = needs_env("vllm034")
REPO = Path(__file__).resolve().parents[2]
N = 4000


def _drive(keys: str, seed: int, tmp_path: Path) -> dict[tuple[int, ...], int]:
    req = {
        "case": json.loads((CASES / "hf.json").read_text()),
        "k": 2, "tokens": 2, "samples": N, "seed": seed, "keys": keys, "context_width": 4,
    }  # fmt: skip
    path = tmp_path / f"{keys}-{seed}.json"
    path.write_text(json.dumps(req))
    python = REPO / ".venv-vllm034" / "bin" / "python"
    run = subprocess.run(
        [str(python), "-W", "ignore", "-m", "rheo.decoders.vllm.watermark", str(path)],
        capture_output=True, text=True, cwd=REPO, env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"}, check=False,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-2000:]
    out = json.loads(run.stdout.strip().splitlines()[-1])
    assert out["path"]["vllm"] == "0.34.0"
    return {tuple(int(t) for t in k.split(",")): v for k, v in out["counts"].items()}


@pytest.mark.slow
@served034
@pytest.mark.parametrize("seed", [1, 2])
def test_slow_vllm_034_watermark_keyed_speculative_decoding(seed: int, tmp_path: Path) -> None:
    case = load_case(str(CASES / "hf.json"))
    target, shared = target_law(case, 2), speculative_law(case, 2, 2, shared=True)
    dual = _drive("dual", seed, tmp_path)
    assert not check_law(dual, target, alpha=1e-3, tv=0.2).rejected
    same = _drive("same", seed, tmp_path)
    assert not check_law(same, shared, alpha=1e-3, tv=0.2).rejected
    assert check_law(same, target, alpha=1e-3, tv=0.2).rejected
