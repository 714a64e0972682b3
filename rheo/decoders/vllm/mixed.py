"""vLLM's mixed batch: one `RejectionSampler` call whose requests carry different temperatures, top-k /
top-p, drafts per round and seeds (where its recent bugs lived: processors skipped at verified positions,
padding rows, seeds). Each request's samples are tested against its own target law at α / (number of
requests) each (Bonferroni); the row's verdict is REJECT when any request is rejected."""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

from rheo.lossless import validate
from rheo.lossless.stats import law_samples, law_test
from rheo_ref.exact import tv
from rheo_ref.models import load_case

MIXED: list[dict[str, Any]] = [  # one batch, settings and seeds differing per request
    {"k": 3, "seed": 11},
    {"k": 2, "temperature": 0.5, "top_k": 3, "top_p": 0.9},
    {"k": 1, "temperature": 0, "seed": 5},
    {"k": 0, "top_p": 0.9},
]


def judge_mixed(decoder: Any, row: Any, table: Any, seed: int) -> dict[str, Any]:
    """The row `mixed-batch` of vLLM's table on one seed (`rheo.decoders.rows.Row.judge`)."""
    from rheo.decoders.served import device, ran_on
    from rheo.decoders.vllm import MODULE, SECONDS_PER_SAMPLE, SERVED, law, request, target

    tokens, delta = row.tokens, row.tv  # (the row as resolved by the table: rheo.decoders.rows.run_row)
    c = replace(load_case(str(_repo() / row.case)), tokens=tokens)
    alpha, beta, delta = validate.gate_rates(row.alpha / len(MIXED), table.beta, delta, tv_one=True)  # once
    targets = [target(c, g, tokens) for g in MIXED]
    exact = [tv(law(c, g, tokens), t) for g, t in zip(MIXED, targets)]
    Ns = [law_samples(t, delta, alpha, beta) for t in targets]
    req = request(c, MIXED[0], seed, Ns[0])
    req["requests"] = [request(c, g, seed, N)["requests"][0] for g, N in zip(MIXED, Ns)]
    t0 = time.perf_counter()
    reply = SERVED.run(req, timeout=120 + SECONDS_PER_SAMPLE * sum(Ns) * tokens)
    ran_on(reply, device(), MODULE)
    res = [law_test(s, t, alpha=alpha, tv=delta, beta=beta) for s, t in zip(reply["samples"], targets)]
    return {
        "gen": MIXED, "verdict": "REJECT" if any(r.rejected for r in res) else "pass", "N": Ns,
        "cells": [r.cells for r in res], "detectable_tv": [round(r.detectable_tv, 4) for r in res],
        "p_value": [r.p_value for r in res], "exact_tv": [str(e) for e in exact],
        "exact_tv_float": max(float(e) for e in exact), "seconds": round(time.perf_counter() - t0, 3),
    }  # fmt: skip


def _repo() -> Any:
    from rheo.decoders.rows import REPO

    return REPO
