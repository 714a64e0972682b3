"""The drop-in a vLLM fork adds to its CI (docs/dropin/, docs/THIRD_PARTY.md section 11), run as a fork would:
in a fresh venv holding only rheo's wheel (and what pip installs for it: scipy, tqdm; pytest) beside the released
vLLM, from a folder with no rheo checkout. Green on the lossless rows; red when RHEO_VLLM_GEN switches on vLLM's
documented-lossy synthetic acceptance (the negative control).

Two releases: vLLM 0.33.0 (`.venv-vllm`, its V1 RejectionSampler) and vLLM 0.34.0 (`.venv-vllm034`, built on demand
by `make .venv-vllm034/.installed`; 0.34 removed the V1 sampler, and the same rows drive its V2 runner's
`rejection_sample`): on each, a fresh venv with the rheo wheel gates the vLLM current there with verdicts. The
released vLLM is not reinstalled: the venv reads the site-packages of rheo's `.venv-vllm` / `.venv-vllm034` (vLLM and
its pinned dependencies) through a .pth file, which is what `pip install vllm==0.33.0` (0.34.0) would give it,
without the 3 GB download. Slow (a wheel build, a pip install of scipy and pytest from the index, four gate rows:
minutes a release).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from helpers import env_marks

from rheo.decoders.device import DEVICE_VAR
from rheo.decoders.served import PYTHON_VAR, REPO, env_python

DROPIN = REPO / "docs" / "dropin" / "test_rheo_vllm_gate.py"


def test_the_dropins_case_is_the_vllm_tables_case_and_the_job_runs_the_file():
    """The drop-in carries its case inline (the wheel has no tests/): it must stay tests/cases/hf.json's tables and
    context, the case the vLLM verdicts in docs/THIRD_PARTY.md were measured on; the CI job runs that file."""
    import importlib.util

    from helpers import CASES

    from rheo_ref.models import load_case

    spec = importlib.util.spec_from_file_location("rheo_dropin", DROPIN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    ours = load_case(str(CASES / "hf.json"))
    assert (module.CASE.target.probs, module.CASE.draft.probs) == (ours.target.probs, ours.draft.probs)
    assert module.CASE.context == ours.context and module.CASE.tokens == 2
    assert f"tests/{DROPIN.name}" in (DROPIN.parent / "rheo-gate.yml").read_text()


def _run(cmd: list[str], cwd, env=None, timeout: int = 900) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)


RELEASES = [  # (skipped with the make command where the environment is not built)
    pytest.param("vllm", "0.33.0", marks=env_marks("vllm"), id="vllm-0.33.0"),
    pytest.param("vllm034", "0.34.0", marks=env_marks("vllm034"), id="vllm-0.34.0"),
]


@pytest.mark.slow
@pytest.mark.parametrize("env, version", RELEASES)
def test_the_dropin_is_green_on_vllm_and_red_on_its_lossy_synthetic_method(env, version, tmp_path):
    wheels = tmp_path / "wheels"
    r = _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels),
              str(REPO)], cwd=tmp_path)  # fmt: skip
    assert r.returncode == 0, r.stderr
    (wheel,) = wheels.glob("rheo-*.whl")
    served = env_python(env)
    site = _run([str(served), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=tmp_path)
    venv = tmp_path / "venv"
    assert _run([str(served), "-m", "venv", str(venv)], cwd=tmp_path).returncode == 0
    python = venv / "bin" / "python"
    purelib = _run([str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], cwd=tmp_path)
    (tmp_path / purelib.stdout.strip() / "released_vllm.pth").write_text(site.stdout.strip() + "\n")
    # the fresh venv sees nothing of this process's paths: with PYTHONPATH on a checkout (where the wheel build
    # leaves rheo.egg-info) pip would find rheo "already satisfied" and install nothing
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", PYTHON_VAR, DEVICE_VAR, "RHEO_VLLM_GEN")}
    r = _run([str(python), "-m", "pip", "install", "-q", str(wheel), "pytest"], cwd=tmp_path, env=env)
    assert r.returncode == 0, r.stderr
    project = tmp_path / "fork"
    (project / "tests").mkdir(parents=True)
    shutil.copy(DROPIN, project / "tests" / DROPIN.name)
    where = _run([str(python), "-c", "import rheo, vllm; print(rheo.__file__, vllm.__version__)"], cwd=project, env=env)
    assert str(venv) in where.stdout and str(REPO) not in where.stdout, where  # rheo from the wheel, not a checkout
    assert where.stdout.split()[-1] == version, where  # the release under test, importable in the fresh venv
    cmd = [str(python), "-m", "pytest", "-m", "lossless", "-p", "no:cacheprovider", "-q", f"tests/{DROPIN.name}"]
    green = _run(cmd, cwd=project, env=env)
    assert green.returncode == 0 and "2 passed" in green.stdout, green.stdout[-3000:] + green.stderr[-2000:]
    red = _run(cmd, cwd=project, env={**env, "RHEO_VLLM_GEN": '{"synthetic": "1,1,1"}'})
    assert red.returncode == 1 and "2 failed" in red.stdout, red.stdout[-3000:] + red.stderr[-2000:]
    assert red.stdout.count("LosslessError") >= 2, red.stdout[-3000:]  # failed by the gate, not by a crash
