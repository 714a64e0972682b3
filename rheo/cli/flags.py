"""The flags several subcommands share, declared once (`--seed`, `--json`, `--alpha`, `--beta`,
`--workers`): the name, the type, the metavar and how the help reads live here; a subcommand says only
its default and what the value is of."""

from __future__ import annotations

from typing import Any


def seed(sp: Any, *, of: str | None = None, default: int | None = 0, required: bool = False) -> None:
    """`--seed S`: an integer seed (its range is checked by the subcommand, docs/CLI.md)."""
    text = None if of is None else f"seed of {of}" + ("" if required else f" (default {default})")
    if required:
        sp.add_argument("--seed", type=int, required=True, metavar="S", help=text)
    else:
        sp.add_argument("--seed", type=int, default=default, help=text)


def json_table(sp: Any) -> None:
    """`--json`: one JSON object on stdout instead of the table."""
    sp.add_argument("--json", action="store_true", help="print one JSON object instead of the table")


def json_file(sp: Any, *, what: str) -> None:
    """`--json FILE`: the printed table also written as JSON to FILE (checked before the work)."""
    sp.add_argument("--json", metavar="FILE", help=f"also write {what} as JSON to FILE")


def alpha(sp: Any, *, default: float, what: str) -> None:
    """`--alpha`: the false-alarm probability (a level in (0, 1))."""
    sp.add_argument("--alpha", type=float, default=default, help=f"{what} (default {default:g})")


def beta(sp: Any, *, default: float, at: str) -> None:
    """`--beta`: the miss probability at the TV the test is sized for."""
    sp.add_argument("--beta", type=float, default=default, help=f"miss probability at TV = {at} (default {default:g})")


def workers(sp: Any, *, of: str, default: int = 1) -> None:
    """`--workers`: local processes."""
    sp.add_argument("--workers", type=int, default=default, help=f"{of} (default {default})")
