"""The shape of a machine-checked claim and of its verdict.

A claim is a statement (its docstring, in the module that checks it), a method (how it is
checked: a general argument with machine-checked lemmas, a symbolic check up to a size, an exact
enumeration over generated cases, an exact counterexample) and a recorded verdict. `python -m
proofs` reruns every check and fails when a verdict differs from the recorded one, so a change
in `rheo_ref` that breaks a proved statement, or that makes a recorded counterexample stop
refuting, is caught.

Verdicts are one of three words:
- `proved`: for every input the statement quantifies over (the method says how);
- `proved up to size N`: for every input up to an explicit size, checked exhaustively or
  symbolically; beyond it only evidence;
- `refuted`: an exact counterexample (rational p and q) is attached and re-checked every run.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

from rheo_ref.errors import ProofError

PROVED = "proved"
REFUTED = "refuted"


def proved_up_to(size: str) -> str:
    return f"proved up to size {size}"


@dataclass
class Outcome:
    """What one check found: the verdict, a one-line detail and, if refuted, the counterexample."""

    verdict: str
    detail: str = ""
    counterexample: dict | None = None
    numbers: dict = field(default_factory=dict)


@dataclass(frozen=True)
class Claim:
    """One row of `python -m proofs`."""

    id: str
    statement: str
    method: str
    recorded: str
    check: Callable[[], Outcome]


@dataclass
class Result:
    claim: Claim
    outcome: Outcome
    seconds: float

    @property
    def ok(self) -> bool:
        return self.outcome.verdict == self.claim.recorded


def run_claim(claim: Claim) -> Result:
    t0 = time.perf_counter()
    try:
        outcome = claim.check()
    except ProofError as e:
        outcome = Outcome("failed", f"{e}")
    return Result(claim, outcome, time.perf_counter() - t0)


def require(cond: bool, message: str) -> None:
    """Like assert, but never stripped by -O and always a `ProofError`."""
    if not cond:
        raise ProofError(message)
