"""Small shared helpers for the tests (no fixtures with hidden state)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

CASES = Path(__file__).parent / "cases"
GATE_DOC = Path(__file__).resolve().parents[1] / "docs" / "GATE.md"


def doc_example(marker: str) -> str:
    """The python example of docs/GATE.md that mentions `marker` (there is exactly one)."""
    blocks = re.findall(r"```python\n(.*?)```", GATE_DOC.read_text(encoding="utf-8"), re.S)
    found = [b for b in blocks if marker in b]
    assert len(found) == 1, f"docs/GATE.md must hold exactly one python example using {marker}"
    return found[0]


def run_rheo(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the `rheo` CLI in a subprocess exactly as a user would (python -m rheo.cli)."""
    env = dict(os.environ, PYTHONWARNINGS="error::UserWarning")
    return subprocess.run(
        [sys.executable, "-m", "rheo.cli", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def write_case(tmp_path: Path, obj, name: str = "case.json") -> str:
    path = tmp_path / name
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return str(path)


def load_json(name: str) -> dict:
    return json.loads((CASES / name).read_text())
