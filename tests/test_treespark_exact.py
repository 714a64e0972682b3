"""The treespark family's exact reference (docs/SCHEMES.md §13): the builder follows §5 step by step
(heap order, N/k/D/θ limits, the strict θ test), brute ≡ memoised subtree verification, exact TV = 0
for every θ, calibration and verifier, T = 0, the own-survival mutant lossy (TV > 0 found), refusals."""

from __future__ import annotations

from fractions import Fraction as F

import pytest
from hypothesis import HealthCheck, given, settings

from rheo.selfgate.matrix import DRAFT, DRAFT_Z, TARGET, TARGET_Z, table
from rheo_ref.errors import CaseError, TooLargeError
from rheo_ref.exact import Exact, target_law, tv
from rheo_ref.families.treespark.exact import Builder, draws_of_round
from rheo_ref.families.treespark.scheme import Calibration, TreeSparkScheme
from rheo_ref.families.treespark.strategies import treespark_cases
from rheo_ref.family import family_of
from rheo_ref.generate import greedy_case
from rheo_ref.models import Case, TableModel
from rheo_ref.variants import MUTANTS, SPEC

SETTINGS = settings(suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
OWN = MUTANTS["treespark-own-survival"]
SIGMOID = "sigmoid:0.6684,-0.4587"


def scheme(N=5, k=2, D=3, theta="0", cal="identity", verify="rrsw") -> TreeSparkScheme:
    return TreeSparkScheme(N, k, D, F(theta), Calibration.parse(cal), verify)


def gate_like(sch: TreeSparkScheme, *, zeros: bool = False, tokens: int = 3) -> Case:
    dw, tw = (DRAFT_Z, TARGET_Z) if zeros else (DRAFT, TARGET)
    return Case(table(dw, "draft"), table(tw, "target"), sch, (0,), tokens, table(dw, "draft_sample", power=2))


def exact_tv(case: Case, method: str = "brute", **kw) -> F:
    return tv(Exact(case, method, **kw).token_law(), target_law(case))


# --- lossless ------------------------------------------------------------------------------------


@pytest.mark.parametrize("verify", ["rrsw", "traversal"])
@pytest.mark.parametrize("theta,cal", [("0", "identity"), ("1/20", "identity"), ("1/3", "identity"), ("1/5", SIGMOID)])
@pytest.mark.parametrize("zeros", [False, True])
def test_lossless_on_the_gate_tables(verify, theta, cal, zeros):
    case = gate_like(scheme(theta=theta, cal=cal, verify=verify), zeros=zeros)
    brute, classes = Exact(case, "brute"), Exact(case, "classes")
    law = brute.token_law()
    assert tv(law, target_law(case)) == 0
    assert classes.token_law() == law
    assert classes.round_law() == brute.round_law()


@SETTINGS
@given(case=treespark_cases())
def test_lossless_and_methods_agree(case):
    brute = Exact(case, "brute")
    assert tv(brute.token_law(), target_law(case)) == 0
    assert Exact(case, "classes").round_law() == brute.round_law()


@pytest.mark.parametrize("verify", ["rrsw", "traversal"])
def test_greedy_is_a_chain_and_lossless(verify):
    """T = 0: q_samp is a point mass, so a node's draw is its argmax and nothing is left after it."""
    case = greedy_case(gate_like(scheme(N=4, k=3, D=3, verify=verify)))
    trees = list(draws_of_round(case, case.context))
    assert len(trees) == 1 and trees[0][0] == 1
    assert trees[0][1].parents == (0, 1, 2)  # depth D = 3 reached, the chain's tip has no slot
    assert exact_tv(case) == 0


# --- the builder, step by step --------------------------------------------------------------------


def all_trees(case: Case):
    return [t for _, t in draws_of_round(case, case.context)]


@pytest.mark.parametrize("N,k,D", [(1, 1, 1), (3, 1, 3), (5, 2, 2), (6, 3, 3), (4, 3, 1)])
def test_limits_hold_and_theta_zero_fills_the_budget(N, k, D):
    case = gate_like(scheme(N=N, k=k, D=D))
    probs = [pr for pr, _ in draws_of_round(case, case.context)]
    assert sum(probs) == 1
    room = sum(min(k, 4) ** d for d in range(1, D + 1))  # the nodes a V = 4 table can hold under k and D
    for t in all_trees(case):
        kids = t.children()
        assert max(len(c) for c in kids) <= k
        depth = [0]
        for u in t.parents:
            depth.append(depth[u] + 1)
        assert max(depth) <= D
        assert len(t.parents) == min(N, room)  # θ = 0: only N or running out of slots stops a round


def test_theta_one_stops_at_the_root_unless_its_bound_is_one():
    """θ = 1: the root's first slot has bound max q_rank(.|root) < 1 here, so no node is drafted."""
    case = gate_like(scheme(theta="1"))
    assert all(t.parents == () for t in all_trees(case))
    assert Exact(case, "brute").tau() == 1
    # a point-mass draft at every context: every bound is 1, not < 1, so slots are admitted
    point = TableModel.from_weights({(): [0, 1, 0, 0], **{(i,): [0, 0, 1, 0] for i in range(4)}}, context_length=1)
    c2 = Case(point, table(TARGET, "target"), scheme(N=3, theta="1"), (0,), 2)
    assert [t.parents for t in all_trees(c2)] == [(0, 1, 2)]
    assert exact_tv(c2) == 0


def test_theta_is_strict():
    """θ equal to a bound admits the slot (strict <); a hair above stops the round."""
    q = TableModel.from_weights({(): [1, 1], (0,): [1, 1], (1,): [1, 1]}, context_length=1, name="draft")
    p = TableModel.from_weights({(): [1, 2], (0,): [2, 1], (1,): [1, 1]}, context_length=1, name="target")
    # root bound 1/2 (admitted at θ = 1/2), then child bound 1/4 and root's second slot 1/2
    at = Case(q, p, scheme(N=3, k=2, D=2, theta="1/2"), (0,), 2)
    assert {len(t.parents) for t in all_trees(at)} == {2}
    above = Case(q, p, scheme(N=3, k=2, D=2, theta="51/100"), (0,), 2)
    assert {len(t.parents) for t in all_trees(above)} == {0}
    assert exact_tv(at) == 0 and exact_tv(above) == 0


def test_heap_order_and_insertion_tie_break():
    """The best bound is admitted first; equal bounds in insertion order (the child's slot is pushed
    before its parent's next one)."""
    q = TableModel.from_weights({(): [3, 1], (0,): [3, 1], (1,): [1, 1]}, context_length=1, name="draft")
    p = TableModel.from_weights({(): [1, 1], (0,): [1, 1], (1,): [1, 1]}, context_length=1, name="target")
    case = Case(q, p, scheme(N=3, k=2, D=2), (0,), 2)
    b = Builder.start(case, (0,))
    assert b.next_slot() == 0
    b.add(0, 0)  # surv(1) = 3/4; slots: node 1 bound 3/4·3/4 = 9/16 (pushed first), root 1/4
    assert [(bd, v) for bd, _, v in sorted(b.heap, key=lambda e: e[1])] == [(F(9, 16), 1), (F(1, 4), 0)]
    assert b.next_slot() == 1
    b.add(1, 0)  # node 2 at depth D: no slot; node 1's next: 3/4·1/4 = 3/16; root's 1/4 is best
    assert b.next_slot() == 0
    # a tie: equal bounds, the slot inserted first (index 3) wins
    b2 = Builder.start(Case(q, p, scheme(N=3, k=2, D=2), (0,), 2), (0,))
    b2.heap = [(F(1, 2), 5, 0), (F(1, 2), 3, 1)]
    assert b2.next_slot() == 1


def test_slot_is_admitted_before_its_token():
    """A popped slot consumes a node of the budget whatever the token turns out to be: with N = 1 the
    round's single node is drawn from the whole q_samp row, including tokens whose survival is tiny."""
    case = gate_like(scheme(N=1, theta="1/20"))
    trees = list(draws_of_round(case, case.context))
    row = case.q_samp_model.row(case.context)
    assert sorted((t.tokens[0], pr) for pr, t in trees) == [(x, px) for x, px in enumerate(row) if px]


# --- the own-survival mutant ----------------------------------------------------------------------


def test_own_survival_is_the_spec_at_theta_zero_and_lossy_above():
    case = gate_like(scheme(theta="0"))
    assert Exact(case, "brute", variant=OWN).round_law() == Exact(case, "brute").round_law()
    for verify in ("rrsw", "traversal"):
        lossy = gate_like(scheme(theta="1/5", cal=SIGMOID, verify=verify))
        assert exact_tv(lossy, variant=OWN) > F(1, 10)  # exact: 0.2089 on these tables


def test_mutant_of_another_family_is_refused():
    with pytest.raises(CaseError, match="belongs to the static family"):
        Exact(gate_like(scheme()), "brute", variant=MUTANTS["sorted-siblings"])


# --- refusals ---------------------------------------------------------------------------------------


def test_estimate_bounds_the_enumeration_and_refuses_up_front():
    case = gate_like(scheme(N=4, k=2, D=3))
    assert len(all_trees(case)) <= family_of(case.scheme).estimate(case, "classes", SPEC)
    with pytest.raises(TooLargeError, match=r"trees per round \(treespark N=4"):
        Exact(case, "brute", max_trees=10)


def test_unknown_method_is_refused():
    with pytest.raises(CaseError, match="allowed"):
        Exact(gate_like(scheme()), "bogus")


def test_rheo_audit_lists_the_treespark_rows_lossless_and_theta_binds():
    """`rheo audit`'s treespark rows: both verifiers at θ = 0 (identity) and θ = 1/10 (paper's
    sigmoid); brute and classes agree, TV = 0, and θ = 1/10 binds on the audit tables (τ lower than
    the same scheme's at θ = 0)."""
    from dataclasses import replace

    from rheo.selfgate.audit import audit_cases

    rows = [(label, c) for label, c in audit_cases() if c.scheme.family == "treespark"]
    assert [(c.scheme.theta, str(c.scheme.calibration), c.scheme.verify) for _, c in rows] == [
        (t, cal, v)
        for t, cal in ((F(0), "identity"), (F(1, 10), "sigmoid:0.6684,-0.4587"))
        for v in ("rrsw", "traversal")
    ]
    for label, c in rows:
        ex = Exact(c, "classes")
        law = ex.token_law()
        assert law == Exact(c, "brute").token_law() and tv(law, target_law(c)) == 0, label
        if c.scheme.theta:
            free = Case(c.draft, c.target, replace(c.scheme, theta=F(0)), c.context, c.tokens)
            assert ex.tau() < Exact(free).tau(), label
