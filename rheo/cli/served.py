"""`rheo gate-served CASE.json --decoder NAME`: gate a served decoder (SGLang, eagle-harness, flashspec), its
own code in its own environment (.venv-NAME, built by make), on the case's table models
(docs/THIRD_PARTY.md). One setting (`--setting` from the decoder's table, or `--gen KEY=VALUE`) prints one
JSON verdict; `--table` runs every row of the decoder's verdict table on each `--seeds` and prints the
markdown rows of docs/THIRD_PARTY.md, then the JSON records.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from rheo_ref.validate import integer


def register(subparsers: Any) -> None:
    sp = subparsers.add_parser(
        "gate-served",
        help="gate SGLang / eagle-harness / flashspec sampling code in its own environment",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sp.add_argument("case", help="case file (tables, context); tests/cases/served.json is the one in the docs")
    sp.add_argument("--decoder", required=True, metavar="NAME", help="sglang | eagle-harness | flashspec")
    sp.add_argument("--setting", default=None, help="a row of the decoder's verdict table (default: its first)")
    sp.add_argument("--gen", action="append", default=[], metavar="KEY=VALUE", help="a setting key (repeatable)")
    sp.add_argument("--table", action="store_true", help="every row of the decoder's verdict table")
    sp.add_argument("--tokens", type=int, default=3, help="tokens per sample (default 3)")
    sp.add_argument("--alpha", type=float, default=1e-3, help="false-alarm probability (default 1e-3)")
    sp.add_argument("--tv", type=float, default=0.1, help="TV detected with power 1-beta (default 0.1)")
    sp.add_argument("--beta", type=float, default=0.01, help="miss probability at TV = --tv (default 0.01)")
    sp.add_argument("--seeds", default="0,1", help="comma-separated seeds (default 0,1)")
    sp.set_defaults(func=run_gate_served)


def run_gate_served(args: argparse.Namespace) -> int:
    from rheo_ref.errors import CaseError
    from rheo_ref.models import load_case

    from ..decoders.served_gate import gate, markdown_row, served_decoder, verdict_row
    from ..lossless.stats import StatsError
    from .gate import parse_gen

    for name in ("alpha", "tv", "beta"):
        v = getattr(args, name)
        if not 0 < v < 1:
            raise StatsError(f"--{name} {v!r} must be strictly between 0 and 1")
    integer("--tokens", args.tokens, min=1, max=8)
    try:
        seeds = tuple(int(s) for s in args.seeds.split(","))
    except ValueError:
        seeds = ()
    if not seeds or any(s < 0 for s in seeds):
        raise CaseError(f"--seeds {args.seeds!r}; allowed: comma-separated integers >= 0, e.g. 0,1")
    dec = served_decoder(args.decoder)
    case = load_case(args.case)
    opts = dict(n=args.tokens, alpha=args.alpha, tv=args.tv, beta=args.beta)
    if args.table:
        rows = [verdict_row(dec, r, case, seeds=seeds, **opts) for r in dec.rows]
        for r in rows:
            print(markdown_row(r))
        for r in rows:
            print(json.dumps(r, allow_nan=False))
        return 0
    gen = parse_gen(args.gen) if args.gen else dict(dec.row(args.setting or dec.rows[0].setting).gen)
    report = gate(dec, case, gen, seed=seeds[0], **opts)
    print(json.dumps(report, allow_nan=False))
    return 0 if report["verdict"] == "pass" else 1
