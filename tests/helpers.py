"""Small shared helpers for the tests (no fixtures with hidden state)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

CASES = Path(__file__).parent / "cases"


def run_rheo(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the `rheo` CLI in a subprocess exactly as a user would (python -m rheo)."""
    env = dict(os.environ, PYTHONWARNINGS="error::UserWarning")
    return subprocess.run(
        [sys.executable, "-m", "rheo", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def write_case(tmp_path: Path, obj, name: str = "case.json") -> str:
    path = tmp_path / name
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return str(path)


def load_json(name: str) -> dict:
    return json.loads((CASES / name).read_text())
