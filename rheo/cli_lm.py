"""Subcommands for the real models: `rheo generate`, `rheo bench-model`, `rheo draft-ceiling`, `rheo train-draft`.

Imports of torch/transformers happen inside the commands, so `rheo --help` works without them.
"""
from __future__ import annotations

import argparse
import sys
from typing import Any

DEFAULT_METHOD = "rheo"


def _methods() -> tuple[str, ...]:
    return ("ar", "chain", "topk", "rheo-m0", "rheo", "rheo-m2", "rheo-rrsw")


def cmd_generate(args: argparse.Namespace) -> int:
    import torch
    from rheo_fast.lm.decode import LMTreeModel, TreeSize, generate_ar, generate_tree, scheme_for
    from rheo_fast.lm.draft_head import load_head
    from rheo_fast.lm.target import load_target

    if args.temperature < 0:
        print(f"rheo generate: --temperature {args.temperature} must be >= 0", file=sys.stderr)
        return 2
    if args.threads:
        torch.set_num_threads(args.threads)
    head = None if args.method == "ar" else load_head(args.draft)[0]  # fail fast, before loading the target
    tgt = load_target()
    tok = tgt.tokenizer
    if args.raw:
        ids = tok(args.prompt)["input_ids"]
    else:
        ids = tok.apply_chat_template([{"role": "user", "content": args.prompt}], tokenize=False, add_generation_prompt=True)
        ids = tok(ids)["input_ids"]
    size = TreeSize(K=args.K, W=args.W, D=args.D, R=args.R)
    gen = torch.Generator().manual_seed(args.seed)
    out: list[int] = []
    shown = [""]

    def stream(new: list[int]) -> None:
        out.extend(new)
        text = tok.decode(out, skip_special_tokens=True)
        sys.stdout.write(text[len(shown[0]):])
        sys.stdout.flush()
        shown[0] = text

    sc = scheme_for(args.method, size)
    if head is None or sc is None:  # autoregressive
        res = generate_ar(tgt.model, ids, T=args.temperature, max_new=args.max_new_tokens, generator=gen,
                          eos=tgt.eos_ids, on_tokens=stream)
    else:
        lm = LMTreeModel(tgt.model, head, T=args.temperature, S=args.S)
        res = generate_tree(lm, ids, sc, max_new=args.max_new_tokens, generator=gen,
                            eos=tgt.eos_ids, on_tokens=stream)
    shape = "" if sc is None else f" K={sc.K} m={sc.m} W={sc.W} D={sc.D} R={sc.R} S={args.S} verify={sc.verify}"
    print(f"\n[{args.method}{shape} T={args.temperature:g}] {len(res.tokens)} tokens in {res.rounds} rounds: "
          f"τ={res.tau:.2f}, {res.tokens_per_s:.1f} tokens/s ({res.seconds:.1f} s, prefill {res.prefill_seconds:.1f} s)")
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from rheo_fast.lm.bench import run_bench
    return run_bench(args)


def cmd_ceiling(args: argparse.Namespace) -> int:
    from rheo_fast.lm.ceiling import run_ceiling
    return run_ceiling(args)


def cmd_train(args: argparse.Namespace) -> int:
    from rheo_fast.lm.train_draft import cmd_train_draft
    return cmd_train_draft(args)


def _report_options(p: argparse.ArgumentParser) -> None:
    """The options bench-model and draft-ceiling share: prompt sample, outputs, tree sizes, draft."""
    p.add_argument("--json", metavar="FILE", help="also write the results as JSON")
    p.add_argument("--prompts", type=int, default=2, help="prompts per set (default 2)")
    p.add_argument("--max-new-tokens", type=int, default=48)
    p.add_argument("--out", default="reports", help="report folder (default reports/)")
    p.add_argument("--seed", type=int, default=0)
    _tree_options(p)


def _tree_options(p: argparse.ArgumentParser) -> None:
    """Tree sizes, sparse truncation and the draft head file."""
    p.add_argument("-K", type=int, default=6, help="children per expanded node (default 6)")
    p.add_argument("-W", type=int, default=4, help="frontier width (default 4)")
    p.add_argument("-D", type=int, default=4, help="tree depth (default 4)")
    p.add_argument("-R", type=int, default=16, help="draft nodes kept after rerank (default 16)")
    p.add_argument("-S", type=int, default=128, help="sparse truncation of the draft logits (default 128)")
    p.add_argument("--draft", default=None, help="draft head file (default: the cache folder)")


def register(sub: Any) -> None:
    g = sub.add_parser("generate", help="decode with SmolLM2-135M (target) and the trained draft head",
                       description="Stream text decoded by a scheme on the real models, then a one-line summary "
                                   "(τ = tokens per round, tokens/s).")
    g.add_argument("--prompt", required=True, help="user message (chat template) or raw text with --raw")
    g.add_argument("--method", choices=_methods(), default=DEFAULT_METHOD, help="decoding scheme (default rheo: m=1, OT verification)")
    g.add_argument("--temperature", type=float, default=1.0, help="T (0 = greedy; default 1)")
    g.add_argument("--max-new-tokens", type=int, default=128)
    g.add_argument("--raw", action="store_true", help="feed the prompt as raw text (code completion), no chat template")
    g.add_argument("--seed", type=int, default=0)
    _tree_options(g)
    g.add_argument("--threads", type=int, default=None)
    g.set_defaults(func=cmd_generate)

    b = sub.add_parser("bench-model", help="τ, tokens/s and speedup of every scheme on HumanEval + MT-bench",
                       description="Benchmark every scheme at T in {0, 0.6, 1} on a fixed prompt sample; writes "
                                   "reports/bench_model.md and reports/bench_model.png.")
    b.add_argument("--temperatures", default="0,0.6,1.0")
    b.add_argument("--methods", default=",".join(_methods()))
    _report_options(b)
    b.set_defaults(func=cmd_bench)

    c = sub.add_parser("draft-ceiling", help="τ and projected speedup against draft quality (oracle-mixed drafts)",
                       description="Decode at T = 1 with drafts q_α = trunc_S((1-α) q_head + α p) mixed with the "
                                   "target's own p, measure τ and the draft's overlap with p, and project the "
                                   "speedup over autoregressive decoding a real draft of that overlap would give "
                                   "(the oracle's target forwards are timed and subtracted). Writes "
                                   "reports/draft_ceiling.md and reports/draft_ceiling.png.")
    c.add_argument("--alphas", default="0,0.25,0.5,0.75,1", help="mixing weights in [0, 1] (default 0,0.25,0.5,0.75,1)")
    c.add_argument("--methods", default="chain,topk,rheo", help="tree schemes (default chain,topk,rheo)")
    _report_options(c)
    c.set_defaults(func=cmd_ceiling)

    t = sub.add_parser("train-draft", help="distil the EAGLE-style draft head from the target (about 14 min on 2 quiet cores)",
                       description="Train the draft head reproducibly from --seed on text shipped in installed "
                                   "packages; writes draft_head.safetensors to $RHEO_CACHE (default ~/.cache/rheo).")
    t.add_argument("--tiny", action="store_true", help="a seconds-long setting for tests")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--epochs", type=int, default=None)
    t.add_argument("--windows", type=int, default=None, help="training windows of 256 tokens")
    t.add_argument("--out", default=None, help="output file (default: $RHEO_CACHE/draft_head.safetensors)")
    t.add_argument("--threads", type=int, default=None)
    t.add_argument("--quiet", action="store_true")
    t.set_defaults(func=cmd_train)
