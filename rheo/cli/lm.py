"""Subcommands for the real models: `rheo generate`, `rheo bench-model`, `rheo draft-ceiling`, `rheo train-draft`.

Imports of torch/transformers happen inside the commands, so `rheo --help` works without them.
Every command checks its arguments first (values, sizes against their limits, output paths)
and only then loads a model: a bad argument costs milliseconds, not a model load (docs/CLI.md).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from pathlib import Path
from typing import Any

from rheo.cli import flags
from rheo_ref.atomic import check_writable
from rheo_ref.errors import CaseError
from rheo_ref.numbers import rational
from rheo_ref.sizes import available_memory, batch_bytes, gib, nodes
from rheo_ref.validate import integer, number, show, within_limit

DEFAULT_METHOD = "rheo"
MAX_CONTEXT = 8192  # SmolLM2-135M-Instruct's context window (max_position_embeddings)
VOCAB = 49152  # its vocabulary V
MAX_SEED = 2**64 - 1  # torch.Generator.manual_seed takes 64 bits
MAX_THREADS = 1024


def _methods() -> tuple[str, ...]:
    """rheo_fast.lm.methods.METHODS (a torch-free module: the CLI parser must not import torch)."""
    from rheo_fast.lm.methods import METHODS

    return METHODS


def check_tree(args: argparse.Namespace) -> None:
    """-K -W -D -R -S, --draft, and the tree's tensors ([nodes, V] float64 per round) against memory."""
    for flag in ("K", "W", "D", "R", "S"):
        integer(f"-{flag}", getattr(args, flag), min=1, max=VOCAB if flag in "KS" else MAX_CONTEXT)
    if args.draft is not None and not Path(args.draft).is_file():
        raise CaseError(
            f"--draft {show(args.draft)} is not a file; allowed: a draft head written by `rheo train-draft`"
        )
    mem = available_memory()
    if mem is not None and not getattr(args, "force", False):
        n = nodes(args.K, args.W, args.D)
        within_limit(
            f"-K {args.K} -W {args.W} -D {args.D}: bytes of one round's tree rows ({n:,} nodes x V={VOCAB:,} "
            f"x 8 bytes)",
            batch_bytes(1, n, VOCAB),
            mem,
            override=f"{gib(mem)} of memory is available; use a smaller tree, or --force to run anyway",
        )


def check_run(args: argparse.Namespace) -> None:
    """--seed, --max-new-tokens, --threads (shared by the decoding commands)."""
    integer("--seed", args.seed, min=0, max=MAX_SEED)
    if hasattr(args, "max_new_tokens"):
        integer("--max-new-tokens", args.max_new_tokens, min=1, max=MAX_CONTEXT)
    if getattr(args, "threads", None) is not None:
        integer("--threads", args.threads, min=1, max=MAX_THREADS)


def numbers(flag: str, text: str, *, lo: float, hi: float = math.inf) -> list[float]:
    """A comma-separated list of finite numbers in [lo, hi], or CaseError naming the bad item."""
    out = []
    for item in text.split(","):
        try:
            x = float(rational(item.strip(), flag))
        except (CaseError, OverflowError):
            raise CaseError(
                f"{flag} {show(text)}: {show(item.strip())} is not a number; allowed: comma-separated "
                f"numbers in [{lo:g}, {hi:g}]"
            ) from None
        if not (math.isfinite(x) and lo <= x <= hi):
            raise CaseError(f"{flag} {show(text)}: {show(item.strip())} is outside [{lo:g}, {hi:g}]")
        out.append(x)
    return out


RHEO_FAMILY = ("chain", "topk", "rheo-m0", "rheo", "rheo-m2", "rheo-rrsw")  # the draft-ceiling's methods


def methods(flag: str, text: str, *, tree_only: bool = False, rheo_family: bool = False) -> list[str]:
    """A comma-separated list of method names (tree_only: schemes that draft, not `ar`;
    rheo_family: the rheo family's methods only)."""
    allowed = [m for m in _methods() if not (tree_only and m == "ar") and not (rheo_family and m not in RHEO_FAMILY)]
    out = list(dict.fromkeys(m.strip() for m in text.split(",")))  # "ar,ar" runs ar once
    bad = [m for m in out if m not in allowed]
    if bad:
        raise CaseError(f"{flag} {show(text)}: unknown method {show(bad[0])}; allowed: {', '.join(allowed)}")
    return out


def check_schemes(names: list[str], args: argparse.Namespace) -> None:
    """Build each method's scheme from the size flags, so that a size a family refuses (e.g. R over
    its node limit) is refused before any model load (imports torch, loads no model)."""
    from rheo_fast.lm.decode import TreeSize, scheme_for

    size = TreeSize(K=args.K, W=args.W, D=args.D, R=args.R)
    for m in names:
        scheme_for(m, size)


def check_report(args: argparse.Namespace) -> None:
    """What bench-model and draft-ceiling share: sizes, the prompt count, the output paths."""
    check_tree(args)
    check_run(args)
    integer("--prompts", args.prompts, min=1, max=1000)
    check_writable(args.out, folder=True)
    if args.json is not None:
        check_writable(args.json)


def cmd_generate(args: argparse.Namespace) -> int:
    check_tree(args)
    check_run(args)
    number("--temperature", args.temperature, min=0)
    if args.raw and not args.prompt:
        raise CaseError("--prompt '' with --raw: allowed: a non-empty text (the model needs a context)")
    import torch

    from rheo_fast.lm.decode import LMTreeModel, TreeSize, describe, generate_ar, generate_tree, scheme_for
    from rheo_fast.lm.draft_head import load_head
    from rheo_fast.lm.target import load_target

    size = TreeSize(K=args.K, W=args.W, D=args.D, R=args.R)
    sc = scheme_for(args.method, size)  # a size the family refuses is refused before any model load
    if args.threads:
        torch.set_num_threads(args.threads)
    head = None if args.method == "ar" else load_head(args.draft)[0]  # fail fast, before loading the target
    if head is not None and args.K > head.cfg.draft_vocab:
        raise CaseError(f"-K {args.K} must be <= the draft head's vocabulary ({head.cfg.draft_vocab})")
    tgt = load_target()
    tok = tgt.tokenizer
    if args.raw:
        ids = tok(args.prompt)["input_ids"]
    else:
        ids = tok.apply_chat_template(
            [{"role": "user", "content": args.prompt}], tokenize=False, add_generation_prompt=True
        )
        ids = tok(ids)["input_ids"]
    gen = torch.Generator().manual_seed(args.seed)
    out: list[int] = []
    shown = [""]

    def stream(new: list[int]) -> None:
        out.extend(new)
        text = tok.decode(out, skip_special_tokens=True)
        sys.stdout.write(text[len(shown[0]) :])
        sys.stdout.flush()
        shown[0] = text

    if head is None or sc is None:  # autoregressive
        res = generate_ar(
            tgt.model,
            ids,
            T=args.temperature,
            max_new=args.max_new_tokens,
            generator=gen,
            eos=tgt.eos_ids,
            on_tokens=stream,
        )
    else:
        lm = LMTreeModel(tgt.model, head, T=args.temperature, S=args.S)
        res = generate_tree(lm, ids, sc, max_new=args.max_new_tokens, generator=gen, eos=tgt.eos_ids, on_tokens=stream)
    shape = "" if sc is None else f" {describe(sc)} S={args.S}"
    print(
        f"\n[{args.method}{shape} T={args.temperature:g}] {len(res.tokens)} tokens in {res.rounds} rounds: "
        f"τ={res.tau:.2f}, {res.tokens_per_s:.1f} tokens/s ({res.seconds:.1f} s, prefill {res.prefill_seconds:.1f} s)"
        + ("" if sc is None else f", {res.draft_forwards / max(res.rounds, 1):.2f} draft forwards per round")
    )
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    check_report(args)
    numbers("--temperatures", args.temperatures, lo=0)
    check_schemes(list(_methods()) if args.methods is None else methods("--methods", args.methods), args)
    from rheo_fast.lm.bench import run_bench

    return run_bench(args)


def cmd_ceiling(args: argparse.Namespace) -> int:
    check_report(args)
    numbers("--alphas", args.alphas, lo=0, hi=1)
    methods("--methods", args.methods, tree_only=True, rheo_family=True)
    from rheo_fast.lm.ceiling import run_ceiling

    return run_ceiling(args)


def cmd_train(args: argparse.Namespace) -> int:
    check_run(args)
    for flag in ("epochs", "windows"):
        if getattr(args, flag) is not None:
            integer(f"--{flag}", getattr(args, flag), min=1, max=1000 if flag == "epochs" else 10**9)
    # save_head creates the folder; the default is $RHEO_CACHE/draft_head.safetensors (rheo_fast.lm.target)
    default = Path(os.environ.get("RHEO_CACHE") or Path.home() / ".cache" / "rheo") / "draft_head.safetensors"
    check_writable(args.out if args.out is not None else default, parents=True)
    from rheo_fast.lm.train_draft import cmd_train_draft

    return cmd_train_draft(args)


def _report_options(p: argparse.ArgumentParser) -> None:
    """The options bench-model and draft-ceiling share: prompt sample, outputs, tree sizes, draft."""
    flags.json_file(p, what="the results")
    p.add_argument("--prompts", type=int, default=2, help="prompts per set (default 2)")
    p.add_argument("--max-new-tokens", type=int, default=48)
    p.add_argument("--out", default="reports", help="report folder (default reports/)")
    flags.seed(p, of="the decoding")
    _tree_options(p)


def _tree_options(p: argparse.ArgumentParser) -> None:
    """Tree sizes, sparse truncation and the draft head file."""
    p.add_argument("-K", type=int, default=6, help="children per expanded node (default 6)")
    p.add_argument("-W", type=int, default=4, help="frontier width (default 4)")
    p.add_argument("-D", type=int, default=4, help="tree depth (default 4)")
    p.add_argument("-R", type=int, default=16, help="draft nodes kept after rerank (default 16)")
    p.add_argument("-S", type=int, default=128, help="sparse truncation of the draft logits (default 128)")
    p.add_argument("--draft", default=None, help="draft head file (default: the cache folder)")
    p.add_argument("--force", action="store_true", help="run even when a size estimate exceeds its limit")


def register(sub: Any) -> None:
    g = sub.add_parser(
        "generate",
        help="decode with SmolLM2-135M (target) and the trained draft head",
        description="Stream text decoded by a scheme on the real models, then a one-line summary "
        "(τ = tokens per round, tokens/s).",
    )
    g.add_argument("--prompt", required=True, help="user message (chat template) or raw text with --raw")
    g.add_argument(
        "--method",
        choices=_methods(),
        default=DEFAULT_METHOD,
        help="decoding scheme (default rheo: m=1, OT verification)",
    )
    g.add_argument("--temperature", type=float, default=1.0, help="T (0 = greedy; default 1)")
    g.add_argument("--max-new-tokens", type=int, default=128)
    g.add_argument("--raw", action="store_true", help="feed the prompt as raw text (code completion), no chat template")
    flags.seed(g, of="the decoding")
    _tree_options(g)
    g.add_argument("--threads", type=int, default=None)
    g.set_defaults(func=cmd_generate)

    b = sub.add_parser(
        "bench-model",
        help="τ, tokens/s and speedup of every scheme on HumanEval + MT-bench",
        description="Benchmark schemes at T in {1, 0.5} (default) on a fixed prompt sample, the same "
        "seed per prompt for every method; τ per prompt with a 95% t interval over prompts, draft "
        "forwards and target tokens per round; writes reports/bench_model.md and reports/bench_model.png.",
    )
    b.add_argument("--temperatures", default="1,0.5", help="comma-separated T values (default 1,0.5)")
    b.add_argument(
        "--methods",
        default=None,
        help=f"comma-separated methods of {', '.join(_methods())} (default: all of them)",
    )
    _report_options(b)
    b.set_defaults(func=cmd_bench)

    c = sub.add_parser(
        "draft-ceiling",
        help="τ and projected speedup against draft quality (oracle-mixed drafts)",
        description="Decode at T = 1 with drafts q_α = trunc_S((1-α) q_head + α p) mixed with the "
        "target's own p, measure τ and the draft's overlap with p, and project the "
        "speedup over autoregressive decoding a real draft of that overlap would give "
        "(the oracle's target forwards are timed and subtracted). Writes "
        "reports/draft_ceiling.md and reports/draft_ceiling.png.",
    )
    c.add_argument("--alphas", default="0,0.25,0.5,0.75,1", help="mixing weights in [0, 1] (default 0,0.25,0.5,0.75,1)")
    c.add_argument("--methods", default="chain,topk,rheo", help="tree schemes (default chain,topk,rheo)")
    _report_options(c)
    c.set_defaults(func=cmd_ceiling)

    t = sub.add_parser(
        "train-draft",
        help="distil the EAGLE-style draft head from the target (about 14 min on 2 quiet cores)",
        description="Train the draft head reproducibly from --seed on text shipped in installed "
        "packages; writes draft_head.safetensors to $RHEO_CACHE (default ~/.cache/rheo).",
    )
    t.add_argument("--tiny", action="store_true", help="a seconds-long setting for tests")
    flags.seed(t, of="the training")
    t.add_argument("--epochs", type=int, default=None)
    t.add_argument("--windows", type=int, default=None, help="training windows of 256 tokens")
    t.add_argument("--out", default=None, help="output file (default: $RHEO_CACHE/draft_head.safetensors)")
    t.add_argument("--threads", type=int, default=None)
    t.add_argument("--quiet", action="store_true")
    t.add_argument("--force", action="store_true", help="run even when a size estimate exceeds its limit")
    t.set_defaults(func=cmd_train)
