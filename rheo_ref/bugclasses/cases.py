"""A case of the bug-class decoder: draft and target tables, the prompt, how many tokens, and the
request (sampling parameters and decoder shape, `rheo_ref.bugclasses.decoder.Request`).

JSON: `{"draft": TABLE, "target": TABLE, "context": [...], "tokens": n, "request": {...}}`, the
tables in the format of docs/ALGORITHM.md §10.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..errors import CaseError
from ..laws import tv
from ..models import TableModel
from .decoder import Request
from .exact import Law, decoder_law, marginal, target_law
from .mutants import BUG_MUTANTS

MAX_TOKENS = 4


@dataclass(frozen=True)
class BugCase:
    """One case of the bug-class decoder."""

    draft: TableModel
    target: TableModel
    context: tuple[int, ...]
    tokens: int
    request: Request

    def __post_init__(self) -> None:
        if self.draft.vocab_size != self.target.vocab_size:
            raise CaseError(f"draft V={self.draft.vocab_size} and target V={self.target.vocab_size} differ")
        if not 1 <= self.tokens <= MAX_TOKENS:
            raise CaseError(f"tokens={self.tokens}; allowed: 1..{MAX_TOKENS}")

    @property
    def vocab_size(self) -> int:
        return self.target.vocab_size

    def to_json(self) -> dict:
        return {
            "draft": self.draft.to_json(),
            "target": self.target.to_json(),
            "context": list(self.context),
            "tokens": self.tokens,
            "request": self.request.to_json(),
        }

    @classmethod
    def from_json(cls, obj: dict) -> BugCase:
        if not isinstance(obj, dict) or not {"draft", "target", "request"} <= set(obj):
            raise CaseError("a bug-class case is an object with draft, target, context, tokens and request")
        return cls(
            TableModel.from_json(obj["draft"], "draft"),
            TableModel.from_json(obj["target"], "target"),
            tuple(int(t) for t in obj.get("context", [])),
            int(obj.get("tokens", 3)),
            Request.from_json(obj["request"]),
        )


def case_law(case: BugCase, mutant: str | None = None, *, first_round: bool = False) -> Law:
    """Exact law of the first `case.tokens` tokens of the decoder (or of `mutant`); `first_round`:
    of the prefill token and the first verification step's tokens."""
    c = (case.draft, case.target, case.context, case.tokens, case.request)
    if mutant is None:
        return decoder_law(*c, first_round=first_round)
    m = BUG_MUTANTS[mutant]
    m.check(case.request)
    return decoder_law(*c, m.steps, first_round=first_round)


def request_law(case: BugCase, n: int | None = None) -> Law:
    """Exact law the request asks for (the target's processed rows, token by token)."""
    return target_law(case.target, case.context, case.tokens if n is None else n, case.request)


def mutant_tvs(case: BugCase, mutant: str) -> dict[str, Fraction]:
    """Exact TV of the mutant per check: `joint<n>`, its first n tokens against the request's law;
    `round`, its first verification step against the baseline decoder's."""
    law = case_law(case, mutant)
    out = {f"joint{n}": tv(marginal(law, n), request_law(case, n)) for n in range(1, case.tokens + 1)}
    out["round"] = tv(case_law(case, mutant, first_round=True), case_law(case, first_round=True))
    return out
