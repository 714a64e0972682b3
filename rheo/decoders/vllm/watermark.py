"""Drive vLLM 0.34.0's watermarked speculative decoding, unmodified, with a fresh random key per sample.

Run in the vLLM environment: `python -m rheo.decoders.vllm.watermark REQUEST.json` prints one JSON line
{"counts": {"t1,t2,...": n}, "seconds": s, "path": {...}}. Request: {"case": {draft, target, context}
(a rheo case's JSON), "k": drafts a round, "tokens": n, "samples": N, "seed": s, "keys": "dual" | "same",
"context_width": W}.

Per sample a fresh 63-bit key. Drafts: vLLM's draft watermarker's keyed Gumbel-max draw
(`DualKeyGumbelWatermarker(key, W).draft_watermarker.sample(logits, contexts)`, key A = SHA-256 of
(b"key_a", key)); verification: vLLM's V2 `rejection_sample` (Triton, in the interpreter on cpu) with
`contexts` = the last W tokens before each row (`GPUWatermarkSampler._get_contexts`' layout), every
row watermarked, the skip mask all False (no context repeats in the rows driven here; see
docs/THIRD_PARTY.md §12), `watermark_key`: `keys="dual"` the engine's
`speculative_target_watermark_key(WatermarkConfig(key, algorithm="dual_key_gumbel"))` (key B);
`keys="same"` key A, the draft's own key (a configuration vLLM's API refuses: the counterfactual in
which the residual reuses the draft's noise). Uniforms: one fresh seed per verification call.
"""

from __future__ import annotations

import json
import math
import random
import sys
import time
from fractions import Fraction
from typing import Any

from rheo.decoders import driver_io as _driver_io  # first: stdout carries only the reply
from rheo.decoders.vllm import driver as _driver  # sets TRITON_INTERPRET=1 (cpu) before triton is imported

DEVICE = _driver.DEVICE


def _rows(model: dict) -> tuple[int, dict[tuple[int, ...], list[float]]]:
    L = int(model["context_length"])
    rows = {
        tuple(int(t) for t in key.split(",") if t != ""): [float(Fraction(x)) for x in row]
        for key, row in model["probs"].items()
    }
    return L, rows


def _row(L: int, rows: dict, ctx: list[int]) -> list[float]:
    return rows[tuple(ctx[len(ctx) - L :]) if L else ()]


def run(req: dict) -> dict:
    _driver.interpreter_libdevice()
    import torch
    from vllm.config.watermarking import WatermarkConfig
    from vllm.v1.watermarking.gumbel import DualKeyGumbelWatermarker
    from vllm.v1.watermarking.spec_decode import speculative_target_watermark_key
    from vllm.v1.worker.gpu.spec_decode.rejection_sampler_utils import rejection_sample

    case, K, n, W = req["case"], int(req["k"]), int(req["tokens"]), int(req["context_width"])
    Lq, q_rows = _rows(case["draft"])
    Lp, p_rows = _rows(case["target"])
    V = len(next(iter(p_rows.values())))
    rng = random.Random(int(req["seed"]))
    counts: dict[str, int] = {}
    start = time.time()
    for _ in range(int(req["samples"])):
        key = rng.getrandbits(63)
        draft_wm = DualKeyGumbelWatermarker(key, W).draft_watermarker
        if req["keys"] == "dual":
            target_key = speculative_target_watermark_key(
                WatermarkConfig(key=key, algorithm="dual_key_gumbel", context_width=W)
            )
        elif req["keys"] == "same":
            target_key = draft_wm.prf.key
        else:
            raise SystemExit(f"keys {req['keys']!r}: allowed 'dual' or 'same'")
        seq = [int(t) for t in case["context"]]
        out: list[int] = []
        while len(out) < n:
            drafts: list[int] = []
            qs: list[list[float]] = []
            for _j in range(K):
                ctx = seq + drafts
                q = _row(Lq, q_rows, ctx)
                logits = torch.tensor([[math.log(x) if x > 0 else _driver.ZERO_LOGIT for x in q]], dtype=torch.float32)
                contexts = torch.tensor([ctx[-W:]], dtype=torch.int64)
                drafts.append(int(draft_wm.sample(logits, contexts).token_ids[0]))
                qs.append(q)
            rows = [seq + drafts[:j] for j in range(K + 1)]
            plog = [[math.log(x) if x > 0 else _driver.ZERO_LOGIT for x in _row(Lp, p_rows, c)] for c in rows]
            ctxs = torch.tensor([c[-W:] for c in rows], dtype=torch.int64)
            emitted = _driver._v2_round(
                rejection_sample, [(drafts, seq[-1])], plog, [x for q in qs for x in q], [rng.getrandbits(62)],
                [len(seq)], K, V, contexts=ctxs, watermarking=torch.ones(1, dtype=torch.bool),
                watermarking_skip_mask=torch.zeros(K + 1, dtype=torch.bool), watermark_key=target_key,
            )[0]  # fmt: skip
            out += emitted
            seq += emitted
        k_ = ",".join(map(str, out[:n]))
        counts[k_] = counts.get(k_, 0) + 1
    import vllm

    return {
        "counts": counts,
        "seconds": time.time() - start,
        "path": {"vllm": vllm.__version__, "keys": req["keys"], "device": DEVICE},
    }


def main() -> None:
    with open(sys.argv[1]) as f:
        req: Any = json.load(f)
    _driver_io.reply(run(req))


if __name__ == "__main__":
    main()
