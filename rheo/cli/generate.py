"""`rheo generate`: decode a prompt with SmolLM2-135M (target) and the trained draft head, streaming the text.

Arguments are checked before any model loads (docs/CLI.md); the shared options and checks are
`rheo.cli.lm`'s."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from rheo.cli import flags
from rheo.cli.lm import (
    DEFAULT_METHOD,
    _methods,
    _tree_options,
    check_run,
    check_tree,
)
from rheo_ref.errors import CaseError
from rheo_ref.validate import number


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
