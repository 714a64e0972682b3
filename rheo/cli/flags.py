"""The flags several subcommands share, declared once (`--seed`, `--json`, `--alpha`, `--beta`,
`--workers`): the name, the type, the metavar and how the help reads live here; a subcommand says only
its default and what the value is of."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from typing import Any

from rheo_ref.errors import RheoError


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


# --- the library's refusals, in the flags' words ----------------------------------------------------------

_OVERRIDES = (  # how the API says to go past a limit -> what the CLI (no --force on `rheo gate`) says
    ("a larger tv or alpha, a smaller 1 - beta, or force=True to run anyway", "a larger --tv or --alpha, or a smaller 1 - --beta"),
    ("use fewer tokens, or force=True to run anyway", "use fewer --tokens"),
    (" (force=True to run anyway)", ""),
    ("; force=True to run anyway", ""),
)  # fmt: skip


GATE = ("alpha", "tv", "beta", "seed", "tokens", "horizon")  # the gate's keywords that are flags of `rheo gate`


def flag_words(text: str, names: Sequence[str]) -> str:
    """A library refusal's text with its keywords named as the flags that carry them: `alpha=2.0` ->
    `--alpha 2.0`, `at tv 0.1` -> `at --tv 0.1`, and the API's `force=True` way past a limit dropped."""
    for api, cli in _OVERRIDES:
        text = text.replace(api, cli)
    words = "|".join(re.escape(n) for n in names)
    text = re.sub(rf"(?<![\w-])({words})=", r"--\1 ", text)
    return re.sub(rf"(?<![\w-])({words}) (?=[-+]?(\d|\.\d|inf|nan))", r"--\1 ", text)


@contextlib.contextmanager
def library_checks(names: Sequence[str]) -> Iterator[None]:
    """Run a library call whose arguments the CLI handed on unchecked: a `RheoError` it raises is raised
    again, the same class (the same exit status), its message in the flags' words (`flag_words`)."""
    try:
        yield
    except RheoError as e:
        text = flag_words(str(e), names)
        try:
            again = type(e)(text) if text != str(e) else None
        except TypeError:  # an error that carries more than its message (a verdict): left as it is
            again = None
        if again is None:
            raise
        raise again from None
