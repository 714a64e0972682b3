"""docs/ECOSYSTEM.md's verdict table, written from the decoders' own verdict tables.

    python -m rheo.decoders.ecosystem NAME [NAME ...] [--seeds 1,2] [--doc docs/ECOSYSTEM.md]

runs every row of each decoder's table (as `rheo gate --decoder NAME --rows all --seeds 1,2` does:
`rheo.decoders.rows.run_row`, the table's case, tokens, α and δ) and rewrites that decoder's lines of the
table between `BEGIN` and `END`, keeping the other packages' lines, in the registry's order. One command
per package refreshes its rows. `tests/decoders/test_ecosystem.py` checks that the table matches the
registry: every package's settings, versions, causes and exact TVs as the registry computes them now, and
verdicts as the exact TV promises.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "ECOSYSTEM.md"
BEGIN = "<!-- verdict table: python -m rheo.decoders.ecosystem NAME rewrites a package's rows -->"
END = "<!-- end of the verdict table -->"
HEAD = "| package | version | setting | verdict (seeds 1, 2) | exact TV | N | cause |\n|---|---|---|---|---|---|---|"
COLUMNS = ("package", "version", "setting", "verdict", "exact TV", "N", "cause")


def exact_cell(exact_tv_float: float | None) -> str:
    return "—" if exact_tv_float is None else ("0" if exact_tv_float == 0 else f"{exact_tv_float:.4g}")


def line(r: dict[str, Any]) -> str:
    """One record of `run_row` as a line of the table."""
    if "not_run" in r:
        verdict, n, cause = "cannot run", "-", r["error"] or r["not_run"]
    else:
        verdict = ", ".join(f"**{v}**" if v == "REJECT" else v for v in r["verdicts"])
        n, cause = str(r["N"]), r["cause"] or "-"
    cells = (r["package"], r["version"], r["setting"], verdict, exact_cell(r["exact_tv_float"]), n, cause)
    return "| " + " | ".join(str(c).replace("|", "\\|") for c in cells) + " |"


def split(text: str) -> tuple[str, list[str], str]:
    """(before, the table's body lines, after) of the doc."""
    if BEGIN not in text or END not in text:
        raise SystemExit(f"the doc has no verdict table between {BEGIN!r} and {END!r}")
    head, rest = text.split(BEGIN, 1)
    table, tail = rest.split(END, 1)
    body = [ln for ln in table.strip().splitlines()[2:] if ln.startswith("|")]
    return head, body, tail


def cells(ln: str) -> dict[str, str]:
    """A body line's cells by column name."""
    parts = [c.strip().replace("\\|", "|") for c in ln.strip().strip("|").split(" | ")]
    if len(parts) != len(COLUMNS):
        raise ValueError(f"a verdict-table line has {len(parts)} cells, not {len(COLUMNS)}: {ln!r}")
    return dict(zip(COLUMNS, parts, strict=True))


def rows_of(text: str) -> list[dict[str, str]]:
    return [cells(ln) for ln in split(text)[1]]


def rewrite(text: str, package: str, lines: list[str]) -> str:
    """The doc with `package`'s lines replaced by `lines` (placed in the registry's order)."""
    from rheo.decoders import decoders

    head, body, tail = split(text)
    order = [d.package for d in decoders().values() if d.package]
    kept = [ln for ln in body if cells(ln)["package"] != package] + lines
    rank = {p: i for i, p in enumerate(order)}
    kept.sort(key=lambda ln: rank.get(cells(ln)["package"], len(order)))  # stable: a package's rows keep theirs
    return f"{head}{BEGIN}\n{HEAD}\n" + "".join(f"{ln}\n" for ln in kept) + f"{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    from rheo.decoders import DecoderRun, decoders
    from rheo.decoders.rows import run_row

    ap = argparse.ArgumentParser(prog="python -m rheo.decoders.ecosystem", description=__doc__.split("\n\n")[0])
    ap.add_argument("names", nargs="+", metavar="NAME", help="registered decoders (rheo gate --help)")
    ap.add_argument("--seeds", default="1,2", help="comma-separated seeds (default 1,2)")
    ap.add_argument("--doc", type=Path, default=DOC)
    args = ap.parse_args(argv)
    seeds = tuple(int(s) for s in args.seeds.split(","))
    ok = True
    for name in args.names:
        dec = decoders()[DecoderRun.head(name)]
        if dec.table is None or not dec.package:
            raise SystemExit(f"decoder {name!r} has no verdict table or no package")
        records = [run_row(dec, row, dec.table, seeds=seeds) for row in dec.table.rows]
        ok &= all(r["as_expected"] for r in records)
        for r in records:
            print(line(r), flush=True)
        args.doc.write_text(rewrite(args.doc.read_text(encoding="utf-8"), dec.package, [line(r) for r in records]))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
