"""rheo installs beside someone else's stack: the wheel's metadata pins nothing and puts only rheo's
own packages into site-packages; the core (cases, exact laws, the gate, the pytest plugin) runs
without torch or any other extra; installing the `fast` extra keeps the torch already there; the
pytest plugin registers only its own marker, so a downstream `--strict-markers` still catches typos
and rheo's internal markers.

The wheel is built without build isolation (`pip wheel --no-deps --no-build-isolation`, about 5 s)
from a copy of the repository, so the checkout gets no build/ or egg-info. Fresh virtual
environments install from the package index pip is configured with (tens of seconds: `slow`).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
import tomllib
from helpers import CASES, doc_example

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[1]
# Everything the extras add: none of it may be imported on the core path.
OPTIONAL = (
    "torch",
    "transformers",
    "gguf",
    "accelerate",
    "safetensors",
    "dask",
    "distributed",
    "pyarrow",
    "matplotlib",
    "sympy",
    "z3",
    "jupytext",
    "nbformat",
    "hypothesis",
)
EXTRAS = {"fast", "hf", "model", "sweep", "dask", "proofs", "notebooks", "test", "dev"}
PACKAGES = {"rheo", "rheo_ref", "rheo_fast"}  # the only top-level names the wheel may install
# The doc recipe's broken twin: the rejected token is drawn from p, not from the residual max(0, p - q)
BROKEN = ("draw(rng, [max(0, a - b) for a, b in zip(p, q)])", "draw(rng, p)")
# Not copied into the wheel's source tree: hidden entries (.git, the venvs .venv and .venv-NAME of
# several GB each, caches) and folders the wheel does not ship.
NOT_COPIED = {"build", "dist", "reports", "notebooks", "tests", "docs"}


def _clean_env() -> dict[str, str]:
    """The environment without this checkout on the path: a venv sees only what is installed in it."""
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}


def _name(requirement: str) -> str:
    return re.split(r"[\s\[<>=!~;(]", requirement, maxsplit=1)[0].lower().replace("_", "-")


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    """rheo's wheel, built from a copy of the repository."""
    src = tmp_path_factory.mktemp("src")
    for entry in ROOT.iterdir():
        if entry.name.startswith(".") or entry.name in NOT_COPIED or entry.name.endswith(".egg-info"):
            continue
        if entry.is_dir():
            shutil.copytree(entry, src / entry.name, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info"))
        else:
            shutil.copy2(entry, src / entry.name)
    size = sum(f.stat().st_size for f in src.rglob("*") if f.is_file())
    assert size < 50 * 2**20, f"the wheel's source copy is {size / 2**20:.0f} MiB: something big was copied"
    out = tmp_path_factory.mktemp("dist")
    run = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(out), str(src)],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    (found,) = out.glob("rheo-*.whl")
    return found


def test_the_wheel_pins_nothing_has_the_extras_and_installs_only_rheo_packages(wheel):
    with zipfile.ZipFile(wheel) as z:
        names = z.namelist()
        (meta_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        meta = Parser().parsestr(z.read(meta_name).decode())
        (ep_name,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        entry_points = z.read(ep_name).decode()
    requires = meta.get_all("Requires-Dist") or []
    assert requires and not [r for r in requires if "==" in r.split(";")[0]], requires
    core = {_name(r) for r in requires if "extra ==" not in r}
    assert core == {"scipy", "tqdm"}, core
    assert set(meta.get_all("Provides-Extra") or []) == EXTRAS
    by_extra = {e: {_name(r) for r in requires if f'extra == "{e}"' in r} for e in EXTRAS}
    assert "torch" in by_extra["fast"] and "transformers" in by_extra["hf"]
    assert {"dask", "distributed", "pyarrow"} <= by_extra["sweep"] and {"dask", "distributed"} == by_extra["dask"]
    assert {"sympy", "z3-solver"} <= by_extra["proofs"]
    assert {"jupytext", "nbformat", "matplotlib"} <= by_extra["notebooks"]
    tops = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert tops == PACKAGES, tops  # no top-level `proofs` (nor anything else generic)
    assert "rheo/data/case_library.json" in names and "rheo/data/best_cases.json" in names
    assert re.search(r"\[pytest11\]\nrheo = rheo\.lossless\.plugin\n", entry_points), entry_points


def test_make_installs_with_the_constraints_and_they_pin_exactly():
    """The exact versions are the Makefile's business: every pip install there passes constraints.txt,
    which pins (==) every package of every extra that our own runs install."""
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            m = re.fullmatch(r"([A-Za-z0-9._-]+)==([0-9][^\s]*)", line)
            assert m, f"constraints.txt: {line!r} is not NAME==VERSION"
            pins[m.group(1).lower().replace("_", "-")] = m.group(2)
    assert pins["torch"] == "2.13.0"
    installs = [
        ln
        for ln in (ROOT / "Makefile").read_text().splitlines()
        if re.search(r"pip install (?!--upgrade pip)", ln) and "-r envs/" not in ln
    ]
    assert installs and all("-c constraints.txt" in ln for ln in installs), installs
    # a served decoder's own environment installs its pinned list envs/NAME.txt (NAME==VERSION each)
    for env in sorted((ROOT / "envs").glob("*.txt")):
        for line in env.read_text().splitlines():
            line = line.split("#")[0].strip()
            assert not line or re.fullmatch(r"[A-Za-z0-9._\[\],-]+==[0-9][^\s]*", line), f"{env.name}: {line!r}"
    assert not [ln for ln in installs if "==" in ln], installs  # versions live in constraints.txt only
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    wanted = {_name(r) for r in project["dependencies"]}
    for extra, reqs in project["optional-dependencies"].items():
        assert not [r for r in reqs if "==" in r], (extra, reqs)
        wanted |= {_name(r) for r in reqs if not r.startswith("rheo[")}
    assert not wanted - set(pins), f"constraints.txt lacks pins for {sorted(wanted - set(pins))}"


BLOCKER = """
import importlib.abc, sys
BLOCKED = {blocked!r}
class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name.partition(".")[0] in BLOCKED:
            raise ModuleNotFoundError(f"No module named {{name!r}} (blocked)", name=name)
sys.meta_path.insert(0, Blocker())
"""


def test_the_core_runs_with_every_extra_missing(tmp_path):
    """`import rheo`, the plugin, the pure-Python recipe of docs/GATE.md through `rheo.assert_lossless`
    (and its broken twin, rejected), `rheo exact` and `rheo cases`, with every optional package made
    unimportable; a subcommand that needs torch names the extra that installs it."""
    recipe = doc_example("pure_decoder").split("\n@pytest.mark.lossless")[0]
    broken = recipe.replace(*BROKEN)
    assert broken != recipe
    script = BLOCKER.format(blocked=OPTIONAL) + textwrap.dedent(
        f"""
        import io, contextlib
        import rheo, rheo.lossless.plugin
        from rheo.cli import main
        ns, bad = {{}}, {{}}
        exec({recipe!r}, ns)
        exec({broken!r}, bad)
        ok = rheo.assert_lossless(ns["pure_decoder"], ns["CASE"], alpha=1e-3, tv=0.05, seed=11)
        print("good", ok.rejected, ok.n)
        try:
            rheo.assert_lossless(bad["pure_decoder"], bad["CASE"], alpha=1e-3, tv=0.05, seed=11)
            print("broken passed")
        except rheo.LosslessError as e:
            print("broken rejected", e.result.p_value < 1e-3)
        with contextlib.redirect_stdout(io.StringIO()) as out:
            print("exact", main(["exact", {str(CASES / "small.json")!r}]), file=sys.stderr)
        assert '"tv": "0"' in out.getvalue(), out.getvalue()
        with contextlib.redirect_stdout(io.StringIO()):
            print("cases", main(["cases"]), file=sys.stderr)
        print("sample", main(["sample", {str(CASES / "small.json")!r}, "--samples", "5", "--seed", "0"]))
        print("loaded", sorted({{m.partition(".")[0] for m in sys.modules}} & set(BLOCKED)))
        """
    )
    env = dict(os.environ, PYTHONPATH=str(ROOT))  # this checkout, not the rheo installed in the interpreter
    run = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env
    )
    assert run.returncode == 0, run.stdout + run.stderr
    lines = run.stdout.splitlines()
    assert lines[0].startswith("good False"), run.stdout
    assert lines[1] == "broken rejected True", run.stdout
    assert "exact 0" in run.stderr and "cases 0" in run.stderr and "sample 2" in lines, run.stdout + run.stderr
    assert "rheo: error: this needs torch, which is not installed: pip install 'rheo[fast]'" in run.stderr
    assert lines[-1] == "loaded []", run.stdout


@pytest.mark.parametrize("version", ["2.13.0", "2.5.0"])
def test_installing_the_fast_extra_keeps_the_torch_already_installed(wheel, tmp_path, version):
    """pip's plan for `<wheel>[fast]` in a virtual environment that already holds torch `version`
    (our pin, and an older one a decoder project might be on; recorded as an installed distribution)
    installs rheo and the core's packages and no torch (`--dry-run --report`: nothing is written)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    py = str(venv / "bin" / "python")
    site = subprocess.run(
        [py, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    dist = Path(site) / f"torch-{version}.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: torch\nVersion: {version}\n")
    (dist / "INSTALLER").write_text("pip\n")
    (dist / "RECORD").write_text("")
    report = tmp_path / "report.json"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "--python",
            py,
            "install",
            "--dry-run",
            "-q",
            "--report",
            str(report),
            f"{wheel}[fast]",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert run.returncode == 0, run.stdout + run.stderr
    planned = {i["metadata"]["name"].lower() for i in json.loads(report.read_text())["install"]}
    assert {"rheo", "scipy", "tqdm"} <= planned and "torch" not in planned, planned


def _readme_quick_start(py: str, venv: Path, cwd: Path, env: dict[str, str]) -> None:
    """README.md's "Use it", run where only the wheel is installed: each python block as written (the quick
    start prints the correct sampler's pass, then its broken twin's REJECT), and `rheo exact` on a case
    of the checkout (the wheel ships no cases) by the installed `rheo` script."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    assert blocks, "README.md has no python block"
    for block in blocks:
        run = subprocess.run([py, "-c", block], capture_output=True, text=True, cwd=cwd, env=env, timeout=300)
        assert run.returncode == 0, block + run.stdout + run.stderr
        if "assert_lossless" in block:
            first, second = run.stdout.splitlines()[:2]
            assert ": pass (" in first and ": REJECT (" in second, run.stdout
    exact = subprocess.run(
        [str(venv / "bin" / "rheo"), "exact", str(CASES / "small.json")],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
    )
    assert exact.returncode == 0 and json.loads(exact.stdout)["tv"] == "0", exact.stdout + exact.stderr


@pytest.mark.slow
def test_a_fresh_venv_with_only_the_wheel_runs_the_pure_recipe(wheel, tmp_path):
    """`pip install <wheel>` into an empty virtual environment (no torch): README.md's quick start runs as
    written (`_readme_quick_start`), and the pure-Python recipe of docs/GATE.md passes under pytest with the
    plugin and --strict-markers; its broken twin (exact TV 0.109) fails. About 60 s on 2 cores (venv, scipy,
    pytest)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    py = str(venv / "bin" / "python")
    env = _clean_env()

    def pip(*args: str) -> None:
        run = subprocess.run(
            [py, "-m", "pip", "install", "-q", *args], capture_output=True, text=True, timeout=600, env=env
        )
        assert run.returncode == 0, run.stdout + run.stderr

    pip(str(wheel))
    probe = subprocess.run(
        [py, "-c", "import importlib.util as u; print([m for m in ('torch', 'proofs', 'pytest') if u.find_spec(m)])"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=60,
    )
    assert probe.stdout.strip() == "[]", probe.stdout + probe.stderr  # no torch, no top-level proofs
    _readme_quick_start(py, venv, tmp_path, env)
    pip("pytest")
    recipe = doc_example("pure_decoder")
    project = tmp_path / "downstream"
    project.mkdir()
    (project / "test_good.py").write_text(recipe)
    (project / "test_broken.py").write_text(recipe.replace(*BROKEN))
    run = subprocess.run(
        [py, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--strict-markers", "-m", "lossless"],
        capture_output=True,
        text=True,
        cwd=project,
        env=env,
        timeout=600,
    )
    out = run.stdout + run.stderr
    assert run.returncode == 1 and "1 failed, 1 passed" in out, out
    assert "FAILED test_broken.py::test_pure_decoder_is_lossless" in out and "LosslessError" in out, out


def test_the_plugin_registers_only_lossless_and_strict_markers_still_catch_rheo_internal_ones(pytester):
    """A downstream session (no rheo configuration; in a subprocess, as pytest remembers registered
    markers within one process) with --strict-markers: a typo of an internal
    marker and rheo's own internal markers are errors; `lossless` is known. The plugin's whole
    contribution to `--markers` is the `lossless` line."""
    pytester.makepyfile(
        test_typo="import pytest\n\n@pytest.mark.slwo\ndef test_a():\n    pass\n",
        test_internal="import pytest\n\n@pytest.mark.slow\ndef test_b():\n    pass\n",
        test_ok="import pytest\n\n@pytest.mark.lossless\ndef test_c(rheo_seed):\n    assert rheo_seed >= 0\n",
    )
    result = pytester.runpytest_subprocess(
        "--strict-markers", "--continue-on-collection-errors", "-p", "no:cacheprovider"
    )
    result.assert_outcomes(passed=1, errors=2)
    result.stdout.fnmatch_lines(["*'slwo' not found in `markers` configuration option*"])
    result.stdout.fnmatch_lines(["*'slow' not found in `markers` configuration option*"])

    def markers(*args: str) -> set[str]:
        out = pytester.runpytest_subprocess("--markers", "-p", "no:cacheprovider", *args)
        return {line.split(":")[0] for line in out.stdout.lines if line.startswith("@pytest.mark.")}

    assert markers() - markers("-p", "no:rheo") == {"@pytest.mark.lossless"}
