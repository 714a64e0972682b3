"""Where a served decoder runs and which release it judges (rheo.decoders.served): the package installed in
the interpreter rheo runs in, another environment's (`--python PATH`), or rheo's own `.venv-NAME`; the
installed version in every record; a release that moved what the driver drives exits 2 with one line; a
table row that fails is reported and the other rows run; `--device cuda` reaches the driver, which says in one line
(exit 2) where its environment has no CUDA device, and each record says where it ran.

No served environment is needed here: the drivers are small scripts written by the tests, run by this
interpreter. vLLM 0.34.0 itself is judged in tests/decoders/test_vllm.py (its `.venv-vllm034`, skipped when absent).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest
from helpers import env_marks

from rheo.cli.main import main
from rheo.decoders import decoders, device, served, vllm
from rheo.decoders.device import DEVICE_VAR
from rheo.decoders.served import PYTHON_VAR, DriverError, Served, in_range, run_driver
from rheo_ref.errors import DeviceUnavailable, PackageUnavailable


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


def test_a_device_other_than_cpu_or_cuda_and_cuda_for_an_in_process_decoder_are_refused(capsys, monkeypatch):
    """`rheo gate --device`: cpu or cuda, else exit 2 naming both; cuda only for a served decoder (the ones that run
    in this process take no device)."""
    monkeypatch.setenv(DEVICE_VAR, "cpu")  # (the CLI sets it for the drivers: restored after the test)
    in_process = next(n for n, d in decoders().items() if d.served is None)
    for argv, text in (
        (["--decoder", "vllm", "--device", "tpu"], "allowed: cpu, cuda"),
        (["--decoder", in_process, "--device", "cuda"], f"allowed for {in_process}: --device cpu"),
    ):
        code = main(["gate", "tests/cases/hf.json", *argv, "--tokens", "2"])
        err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
        assert code == 2 and len(err) == 1 and text in err[0] and "Traceback" not in err[0], err


def test_the_driver_environment_per_device(monkeypatch):
    """cpu (the default): TRITON_INTERPRET=1 (and CUDA_VISIBLE_DEVICES="" where the driver hides CUDA) unless already
    set, as the drivers always did; cuda: nothing set, so the compiled kernels run."""
    for var in ("TRITON_INTERPRET", "CUDA_VISIBLE_DEVICES", DEVICE_VAR):
        monkeypatch.delenv(var, raising=False)
    assert device.settings(hide_cuda=True) == {"TRITON_INTERPRET": "1", "CUDA_VISIBLE_DEVICES": ""}
    assert device.settings() == {"TRITON_INTERPRET": "1"}
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "0")
    assert device.settings(hide_cuda=True) == {"TRITON_INTERPRET": "1"}  # (a value the user set stays)
    monkeypatch.setenv(DEVICE_VAR, "cuda")
    assert device.settings(hide_cuda=True) == {} and device.requested() == "cuda"
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    assert device.path("cuda") == {"device": "cuda", "interpreter": True}


def test_no_cuda_device_in_the_drivers_environment_is_one_line(tmp_path, monkeypatch):
    """A driver that finds no CUDA device exits NO_DEVICE with one JSON line: DeviceUnavailable, exit 2, one line
    naming the package and the driver's reason."""
    import importlib.metadata

    body = "import json, sys\nprint(json.dumps({'no_device': '--device cuda: no CUDA here'}))\nsys.exit(4)\n"
    module = _driver(tmp_path, monkeypatch, body)
    with pytest.raises(DeviceUnavailable) as e:
        run_driver("x", module, {}, timeout=60, package="numpy")
    assert str(e.value) == f"numpy {importlib.metadata.version('numpy')}: --device cuda: no CUDA here"
    assert e.value.exit_status == 2 and device.NO_DEVICE == 4


def test_a_reply_from_another_device_or_the_interpreter_on_cuda_fails_the_run(monkeypatch):
    """Served.decode checks each reply's path against the device asked for: a driver that ran on another device, or
    ran its kernels in Triton's interpreter on cuda, is a DriverError, never a verdict on cuda."""
    monkeypatch.setattr(Served, "python", lambda self: Path(sys.executable))
    run = SimpleNamespace(options=lambda: {})
    s = Served("x", "m", request=lambda *a: {}, samples=lambda reply: reply["samples"])
    for asked, path, ok in (("cpu", {"device": "cpu", "interpreter": True}, True),
                            ("cuda", {"device": "cuda", "interpreter": False}, True),
                            ("cuda", {"device": "cpu", "interpreter": True}, False),
                            ("cuda", {"device": "cuda", "interpreter": True}, False),
                            ("cuda", None, False)):  # fmt: skip
        monkeypatch.setenv(DEVICE_VAR, asked)
        monkeypatch.setattr(Served, "run", lambda self, req, *, timeout, p=path: {"samples": [[1]], "path": p})
        if ok:
            assert s.decode(None, [], 1, 1, 1, run) == [(1,)]  # type: ignore[arg-type]
        else:
            with pytest.raises(DriverError):
                s.decode(None, [], 1, 1, 1, run)  # type: ignore[arg-type]


@pytest.mark.parametrize("device_flag", [None, "cuda"])
def test_rows_record_the_device_and_no_device_ends_the_table_in_one_line(device_flag, monkeypatch, capsys, tmp_path):
    """A CPU record is as it was (no device key); with --device cuda each record says so, and a driver that finds no
    CUDA device ends the whole table with one line, exit 2 (no row runs on a device the environment lacks)."""
    monkeypatch.setenv(DEVICE_VAR, "cpu")  # (the CLI sets it for the drivers: restored after the test)
    monkeypatch.setattr(Served, "python", lambda self: Path(sys.executable))
    monkeypatch.setattr(served, "installed_version", lambda python, package: "9.9.9")
    monkeypatch.setattr(Served, "run", lambda self, request, *, timeout: (_ for _ in ()).throw(
        PackageUnavailable("vllm 9.9.9: vllm.some.piece (moved); this adapter supports vllm >=0.33.0,<0.35")))  # fmt: skip
    out = tmp_path / "rows.json"
    flags = [] if device_flag is None else ["--device", device_flag]
    assert main(["gate", "--decoder", "vllm", "--rows", "one-hot", "--seeds", "1", "--json", str(out), *flags]) == 1
    (record,) = json.loads(out.read_text())
    assert record.get("device") == device_flag and "moved" in record["error"]
    capsys.readouterr()
    monkeypatch.setattr(Served, "run", lambda self, request, *, timeout: (_ for _ in ()).throw(
        DeviceUnavailable("vllm 9.9.9: --device cuda: torch.cuda.is_available() is false")))  # fmt: skip
    assert main(["gate", "--decoder", "vllm", "--rows", "one-hot,block-one-hot", "--seeds", "1", *flags]) == 2
    captured = capsys.readouterr()
    err = [ln for ln in captured.err.splitlines() if ln.strip()]
    assert len(err) == 1 and "is_available() is false" in err[0] and "| one-hot |" not in captured.out, err


SERVED_GATES = [
    pytest.param("vllm", ["tests/cases/hf.json", "--tokens", "2", "--gen", "k=3"], marks=env_marks("vllm")),
    pytest.param("sglang", ["tests/cases/served.json", "--tokens", "3"], marks=env_marks("sglang")),
    pytest.param("eagle-harness", ["tests/cases/served.json", "--tokens", "3"], marks=env_marks("eagle-harness")),
    pytest.param("flashspec", ["tests/cases/served.json", "--tokens", "3"], marks=env_marks("flashspec")),
]


@pytest.mark.parametrize("name, argv", SERVED_GATES)
def test_each_driver_finds_no_cuda_device_and_says_so_in_one_line(name, argv, capsys, monkeypatch):
    """`rheo gate --decoder NAME --device cuda` where the served environment's torch has no CUDA device (this
    machine): its own driver finds it (torch.cuda.is_available() there), exit 2, one line, no traceback."""
    import subprocess

    from rheo.decoders.served import env_python

    probe = subprocess.run([str(env_python(name)), "-c", "import torch; print(torch.cuda.is_available())"],
                           capture_output=True, text=True, timeout=120)  # fmt: skip
    if probe.stdout.strip() != "False":
        pytest.skip(f"the {name} environment's torch sees a CUDA device: --device cuda runs there")
    monkeypatch.setenv(PYTHON_VAR, "")  # (rheo's own .venv-NAME)
    monkeypatch.setenv(DEVICE_VAR, "cpu")  # (the CLI sets it for the drivers: restored after the test)
    code = main(["gate", *argv, "--decoder", name, "--device", "cuda"])
    err = [ln for ln in capsys.readouterr().err.splitlines() if ln.strip()]
    assert code == 2 and len(err) == 1, err
    assert "--device cuda: torch.cuda.is_available() is false in" in err[0] and "Traceback" not in err[0], err


def test_a_driver_keeps_stdout_for_its_reply_whatever_the_package_prints():
    """vLLM 0.24-0.29 log a warning to stdout when imported on CPU, which once left the gate with "no JSON reply":
    a driver imports `rheo.decoders.driver_io` first, so its stdout is the one JSON line and the package's prints
    (Python's and C-level writes to fd 1) reach stderr."""
    import subprocess
    import sys

    code = (
        "from rheo.decoders import driver_io\n"
        "import os, sys\n"
        "print('WARNING a package logs to stdout')\n"
        "sys.stdout.flush()\n"
        "os.write(1, b'a C-level write\\n')\n"
        "driver_io.reply({'samples': [[1, 2]]})\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout == '{"samples": [[1, 2]]}\n'
    assert "WARNING a package logs to stdout" in r.stderr and "a C-level write" in r.stderr
