"""What the real-model subcommands share (`rheo generate`, `rheo bench-model`, `rheo draft-ceiling`,
`rheo train-draft`, one module each in `rheo.cli`): their limits, tree and report options and checks.

Imports of torch/transformers happen inside the commands, so `rheo --help` works without them.
Every command checks its arguments first (values, sizes against their limits, output paths)
and only then loads a model: a bad argument costs milliseconds, not a model load (docs/CLI.md).
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

from rheo.cli import flags
from rheo_ref.atomic import check_writable
from rheo_ref.errors import CaseError
from rheo_ref.numbers import rational
from rheo_ref.sizes import available_memory, batch_bytes, gib, nodes
from rheo_ref.validate import integer, show, within_limit

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
