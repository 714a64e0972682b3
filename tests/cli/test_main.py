"""`python -m rheo` where a package is missing: the package is named with the line that installs it (exit 2,
as `MissingDependencyError`, docs/CLI.md), never reported as an internal error, a bug in rheo; a module of
rheo's own that is missing still is one. The environment lacking a package is simulated by an import hook
that refuses it, installed before `python -m rheo` runs."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import pytest
from helpers import CASES

from rheo.cli.main import CORE, EXTRAS, main, missing_package

WITHOUT = textwrap.dedent(
    """
    import runpy, sys

    class Without:
        def find_spec(self, name, path=None, target=None):
            if name.partition(".")[0] in {blocked!r}:
                raise ModuleNotFoundError(f"No module named {{name!r}}", name=name)

    sys.meta_path.insert(0, Without())
    sys.argv = ["rheo", *{argv!r}]
    runpy.run_module("rheo", run_name="__main__")
    """
)


def rheo_without(blocked: tuple[str, ...], *argv: str) -> subprocess.CompletedProcess:
    script = WITHOUT.format(blocked=set(blocked), argv=list(argv))
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=300, env=os.environ)


@pytest.mark.parametrize(
    "blocked, argv, package",
    [
        (("tqdm",), ["audit"], "tqdm"),  # rheo audit's progress bar
        (("scipy", "torch"), ["cases", "--false-alarms", "1"], "scipy"),  # the binomial test of the false alarms
    ],
)
def test_a_missing_core_package_is_named_with_its_install_line(blocked, argv, package):
    run = rheo_without(blocked, *argv)
    assert run.returncode == 2, run.stderr
    lines = run.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"rheo: error: this needs {package}, which is not installed"), lines
    assert f"pip install {package}" in lines[0] and "internal error" not in run.stderr and "bug" not in run.stderr


def test_the_parser_needs_no_optional_package():
    run = rheo_without(("tqdm", "scipy", "numpy", "torch"), "--help")
    assert run.returncode == 0 and "exact" in run.stdout, run.stderr
    run = rheo_without(("tqdm", "scipy", "numpy", "torch"), "exact", str(CASES / "small.json"))
    assert run.returncode == 0 and '"tv": "0"' in run.stdout, run.stderr


def test_each_kind_of_import_failure_reads_as_what_it_is():
    assert missing_package(ModuleNotFoundError("No module named 'torch'", name="torch")) == (
        "this needs torch, which is not installed: pip install 'rheo[fast]'"
    )
    assert "pip install tqdm, or pip install --force-reinstall rheo" in missing_package(
        ModuleNotFoundError("x", name="tqdm.auto")
    )
    assert (
        missing_package(ModuleNotFoundError("x", name="llm"))
        == "this needs llm, which is not installed: pip install llm"
    )
    broken = ImportError("cannot import name 'binomtest' from 'scipy.stats'", name="scipy.stats")
    assert missing_package(broken).startswith("scipy is installed but cannot be imported") and "--upgrade scipy" in (
        missing_package(broken)
    )
    for own in ("rheo.cli.nope", "rheo_fast.nope", "rheo_ref.nope"):  # rheo's own module: a bug, reported as one
        assert missing_package(ModuleNotFoundError("x", name=own)) is None
    assert missing_package(ValueError("x")) is None and missing_package(ImportError("no name")) is None
    assert not set(CORE) & set(EXTRAS)


def test_rheos_own_missing_module_is_still_an_internal_error(monkeypatch, capsys):
    import rheo.cli.cases

    def lost(args):
        raise ModuleNotFoundError("No module named 'rheo_ref.gone'", name="rheo_ref.gone")

    monkeypatch.setattr(rheo.cli.cases, "run_cases", lost)  # (read when main builds its parser)
    monkeypatch.delenv("RHEO_DEBUG", raising=False)
    assert main(["cases"]) == 1
    assert "rheo: internal error: ModuleNotFoundError" in capsys.readouterr().err
