"""README.md as a newcomer reads it: it opens with the two set-up commands (`make run`, `make test`), then
"Use it" starts at `pip install rheo`; every python block runs as written (the gate passes the correct
sampler and rejects its broken twin), the cheap `rheo` lines of "Use it" run through `python -m rheo`,
every `make` target it names exists, and it stays short."""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from test_install import BLOCKER, OPTIONAL

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
CHEAP = ("exact", "cases")  # subcommands whose README lines run here (pure Python, about a second)


def _blocks(text: str, lang: str) -> list[str]:
    """The code blocks fenced with ```LANG (LANG "" : plain fences), read fence by fence."""
    out, current, opened = [], [], None
    for line in text.splitlines():
        if line.startswith("```"):
            if opened is None:
                opened, current = line[3:].strip(), []
            else:
                if opened == lang:
                    out.append("\n".join(current) + "\n")
                opened = None
        elif opened is not None:
            current.append(line)
    return out


def _section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start : None if end < 0 else end]


def _run(argv: list[str], cwd: Path = ROOT) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


def test_it_opens_with_the_two_setup_commands():
    lines = [line for line in README.splitlines() if line.strip()]
    assert lines[0] == "# rheo" and lines[1] == "```", lines[:3]
    assert lines[2].startswith("make run ") and lines[3].startswith("make test ") and lines[4] == "```", lines[:5]


def test_use_it_starts_at_pip_install():
    use = _section("Use it")
    assert _blocks(use, "")[0].splitlines()[0].startswith("pip install rheo "), use[:200]
    assert README.index("## Use it") < README.index("## Work on rheo")


@pytest.mark.parametrize("i", range(len(_blocks(README, "python"))))
def test_each_python_block_runs_as_written(i, tmp_path):
    """In a folder of its own, with every optional package unimportable (what `pip install rheo` gives;
    tests/test_install.py builds the wheel itself)."""
    block = _blocks(README, "python")[i]
    run = _run([sys.executable, "-c", BLOCKER.format(blocked=OPTIONAL) + block], cwd=tmp_path)
    assert run.returncode == 0, run.stdout + run.stderr
    if "assert_lossless" in block:  # the quick start: the correct sampler passes, its broken twin is rejected
        first, second = run.stdout.splitlines()[:2]
        assert ": pass (" in first and ": REJECT (" in second, run.stdout


def test_the_cheap_rheo_lines_of_use_it_run():
    lines = [ln.split("#")[0].split() for b in _blocks(_section("Use it"), "") for ln in b.splitlines()]
    ran = []
    for argv in (ln for ln in lines if ln[:1] == ["rheo"] and ln[1] in CHEAP):
        run = _run([sys.executable, "-m", "rheo", *argv[1:]])
        assert run.returncode == 0, shlex.join(argv) + "\n" + run.stderr
        if argv[1] == "exact":
            assert json.loads(run.stdout)["tv"] == "0", run.stdout[:300]
        ran.append(argv[1])
    assert "exact" in ran


def test_every_make_target_it_names_exists():
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set(re.findall(r"(?m)^([a-z]+):", makefile))
    named = set(re.findall(r"(?m)^make ([a-z]+)", README))
    assert {"run", "test"} <= named <= targets, named - targets


def test_it_stays_short():
    assert len(README.splitlines()) <= 120, "README.md is the first ten minutes: the rest goes in docs/"
