"""Served decoders: third-party packages that each live in their own environment (docs/THIRD_PARTY.md).

Each package under test (SGLang, vLLM, eagle-harness, flashspec) pins its own torch, triton and
transformers, so it gets its own virtual environment `.venv-<env>` at the repository root, built by
`make .venv-<env>/.installed` from the pinned list `envs/<env>.txt` (installed with --no-deps, every
dependency listed). rheo never imports such a package: a driver module runs inside the environment
(`<env python> -m <module>`), reads one JSON request on stdin and writes one JSON reply on stdout;
its stderr passes through (progress). The repository root is on the driver's PYTHONPATH, so a
driver may use the pure-Python reference (`rheo_ref`) and `rheo_fast.table_lm`.

`Served` is the one base of these decoders: a folder says where its driver runs and gets its
`rheo.decoders.Decoder` from `Served(...).decoder(...)`; `rheo gate --decoder NAME` then gates it like any
other decoder, its exact TV beside the verdict.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rheo_ref.errors import CaseError, EnvironmentFailure, MissingDependencyError
from rheo_ref.laws import Law
from rheo_ref.models import Case

REPO = Path(__file__).resolve().parents[2]
STDERR_TAIL = 15  # lines of the driver's stderr quoted in an error


class DriverError(EnvironmentFailure):
    """A driver in a served environment exited non-zero, timed out or wrote no JSON reply."""


def env_python(env: str) -> Path:
    """The python of the served environment `env`: `<repo>/.venv-<env>/bin/python`."""
    if not env or "/" in env or env.startswith("."):
        raise MissingDependencyError(f"environment name {env!r}; allowed: a plain name such as 'sglang'")
    return REPO / f".venv-{env}" / "bin" / "python"


def env_missing_reason(env: str) -> str | None:
    """None when `.venv-<env>` is built; else why not, and the make command that builds it."""
    if not (REPO / "envs" / f"{env}.txt").is_file():
        return f"no served environment {env!r}: envs/{env}.txt does not exist"
    stamp = REPO / f".venv-{env}" / ".installed"
    if not env_python(env).exists() or not stamp.exists():
        return f"the {env} environment is not built ({stamp} missing): run `make .venv-{env}/.installed`"
    return None


def run_driver(env: str, module: str, request: dict, *, timeout: float) -> dict:
    """Run `<env python> -m <module>` with `request` as JSON on stdin; return its JSON reply.

    The driver's stderr is shown as it comes (progress bars) and its last lines are kept for the
    error a non-zero exit raises (DriverError, naming the environment and the module)."""
    reason = env_missing_reason(env)
    if reason is not None:
        raise MissingDependencyError(reason)
    if not timeout > 0:
        raise DriverError(f"timeout={timeout!r} must be a positive number of seconds")
    envvars = dict(os.environ)
    envvars["PYTHONPATH"] = os.pathsep.join([str(REPO), *filter(None, [envvars.get("PYTHONPATH")])])
    proc = subprocess.Popen(
        [str(env_python(env)), "-m", module],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        env=envvars,
    )
    tail: deque[str] = deque(maxlen=STDERR_TAIL)

    def pump() -> None:  # stderr: shown as it comes, its last lines kept
        assert proc.stderr is not None
        for line in proc.stderr:
            tail.append(line.rstrip("\n"))
            sys.stderr.write(line)

    killed: list[bool] = []

    def kill() -> None:
        killed.append(True)
        proc.kill()

    reader = threading.Thread(target=pump, daemon=True)
    reader.start()
    timer = threading.Timer(timeout, kill)
    timer.start()
    try:
        assert proc.stdin is not None and proc.stdout is not None
        with contextlib.suppress(BrokenPipeError):  # a driver that dies before reading its request
            proc.stdin.write(json.dumps(request, allow_nan=False))
            proc.stdin.close()
        out = proc.stdout.read()
        proc.wait()
    finally:
        timer.cancel()
    reader.join(5)
    proc.stdout.close()
    if proc.stderr is not None:
        proc.stderr.close()
    if killed:
        raise DriverError(
            f"{module} in .venv-{env} ran past its timeout of {timeout:g} s; last stderr:\n" + "\n".join(tail)
        )
    if proc.returncode != 0:
        raise DriverError(
            f"{module} in .venv-{env} exited with status {proc.returncode}; last stderr:\n" + "\n".join(tail)
        )
    try:
        reply: Any = json.loads(out)
    except json.JSONDecodeError:
        raise DriverError(f"{module} in .venv-{env} wrote no JSON reply; stdout began {out[:200]!r}") from None
    if not isinstance(reply, dict):
        raise DriverError(f"{module} in .venv-{env} replied {type(reply).__name__}, not a JSON object")
    return reply


def table_request(case: Case, context: list[int], n: int, seed: int, num_samples: int, gen: dict) -> dict:
    """The request most drivers read: the tables as JSON, the context, n, N, the seed and the settings."""
    obj = case.to_json()
    return {
        "target": obj["target"],
        "draft": obj["draft"],
        "context": list(context),
        "tokens": n,
        "num_samples": num_samples,
        "seed": seed,
        "gen": dict(gen),
    }


def first_samples(reply: dict) -> list:
    """The samples of a reply: `samples` (num_samples lists of n tokens)."""
    return list(reply["samples"])


SettingsLaw = Callable[[Case, Any, int], Law]  # (case, the --gen settings, n)


@dataclass(frozen=True)
class Served:
    """How a served decoder runs: its environment, its driver module, the request the driver reads and
    where the samples are in its reply. `decoder(...)` makes the registry entry (`rheo.decoders.Decoder`)
    whose `decode` runs the driver, whose exact and claimed laws are the folder's `(case, gen, n)`
    functions, and whose absent environment `rheo gate` names with the make command that builds it."""

    env: str
    module: str
    request: Callable[[Case, list[int], int, int, int, dict], dict] = table_request
    samples: Callable[[dict], list] = first_samples
    seconds_per_sample: float = 2.0  # the driver's timeout: 60 s + this per sample and token
    check: Callable[[dict], Any] | None = None  # parses the --gen values (raising CaseError, ValueError)

    def decode(self, case: Case, context: list[int], n: int, seed: int, num_samples: int, run: Any) -> list:
        req = self.request(case, context, n, seed, num_samples, run.options())
        reply = run_driver(self.env, self.module, req, timeout=60 + self.seconds_per_sample * num_samples * n)
        return [tuple(s) for s in self.samples(reply)]

    def decoder(
        self, *, exact_law: SettingsLaw, target_law: Callable[[Case, Any, int], Law | None], **fields: Any
    ) -> Any:
        from . import Decoder

        def check(run: Any) -> None:
            if self.check is not None:
                try:
                    self.check(dict(run.gen))
                except (ValueError, TypeError, ArithmeticError) as e:
                    raise CaseError(f"decoder {run.name}: --gen {dict(run.gen)}: {e}; see rheo gate --help") from None

        return Decoder(
            decode=self.decode,
            exact_law=lambda case, n, run: exact_law(case, dict(run.gen), n),
            target_law=lambda case, n, run: target_law(case, dict(run.gen), n),
            check=check,
            env=self.env,
            requires=(),
            install=f"make .venv-{self.env}/.installed",
            min_context=0,
            **fields,
        )
