"""`python -m rheo.decoders.cuda_rows [--dry-run] [--seeds 1,2] [--only ENV:SETTING ...] [--python ENV=PATH ...]
[--json OUT]`: the served samplers' rows whose kernels only run compiled, on a CUDA device, through the same
drivers as `rheo gate --decoder NAME --rows ... --device cuda` (docs/THIRD_PARTY.md, "On the decoder's GPU").

The script a maintainer runs on a lent CUDA machine. Each row is gated on every seed by `rheo.decoders.rows.run_row`
(the same planning, exact laws and verdicts as the CPU table), its driver run with `RHEO_SERVED_DEVICE=cuda` in the
row's environment (rheo's `.venv-ENV` of this checkout, or `--python ENV=PATH`). It prints the verdict table (the
CPU table's markdown rows) and one JSON record a row (with `"device": "cuda"`, checked against every driver's reply:
a driver that ran elsewhere, or whose kernels ran in Triton's interpreter, fails its row); exit 0 when every
verdict is the one its exact TV promises, 1 otherwise.

`--dry-run` is its CPU half: it resolves every row (its setting, case, tokens, α, δ, β), its exact law's TV to the
law it claims, the verdict that TV promises and the N each seed will draw, checks each environment (its python,
the installed release and whether the adapter supports it; which of the CUDA-only pieces below are installed
there), prints that plan and stops before any driver starts: exit 0 when every environment is ready, 2 when one is
missing (its line names the make command). Without `--dry-run`, on a machine whose environments show no CUDA
device, the first row's driver finds it and the script exits 2 with one line.

What is driven (`ROWS`), and why each needs CUDA:
- vLLM 0.33.0 (`.venv-vllm`): `processed-triton`, vLLM's Triton top-k / top-p kernel (`topk_topp_triton.py`,
  `--gen topk_topp=triton`), which on CPU first asks `num_compute_units()` of a platform that has none and whose
  kernel triton 3.9.0's interpreter does not run; the V2 runner's rejection kernels compiled: `block-one-hot`,
  `block-draft-probs` (`_resample_kernel` with CUDA's own libdevice `log1p`, where the CPU row uses the driver's
  interpreter-side one) and `fly` (a documented-lossy negative control: must be rejected).
- vLLM 0.34.0 (`.venv-vllm034`): its V2 `rejection_sample`, compiled: `draft-probs`, `block-draft-probs`, and the
  `synthetic` negative control.
- SGLang 0.5.23 (`.venv-sglang`): `chain_speculative_sampling_triton` compiled (`token T=1`, the control), and the
  rows that cannot run on CPU at all: `top-k 2`, `top-p 0.7`, `top-k 3 + top-p 0.7`, whose `renorm_triton` kernels
  refuse a CPU tensor (`renorm_triton.py` lines 57-58). The driver calls `renorm_triton`'s functions, which SGLang
  binds on ROCm; on CUDA SGLang's engine binds FlashInfer's `top_k_renorm_probs` / `top_p_renorm_probs` instead.

What is not driven (`NOT_DRIVEN`; the dry run says which of their packages the environment has):
- SGLang's `tree_speculative_sampling_target_only` (the CUDA verify SGLang uses when rejection sampling is off):
  in 0.5.23 a CUDA source JIT-compiled at first call (`sglang/kernels/ops/speculative/sampling.py`, `load_jit` with
  tvm-ffi, nvcc and FlashInfer's headers); `.venv-sglang` pins neither tvm-ffi nor flashinfer, rheo's SGLang driver
  does not call it, and `rheo/decoders/sglang/law.py` has no law for its target-only rule (draft probabilities
  handed as zeros).
- FlashInfer's `chain_speculative_sampling`: flashinfer is not in `.venv-sglang` and no rheo driver calls it.
- eagle-harness's Triton tree walk (`kernels/sampled_tree.py`, `_walk`): with cuda the driver launches it once, but
  rheo has no harness that decodes through the full tree walk (the driver ends the row after the launch), so no
  verdict; its CPU rows are pure torch (`draw_children`, `reject_children`) and gain nothing from CUDA.
- flashspec runs no kernel of its own (transformers models in PyTorch): `--device cuda` drives it on the GPU, but it
  has no CUDA-only row.

Nothing of this script ran on CUDA where it was written (no device was lent): its CPU half is tested
(tests/decoders/test_cuda_rows.py).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rheo_ref.errors import CaseError, RheoError

from . import DecoderRun, decoders
from .device import DEVICE_VAR
from .rows import MARKDOWN_HEAD, Row, expected, markdown_row, run_row
from .served import PYTHON_VAR, env_missing_reason, env_python, in_range, installed_version


@dataclass(frozen=True)
class CudaRow:
    """One row of the script: a row of the decoder's table (or of `EXTRA`), the environment that runs it, and why
    it needs CUDA."""

    decoder: str
    env: str
    setting: str
    why: str

    @property
    def key(self) -> str:
        return f"{self.env}:{self.setting}"


# A row the decoder's CPU table does not hold (it cannot run in the interpreter at all): vLLM's `processed` setting
# with its Triton top-k / top-p kernel instead of the PyTorch path (the same law: `topk_topp` is no setting of it).
EXTRA = {
    ("vllm", "processed-triton"): Row(
        "processed-triton",
        {"k": 3, "temperature": 0.5, "top_k": 3, "top_p": 0.9, "topk_topp": "triton"},
        "T = 1/2, top-k 3, top-p 0.9 through vLLM's Triton top-k/top-p kernel (topk_topp_triton.py), at the verified "
        "positions and the bonus",
    )
}
TOPK_TRITON = (
    "vllm/v1/sample/ops/topk_topp_triton.py: on CPU num_compute_units() is not implemented for the platform "
    "(vllm/platforms/interface.py line 1438) and triton 3.9.0's interpreter does not run _topk_topp_kernel"
)
V2 = "the V2 runner's rejection kernels (rejection_sampler_utils.py), compiled"
RENORM = "renorm_triton.py lines 57-58: the renorm kernels refuse a CPU tensor (ValueError)"
ROWS = (
    CudaRow("vllm", "vllm", "processed-triton", TOPK_TRITON),
    CudaRow("vllm", "vllm", "block-one-hot", V2),
    CudaRow("vllm", "vllm", "block-draft-probs", V2 + ", with CUDA's libdevice log1p (CPU: the driver's own)"),
    CudaRow("vllm", "vllm", "fly", V2 + ": FLy, the negative control"),
    CudaRow("vllm", "vllm034", "draft-probs", "0.34.0's only sampler, the V2 rejection_sample, compiled"),
    CudaRow("vllm", "vllm034", "block-draft-probs", V2 + ", with CUDA's libdevice log1p"),
    CudaRow("vllm", "vllm034", "synthetic", V2 + ": synthetic acceptance, the negative control"),
    CudaRow("sglang", "sglang", "token T=1", "chain_speculative_sampling_triton, compiled"),
    CudaRow("sglang", "sglang", "top-k 2", RENORM),
    CudaRow("sglang", "sglang", "top-p 0.7", RENORM),
    CudaRow("sglang", "sglang", "top-k 3 + top-p 0.7", RENORM),
    CudaRow("sglang", "sglang", "control: draft probs at T=1, drawn at T=1/4", "the compiled chain kernel's control"),
)
# (environment, the piece, the modules it needs there, why no row drives it)
NOT_DRIVEN = (
    ("sglang", "tree_speculative_sampling_target_only (sglang/kernels/ops/speculative/sampling.py)",
     ("tvm_ffi", "flashinfer"), "a CUDA source JIT-compiled at first call (tvm-ffi, nvcc, FlashInfer's headers); "
     "rheo's SGLang driver does not call it and has no law for its target-only rule"),
    ("sglang", "FlashInfer's chain_speculative_sampling", ("flashinfer",),
     "flashinfer is not pinned in envs/sglang.txt; no rheo driver calls it"),
    ("eagle-harness", "eagle-harness's Triton tree walk (kernels/sampled_tree.py, _walk)", (),
     "the driver launches it once on cuda, but no harness decodes through the full walk: no verdict"),
)  # fmt: skip


def parse_seeds(text: str | None) -> tuple[int, ...]:
    """`1,2` -> (1, 2) (None: 1,2): at most 100 integers in [0, 2^63), as `rheo gate --seeds` takes them."""
    if text is None:
        return (1, 2)
    items = text.split(",")
    if not 0 < len(items) <= 100 or not all(s.isascii() and s.isdigit() and int(s) < 2**63 for s in items):
        raise CaseError(f"--seeds {text!r}; allowed: at most 100 comma-separated integers in [0, 2^63), e.g. 1,2")
    return tuple(int(s) for s in items)


def select(only: list[str] | None) -> list[CudaRow]:
    """The rows named by `--only ENV:SETTING` (repeatable), in the script's order; all of them without."""
    if not only:
        return list(ROWS)
    known = {r.key: r for r in ROWS}
    bad = [k for k in only if k not in known]
    if bad:
        raise CaseError(f"--only {bad[0]!r}; allowed: {', '.join(known)}")
    return [r for r in ROWS if r.key in set(only)]


def pythons(items: list[str] | None) -> dict[str, Path]:
    """`--python ENV=PATH` (repeatable): the interpreter of an environment instead of rheo's `.venv-ENV`."""
    out: dict[str, Path] = {}
    envs = sorted({r.env for r in ROWS} | {e for e, *_ in NOT_DRIVEN})
    for item in items or []:
        env, sep, path = item.partition("=")
        if not sep or env not in envs or not path:
            raise CaseError(f"--python {item!r}; allowed: ENV=PATH with ENV one of {', '.join(envs)}")
        out[env] = Path(path).absolute()
    return out


def environment(env: str, package: str, supported: str, given: dict[str, Path]) -> dict[str, Any]:
    """Where an environment's rows run: its python, the installed release, whether the adapter supports it; or
    why it is missing (`ready` False)."""
    python = given.get(env)
    if python is None:
        missing = env_missing_reason(env)
        if missing is not None:
            return {"env": env, "ready": False, "python": None, "version": None, "why": missing}
        python = env_python(env)
    if not (python.is_file() and os.access(python, os.X_OK)):
        return {"env": env, "ready": False, "python": str(python), "version": None,
                "why": f"--python {env}={python} is not an executable file"}  # fmt: skip
    version = installed_version(python, package)
    if version is None:
        return {"env": env, "ready": False, "python": str(python), "version": None,
                "why": f"{package} is not installed in {python}"}  # fmt: skip
    ok = in_range(version, supported) if supported else True
    return {"env": env, "ready": True, "python": str(python), "version": version,
            "why": "" if ok else f"{package} {version} is outside the adapter's releases {supported}"}  # fmt: skip


def has_modules(python: str, modules: tuple[str, ...]) -> dict[str, bool]:
    """Which of `modules` the interpreter can import (importlib.util.find_spec there: nothing is imported)."""
    if not modules:
        return {}
    code = "import importlib.util as u, sys\nprint(' '.join(str(u.find_spec(m) is not None) for m in sys.argv[1:]))"
    out = subprocess.run([python, "-c", code, *modules], capture_output=True, text=True, timeout=120)
    found = out.stdout.split()
    return {m: found[i] == "True" if i < len(found) else False for i, m in enumerate(modules)}


def plan(row: CudaRow) -> dict[str, Any]:
    """A row resolved as `run_row` gates it: its setting, case, tokens, α, δ, β, the exact TV of its own law to
    the law it claims, the verdict that TV promises and N a seed (computed here, on the CPU)."""
    from rheo.decoders.gate import exact_tv_of
    from rheo.lossless.planning import plan_samples
    from rheo.lossless.stats import samples_for
    from rheo_ref.models import load_case

    from .rows import REPO

    entry = decoders()[row.decoder]
    assert entry.table is not None
    base = EXTRA.get((row.decoder, row.setting)) or entry.table.row(row.setting)
    r = entry.table.resolved(base)
    assert r.case is not None and r.tv is not None and r.alpha is not None and r.tokens is not None
    run = DecoderRun.parse(row.decoder if r.arg is None else f"{row.decoder}:{r.arg}", dict(r.gen))
    case = load_case(str(REPO / r.case))
    n, beta = r.tokens, entry.table.beta
    etv = exact_tv_of(run, case, n)
    claimed = entry.target_law(case, n, run)
    if claimed is None:
        N = plan_samples(run.target_case(case, n), alpha=r.alpha, tv=r.tv, beta=beta)
    else:
        N = samples_for(claimed, r.tv, r.alpha, beta)
    return {
        "env": row.env, "decoder": row.decoder, "setting": row.setting, "gen": dict(r.gen), "case": r.case,
        "tokens": n, "alpha": r.alpha, "tv": r.tv, "beta": beta, "control": r.control,
        "exact_tv": None if etv is None else str(etv), "exact_tv_float": None if etv is None else float(etv),
        "expected": expected(etv, r.tv, r.control), "N": N, "why_cuda": row.why,
    }  # fmt: skip


def gate(row: CudaRow, python: str, seeds: tuple[int, ...]) -> dict[str, Any]:
    """The row on every seed, its driver on cuda in `python` (a `run_row` record, with the environment)."""
    entry = decoders()[row.decoder]
    assert entry.table is not None
    base = EXTRA.get((row.decoder, row.setting)) or entry.table.row(row.setting)
    os.environ[PYTHON_VAR], os.environ[DEVICE_VAR] = python, "cuda"
    return {"env": row.env, "python": python, **run_row(entry, base, entry.table, seeds=seeds)}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m rheo.decoders.cuda_rows",
        description="Gate the served samplers' CUDA-only rows on a CUDA device (the drivers with --device cuda); "
        "--dry-run: resolve every row, its exact law and N, check the environments, and stop before the device.",
        epilog="rows (ENV:SETTING): " + "; ".join(r.key for r in ROWS),
    )
    ap.add_argument("--dry-run", action="store_true", help="the plan only: nothing runs on the device")
    ap.add_argument("--seeds", default=None, help="comma-separated seeds (default 1,2)")
    ap.add_argument("--only", action="append", metavar="ENV:SETTING", help="run this row only (repeatable)")
    ap.add_argument("--python", action="append", metavar="ENV=PATH", help="the python of ENV (default .venv-ENV)")
    ap.add_argument("--json", default=None, metavar="OUT", help="write the plan (--dry-run) or the records")
    args = ap.parse_args(argv)
    try:
        return _main(args)
    except RheoError as e:
        print(f"cuda_rows: error: {str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__}",
              file=sys.stderr)  # fmt: skip
        return e.exit_status


def _main(args: argparse.Namespace) -> int:
    from rheo_ref import strict_json
    from rheo_ref.atomic import check_writable, write_text_atomic

    seeds = parse_seeds(args.seeds)
    rows = select(args.only)
    given = pythons(args.python)
    if args.json is not None:
        check_writable(args.json)
    packages = {r.env: decoders()[r.decoder].served for r in ROWS}
    envs: dict[str, dict[str, Any]] = {}
    for env in dict.fromkeys(r.env for r in rows):
        served = packages[env]
        assert served is not None
        envs[env] = environment(env, served.dist, served.supported, given)
    if args.dry_run:
        plans = [{**plan(r), "seeds": list(seeds), "environment": envs[r.env]} for r in rows]
        absent = _not_driven(given)
        _print_plan(plans, envs, absent)
        if args.json is not None:
            write_text_atomic(args.json, strict_json.dumps({"rows": plans, "environments": list(envs.values()),
                                                             "not_driven": absent}, indent=1) + "\n")  # fmt: skip
        return 0 if all(e["ready"] for e in envs.values()) else 2
    missing = [e for e in envs.values() if not e["ready"]]
    if missing:
        raise CaseError(f"environment {missing[0]['env']}: {missing[0]['why']}")
    records = [gate(r, envs[r.env]["python"], seeds) for r in rows]  # (no CUDA device: the first driver says so)
    print(MARKDOWN_HEAD.replace("| decoder |", "| env | decoder |", 1).replace("|---|", "|---|---|", 1))
    for rec in records:
        print(f"| {rec['env']} " + markdown_row(rec))
    good = sum(1 for rec in records if rec["as_expected"])
    print(
        f"\n{good} of {len(records)} rows as their exact TV promises (device cuda; seeds {','.join(map(str, seeds))})"
    )
    for rec in records:
        print(strict_json.dumps(rec))
    if args.json is not None:
        write_text_atomic(args.json, strict_json.dumps(records, indent=1) + "\n")
    return 0 if good == len(records) else 1


def _not_driven(given: dict[str, Path]) -> list[dict[str, Any]]:
    """The CUDA pieces no row drives, with whether their environment has what they need."""
    out = []
    for env, piece, modules, why in NOT_DRIVEN:
        python = given.get(env) or (env_python(env) if env_missing_reason(env) is None else None)
        found = has_modules(str(python), modules) if python is not None else {}
        out.append({"env": env, "piece": piece, "why": why, "installed": found, "env_ready": python is not None})
    return out


def _print_plan(plans: list[dict[str, Any]], envs: dict[str, dict[str, Any]], absent: list[dict[str, Any]]) -> None:
    print("| env | decoder | setting | exact TV | expected | N a seed | seeds | alpha | tv | why CUDA |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for p in plans:
        etv = (
            "—" if p["exact_tv_float"] is None else ("0" if p["exact_tv_float"] == 0 else f"{p['exact_tv_float']:.4g}")
        )
        print(f"| {p['env']} | {p['decoder']} | {p['setting']} | {etv} | {p['expected'] or 'either'} | {p['N']} | "
              f"{','.join(map(str, p['seeds']))} | {p['alpha']:g} | {p['tv']:g} | {p['why_cuda']} |")  # fmt: skip
    print()
    for e in envs.values():
        state = f"{e['version']} at {e['python']}" if e["ready"] else "missing"
        print(f"environment {e['env']}: {state}{'; ' + e['why'] if e['why'] else ''}")
    for a in absent:
        have = ", ".join(f"{m} {'installed' if ok else 'absent'}" for m, ok in a["installed"].items())
        print(f"not driven: {a['piece']} ({a['env']}): {a['why']}{' [' + have + ']' if have else ''}")
    print("dry run: nothing ran on a device")


if __name__ == "__main__":
    raise SystemExit(main())
