"""The layers (rheo -> rheo_fast -> rheo_ref), held by import-linter's contracts in pyproject.toml,
and the start-up promise that follows from them: the `rheo` parser, `rheo exact` and `rheo compare`
never import torch (nor transformers: `gate-hf --help` does not load it)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import tomllib
from helpers import CASES, dev_tool

ROOT = Path(__file__).resolve().parents[1]


def lint(cwd: Path, config: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [dev_tool("lint-imports"), "--config", str(config), "--no-cache"],  # skipped without the dev extra
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=300,
        env={"PYTHONPATH": str(cwd), "PATH": ""},
    )


def test_the_repository_keeps_every_contract():
    r = lint(ROOT, ROOT / "pyproject.toml")
    assert r.returncode == 0, r.stdout + r.stderr
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert f"Contracts: {len(contracts)} kept, 0 broken." in r.stdout, r.stdout
    families = [c for c in contracts if c["name"].startswith("Family ")]
    assert len(families) >= 2, "one contract per family, and one for the shared code"


# Each crossing, planted in a throwaway copy of the three packages, must break a contract.
CROSSINGS = {
    "reference imports the fast path": ("rheo_ref/exact.py", "import rheo_fast.decode\n", "Layers"),
    "fast path imports the gate": ("rheo_fast/decode.py", "from rheo import gate\n", "Layers"),
    "reference imports torch": ("rheo_ref/exact.py", "import torch\n", "no torch"),
    "proofs import the fast path": ("proofs/claims.py", "import rheo_fast.decode\n", "proofs"),
    "a cycle inside a package": ("rheo_ref/models.py", "from rheo_ref import exact\n", "cycles"),
    "the gate core imports torch": ("rheo/lossless/stats.py", "import torch\n", "Gate core"),
    "the gate core imports the fast path": ("rheo/lossless/stats.py", "import rheo_fast.decode\n", "Gate core"),
    "the gate matrix imports the command line": ("rheo/selfgate/matrix.py", "import rheo.cli.main\n", "command line"),
}


@pytest.mark.parametrize("crossing", list(CROSSINGS))
def test_a_crossed_layer_breaks_a_contract(tmp_path, crossing):
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    files = {
        "rheo/selfgate/matrix.py": "import rheo_fast.decode\n",
        "rheo/lossless/stats.py": "",
        "rheo/cli/main.py": "",
        "rheo_fast/decode.py": "import torch\nimport rheo_ref.exact\n",
        "rheo_ref/models.py": "",
        "rheo_ref/exact.py": "from rheo_ref import models\n",
        "proofs/claims.py": "import rheo_ref.exact\n",
        "torch/__init__.py": "",
    }
    path, line, broken = CROSSINGS[crossing]
    files[path] += line
    contracts = [c for c in config["contracts"] if not c["name"].startswith("Family ")]  # (their modules are not here)
    named = {m for c in contracts for k in ("source_modules", "layers", "ancestors") for m in c.get(k, ())}
    for module in named:  # every module a contract names exists in the copy (empty unless planted above)
        if not any(f.startswith(module.replace(".", "/") + ("/" if "." not in module else ".")) for f in files):
            files.setdefault(module.replace(".", "/") + "/__init__.py", "")
    for name in files:
        for parent in Path(name).parents:
            if parent != Path("."):
                (tmp_path / parent).mkdir(parents=True, exist_ok=True)
                (tmp_path / parent / "__init__.py").touch()
    for name, text in files.items():
        (tmp_path / name).write_text(text)
    lines = [
        "[tool.importlinter]",
        'root_packages = ["rheo", "rheo_fast", "rheo_ref", "proofs"]',
        "include_external_packages = true",
    ]
    for c in contracts:
        lines.append("[[tool.importlinter.contracts]]")
        # (an ignored import names modules of the real tree that the copy does not have)
        lines += [f"{k} = {v!r}".replace("'", '"') for k, v in c.items() if k != "ignore_imports"]
    (tmp_path / "lint.toml").write_text("\n".join(lines) + "\n")
    clean = dict(files)
    clean[path] = clean[path].removesuffix(line)
    r = lint(tmp_path, tmp_path / "lint.toml")
    assert r.returncode == 1, r.stdout + r.stderr
    broken_names = [ln for ln in r.stdout.splitlines() if ln.endswith(" BROKEN")]
    assert any(broken in name for name in broken_names), r.stdout  # (an indirect import may break more)
    (tmp_path / path).write_text(clean[path])
    r = lint(tmp_path, tmp_path / "lint.toml")
    assert r.returncode == 0, r.stdout + r.stderr


PROBE = """
import sys
from rheo.cli import main
try:
    status = main({argv!r})
except SystemExit as e:
    status = e.code
print("status", status, "torch" in sys.modules or "transformers" in sys.modules, "rheo_fast.decode" in sys.modules)
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["--help"],
        ["exact", "--help"],
        ["sample", "--help"],
        ["mutants", "--help"],
        ["generate", "--help"],
        ["gate-hf", "--help"],
        ["sweep", "--help"],
        ["exact", str(CASES / "small.json")],
        ["compare", "--help"],
        ["compare", str(CASES / "small.json"), "--tokens", "1"],
    ],
    ids=lambda a: " ".join(a).replace(str(CASES) + "/", ""),
)
def test_the_parser_rheo_exact_and_rheo_compare_do_not_import_torch(argv):
    r = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "status 0 False False", r.stdout[-500:]


HEAVY = ("dask", "distributed", "pyarrow", "matplotlib")


def test_rheo_sweep_help_imports_no_engine():
    """`rheo sweep --help` imports neither Dask nor pyarrow nor matplotlib (they load where used)."""
    probe = PROBE.replace('"rheo_fast.decode" in sys.modules', f"any(m in sys.modules for m in {HEAVY!r})")
    r = subprocess.run(
        [sys.executable, "-c", probe.format(argv=["sweep", "--help"])], capture_output=True, text=True, timeout=120
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "status 0 False False", r.stdout[-500:]


def test_rheo_sample_does_import_torch():
    """The probe can see torch when a command does import it (so the test above can fail)."""
    argv = ["sample", str(CASES / "small.json"), "--samples", "10", "--seed", "1"]
    r = subprocess.run([sys.executable, "-c", PROBE.format(argv=argv)], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[-1] == "status 0 True True", r.stdout[-500:]
