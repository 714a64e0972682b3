"""The tsubame family's exact reference: the plan (pass 1) on a hand-checked case, its independence
of q_samp and of the target, brute ≡ subtree recursion on the planned shapes, the lossless
pairings (exact TV = 0), the lossy one (a case found, TV > 0), T = 0 (the target's greedy output)."""

from __future__ import annotations

from fractions import Fraction as F

import pytest
from hypothesis import HealthCheck, Phase, find, given, settings
from hypothesis import strategies as st

from rheo_ref.errors import CaseError, TooLargeError
from rheo_ref.exact import Exact, target_law, tv
from rheo_ref.families.rheo.verify import Rules
from rheo_ref.families.static.scheme import LOSSLESS_PAIRINGS, SAMPLINGS, VERIFIERS, StaticScheme
from rheo_ref.families.tsubame.exact import Planner, plan_parents
from rheo_ref.families.tsubame.scheme import TsubameScheme
from rheo_ref.families.tsubame.strategies import tsubame_cases
from rheo_ref.family import family_of
from rheo_ref.models import Case, TableModel
from rheo_ref.strategies import one_hot, tables
from rheo_ref.variants import SPEC

SETTINGS = settings(suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])


def exact_tv(case: Case, method: str = "classes") -> F:
    return tv(Exact(case, method).token_law(), target_law(case))


# q_rank rows (context length 1); the plan reads these only
DRAFT = {
    "": ["1/2", "3/10", "1/5"],
    "0": ["1/10", "3/5", "3/10"],
    "1": ["7/10", "1/5", "1/10"],
    "2": ["1/3", "1/3", "1/3"],
}
TARGET = {
    "": ["1/5", "1/2", "3/10"],
    "0": ["1/4", "1/4", "1/2"],
    "1": ["1/2", "1/6", "1/3"],
    "2": ["3/5", "1/5", "1/5"],
}


def _case(draft=DRAFT, target=TARGET, *, sampling="iid", verify="specinfer", K=2, W=1, D=2, R=3, tokens=2, sample=None):
    return Case(
        TableModel.from_rows(draft, context_length=1, name="draft"),
        TableModel.from_rows(target, context_length=1, name="target"),
        TsubameScheme(K, W, D, R, sampling, verify),
        (0,),
        tokens,
        None if sample is None else TableModel.from_rows(sample, context_length=1, name="draft_sample"),
    )


# --- pass 1: the plan ------------------------------------------------------------------------------


def test_plan_by_hand():
    """Context 0: q_rank = (1/10, 3/5, 3/10), so the root's Top-2 children are 1 (3/5), then 2
    (3/10): nodes 1, 2. W = 1: only node 1 is expanded; after 0,1 q_rank = (7/10, 1/5, 1/10), so
    its children are 0 (3/5·7/10 = 21/50), then 1 (3/5·1/5 = 3/25): nodes 3, 4. The R = 3 best of
    3/5, 3/10, 21/50, 3/25 are nodes 1, 3, 2: parents (0, 0, 1) in creation order (node 2 before
    node 3); with R = 4, (0, 0, 1, 1)."""
    assert plan_parents(_case(R=3), (0,)) == (0, 0, 1)
    assert plan_parents(_case(R=4), (0,)) == (0, 0, 1, 1)
    assert plan_parents(_case(R=1), (0,)) == (0,)
    # context 1: q_rank = (7/10, 1/5, 1/10): children 0 (7/10), 1 (1/5); node 1 (token 0) expanded,
    # q_rank after 1,0 = (1/10, 3/5, 3/10): children 1 (21/50), 2 (21/100), both above node 2's 1/5
    assert plan_parents(_case(R=3), (1,)) == (0, 1, 1)
    assert plan_parents(_case(R=4), (1,)) == (0, 0, 1, 1)
    # W = 2 expands both depth-1 nodes: 6 nodes in all, R = 6 keeps them, in creation order
    assert plan_parents(_case(W=2, R=6), (0,)) == (0, 0, 1, 1, 2, 2)


def test_the_plan_reads_neither_q_samp_nor_the_target():
    """Change q_samp (a separate draft_sample table) and the target: the plan stays the same; the
    round law changes (so the test would see a plan that read them)."""
    a = _case(W=2, R=4)
    b = _case(W=2, R=4, target=DRAFT, sample={k: list(reversed(v)) for k, v in TARGET.items()})
    for ctx in [(0,), (1,), (2,)]:
        assert Planner(a).parents(ctx) == Planner(b).parents(ctx)
    assert Exact(a).round_law() != Exact(b).round_law()


@SETTINGS
@given(tsubame_cases(separate_sample=True, max_trees=10**9), st.data())
def test_the_plan_does_not_depend_on_q_samp_generated(case, data):
    """Generated: another q_samp table (and target) leaves every context's plan unchanged."""
    other = data.draw(tables(case.vocab_size, 1, name="draft_sample"))
    swapped = Case(
        case.draft, data.draw(tables(case.vocab_size, 1, name="target")), case.scheme, case.context, case.tokens, other
    )
    for t in range(case.vocab_size):
        assert plan_parents(case, (t,)) == plan_parents(swapped, (t,))


def test_every_plan_keeps_min_r_and_the_topk_tree_size():
    """The Top-K tree has K·(expansions) nodes whatever the context: every plan keeps min(R, that)."""
    for R in range(1, 9):
        for ctx in [(0,), (1,), (2,)]:
            assert len(plan_parents(_case(K=2, W=2, D=2, R=R), ctx)) == min(R, 2 * 3)


# --- brute ≡ the subtree recursion -----------------------------------------------------------------


@SETTINGS
@given(tsubame_cases(max_trees=300))
def test_brute_and_classes_agree_exactly(case):
    bru, cls = Exact(case, "brute"), Exact(case, "classes")
    assert bru.round_law() == cls.round_law()
    assert bru.token_law() == cls.token_law()
    assert bru.counter.enumerated <= bru.counter.rounds * family_of(case.scheme).estimate(case, "brute", SPEC)


def test_dp_is_the_subtree_recursion():
    case = _case(W=2, R=4, tokens=3)
    assert Exact(case, "dp").token_law() == Exact(case, "classes").token_law() == Exact(case, "brute").token_law()


def test_a_tsubame_round_is_the_static_round_on_its_plan():
    """At the start context, the round law is the static family's on the planned shape."""
    case = _case(W=2, R=5, sampling="wor", verify="traversal")
    plan = plan_parents(case, case.context)
    static = Case(case.draft, case.target, StaticScheme("parents", plan, "wor", "traversal"), case.context, 1)
    assert Exact(case).round_law() == Exact(static).round_law()


def test_hopeless_enumerations_are_refused_up_front():
    case = _case(K=3, W=3, D=3, R=12)
    with pytest.raises(TooLargeError, match="tsubame plan of 12 nodes"):
        Exact(case, "brute", max_trees=1000)


def test_the_rheo_familys_verification_rules_do_not_apply():
    with pytest.raises(CaseError, match="do not apply to the tsubame family"):
        Exact(_case(), rules=Rules())


# --- lossless pairings: exact TV = 0; the lossy one: a case with TV > 0 -----------------------------


@pytest.mark.lossless
@pytest.mark.parametrize("sampling,verify", sorted(LOSSLESS_PAIRINGS))
def test_compatible_pairings_are_exactly_lossless(sampling, verify):
    @SETTINGS
    @given(tsubame_cases(sampling=sampling, verify=verify, max_nodes=6, max_tokens=3, max_trees=3000, method="classes"))
    def check(case):
        assert exact_tv(case) == 0

    check()
    assert exact_tv(_case(sampling=sampling, verify=verify, W=2, R=5, tokens=3)) == 0


def test_search_finds_a_lossy_case_for_wor_siblings_under_specinfer():
    found = find(
        tsubame_cases(sampling="wor", verify="specinfer", max_vocab=3, max_nodes=3, max_tokens=1),
        lambda cs: exact_tv(cs) > 0,
        settings=settings(max_examples=2000, database=None, derandomize=True, phases=[Phase.generate]),
    )
    assert exact_tv(found, "brute") == exact_tv(found) > 0
    s = found.scheme_as(TsubameScheme)
    fixed = Case(
        found.draft,
        found.target,
        TsubameScheme(s.K, s.W, s.D, s.R, "wor", "rrsw"),
        found.context,
        found.tokens,
        found.draft_sample,
    )
    assert exact_tv(fixed) == 0


# --- T = 0: the target's greedy output -------------------------------------------------------------

KEYS = list(DRAFT)
ONE_HOT_P = {k: [str(x) for x in one_hot(3, i % 3)] for i, k in enumerate(KEYS)}  # greedy: 0 -> 1 -> 2 -> 0
ONE_HOT_Q = {k: [str(x) for x in one_hot(3, (i + 1) % 3)] for i, k in enumerate(KEYS)}


@pytest.mark.parametrize("sampling", SAMPLINGS)
@pytest.mark.parametrize("verify", VERIFIERS)
@pytest.mark.parametrize("q_samp", ["greedy-draft", "agreeing"])
def test_at_t0_the_decode_is_the_targets_greedy_output(sampling, verify, q_samp):
    """T = 0 turns q_samp and p into point masses (the tables hold them directly). Whether the
    draft disagrees with the target (everything rejected) or agrees (whole paths accepted), the
    n-token law is the point mass on the target's greedy continuation 1, 2, 0, 1 of context 0."""
    sample = ONE_HOT_Q if q_samp == "greedy-draft" else ONE_HOT_P
    case = _case(target=ONE_HOT_P, sample=sample, sampling=sampling, verify=verify, W=2, R=4, tokens=4)
    for method in ("brute", "classes"):
        assert Exact(case, method).token_law() == {(1, 2, 0, 1): 1}
    tau = Exact(case).tau()
    assert tau == (1 if q_samp == "greedy-draft" else 3)  # agreeing: a depth-2 path and its bonus
