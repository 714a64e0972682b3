"""`rheo bench-model`: τ, tokens/s and speedup over autoregressive decoding of every scheme on
the real models, at T in {0, 0.6, 1}, on a fixed sample of HumanEval and MT-bench prompts.

Runs are interleaved (for each prompt, every temperature and method in turn: `timed_decodes`, the
timing loop `rheo draft-ceiling` shares) so that a slow spell of a shared machine hits all methods
alike; speedups are against the autoregressive runs of the same invocation. Writes `reports/bench_model.md` (table) and `reports/bench_model.png` (τ and speedup
per scheme), and optionally JSON.
"""

from __future__ import annotations

import math
import platform
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch

from rheo_ref import strict_json
from rheo_ref.atomic import check_writable, savefig_atomic, write_text_atomic

from .decode import METHODS, LMTreeModel, TreeSize, generate_ar, generate_tree, scheme_for
from .draft_head import load_head
from .paper_report import t_interval
from .prompts import render, sample_prompts
from .target import load_target

GOAL_TAU_RATIO = 1.03  # Rheo τ / Top-K τ at T = 1
GOAL_SPEEDUP = 1.5  # Rheo tokens/s / autoregressive tokens/s at T = 1
GOAL_BUILD_RATIO = 1.05  # Rheo (m = 1) / Top-K tree-building time per round (the paper: 13.1 vs 12.9 ms)


def _seed(*parts: Any) -> int:
    import hashlib

    return int(hashlib.sha256(repr(parts).encode()).hexdigest()[:8], 16)


COST_NODES = (1, 2, 5, 9, 17, 33)  # tokens per target forward in the cost curve (root + kept nodes)


@torch.inference_mode()
def target_cost(model: Any, prompt: list[int], nodes: tuple[int, ...] = COST_NODES, reps: int = 5) -> dict[int, float]:
    """Median ms of one target forward (and LM head) over n new tokens (chain mask) on top of the
    cached prompt, for each n: what verifying a tree of n nodes costs on this machine (n = 1: one
    autoregressive step). One warm-up pass over all sizes, then `reps` passes, sizes interleaved
    so that a slow spell hits all of them; the cache is cropped back after each forward."""
    from . import kvcache as kv

    cache = kv.new_cache(model)
    kv.forward(model, cache, torch.tensor(prompt))
    past = kv.cache_len(cache)
    ts: dict[int, list[float]] = {n: [] for n in nodes}
    for rep in range(reps + 1):
        for n in nodes:
            toks = torch.tensor((prompt * n)[-n:])  # [n] any tokens: the cost does not depend on them
            t0 = time.perf_counter()
            kv.logits_of(model, kv.forward(model, cache, toks))
            if rep:
                ts[n].append(1e3 * (time.perf_counter() - t0))
            kv.crop_to(cache, past)
    return {n: sorted(v)[len(v) // 2] for n, v in ts.items()}


@dataclass
class Loaded:
    """What a timing run decodes with: the prompts (sampled first: a bad count costs no model load), the
    draft head and its metadata, the target."""

    prompts: list[Any]
    head: Any
    meta: dict[str, Any]
    target: Any

    @classmethod
    def load(cls, per_set: int, draft: str | None) -> Loaded:
        prompts = sample_prompts(per_set)
        head, meta = load_head(draft)
        return cls(prompts, head, meta, load_target())

    def header(self, size: TreeSize, S: int, max_new: int) -> dict[str, Any]:
        """The fields every timing report starts with: the tree, the prompts, the machine, the head."""
        return {
            "size": asdict(size),
            "S": S,
            "prompts": [f"{p.set}/{p.id}" for p in self.prompts],
            "max_new_tokens": max_new,
            "threads": torch.get_num_threads(),
            "machine": platform.processor() or platform.machine(),
            "draft": self.meta,
        }


@dataclass(frozen=True)
class Cell:
    """One decoding setting of a timing run: `method` ("ar" or a tree scheme) at temperature `T` with the
    tree model `lm` (None for "ar"); `key` is what its coins depend on beside the seed and the prompt
    (cells with the same key start from the same coin stream); `tag` shows on the bar."""

    method: str
    T: float
    lm: Any = None
    key: tuple[Any, ...] = ()
    tag: str = ""


def timed_decodes(
    loaded: Loaded,
    cells: list[Cell],
    *,
    size: TreeSize,
    max_new: int,
    seed: int,
    desc: str,
    progress: bool = True,
) -> Iterator[tuple[Any, Cell, Any]]:
    """The timing loop of `bench` and `rheo_fast.lm.ceiling`: every cell on every prompt, interleaved (for
    each prompt, every cell in turn, so a slow spell of a shared machine hits every cell alike), under one
    bar. Yields (prompt, cell, the decode's result: tokens, rounds, seconds, ...)."""
    from tqdm import tqdm

    tgt = loaded.target
    with tqdm(total=len(loaded.prompts) * len(cells), desc=desc, unit="run", disable=None if progress else True) as bar:
        for pr in loaded.prompts:
            ids = render(pr, tgt.tokenizer)
            for cell in cells:
                g = torch.Generator().manual_seed(_seed(seed, pr.set, pr.id, *cell.key))
                if cell.method == "ar":
                    r = generate_ar(tgt.model, ids, T=cell.T, max_new=max_new, generator=g, eos=tgt.eos_ids)
                else:
                    scheme = scheme_for(cell.method, size)
                    r = generate_tree(cell.lm, ids, scheme, max_new=max_new, generator=g, eos=tgt.eos_ids)
                yield pr, cell, r
                bar.update(1)
                bar.set_postfix_str(f"{cell.tag} method={cell.method} tau={r.tau:.2f}".strip())


def bench(
    methods: list[str],
    temps: list[float],
    *,
    per_set: int,
    max_new: int,
    size: TreeSize,
    S: int,
    seed: int,
    draft: str | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    loaded = Loaded.load(per_set, draft)
    tgt = loaded.target
    cost = target_cost(tgt.model, render(loaded.prompts[0], tgt.tokenizer))
    lms = {T: LMTreeModel(tgt.model, loaded.head, T=T, S=S) for T in temps}
    # every method decodes a prompt at T from the same seed: the coin stream starts alike (methods consume
    # it at different rates)
    cells = [Cell(meth, T, lms[T], (T,), f"T={T:g}") for T in temps for meth in methods]
    rows: dict[tuple[str, float], dict[str, float]] = {}
    runs = []
    for pr, cell, r in timed_decodes(
        loaded, cells, size=size, max_new=max_new, seed=seed, desc="bench-model", progress=progress
    ):
        acc = rows.setdefault(
            (cell.method, cell.T),
            {
                "tokens": 0,
                "emitted": 0,
                "rounds": 0,
                "seconds": 0.0,
                "build": 0.0,
                "target": 0.0,
                "verify": 0.0,
                "draft_forwards": 0,
                "draft_calls": 0,
                "target_tokens": 0,
            },
        )
        for k in ("draft_forwards", "draft_calls", "target_tokens"):
            acc[k] += getattr(r, k)
        acc["tokens"] += len(r.tokens)
        acc["emitted"] += r.emitted
        acc["rounds"] += r.rounds
        acc["seconds"] += r.seconds
        for k, x in zip(("build", "target", "verify"), r.phase_seconds):
            acc[k] += x
        runs.append(
            {
                "method": cell.method,
                "T": cell.T,
                "set": pr.set,
                "id": pr.id,
                "tokens": len(r.tokens),
                "ended_on_eos": bool(r.tokens) and r.tokens[-1] in tgt.eos_ids,
                "rounds": r.rounds,
                "tau": r.tau,
                "seconds": r.seconds,
                "phase_seconds": list(r.phase_seconds),
                "draft_forwards": r.draft_forwards,
                "draft_calls": r.draft_calls,
                "target_tokens": r.target_tokens,
            }
        )
    table = []
    for T in temps:
        ar = rows.get(("ar", T))
        ar_tps = ar["tokens"] / ar["seconds"] if ar else float("nan")
        for meth in methods:
            a = rows[(meth, T)]
            tps = a["tokens"] / a["seconds"]
            per_round = {
                f"{k}_ms": (1e3 * a[k] / a["rounds"] if meth != "ar" else float("nan"))
                for k in ("build", "target", "verify")
            }  # mean per round (tree methods)
            lo, mid, hi = t_interval([x["tau"] for x in runs if x["method"] == meth and x["T"] == T])
            table.append(
                {
                    "method": meth,
                    "T": T,
                    "tau": a["emitted"] / a["rounds"],
                    "tau_prompt_mean": mid,
                    "tau_ci95": [lo, hi],
                    "draft_forwards_per_round": a["draft_forwards"] / a["rounds"] if meth != "ar" else 0.0,
                    "draft_calls_per_round": a["draft_calls"] / a["rounds"] if meth != "ar" else 0.0,
                    "target_tokens_per_round": a["target_tokens"] / a["rounds"],
                    "tokens_per_s": tps,
                    "speedup": tps / ar_tps,
                    "tokens": a["tokens"],
                    "rounds": a["rounds"],
                    "ms_per_round": 1e3 * a["seconds"] / a["rounds"],
                    "break_even_tau": a["seconds"] / a["rounds"] * ar_tps,  # τ at which it would match AR
                    **per_round,
                }
            )
    return {**loaded.header(size, S, max_new), "table": table, "runs": runs, "target_ms_by_nodes": cost}


def _cell(table: list[dict], meth: str, T: float, key: str) -> float:
    for r in table:
        if r["method"] == meth and r["T"] == T:
            return r[key]
    return float("nan")


def goals(res: dict[str, Any]) -> list[str]:
    t = res["table"]
    ratio = _cell(t, "rheo", 1.0, "tau") / _cell(t, "topk", 1.0, "tau")
    sp = _cell(t, "rheo", 1.0, "speedup")
    build = _cell(t, "rheo", 1.0, "build_ms") / _cell(t, "topk", 1.0, "build_ms")
    return [
        f"Rheo τ / Top-K τ at T=1: {ratio:.3f} (goal ≥ {GOAL_TAU_RATIO}): {'met' if ratio >= GOAL_TAU_RATIO else 'NOT met'}",
        f"Rheo speedup over autoregressive at T=1: {sp:.2f}x (goal ≥ {GOAL_SPEEDUP}x): {'met' if sp >= GOAL_SPEEDUP else 'NOT met'}",
        f"Tree building (draft forwards + slots + rerank) per round at T=1, Rheo / Top-K: {build:.3f} "
        f"(goal ≤ {GOAL_BUILD_RATIO}: {'met' if build <= GOAL_BUILD_RATIO else 'NOT met'})",
    ]


def markdown(res: dict[str, Any]) -> str:
    s = res["size"]
    lines = [
        "# bench-model: SmolLM2-135M-Instruct target, EAGLE-style draft head",
        "",
        f"Tree: K={s['K']} W={s['W']} D={s['D']} R={s['R']} (chain: D={s['chain_D']}), S={res['S']}; "
        f"{len(res['prompts'])} prompts ({', '.join(res['prompts'])}), up to {res['max_new_tokens']} new tokens each; "
        f"torch threads {res['threads']}. tokens/s exclude prefill. τ = tokens emitted per round.",
        "",
        "ms per round: tree building (draft forwards, slots, rerank) / target forward / verification.",
        "",
        "Break-even τ: the τ at which a scheme's rounds would match autoregressive tokens/s "
        "(ms per round × AR tokens/s); speedup = τ / break-even τ.",
        "",
        "τ per prompt: the mean over prompts of each prompt's τ, with the 95% Student t interval "
        "(mean ± t_{0.975, n-1} s/√n over the n prompts; the prompts are the sample, decoding noise "
        "included). Every method decodes a prompt from the same seed (same coin stream).",
        "",
        "Cost per round: draft forwards (head forwards; the first of a decode also feeds the prompt) "
        "and target tokens (root + verified nodes in the one target forward).",
        "",
        "| T | method | τ | τ per prompt [95% CI] | tokens/s | speedup vs AR | break-even τ | draft fwd / round "
        "| target tokens / round | tokens | rounds | ms per round: build / target / verify |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in res["table"]:
        ms = "" if r["method"] == "ar" else f"{r['build_ms']:.1f} / {r['target_ms']:.1f} / {r['verify_ms']:.1f}"
        lo, hi = r["tau_ci95"]
        lines.append(
            f"| {r['T']:g} | {r['method']} | {r['tau']:.3f} | {r['tau_prompt_mean']:.2f} [{lo:.2f}, {hi:.2f}] "
            f"| {r['tokens_per_s']:.2f} | {r['speedup']:.2f}x "
            f"| {r['break_even_tau']:.2f} | {r['draft_forwards_per_round']:.2f} | {r['target_tokens_per_round']:.1f} "
            f"| {r['tokens']} | {r['rounds']} | {ms} |"
        )
    cost = {int(n): v for n, v in res["target_ms_by_nodes"].items()}
    one = cost[min(cost)]
    lines += [
        "",
        "Target forward (with the LM head) over n new tokens on this machine, median ms "
        "(n = 1 is one autoregressive step; a round verifies R + 1 nodes):",
        "",
        "| n | " + " | ".join(str(n) for n in cost) + " |",
        "|---|" + "---|" * len(cost),
        "| ms | " + " | ".join(f"{v:.1f}" for v in cost.values()) + " |",
        "| × one step | " + " | ".join(f"{v / one:.2f}" for v in cost.values()) + " |",
    ]
    lines += [
        "",
        *[f"- {g}" for g in goals(res)],
        "",
        f"Draft head: overlap Σmin(p,q) at T=1 on held-out text {res['draft'].get('overlap_depth1', float('nan')):.3f} "
        f"(depth 2: {res['draft'].get('overlap_depth2', float('nan')):.3f}).",
        "",
    ]
    return "\n".join(lines)


def plot(res: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    t = res["table"]
    methods = list(dict.fromkeys(r["method"] for r in t))
    temps = list(dict.fromkeys(r["T"] for r in t))
    fig, axes = plt.subplots(1, 3, figsize=(16, 4))
    w = 0.8 / len(temps)
    for ax, key, title in (
        (axes[0], "tau_prompt_mean", "τ per prompt: mean and 95% t interval over prompts"),
        (axes[1], "speedup", "speedup over autoregressive"),
    ):
        for i, T in enumerate(temps):
            heights = [_cell(t, m, T, key) for m in methods]
            err = None
            if key == "tau_prompt_mean":  # asymmetric error bars from the interval (none where it is NaN)
                cis = [
                    next((r["tau_ci95"] for r in t if r["method"] == m and r["T"] == T), [math.nan] * 2)
                    for m in methods
                ]
                err = [
                    [0.0 if math.isnan(lo) else h - lo for h, (lo, _) in zip(heights, cis)],
                    [0.0 if math.isnan(hi) else hi - h for h, (_, hi) in zip(heights, cis)],
                ]
            ax.bar(
                [j + i * w for j in range(len(methods))],
                heights,
                w,
                yerr=err,
                capsize=3 if err else 0,
                label=f"T={T:g}",
            )
        ax.set_xticks([j + w * (len(temps) - 1) / 2 for j in range(len(methods))], methods, rotation=30)
        ax.set_title(title)
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.legend()
    cost = {int(n): v for n, v in res["target_ms_by_nodes"].items()}
    ax = axes[2]
    ax.plot(list(cost), list(cost.values()), "o-", label="target forward over n tokens")
    ax.axhline(cost[min(cost)], color="grey", lw=0.8, label="one autoregressive step")
    ax.set_xlabel("n (tree nodes verified)")
    ax.set_ylabel("ms")
    ax.set_title("verification cost on this machine")
    ax.legend()
    fig.tight_layout()
    savefig_atomic(fig, path, dpi=110)
    plt.close(fig)


def run_bench(args: Any) -> int:
    size = TreeSize(K=args.K, W=args.W, D=args.D, R=args.R)
    temps = [float(x) for x in args.temperatures.split(",")]
    methods = list(METHODS) if args.methods is None else [m.strip() for m in args.methods.split(",")]
    if "ar" not in methods:
        methods = ["ar"] + methods
    for m in methods:
        scheme_for(m, size)  # validates the name and the sizes, before any model load
    t0 = time.perf_counter()
    res = bench(
        methods,
        temps,
        per_set=args.prompts,
        max_new=args.max_new_tokens,
        size=size,
        S=args.S,
        seed=args.seed,
        draft=args.draft,
    )
    res["wall_seconds"] = time.perf_counter() - t0
    return write_report(res, args, "bench_model", markdown(res), lambda path: plot(res, path))


def write_report(res: dict[str, Any], args: Any, name: str, md: str, draw: Any) -> int:
    """Write `<args.out>/<name>.md` and `.png` (draw(path) makes the plot), the JSON with
    --json, and print the table. Shared by bench-model and draft-ceiling."""
    out = check_writable(args.out, folder=True)
    write_text_atomic(out / f"{name}.md", md)
    draw(out / f"{name}.png")
    if args.json:
        write_text_atomic(args.json, strict_json.dumps(res, indent=1))
    print(md)
    print(f"wrote {out / (name + '.md')} and {out / (name + '.png')} ({res['wall_seconds']:.0f} s)")
    return 0
