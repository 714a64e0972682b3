"""The verdict rows of vLLM's RejectionSampler (docs/THIRD_PARTY.md, "vLLM 0.33.0").

Each row: the exact TV of vLLM's law as written (`law.VLLMLaw`) to the target law it claims, then
N samples of vLLM's own code (N from α, δ and power 0.99: `rheo.lossless.stats.samples_for`) tested against
the target law and against vLLM's exact law (`rheo.lossless.stats.check_law`); the horizon row is
`rheo.assert_lossless(..., horizon=H)`. `python -m rheo.decoders.vllm.gate [--rows a,b] [--seeds 1,2]`
prints one JSON line a row and seed.
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from typing import Any

from rheo.lossless.horizon import assert_lossless
from rheo.lossless.stats import check_law, samples_for
from rheo_ref.errors import LosslessError, RheoError
from rheo_ref.exact import tv
from rheo_ref.models import Case, load_case

from ..served import run_driver
from . import DECODER, MODULE, request

CASE_PATH = "tests/cases/hf.json"  # V = 4, first-order tables (each token's row depends on the one before)
ALPHA, BETA = 1e-3, 0.01

# name -> (--gen settings, tokens, what the row checks); every row draws drafts from the case's q. The
# joint law of the first 2 tokens (16 cells): at N of a few hundred a joint law of 4 tokens (256 cells)
# is pooled into 2 cells, whose TV can be far below the decoder's (the synthetic control at 4 tokens,
# exact TV 0.478, passed twice that way). Depth (rounds 1 and 2, the bonus after 3 accepted at token 4)
# is the horizon row's: every window (x_{k-1}, x_k), k <= 8.
ROWS: dict[str, tuple[dict[str, Any], int, str]] = {
    "draft-probs": ({"k": 3}, 2, "token-level, q rows handed to vLLM"),
    "one-hot": ({"k": 3, "draft_probs": 0}, 2, "no draft probs (one-hot drafts, as n-gram drafting)"),
    "processed": (
        {"k": 3, "temperature": 0.5, "top_k": 3, "top_p": 0.9},
        2,
        "T = 1/2, top-k 3, top-p 0.9 at the verified positions and the bonus (PyTorch top-k/top-p path)",
    ),
    "bonus": ({"k": 1, "temperature": 0.5, "top_k": 2, "draft_probs": 0}, 2, "k = 1: the bonus at token 2, often"),
    "block-one-hot": (
        {"k": 3, "method": "block", "draft_probs": 0},
        2,
        "block verification (V2 runner), one-hot drafts, T = 1",
    ),
    "block-draft-probs": ({"k": 3, "method": "block"}, 2, "block verification with draft logits (see the notes)"),
    "synthetic": ({"k": 3, "synthetic": "9/10,4/5,7/10"}, 2, "negative control: synthetic acceptance (lossy)"),
}
HORIZON = ({"k": 3}, 8)  # every window (x_{k-1}, x_k), k <= 8: rounds 1 and 2 and their bonuses
MIXED: list[dict[str, Any]] = [  # one batch, settings and seeds differing per request
    {"k": 3, "seed": 11},
    {"k": 2, "temperature": 0.5, "top_k": 3, "top_p": 0.9},
    {"k": 1, "temperature": 0, "seed": 5},
    {"k": 0, "top_p": 0.9},
]


def case(tokens: int) -> Case:
    return replace(load_case(CASE_PATH), tokens=tokens)


def judge(name: str, seed: int, delta: float) -> dict:
    """One row on one seed: exact TV, N, the verdict against the target and against vLLM's own law."""
    gen, n, _ = ROWS[name]
    c = case(n)
    target, own = DECODER.target(c, gen, n), DECODER.law(c, gen, n)
    N = samples_for(target, delta, ALPHA, BETA)
    t0 = time.perf_counter()
    samples = DECODER.sampler(gen)(c, seed, N)
    res, fit = check_law(samples, target, alpha=ALPHA, tv=delta), check_law(samples, own, alpha=ALPHA, tv=delta)
    exact = tv(own, target)
    return {
        "row": name, "seed": seed, "gen": gen, "tokens": n, "delta": delta, "N": N, "cells": res.cells,
        "detectable_tv": round(res.detectable_tv, 4), "p_value": res.p_value, "verdict": "REJECT" if res.rejected else "pass",
        "exact_tv": str(exact), "exact_tv_float": float(exact), "own_law_p": fit.p_value, "seconds": round(time.perf_counter() - t0, 1),
    }  # fmt: skip


def judge_horizon(seed: int, delta: float) -> dict:
    gen, H = HORIZON
    c = case(H)
    t0 = time.perf_counter()
    try:
        res = assert_lossless(DECODER.sampler(gen), c, alpha=ALPHA, tv=delta, horizon=H, seed=seed)
        verdict = "pass"
    except LosslessError as e:
        res, verdict = e.result, "REJECT"
    exact = tv(DECODER.law(c, gen, H), DECODER.target(c, gen, H))
    return {
        "row": "horizon", "seed": seed, "gen": gen, "tokens": H, "delta": delta, "N": res.n, "tests": len(res.tests),
        "detectable_tv": round(res.detectable_tv, 4), "p_value": min(t.p_value for t in res.tests), "verdict": verdict,
        "exact_tv": str(exact), "exact_tv_float": float(exact), "seconds": round(time.perf_counter() - t0, 1),
    }  # fmt: skip


def judge_mixed(seed: int, delta: float, tokens: int = 2) -> dict:
    """One batch whose requests differ in temperature, top-k/top-p, k and seeds; each request's
    samples against its own target law, at α / (number of requests) each (Bonferroni)."""
    c = case(tokens)
    alpha = ALPHA / len(MIXED)
    targets = [DECODER.target(c, g, tokens) for g in MIXED]
    exact = [tv(DECODER.law(c, g, tokens), t) for g, t in zip(MIXED, targets)]
    Ns = [samples_for(t, delta, alpha, BETA) for t in targets]
    req = request(c, MIXED[0], seed, Ns[0])
    req["requests"] = [request(c, g, seed, N)["requests"][0] for g, N in zip(MIXED, Ns)]
    t0 = time.perf_counter()
    reply = run_driver("vllm", MODULE, req, timeout=120 + 0.5 * sum(Ns) * tokens)
    res = [check_law(s, t, alpha=alpha, tv=delta) for s, t in zip(reply["samples"], targets)]
    return {
        "row": "mixed-batch", "seed": seed, "gen": MIXED, "tokens": tokens, "delta": delta, "N": Ns,
        "detectable_tv": [round(r.detectable_tv, 4) for r in res], "p_value": [r.p_value for r in res],
        "verdict": "REJECT" if any(r.rejected for r in res) else "pass", "exact_tv": [str(e) for e in exact],
        "exact_tv_float": max(float(e) for e in exact), "seconds": round(time.perf_counter() - t0, 1),
    }  # fmt: skip


def run(name: str, seed: int, delta: float) -> dict:
    if name == "horizon":
        return judge_horizon(seed, delta)
    if name == "mixed-batch":
        return judge_mixed(seed, delta)
    return judge(name, seed, delta)


ALL = [*ROWS, "horizon", "mixed-batch"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--rows", default=",".join(ALL))
    ap.add_argument("--seeds", default="1,2")
    ap.add_argument("--tv", type=float, default=0.2)
    a = ap.parse_args()
    for name in a.rows.split(","):
        for s in a.seeds.split(","):
            try:
                row = run(name, int(s), a.tv)
            except RheoError as e:  # a row that cannot run here: its error, located
                row = {"row": name, "seed": int(s), "verdict": "cannot run", "error": str(e)[-1500:]}
            print(json.dumps(row, allow_nan=False), flush=True)


if __name__ == "__main__":
    main()

__all__ = ["ALL", "judge", "run"]
