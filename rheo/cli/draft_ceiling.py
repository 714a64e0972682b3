"""`rheo draft-ceiling`: τ and projected speedup against draft quality, with oracle-mixed drafts (rheo_fast.lm.ceiling).

Arguments are checked before any model loads (docs/CLI.md); the shared options and checks are
`rheo.cli.lm`'s."""

from __future__ import annotations

import argparse
from typing import Any

from rheo.cli.lm import (
    _report_options,
    check_report,
    methods,
    numbers,
)


def cmd_ceiling(args: argparse.Namespace) -> int:
    check_report(args)
    numbers("--alphas", args.alphas, lo=0, hi=1)
    methods("--methods", args.methods, tree_only=True, rheo_family=True)
    from rheo_fast.lm.ceiling import run_ceiling

    return run_ceiling(args)


def register(sub: Any) -> None:
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
