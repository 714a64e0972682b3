"""The gate of a decoder under test (`rheo gate --decoder NAME`): its sampler on the `TableLM`s of a case
(one process, `workers` spawned ones, or the workers of a Dask cluster in chunks: `scheduler`), the test of its first n tokens (or, with `horizon`, every
window) against the exact processed target law (`rheo.lossless`), and the verdict as one JSON-ready
dict with the decoder's own exact TV where rheo knows its law (docs/THIRD_PARTY.md).

The decoders are the registry's (`rheo.decoders`): this module never names one.

Laws: with temperature / top-k / top-p the law sampling targets is the processed p
(`rheo.decoders.laws.Processing`), and that is what the gate tests.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import time
from collections.abc import Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import replace
from fractions import Fraction
from typing import Any

from rheo.decoders import DecoderRun
from rheo.lossless.cluster import CHUNK, LOCAL
from rheo.lossless.gate import gate_arguments, run_gate
from rheo.lossless.horizon import HorizonTest
from rheo.lossless.stats import DEFAULT_BETA, GateCall, LawTest, Sampler, law_samples, law_test, seed_for
from rheo_ref.errors import CaseError
from rheo_ref.exact import target_law
from rheo_ref.exact import tv as total_variation
from rheo_ref.laws import Law
from rheo_ref.models import Case


def sampler(decoder: DecoderRun, case: Case, *, workers: int = 1) -> Sampler:
    """A sampler (c, seed, num_samples) -> sequences of `c.tokens` tokens from `c.context`, decoding
    with the models of `case` (the unprocessed tables: the decoder processes them itself)."""
    if isinstance(workers, bool) or not isinstance(workers, int) or workers < 1:
        raise CaseError(f"workers={workers!r} must be an integer >= 1")
    entry = decoder.entry
    entry.check_environment()  # its modules, and a served decoder's interpreter, first
    entry.check_context(case, decoder.name)
    entry.check_case(case, decoder)
    obj = case.to_json()

    def sample(c: Case, seed: int, num_samples: int) -> list[tuple[int, ...]]:
        job = (obj, decoder, list(c.context), c.tokens)
        if workers == 1:
            return decode_batch(*job, seed, num_samples)
        sizes = [num_samples // workers + (i < num_samples % workers) for i in range(workers)]
        with ProcessPoolExecutor(workers, mp_context=_spawn()) as pool:
            parts = [pool.submit(decode_batch, *job, seed_for(f"{seed}|{i}"), k) for i, k in enumerate(sizes) if k]
            return [s for part in parts for s in part.result()]

    sample.__name__ = f"hf_sampler[{decoder.name}]"
    return sample


class WithServedPython:
    """A sampler that sets `RHEO_SERVED_PYTHON` (`--python PATH`) and `RHEO_SERVED_DEVICE` (`--device`) where it
    runs before it samples: a Dask worker does not inherit this process's environment, and a served decoder's
    driver is started there."""

    def __init__(self, sampler: Sampler, python: str, device: str = "cpu") -> None:
        self.sampler, self.python, self.device = sampler, python, device

    def __call__(self, case: Case, seed: int, num_samples: int) -> Any:
        import os

        from rheo.decoders.device import DEVICE_VAR
        from rheo.decoders.served import PYTHON_VAR

        if self.python:
            os.environ[PYTHON_VAR] = self.python
        os.environ[DEVICE_VAR] = self.device
        return self.sampler(case, seed, num_samples)


def _spawn() -> Any:
    import multiprocessing

    return multiprocessing.get_context("spawn")  # fresh interpreters: no inherited torch threads


@contextlib.contextmanager
def quiet_one_thread() -> Iterator[None]:
    """torch on one thread (tiny tensors; the machine is shared) and transformers' logger at errors only."""
    import torch
    from transformers.utils import logging

    threads, level = torch.get_num_threads(), logging.get_verbosity()
    torch.set_num_threads(1)
    logging.set_verbosity_error()
    try:
        yield
    finally:
        torch.set_num_threads(threads)
        logging.set_verbosity(level)


def decode_batch(
    case_obj: dict, decoder: DecoderRun, context: list[int], n: int, seed: int, num_samples: int
) -> list[tuple[int, ...]]:
    """num_samples independent decodes of n tokens from `context` (a module function: workers call it)."""
    case = Case.from_json(case_obj)
    quiet = quiet_one_thread() if decoder.entry.requires else contextlib.nullcontext()  # (nothing loaded here)
    with quiet:
        return decoder.entry.decode(case, context, n, seed, num_samples, decoder)


# --- the gate ----------------------------------------------------------------------------------


def dist_version(name: str) -> str | None:
    """The installed version of the distribution `name` (None: not installed)."""
    import importlib.metadata as md

    try:
        return md.version(name)
    except md.PackageNotFoundError:
        return None


def gate_hf(
    case: Case,
    decoder: DecoderRun,
    *,
    alpha: float,
    tv: float,
    seed: int,
    beta: float = DEFAULT_BETA,
    tokens: int | None = None,
    workers: int | None = None,
    horizon: int | None = None,
    sequential: bool = False,
    scheduler: Any = None,
    chunk: int = CHUNK,
) -> dict[str, Any]:
    """Run `decoder` on the case's table models and test its first n tokens against the exact
    (processed) target law, or with `horizon` every window (x_{k−1}, x_k), k ≤ H (`alpha` the
    family-wise total; rheo.lossless.horizon). With `scheduler` (what `rheo.on_dask` takes: 'local',
    tcp://HOST:PORT or a `distributed.Client`) the samples are drawn on that Dask cluster in chunks of
    `chunk` (rheo.lossless.cluster), each chunk one call of the decoder (a served decoder: one driver run,
    started by the worker; a 'local' cluster of `workers` processes, default one a core, started on the first
    draw). Without `scheduler`, `workers` spawned processes sample (default 1). Returns the verdict as a
    JSON-ready dict (docs/THIRD_PARTY.md).

    The gate's arguments (rates, tokens or horizon, seed, the sizes) are checked once, here, by the
    library's own check (`rheo.lossless.gate.gate_arguments`), before any exact law is built or any sample
    drawn; the CLI hands them on unchecked and names its flags in the refusal."""
    local = scheduler == LOCAL
    if scheduler is not None and workers not in (None, 1) and not local:
        raise CaseError(f"workers={workers!r} with scheduler={scheduler!r}: the cluster's workers draw the chunks; "
                        "allowed: workers=1, or scheduler='local' with workers=N (a local cluster of N processes)")  # fmt: skip
    processes = 1 if scheduler is not None or workers is None else workers  # (the cluster's workers draw)
    sample = sampler(decoder, case, workers=processes)  # checks the case first (before the exact law's cost)
    call = gate_arguments(
        sample, case, alpha=alpha, tv=tv, beta=beta, seed=seed, tokens=tokens, horizon=horizon, sequential=sequential
    )
    n = case.tokens if call.horizon is not None else call.tokens
    with contextlib.ExitStack() as stack:
        if scheduler is not None:
            from rheo.decoders.served import PYTHON_VAR, device
            from rheo.lossless.cluster import on_dask

            given = os.environ.get(PYTHON_VAR)
            if decoder.entry.served is not None and (given or device() != "cpu"):
                sample = WithServedPython(sample, given or "", device())
            sample = stack.enter_context(on_dask(sample, scheduler, chunk=chunk, workers=workers if local else None))
        report = gate_checked(case, decoder, sample, n, call, workers=processes)
    if scheduler is not None:
        report["scheduler"] = scheduler if isinstance(scheduler, str) else str(scheduler.scheduler.address)
        report["chunk"] = chunk
    return report


def gate_checked(
    case: Case, decoder: DecoderRun, sample: Sampler, n: int, call: GateCall, *, workers: int
) -> dict[str, Any]:
    """The gate on a call `gate_hf` has checked (its arguments, the decoder's environment and context): nothing
    is checked again but which law the decoder's setting claims. Where every argument that reaches it has passed
    its checks (the fuzz harness stubs it there)."""
    horizon, sequential = call.horizon, call.sequential
    claimed = decoder.entry.target_law(case, n, decoder)  # None: the processed p
    if claimed is not None and horizon is not None:
        raise CaseError(
            f"decoder {decoder.name} with {dict(decoder.gen)} claims its own target law: --horizon needs the "
            "processed p; allowed: the first tokens (--tokens)"
        )
    if sequential and claimed is not None:  # (with a horizon: refused by the gate's own check, gate_arguments)
        raise CaseError(
            f"sequential=True with decoder {decoder.name} (its own law): the sequential gate tests the first tokens "
            "against the processed p; allowed: --tokens"
        )
    tcase = decoder.target_case(case, n) if claimed is None else case
    exact = decoder.exact_law(replace(case, constraint=None), n)  # the decoder's own law (no decoder here masks)
    if workers == 1:
        for module in decoder.entry.requires:  # loaded before the clock starts: seconds are the sampling's
            importlib.import_module(module)
    seen: list[tuple[int, ...]] = []

    def keep(c: Case, s: int, num: int) -> list[tuple[int, ...]]:  # the samples, for the fit to the own law
        out = [tuple(x) for x in sample(c, s, num)]
        seen.extend(out)
        return out

    t0 = time.perf_counter()
    res: LawTest | HorizonTest
    if horizon is not None:
        res = run_gate(sample, tcase, call)
    elif claimed is None:
        res = run_gate(keep, tcase, call)
    else:
        res = check_claimed(keep, case, claimed, alpha=call.alpha, tv=call.tv, beta=call.beta, seed=call.seed)
    seconds = time.perf_counter() - t0
    target = target_law(tcase, n) if claimed is None else claimed
    exact_tv = None if exact is None else total_variation(exact, target)
    extra: dict[str, Any] = {}
    package = decoder.entry.package
    if package is not None:
        extra["package"] = f"{package} {decoder.entry.installed_version()}"
    if decoder.entry.path:
        extra["path"] = decoder.entry.path
    if decoder.entry.served is not None:
        from rheo.decoders.served import device

        if device() != "cpu":  # (checked against each driver's reply: Served.decode)
            extra["device"] = device()
    if exact is not None and exact_tv and seen:  # where it is lossy: do the samples fit its own law?
        extra["own_law_p"] = law_test(seen, exact, alpha=call.alpha, tv=call.tv, beta=call.beta).p_value
    return {
        "decoder": decoder.name,
        **extra,
        **({"transformers": dist_version("transformers")} if "transformers" in decoder.entry.requires else {}),
        "gen": decoder.options(),
        "tokens": n,
        **verdict_fields(res),
        "exact_tv": None if exact_tv is None else str(exact_tv),
        "exact_tv_float": None if exact_tv is None else float(exact_tv),
        "seed": call.seed,
        "seconds": round(seconds, 3),
        "ms_per_sample": round(1000 * seconds / res.n, 3),
        **horizon_fields(res),
    }


def check_claimed(
    sample: Sampler, case: Case, claimed: Law, *, alpha: float, tv: float, beta: float, seed: int
) -> LawTest:
    """The first tokens against a law the decoder's setting claims (not the processed p): N from α, δ and β
    on that law (`samples_for`), then `check_law`; the rates are the gate's, checked once (`gate_hf`)."""
    n = len(next(iter(claimed)))
    samples = sample(replace(case, tokens=n), seed, law_samples(claimed, tv, alpha, beta))
    return law_test(samples, claimed, alpha=alpha, tv=tv, beta=beta)


def exact_tv_of(decoder: DecoderRun, case: Case, n: int) -> Fraction | None:
    """The exact TV of the decoder's own law to the law it claims (None: its law is unknown here)."""
    exact = decoder.exact_law(case, n)
    if exact is None:
        return None
    claimed = decoder.entry.target_law(case, n, decoder)
    return total_variation(exact, target_law(decoder.target_case(case, n), n) if claimed is None else claimed)


def verdict_fields(res: LawTest | HorizonTest) -> dict[str, Any]:
    """The verdict and the numbers it stands on (N, α, β, δ, detectable TV, p), for the JSON verdict."""
    return {
        "verdict": "REJECT" if res.rejected else "pass",
        "N": res.n,
        "alpha": res.alpha,
        "beta": res.beta,
        "tv": res.tv,
        "detectable_tv": res.detectable_tv,
        "p_value": res.p_value,
        "cells": res.cells,
        "pooled_mass": res.pooled_mass,
        **(
            {"looks": list(res.looks), "decided_at_look": res.look, "family_alpha": res.family_alpha}
            if isinstance(res, LawTest) and res.looks
            else {}
        ),
    }


def horizon_fields(res: LawTest | HorizonTest) -> dict[str, Any]:
    """The horizon (tests, α per test) and where the law deviates most, for the JSON verdict."""
    out: dict[str, Any] = {}
    if isinstance(res, HorizonTest):
        out = {"horizon": res.horizon, "tests": res.planned, "alpha_each": res.alpha_each, "correction": res.correction}
    cond = res.worst_conditional
    out["worst_conditional"] = None if cond is None else cond.text()
    out["worst_conditional_law"] = None if cond is None else cond.to_json()
    out["worst_cells"] = [c.text() for c in res.top_cells[:3]]
    out["summary"] = res.summary()
    return out
