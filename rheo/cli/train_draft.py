"""`rheo train-draft`: distil the EAGLE-style draft head from the target (rheo_fast.lm.train_draft).

Arguments are checked before any model loads (docs/CLI.md); the shared options and checks are
`rheo.cli.lm`'s."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from rheo.cli import flags
from rheo.cli.lm import (
    check_run,
)
from rheo_ref.atomic import check_writable
from rheo_ref.validate import integer


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


def register(sub: Any) -> None:
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
