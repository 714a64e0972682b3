"""Runs inside .venv-sglang: SGLang 0.5.23's `chain_speculative_sampling_triton`, unmodified, on tables.
Earlier releases that ship the kernel are driven as their own verify runs it: 0.5.14-0.5.21 compute the target
probs with `F.softmax(logits / T)` (no `sglang.kernels.ops.sampling.softmax` yet), 0.5.14 and 0.5.15 keep the
kernel in `sglang/srt/speculative/reject_sampling.py`, and before 0.5.22 it has no `block_verification` (a
block row exits with status MOVED naming it).

Request (JSON on stdin): target, draft (table JSON), context, tokens, num_samples, seed, sampling_params
(SGLang `SamplingParams` keywords of SGLang's own processors, below; absent: none), gen with
temperature (T, default 1), num_steps (draft tokens a round, default 3), block_verification (default
false), threshold_single / threshold_acc (passed through as SGLang's verify passes them), and
draft_temperature (the temperature the candidates are drawn at; default T: the negative control sets
it apart from the T of the draft probabilities handed to the kernel), zero_token (the stated q of this token
set to 0 after the candidates are drawn, the row not renormalised) and q_row (zero, nan: every stated q
row). Reply: {"samples": [[tokens]], "seconds": wall time, "sglang": version}.

What runs as SGLang's EAGLE verify runs it (`sglang/srt/speculative/eagle_utils.py`, `eagle_sample`,
rejection-sampling branch): target probs from `sglang.kernels.ops.sampling.softmax(logits,
temperatures)` (on CPU: logits / T, then torch.softmax), coins `torch.rand` in [0, 1), then
`chain_speculative_sampling_triton(...)` with `TRITON_INTERPRET=1` (Triton's CPU interpreter; set here
before triton is imported). The draft side (SGLang's draft worker) is the harness: candidates are drawn
with torch.multinomial from the draft probs at `draft_temperature`. A chain of num_steps drafts is one
round; the samples of a batch run as the batch's rows, one kernel launch per round.

SGLang's own processors (`sampling_params` in the request: a request's logit bias, penalties, min-p as SGLang's
`SamplingParams` carries them, one request per sample): its penalizer classes (`BatchedPenalizerOrchestrator`
with `BatchedFrequencyPenalizer`, `BatchedPresencePenalizer`, `BatchedRepetitionPenalizer`,
`BatchedMinNewTokensPenalizer`, the set `SamplingBatchInfo.from_schedule_batch` builds) and
`apply_scaling_penalties`, unmodified. What calls them is written here from SGLang's lines, because the
modules that hold those lines need the whole server (`managers/schedule_batch.py` imports transformers,
`sampling_batch_info.from_schedule_batch` reads the server's global config): once a round, before the
verify, each request's last output token (`origin_input_ids[-1]` before any) is fed to the penalizers
(`ScheduleBatch.cumulate_penalty_output_tokens`, lines 3715-3734, called by `eagle_prepare_for_decode`);
the accumulated penalties are read as `SamplingBatchInfo.update_penalties` reads them (lines 409-424),
and added to every draft position of the round as `eagle_sample` does (eagle_utils.py lines 562-584:
additive, scaling, then the logit bias tensor `from_schedule_batch` builds, lines 174-196). `min_p` is
in the request's `SamplingParams`, which the verify never reads. These are 0.5.23's lines; 0.5.21 and 0.5.22 have
the same penaltylib (byte for byte) and the same calls at other line numbers; before 0.5.21 the path exits
MOVED (not read there). The case's context is a request one
token into its output: its last token is the first output token, the rest the prompt.

The device (`rheo gate --device`, `rheo.decoders.device`): cpu, the default, is the above; with cuda
TRITON_INTERPRET is not set, every tensor (and the drafter's and the coins' generators) is on the GPU, and
`chain_speculative_sampling_triton` and the top-k / top-p rows' `renorm_triton` kernels (the functions SGLang binds
on ROCm; on CUDA its engine binds FlashInfer's, not installed in .venv-sglang) run compiled. No CUDA device in this
interpreter's torch: one line, exit 2 in the gate. The reply's `path` records the device and the interpreter.
"""

from __future__ import annotations

import os

from rheo.decoders import device as _device
from rheo.decoders import driver_io as _driver_io  # first: stdout carries only the reply (module docstring)

os.environ.update(_device.settings())  # cpu: TRITON_INTERPRET=1, before triton is imported; cuda: nothing

import importlib.metadata
import inspect
import json
import math
import sys
import time

import torch

from rheo_ref.models import TableModel, context_key

DEVICE = _device.requested()
ON = _device.require(DEVICE)  # every tensor's device (cuda with no CUDA device here: exit NO_DEVICE, one line)

RELEASE = tuple(int(x) for x in importlib.metadata.version("sglang").split(".")[:3] if x.isdigit())  # (0, 5, 23)
if RELEASE >= (0, 5, 22):  # eagle_utils.py computes the target probs with this kernel (0.5.22 line 979)
    from sglang.kernels.ops.sampling import softmax as sglang_softmax
else:  # 0.5.14-0.5.21: eagle_utils.py computes F.softmax(logits / T) itself (0.5.21 lines 926-928)
    sglang_softmax = None
if RELEASE >= (0, 5, 16):
    from sglang.kernels.ops.speculative.reject_sampling import chain_speculative_sampling_triton
else:  # 0.5.14, 0.5.15(.post1): the same kernel under sglang/srt/speculative/
    from sglang.srt.speculative.reject_sampling import chain_speculative_sampling_triton

MOVED = 3  # rheo.decoders.served.MOVED: the installed release lacks a piece this driver drives


class Rows:
    """Float log-rows of a table, by context key (logits: log p, -inf where p = 0)."""

    def __init__(self, table: TableModel) -> None:
        self.table = table
        self.cache: dict[str, torch.Tensor] = {}

    def logits(self, ctx: list[int]) -> torch.Tensor:
        key = context_key(ctx, self.table.context_length)
        row = self.cache.get(key)
        if row is None:
            row = torch.tensor([float(x) for x in self.table.row(ctx)], dtype=torch.float64, device=ON).log().float()
            self.cache[key] = row
        return row


def probs(rows: Rows, ctxs: list[list[int]], temperature: float) -> torch.Tensor:
    logits = torch.stack([rows.logits(c) for c in ctxs])  # [R, V]
    temps = torch.full((len(ctxs), 1), temperature, dtype=torch.float32, device=ON)  # [R, 1]
    if sglang_softmax is None:  # 0.5.14-0.5.21's verify: F.softmax(next_token_logits / expanded_temperature)
        return torch.softmax(logits / temps, dim=-1)  # [R, V]
    return sglang_softmax(logits, temperatures=temps)  # [R, V]


def renorm(target: torch.Tensor, gen: dict) -> torch.Tensor:
    """top-k then top-p renormalisation as eagle_utils.py (lines 728-743) applies it, with the functions
    `sglang.kernels.ops.sampling.renorm` binds on ROCm (renorm_triton's; on CPU renorm.py binds None).
    On CPU tensors they raise ValueError("renorm kernels require a CUDA/HIP tensor"), renorm_triton.py
    line 58: the driver lets that error end the run."""
    if gen.get("top_k") is None and gen.get("top_p") is None:
        return target
    from sglang.kernels.ops.sampling.renorm_triton import top_k_renorm_probs_triton, top_p_renorm_probs_triton

    B, S, V = target.shape
    flat = target.reshape(B * S, V)  # [B*S, V]
    if gen.get("top_k") is not None:
        flat = top_k_renorm_probs_triton(flat, torch.full((B * S,), int(gen["top_k"]), device=ON))
    if gen.get("top_p") is not None:
        flat = top_p_renorm_probs_triton(flat, torch.full((B * S,), float(gen["top_p"]), device=ON))
    return flat.reshape(B, S, V)


class Own:
    """SGLang's own processors of one batch of identical requests (module docstring)."""

    def __init__(self, params: dict, num: int, context: list[int], vocab_size: int) -> None:
        from sglang.srt.sampling.penaltylib import (
            BatchedFrequencyPenalizer,
            BatchedMinNewTokensPenalizer,
            BatchedPenalizerOrchestrator,
            BatchedPresencePenalizer,
            BatchedRepetitionPenalizer,
        )
        from sglang.srt.sampling.penaltylib.repetition_penalty import apply_scaling_penalties
        from sglang.srt.sampling.sampling_params import SamplingParams

        self.apply_scaling_penalties = apply_scaling_penalties
        sp = SamplingParams(**params)
        sp.verify(vocab_size)
        self.reqs = [_Req(sp, context[:-1], context[-1:]) for _ in range(num)]
        self.device = ON  # what the orchestrator reads of the batch: reqs, device
        penalizers = {BatchedFrequencyPenalizer, BatchedMinNewTokensPenalizer, BatchedPresencePenalizer,
                      BatchedRepetitionPenalizer}  # fmt: skip
        self.orchestrator = BatchedPenalizerOrchestrator(vocab_size, self, penalizers)
        self.bias = None
        if sp.logit_bias is not None:  # from_schedule_batch lines 174-196: one row per request
            self.bias = torch.zeros(num, vocab_size, device=ON)
            for token, value in {int(k): v for k, v in sp.logit_bias.items()}.items():
                self.bias[:, token] = value
        self.V = vocab_size

    def cumulate(self) -> None:
        """`ScheduleBatch.cumulate_penalty_output_tokens` (lines 3715-3734): each request's last output token."""
        if not self.orchestrator.is_required:
            return
        last = [r.output_ids[-1] if len(r.output_ids) else r.origin_input_ids[-1] for r in self.reqs]
        self.orchestrator.cumulate_output_tokens(torch.tensor(last, dtype=torch.int64, device=ON))

    def apply(self, logits: torch.Tensor, live: list[int], S: int) -> None:
        """eagle_sample lines 562-584 on the live requests' [B*S, V] logits, in place."""
        index = torch.tensor(live, dtype=torch.int64, device=ON)
        if self.orchestrator.is_required:  # SamplingBatchInfo.update_penalties (lines 409-424)
            additive = torch.zeros((len(self.reqs), self.V), dtype=torch.float32, device=ON)
            self.orchestrator.accumulate_additive_penalties(additive)
            scaling = self.orchestrator.accumulate_scaling_penalties()
            logits.add_(torch.repeat_interleave(additive[index], S, dim=0))
            if scaling is not None:
                self.apply_scaling_penalties(logits, torch.repeat_interleave(scaling[index], S, dim=0))
        if self.bias is not None:
            logits.add_(torch.repeat_interleave(self.bias[index], S, dim=0))


class _Req:
    """What the penalizers and `cumulate_penalty_output_tokens` read of a request (`Req`)."""

    def __init__(self, sampling_params: object, origin_input_ids: list[int], output_ids: list[int]) -> None:
        self.sampling_params = sampling_params
        self.origin_input_ids = list(origin_input_ids)
        self.output_ids = list(output_ids)


def run(req: dict) -> dict:
    p_rows = Rows(TableModel.from_json(req["target"], "target"))
    q_rows = Rows(TableModel.from_json(req["draft"], "draft"))
    gen = req.get("gen", {})
    T = float(gen.get("temperature", 1.0))
    T_draw = float(gen.get("draft_temperature", T))
    gamma = int(gen.get("num_steps", 3))
    zero_token = gen.get("zero_token")
    block = bool(gen.get("block_verification", False))
    thr_single = float(gen.get("threshold_single", 1.0))
    thr_acc = float(gen.get("threshold_acc", 1.0))
    n, num, context = int(req["tokens"]), int(req["num_samples"]), list(req["context"])
    own = (
        None
        if req.get("sampling_params") is None
        else Own(req["sampling_params"], num, context, p_rows.table.vocab_size)
    )
    gen_rng = torch.Generator(device=ON).manual_seed(int(req["seed"]))
    torch.manual_seed(int(req["seed"]) + 1)  # the coins: torch.rand, as _verify_coins draws them unseeded
    out: list[list[int]] = [[] for _ in range(num)]
    t0 = time.perf_counter()
    rounds = 0
    while True:
        live = [i for i in range(num) if len(out[i]) < n]
        if not live:
            break
        B, S = len(live), gamma + 1
        ctx0 = [context + out[i] for i in live]
        drafts: list[list[int]] = [[] for _ in live]
        draft_probs = torch.empty(B, gamma, p_rows.table.vocab_size, device=ON)  # [B, γ, V]
        for j in range(gamma):
            ctxs = [c + d for c, d in zip(ctx0, drafts)]
            draw = probs(q_rows, ctxs, T_draw)  # [B, V]: what the candidates are drawn from
            draft_probs[:, j] = draw if T_draw == T else probs(q_rows, ctxs, T)  # [B, V]: what the kernel is told
            if zero_token is not None:  # a probability that underflowed: stated 0, the row not renormalised
                draft_probs[:, j, zero_token] = 0.0
            picked = torch.multinomial(draw, 1, generator=gen_rng).squeeze(1).tolist()  # [B]
            for d, x in zip(drafts, picked):
                d.append(int(x))
        if own is None:
            target = torch.stack(
                [probs(p_rows, [c + d[:j] for c, d in zip(ctx0, drafts)], T) for j in range(S)], dim=1
            )  # [B, S, V]
        else:  # eagle_prepare_for_decode's cumulate, then eagle_sample's processing of the logits, then softmax
            own.cumulate()
            logits = torch.stack(
                [torch.stack([p_rows.logits(c + d[:j]) for j in range(S)]) for c, d in zip(ctx0, drafts)]
            )
            flat = logits.reshape(B * S, -1).clone()  # [B*S, V]
            own.apply(flat, live, S)
            temps = torch.full((B * S, 1), T, dtype=torch.float32, device=ON)  # expanded_temperature
            target = sglang_softmax(flat, temperatures=temps) if sglang_softmax else torch.softmax(flat / temps, -1)
            target = target.reshape(B, S, -1)  # [B, S, V]
        target = renorm(target, gen)  # [B, S, V]
        if gen.get("q_row") is not None:  # a degenerate drafter's rows: all 0 or all NaN
            draft_probs.fill_(0.0 if gen["q_row"] == "zero" else math.nan)
        last = [c[-1] if c else 0 for c in ctx0]
        candidates = torch.tensor([[r, *d] for r, d in zip(last, drafts)], dtype=torch.int64, device=ON)  # [B, S]
        retrive_index = torch.arange(B * S, dtype=torch.int64, device=ON).reshape(B, S)  # [B, S]
        predicts = torch.zeros(B * S, dtype=torch.int32, device=ON)  # [B*S]
        accept_index = torch.full((B, S), -1, dtype=torch.int32, device=ON)  # [B, S]
        accept_num = torch.zeros(B, dtype=torch.int32, device=ON)  # [B]
        coins = torch.rand_like(candidates, dtype=torch.float32)  # [B, S], as eagle_utils._verify_coins
        coins_final = torch.rand((B,), dtype=torch.float32, device=ON)  # [B]
        chain_speculative_sampling_triton(
            predicts=predicts,
            accept_index=accept_index,
            accept_token_num=accept_num,
            candidates=candidates,
            retrive_index=retrive_index,
            retrive_next_token=None,
            retrive_next_sibling=None,
            uniform_samples=coins,
            uniform_samples_for_final_sampling=coins_final,
            target_probs=target,
            draft_probs=draft_probs,
            threshold_single=thr_single,
            threshold_acc=thr_acc,
            deterministic=True,
            **({"block_verification": block} if BLOCK_KEY else {}),
        )
        pred, acc, num_acc = predicts.tolist(), accept_index.tolist(), accept_num.tolist()
        for b, i in enumerate(live):
            emitted = [pred[acc[b][j]] for j in range(num_acc[b] + 1)]
            out[i].extend(emitted)
            if own is not None:
                own.reqs[i].output_ids.extend(emitted)
        rounds += 1
        done = sum(1 for o in out if len(o) >= n)
        print(f"sglang driver: round {rounds}, {done}/{num} samples done", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - t0
    return {
        "samples": [o[:n] for o in out],
        "seconds": seconds,
        "rounds": rounds,
        "sglang": importlib.metadata.version("sglang"),
        "triton": importlib.metadata.version("triton"),
        "ms_per_sample": 1000 * seconds / max(num, 1) if not math.isnan(seconds) else None,
        "path": _device.path(DEVICE),
    }


BLOCK_KEY = "block_verification" in inspect.signature(chain_speculative_sampling_triton).parameters  # 0.5.22 on


OWN_FROM = (0, 5, 21)  # the releases whose eagle_sample and penaltylib the own-processor path follows (read: the same)


def main() -> None:
    req = json.load(sys.stdin)
    if req.get("sampling_params") is not None and RELEASE < OWN_FROM:
        _driver_io.reply({"missing": "the own-processor path (a request's min-p, logit bias, penalties) "
                                     "follows eagle_sample and penaltylib of 0.5.21-0.5.23; this release's are not "
                                     "read"})  # fmt: skip
        raise SystemExit(MOVED)
    if req.get("gen", {}).get("block_verification") and not BLOCK_KEY:
        _driver_io.reply({"missing": "chain_speculative_sampling_triton has no block_verification "
                                     "(added in 0.5.22)"})  # fmt: skip
        raise SystemExit(MOVED)
    _driver_io.reply(run(req))


if __name__ == "__main__":
    main()
