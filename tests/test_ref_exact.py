"""The exact reference: lossless where the paper says so, brute ≡ classes, Table 1, ad-hoc bias."""

from __future__ import annotations

from fractions import Fraction as F

import pytest
from helpers import load_json
from hypothesis import HealthCheck, example, find, given, settings

from rheo_ref.exact import Exact, target_law, tv
from rheo_ref.families.rheo.enumerate import enumerate_trees
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.rheo.strategies import cases
from rheo_ref.models import Case, Proxy, TableModel
from rheo_ref.strategies import one_hot


def _table(rows, name, L=1):
    return TableModel.from_rows(rows, context_length=L, name=name)


# p == q everywhere, and one-hot target rows (T = 0 style): the STYLE's explicit examples.
UNIFORM3 = {"": ["1/3"] * 3, "0": ["1/2", "1/4", "1/4"], "1": ["1/4", "1/2", "1/4"], "2": ["1/4", "1/4", "1/2"]}
P_EQ_Q = Case(_table(UNIFORM3, "draft"), _table(UNIFORM3, "target"), Scheme(3, 1, 2, 3, 5), (0,), 3)
ONE_HOT = Case(
    _table(UNIFORM3, "draft"),
    _table({k: [str(x) for x in one_hot(3, i % 3)] for i, k in enumerate(UNIFORM3)}, "target"),
    Scheme(2, 0, 2, 2, 4),
    (1,),
    3,
    _table({k: [str(x) for x in one_hot(3, (i + 1) % 3)] for i, k in enumerate(UNIFORM3)}, "draft_sample"),
)


def exact_tv(case: Case, method: str = "classes") -> F:
    e = Exact(case, method)
    return tv(e.token_law(), target_law(case))


@pytest.mark.lossless
@settings(suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(cases(proxy="rheo", max_trees=2000, method="classes"))
@example(P_EQ_Q)
@example(ONE_HOT)
def test_rheo_proxy_is_exactly_lossless(case):
    """TV is exactly 0 for both verification orders, any K, m, W, D <= 3, R, n <= 3."""
    assert exact_tv(case) == 0


@pytest.mark.lossless
@settings(suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(cases(proxy="rheo", max_trees=2000, method="classes", separate_sample=True, verify="rrsw"))
def test_rrsw_with_separate_sampling_table_is_lossless(case):
    assert exact_tv(case) == 0


@settings(suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(cases(proxy=None, max_trees=300, method="brute", max_tokens=2))
@example(P_EQ_Q.with_scheme(D=2, R=4))
def test_brute_and_classes_agree_exactly(case):
    """Every proxy, every order: the two enumerators give the same round and token laws."""
    b, c = Exact(case, "brute"), Exact(case, "classes")
    assert b.round_law() == c.round_law()
    assert b.token_law() == c.token_law()
    assert c.counter.enumerated <= b.counter.enumerated


def test_classes_enumerate_fewer_trees_when_the_tail_is_long():
    V = 6
    row = [str(F(w, 21)) for w in range(1, V + 1)]
    q = _table({"": row, **{str(i): row[::-1] for i in range(V)}}, "draft")
    p = _table({"": row[::-1], **{str(i): row for i in range(V)}}, "target")
    case = Case(q, p, Scheme(3, 1, 2, 2, 5), (0,), 1)
    b, c = Exact(case, "brute"), Exact(case, "classes")
    assert b.round_law() == c.round_law()
    assert c.counter.enumerated * 3 < b.counter.enumerated


# --- the seeds' Table 1: q = (.5, .3, .2) over A, B, C; m = 1, K = 3, R = 2, depth 1 --------------


def _survivors(case: Case) -> dict[int, tuple[str, ...]]:
    """Sampled token y -> names of the kept children, in score order (ties: earlier creation)."""
    out = {}
    for prob, nodes, kept in enumerate_trees(case, (), "brute"):
        y = next(n.token for n in nodes if n.kind == "sampled")
        kids = sorted((nodes[i] for i in kept), key=lambda n: (-n.score, n.id))
        out[y] = tuple("Y" if n.kind == "sampled" else "ABC"[n.token] for n in kids)
        assert prob == [F(0), F(3, 5), F(2, 5)][y]  # q̃(B) = .6, q̃(C) = .4
    return out


def test_table1_rheo_proxy_keeps_A_and_Y_whatever_Y_is():
    case = Case.from_json(load_json("table1.json"))
    assert _survivors(case) == {1: ("A", "Y"), 2: ("A", "Y")}


def test_table1_constant_quarter_proxy_drops_Y_when_it_is_C():
    case = Case.from_json(load_json("table1.json")).with_scheme(proxy=Proxy.parse("const:1/4"))
    assert _survivors(case) == {1: ("A", "Y"), 2: ("A", "B")}


# --- ad-hoc proxies are lossy ------------------------------------------------------------------

# The smallest lossy cases hypothesis found (kept so the regression never depends on the search).
TRUE_PROXY_MINIMAL = Case(
    _table({"": ["0", "1"], "0": ["1/3", "2/3"], "1": ["0", "1"]}, "draft"),
    _table({"": ["0", "1"], "0": ["1/2", "1/2"], "1": ["0", "1"]}, "target"),
    Scheme(2, 0, 1, 1, 1, Proxy.parse("true")),
    (0,),
    1,
)
CONST_PROXY_MINIMAL = Case(
    _table({"": ["0", "1"], "0": ["0", "1"], "1": ["0", "1"]}, "draft"),
    _table({"": ["0", "1"], "0": ["0", "1"], "1": ["1/2", "1/2"]}, "target"),
    Scheme(2, 0, 1, 1, 1, Proxy.parse("const:1/4")),
    (1,),
    1,
    _table({"": ["0", "1"], "0": ["0", "1"], "1": ["1/2", "1/2"]}, "draft_sample"),
)


def test_true_proxy_minimal_case_by_hand():
    """y ~ q = (1/3, 2/3) keeps itself only when y = 1 (its factor beats the fill):
    P(emit 0) = 2/3 * (1 - 3/4) + 1/3 * 1/2 = 1/3 instead of p(0) = 1/2, so TV = 1/6."""
    law = Exact(TRUE_PROXY_MINIMAL).token_law()
    assert law == {(0,): F(1, 3), (1,): F(2, 3)}
    assert exact_tv(TRUE_PROXY_MINIMAL) == F(1, 6)
    assert exact_tv(TRUE_PROXY_MINIMAL.with_scheme(proxy="rheo")) == 0


def test_const_proxy_minimal_case_is_lossy_and_rheo_is_not():
    assert exact_tv(CONST_PROXY_MINIMAL) > 0
    assert exact_tv(CONST_PROXY_MINIMAL, "brute") == exact_tv(CONST_PROXY_MINIMAL)
    assert exact_tv(CONST_PROXY_MINIMAL.with_scheme(proxy="rheo")) == 0


@pytest.mark.parametrize("proxy,minimal", [("true", TRUE_PROXY_MINIMAL), ("const:1/4", CONST_PROXY_MINIMAL)])
def test_search_finds_a_lossy_case_for_each_ad_hoc_proxy(proxy, minimal):
    """The search is live (not only the recorded example) and shrinks to a case no larger than it."""
    found = find(
        cases(proxy=proxy, max_tokens=1, max_depth=2),
        lambda c: exact_tv(c) > 0,
        settings=settings(max_examples=3000, database=None, derandomize=True),
    )
    assert exact_tv(found) > 0
    assert found.vocab_size <= minimal.vocab_size and found.scheme.R <= minimal.scheme.R
