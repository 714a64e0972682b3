"""Checks of values that come from a user (a flag, a JSON field), each raising `CaseError` with
one line that names the value and what is allowed.

Names starting with "-" are flags and print as `--samples 0`; other names are fields and print as
`tokens=0`. Values are shown with `show` (a short repr: a hostile value never makes a long or
multi-line message).

    integer("--samples", n, min=1)           # an int, not a bool, in range
    index("tokens", n, min=1)                # the same, numpy / torch integers accepted (API arguments)
    number("--temperature", t, min=0)        # a finite int or float, not a bool, in range
    within_limit("trees per round", est, limit, override="--force")   # TooLargeError

A test's rates (α, β, δ) are checked in one place, `rheo.lossless.validate.rate`.
"""

from __future__ import annotations

import math
import operator
import reprlib
from collections.abc import Sequence
from typing import Any

from .errors import CaseError, TooLargeError
from .sizes import count

_SHOW = reprlib.Repr()
_SHOW.maxstring, _SHOW.maxother, _SHOW.maxlist, _SHOW.maxdict, _SHOW.maxlevel = 40, 40, 6, 4, 3
_SHOW.maxlong = 40


def show(value: Any) -> str:
    """A one-line repr of at most ~60 characters (long values are elided with '...')."""
    try:
        text = _SHOW.repr(value)
    except Exception:  # a value whose repr fails: name its type
        text = f"<{type(value).__name__}>"
    return text.replace("\n", "\\n")


def is_int(value: Any) -> bool:
    """An int and not a bool (JSON true/false must not pass as 1/0)."""
    return isinstance(value, int) and not isinstance(value, bool)


def is_bool(value: Any) -> bool:
    """A Python or numpy boolean (numpy's is no int subclass, but reads as 0/1)."""
    return isinstance(value, bool) or type(value).__name__ in ("bool_", "bool")


def index(name: str, value: Any, *, min: int | None = None, max: int | None = None, error: type = CaseError) -> int:
    """`value` as an int: an int or any integer type (numpy, torch: `__index__`), not a bool and not a
    float (even 2.0), with min <= value <= max; else `error` naming the value and what is allowed."""
    allowed = f"{label(name, value)} must be an integer {_bounds(min, max)}".rstrip()
    if is_bool(value):
        raise error(f"{allowed} (a boolean is not one)")
    try:
        i = operator.index(value)
    except TypeError:
        raise error(f"{allowed} (int or numpy/torch integer), got {type(value).__name__}") from None
    if (min is not None and i < min) or (max is not None and i > max):
        raise error(allowed)
    return i


def check_context(context: Any, vocab_size: int) -> tuple[int, ...]:
    """A context: a sequence (not a string) of integer token ids in 0..V-1, as a tuple of ints."""
    if isinstance(context, (str, bytes)) or not isinstance(context, Sequence):
        raise CaseError(f"context {show(context)} must be a sequence of token ids, got {type(context).__name__}")
    out = tuple(index(f"context token {i}", t) for i, t in enumerate(context))
    bad = next((i for i, t in enumerate(out) if not 0 <= t < vocab_size), None)
    if bad is not None:
        raise CaseError(f"context token {bad} is {out[bad]}, outside the vocabulary 0..{vocab_size - 1}")
    return out


def check_fields(obj: Any, what: str, required: Sequence[str], optional: Sequence[str] = ()) -> dict:
    """A JSON object with every required field and no unknown one; errors name both lists."""
    if not isinstance(obj, dict):
        raise CaseError(f"{what} must be a JSON object, got {type(obj).__name__}")
    allowed = f"required: {', '.join(required)}" + (f"; optional: {', '.join(optional)}" if optional else "")
    missing = [k for k in required if k not in obj]
    if missing:
        raise CaseError(f"{what} is missing {', '.join(map(repr, missing))}; {allowed}")
    unknown = sorted(set(obj) - set(required) - set(optional))
    if unknown:
        raise CaseError(f"{what} has unknown field(s) {show(unknown)}; {allowed}")
    return obj


def label(name: str, value: Any) -> str:
    """`--flag VALUE` for flags, `field=VALUE` for fields."""
    return f"{name} {show(value)}" if name.startswith("-") else f"{name}={show(value)}"


def _bounds(min: float | None, max: float | None) -> str:
    if min is not None and max is not None:
        return f"in [{min}, {max}]"
    if min is not None:
        return f">= {min}"
    if max is not None:
        return f"<= {max}"
    return ""


def integer(name: str, value: Any, *, min: int | None = None, max: int | None = None) -> int:
    """`value` as an int (a bool is not one), with min <= value <= max."""
    if not is_int(value) or (min is not None and value < min) or (max is not None and value > max):
        raise CaseError(f"{label(name, value)} must be an integer {_bounds(min, max)}".rstrip())
    return value


def number(name: str, value: Any, *, min: float | None = None, max: float | None = None) -> float:
    """`value` as a finite float (an int or float, not a bool), with min <= value <= max."""
    ok = isinstance(value, (int, float)) and not isinstance(value, bool)
    if ok:
        try:
            ok = math.isfinite(value)
        except OverflowError:  # an int too large for a float
            ok = False
    if not ok or (min is not None and value < min) or (max is not None and value > max):
        raise CaseError(f"{label(name, value)} must be a finite number {_bounds(min, max)}".rstrip())
    return float(value)


def within_limit(what: str, estimate: Any, limit: int | float | None, *, override: str) -> None:
    """Refuse work whose estimated size exceeds `limit` (None: no limit). `estimate` is a number
    or any object comparable with one whose str() reads as the estimate; `override` says how to
    run anyway (the flag)."""
    if limit is not None and estimate > limit:
        shown = count(estimate) if type(estimate) is int else str(estimate)  # an int subclass reads as itself
        lim = count(limit) if isinstance(limit, int) and not isinstance(limit, bool) else f"{limit:g}"
        raise TooLargeError(f"{what}: estimated {shown}, over the limit of {lim}; {override}")
