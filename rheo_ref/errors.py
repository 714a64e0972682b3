"""The one error hierarchy of rheo: every error we raise derives from `RheoError`.

Messages name the offending value and what is allowed, in one line, so that the CLI can print
them as they are (exit status 2) and a test can match them.
"""
from __future__ import annotations

from typing import Any


class RheoError(Exception):
    """Base class of every error raised by rheo."""


class CaseError(RheoError, ValueError):
    """A malformed case, table model or scheme (docs/ALGORITHM.md §10)."""


class TooLargeError(RheoError, ValueError):
    """An exact enumeration refused up front because it is estimated to be too large."""


class MissingDependencyError(RheoError, RuntimeError):
    """An optional package (model, prompts) that a command needs is not installed."""


class StatsError(RheoError, ValueError):
    """A bad argument to a statistical test (an error rate outside (0, 1), N < 1, ...)."""


class LosslessError(RheoError, AssertionError):
    """A statistical test rejected: the sampler's outcomes do not follow the exact law.
    `result` is the test's record (a `rheo.stats.LawTest`)."""

    def __init__(self, message: str, result: Any) -> None:
        super().__init__(message)
        self.result = result


class ProofError(RheoError, AssertionError):
    """A check of proofs/ that was expected to hold, symbolically or exactly, did not."""
