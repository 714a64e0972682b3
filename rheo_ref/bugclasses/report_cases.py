"""Hand-written cases for the served-decoder classes (15–27, docs/GATE_REFERENCE.md "Bug classes"), each
modelled on what its reports needed: every setting on (`settings`), a top-p cut-off between tied
tokens (`ties`), a grammar (`grammar`), dyadic rows so a coin can land on a cumulative sum
(`boundary`), a draft tree (`tree`). They are the "before" of `rheo mutants --fewest` for those classes (the seam classes
1–14 have the case library); `REPORT_CASE[kind]` names the case of each mutant kind.
"""

from __future__ import annotations

from fractions import Fraction

from ..constraint import Constraint
from ..models import TableModel
from .cases import BugCase
from .decoder import Request

F = Fraction
_DRAFT = {(): [4, 3, 2, 1], (0,): [1, 4, 3, 2], (1,): [2, 2, 4, 2], (2,): [3, 1, 1, 5], (3,): [2, 5, 1, 2]}
_TARGET = {(): [3, 3, 2, 2], (0,): [2, 3, 4, 1], (1,): [4, 1, 3, 2], (2,): [1, 4, 2, 3], (3,): [3, 2, 2, 3]}
# dyadic rows (weights summing to 8): cumulative sums on the grid {k/16}
_DRAFT_DYADIC = {(): [4, 2, 0, 2], (0,): [0, 4, 2, 2], (1,): [2, 2, 4, 0], (2,): [2, 0, 2, 4], (3,): [4, 0, 2, 2]}
_TARGET_DYADIC = {(): [0, 4, 2, 2], (0,): [2, 2, 4, 0], (1,): [4, 0, 2, 2], (2,): [0, 2, 2, 4], (3,): [2, 4, 2, 0]}
# a grammar of three states: 0 allows {0, 1, 2}, 1 allows {2, 3}, 2 allows {0, 3}
GRAMMAR = Constraint.from_json(
    {"allowed": [[0, 1, 2], [2, 3], [0, 3]], "next": [{"0": 1, "1": 2, "2": 0}, {"2": 2, "3": 0}, {"0": 0, "3": 1}]}
)


def _table(w: dict, name: str) -> TableModel:
    return TableModel.from_weights(w, context_length=1, name=name)


def report_cases() -> dict[str, BugCase]:
    draft, target = _table(_DRAFT, "draft"), _table(_TARGET, "target")
    every = Request(
        temperature=F(1),
        top_k=2,
        top_p=F(4, 5),
        penalty=F(1, 2),
        gamma=2,
        min_p=F(0),
        presence=F(1, 2),
        repetition=2,
        bias=((1, F(1, 2)),),
        order="sglang",
    )
    return {
        "settings": BugCase(draft, target, (0,), 3, every),
        # ties: target rows with two tokens tied across top-p's cut-off (ascending 2, 2, 3, 3 of 10)
        "ties": BugCase(
            draft,
            _table({k: [2, 2, 3, 3] if k in ((), (1,)) else [3, 2, 2, 3] for k in _TARGET}, "target"),
            (0,),
            3,
            Request(top_p=F(7, 10), gamma=2),
        ),
        "grammar": BugCase(draft, target, (0,), 3, Request(gamma=2), GRAMMAR),
        # tree: two branches of one draft token each (their bonus rows are the nodes' own rows)
        "tree": BugCase(draft, target, (0,), 3, Request(gamma=1, verify="tree")),
        "boundary": BugCase(_table(_DRAFT_DYADIC, "draft"), _table(_TARGET_DYADIC, "target"), (0,), 3, Request()),
    }


def report_batch() -> tuple[list[BugCase], list[int]]:
    """The batch classes' report batch: three requests of V = 3, 2 tokens, γ = 1, each with its own
    tables and temperature (the last at T = 1/2, so a padding temperature shows), and their seeds."""
    t = lambda w, n, L=0: TableModel.from_weights(w, context_length=L, name=n)
    third_q = {(): [1, 2, 1], (0,): [2, 1, 1], (1,): [1, 1, 2], (2,): [1, 3, 0]}
    third_p = {(): [1, 1, 2], (0,): [1, 3, 0], (1,): [3, 1, 0], (2,): [0, 1, 3]}
    cases = [
        BugCase(
            t({(): [3, 1, 2]}, "draft"), t({(): [1, 2, 3]}, "target"), (), 2, Request(temperature=F(1, 2), gamma=1)
        ),
        BugCase(t({(): [1, 1, 2]}, "draft"), t({(): [2, 1, 1]}, "target"), (), 2, Request(gamma=1)),
        BugCase(t(third_q, "draft", 1), t(third_p, "target", 1), (0,), 2, Request(temperature=F(1, 2), gamma=1)),
    ]
    return cases, [11, 22, 33]


# the report case of each mutant kind (`rheo_ref.bugclasses.mutants.BugMutant.kind`) but the seams
REPORT_CASE = {
    "setting": "settings",
    "grammar": "grammar",
    "logprobs": "settings",
    "boundary": "boundary",
    "control": "settings",
    "tree": "tree",
}
CASE_OF = {"cutoff-tie-over-accepted": "ties"}  # a mutant whose reports needed their own case
