"""Checks shared by every JSON object of a case (docs/ALGORITHM.md §10): required and optional
fields, and integers that are not booleans. Kept apart from `models` so that every scheme family's
module can use them without importing the models."""
from __future__ import annotations

from typing import Any, Sequence

from .errors import CaseError


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
        raise CaseError(f"{what} has unknown field(s) {unknown}; {allowed}")
    return obj


def is_int(value: Any) -> bool:
    """An int and not a bool (JSON true/false must not pass as 1/0)."""
    return isinstance(value, int) and not isinstance(value, bool)
