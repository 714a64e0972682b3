"""Where a served decoder runs and which release it judges (rheo.decoders.served): the package installed in
the interpreter rheo runs in, another environment's (`--python PATH`), or rheo's own `.venv-NAME`; the
installed version in every record; a release that moved what the driver drives exits 2 with one line; a
table row that fails is reported and the other rows run.

No served environment is needed here: the drivers are small scripts written by the tests, run by this
interpreter. vLLM 0.34.0 itself is judged in tests/test_vllm.py (its `.venv-vllm034`, skipped when absent).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from rheo.cli.main import main
from rheo.decoders import served, vllm
from rheo.decoders.served import PYTHON_VAR, Served, in_range, run_driver
from rheo_ref.errors import PackageUnavailable


@pytest.mark.parametrize(
    "version, supported, inside",
    [("0.33.0", ">=0.33.0,<0.35", True), ("0.34.0", ">=0.33.0,<0.35", True), ("0.35.0", ">=0.33.0,<0.35", False),
     ("0.32.9", ">=0.33.0,<0.35", False), ("0.34.0rc1", ">=0.33,<0.35", True), ("0.5.23", "==0.5.23", True),
     ("0.5.24", "==0.5.23", False)],
)  # fmt: skip
def test_release_ranges(version, supported, inside):
    assert in_range(version, supported) is inside


def test_the_installed_package_is_judged_in_this_interpreter(monkeypatch):
    """A package importable here is driven by this interpreter (no .venv-NAME, no envs/ looked up), and its
    version is importlib.metadata's."""
    import importlib.metadata

    monkeypatch.setenv(PYTHON_VAR, "")
    s = Served("no-such-env", "x", package="numpy")
    assert s.python() == Path(sys.executable)
    assert s.version() == importlib.metadata.version("numpy")


def test_a_missing_package_names_the_install_line(monkeypatch):
    monkeypatch.setenv(PYTHON_VAR, "")  # (empty: unset; monkeypatch restores whatever the CLI sets)
    s = Served("no-such-env", "x", package="rheo-no-such-package", pin="1.2.3")
    with pytest.raises(PackageUnavailable, match=r"rheo-no-such-package is not installed .*pip install "
                       r"rheo-no-such-package==1\.2\.3, or give --python PATH") as e:  # fmt: skip
        s.python()
    assert e.value.exit_status == 2 and "\n" not in str(e.value)


def test_the_gate_exits_2_with_one_line_when_the_package_is_absent(monkeypatch, tmp_path, capsys):
    """`rheo gate --decoder vllm --rows quick` where vLLM is importable nowhere: exit 2, one line, no table."""
    monkeypatch.setenv(PYTHON_VAR, "")  # (empty: unset; monkeypatch restores whatever the CLI sets)
    monkeypatch.setattr(served, "REPO", tmp_path)  # no rheo checkout with a .venv-vllm
    assert main(["gate", "--decoder", "vllm", "--rows", "quick"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "vllm is not installed" in err and "pip install vllm==" in err, err


def test_python_must_be_an_interpreter(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv(PYTHON_VAR, "")  # (empty: unset; monkeypatch restores whatever the CLI sets)
    assert main(["gate", "--decoder", "vllm", "--rows", "quick", "--python", str(tmp_path / "nope")]) == 2
    assert "is not an executable file" in capsys.readouterr().err  # (monkeypatch restores what the CLI set)


def _driver(tmp_path: Path, monkeypatch, body: str) -> str:
    """A driver module `fake_driver` on the PYTHONPATH, run by this interpreter as --python."""
    (tmp_path / "fake_driver.py").write_text(body)
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    monkeypatch.setenv(PYTHON_VAR, sys.executable)
    return "fake_driver"


def test_a_moved_piece_is_one_line_naming_it_the_version_and_the_range(tmp_path, monkeypatch):
    import importlib.metadata

    body = "import json, sys\nprint(json.dumps({'missing': 'pkg.mod.Thing (moved)'}))\nsys.exit(3)\n"
    module = _driver(tmp_path, monkeypatch, body)
    with pytest.raises(PackageUnavailable) as e:
        run_driver("x", module, {}, timeout=60, package="numpy", supported=">=1,<99")
    want = f"numpy {importlib.metadata.version('numpy')}: pkg.mod.Thing (moved); this adapter supports numpy >=1,<99"
    assert str(e.value) == want and e.value.exit_status == 2


def test_the_reply_carries_the_installed_version(tmp_path, monkeypatch):
    import importlib.metadata

    body = "import json, sys\njson.load(sys.stdin)\nprint(json.dumps({'samples': [[1]]}))\n"
    module = _driver(tmp_path, monkeypatch, body)
    reply = run_driver("x", module, {"a": 1}, timeout=60, package="numpy")
    assert reply == {"samples": [[1]], "version": importlib.metadata.version("numpy")}


def test_the_driver_sees_rheo_but_not_its_site_packages(tmp_path, monkeypatch):
    """The driver's PYTHONPATH holds links to rheo, rheo_ref and rheo_fast only (an installed rheo's site-packages
    would shadow the served environment's torch)."""
    body = (
        "import json, sys, rheo_ref, os\njson.load(sys.stdin)\n"
        "first = os.environ['PYTHONPATH'].split(os.pathsep)[0]\n"
        "print(json.dumps({'path': sorted(os.listdir(first)), 'ref': rheo_ref.__name__}))\n"
    )
    module = _driver(tmp_path, monkeypatch, body)
    reply = run_driver("x", module, {}, timeout=60, package="numpy")
    assert reply["path"] == ["rheo", "rheo_fast", "rheo_ref"] and reply["ref"] == "rheo_ref"


def test_a_failing_row_is_reported_and_the_others_run(monkeypatch, capsys, tmp_path):
    """Two rows whose driver finds its piece moved: both are in the table as errors (exit 1), with the version."""
    calls = []

    def moved(self, request, *, timeout):
        calls.append(request["method"])
        raise PackageUnavailable("vllm 9.9.9: vllm.some.piece (moved); this adapter supports vllm >=0.33.0,<0.35")

    monkeypatch.setattr(Served, "run", moved)
    monkeypatch.setattr(Served, "python", lambda self: Path(sys.executable))
    monkeypatch.setattr(served, "installed_version", lambda python, package: "9.9.9")
    out = tmp_path / "rows.json"
    code = main(["gate", "--decoder", "vllm", "--rows", "one-hot,block-one-hot", "--seeds", "1", "--json", str(out)])
    assert code == 1 and calls == ["token", "block"]
    records = json.loads(out.read_text())
    assert [r["setting"] for r in records] == ["one-hot", "block-one-hot"]
    assert all(r["version"] == "9.9.9" and "vllm.some.piece (moved)" in r["error"] for r in records)
    table = capsys.readouterr().out
    assert table.count("| error |") == 2 and "vllm 9.9.9" in table


def test_the_vllm_adapter_states_its_releases():
    assert vllm.SERVED.supported == ">=0.33.0,<0.35" and vllm.DECODER.served is vllm.SERVED
    assert vllm.DECODER.install == f"pip install vllm=={vllm.VERSION}"


@pytest.mark.parametrize("visible, says", [(False, "no CUDA device is visible"), (True, "compiled-kernel path")])
def test_device_cuda_is_refused_in_one_line(visible, says, capsys, monkeypatch):
    """`rheo gate --device cuda`: exit 2, one line, whether or not this machine shows a CUDA device (the compiled-
    kernel path is not built); a device that is neither cpu nor cuda is refused naming both."""
    import rheo.decoders.served as served
    from rheo.cli.main import main

    monkeypatch.setattr(served, "cuda_visible", lambda: visible)
    for device, text in (("cuda", says), ("tpu", "allowed: cpu, cuda")):
        code = main(["gate", "tests/cases/hf.json", "--decoder", "vllm", "--device", device, "--tokens", "2"])
        err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
        assert code == 2 and len(err) == 1 and text in err[0] and "Traceback" not in err[0], err
