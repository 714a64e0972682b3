"""`rheo bench-model`: τ, tokens/s and speedup of every scheme on HumanEval + MT-bench (rheo_fast.lm.bench).

Arguments are checked before any model loads (docs/CLI.md); the shared options and checks are
`rheo.cli.lm`'s."""

from __future__ import annotations

import argparse
from typing import Any

from rheo.cli.lm import (
    _methods,
    _report_options,
    check_report,
    check_schemes,
    methods,
    numbers,
)


def cmd_bench(args: argparse.Namespace) -> int:
    check_report(args)
    numbers("--temperatures", args.temperatures, lo=0)
    check_schemes(list(_methods()) if args.methods is None else methods("--methods", args.methods), args)
    from rheo_fast.lm.bench import run_bench

    return run_bench(args)


def register(sub: Any) -> None:
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
