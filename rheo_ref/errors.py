"""The one error hierarchy of rheo: every error we raise derives from `RheoError`.

Messages name the offending value and what is allowed, in one line, so that the CLI can print
them as they are (exit status 2) and a test can match them.
"""
from __future__ import annotations


class RheoError(Exception):
    """Base class of every error raised by rheo."""


class CaseError(RheoError, ValueError):
    """A malformed case, table model or scheme (docs/ALGORITHM.md §10)."""


class RheoTypeError(RheoError, TypeError):
    """An argument of the wrong type."""


class TooLargeError(RheoError, ValueError):
    """An exact enumeration refused up front because it is estimated to be too large."""


class MissingDependencyError(RheoError, RuntimeError):
    """An optional package (model, prompts) that a command needs is not installed."""
