"""The formatter, the linter and the type checker, as part of the default suite (so CI runs
them): ruff (format and lint, settings in pyproject.toml) on the whole repository, mypy on the
packages pyproject.toml names (`rheo_ref`, `rheo`). Each is shown to fail on a planted fault."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from helpers import dev_tool

ROOT = Path(__file__).resolve().parents[1]


def tool(name: str) -> str:
    return dev_tool(name)  # skipped with the install line where the dev extra is not installed


def run(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), cwd=cwd, capture_output=True, text=True, timeout=600)


def test_ruff_lint_passes():
    r = run(tool("ruff"), "check", "--no-cache", ".")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr


def test_ruff_format_leaves_every_file_as_it_is():
    r = run(tool("ruff"), "format", "--check", "--no-cache", ".")
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr


def test_mypy_passes(tmp_path):
    r = run(tool("mypy"), "--cache-dir", str(tmp_path / "cache"))
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr


def test_the_checkers_catch_planted_faults(tmp_path):
    """The same settings reject an unused import, a misformatted line and a type error."""
    shutil.copy(ROOT / "pyproject.toml", tmp_path / "pyproject.toml")
    pkg = tmp_path / "rheo_ref"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "bad.py").write_text("import os\n\n\ndef f(x: int) -> str:\n    return x  +  1\n")
    assert run(tool("ruff"), "check", "--no-cache", ".", cwd=tmp_path).returncode == 1
    assert run(tool("ruff"), "format", "--check", "--no-cache", ".", cwd=tmp_path).returncode == 1
    (tmp_path / "rheo").mkdir()
    (tmp_path / "rheo" / "__init__.py").write_text("")
    r = run(tool("mypy"), "--cache-dir", str(tmp_path / "cache"), cwd=tmp_path)
    assert r.returncode == 1 and "Incompatible return value" in r.stdout, r.stdout
