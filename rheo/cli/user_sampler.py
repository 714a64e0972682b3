"""`rheo gate CASE --sampler MODULE:FUNCTION`: gate a user's own sampler, named by its import path.

`resolve("mysamplers:speculative")` imports `mysamplers` with the current directory first on
`sys.path` (as `python -m` has it) and returns the attribute after the colon (`module:Class.method`
walks the dots), checked to be a callable that takes `(case, seed, num_samples)`. What cannot be
resolved is a `CaseError` (exit 2) whose one line names the text and what is allowed; a package the
module imports that is not installed is a `MissingDependencyError` (exit 2) naming it.

`gate(args, alpha=, tv=, beta=)` runs the gate on it: the library's `check_lossless` with the flags
(`--alpha`, `--tv`, `--beta`, `--seed`, `--tokens`, `--horizon`; the library checks each), prints
the verdict as one JSON object and returns the exit status (0 pass, 1 REJECT). `add_flag(parser)`
declares `--sampler`. A decoder's own flags (`--gen`, `--rows`, `--workers` but with `--scheduler local`) are
refused with it; `--scheduler` draws its samples on a Dask cluster (`rheo.on_dask`), the module sent by value.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import inspect
import os
import re
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

from rheo.cli import flags
from rheo_ref.errors import CaseError, MissingDependencyError, RheoError
from rheo_ref.validate import show

FORM = "MODULE:FUNCTION, e.g. mysamplers:speculative (MODULE importable from the current directory)"
_DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*")


def add_flag(parser: Any) -> None:
    """`--sampler MODULE:FUNCTION` (instead of `--decoder NAME`)."""
    parser.add_argument(
        "--sampler",
        default=None,
        metavar="MODULE:FUNCTION",
        help="gate your own sampler instead of a registered decoder: FUNCTION(case, seed, num_samples) in "
        "MODULE, imported with the current directory on the path",
    )


def resolve(spec: str) -> Callable[..., Any]:
    """The callable `spec` ("module:function") names; CaseError naming what is wrong otherwise."""
    if not isinstance(spec, str):
        raise CaseError(f"--sampler {spec!r} must be text of the form {FORM}")
    module_name, colon, attr = spec.partition(":")
    if not colon or not _DOTTED.fullmatch(module_name) or not _DOTTED.fullmatch(attr):
        raise CaseError(f"--sampler {show(spec)}; allowed: {FORM}")
    here = os.getcwd()
    if here not in sys.path:  # `rheo` (the console script) starts with its own folder first, not the cwd
        sys.path.insert(0, here)
    module = _import(spec, module_name)
    obj: Any = module
    for i, part in enumerate(attr.split(".")):
        if not hasattr(obj, part):
            where = module_name if i == 0 else f"{module_name}:{'.'.join(attr.split('.')[:i])}"
            raise CaseError(f"--sampler {show(spec)}: {where} has no {part!r}; allowed: {_callables(obj)}")
        obj = getattr(obj, part)
    if not callable(obj):
        raise CaseError(f"--sampler {show(spec)} is a {type(obj).__name__}, not a function; allowed: {FORM}")
    _check_signature(spec, obj)
    return obj


def _import(spec: str, module_name: str) -> Any:
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        missing = e.name or ""
        if module_name == missing or module_name.startswith(missing + "."):  # the module itself (or its package)
            raise CaseError(
                f"--sampler {show(spec)}: no module {missing!r} in {os.getcwd()} or on the Python path; allowed: {FORM}"
            ) from None
        top = missing.partition(".")[0]
        raise MissingDependencyError(
            f"--sampler {show(spec)}: {module_name} imports {missing!r}, which is not installed (pip install {top})"
        ) from None
    except Exception as e:  # the user's module failed while it was imported
        if os.environ.get("RHEO_DEBUG"):
            raise
        raise CaseError(
            f"--sampler {show(spec)}: importing {module_name} raised {type(e).__name__}: {e} (RHEO_DEBUG=1 shows "
            "the traceback)"
        ) from None


def _callables(obj: Any) -> str:
    names = sorted(n for n in dir(obj) if not n.startswith("_") and callable(getattr(obj, n, None)))
    return ", ".join(names[:20]) + (", ..." if len(names) > 20 else "") if names else "(it defines no callable)"


def _check_signature(spec: str, fn: Callable[..., Any]) -> None:
    """A sampler is called as fn(case, seed, num_samples): refuse one that cannot take that."""
    try:
        sig = inspect.signature(fn)
    except (TypeError, ValueError):  # a builtin or extension without a signature: let the call decide
        return
    try:
        sig.bind(None, None, None)
    except TypeError:
        raise CaseError(
            f"--sampler {show(spec)} takes {sig}; a sampler takes (case, seed, num_samples) and returns "
            "num_samples token sequences"
        ) from None


def _guarded(spec: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    """The sampler, with an exception it raises reported as the sampler's (exit 2), not as rheo's bug."""

    def sample(case: Any, seed: int, num_samples: int) -> Any:
        try:
            return fn(case, seed, num_samples)
        except RheoError:
            raise
        except Exception as e:
            if os.environ.get("RHEO_DEBUG"):
                raise
            raise CaseError(
                f"--sampler {show(spec)} raised {type(e).__name__}: {e} (RHEO_DEBUG=1 shows the traceback)"
            ) from None

    return sample


NOT_WITH_SAMPLER = ("gen", "rows")  # a registered decoder's options


def gate(args: argparse.Namespace, *, alpha: float, tv: float, beta: float) -> int:
    """`rheo gate CASE --sampler MODULE:FUNCTION`: the verdict as one JSON object; 0 pass, 1 REJECT.
    `alpha`, `tv`, `beta`: the defaults of the flags left out."""
    from rheo.decoders.gate import horizon_fields, verdict_fields
    from rheo.lossless.gate import check_lossless
    from rheo_ref import strict_json
    from rheo_ref.models import load_case

    if getattr(args, "decoder", None) is not None and args.sampler is not None:
        raise CaseError(f"--decoder {show(args.decoder)} and --sampler {show(args.sampler)}: give one")
    if args.sampler is None:
        raise CaseError("rheo gate needs --decoder NAME (a registered decoder) or --sampler MODULE:FUNCTION (yours)")
    given = [f"--{k}" for k in NOT_WITH_SAMPLER if getattr(args, k, None) not in (None, [])]
    if getattr(args, "workers", 1) not in (1, None):
        given.append(f"--workers {args.workers}")
    if given:
        raise CaseError(f"--sampler with {', '.join(given)}: those are a registered decoder's; allowed with --sampler: "
                        "CASE, --alpha, --tv, --beta, --seed, --tokens, --horizon, --sequential, --plot, --scheduler, "
                        "--chunk, --workers with --scheduler local")  # fmt: skip
    if args.case is None:
        raise CaseError("rheo gate --sampler needs a CASE file (the tables your sampler's law is tested against)")
    case = load_case(args.case)
    fn = resolve(args.sampler)
    sampler = _guarded(args.sampler, fn)
    sampling = getattr(args, "sampling", None) or {"scheduler": None}
    with contextlib.ExitStack() as stack:
        if sampling["scheduler"] is not None:
            sampler = stack.enter_context(_on_cluster(fn, sampler, sampling))
        t0 = time.perf_counter()
        with flags.library_checks(flags.GATE):  # the library checks the flags, once, in their words
            res = _check(check_lossless, sampler, case, args, alpha=alpha, tv=tv, beta=beta)
        seconds = time.perf_counter() - t0
    report: dict[str, Any] = {
        "sampler": args.sampler,
        **verdict_fields(res),
        "seed": args.seed,
        "seconds": round(seconds, 3),
        **horizon_fields(res),
    }
    if sampling["scheduler"] is not None:
        report["scheduler"], report["chunk"] = sampling["scheduler"], sampling["chunk"]
    if getattr(args, "plot", None):
        from rheo.lossless.diagnosis import plot_worst

        report["plot"] = plot_worst(report, args.plot)
    print(strict_json.dumps(report))
    return 1 if res.rejected else 0


@contextlib.contextmanager
def _on_cluster(fn: Callable[..., Any], sampler: Callable[..., Any], sampling: dict) -> Iterator[Any]:
    """`--scheduler`: the sampler on the cluster (rheo.on_dask); its module goes by value (cloudpickle), so a
    remote cluster's workers need not have it on their path (what it imports, they need)."""
    import cloudpickle

    from rheo.lossless.cluster import connect, on_dask

    module = sys.modules.get(getattr(fn, "__module__", "") or "")
    if module is not None and module.__name__ != "__main__":
        cloudpickle.register_pickle_by_value(module)
    with (
        connect(sampling["scheduler"], sampling["workers"]) as client,
        on_dask(sampler, client, chunk=sampling["chunk"]) as on,
    ):
        yield on


def _check(check_lossless: Any, sampler: Any, case: Any, args: argparse.Namespace, *, alpha: float, tv: float,
           beta: float) -> Any:  # fmt: skip
    return check_lossless(
        sampler,
        case,
        alpha=alpha if args.alpha is None else args.alpha,
        tv=tv if args.tv is None else args.tv,
        beta=beta if args.beta is None else args.beta,
        seed=args.seed,
        tokens=args.tokens,
        horizon=args.horizon,
        sequential=bool(getattr(args, "sequential", False)),
    )


__all__ = ["add_flag", "gate", "resolve"]
