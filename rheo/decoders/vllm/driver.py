"""Runs INSIDE .venv-vllm: vLLM 0.33.0's `RejectionSampler`, unmodified, decoding table models.

`python -m rheo.decoders.vllm.driver` reads one JSON request on stdin and writes one JSON reply on
stdout (`rheo.decoders.served.run_driver`). What is vLLM's and what is this harness's:
- vLLM's, as published: `RejectionSampler(Sampler())` (`vllm/v1/sample/rejection_sampler.py`) with
  its own `SpecDecodeMetadata` and `SamplingMetadata`, its Triton kernels run by Triton's CPU
  interpreter (`TRITON_INTERPRET=1`, with `CUDA_VISIBLE_DEVICES=""` so that vLLM keeps Triton
  enabled), the bonus token drawn by its `Sampler`, and `RejectionSampler.parse_output`.
- the harness's (the model runner's and the drafter's part): the target's logits, log p of the
  case's table at each verified position and at the bonus, laid out as vLLM's model runner lays them
  (per request its k verified rows, then its bonus row); the drafts, drawn from the case's q table
  with the harness's own generator; with `draft_probs` the q rows are handed to vLLM, without it
  vLLM sees none (one-hot drafts, as for n-gram drafting); the batch as the input batch builds it
  (temperature 0 for greedy, top-k = V and top-p = 1 where off, one `torch.Generator` per seeded
  request, rows dropped when their request has its tokens).
- top-k / top-p: `"topk_topp": "pytorch"` sets the module global
  `vllm.v1.sample.ops.topk_topp_sampler.HAS_TRITON = False` (the switch vLLM itself reads to choose
  `apply_top_k_top_p_pytorch`); the Triton top-k / top-p kernel does not run in the interpreter
  (see docs/THIRD_PARTY.md). A verdict with top-k / top-p is a verdict on that PyTorch path.
- `"method": "block"`: block verification (Sun et al.), which 0.33.0 has only in the V2 model
  runner: `vllm.v1.worker.gpu.spec_decode.rejection_sampler_utils.rejection_sample(...,
  use_block_verification=True)`, called with the tensors that runner builds (target logits already
  processed: temperature 1, no top-k / top-p here; one seed a request; positions). Its draws are
  philox streams of (seed, position), so every sample gets its own seed from the harness.
- vLLM's own `LogitBiasLogitsProcessor` / `MinPLogitsProcessor` (`_processors`) and its penalties (the
  `SamplingMetadata` fields, filled as the input batch fills them: the prompt, each request's output so far);
  `PIN_MEMORY` set as vLLM's CpuPlatform has it (`no_pinned_memory`).
- verifier inputs an engine produces (`stated`): padded draft ids -1 (`pad`), q rows that state q(t) = 0
  (`zero_token`), all-zero or all-NaN q rows (`q_row`); the draft is always drawn from the drafter's own q.
- `"method": "adaptive"`: adaptive verification (the V2 runner): vLLM's `assign_draft_token_budget` decides each
  request's admitted prefix (a batch of the judged request and a companion, `admitted_counts`), then
  `rejection_sample` verifies it; `"runner": "v2"`: the V2 runner's own `apply_bad_words` / `apply_min_p` on the
  target logits before `rejection_sample` (`v2_processing`); bad words on the V1 path through
  `SamplingMetadata.bad_words_token_ids`.
- `"synthetic_rates"`: vLLM's documented-lossy `rejection_sample_method="synthetic"` (accepts the
  i-th draft with a fixed rate, whatever p and q): the negative control.
- the device (`rheo gate --device`, `rheo.decoders.device`, read before triton and vLLM are imported): cpu, the
  default, is all of the above; cuda sets neither TRITON_INTERPRET nor CUDA_VISIBLE_DEVICES, builds every tensor
  handed to vLLM on the GPU (the request generators too; the harness's drafter still draws on the CPU), leaves
  `PIN_MEMORY` as vLLM's platform has it, and ends with one line (exit 2 in the gate) where this interpreter's torch
  sees no CUDA device. Every reply's `path` records the device and whether Triton's interpreter ran.
No rheo module beyond `rheo.decoders.device` and `rheo.decoders.driver_io` (standard library only) is needed here.
"""

from __future__ import annotations

import cProfile
import io
import itertools
import json
import math
import os
import pstats
import sys
import time
from fractions import Fraction
from types import SimpleNamespace
from typing import Any, NoReturn

from rheo.decoders import device as _device
from rheo.decoders import driver_io as _driver_io  # first: stdout carries only the reply (module docstring)

# Before triton and vLLM are imported: on cpu (the default) TRITON_INTERPRET=1 and CUDA_VISIBLE_DEVICES="" (with which
# vLLM keeps Triton enabled with no GPU driver); on cuda (`rheo gate --device cuda`) neither: the compiled kernels.
DEVICE = _device.prepare(hide_cuda=True)
ON: Any = "cpu"  # the torch device every tensor handed to vLLM is built on (main: `_device.require(DEVICE)`)

PENALTIES = ("repetition_penalty", "frequency_penalty", "presence_penalty")  # a request's penalty settings
ZERO_LOGIT = -1.0e4  # log 0: finite, as TableLM does (exp(-1e4 / T) is exactly 0 in float32 for T < 90)


def _rows(table: dict) -> tuple[int, int, dict[tuple[int, ...], list[float]]]:
    V, L = table["vocab_size"], table["context_length"]
    rows = {}
    for key, row in table["probs"].items():
        ctx = tuple(int(t) for t in key.split(",")) if key else ()
        rows[ctx] = [float(Fraction(x)) for x in row]
    return V, L, rows


def _row(rows: dict, L: int, ctx: list[int]) -> list[float]:
    key = tuple(ctx[-L:]) if L else ()
    if key not in rows:
        raise SystemExit(f"driver: the table has no row for context {list(key)}")
    return rows[key]


def _metadata(drafts: list[list[int]], device):
    """SpecDecodeMetadata as the model runner's `_calc_spec_decode_metadata` builds it."""
    import numpy as np
    import torch
    from vllm.v1.spec_decode.metadata import SpecDecodeMetadata

    nd = np.array([len(d) for d in drafts], dtype=np.int32)
    ns = nd + 1
    cu_s, cu_d = np.cumsum(ns, dtype=np.int32), np.cumsum(nd, dtype=np.int32)
    starts = cu_s - ns
    target = np.concatenate([s + np.arange(n, dtype=np.int32) for s, n in zip(starts, nd)] or [np.zeros(0, np.int32)])
    t = lambda a: torch.from_numpy(np.ascontiguousarray(a, dtype=np.int32)).to(device)
    return SpecDecodeMetadata(
        draft_token_ids=t(np.array([t for d in drafts for t in d], dtype=np.int32)),
        num_draft_tokens=nd.tolist(),
        cu_num_draft_tokens=t(cu_d),
        cu_num_sampled_tokens=t(cu_s),
        target_logits_indices=t(target),
        bonus_logits_indices=t(cu_s - 1),
        logits_indices=t(np.arange(int(cu_s[-1]), dtype=np.int32)),
    )


def _sampling(specs: list[dict], gens: dict, drafts: list[list[int]], V: int, device, outputs=None, prompt=()):
    import torch
    from vllm.v1.sample.logits_processor import LogitsProcessors
    from vllm.v1.sample.metadata import SamplingMetadata

    B = len(specs)
    temp = torch.tensor([float(s.get("temperature", 1.0)) for s in specs], dtype=torch.float32, device=device)
    greedy = [float(s.get("temperature", 1.0)) == 0.0 for s in specs]
    ks = [int(s.get("top_k") or 0) for s in specs]
    ps = [float(s.get("top_p") or 1.0) for s in specs]
    top_k = (
        None
        if all(not 0 < k < V for k in ks)
        else torch.tensor([k if 0 < k < V else V for k in ks], dtype=torch.int32, device=device)
    )
    top_p = None if all(p >= 1.0 for p in ps) else torch.tensor(ps, dtype=torch.float32, device=device)
    penal = any(k in s for s in specs for k in PENALTIES)
    return SamplingMetadata(
        temperature=temp,
        all_greedy=all(greedy),
        all_random=not any(greedy),
        top_p=top_p,
        top_k=top_k,
        generators=gens,
        max_num_logprobs=None,
        # the penalties as the input batch builds them: the prompt's ids (padded with V), each request's output so
        # far (a list the sampler extends with the drafts, `_combine_outputs_with_spec_tokens`)
        no_penalties=not penal,
        prompt_token_ids=torch.tensor([list(prompt)] * B, dtype=torch.int64, device=device) if penal else None,
        frequency_penalties=torch.tensor([float(s.get("frequency_penalty", 0.0)) for s in specs], device=device),
        presence_penalties=torch.tensor([float(s.get("presence_penalty", 0.0)) for s in specs], device=device),
        repetition_penalties=torch.tensor([float(s.get("repetition_penalty", 1.0)) for s in specs], device=device),
        output_token_ids=[list(o) for o in outputs] if outputs is not None else [[] for _ in range(B)],
        allowed_token_ids_mask=None,
        # bad words as the input batch builds them: {batch index: [token ids of each word]} for the requests with any
        bad_words_token_ids={i: [list(w) for w in s["bad_words"]] for i, s in enumerate(specs) if s.get("bad_words")},
        logitsprocs=LogitsProcessors(_processors(specs, device)),
        spec_token_ids=drafts,
    )


def _processors(specs: list[dict], device) -> list:
    """vLLM's own logits processors for the batch, as the input batch builds them: `MinPLogitsProcessor` and
    `LogitBiasLogitsProcessor` (vllm/v1/sample/logits_processor/builtin.py, unmodified), each told of every request's
    SamplingParams(min_p=..., logit_bias=...) through its `update_state(BatchUpdate)`; a processor is built when some
    request sets its parameter (min_p = 0: built, and off); none when no request sets either."""
    procs: list = []
    if all(s.get("min_p") is None for s in specs) and all(s.get("logit_bias") is None for s in specs):
        return procs
    from vllm import SamplingParams
    from vllm.v1.sample.logits_processor import BatchUpdate, LogitBiasLogitsProcessor, MinPLogitsProcessor

    config = SimpleNamespace(scheduler_config=SimpleNamespace(max_num_seqs=len(specs)))
    params = [
        SamplingParams(min_p=float(s.get("min_p") or 0.0),
                       logit_bias={int(t): float(b) for t, b in (s.get("logit_bias") or {}).items()} or None)
        for s in specs
    ]  # fmt: skip
    if any(s.get("min_p") is not None for s in specs):
        procs.append(MinPLogitsProcessor(config, device, False))
    if any(s.get("logit_bias") is not None for s in specs):  # (LogitBiasLogitsProcessor, builtin.py line 119)
        procs.append(LogitBiasLogitsProcessor(config, device, False))
    added: list[tuple] = [(i, sp, None, []) for i, sp in enumerate(params)]
    for proc in procs:
        proc.update_state(BatchUpdate(batch_size=len(specs), removed=[], added=added, moved=[]))
    return procs


def stated(q: list[float], spec: dict) -> list[float]:
    """The q row the harness hands vLLM: the drafter's, or with q(zero_token) stated 0 (not renormalised), or a
    degenerate row (all zero, all NaN); the draft is drawn from the drafter's own row in every case."""
    if spec.get("q_row") == "zero":
        return [0.0] * len(q)
    if spec.get("q_row") == "nan":
        return [math.nan] * len(q)
    z = spec.get("zero_token")
    return q if z is None else [0.0 if t == int(z) else x for t, x in enumerate(q)]


def no_pinned_memory() -> None:
    """vLLM's `PIN_MEMORY` (vllm/utils/torch_utils.py line 1045, `is_pin_memory_available()`) as a host without an
    accelerator has it: `UnspecifiedPlatform` inherits True (platforms/interface.py line 1184), with which torch
    refuses `pin_memory=True` ("requires a CUDA or other accelerator backend"); `CpuPlatform.is_pin_memory_available`
    returns False (platforms/cpu.py line 628). The value is set on the modules that read it (torch_utils, and the
    names bound by `from ... import PIN_MEMORY` in the sampler's ops): LogitBiasLogitsProcessor and the penalties'
    tensors go through `async_tensor_h2d` / `make_tensor_with_pad` with it."""
    import importlib

    for name in ("vllm.utils.torch_utils", "vllm.v1.sample.ops.penalties", "vllm.v1.sample.sampler"):
        mod = importlib.import_module(name)
        if hasattr(mod, "PIN_MEMORY"):
            setattr(mod, "PIN_MEMORY", False)  # noqa: B010 (a module global vLLM reads; mypy sees ModuleType)


MOVED = 3  # rheo.decoders.served.MOVED: the installed release moved a piece this driver drives


def moved(missing: str) -> NoReturn:
    """Exit with status MOVED and one JSON line naming the missing piece (rheo.decoders.served.run_driver)."""
    _driver_io.reply({"missing": missing})
    raise SystemExit(MOVED)


def interpreter_libdevice() -> list[str]:
    """Triton's interpreter has no libdevice (its stubs return None: "'NoneType' object has no attribute
    'dtype'"). The functions vLLM's rejection kernels call are given interpreter-side implementations here,
    on Triton's module `triton.language.extra.libdevice` (never on vLLM's files): log1p as numpy's log1p on
    the interpreter's tensor data (the same IEEE function CUDA's libdevice computes, to its ulp). Returns the
    names provided."""
    if os.environ.get("TRITON_INTERPRET") != "1":
        return []
    import numpy as np
    import triton.language as tl
    import triton.language.extra.libdevice as libdevice
    from triton.runtime.interpreter import TensorHandle

    def log1p(arg0, *args, **kwargs):
        h = arg0.handle
        with np.errstate(divide="ignore", invalid="ignore"):  # -inf at -1, NaN at NaN (padded lanes), as on the device
            data = np.log1p(h.data).astype(h.data.dtype)
        return tl.core.tensor(TensorHandle(data, h.dtype.scalar), arg0.type)

    libdevice.log1p = log1p
    return ["log1p"]


def _v2_round(rejection_sample, drafts, logits, dprobs, seeds, positions, K, V, *, process=None, **method):
    """One verification step of the V2 runner's `rejection_sample` for a batch of requests, each with its own number
    of drafts m <= K (adaptive verification admits a prefix): the tensors the runner builds (target logits at
    temperature 1, one seed a request, positions; per request m + 1 rows, `cu_num_logits` = cumsum(m + 1) as
    `AdaptiveVerificationManager.reallocate_drafts` lays it). `dprobs`: per request K q rows (the draft logits cache
    holds every step; rows past m are not read). `process(logits, expanded_idx_mapping, local_pos, input_ids, pos)`:
    vLLM's own V2 processing applied to the logits first (logit bias, penalties, bad words, min-p), as
    `Sampler.apply_sampling_params`."""
    import inspect
    from types import SimpleNamespace

    import torch

    B = len(drafts)
    ms = [len(d) for d, _ in drafts]
    tl_ = torch.tensor(logits, dtype=torch.float32, device=ON).contiguous()  # [sum(m+1), V] target logits
    # per request the last context token, then its drafts (row i verifies entry i + 1)
    ds = torch.tensor([t for d, last in drafts for t in [last, *d]], dtype=torch.int64, device=ON)
    dl: Any = (
        None
        if dprobs is None
        else torch.tensor(dprobs, dtype=torch.float32, device=ON).reshape(B, K, V).log().contiguous()
    )
    if dl is not None and "draft_logits_cache" in inspect.signature(rejection_sample).parameters:
        dl = SimpleNamespace(values=dl, row_mapping=None)  # 0.34: a DraftLogitsCache, replicated (indexed by request)
    cu = torch.tensor([0, *itertools.accumulate(m + 1 for m in ms)], dtype=torch.int32, device=ON)
    idx = torch.arange(B, dtype=torch.int32, device=ON)
    expanded = idx.repeat_interleave(torch.tensor([m + 1 for m in ms], device=ON))
    local = torch.tensor([j for m in ms for j in range(m + 1)], dtype=torch.int32, device=ON)
    pos = torch.tensor(positions, dtype=torch.int64, device=ON)
    if process is not None:
        tl_ = process(tl_, expanded, local, ds, pos)
    out, num = rejection_sample(
        tl_, dl, ds, cu, pos, idx, expanded, local,
        torch.ones(B, device=ON), torch.tensor(seeds, dtype=torch.int64, device=ON), K, **method,
    )  # fmt: skip
    return [out[b, : int(num[b])].tolist() for b in range(B)]


def admitted_counts(drafts: list[list[int]], confidences: list[list[float]], adaptive: dict, K: int) -> list[int]:
    """Adaptive verification (V2 runner): each request's admitted draft count, decided by vLLM's own
    `assign_draft_token_budget` (0.34 `vllm/v1/worker/gpu/spec_decode/adaptive_verification.py`, its Triton kernel
    `_assign_draft_token_budget_kernel`, unmodified) for a batch of two: the judged request (its drafter's
    confidences, float32) and a companion with fixed confidences, `draft_budget` slots of 2K; called as
    `reallocate_drafts` calls it (capacities = the scheduled draft counts, an int32 survival scratch). One call a
    judged request, so that the samples stay independent."""
    import torch
    import vllm.v1.worker.gpu.spec_decode.adaptive_verification as av

    assign = getattr(av, "assign_draft_token_budget", None)
    if assign is None:  # 0.33: the function its runner torch.compiles (adaptive_verification.py line 75), eager
        eager = getattr(av, "_assign_draft_token_budget", None)
        if eager is None:
            moved("vllm.v1.worker.gpu.spec_decode.adaptive_verification.assign_draft_token_budget")

        def assign(probs, idx, capacities, budget, survival):
            eager(probs, idx, capacities, budget, probs.shape[1])

    companion, budget = [float(c) for c in adaptive["companion"]], int(adaptive["budget"])
    out = []
    for d, conf in zip(drafts, confidences):
        probs = torch.tensor([conf, companion], dtype=torch.float32, device=ON)
        capacities = torch.tensor([len(d), K], dtype=torch.int32, device=ON)
        survival = torch.empty(2 * K, dtype=torch.int32, device=ON)
        assign(probs, torch.tensor([0, 1], dtype=torch.int64, device=ON), capacities, budget, survival)
        out.append(int(capacities[0]))
    return out


def confidence(q_rows: list[list[float]], drafts: list[int], rule: str) -> list[float]:
    """The harness drafter's per-step confidences (float32, as the drafter hands them): `state`, the largest q
    probability at the step's context (a function of the state before the draft, as DSpark's confidence head);
    `draft`, the q probability of the drafted token itself."""
    import numpy as np

    vals = [max(q) if rule == "state" else q[x] for q, x in zip(q_rows, drafts)]
    return [float(np.float32(v)) for v in vals]


def v2_processing(req: dict, context: list[int], emitted: dict, live: list[int]):
    """vLLM's own V2 processing of the target logits (`Sampler.apply_sampling_params`: the logits processors in the
    order logit bias, penalties, bad words, then temperature, then min-p), for the settings of this request, each
    through the V2 runner's own function, unmodified, with the tensors its state objects hold (`LogitBiasState`,
    `PenaltiesState`, `BadWordsState` keep them in UVA / staged buffers; their functions take plain tensors):
    - logit bias: `vllm.v1.worker.gpu.sample.logit_bias.apply_logit_bias` (its Triton `_bias_kernel`), per request
      the bias token ids and values (widths MAX_NUM_*, as the state allocates them), no allowed ids, no min tokens;
    - penalties: the state's prompt mask and output counts, built by `penalties.bincount` from prompt + output (what
      `PenaltiesState.apply_staged_writes` and `post_update` keep: the prompt's bits, one count a sampled token), then
      `penalties.apply_penalties` (the drafts before each position read from the input ids [last, drafts]);
    - bad words: `bad_words.apply_bad_words` (its Triton kernel, with `all_token_ids` = prompt + output,
      `prompt_len`, `total_len`, the input ids);
    - min-p: `min_p.apply_min_p`.
    None when the request sets none of them."""
    (spec,) = req["requests"]
    words, min_p, bias = spec.get("bad_words"), spec.get("min_p"), spec.get("logit_bias")
    penal = any(k in spec for k in PENALTIES)
    if not words and not min_p and not bias and not penal:
        return None
    import torch

    try:
        from vllm.v1.worker.gpu.sample import logit_bias as lb
        from vllm.v1.worker.gpu.sample import penalties as pen
        from vllm.v1.worker.gpu.sample.bad_words import apply_bad_words
        from vllm.v1.worker.gpu.sample.min_p import apply_min_p
    except ImportError as e:
        moved(f"vllm.v1.worker.gpu.sample (apply_logit_bias / apply_penalties / apply_bad_words / apply_min_p) ({e})")

    def ints(rows, dtype=torch.int32):
        return torch.tensor(rows, dtype=dtype, device=ON)

    def process(logits, expanded, local, input_ids, pos):
        B, V = len(live), logits.shape[1]
        hist = [context + emitted[r] for r in live]
        width = max(len(h) for h in hist) + 1
        all_ids = ints([h + [0] * (width - len(h)) for h in hist])  # the runner's all_token_ids (prompt + output)
        prompt_len, total_len = ints([len(context)] * B), ints([len(h) for h in hist])
        zeros = ints([0] * B)
        if bias:  # LogitBiasState's tensors: [max_num_reqs, MAX_NUM_*] token ids and values, counts per request
            ids, vals = [int(t) for t in bias], [float(b) for b in bias.values()]

            def padded(xs, w, dtype=torch.int32):
                return torch.tensor([xs + [0] * (w - len(xs))] * B, dtype=dtype, device=ON)

            lb.apply_logit_bias(
                logits, expanded, pos, zeros, padded([], lb.MAX_NUM_ALLOWED_TOKEN_IDS), ints([len(ids)] * B),
                padded(ids, lb.MAX_NUM_LOGIT_BIAS_TOKENS), padded(vals, lb.MAX_NUM_LOGIT_BIAS_TOKENS, torch.float32),
                prompt_len, zeros, zeros, padded([], lb.MAX_NUM_STOP_TOKEN_IDS),
            )  # fmt: skip
        if penal:  # PenaltiesState's tensors, filled by vLLM's own bincount from prompt + output
            mask = torch.zeros(B, (V + 31) // 32, dtype=torch.int32, device=ON)
            counts = torch.zeros(B, V, dtype=torch.int32, device=ON)
            idx = torch.arange(B, dtype=torch.int64, device=ON)
            pen.bincount(idx, all_ids, prompt_len, total_len, mask, counts, width)

            def per_request(key: str, off: float):
                return torch.full((B,), float(spec.get(key, off)), dtype=torch.float32, device=ON)

            pen.apply_penalties(
                logits, expanded, input_ids, local, per_request("repetition_penalty", 1.0),
                per_request("frequency_penalty", 0.0), per_request("presence_penalty", 0.0), mask, counts,
            )  # fmt: skip
        if words:
            flat = [t for w in words for t in w]
            offsets = [0, *itertools.accumulate(len(w) for w in words)]
            apply_bad_words(
                logits, expanded, ints([flat] * B), ints([offsets] * B), ints([len(words)] * B), all_ids, prompt_len,
                total_len, input_ids.to(torch.int32), local, len(words),
            )  # fmt: skip
        if min_p:
            apply_min_p(logits, expanded, torch.full((B,), float(min_p), dtype=torch.float32, device=ON))
        return logits

    return process


def v2_method(req: dict, K: int) -> dict:
    """The keyword arguments of `rejection_sample` for the request's method (block, token, synthetic, fly)."""
    import torch

    m = req.get("method", "token")
    if m == "block":
        return {"use_block_verification": True}
    if m == "adaptive":  # token-level verification of the admitted prefix (driven in decode_v2)
        return {}
    if req.get("synthetic_rates"):
        from vllm.v1.worker.gpu.spec_decode.rejection_sampler import unconditional_to_conditional_rates

        rates = unconditional_to_conditional_rates([float(r) for r in req["synthetic_rates"]])
        return {"synthetic_conditional_rates": torch.tensor(rates, dtype=torch.float32, device=ON)}
    if m == "fly":
        fly = req["fly"]
        return {"fly_window_size": int(fly["window"]), "fly_entropy_threshold": float(fly["threshold"]),
                "fly_entropy_top_k": int(fly["top_k"])}  # fmt: skip
    return {}


def decode_v2(req: dict) -> dict:
    import torch
    import vllm

    try:
        from vllm.v1.worker.gpu.spec_decode.rejection_sampler_utils import rejection_sample
    except ImportError as e:
        moved(f"vllm.v1.worker.gpu.spec_decode.rejection_sampler_utils.rejection_sample ({e})")
    provided = interpreter_libdevice()
    V, Lp, p_rows = _rows(req["target"])
    _, Lq, q_rows = _rows(req["draft"])
    logp = {k: [math.log(x) if x > 0 else ZERO_LOGIT for x in r] for k, r in p_rows.items()}
    n_tok, context, use_q = int(req["tokens"]), [int(t) for t in req["context"]], bool(req["draft_probs"])
    (spec,) = req["requests"]
    K, N, seed = int(spec.get("k", 2)), int(spec["num_samples"]), int(req["seed"])
    method = v2_method(req, K)
    adaptive = req.get("adaptive")
    import inspect

    absent = sorted(set(method) - set(inspect.signature(rejection_sample).parameters))
    if absent:
        moved(f"vllm.v1.worker.gpu.spec_decode.rejection_sampler_utils.rejection_sample has no {', '.join(absent)}")
    gen = torch.Generator().manual_seed(seed)
    out: list[list[int]] = []
    t_vllm, calls, t0 = 0.0, 0, time.perf_counter()
    bs = int(req.get("batch_size", 256))
    for start in range(0, N, bs):
        live = list(range(start, min(start + bs, N)))
        emitted: dict[int, list[int]] = {r: [] for r in live}
        seeds = {r: int(torch.randint(0, 2**62, (1,), generator=gen)) for r in live}
        while live:
            drafts, logits, dprobs, positions, qs = [], [], [], [], []
            for r in live:
                ctx, d, qr = context + emitted[r], list[int](), list[list[float]]()
                for _ in range(K):
                    q = _row(q_rows, Lq, ctx + d)
                    qr.append(q)
                    d.append(int(torch.multinomial(torch.tensor(q, dtype=torch.float64), 1, generator=gen)))
                dprobs += qr
                qs.append(qr)
                drafts.append((d, ctx[-1]))
            if adaptive:  # the admitted prefix of each request's drafts (vLLM's assign_draft_token_budget)
                ms = admitted_counts([d for d, _ in drafts], [confidence(qr, d, adaptive["confidence"])
                                     for qr, (d, _) in zip(qs, drafts)], adaptive, K)  # fmt: skip
                drafts = [(d[:m], last) for (d, last), m in zip(drafts, ms)]
            for r, (d, _) in zip(live, drafts):
                ctx = context + emitted[r]
                for j in range(len(d) + 1):
                    logits.append(_row(logp, Lp, ctx + d[:j]))
                    positions.append(len(ctx) - 1 + j)
            t1 = time.perf_counter()
            toks = _v2_round(
                rejection_sample, drafts, logits, dprobs if use_q else None, [seeds[r] for r in live], positions, K, V,
                process=v2_processing(req, context, emitted, live), **method,
            )  # fmt: skip
            t_vllm += time.perf_counter() - t1
            calls += 1
            for r, t in zip(live, toks):
                emitted[r] += t
            live = [r for r in live if len(emitted[r]) < n_tok]
        out += [emitted[r][:n_tok] for r in range(start, min(start + bs, N))]
    return {
        "vllm": vllm.__version__,
        "torch": torch.__version__,
        "samples": [out],
        "seconds": {"total": round(time.perf_counter() - t0, 3), "rejection_sampler": round(t_vllm, 3), "calls": calls},
        "path": {"TRITON_INTERPRET": os.environ.get("TRITON_INTERPRET"), "runner": "v2",
                 "method": req.get("method", "token"), "interpreter_libdevice": provided,
                 "adaptive": adaptive is not None, **_device.path(DEVICE)},
    }  # fmt: skip


def has_v1() -> bool:
    """Whether the installed vLLM has the V1 RejectionSampler (0.33; 0.34 removed it)."""
    import importlib.util

    return importlib.util.find_spec("vllm.v1.sample.rejection_sampler") is not None


V2_DRIVES = "temperature 1, no top-k / top-p, one setting a batch"


def check_v2(req: dict) -> None:
    """Settings the V2 path here cannot give vLLM: the V1 RejectionSampler applied them; without it, name it."""
    specs = req["requests"]
    v2 = req.get("runner") == "v2"  # logit bias, penalties, bad words, min-p: the V2 runner's own functions
    processors = ("logit_bias", *PENALTIES)
    extra = sorted({k for s in specs for k in (*(() if v2 else processors), "pad", "zero_token", "q_row") if k in s})
    if extra:
        moved(
            f"vllm/v1/sample/rejection_sampler.py (RejectionSampler, where this driver hands vLLM {', '.join(extra)}) "
            "is not in this release; its V2 runner applies logit bias and penalties in Sampler.apply_sampling_params "
            "(--gen runner=v2 drives its apply_logit_bias / apply_penalties) and builds its draft ids in its input "
            "batch (not driven here)"
        )
    if any(s.get("min_p") for s in specs) and not v2:
        moved(
            "vllm.v1.sample.logits_processor (MinPLogitsProcessor, applied by 0.33's RejectionSampler and Sampler) "
            "is not in this release; its V2 runner applies min-p in Sampler.apply_sampling_params at every position "
            "(--gen runner=v2 drives its apply_min_p)"
        )
    if any(s.get("bad_words") for s in specs) and not v2:
        moved(
            "vllm.v1.sample.ops.bad_words (apply_bad_words_with_drafts, applied by 0.33's RejectionSampler) is not in "
            "this release; its V2 runner applies bad words in Sampler.apply_sampling_params (--gen runner=v2 drives "
            "its apply_bad_words)"
        )
    bad = len(specs) != 1 or any(
        float(s.get("temperature", 1.0)) != 1.0 or s.get("top_k") or (s.get("top_p") or 1.0) < 1.0 for s in specs
    )
    if bad:
        moved(
            "vllm/v1/sample/rejection_sampler.py (RejectionSampler, which applied temperature / top-k / top-p at "
            "the verified positions and took a mixed batch) is not in this release; its V2 runner does that in "
            f"Sampler.apply_sampling_params, which this driver does not drive (it drives rejection_sample: {V2_DRIVES})"
        )


def decode(req: dict) -> dict:
    import torch
    import vllm
    import vllm.v1.sample.ops.topk_topp_sampler as tkp
    from vllm.v1.sample.rejection_sampler import RejectionSampler
    from vllm.v1.sample.sampler import Sampler

    if req.get("topk_topp", "pytorch") == "pytorch":
        tkp.HAS_TRITON = False  # the switch vLLM reads: apply_top_k_top_p -> apply_top_k_top_p_pytorch
    if DEVICE == "cpu":  # (on cuda vLLM's CudaPlatform pins, as in its engine)
        no_pinned_memory()
    device = ON
    V, Lp, p_rows = _rows(req["target"])
    _, Lq, q_rows = _rows(req["draft"])
    logp = {k: [math.log(x) if x > 0 else ZERO_LOGIT for x in r] for k, r in p_rows.items()}
    n_tok, context, use_q = int(req["tokens"]), [int(t) for t in req["context"]], bool(req["draft_probs"])
    spec_cfg = None
    if req.get("synthetic_rates"):
        spec_cfg = SimpleNamespace(
            rejection_sample_method="synthetic", synthetic_acceptance_rates=req["synthetic_rates"]
        )
    sampler = RejectionSampler(Sampler(), spec_config=spec_cfg)
    seed = int(req["seed"])
    torch.manual_seed(seed)
    draft_gen = torch.Generator().manual_seed(seed + 1)
    specs = req["requests"]
    rows = [i for i, s in enumerate(specs) for _ in range(int(s["num_samples"]))]
    order = torch.randperm(len(rows), generator=torch.Generator().manual_seed(seed + 2)).tolist()
    rows = [rows[j] for j in order]  # the specs interleaved in the batch
    seeded = {  # (on the device, as the input batch builds a request's generator)
        r: torch.Generator(device=device).manual_seed(int(specs[s]["seed"]) + r)
        for r, s in enumerate(rows)
        if specs[s].get("seed") is not None
    }
    out: list[list[list[int]]] = [[] for _ in specs]
    bs = int(req.get("batch_size", 256))
    t_vllm = t_all = 0.0
    calls = 0
    prof = cProfile.Profile() if req.get("profile") else None
    t0 = time.perf_counter()
    for start in range(0, len(rows), bs):
        live = list(range(start, min(start + bs, len(rows))))
        emitted: dict[int, list[int]] = {r: [] for r in live}
        while live:
            drafts, logits, dprobs = [], [], []
            for r in live:
                ctx, d, spec = context + emitted[r], list[int](), specs[rows[r]]
                k, pad = int(spec.get("k", 2)), int(spec.get("pad", 0))
                for j in range(k):
                    real = [t for t in d if t >= 0]
                    logits.append(_row(logp, Lp, ctx + real))  # (after a padded slot: a row no outcome reads)
                    if j >= k - pad:  # a padded draft id, -1 (rejection_sampler.py line 931), with a zero q row
                        dprobs.append([0.0] * V)
                        d.append(-1)
                        continue
                    q = _row(q_rows, Lq, ctx + d)
                    dprobs.append(stated(q, spec))
                    d.append(int(torch.multinomial(torch.tensor(q, dtype=torch.float64), 1, generator=draft_gen)))
                logits.append(_row(logp, Lp, ctx + [t for t in d if t >= 0]))  # the bonus row
                drafts.append(d)
            meta = _metadata(drafts, device)
            sm = _sampling(
                [specs[rows[r]] for r in live],
                {i: seeded[r] for i, r in enumerate(live) if r in seeded},
                drafts,
                V,
                device,
                outputs=[emitted[r] for r in live],
                prompt=context,
            )
            lg = torch.tensor(logits, dtype=torch.float32, device=device)
            dp = torch.tensor(dprobs, dtype=torch.float32, device=device) if use_q and dprobs else None
            t1 = time.perf_counter()
            if prof is not None:
                prof.enable()
            res = sampler(meta, dp, lg, sm)
            if prof is not None:
                prof.disable()
            t_vllm += time.perf_counter() - t1
            calls += 1
            toks, _ = RejectionSampler.parse_output(res.sampled_token_ids, V)
            for r, t in zip(live, toks):
                emitted[r] += t
            live = [r for r in live if len(emitted[r]) < n_tok]
        for r in range(start, min(start + bs, len(rows))):
            out[rows[r]].append(emitted[r][:n_tok])
    t_all = time.perf_counter() - t0
    reply = {
        "vllm": vllm.__version__,
        "torch": torch.__version__,
        "samples": out,
        "seconds": {"total": round(t_all, 3), "rejection_sampler": round(t_vllm, 3), "calls": calls},
        "path": {
            "TRITON_INTERPRET": os.environ.get("TRITON_INTERPRET"),
            "HAS_TRITON_topk_topp": tkp.HAS_TRITON,
            **_device.path(DEVICE),
        },
    }
    if prof is not None:
        s = io.StringIO()
        pstats.Stats(prof, stream=s).sort_stats("cumulative").print_stats(25)
        reply["profile"] = s.getvalue()
    return reply


def main() -> None:
    global ON
    req = json.loads(sys.stdin.read())
    ON = _device.require(DEVICE)  # (cuda where this torch shows no CUDA device: exit NO_DEVICE, one line)
    if req.get("method", "token") == "token" and req.get("runner") != "v2" and has_v1():
        reply = decode(req)  # 0.33: vllm.v1.sample.rejection_sampler.RejectionSampler
    else:
        if req.get("method", "token") != "block":
            check_v2(req)
        reply = decode_v2(req)
    _driver_io.reply(reply)


if __name__ == "__main__":
    main()
