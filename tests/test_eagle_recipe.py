"""The EAGLE-style recipe of docs/GATE.md ("Gate a tree decoder that splits body, lm_head and draft
head"), run exactly as written in a fresh pytest process (the plugin loaded through its entry point),
and again with eagle given top_k=2, whose output law is then not the case's raw target law."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from test_plugin import doc_example

pytest.importorskip("eagle.model.ea_model")

ROOT = Path(__file__).resolve().parents[1]
BROKEN = ("temperature=1.0,", "temperature=1.0, top_k=2,")


def test_the_recipe_is_short_and_uses_the_stable_api():
    src = doc_example("TableDraftLayer")
    code = [line for line in src.splitlines() if line.strip() and not line.lstrip().startswith(("#", '"""'))]
    assert len(code) <= 40, len(code)
    assert "from rheo_fast.kit import" in src and src.count(BROKEN[0]) == 1


@pytest.mark.lossless
def test_the_recipe_passes_and_catches_a_lossy_decoder(tmp_path):
    """α = 1e-3, δ = 0.25 (power 0.99), the case's 4 tokens; both files in one pytest run."""
    src = doc_example("TableDraftLayer")
    (tmp_path / "test_recipe.py").write_text(src, encoding="utf-8")
    (tmp_path / "test_recipe_broken.py").write_text(src.replace(*BROKEN), encoding="utf-8")
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-rf", "--rootdir", str(tmp_path),
         str(tmp_path / "test_recipe.py"), str(tmp_path / "test_recipe_broken.py")],
        cwd=ROOT, capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    out = r.stdout + r.stderr
    assert "1 failed, 1 passed" in out, out[-3000:]
    assert "FAILED" in out and "test_recipe_broken.py" in out.split("FAILED", 1)[1], out[-3000:]
    assert "LosslessError" in out, out[-3000:]
