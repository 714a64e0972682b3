"""`rheo.processed` covers every setting rheo models (min-p, penalties, logit bias, T = 0, a grammar in
any combination), exactly: each law here is checked against the reference's request law
(`rheo_ref.bugclasses.exact.target_law`, the served decoders' target) or computed by hand, and the
ambiguities float rounding or an unnamed tie would decide are refused, naming the row."""

from __future__ import annotations

from fractions import Fraction

import pytest

import rheo
from rheo_ref.bugclasses.decoder import Request
from rheo_ref.bugclasses.exact import target_law as request_law
from rheo_ref.constraint import Constraint
from rheo_ref.errors import CaseError, TieError
from rheo_ref.models import Case, TableModel

F = Fraction
TARGET = {(0,): [3, 3, 3, 1], (1,): [5, 3, 1, 1], (2,): [4, 2, 2, 2], (3,): [1, 1, 1, 1]}
CASE = Case.from_json(
    {"target": TableModel.from_weights(TARGET, context_length=1, name="target").to_json(), "context": [2], "tokens": 3}
)
# a grammar: state 0 allows 0, 1, 3; token 3 leads to state 1, which allows 1, 2
GRAMMAR = Constraint((frozenset({0, 1, 3}), frozenset({1, 2})), (((0, 0), (1, 0), (3, 1)), ((1, 0), (2, 0))))


@pytest.mark.parametrize(
    ("kwargs", "request_"),
    [
        (dict(min_p=F(2, 5)), Request(min_p=F(2, 5))),
        (dict(frequency=F(1, 2)), Request(penalty=F(1, 2))),
        (dict(presence=F(1, 3), logit_bias={3: 2}), Request(presence=F(1, 3), bias=((3, F(2)),))),
        (dict(repetition=2, top_k=3, ties="all"), Request(repetition=2, top_k=3, ties="all")),
        (
            dict(temperature=F(1, 2), top_p=F(4, 5), ties="high", order="vllm"),
            Request(temperature=F(1, 2), top_p=F(4, 5), ties="high", order="vllm"),
        ),
        (dict(temperature=0, frequency=F(1, 2), ties="low"), Request(temperature=F(0), penalty=F(1, 2))),
    ],
)
@pytest.mark.parametrize("grammar", [None, GRAMMAR])
def test_every_setting_is_the_reference_request_law(kwargs, request_, grammar):
    case = CASE if grammar is None else Case(CASE.draft, CASE.target, CASE.scheme, CASE.context, 3, constraint=grammar)
    got = rheo.target_law(rheo.processed(case, **kwargs))
    assert got == request_law(CASE.target, CASE.context, 3, request_, grammar)
    assert sum(got.values()) == 1


def test_greedy_is_the_argmax_path_with_the_tie_rule_named():
    """After context 2 the row (4,2,2,2) has one argmax, 0; after 0 the row (3,3,3,1) ties 0, 1, 2."""
    with pytest.raises(TieError, match=r"^target row '0': T = 0: the argmax is tied between tokens \[0, 1, 2\]"):
        rheo.processed(CASE, temperature=0)
    assert rheo.target_law(rheo.processed(CASE, temperature=0, ties="low")) == {(0, 0, 0): 1}
    assert rheo.target_law(rheo.processed(CASE, temperature=0, ties={"greedy": "high"})) == {(0, 2, 0): 1}


def test_float_boundaries_are_refused():
    with pytest.raises(CaseError, match=r"min_p=1/2: tokens \[1, 2, 3\] have a probability within float rounding"):
        rheo.processed(CASE, min_p=F(1, 2))  # row after 2: (4,2,2,2)/10, 2/10 = 1/2 · 4/10 exactly
    near = Case.from_json({"target": TableModel.from_weights({(): [10**7, 10**7 - 1, 1]}, context_length=0).to_json()})
    with pytest.raises(CaseError, match="T = 0: tokens \\[1\\] are within float rounding"):
        rheo.processed(near, temperature=0)


def test_the_draft_is_left_alone_and_bad_settings_name_what_is_allowed():
    assert rheo.processed(CASE, frequency=F(1, 2)).draft is CASE.draft
    with pytest.raises(CaseError, match=r"repetition=0 must be an integer θ in 1..8"):
        rheo.processed(CASE, repetition=0)
    with pytest.raises(CaseError, match=r"order='hf'; allowed: transformers, vllm, sglang"):
        rheo.processed(CASE, order="hf")
    with pytest.raises(CaseError, match=r"logit_bias token 9 must be a token id in 0..3"):
        rheo.processed(CASE, logit_bias={9: 2})
