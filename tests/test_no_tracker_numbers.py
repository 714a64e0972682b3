"""The repository's readers cannot see our tracker: code and docs say what a thing is, never "issue 22".
External tracker citations ("vLLM #47066") stand only in docs/GATE_REFERENCE.md's bug-class table, where each bug
class cites its public report; everywhere else a class is named by that table's row."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
OURS = re.compile(r"\bissues? ?#?\d+\b|\bissue-\d+\b", re.IGNORECASE)  # "issue 22", "issues 3", "issue #5"
EXTERNAL = re.compile(r"(?<![\w&/])#\d+\b|\bPR \d+\b")  # "#47066", "PR #476", "PR 10198"
TABLE = "docs/GATE_REFERENCE.md"
SELF = "tests/test_no_tracker_numbers.py"


def tracked() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout: the tracked files are unknown")
    return [f for f in out.splitlines() if f.endswith((".py", ".md", ".toml", ".txt", ".cfg", ".json", "Makefile"))]


def hits(pattern: re.Pattern, allowed: str | None = None) -> list[str]:
    found = []
    for name in tracked():
        path = ROOT / name
        if name == SELF or not path.is_file():  # this file shows the patterns it looks for
            continue
        for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if allowed is not None and name == allowed and line.startswith("|"):
                continue  # a row of the bug-class table
            if pattern.search(line):
                found.append(f"{name}:{i}: {line.strip()[:120]}")
    return found


def test_no_tracker_issue_number_in_code_or_docs():
    assert hits(OURS) == []


def test_external_tracker_citations_only_in_the_bug_class_table():
    assert hits(EXTERNAL, allowed=TABLE) == []


@pytest.mark.parametrize(
    ("line", "ours", "external"),
    [
        ("see issue 22 for why", True, False),
        ("Issues 3 and 4", True, False),
        ("the vLLM #47066 class", False, True),
        ("a vLLM fork, PR #476", False, True),
        ("vLLM PR 10198", False, True),
        ("## 10. The JSON exchange format", False, False),
        ("color: #fff; and &#8212;", False, False),
        ("three issues with it", False, False),
    ],
)
def test_the_patterns_catch_what_they_name(line, ours, external):
    assert bool(OURS.search(line)) is ours and bool(EXTERNAL.search(line)) is external
