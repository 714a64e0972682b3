"""Served decoders: third-party packages (SGLang, vLLM, eagle-harness, flashspec) judged where they live
(docs/THIRD_PARTY.md).

rheo never imports such a package: a driver module runs in an interpreter where the package is installed
(`<python> -m <module>`), reads one JSON request on stdin and writes one JSON reply on stdout; its stderr
passes through (progress). The interpreter is, in this order (`served_python`):
- `--python PATH` of `rheo gate` (the environment variable `RHEO_SERVED_PYTHON`, which sampling workers
  inherit): the package in another environment;
- this interpreter, when the package is importable here (`pip install rheo vllm`: the installed package is
  the one judged);
- rheo's own environment `.venv-<env>` of a checkout, built by `make .venv-<env>/.installed` from the pinned
  list `envs/<env>.txt` (rheo's CI: each package pins its own torch, triton and transformers).
None of them: `PackageUnavailable` (exit 2), one line naming the package and the install line. The driver
sees rheo's three packages (`rheo`, `rheo_ref`, `rheo_fast`) through a folder of links on its PYTHONPATH,
never the site-packages they are installed in, so a driver may use the pure-Python reference.

Releases: each adapter states the releases it supports (`Served.supported`, e.g. `>=0.33.0,<0.35`), the
version is read from the interpreter that runs the driver (`installed_version`, importlib.metadata there)
and goes into every record; a release outside the range is driven with a warning; a driver that finds a
piece it drives moved or renamed exits with status `MOVED` and one JSON line `{"missing": ...}`, which
becomes `PackageUnavailable` naming the piece, the installed version and the supported range.

Devices: `rheo gate --device cpu|cuda` reaches the driver as `RHEO_SERVED_DEVICE` (`rheo.decoders.device`, read
before triton is imported); a driver that finds no CUDA device exits with status `NO_DEVICE` and one JSON line
`{"no_device": ...}`, which becomes `DeviceUnavailable` (exit 2, one line); `ran_on` checks each reply's `path`
against the device asked for.

`Served` is the one base of these decoders: a folder says where its driver runs and gets its
`rheo.decoders.Decoder` from `Served(...).decoder(...)`; `rheo gate --decoder NAME` then gates it like any
other decoder, its exact TV beside the verdict.
"""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rheo_ref.errors import (
    CaseError,
    DeviceUnavailable,
    EnvironmentFailure,
    MissingDependencyError,
    PackageUnavailable,
)
from rheo_ref.laws import Law
from rheo_ref.models import Case

from .device import DEVICE_VAR, DEVICES, NO_DEVICE

REPO = Path(__file__).resolve().parents[2]
STDERR_TAIL = 15  # lines of the driver's stderr quoted in an error
PYTHON_VAR = "RHEO_SERVED_PYTHON"  # `rheo gate --python PATH`: the interpreter the drivers run in
MOVED = 3  # a driver's exit status when the installed release moved a piece it drives (its stdout: {"missing": ...})


class DriverError(EnvironmentFailure):
    """A driver in a served environment exited non-zero, timed out or wrote no JSON reply."""


def device() -> str:
    """The device the served drivers run on (`rheo gate --device`, passed as RHEO_SERVED_DEVICE): cpu or cuda."""
    value = os.environ.get(DEVICE_VAR) or "cpu"
    if value not in DEVICES:
        raise CaseError(f"--device {value!r}; allowed: {', '.join(DEVICES)}")
    return value


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


def _release(version: str) -> tuple[int, ...]:
    """The leading release numbers of a version (`0.34.0rc1` -> (0, 34, 0)), for a range test."""
    m = re.match(r"\d+(\.\d+)*", version)
    return tuple(int(x) for x in m.group(0).split(".")) if m else ()


def in_range(version: str, supported: str) -> bool:
    """Whether `version` lies in `supported`: comma-separated `>=A`, `>A`, `<B`, `<=B`, `==C` on release numbers."""
    ops = {">=": lambda a, b: a >= b, "<=": lambda a, b: a <= b, ">": lambda a, b: a > b, "<": lambda a, b: a < b,
           "==": lambda a, b: a == b}  # fmt: skip
    v = _release(version)
    for part in filter(None, (x.strip() for x in supported.split(","))):
        op = next((o for o in (">=", "<=", "==", ">", "<") if part.startswith(o)), None)
        if op is None:
            raise CaseError(f"release range {supported!r}: {part!r}; allowed: >=A, >A, <B, <=B, ==C, comma-separated")
        b = _release(part[len(op) :])
        width = max(len(v), len(b))
        if not ops[op](v + (0,) * (width - len(v)), b + (0,) * (width - len(b))):
            return False
    return True


def _current_python() -> Path:
    return Path(sys.executable)


def served_python(env: str, module: str, package: str, install: str) -> Path:
    """The interpreter a served decoder's driver runs in (see the module's docstring), or PackageUnavailable:
    `--python PATH` (RHEO_SERVED_PYTHON), else this interpreter where `module` is importable, else rheo's own
    `.venv-<env>` of a checkout."""
    given = os.environ.get(PYTHON_VAR)
    if given:
        path = Path(given)
        if not (path.is_file() and os.access(path, os.X_OK)):
            raise PackageUnavailable(f"--python {given!r} is not an executable file; allowed: the python of an "
                                     f"environment where {package} is installed")  # fmt: skip
        return path
    if importlib.util.find_spec(module) is not None:
        return _current_python()
    if env_missing_reason(env) is None:
        return env_python(env)
    raise PackageUnavailable(
        f"{package} is not installed in this environment ({sys.executable}): {install}, or give --python PATH of "
        "an environment where it is"
    )


@functools.lru_cache(maxsize=32)
def _version_in(python: str, package: str) -> str | None:
    if Path(python) == _current_python():
        import importlib.metadata as md

        try:
            return md.version(package)
        except md.PackageNotFoundError:
            return None
    code = (
        "import importlib.metadata as m, sys\ntry: print(m.version(sys.argv[1]))\nexcept m.PackageNotFoundError: pass"
    )
    out = subprocess.run([python, "-c", code, package], capture_output=True, text=True, timeout=60)
    return out.stdout.strip() or None


def installed_version(python: Path, package: str) -> str | None:
    """The version of `package` installed where `python` runs (importlib.metadata there; None: not installed)."""
    return _version_in(str(python), package)


_LINKS: list[str] = []


def _rheo_path() -> str:
    """A folder holding links to rheo's three packages only: the driver's PYTHONPATH (never the site-packages
    rheo is installed in, whose torch and numpy would shadow the served environment's)."""
    if not _LINKS:
        folder = tempfile.mkdtemp(prefix="rheo-driver-path-")
        atexit.register(shutil.rmtree, folder, True)
        for name in ("rheo", "rheo_ref", "rheo_fast"):
            src = REPO / name
            if src.is_dir():
                os.symlink(src, Path(folder) / name)
        _LINKS.append(folder)
    return _LINKS[0]


def run_driver(
    env: str,
    module: str,
    request: dict,
    *,
    timeout: float,
    package: str | None = None,
    supported: str = "",
    install: str = "",
    imports: str | None = None,
) -> dict:
    """Run `<python> -m <module>` with `request` as JSON on stdin (the interpreter: `served_python`); return its
    JSON reply, with `version` (the installed release of `package`) added.

    The driver's stderr is shown as it comes (progress bars) and its last lines are kept for the
    error a non-zero exit raises (DriverError, naming the environment and the module); an exit with
    status MOVED raises PackageUnavailable naming the missing piece, the installed version and `supported`."""
    package = package or env
    python = served_python(env, imports or package.replace("-", "_"), package, install or f"pip install {package}")
    version = installed_version(python, package)
    where = f"{python}" if python != env_python(env) else f".venv-{env}"
    if not timeout > 0:
        raise DriverError(f"timeout={timeout!r} must be a positive number of seconds")
    envvars = dict(os.environ)
    envvars["PYTHONPATH"] = os.pathsep.join([_rheo_path(), *filter(None, [envvars.get("PYTHONPATH")])])
    proc = subprocess.Popen(
        [str(python), "-m", module],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
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
    if proc.returncode == NO_DEVICE:
        try:
            reason = json.loads(out)["no_device"]
        except (json.JSONDecodeError, KeyError, TypeError):
            reason = out.strip()[:300]
        raise DeviceUnavailable(f"{package} {version}: {reason}")
    if proc.returncode == MOVED:
        try:
            missing = json.loads(out)["missing"]
        except (json.JSONDecodeError, KeyError, TypeError):
            missing = out.strip()[:300]
        raise PackageUnavailable(
            f"{package} {version}: {missing}; this adapter supports {package} {supported or 'as pinned in envs/'}"
        )
    if killed:
        raise DriverError(
            f"{module} in {where} ran past its timeout of {timeout:g} s; last stderr:\n" + "\n".join(tail)
        )
    if proc.returncode != 0:
        raise DriverError(f"{module} in {where} exited with status {proc.returncode}; last stderr:\n" + "\n".join(tail))
    try:
        reply: Any = json.loads(out)
    except json.JSONDecodeError:
        raise DriverError(f"{module} in {where} wrote no JSON reply; stdout began {out[:200]!r}") from None
    if not isinstance(reply, dict):
        raise DriverError(f"{module} in {where} replied {type(reply).__name__}, not a JSON object")
    reply["version"] = version
    return reply


def ran_on(reply: dict, want: str, module: str) -> None:
    """Check that a driver ran where it was asked: its reply's `path` names the device (`rheo.decoders.device.path`),
    and on cuda its kernels were compiled, not run by Triton's interpreter (DriverError otherwise: a verdict on
    cuda is a verdict on the compiled kernels)."""
    where = reply.get("path")
    if not isinstance(where, dict) or where.get("device") != want:
        got = where.get("device") if isinstance(where, dict) else None
        raise DriverError(f"{module} ran on {got!r}, not on the device asked for ({want}): its reply's path is "
                          f"{where!r}")  # fmt: skip
    if want == "cuda" and where.get("interpreter"):
        raise DriverError(f"{module} ran its Triton kernels in the interpreter on cuda (TRITON_INTERPRET=1 in the "
                          "environment): unset it to judge the compiled kernels")  # fmt: skip


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
    package: str = ""  # the distribution under test (default: env)
    imports: str = ""  # its top-level module (default: the package's name with _ for -)
    supported: str = ""  # the releases the driver supports, e.g. ">=0.33.0,<0.35"
    pin: str = ""  # the release rheo's own environment pins (envs/<env>.txt), for the install line

    @property
    def dist(self) -> str:
        return self.package or self.env

    @property
    def install(self) -> str:
        return f"pip install {self.dist}{'==' + self.pin if self.pin else ''}"

    def python(self) -> Path:
        """The interpreter the driver runs in (`served_python`; PackageUnavailable where there is none)."""
        return served_python(self.env, self.imports or self.dist.replace("-", "_"), self.dist, self.install)

    def version(self) -> str | None:
        """The installed release of the package where the driver runs (None: not installed anywhere here)."""
        try:
            return installed_version(self.python(), self.dist)
        except PackageUnavailable:
            return None

    def run(self, request: dict, *, timeout: float) -> dict:
        """`run_driver` for this adapter: its package, supported releases and install line."""
        return run_driver(self.env, self.module, request, timeout=timeout, package=self.dist,
                          supported=self.supported, install=self.install, imports=self.imports or None)  # fmt: skip

    def decode(self, case: Case, context: list[int], n: int, seed: int, num_samples: int, run: Any) -> list:
        req = self.request(case, context, n, seed, num_samples, run.options())
        reply = self.run(req, timeout=60 + self.seconds_per_sample * num_samples * n)
        ran_on(reply, device(), self.module)
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
            install=self.install,
            min_context=0,
            served=self,
            **{"package": self.dist, **fields},
        )
