"""The type checker, as part of the default suite (so CI runs it): mypy on the packages
pyproject.toml names (`rheo_ref`, `rheo`), shown to fail on a planted fault."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def tool(name: str) -> str:
    path = BIN / name
    if not path.exists():
        pytest.fail(f"{path} is missing: install the test extra (pip install -e '.[test]')")
    return str(path)


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=600)


def test_mypy_passes(tmp_path):
    r = run(tool("mypy"), "--cache-dir", str(tmp_path / "cache"))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr


def test_the_checkers_catch_planted_faults(tmp_path):
    """The same settings reject a type error."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    pkg = tmp_path / "rheo_ref"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "bad.py").write_text('import os\n\n\ndef f(x: int) -> str:\n    return x  +  1\n')
    (tmp_path / "rheo").mkdir()
    (tmp_path / "rheo" / "__init__.py").write_text("")
    r = run(tool("mypy"), "--cache-dir", str(tmp_path / "cache"), cwd=tmp_path)
    assert r.returncode == 1 and "Incompatible return value" in r.stdout, r.stdout
