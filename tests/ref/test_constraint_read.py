"""Reading a grammar constraint (`rheo_ref.constraint.Constraint.from_json`): linear in its states,
and its `next` keys are token ids written one way only (no leading zeros, signs or spaces), as the
table keys of docs/ALGORITHM.md §10 are."""

from __future__ import annotations

import time

import pytest

from rheo_ref.constraint import Constraint
from rheo_ref.errors import CaseError


def chain(S: int) -> dict:
    """S states in a ring: token 0 steps to the next state, token 1 back to state 0."""
    return {"allowed": [[0, 1] for _ in range(S)], "next": [{"0": (s + 1) % S, "1": 0} for s in range(S)]}


def test_a_constraint_of_40000_states_reads_in_linear_time():
    """The reachability walk once copied a token path per state (S^2: 30 s at 40,000 states on the
    2-core dev machine); it is one pass now (~0.2 s). The bound leaves a wide margin for a busy machine."""
    t = time.perf_counter()
    g = Constraint.from_json(chain(40_000))
    assert time.perf_counter() - t < 10
    assert len(g.reachable()) == 40_000 and g.state([0] * 39_999) == 39_999


def test_an_empty_reachable_state_is_named_with_its_path():
    obj = chain(5)
    obj["allowed"][4], obj["next"][4] = [], {}
    with pytest.raises(
        CaseError, match=r"state 4 allows no token and is reached from state 0 by tokens \[0, 0, 0, 0\]"
    ):
        Constraint.from_json(obj)
    g = Constraint.from_json({"allowed": [[0, 1], [2], [0]], "next": [{"0": 1, "1": 2}, {"2": 2}, {"0": 0}]})
    parents = g.reachable()
    assert [g.path(parents, s) for s in range(3)] == [(), (0,), (1,)]  # shortest, then smallest


@pytest.mark.parametrize("key", ["01", "00", " 1", "1 ", "+1", "-1", "１", "1e0", "1234567890"])
def test_a_next_key_is_a_canonical_token_id(key):
    with pytest.raises(CaseError, match=r'allowed: "token": state.*\("1", not "01"\)'):
        Constraint.from_json({"allowed": [[1]], "next": [{key: 0}]})


def test_canonical_keys_read_as_their_tokens():
    g = Constraint.from_json({"allowed": [[0, 10]], "next": [{"0": 0, "10": 0}]})
    assert g.allowed[0] == {0, 10} and g.to_json()["next"] == [{"0": 0, "10": 0}]
