"""The `rheo` command line. Every subcommand prints machine-readable output where it says so;
no input gets a traceback: bad input exits with status 2 and one line naming the value and what
is allowed, a failure of the environment with 1 and one line, Ctrl-C with 130 (docs/CLI.md).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from collections.abc import Sequence
from typing import Any

from rheo.cli import (
    audit,
    bench_model,
    cases,
    compare,
    draft_ceiling,
    exact,
    gate,
    generate,
    greedy,
    mutants,
    paper,
    releases,
    sample,
    served,
    sweep,
    train_draft,
)
from rheo_ref.errors import CaseError, MissingDependencyError, RheoError
from rheo_ref.numbers import flag_float, flag_int
from rheo_ref.validate import integer

DEBUG_ENV = "RHEO_DEBUG"  # set: unexpected errors show their traceback
MAX_ARGS = 1000  # arguments on one command line (argparse's time grows with their square)
MAX_ARGV_CHARS = 1 << 20  # characters of all the arguments together


# The optional packages (pyproject.toml's extras) and the extra that installs each: a subcommand
# that needs one that is not installed says so (exit 2, as `MissingDependencyError`), instead of an internal error.
# Any other package that is missing (the core's own, a model package's dependency) is named too, with
# the pip line for it (`missing_package`): only a module of rheo's own is rheo's bug.
CORE = ("scipy", "numpy", "tqdm")  # pyproject.toml's dependencies (numpy comes with scipy)
OWN = ("rheo", "rheo_fast", "rheo_ref", "proofs")
EXTRAS = {
    "torch": "fast",
    "transformers": "hf",
    "gguf": "model",
    "accelerate": "model",
    "safetensors": "model",
    "dask": "dask",
    "distributed": "dask",
    "pyarrow": "sweep",
    "matplotlib": "notebooks",
}

# The subcommands, in `rheo --help`'s order: each module exposes register(subparsers).
SUBCOMMANDS = (
    exact,
    audit,
    sample,
    mutants,
    generate,
    greedy,
    bench_model,
    draft_ceiling,
    train_draft,
    paper,
    compare,
    gate,
    served,
    releases,
    sweep,
    cases,
)


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

    for module in SUBCOMMANDS:
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
        message = missing_package(e)
        if message is not None:  # the environment lacks a package: named, with its install line (exit 2)
            _say("error", message)
            return MissingDependencyError.exit_status
        _say(
            "internal error",
            f"{type(e).__name__}: {e} (a bug in rheo: please report it; {DEBUG_ENV}=1 shows the traceback)",
        )
        return 1
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def missing_package(e: BaseException) -> str | None:
    """The line naming the package an ImportError says is missing (or broken), with the install line that
    adds it; None where the module is rheo's own (a bug) or the error is not an import's."""
    if not isinstance(e, ImportError) or not e.name:
        return None
    top = e.name.partition(".")[0]
    if top in OWN:
        return None
    if not isinstance(e, ModuleNotFoundError):  # installed, but it does not import (too old, broken)
        return f"{top} is installed but cannot be imported ({e}): pip install --upgrade {top}"
    if top in EXTRAS:
        return f"this needs {top}, which is not installed: pip install 'rheo[{EXTRAS[top]}]'"
    if top in CORE:
        return (
            f"this needs {top}, which is not installed (rheo depends on it; this environment lost it): "
            f"pip install {top}, or pip install --force-reinstall rheo"
        )
    return f"this needs {top}, which is not installed: pip install {top}"


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
