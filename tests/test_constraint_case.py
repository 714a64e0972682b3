"""A grammar constraint on the main `Case` format (docs/PROCESSING.md, "Grammars"): the case's
JSON carries it, `rheo.target_law` (the law the gate tests against) is the masked, renormalised
target exactly, and bad automata are refused with the value and what is allowed.

- The masked law equals the bug-class reference's (rheo_ref.bugclasses.exact.target_law: the same
  tables, no processing, the same constraint), a second implementation of the same definition;
  every sequence it gives mass to follows the grammar.
- `rheo.check_lossless` on a constrained case passes a sampler of the masked target and rejects
  one of the unmasked target (the exact TV between them is stated, α = 1e-6, δ = that TV / 2).
"""

from __future__ import annotations

import random
from dataclasses import replace
from fractions import Fraction

import pytest

import rheo
from rheo_ref.bugclasses.decoder import Request
from rheo_ref.bugclasses.exact import target_law as reference_masked_law
from rheo_ref.constraint import Constraint
from rheo_ref.errors import CaseError
from rheo_ref.exact import Exact
from rheo_ref.laws import tv
from rheo_ref.models import Case, TableModel

GRAMMAR = {
    "allowed": [[0, 1, 2], [2, 3], [0, 3]],
    "next": [{"0": 1, "1": 2, "2": 0}, {"2": 2, "3": 0}, {"0": 0, "3": 1}],
}
DRAFT = {(): [4, 3, 2, 1], (0,): [1, 4, 3, 2], (1,): [2, 2, 4, 2], (2,): [3, 1, 1, 5], (3,): [2, 5, 1, 2]}
TARGET = {(): [3, 3, 2, 2], (0,): [2, 3, 4, 1], (1,): [4, 1, 3, 2], (2,): [1, 4, 2, 3], (3,): [3, 2, 2, 3]}


def _case(constraint: dict | None = GRAMMAR, tokens: int = 3) -> Case:
    obj = {
        "draft": TableModel.from_weights(DRAFT, context_length=1, name="draft").to_json(),
        "target": TableModel.from_weights(TARGET, context_length=1, name="target").to_json(),
        "scheme": {"K": 3, "m": 1, "W": 2, "D": 2, "R": 4, "proxy": "rheo", "verify": "rheo"},
        "context": [0],
        "tokens": tokens,
    }
    if constraint is not None:
        obj["constraint"] = constraint
    return Case.from_json(obj)


def test_the_case_json_carries_the_constraint():
    case = _case()
    assert case.constraint == Constraint.from_json(GRAMMAR)
    assert Case.from_json(case.to_json()) == case and case.to_json()["constraint"] == GRAMMAR
    assert "constraint" not in _case(None).to_json()


def test_the_target_law_is_the_masked_renormalised_target():
    case = _case()
    law = rheo.target_law(case)
    ref = reference_masked_law(case.target, case.context, case.tokens, Request(), case.constraint)
    assert law == ref and sum(law.values()) == 1
    g = case.constraint
    for seq in law:
        s = 0
        for t in seq:
            assert t in g.allowed[s]
            s = g.step(s, t)
    # the first token: target after 0 is (2, 3, 4, 1)/10, state 0 allows {0, 1, 2}: (2, 3, 4)/9
    assert rheo.target_law(case, 1) == {(0,): Fraction(2, 9), (1,): Fraction(3, 9), (2,): Fraction(4, 9)}
    assert tv(law, rheo.target_law(_case(None))) > 0


@pytest.mark.parametrize(
    ("constraint", "match"),
    [
        ({"allowed": [[0, 1]], "next": [{"0": 0, "1": 3}]}, "unknown state 3; states are 0..0"),
        ({"allowed": [[0], []], "next": [{"0": 1}, {}]}, r"state 1 allows no token and is reached .* by tokens \[0\]"),
        ({"allowed": [[0, 7]], "next": [{"0": 0, "7": 0}]}, r"token ids \[7\] are outside the vocabulary 0..3"),
        ({"allowed": [[0, 1]], "next": [{"0": 0}]}, r"`next` covers tokens \[0\], `allowed` is \[0, 1\]"),
        ({"allowed": [[0]], "next": [{"0": 0}, {}]}, "one `next` map per state"),
        ({"allowed": [[0, True]], "next": [{"0": 0}]}, "lists of token ids"),
        ({"allowed": [[0]], "next": [{"x": 0}]}, 'allowed: "token": state'),
        ({"allowed": [[0, 0]], "next": [{"0": 0}]}, "distinct token ids"),
        ([[0]], "a constraint is an object"),
    ],
)
def test_bad_automata_are_refused(constraint, match):
    with pytest.raises(CaseError, match=match):
        _case(constraint)


def test_an_unreachable_empty_state_is_allowed():
    case = _case({"allowed": [[0, 1, 2, 3], []], "next": [{"0": 0, "1": 0, "2": 0, "3": 0}, {}]})
    assert rheo.target_law(case) == rheo.target_law(_case(None))


def test_a_state_whose_tokens_the_target_never_emits_is_refused():
    target = {**TARGET, (1,): [4, 0, 0, 2]}  # after token 1: tokens 1 and 2 have probability 0
    case = _case({"allowed": [[1, 3], [1, 2]], "next": [{"1": 1, "3": 0}, {"1": 0, "2": 0}]})
    case = replace(case, target=TableModel.from_weights(target, context_length=1, name="target"))
    with pytest.raises(
        CaseError, match=r"state 1 allows tokens \[1, 2\], all of target probability 0 after context \[0, 1\]"
    ):
        rheo.target_law(case)


def test_what_cannot_follow_a_constraint_says_so():
    case = _case()
    with pytest.raises(CaseError, match="carries a constraint"):
        Exact(case)
    with pytest.raises(CaseError, match="does not take a case with a constraint"):
        rheo.plan_samples(case, alpha=1e-3, tv=0.2, horizon=3)


def _sampler(masked: bool):
    """Draws from the (masked) target row by row, exactly as the law says."""

    def run(case: Case, seed: int, n: int) -> list[tuple[int, ...]]:
        rng = random.Random(seed)
        out = []
        for _ in range(n):
            seq: tuple[int, ...] = ()
            s = 0
            for _ in range(case.tokens):
                row = case.target.row(case.context + seq)
                if masked:
                    row = case.constraint.mask(row, s)
                t = rng.choices(range(len(row)), weights=[float(x) for x in row])[0]
                s = case.constraint.step(s, t)
                seq += (t,)
            out.append(seq)
        return out

    return run


def test_the_gate_tests_a_constrained_case_against_the_masked_law():
    case = _case()
    d = float(tv(rheo.target_law(case), rheo.target_law(_case(None))))
    assert d > 0.4  # the unmasked target's exact TV from the masked law
    kw = {"alpha": 1e-6, "tv": d / 2, "beta": 1e-3, "seed": 5}
    assert not rheo.check_lossless(_sampler(True), case, **kw).rejected
    assert rheo.check_lossless(_sampler(False), case, **kw).rejected
