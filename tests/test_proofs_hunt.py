"""Hypothesis over the claims of proofs/: inside each proved claim's hypotheses no counterexample
exists (exact, rheo_ref); outside them hypothesis finds one (the hunts that produced the recorded
counterexamples; the slow one is left to `pytest -m slow`)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import HealthCheck, assume, find, given, settings
from hypothesis import strategies as st

from proofs.dominance import depth1_case, full_width, rejection_closed_form
from proofs.ranking import sibling_rank_of_sampled
from proofs.survival import biased_classes
from rheo_ref.exact import Exact
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.rheo.slots import ranked
from rheo_ref.families.rheo.strategies import cases
from rheo_ref.family import family_of
from rheo_ref.models import Case, Proxy, TableModel
from rheo_ref.strategies import one_hot, prob_vectors, tables
from rheo_ref.variants import SPEC

pytestmark = pytest.mark.proof
ZERO = Fraction(0)


@st.composite
def level(draw, min_v: int = 2, max_v: int = 6):
    """(p, q_rank, q_samp, m, k) for one level with a sampled slot."""
    V = draw(st.integers(min_v, max_v))
    q = draw(prob_vectors(V))
    qs = draw(st.one_of(st.none(), prob_vectors(V)))
    p = draw(prob_vectors(V))
    m = draw(st.integers(0, V - 1))
    assume(sum(((qs or q)[t] for t in ranked(q)[m:]), ZERO) > 0)
    k = draw(st.integers(0, V - m - 1))
    return p, q, qs, m, k


@given(level())
def test_closed_form_of_the_one_level_rejection_matches_rheo_ref(lv):
    p, q, qs, m, k = lv
    for order in ("rheo", "rrsw"):
        ref = 1 - Exact(depth1_case(p, q, m, k, order, qs), "classes").acceptance()
        assert rejection_closed_form(p, q, qs or q, m, k, order) == ref


@given(level())
def test_claim_4_1_no_fill_ot_accepts_at_least_as_much(lv):
    p, q, qs, m, _ = lv
    ot, rrsw = (Exact(depth1_case(p, q, m, 0, v, qs), "classes").acceptance() for v in ("rheo", "rrsw"))
    assert ot >= rrsw


@given(st.integers(1, 7).flatmap(lambda V: st.tuples(prob_vectors(V), st.integers(1, V))))
def test_claim_1_sampled_child_ranks_at_slot_m_for_every_y(args):
    q, K = args
    for m in range(K):
        assert sibling_rank_of_sampled(q, K, m, "rheo") <= {m}


@st.composite
def no_fill_trees(draw, *, prune: bool):
    V = draw(st.integers(2, 4))
    m = draw(st.integers(0, V - 1))
    K = m + 1
    D = draw(st.integers(2, 3))
    if prune:
        W = draw(st.integers(1, K))
        R = draw(st.integers(1, K * (1 + W * (D - 1))))
    else:
        W, R = full_width(K, D)
    q = draw(tables(V, name="draft"))
    p = draw(tables(V, name="target"))
    case = Case(q, p, Scheme(K, m, W, D, R, Proxy.parse("rheo"), "rheo"), (draw(st.integers(0, V - 1)),), 1)
    assume(family_of(case.scheme).estimate(case, "classes", SPEC) <= 300)
    return case


def _both(case: Case, what: str):
    ex = [Exact(case.with_scheme(verify=v), "classes") for v in ("rheo", "rrsw")]
    return [e.tau() if what == "tau" else e.acceptance() for e in ex]


@settings(max_examples=25)
@given(no_fill_trees(prune=False))
def test_claim_4_3_unpruned_no_fill_tree_ot_tau_dominates(case):
    ot, rrsw = _both(case, "tau")
    assert ot >= rrsw


@settings(max_examples=25)
@given(no_fill_trees(prune=True))
def test_claim_4_5_root_acceptance_ot_dominates_under_any_pruning(case):
    ot, rrsw = _both(case, "acceptance")
    assert ot >= rrsw


@settings(max_examples=20)
@given(cases(min_vocab=2, max_vocab=4, max_depth=3, proxy="rheo", method="brute", max_trees=150))
def test_claim_3_no_survival_bias_on_hypothesis_cases(case):
    n, bad, first = biased_classes(case, case.context)
    assert bad == 0, first


def test_claim_3_survival_bias_found_for_the_true_proxy():
    q = TableModel(3, 0, {"": tuple(Fraction(x) for x in ("1/2", "3/10", "1/5"))}, "draft")
    p = TableModel(3, 0, {"": one_hot(3, 0)}, "target")
    case = Case(q, p, Scheme(3, 1, 3, 1, 2, Proxy.parse("true"), "rheo"))
    assert biased_classes(case, ())[1] > 0


def _hunt_settings(n: int):
    return settings(
        max_examples=n, deadline=None, database=None, derandomize=True, suppress_health_check=list(HealthCheck)
    )


def test_hunt_claim_4_2_hypothesis_finds_a_fill_counterexample():
    @st.composite
    def with_fill(draw):
        p, q, qs, m, k = draw(level(min_v=4, max_v=5))
        assume(m >= 1 and k >= 1)
        return p, q, m, k

    def bad(lv):
        p, q, m, k = lv
        ot, rrsw = (Exact(depth1_case(p, q, m, k, v), "classes").acceptance() for v in ("rheo", "rrsw"))
        return ot < rrsw

    p, q, m, k = find(with_fill(), bad, settings=_hunt_settings(4000))
    assert len(p) >= 4 and m >= 1 and k >= 1


@pytest.mark.slow
def test_hunt_claim_4_4_hypothesis_finds_a_pruned_tau_counterexample():
    V = 4

    @st.composite
    def pruned(draw):
        q = TableModel(V, 1, {str(c): draw(prob_vectors(V, max_weight=4)) for c in range(V)}, "draft")
        p = TableModel(V, 1, {str(c): draw(prob_vectors(V, max_weight=4)) for c in range(V)}, "target")
        W = draw(st.integers(1, 2))
        R = draw(st.integers(1, 2 * (1 + W)))
        return Case(q, p, Scheme(2, 1, W, 2, R, Proxy.parse("rheo"), "rheo"), (0,), 1)

    case = find(pruned(), lambda c: _both(c, "tau")[0] < _both(c, "tau")[1], settings=_hunt_settings(20000))
    W, R = full_width(2, 2)
    assert (case.scheme.W, case.scheme.R) != (W, R), "a counterexample must use pruning (claim 4.3)"
