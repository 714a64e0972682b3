"""`rheo gate-served CASE.json --decoder NAME`: a thin alias of `rheo gate` for the served decoders (vLLM,
SGLang, eagle-harness, flashspec: their own code in their own environment .venv-NAME, built by make;
docs/THIRD_PARTY.md). `--setting S` gates one row of the decoder's verdict table on the case (`--gen
KEY=VALUE` a setting of your own; neither: the table's first row) and prints one JSON verdict, as `rheo gate
CASE --decoder NAME --gen ...`; `--table` is `rheo gate --decoder NAME --rows all CASE --seeds ...`.
"""

from __future__ import annotations

import argparse
from typing import Any


def register(subparsers: Any) -> None:
    sp = subparsers.add_parser(
        "gate-served",
        help="alias of rheo gate for the served decoders (vLLM / SGLang / eagle-harness / flashspec)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    sp.add_argument("case", help="case file (tables, context); tests/cases/served.json is the one in the docs")
    sp.add_argument("--decoder", required=True, metavar="NAME", help="a served decoder (rheo gate --help)")
    sp.add_argument("--setting", default=None, help="a row of the decoder's verdict table (default: its first)")
    sp.add_argument("--gen", action="append", default=[], metavar="KEY=VALUE", help="a setting key (repeatable)")
    sp.add_argument("--table", action="store_true", help="every row of the decoder's verdict table")
    sp.add_argument("--tokens", type=int, default=None, help="tokens per sample (default 3; --table: the rows')")
    sp.add_argument("--alpha", type=float, default=None, help="false-alarm probability (default 1e-3)")
    sp.add_argument("--tv", type=float, default=None, help="TV detected with power 1-beta (default 0.1)")
    sp.add_argument("--beta", type=float, default=None, help="miss probability at TV = --tv (default 0.01)")
    sp.add_argument("--seeds", default="0,1", help="comma-separated seeds (default 0,1; one gate: the first)")
    sp.set_defaults(func=run_gate_served)


def run_gate_served(args: argparse.Namespace) -> int:
    from rheo.decoders import DecoderRun, decoders
    from rheo_ref.errors import CaseError

    from .gate import parse_seeds, run_gate_hf

    served = [n for n, d in decoders().items() if d.env is not None]
    entry = decoders().get(DecoderRun.head(args.decoder))
    if entry is None or entry.env is None:
        raise CaseError(f"served decoder {args.decoder!r}; allowed: {', '.join(served)}")
    seeds = parse_seeds(args.seeds)
    gate = argparse.Namespace(
        case=args.case, decoder=entry.name, alpha=args.alpha, tv=args.tv, beta=args.beta, workers=1, seed=seeds[0],
        tokens=None, horizon=None, plot=None, json=None, seeds=None, gen=[], rows=None,
    )  # fmt: skip
    if args.table:
        if args.setting is not None or args.gen or args.tokens is not None:
            raise CaseError(
                "--table runs every row with its own setting and tokens; allowed: no --setting/--gen/--tokens"
            )
        gate.rows, gate.seeds = "all", args.seeds
    elif args.gen:
        if args.setting is not None:
            raise CaseError(f"--setting {args.setting!r} and --gen: give one")
        gate.gen, gate.tokens = list(args.gen), 3 if args.tokens is None else args.tokens
    else:
        if entry.table is None:
            raise CaseError(f"decoder {entry.name} declares no verdict table; allowed: --gen KEY=VALUE")
        row = entry.table.row(args.setting) if args.setting else entry.table.rows[0]
        gate.gen = [f"{k}={_text(v)}" for k, v in row.gen.items()]
        gate.tokens = 3 if args.tokens is None else args.tokens
    return run_gate_hf(gate)


def _text(value: Any) -> str:
    from rheo_ref import strict_json

    return value if isinstance(value, str) else strict_json.dumps(value)
