"""The `rheo` command line. Every subcommand prints machine-readable output where it says so;
no input gets a traceback: bad input exits with status 2 and one line naming the value and what
is allowed, a failure of the environment with 1 and one line, Ctrl-C with 130 (docs/CLI.md).
"""

from __future__ import annotations

import argparse
import importlib
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from rheo_ref import strict_json
from rheo_ref.errors import CaseError, RheoError
from rheo_ref.family import DEFAULT_FAMILIES
from rheo_ref.numbers import flag_float, flag_int
from rheo_ref.validate import integer, show

DEBUG_ENV = "RHEO_DEBUG"  # set: unexpected errors show their traceback
MAX_ARGS = 1000  # arguments on one command line (argparse's time grows with their square)
MAX_ARGV_CHARS = 1 << 20  # characters of all the arguments together

EXACT_EPILOG = """\
output (one JSON object; probabilities are exact rationals as strings; keys are comma-joined
token ids; zero entries are omitted):
  law            law of the first N tokens decoded by repeated rounds of the scheme
  target         the target law p(s_1..s_N | context) = prod p(s_i | context, s_<i)
  tv             exact total-variation distance between law and target ("0": lossless)
  tau            expected tokens emitted by the first round (from the case's context);
                 null with --method walk (it computes rounds only up to N tokens)
  round_lengths  law of the number of tokens the first round emits (1..D+1; walk: 1..N and
                 ">N" for a round that emits more)
  acceptance     one-level acceptance rate: P(some child of the root is accepted)
  method         the enumerator used (dp, classes, brute or walk; all are exact and must agree)
  enumerated     how many trees (outcomes) the enumerator visited over all rounds it needed
                 (dp: the kept trees its best-first construction branched into, before
                 merging, docs/EXACT_AT_SCALE.md; family static: brute counts joint draws of
                 the tree, classes and dp the sibling draws its subtree recursion visited,
                 docs/SCHEMES.md)
  seconds        wall time of the computation
size limits: refused up front, before any work, with the estimate: --max-trees (trees per round)
and --max-law-size (tokens in all the sequences of the N-token law, b^N x N); --force overrides both.
exit status: 0 ok, 2 bad input or a size refused as too large, 130 interrupted (docs/CLI.md)."""

# The optional packages (pyproject.toml's extras) and the extra that installs each: a subcommand
# that needs one that is not installed says so (exit 1), instead of an internal error.
EXTRAS = {
    "torch": "fast",
    "transformers": "hf",
    "gguf": "model",
    "accelerate": "model",
    "safetensors": "model",
    "dask": "sweep",
    "distributed": "sweep",
    "pyarrow": "sweep",
    "matplotlib": "notebooks",
}

# Subcommands living in other modules: each exposes register(subparsers).
PLUGINS = (
    "rheo.cli_sample",
    "rheo.cli_mutants",
    "rheo.cli_lm",
    "rheo.cli_paper",
    "rheo.cli_compare",
    "rheo.cli_hf",
    "rheo.cli_sweep",
    "rheo.cli_cases",
    "rheo.cli_served",
)


def _cmd_exact(args: argparse.Namespace) -> int:
    from rheo_ref.exact import exact_report
    from rheo_ref.models import load_case

    integer("--max-trees", args.max_trees, min=1)
    integer("--max-law-size", args.max_law_size, min=1)
    case = load_case(args.case)
    report = exact_report(
        case,
        args.method,
        args.tokens,
        max_trees=None if args.force else args.max_trees,
        max_law_size=None if args.force else args.max_law_size,
    )
    print(strict_json.dumps(report.to_json()))
    return 0


def _cmd_audit(args: argparse.Namespace) -> int:
    from .audit import run_audit

    integer("--seed", args.seed, min=0, max=2**64 - 1)
    families = None
    if args.family is not None:
        from .family import suite_families

        known = suite_families()
        for name in args.family:
            if name not in known:
                raise CaseError(f"--family {show(name)} is not a registered family; allowed: {', '.join(known)}")
        families = tuple(args.family)
    return run_audit(json_path=args.json, statistical=not args.no_stats, seed=args.seed, families=families)


class Parser(argparse.ArgumentParser):
    """argparse with a one-line usage error (`rheo exact: error: ... (see rheo exact --help)`, exit 2)
    instead of a usage block that wraps over several lines."""

    def _get_value(self, action: argparse.Action, arg_string: str) -> Any:
        """Every int and float flag reads the one number grammar (rheo_ref.numbers): ASCII digits,
        bounded length; "1_0", "١", " 1", "nan", "1e999999999" are usage errors."""
        if action.type in (int, float) and isinstance(arg_string, str):
            try:
                return (flag_int if action.type is int else flag_float)(arg_string)
            except ValueError as e:
                raise argparse.ArgumentError(action, str(e)) from None
        return super()._get_value(action, arg_string)

    def error(self, message: str) -> None:  # type: ignore[override]
        text = " ".join(message.split())
        self.exit(2, f"{self.prog}: error: {text[:500]}{'...' if len(text) > 500 else ''} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    ap = Parser(prog="rheo", description="RheoSampling: exact reference, fast path, proofs and lossless gate.")
    sub = ap.add_subparsers(dest="command", required=True, metavar="COMMAND")

    ex = sub.add_parser(
        "exact",
        help="exact output law, TV, tau of a case (section-10 JSON)",
        description="Compute exactly (Fractions) what a scheme emits on a table-model case.",
        epilog=EXACT_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    ex.add_argument("case", help="case file in the section-10 JSON format")
    ex.add_argument(
        "--method",
        choices=("dp", "classes", "brute", "walk"),
        default="dp",
        help="dp (default): kept trees built best-first and lazily, verified by a memoised recursion "
        "(family static: the subtree recursion); classes: every tree, sampled identities grouped "
        "into classes; brute: every sampled identity (static: every joint draw); walk (family rheo): "
        "the law of the first N tokens from the kept nodes of depth <= N and counts of the deeper "
        "ones, at the paper's budget (docs/EXACT_AT_SCALE.md)",
    )
    ex.add_argument("--tokens", type=int, default=None, help="number of tokens N (default: the case's `tokens`)")
    ex.add_argument(
        "--max-trees",
        type=int,
        default=2_000_000,
        help="refuse when the estimated trees per round exceed this (dp: stop when one round passes it)",
    )
    ex.add_argument(
        "--max-law-size",
        type=int,
        default=10_000_000,
        metavar="N",
        help="refuse when the N-token law's estimated size (b^N sequences x N tokens) exceeds this",
    )
    ex.add_argument("--force", action="store_true", help="run even when a size estimate exceeds its limit")
    ex.set_defaults(func=_cmd_exact)

    au = sub.add_parser(
        "audit",
        help="the main job: a matrix of schemes, exact TV, tau, enumeration sizes",
        description="Audit a built-in matrix of schemes: exact TV to the target, tau, brute vs classes "
        "enumeration sizes and times, and the fast path's statistical verdict.",
    )
    au.add_argument("--json", metavar="FILE", help="also write the table as JSON to FILE")
    au.add_argument("--no-stats", action="store_true", help="skip the fast path's statistical verdict column")
    au.add_argument("--seed", type=int, default=0, help="seed of the statistical column (default 0)")
    au.add_argument(
        "--family",
        action="append",
        metavar="NAME",
        help="audit only this family's rows (repeat for several; default: every registered family: "
        f"{', '.join(DEFAULT_FAMILIES)} and any added by rheo_ref.family.register)",
    )
    au.set_defaults(func=_cmd_audit)

    for mod in PLUGINS:
        try:
            module = importlib.import_module(mod)
        except ModuleNotFoundError as e:  # optional part not present in this checkout
            if e.name is None or not (mod == e.name or mod.startswith(e.name + ".")):
                raise
            continue
        module.register(sub)
    return ap


def _say(prefix: str, message: object) -> None:
    text = " ".join(str(message).split()) or type(message).__name__  # one line, whatever the message holds
    print(f"rheo: {prefix}: {text}", file=sys.stderr)


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def _stop_on_sigterm() -> Any:
    """SIGTERM (`timeout`, a CI runner's cancel) stops a command as Ctrl-C does, so that what it was
    doing is reported (a long exact law says where it was) instead of a silent kill. Returns the
    handler it replaced (None off the main thread, where handlers cannot be set)."""
    if threading.current_thread() is not threading.main_thread():
        return None
    return signal.signal(signal.SIGTERM, _interrupt)


def main(argv: Sequence[str] | None = None) -> int:
    """Run one subcommand; the exit status is documented in docs/CLI.md (argparse's own usage
    errors exit 2 with a usage line and an error line)."""
    _tolerant_streams()
    previous = _stop_on_sigterm()
    try:
        args_in = sys.argv[1:] if argv is None else list(argv)
        if len(args_in) > MAX_ARGS or sum(len(a) for a in args_in) > MAX_ARGV_CHARS:
            raise CaseError(
                f"{len(args_in):,} arguments of {sum(len(a) for a in args_in):,} characters; allowed: at most "
                f"{MAX_ARGS:,} arguments of {MAX_ARGV_CHARS:,} characters in all"
            )
        ap = build_parser()
        args = ap.parse_args(args_in)
        if getattr(args, "tokens", None) is not None:
            integer("--tokens", args.tokens, min=1)
        return args.func(args)
    except RheoError as e:
        _say("error", e)
        return e.exit_status
    except KeyboardInterrupt as e:  # Ctrl-C, or SIGTERM (a timeout): a long exact law says where it was
        print(f"rheo: interrupted{f': {e}' if str(e) else ''}", file=sys.stderr)
        return 130
    except BrokenPipeError:  # stdout closed early (`rheo exact ... | head`)
        _quiet_stdout()
        return 1
    except (MemoryError, RecursionError) as e:
        if os.environ.get(DEBUG_ENV):
            raise
        _say(
            "error",
            f"out of {'memory' if isinstance(e, MemoryError) else 'stack'} (a size estimate missed this "
            f"input: please report it); smaller inputs are allowed",
        )
        return 1
    except OSError as e:
        if os.environ.get(DEBUG_ENV):
            raise
        _say("error", f"{e.strerror or e}{f': {e.filename}' if e.filename else ''}")
        return 1
    except Exception as e:
        if os.environ.get(DEBUG_ENV):
            raise
        missing = e.name if isinstance(e, ModuleNotFoundError) else None
        if missing in EXTRAS:
            _say("error", f"this needs {missing}, which is not installed: pip install 'rheo[{EXTRAS[missing]}]'")
            return 1
        _say(
            "internal error",
            f"{type(e).__name__}: {e} (a bug in rheo: please report it; {DEBUG_ENV}=1 shows the traceback)",
        )
        return 1
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _tolerant_streams() -> None:
    """A terminal or pipe whose encoding cannot show a character (PYTHONIOENCODING=ascii and the α
    of a message) gets an escape (\\u03b1) instead of a UnicodeEncodeError after the work."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]
        except (AttributeError, ValueError, OSError):  # not a text file of the io module (tests capture)
            pass


def _quiet_stdout() -> None:
    """After a broken pipe, point stdout at /dev/null so that the interpreter's final flush is silent."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # not a real file (tests capture stdout)
        pass


if __name__ == "__main__":
    sys.exit(main())
