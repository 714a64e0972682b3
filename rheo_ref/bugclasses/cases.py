"""A case of the bug-class decoder: draft and target tables, the prompt, how many tokens, and the
request (sampling parameters and decoder shape, `rheo_ref.bugclasses.decoder.Request`).

JSON: `{"draft": TABLE, "target": TABLE, "context": [...], "tokens": n, "request": {...}}`, the
tables in the format of docs/ALGORITHM.md §10.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction

from ..constraint import Constraint
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
    constraint: Constraint | None = None  # a grammar (rheo_ref.constraint); None: unconstrained

    def __post_init__(self) -> None:
        if self.constraint is not None:
            self.constraint.check_vocab(self.target.vocab_size)
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
            **({"constraint": self.constraint.to_json()} if self.constraint is not None else {}),
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
            Constraint.from_json(obj["constraint"]) if "constraint" in obj else None,
        )


def case_law(case: BugCase, mutant: str | None = None, *, first_round: bool = False, logprobs: bool = False) -> Law:
    """Exact law of the first `case.tokens` tokens of the decoder (or of `mutant`); `first_round`:
    of the prefill token and the first verification step's tokens; `logprobs`: each outcome followed
    by 1 when every reported probability is exact, else 0 (`rheo_ref.bugclasses.exact.reported_ok`)."""
    c = (case.draft, case.target, case.context, case.tokens, case.request)
    if mutant is None:
        return decoder_law(*c, first_round=first_round, constraint=case.constraint, logprobs=logprobs)
    m = BUG_MUTANTS[mutant]
    m.check(case)
    return decoder_law(*c, m.steps, first_round=first_round, constraint=case.constraint, logprobs=logprobs)


def request_law(case: BugCase, n: int | None = None) -> Law:
    """Exact law the request asks for (the target's processed rows, masked by the constraint, token
    by token)."""
    return target_law(case.target, case.context, case.tokens if n is None else n, case.request, case.constraint)


GRID = 16  # the coin grid of the `grid` check: uniforms k/16, as a replay feeding exact coins


def logprobs_law(case: BugCase, mutant: str | None = None) -> Law:
    """The `logprobs` check's law: the tokens followed by 1 (every reported probability exact) or 0;
    for `mutant` None, the request's (every report exact)."""
    if mutant is None:
        return {(*k, 1): v for k, v in request_law(case).items()}
    return case_law(case, mutant, logprobs=True)


def grid_law(case: BugCase, mutant: str | None = None) -> Law:
    """The `grid` check's law: the decoder's (or `mutant`'s) tokens with every uniform on the grid
    {k/GRID}; a correct decoder and a mutant differ there only where a coin lands on a boundary."""
    c = (case.draft, case.target, case.context, case.tokens, case.request)
    steps = () if mutant is None else (BUG_MUTANTS[mutant].steps,)
    return decoder_law(*c, *steps, constraint=case.constraint, grid=GRID)


def mutant_tvs(case: BugCase, mutant: str) -> dict[str, Fraction]:
    """Exact TV of the mutant per check: `joint<n>`, its first n tokens against the request's law;
    `round`, its first verification step against the baseline decoder's; `logprobs`, whether every
    reported probability is exact (the mass of runs with a wrong one); `grid` (boundary mutants
    only), its law on grid coins against the baseline's there."""
    law = case_law(case, mutant, logprobs=True)
    tokens = marginal(law, case.tokens)
    out = {f"joint{n}": tv(marginal(tokens, n), request_law(case, n)) for n in range(1, case.tokens + 1)}
    out["round"] = tv(case_law(case, mutant, first_round=True), case_law(case, first_round=True))
    out["logprobs"] = tv(law, logprobs_law(case))
    if BUG_MUTANTS[mutant].kind == "boundary":
        out["grid"] = tv(grid_law(case, mutant), grid_law(case))
    return out
