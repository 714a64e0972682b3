"""JSON that is JSON: every file and line of JSON rheo writes goes through `dumps` / `dump`.

`NaN` and `Infinity` are not JSON (RFC 8259; strict parsers, `jq` and most other languages refuse
them), yet Python's `json` writes them. A value that cannot be computed is written as `null`, with
its reason beside it under the key `<key>_reason`:

    {"per_round": NaN}  ->  {"per_round": null, "per_round_reason": "fewer than two rounds ..."}

A producer gives the reason with `undefined(reason)`: a float NaN that arithmetic, comparisons and
formatting treat as any NaN (a markdown table still prints `nan`), and that carries why. A plain
NaN or infinity gets a generic reason ("not a number", "infinite"). A value inside a list (or a
list of lists) gets `null` in place, and the list's key gets the reason with the item's index.
"""

from __future__ import annotations

import json
import math
from typing import IO, Any


class Undefined(float):
    """A NaN that says why the value could not be computed."""

    reason: str

    def __new__(cls, reason: str) -> Undefined:
        out = super().__new__(cls, "nan")
        out.reason = reason
        return out

    def __repr__(self) -> str:
        return f"undefined({self.reason!r})"


def undefined(reason: str) -> float:
    """NaN carrying `reason` (written as null plus the reason by `dumps`)."""
    return Undefined(reason)


def _why(x: float) -> str:
    if isinstance(x, Undefined):
        return x.reason
    return "not a number (NaN)" if math.isnan(x) else f"{'minus ' if x < 0 else ''}infinite"


def _bad(x: Any) -> bool:
    return isinstance(x, float) and not math.isfinite(x)


def _inside(items: list | tuple, at: str = "") -> list[tuple[str, str]]:
    """(index, reason) of every non-finite float in a list, nested lists included ("2.0")."""
    out = []
    for i, x in enumerate(items):
        if _bad(x):
            out.append((f"{at}{i}", _why(x)))
        elif isinstance(x, (list, tuple)):
            out += _inside(x, f"{at}{i}.")
    return out


def clean(obj: Any) -> Any:
    """`obj` with every non-finite float replaced by None and its reason put beside it."""
    if isinstance(obj, dict):
        out: dict = {}
        for k, v in obj.items():
            if _bad(v):
                out[k], reason = None, _why(v)
            elif isinstance(v, (list, tuple)):
                out[k] = clean(v)
                reason = "; ".join(f"item {i}: {why}" for i, why in _inside(v))
            else:
                out[k], reason = clean(v), ""
            if reason:
                key = f"{k}_reason"
                if key in obj:
                    raise ValueError(f"cannot write the reason for {k!r}: the object already has a key {key!r}")
                out[key] = reason
        return out
    if isinstance(obj, (list, tuple)):
        return [None if _bad(x) else clean(x) for x in obj]
    if _bad(obj):
        raise ValueError(f"a bare {obj!r} has no key to put its reason beside; wrap it in an object")
    return obj


def dumps(obj: Any, **kwargs: Any) -> str:
    """`json.dumps` of `clean(obj)`, refusing anything that would still not be JSON."""
    return json.dumps(clean(obj), allow_nan=False, **kwargs)


def dump(obj: Any, fh: IO[str], **kwargs: Any) -> None:
    """`json.dump` of `clean(obj)` into `fh`."""
    json.dump(clean(obj), fh, allow_nan=False, **kwargs)
