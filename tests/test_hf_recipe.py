"""The recipe of docs/GATE.md ("Gate a decoder that takes a transformers model"), run exactly as
written in a fresh pytest process (the plugin loaded through its entry point), and again with its
decoder given transformers' documented-lossy `assistant_ensemble_weight`, which the gate must reject."""

from __future__ import annotations

import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from test_plugin import doc_example

pytest.importorskip("transformers")

BROKEN = ("assistant_model=assistant,", "assistant_model=assistant, assistant_ensemble_weight=0.25,")


def test_the_recipe_uses_the_stable_api_only():
    src = doc_example("table_lms")
    assert "from rheo import Case" in src and "from rheo_fast.table_lm import table_lms" in src
    assert src.count(BROKEN[0]) == 1


def test_the_broken_recipe_is_lossy_by_a_quarter():
    """The exact TV of the broken decoder on the recipe's case: 1/4 (rheo.decoders.laws.Chain: transformers'
    defaults of 20 drafts and a 0.4 confidence stop, max_new_tokens = 2), far above the recipe's δ."""
    from rheo.decoders.laws import Chain, table_drafter, table_row
    from rheo_ref.exact import target_law, tv

    ns: dict = {}
    exec(compile(doc_example("table_lms").split("\n\ndef ")[0], "recipe", "exec"), ns)  # imports and CASE
    case = ns["CASE"]
    chain = Chain(
        case.target, table_drafter(case.draft, Fraction(2, 5)), table_row(case.draft), Fraction(1, 4), 20, horizon=2
    )
    assert tv(chain.token_law(case.context, 2), target_law(case, 2)) == Fraction(1, 4)


@pytest.mark.lossless
def test_the_recipe_passes_and_catches_a_lossy_decoder(tmp_path):
    """α = 1e-3, δ = 0.15 (power 0.99), N = 562 each; both files in one pytest run (~15 s)."""
    src = doc_example("table_lms")
    (tmp_path / "test_recipe.py").write_text(src, encoding="utf-8")
    (tmp_path / "test_recipe_broken.py").write_text(src.replace(*BROKEN), encoding="utf-8")
    env = dict(os.environ, OMP_NUM_THREADS="1", MKL_NUM_THREADS="1")
    r = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-rf",
            "test_recipe.py",
            "test_recipe_broken.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=900,
        env=env,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 1 and "1 failed, 1 passed" in out, out[-3000:]
    assert "FAILED test_recipe_broken.py::test_my_decoder_is_lossless" in out and "LosslessError" in out, out[-3000:]
    assert Path(tmp_path / "test_recipe.py").read_text(encoding="utf-8") == src
