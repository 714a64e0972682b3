"""`rheo bench-model`: τ, tokens/s and speedup over autoregressive decoding of every scheme on
the real models, at T in {0, 0.6, 1}, on a fixed sample of HumanEval and MT-bench prompts.

Runs are interleaved (for each T and prompt, every method in turn) so that a slow spell of a
shared machine hits all methods alike; speedups are against the autoregressive runs of the same
invocation. Writes `reports/bench_model.md` (table) and `reports/bench_model.png` (τ and speedup
per scheme), and optionally JSON.
"""
from __future__ import annotations

import json
import platform
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

import torch

from .decode import LMTreeModel, TreeSize, generate_ar, generate_tree, scheme_for
from .draft_head import load_head
from .prompts import render, sample_prompts
from .target import load_target

GOAL_TAU_RATIO = 1.03  # Rheo τ / Top-K τ at T = 1
GOAL_SPEEDUP = 1.5  # Rheo tokens/s / autoregressive tokens/s at T = 1


def _seed(*parts: Any) -> int:
    import hashlib
    return int(hashlib.sha256(repr(parts).encode()).hexdigest()[:8], 16)


def bench(methods: list[str], temps: list[float], *, per_set: int, max_new: int, size: TreeSize, S: int,
          seed: int, draft: str | None = None, progress: bool = True) -> dict[str, Any]:
    from tqdm import tqdm
    tgt = load_target()
    head, meta = load_head(draft)
    prompts = sample_prompts(per_set)
    rows: dict[tuple[str, float], dict[str, float]] = {}
    runs = []
    with tqdm(total=len(temps) * len(prompts) * len(methods), desc="bench-model", unit="run", disable=not progress) as bar:
        for T in temps:
            lm = LMTreeModel(tgt.model, head, T=T, S=S)
            for pr in prompts:
                ids = render(pr, tgt.tokenizer)
                for meth in methods:
                    g = torch.Generator().manual_seed(_seed(seed, pr.set, pr.id, T, meth))
                    if meth == "ar":
                        r = generate_ar(tgt.model, ids, T=T, max_new=max_new, generator=g, eos=tgt.eos_ids)
                    else:
                        r = generate_tree(lm, ids, scheme_for(meth, size), max_new=max_new, generator=g, eos=tgt.eos_ids)
                    acc = rows.setdefault((meth, T), {"tokens": 0, "emitted": 0, "rounds": 0, "seconds": 0.0})
                    acc["tokens"] += len(r.tokens); acc["emitted"] += r.emitted
                    acc["rounds"] += r.rounds; acc["seconds"] += r.seconds
                    runs.append({"method": meth, "T": T, "set": pr.set, "id": pr.id, "tokens": len(r.tokens),
                                 "rounds": r.rounds, "tau": r.tau, "seconds": r.seconds})
                    bar.update(1)
                    bar.set_postfix(T=T, method=meth, tau=f"{r.tau:.2f}")
    table = []
    for T in temps:
        ar = rows.get(("ar", T))
        ar_tps = ar["tokens"] / ar["seconds"] if ar else float("nan")
        for meth in methods:
            a = rows[(meth, T)]
            tps = a["tokens"] / a["seconds"]
            table.append({"method": meth, "T": T, "tau": a["emitted"] / a["rounds"], "tokens_per_s": tps,
                          "speedup": tps / ar_tps, "tokens": a["tokens"], "rounds": a["rounds"]})
    return {"size": asdict(size), "S": S, "prompts": [f"{p.set}/{p.id}" for p in prompts], "max_new_tokens": max_new,
            "threads": torch.get_num_threads(), "machine": platform.processor() or platform.machine(),
            "draft": meta, "table": table, "runs": runs}


def _cell(table: list[dict], meth: str, T: float, key: str) -> float:
    for r in table:
        if r["method"] == meth and r["T"] == T:
            return r[key]
    return float("nan")


def goals(res: dict[str, Any]) -> list[str]:
    t = res["table"]
    ratio = _cell(t, "rheo", 1.0, "tau") / _cell(t, "topk", 1.0, "tau")
    sp = _cell(t, "rheo", 1.0, "speedup")
    return [f"Rheo τ / Top-K τ at T=1: {ratio:.3f} (goal ≥ {GOAL_TAU_RATIO}): {'met' if ratio >= GOAL_TAU_RATIO else 'NOT met'}",
            f"Rheo speedup over autoregressive at T=1: {sp:.2f}x (goal ≥ {GOAL_SPEEDUP}x): {'met' if sp >= GOAL_SPEEDUP else 'NOT met'}"]


def markdown(res: dict[str, Any]) -> str:
    s = res["size"]
    lines = ["# bench-model: SmolLM2-135M-Instruct target, EAGLE-style draft head", "",
             f"Tree: K={s['K']} W={s['W']} D={s['D']} R={s['R']} (chain: D={s['chain_D']}), S={res['S']}; "
             f"{len(res['prompts'])} prompts ({', '.join(res['prompts'])}), up to {res['max_new_tokens']} new tokens each; "
             f"torch threads {res['threads']}. tokens/s exclude prefill. τ = tokens emitted per round.", "",
             "| T | method | τ | tokens/s | speedup vs AR | tokens | rounds |", "|---|---|---|---|---|---|---|"]
    for r in res["table"]:
        lines.append(f"| {r['T']:g} | {r['method']} | {r['tau']:.3f} | {r['tokens_per_s']:.2f} | {r['speedup']:.2f}x | {r['tokens']} | {r['rounds']} |")
    lines += ["", *[f"- {g}" for g in goals(res)], "",
              f"Draft head: overlap Σmin(p,q) at T=1 on held-out text {res['draft'].get('overlap_depth1', float('nan')):.3f} "
              f"(depth 2: {res['draft'].get('overlap_depth2', float('nan')):.3f}).", ""]
    return "\n".join(lines)


def plot(res: dict[str, Any], path: Path) -> None:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t = res["table"]
    methods = list(dict.fromkeys(r["method"] for r in t))
    temps = list(dict.fromkeys(r["T"] for r in t))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    w = 0.8 / len(temps)
    for ax, key, title in ((axes[0], "tau", "τ (tokens per round)"), (axes[1], "speedup", "speedup over autoregressive")):
        for i, T in enumerate(temps):
            ax.bar([j + i * w for j in range(len(methods))], [_cell(t, m, T, key) for m in methods], w, label=f"T={T:g}")
        ax.set_xticks([j + w * (len(temps) - 1) / 2 for j in range(len(methods))], methods, rotation=30)
        ax.set_title(title)
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def run_bench(args: Any) -> int:
    size = TreeSize(K=args.K, W=args.W, D=args.D, R=args.R)
    temps = [float(x) for x in args.temperatures.split(",")]
    methods = [m.strip() for m in args.methods.split(",")]
    if "ar" not in methods:
        methods = ["ar"] + methods
    for m in methods:
        scheme_for(m, size)  # validates the name
    t0 = time.perf_counter()
    res = bench(methods, temps, per_set=args.prompts, max_new=args.max_new_tokens, size=size, S=args.S,
                seed=args.seed, draft=args.draft)
    res["wall_seconds"] = time.perf_counter() - t0
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    md = markdown(res)
    (out / "bench_model.md").write_text(md)
    plot(res, out / "bench_model.png")
    if args.json:
        Path(args.json).write_text(json.dumps(res, indent=1))
    print(md)
    print(f"wrote {out / 'bench_model.md'} and {out / 'bench_model.png'}")
    return 0
