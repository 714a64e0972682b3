"""Runs inside .venv-eagle-harness: eagle-harness 0.1.3's sampled tree (`eagle_harness.core.sampled_tree`),
unmodified, on tables.

Request (JSON on stdin): target, draft (table JSON), context, tokens, num_samples, seed, gen with
temperature (T, default 1), children (k, default 2), depth (levels of the tree, default 2) and reuse_coin
(the negative control: the residual draw reuses the first child's coin). Reply: {"samples", "seconds",
"eagle_harness"}.

The package's two functions do the sampling: `draw_children(logits, token_ids, k)` draws a node's k
ordered children without replacement (Gumbel-top-k of softmax(logits), logits = log q / T) and
`reject_children(target_probs, proposals, uniforms, final_uniforms)` accepts one of them or draws the
residual token (recursive rejection, float64). The walk between nodes is the harness's (the package's own
walk is the Triton kernel `eagle_harness.kernels.sampled_tree._walk`, which triton 3.9.0's interpreter
refuses: see docs/THIRD_PARTY.md): an accepted child continues at its node, down to `depth` levels, then
a bonus token from p (torch.multinomial); a residual token ends the round. Each node's children are drawn
when the walk reaches it (the draws of nodes it never reaches do not change the law).

The device (`rheo gate --device`, `rheo.decoders.device`): cpu, the default, is the above (the Triton walk's
probe in Triton's interpreter); with cuda every tensor and the generator are on the GPU and the probe launches the
compiled walk (which still has no harness for the full tree: it ends the run after one launch). No CUDA device in
this interpreter's torch: one line, exit 2 in the gate. The reply's `path` records the device and the interpreter.
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import sys
import time

from rheo.decoders import device as _device
from rheo.decoders import driver_io as _driver_io  # first: stdout carries only the reply (module docstring)

os.environ.update(_device.settings())  # cpu: TRITON_INTERPRET=1, before triton is imported; cuda: nothing

import torch
from eagle_harness.core.sampled_tree import draw_children, reject_children

from rheo_ref.models import TableModel, context_key

DEVICE = _device.requested()
ON = _device.require(DEVICE)  # every tensor's device (cuda with no CUDA device here: exit NO_DEVICE, one line)


class Rows:
    def __init__(self, table: TableModel) -> None:
        self.table = table
        self.cache: dict[str, torch.Tensor] = {}

    def log(self, ctx: list[int]) -> torch.Tensor:
        key = context_key(ctx, self.table.context_length)
        row = self.cache.get(key)
        if row is None:
            row = self.cache[key] = torch.tensor(
                [float(x) for x in self.table.row(ctx)], dtype=torch.float64, device=ON
            ).log()
        return row


def triton_walk_probe(V: int, k: int) -> None:
    """One launch of the package's serving walk (`kernels/sampled_tree.sample_tree`) on a one-request tree:
    a root and its k children (one level), uniform p and q. triton 3.9.0's interpreter refuses it at
    kernels/sampled_tree.py line 54 (`mask has unsupported dtype`), the exception this lets through."""
    from eagle_harness.kernels.sampled_tree import sample_tree  # (cpu: TRITON_INTERPRET=1 since the start)

    W, D, slots = 1 + k, 2, 1 + k
    sample_tree(
        torch.full((1, W, V), 1.0 / V, device=ON),  # target_probs [B, W, V]
        torch.full((1, slots, V), 1.0 / V, device=ON),  # q [B, slots, candidates]
        torch.arange(V, device=ON).repeat(1, slots, 1),  # q_ids
        torch.arange(W, dtype=torch.int64, device=ON).reshape(1, W),  # positions [B, raw nodes]
        torch.ones(1, dtype=torch.bool, device=ON),  # root_valid, as SampledTree stores it
        torch.arange(W - 1, dtype=torch.int64, device=ON).reshape(1, W - 1),  # nodes [B, W - 1]
        torch.arange(W, dtype=torch.int64, device=ON).reshape(1, W) % V,  # tokens
        torch.arange(W, dtype=torch.int64, device=ON).reshape(1, W),  # retrieve_index
        torch.tensor([[1] + [-1] * k], device=ON),  # retrieve_next_token: the root's first child
        torch.tensor([[-1] + list(range(2, W)) + [-1]], device=ON),  # retrieve_next_sibling
        torch.rand(1, W, device=ON),
        torch.rand(1, device=ON),
        top_k=k,
        max_depth=D,
    )
    raise SystemExit("the Triton walk ran in the interpreter: rheo has no harness for its full tree yet")


def run(req: dict) -> dict:
    p_rows = Rows(TableModel.from_json(req["target"], "target"))
    q_rows = Rows(TableModel.from_json(req["draft"], "draft"))
    gen = req.get("gen", {})
    T = float(gen.get("temperature", 1.0))
    k, depth, reuse = int(gen.get("children", 2)), int(gen.get("depth", 2)), bool(gen.get("reuse_coin", False))
    n, num, context = int(req["tokens"]), int(req["num_samples"]), list(req["context"])
    V = p_rows.table.vocab_size
    if gen.get("walk", "core") == "triton":
        triton_walk_probe(V, k)
    g = torch.Generator(device=ON).manual_seed(int(req["seed"]))
    out: list[list[int]] = [[] for _ in range(num)]
    level = [0] * num
    t0 = time.perf_counter()
    steps = 0
    while True:
        live = [i for i in range(num) if len(out[i]) < n]
        if not live:
            break
        ctxs = [context + out[i] for i in live]
        p = torch.softmax(torch.stack([p_rows.log(c) for c in ctxs]).float() / T, dim=-1)  # [R, V]
        inner = [j for j, i in enumerate(live) if level[i] < depth]
        leaf = [j for j, i in enumerate(live) if level[i] == depth]
        if leaf:
            bonus = torch.multinomial(p[leaf], 1, generator=g).squeeze(1).tolist()  # [L]
            for j, t in zip(leaf, bonus):
                out[live[j]].append(int(t))
                level[live[j]] = 0
        if inner:
            logits = torch.stack([q_rows.log(ctxs[j]) for j in inner]).float() / T  # [R, V]
            ids = torch.arange(V, device=ON).repeat(len(inner), 1)  # [R, V]
            proposals = draw_children(logits, ids, k, generator=g)
            uniforms = torch.rand((len(inner), k), generator=g, device=ON)  # [R, k]
            final = uniforms[:, 0].clone() if reuse else torch.rand((len(inner),), generator=g, device=ON)  # [R]
            res = reject_children(p[inner], proposals, uniforms, final)
            for j, t, pos in zip(inner, res.tokens.tolist(), res.accepted_position.tolist()):
                i = live[j]
                out[i].append(int(t))
                level[i] = level[i] + 1 if pos >= 0 else 0
        steps += 1
        if steps % 20 == 0:
            print(f"eagle-harness driver: step {steps}, {num - len(live)}/{num} done", file=sys.stderr, flush=True)
    seconds = time.perf_counter() - t0
    return {
        "samples": [o[:n] for o in out],
        "seconds": seconds,
        "eagle_harness": importlib.metadata.version("eagle-harness"),
        "path": _device.path(DEVICE),
    }


def main() -> None:
    _driver_io.reply(run(json.load(sys.stdin)))


if __name__ == "__main__":
    main()
