"""Runs inside .venv-flashspec: flashspec 0.3.1's `SpeculativeEngine.generate`, unmodified, on TableLMs.

Request (JSON on stdin): target, draft (table JSON), context, tokens, num_samples, seed, gen with
gamma (default 3), temperature (default 1), top_p (default 1), top_k (handed to SamplingConfig like
any other key: pydantic's default `extra="ignore"` drops it), variant ("rejection" or "typical") and
batch (1: the batch-1 fast path, `_generate_single` with `rejection_step`; B > 1: the context loop
`_generate_generic` with `rejection_sample` / `typical_sample`, B copies of the context per call).
Reply: {"samples", "seconds", "flashspec", "path"}.

The models are rheo's `TableLM`s (transformers models whose law is a table, `rheo_fast.table_lm`),
injected into flashspec's own wrappers (`HuggingFaceDrafter(model=...)`, `TargetModel(model=...)`). One
model drafter and `drafter_strategy="bandit"` with one arm: the drafter is that model at `gamma` (the
default "auto" strategy adds an n-gram lookup drafter, whose law depends on the context's repeats).
`sampling.seed` is None, so flashspec draws from torch's global generator, seeded once here.
Releases before 0.3.1 (0.2.0, 0.3.0) require the bandit selector as an argument: the driver passes the one-arm
`UCB1Selector(n_arms=1, window_size=config.bandit.window_size)` that 0.3.1 builds itself when it is left out
(engine/speculative.py 0.3.1 lines 429-439); 0.1.3 and 0.1.4 have no engine/hf_drafter.py.

The device (`rheo gate --device`, `rheo.decoders.device`; flashspec runs no Triton kernel here, so nothing is set
before its import): cpu, the default, is the above; with cuda the config, the wrappers, both TableLMs and the
context are on the GPU. No CUDA device in this interpreter's torch: one line, exit 2 in the gate. The reply's
`path` records the loop, the device and the interpreter (never: TRITON_INTERPRET is not set here).
"""

from __future__ import annotations

import importlib.metadata
import inspect
import json
import sys
import time

from rheo.decoders import driver_io as _driver_io  # first: stdout carries only the reply (its docstring)

# isort: split
import torch
from flashspec.engine.hf_drafter import HuggingFaceDrafter
from flashspec.engine.speculative import SpeculativeEngine
from flashspec.engine.verifier import TargetModel
from flashspec.utils.config import BanditConfig, FlashSpecConfig, SamplingConfig

from rheo.decoders import device as _device
from rheo_fast.table_lm import table_lm
from rheo_ref.models import TableModel

DEVICE = _device.requested()

SAMPLING_KEYS = ("gamma", "temperature", "top_p", "top_k", "variant")


def engine_for(req: dict, n: int) -> SpeculativeEngine:
    gen = req.get("gen", {})
    sampling = {k: gen[k] for k in SAMPLING_KEYS if k in gen}
    sampling.setdefault("gamma", 3)
    T = float(sampling.get("temperature", 1.0))
    config = FlashSpecConfig(
        drafter_name="table-draft",
        target_name="table-target",
        device=DEVICE,
        dtype="float32",
        max_new_tokens=n,
        drafter_strategy="bandit",
        compile=False,
        bandit=BanditConfig(n_arms=1),
        sampling=SamplingConfig(**sampling),
    )
    on = _device.require(DEVICE)  # (cuda with no CUDA device here: exit NO_DEVICE, one line)
    draft = table_lm(TableModel.from_json(req["draft"], "draft")).to(on)
    target = table_lm(TableModel.from_json(req["target"], "target")).to(on)
    drafter = HuggingFaceDrafter("table-draft", DEVICE, torch.float32, temperature=T, model=draft)
    verifier = TargetModel("table-target", on, torch.float32, model=target)
    bandit = inspect.signature(SpeculativeEngine).parameters.get("bandit")
    if bandit is not None and bandit.default is inspect.Parameter.empty:  # 0.2.0, 0.3.0: a selector is required
        from flashspec.bandit.ucb import UCB1Selector  # the one-arm selector 0.3.1 builds itself when none is given

        return SpeculativeEngine(
            config, [drafter], verifier, UCB1Selector(n_arms=1, window_size=config.bandit.window_size)
        )
    return SpeculativeEngine(config, [drafter], verifier)


def run(req: dict) -> dict:
    n, num, context = int(req["tokens"]), int(req["num_samples"]), list(req["context"])
    batch = int(req.get("gen", {}).get("batch", 1))
    torch.manual_seed(int(req["seed"]))
    engine = engine_for(req, n)
    out: list[list[int]] = []
    t0 = time.perf_counter()
    last = t0
    while len(out) < num:
        b = min(batch, num - len(out))
        ids = torch.tensor([context] * b, dtype=torch.int64, device=DEVICE)  # [b, L]
        res = engine.generate(ids, max_new_tokens=n)
        for row in res.output_ids.tolist():  # [b, new tokens], -1 after a row's end
            out.append([int(t) for t in row if t >= 0][:n])
        if time.perf_counter() - last > 5:
            last = time.perf_counter()
            print(f"flashspec driver: {len(out)}/{num} samples", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - t0
    short = [o for o in out if len(o) < n]
    if short:
        raise SystemExit(f"flashspec returned {len(short[0])} tokens, fewer than {n}: {short[0]}")
    return {
        "samples": out,
        "seconds": seconds,
        "flashspec": importlib.metadata.version("flashspec"),
        "path": {
            "loop": "_generate_single + rejection_step" if batch == 1 else "_generate_generic",
            **_device.path(DEVICE),
        },
    }


def main() -> None:
    _driver_io.reply(run(json.load(sys.stdin)))


if __name__ == "__main__":
    main()
