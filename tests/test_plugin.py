"""The pytest plugin for downstream decoders (rheo.lossless.plugin, entry point pytest11) and
the example of docs/GATE.md, run exactly as written — and once more with the decoder broken,
which the gate must reject."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from helpers import doc_example

from rheo.lossless.stats import seed_for

BROKEN = (
    "generator=g)",
    'generator=g, variant=__import__("rheo_ref.variants").variants.MUTANTS["verify-q-not-qtilde"])',
)


def run_pytest(tmp_path: Path, source: str) -> subprocess.CompletedProcess:
    (tmp_path / "test_example.py").write_text(source, encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_example.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=600,
    )


def test_plugin_is_registered_through_the_entry_point(pytestconfig):
    import importlib.metadata as md

    eps = [e for e in md.entry_points(group="pytest11") if e.name == "rheo"]
    assert [e.value for e in eps] == ["rheo.lossless.plugin"]
    assert pytestconfig.pluginmanager.has_plugin("rheo")
    assert any(line.startswith("lossless:") for line in pytestconfig.getini("markers"))


def test_rheo_seed_is_fixed_by_the_test_id(rheo_seed, request):
    assert rheo_seed == seed_for(request.node.nodeid)


@pytest.mark.lossless
def test_the_documented_example_passes_and_catches_a_broken_decoder(tmp_path):
    """The example of docs/GATE.md (α = 1e-3, detects TV ≥ 0.05 with power 0.99) passes on the
    fast path, and fails once its decoder runs the verify-q-not-qtilde mutant."""
    pytest.importorskip("rheo_fast.decode")
    src = doc_example("TableTreeModel")
    ok = run_pytest(tmp_path, src)
    assert ok.returncode == 0 and "1 passed" in ok.stdout, ok.stdout + ok.stderr
    assert src.count(BROKEN[0]) == 1
    bad = run_pytest(tmp_path, src.replace(*BROKEN))
    assert bad.returncode == 1 and "LosslessError" in bad.stdout and "1 failed" in bad.stdout, bad.stdout + bad.stderr
