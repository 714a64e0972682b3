"""Served samplers (vLLM, SGLang, ...) run in their own virtual environments, built by make.

Each package pins torch / transformers versions the main venv must not get, so it lives in
`.venv-<env>` at the repository root (`make .venv-<env>/.installed`, from `envs/<env>.txt`), and
its driver module runs there as a subprocess: `<env python> -m <module>` reads one JSON request on
stdin and writes one JSON reply on stdout; its stderr (progress, warnings) passes through.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections import deque
from pathlib import Path

from rheo_ref.errors import EnvironmentFailure, MissingDependencyError

ROOT = Path(__file__).resolve().parents[2]  # the repository root (holds rheo/, envs/, .venv-*/)
STDERR_LINES = 20  # how many of a failed driver's last stderr lines its error quotes


def env_python(env: str) -> Path:
    """The python of the served environment `env`: `<repo root>/.venv-<env>/bin/python`."""
    return ROOT / f".venv-{env}" / "bin" / "python"


def env_missing_reason(env: str) -> str | None:
    """None when the environment is built and usable; else why not and the command that builds it."""
    if not (ROOT / "envs" / f"{env}.txt").is_file():
        return f"no served environment {env!r}: envs/{env}.txt does not exist"
    py, stamp = env_python(env), ROOT / f".venv-{env}" / ".installed"
    if not py.exists() or not stamp.exists():
        return f"the {env} environment is not built ({stamp} missing): run `make .venv-{env}/.installed`"
    return None


def run_driver(env: str, module: str, request: dict, *, timeout: float) -> dict:
    """Run `<env python> -m module` with `request` as JSON on stdin; return its one JSON reply.

    stderr passes through (live, for progress) and its last lines are kept for the error; a
    non-zero exit, a timeout or a reply that is not one JSON object is an `EnvironmentFailure`."""
    reason = env_missing_reason(env)
    if reason:
        raise MissingDependencyError(reason)
    envvars = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    proc = subprocess.Popen(
        [str(env_python(env)), "-m", module],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
        env=envvars,
        text=True,
    )
    tail: deque[str] = deque(maxlen=STDERR_LINES)

    def pump() -> None:
        assert proc.stderr is not None
        for line in proc.stderr:
            tail.append(line.rstrip("\n"))
            sys.stderr.write(line)

    t = threading.Thread(target=pump, daemon=True)
    t.start()
    try:
        out, _ = proc.communicate(json.dumps(request), timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        raise EnvironmentFailure(f"{env}: `python -m {module}` ran past its timeout of {timeout:g} s") from None
    t.join(timeout=5)
    if proc.returncode != 0:
        last = "\n".join(tail)
        raise EnvironmentFailure(
            f"{env}: `python -m {module}` exited with status {proc.returncode}; its stderr ends:\n{last}"
        )
    lines = [ln for ln in out.splitlines() if ln.strip()]
    try:
        reply = json.loads(lines[-1]) if lines else None
    except json.JSONDecodeError:
        reply = None
    if not isinstance(reply, dict):
        raise EnvironmentFailure(f"{env}: `python -m {module}` wrote no JSON object on stdout (got {out[-200:]!r})")
    return reply
