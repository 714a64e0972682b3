"""The static family's exact reference: the Traversal paper's worked numbers, brute ≡ subtree
recursion, the lossless pairings (exact TV = 0) and the lossy one (a case found, TV > 0), T = 0."""

from __future__ import annotations

from fractions import Fraction as F

import pytest
from hypothesis import HealthCheck, Phase, example, find, given, settings
from hypothesis import strategies as st

from rheo_ref.errors import CaseError
from rheo_ref.exact import Exact, target_law, tv
from rheo_ref.families.rheo.verify import Rules
from rheo_ref.families.static.scheme import LOSSLESS_PAIRINGS, SAMPLINGS, VERIFIERS, StaticScheme
from rheo_ref.families.static.strategies import static_cases, static_schemes
from rheo_ref.family import family_of
from rheo_ref.models import Case, TableModel
from rheo_ref.strategies import one_hot, tables
from rheo_ref.variants import SPEC
from rheo_ref.verifier_laws import DraftTree, TraversalState, rrsw_accept, rrsw_reject, verify_tree_law

SETTINGS = settings(suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])


def more(factor: int) -> settings:
    """SETTINGS with `factor` times the profile's examples (these tests are cheap; nightly scales too)."""
    return settings(SETTINGS, max_examples=factor * settings.default.max_examples)


def exact_tv(case: Case, method: str = "classes") -> F:
    return tv(Exact(case, method).token_law(), target_law(case))


def tau_of(law) -> F:
    return sum((len(s) * pr for s, pr in law.items()), F(0))


# --- the Traversal paper's worked example (its sections 2.2 and 3.2) -------------------------------
# V = 3, tokens a b c = 0 1 2; p = (3/10, 2/5, 3/10) and q = (3/5, 3/10, 1/10) at every context.

a, b, c = 0, 1, 2
P = TableModel.from_rows({"": ["3/10", "2/5", "3/10"]}, context_length=0, name="target")
Q = TableModel.from_rows({"": ["3/5", "3/10", "1/10"]}, context_length=0, name="draft")
# root -> a, c; a -> b, c; c -> a. Nodes in creation order: 1 = a, 2 = c, 3 = a b, 4 = a c, 5 = c a.
PAPER_TREE = DraftTree(parents=(0, 0, 1, 1, 2), tokens=(a, c, b, c, a))
A, AB, AC = 1, 3, 4


def test_paper_traversal_rates_before_any_rejection():
    st_ = TraversalState(PAPER_TREE, P, Q, sampling="wor")
    assert st_.alpha[A] == F(1, 2)
    assert st_.first_leaf() == AB
    assert st_.alpha[AB] == F(2, 3)


def test_paper_traversal_state_after_rejecting_a_b():
    st_ = TraversalState(PAPER_TREE, P, Q, sampling="wor")
    st_.reject(AB)
    assert st_.alpha[A] == F(1, 11)
    assert st_.Mb[A] == (0, 0, 1)
    assert st_.Ms[A] == (F(6, 7), 0, F(1, 7))
    assert st_.first_leaf() == AC
    assert st_.alpha[AC] == F(7, 11)


def test_paper_traversal_iid_update_keeps_Ms():
    st_ = TraversalState(PAPER_TREE, P, Q, sampling="iid")
    st_.reject(AB)
    assert st_.alpha[A] == F(1, 11) and st_.Ms[A] == Q.row(())
    assert st_.alpha[AC] == F(10, 11)


def test_paper_expected_tau_traversal_against_rrsw():
    law_t = verify_tree_law(PAPER_TREE, P, Q, verify="traversal", sampling="wor")
    law_r = verify_tree_law(PAPER_TREE, P, Q, verify="rrsw", sampling="wor")
    assert sum(law_t.values()) == 1 and sum(law_r.values()) == 1
    assert tau_of(law_t) == F(97, 33)
    assert tau_of(law_r) == F(11, 4)


def test_paper_rrsw_after_rejecting_a_at_the_root():
    r, s = rrsw_reject(P.row(()), Q.row(()), a)
    assert r == (0, F(1, 3), F(2, 3))
    assert s == (0, F(3, 4), F(1, 4))
    assert rrsw_accept(r, s, b) == F(4, 9)
    # the same through the verifier: root -> a, b; b comes first iff a is rejected (1/2), then b accepted
    law = verify_tree_law(DraftTree((0, 0), (a, b)), P, Q, verify="rrsw", sampling="wor")
    assert sum(pr for seq, pr in law.items() if len(seq) == 2 and seq[0] == b) == F(1, 2) * F(4, 9)


# --- verifiers on given trees ------------------------------------------------------------------


@pytest.mark.parametrize(
    "tree,sampling,needle",
    [
        (DraftTree((0,), (1,)), "iid", "has q_samp 0"),
        (DraftTree((0, 0), (0, 0)), "wor", "repeat a token"),
    ],
)
def test_a_tree_the_draft_could_not_draw_is_refused(tree, sampling, needle):
    q = TableModel.from_rows({"": ["1", "0"]}, context_length=0, name="draft")
    with pytest.raises(CaseError, match=needle):
        verify_tree_law(tree, q, q, verify="specinfer", sampling=sampling)


def _tree_from(parents: tuple[int, ...], draw) -> DraftTree:
    return DraftTree(parents, tuple(draw(st.integers(0, 2)) for _ in parents))


@SETTINGS
@given(
    st.data(),
    tables(3, 1, name="target"),
    tables(3, 1, name="draft", zeros=False),
    st.sampled_from(["iid", "wor"]),
    st.integers(1, 3),
)
def test_traversal_on_a_depth_one_tree_is_the_token_level_verifier(data, p, q, sampling, k):
    """Traversal emits exactly what specinfer (iid) / rrsw (wor) emit when the tree has depth 1."""
    toks = data.draw(st.lists(st.integers(0, 2), min_size=k, max_size=k, unique=sampling == "wor"))
    tree = DraftTree((0,) * k, tuple(toks))
    token_level = "specinfer" if sampling == "iid" else "rrsw"
    assert verify_tree_law(tree, p, q, verify="traversal", sampling=sampling, context=(0,)) == verify_tree_law(
        tree, p, q, verify=token_level, sampling=sampling, context=(0,)
    )


@SETTINGS
@given(
    static_cases(max_nodes=4, max_tokens=1, verify="traversal", sampling="iid", max_trees=10**6, method="classes"),
    st.integers(1, 4),
)
def test_traversal_on_a_sampled_chain_has_tau_at_least_specinfer(case, D):
    """On a chain, traversal is Block Verification: its expected τ over the draws is >= specinfer's."""
    chain = Case(
        case.draft,
        case.target,
        StaticScheme("branching", (1,) * D, "iid", "traversal"),
        case.context,
        1,
        case.draft_sample,
    )
    token_level = Case(
        chain.draft,
        chain.target,
        StaticScheme("branching", (1,) * D, "iid", "specinfer"),
        chain.context,
        1,
        chain.draft_sample,
    )
    assert Exact(chain).tau() >= Exact(token_level).tau()


def test_on_one_given_chain_traversal_can_emit_less_than_specinfer():
    """...in expectation only: for a fixed drawn chain the search finds one where it emits less."""
    V = 3

    def shorter(args) -> bool:
        p, q, toks = args
        tree = DraftTree(tuple(range(len(toks))), tuple(toks))
        law_t = verify_tree_law(tree, p, q, verify="traversal", sampling="iid", context=(0,))
        law_s = verify_tree_law(tree, p, q, verify="specinfer", sampling="iid", context=(0,))
        return tau_of(law_t) < tau_of(law_s)

    p, q, toks = find(
        st.tuples(
            tables(V, 1, name="target"),
            tables(V, 1, name="draft", zeros=False),
            st.lists(st.integers(0, V - 1), min_size=1, max_size=3),
        ),
        shorter,
        settings=settings(max_examples=2000, database=None, derandomize=True, phases=[Phase.generate]),
    )
    assert len(toks) >= 2  # on a single draft token the two verifiers coincide


# --- brute and the subtree recursion agree -------------------------------------------------------


@pytest.mark.parametrize("L", [0, 1, 2])
def test_brute_and_classes_agree_exactly(L):
    """Every shape kind, sampling and verifier (lossy pairings included), tables of context length
    L: same round and token laws, and each method stays within its size estimate."""
    more(2)(given(static_cases(max_trees=300, context_length=L))(check_brute_and_classes_agree))()


def check_brute_and_classes_agree(case):
    bru, cls = Exact(case, "brute"), Exact(case, "classes")
    assert bru.round_law() == cls.round_law()
    assert bru.token_law() == cls.token_law()
    assert bru.counter.enumerated <= bru.counter.rounds * family_of(case.scheme).estimate(case, "brute", SPEC)
    assert cls.counter.enumerated <= cls.counter.rounds * family_of(case.scheme).estimate(case, "classes", SPEC)


def _random_tables_case(V: int, scheme: StaticScheme) -> Case:
    row = [str(F(w, V * (V + 1) // 2)) for w in range(1, V + 1)]
    q = TableModel.from_rows({"": row, **{str(i): row[i:] + row[:i] for i in range(V)}}, context_length=1, name="draft")
    p = TableModel.from_rows(
        {"": row[::-1], **{str(i): row[::-1][i:] + row[::-1][:i] for i in range(V)}}, context_length=1, name="target"
    )
    return Case(q, p, scheme, (0,), 1)


@pytest.mark.parametrize("sampling,verify", sorted({*LOSSLESS_PAIRINGS, ("wor", "specinfer")}))
def test_classes_visit_far_fewer_outcomes_than_brute(sampling, verify):
    case = _random_tables_case(4, StaticScheme("branching", (2, 2), sampling, verify))
    bru, cls = Exact(case, "brute"), Exact(case, "classes")
    assert bru.round_law() == cls.round_law()
    assert cls.counter.enumerated * 5 < bru.counter.enumerated


def test_the_rheo_familys_verification_rules_do_not_apply():
    case = _random_tables_case(3, StaticScheme("branching", (2,), "iid", "specinfer"))
    with pytest.raises(CaseError, match="do not apply to the static family"):
        Exact(case, rules=Rules())


# --- lossless pairings: exact TV = 0; the lossy one: a case with TV > 0 -----------------------------

UNIFORM3 = {"": ["1/3"] * 3, "0": ["1/2", "1/4", "1/4"], "1": ["1/4", "1/2", "1/4"], "2": ["1/4", "1/4", "1/2"]}
ONE_HOT_P = {k: [str(x) for x in one_hot(3, i % 3)] for i, k in enumerate(UNIFORM3)}
ONE_HOT_Q = {k: [str(x) for x in one_hot(3, (i + 1) % 3)] for i, k in enumerate(UNIFORM3)}


def _case(draft, target, scheme: StaticScheme, tokens: int = 3) -> Case:
    return Case(
        TableModel.from_rows(draft, context_length=1, name="draft"),
        TableModel.from_rows(target, context_length=1, name="target"),
        scheme,
        (0,),
        tokens,
    )


@pytest.mark.lossless
@pytest.mark.parametrize("sampling,verify", sorted(LOSSLESS_PAIRINGS))
def test_compatible_pairings_are_exactly_lossless(sampling, verify):
    @more(2)
    @given(
        static_cases(
            sampling=sampling, verify=verify, max_vocab=4, max_nodes=6, max_tokens=3, max_trees=3000, method="classes"
        )
    )
    @example(_case(UNIFORM3, UNIFORM3, StaticScheme("branching", (2, 2), sampling, verify)))  # p == q
    @example(_case(UNIFORM3, ONE_HOT_P, StaticScheme("delayed", (2, 1, 1), sampling, verify)))  # T = 0 target
    def check(case):
        assert exact_tv(case) == 0

    check()


WOR_SPECINFER = dict(sampling="wor", verify="specinfer", max_vocab=3, max_nodes=3, max_tokens=1)


def test_search_finds_a_lossy_case_for_wor_siblings_under_specinfer():
    """SpecInfer's proposal stays q while wor draws the next sibling from q without the drawn
    tokens: the search finds a case with TV > 0, and the same case under rrsw is lossless."""
    found = find(
        static_cases(**WOR_SPECINFER),
        lambda cs: exact_tv(cs) > 0,  # not shrunk: ~20x faster
        settings=settings(max_examples=2000, database=None, derandomize=True, phases=[Phase.generate]),
    )
    assert exact_tv(found, "brute") == exact_tv(found) > 0
    fixed = Case(
        found.draft,
        found.target,
        StaticScheme(found.scheme.kind, found.scheme.sizes, "wor", "rrsw"),
        found.context,
        found.tokens,
        found.draft_sample,
    )
    assert exact_tv(fixed) == 0


# --- T = 0: every sampling law is a point mass on its argmax ----------------------------------------


@pytest.mark.parametrize("sampling", SAMPLINGS)
@pytest.mark.parametrize("verify", VERIFIERS)
def test_point_mass_drafts(sampling, verify):
    """A one-hot q_samp draws one token per node: wor drafts a single child per node (its support),
    iid drafts duplicates; every pairing then emits the target's law (here one-hot too)."""
    case = _case(ONE_HOT_Q, ONE_HOT_P, StaticScheme("branching", (2, 2), sampling, verify))
    bru = Exact(case, "brute")
    assert bru.round_law() == Exact(case, "classes").round_law()
    assert bru.counter.enumerated == 1  # one joint draw
    # the greedy target follows 0 -> 1 -> 2 -> 0 while the draft proposes 2 after 0: all of it rejected
    assert bru.round_law() == {(1,): 1}
    assert Exact(case, "classes").token_law() == {(1, 2, 0): 1}
    assert exact_tv(case) == 0 and exact_tv(case, "brute") == 0


# --- shapes ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind,sizes,parents",
    [
        ("branching", [2, 2], (0, 0, 1, 1, 2, 2)),
        ("branching", [1, 1, 1], (0, 1, 2)),
        ("delayed", [2, 1, 2], (0, 1, 2, 1, 4)),
        ("delayed", [3, 0, 1], (0, 0, 0)),
        ("delayed", [1, 2, 1], (0, 1, 2)),
        ("delayed", [4, 2, 0], (0, 1)),
        ("parents", [0, 0, 1, 1, 2], (0, 0, 1, 1, 2)),
    ],
)
def test_shapes_become_parents(kind, sizes, parents):
    s = StaticScheme.from_json({"family": "static", kind: sizes, "sampling": "iid", "verify": "rrsw"})
    assert s.parents == parents
    assert StaticScheme.from_json(s.to_json()) == s


SKEWED3 = {
    "": ["1/2", "1/4", "1/4"],
    "0": ["1/4", "1/4", "1/2"],
    "1": ["1/2", "1/3", "1/6"],
    "2": ["1/6", "2/3", "1/6"],
}


@SETTINGS
@given(static_schemes(max_nodes=8))
def test_a_round_emits_one_to_depth_plus_one_tokens(scheme):
    case = _case(UNIFORM3, SKEWED3, scheme, tokens=1)
    law = Exact(case, "classes", max_trees=None).round_law()
    assert sum(law.values()) == 1
    assert all(1 <= len(seq) <= scheme.D + 1 for seq in law)
