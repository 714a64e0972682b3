"""The gate on a served decoder: its own code in its own environment, against an exact law (docs/THIRD_PARTY.md).

A `ServedDecoder` names the package, the environment and driver module it runs in, the `--gen` keys it
reads, the exact law of its algorithm as written (`exact_law`) and the law its setting claims
(`target_law`), and its verdict table (`rows`: one `Row` per setting, the negative control among them).
`gate` runs the driver for N samples of the first n tokens from the case's context (N from α, δ and β as
`rheo.lossless.stats.samples_for` chooses it on the claimed law), tests them with `rheo.lossless.stats.check_law` and
reports the verdict beside the exact TV of the code as written.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from rheo_ref.errors import CaseError
from rheo_ref.exact import tv as total_variation
from rheo_ref.laws import Law
from rheo_ref.models import Case

from .served import env_missing_reason, run_driver

LawFn = Callable[[Case, Mapping[str, Any], int], Law]


@dataclass(frozen=True)
class Row:
    """One setting of a decoder's verdict table."""

    setting: str  # short name, e.g. "token T=1"
    gen: Mapping[str, Any]
    note: str = ""  # what the setting is
    cause: str = ""  # where a lossy row's error is in their code (file and line)
    runs_here: str = ""  # empty: it runs on CPU; else why not (error, file, line)
    control: bool = False  # the negative control: must be rejected
    tv: float | None = None  # the δ this row is gated at in the table (None: the table's)


@dataclass(frozen=True)
class ServedDecoder:
    name: str
    help: str
    package: str  # distribution name and pinned version, e.g. "sglang 0.5.23"
    path: str  # the code under test, e.g. "sglang/kernels/ops/speculative/reject_sampling.py"
    env: str  # .venv-<env>
    module: str  # the driver, run as `<env python> -m <module>`
    gen_keys: tuple[str, ...]
    exact_law: LawFn
    target_law: LawFn
    rows: tuple[Row, ...] = field(default=())

    def check_gen(self, gen: Mapping[str, Any]) -> None:
        bad = sorted(set(gen) - set(self.gen_keys))
        if bad:
            raise CaseError(f"--gen {', '.join(bad)} not read by {self.name}; allowed: {', '.join(self.gen_keys)}")

    def row(self, setting: str) -> Row:
        for r in self.rows:
            if r.setting == setting:
                return r
        raise CaseError(f"{self.name} has no setting {setting!r}; allowed: {', '.join(r.setting for r in self.rows)}")

    def sample(
        self, case: Case, gen: Mapping[str, Any], *, n: int, num_samples: int, seed: int, timeout: float
    ) -> dict[str, Any]:
        """The driver's reply: `samples` (num_samples lists of n tokens) and its own timings."""
        self.check_gen(gen)
        obj = case.to_json()
        request = {
            "target": obj["target"],
            "draft": obj["draft"],
            "context": list(case.context),
            "tokens": n,
            "num_samples": num_samples,
            "seed": seed,
            "gen": dict(gen),
        }
        return run_driver(self.env, self.module, request, timeout=timeout)


def exact_tv(decoder: ServedDecoder, case: Case, gen: Mapping[str, Any], n: int) -> Any:
    """(exact TV of the code as written to the claimed law, the claimed law, seconds of exact work)."""
    t0 = time.perf_counter()
    claimed = decoder.target_law(case, gen, n)
    law = decoder.exact_law(case, gen, n)
    return total_variation(law, claimed), claimed, time.perf_counter() - t0


def gate(
    decoder: ServedDecoder,
    case: Case,
    gen: Mapping[str, Any],
    *,
    n: int,
    alpha: float,
    tv: float,
    beta: float,
    seed: int,
    timeout: float = 3600.0,
    num_samples: int | None = None,
) -> dict[str, Any]:
    """Run `decoder` with `gen` and test its first n tokens against the law its setting claims."""
    from ..lossless.stats import check_law, samples_for

    reason = env_missing_reason(decoder.env)
    if reason is not None:
        raise CaseError(reason)
    etv, claimed, exact_s = exact_tv(decoder, case, gen, n)
    N = samples_for(claimed, tv, alpha, beta) if num_samples is None else num_samples
    t0 = time.perf_counter()
    reply = decoder.sample(case, gen, n=n, num_samples=N, seed=seed, timeout=timeout)
    wall = time.perf_counter() - t0
    res = check_law([tuple(s) for s in reply["samples"]], claimed, alpha=alpha, tv=tv, beta=beta)
    return {
        "decoder": decoder.name,
        "package": decoder.package,
        "path": decoder.path,
        "gen": dict(gen),
        "tokens": n,
        "verdict": "REJECT" if res.rejected else "pass",
        "N": res.n,
        "alpha": alpha,
        "beta": beta,
        "tv": tv,
        "detectable_tv": res.detectable_tv,
        "p_value": res.p_value,
        "cells": res.cells,
        "exact_tv": str(etv),
        "exact_tv_float": float(etv),
        "seed": seed,
        "seconds_sampling": round(float(reply.get("seconds", wall)), 3),
        "seconds_wall": round(wall, 3),
        "seconds_exact": round(exact_s, 3),
        "ms_per_sample": round(1000 * float(reply.get("seconds", wall)) / max(res.n, 1), 3),
        "summary": res.summary(),
    }


SERVED_DECODERS = ("rheo.decoders.sglang", "rheo.decoders.eagle_harness", "rheo.decoders.flashspec")


def served_decoder(name: str) -> ServedDecoder:
    """The served decoder called `name` (its DECODER)."""
    import importlib

    found = {}
    for mod in SERVED_DECODERS:
        dec = importlib.import_module(mod).DECODER
        found[dec.name] = dec
    if name not in found:
        raise CaseError(f"served decoder {name!r}; allowed: {', '.join(found)}")
    return found[name]


def verdict_row(
    decoder: ServedDecoder,
    row: Row,
    case: Case,
    *,
    n: int,
    alpha: float,
    tv: float,
    beta: float,
    seeds: tuple[int, ...],
) -> dict[str, Any]:
    """One row of the verdict table: the exact TV, and the gate on each seed (or why it cannot run here,
    with the driver's own error as it fails)."""
    from .served import DriverError

    out: dict[str, Any] = {"decoder": decoder.name, "package": decoder.package, "setting": row.setting}
    out.update(gen=dict(row.gen), note=row.note, cause=row.cause, control=row.control)
    if row.runs_here:
        etv, _, secs = exact_tv(decoder, case, row.gen, n)
        out.update(exact_tv=str(etv), exact_tv_float=float(etv), seconds_exact=round(secs, 3), not_run=row.runs_here)
        try:
            decoder.sample(case, row.gen, n=n, num_samples=4, seed=seeds[0], timeout=600)
        except DriverError as e:
            out["error"] = str(e).strip().splitlines()[-1]
        else:
            out["error"] = None  # it ran after all: the row's reason is stale
        return out
    tv = tv if row.tv is None else row.tv
    runs = [gate(decoder, case, row.gen, n=n, alpha=alpha, tv=tv, beta=beta, seed=s) for s in seeds]
    out.update({k: runs[0][k] for k in ("exact_tv", "exact_tv_float", "N", "tv", "alpha", "beta", "seconds_exact")})
    out["verdicts"] = [r["verdict"] for r in runs]
    out["p_values"] = [r["p_value"] for r in runs]
    out["seeds"] = list(seeds)
    out["seconds_sampling"] = [r["seconds_sampling"] for r in runs]
    out["ms_per_sample"] = [r["ms_per_sample"] for r in runs]
    return out


def markdown_row(r: dict[str, Any]) -> str:
    """| package | path | setting | exact TV | verdict | N | seeds | cause | ms/sample |"""
    etv = f"{r['exact_tv_float']:.4g}" if r["exact_tv"] not in ("0",) else "0"
    if "not_run" in r:
        verdict = "not run on CPU"
        n = seeds = ms = "-"
        cause = r["cause"] or r["not_run"]
    else:
        verdict = " / ".join(r["verdicts"])
        n, seeds = str(r["N"]), ", ".join(map(str, r["seeds"]))
        ms = " / ".join(f"{x:.3g}" for x in r["ms_per_sample"])
        cause = r["cause"] or "-"
    return f"| {r['package']} | {r['setting']} | {etv} | {verdict} | {n} | {seeds} | {ms} | {cause} |"
