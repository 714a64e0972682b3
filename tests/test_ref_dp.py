"""Method `dp` (rheo_ref.families.rheo.bestfirst, docs/EXACT_AT_SCALE.md): exact, the same laws as brute force
and as the class enumeration on generated cases of every family, the kept trees of the worked
example of docs/ALGORITHM.md §4, far fewer outcomes, round laws cached by context, and its refusals."""

from __future__ import annotations

import json
import random
import re
from fractions import Fraction as F
from pathlib import Path

import pytest
from helpers import load_json, run_rheo, write_case
from hypothesis import HealthCheck, example, given, settings
from test_ref_exact import CONST_PROXY_MINIMAL, ONE_HOT, P_EQ_Q, TRUE_PROXY_MINIMAL, _table

from rheo_ref.errors import CaseError, TooLargeError
from rheo_ref.exact import Exact, target_law, tv
from rheo_ref.families.rheo.bestfirst import BestFirstRounds, Plans, kept_trees, shape_of
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.rheo.strategies import cases
from rheo_ref.families.rheo.verify import Rules
from rheo_ref.families.static.strategies import static_cases
from rheo_ref.models import Case, Proxy
from rheo_ref.strategies import random_table

SETTINGS = settings(suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
ALGORITHM = (Path(__file__).resolve().parents[1] / "docs" / "ALGORITHM.md").read_text()
# The complete example of docs/ALGORITHM.md §10 (worked through in §3-§5), and what the doc says it prints.
DOC_CASE = json.loads(re.search(r"\*\*Complete example\*\*.*?```json\n(.*?)```", ALGORITHM, re.S).group(1))
DOC_OUTPUT = json.loads(re.search(r"prints \(one line, wrapped here.*?```json\n(.*?)```", ALGORITHM, re.S).group(1))


@SETTINGS
@given(cases(proxy=None, max_trees=300, method="brute", max_tokens=2))
@example(P_EQ_Q.with_scheme(D=2, R=4))
@example(ONE_HOT)
@example(TRUE_PROXY_MINIMAL)
@example(CONST_PROXY_MINIMAL)
def test_dp_equals_brute_force(case):
    """Every proxy, both orders, separate sampling tables or not: the same round and token laws."""
    b, d = Exact(case, "brute"), Exact(case, "dp")
    assert d.round_law() == b.round_law()
    assert d.token_law() == b.token_law()
    assert d.counter.enumerated <= b.counter.enumerated


@SETTINGS
@given(cases(proxy=None, max_trees=1500, method="classes", max_tokens=1, max_depth=4, max_vocab=5))
def test_dp_equals_classes_on_deeper_trees(case):
    """Depth 4, where laziness skips most of the tree (brute force would be too slow here)."""
    assert Exact(case, "dp").round_law() == Exact(case, "classes").round_law()


@SETTINGS
@given(static_cases(max_nodes=4, max_tokens=2, max_trees=300, method="brute"))
def test_dp_equals_brute_force_static_family(case):
    """Family static: dp is its subtree recursion."""
    assert Exact(case, "dp").token_law() == Exact(case, "brute").token_law()


def test_kept_trees_of_the_worked_example():
    """docs/ALGORITHM.md §4: W = 1, D = 2, R = 4. Kept {1, 2, 4, 5} when y = 1 (prob 4/5), {1, 2, 3, 4}
    when y = 2 (prob 1/5); node 2 (y) is never expanded, so y stays unresolved until its fill decides."""
    case = Case.from_json(DOC_CASE)
    got = {}
    for prob, kept in kept_trees(case, (), Plans(case)):
        got[tuple((n.kind, n.tokens, n.depth) for n in kept[1:])] = prob
    assert got == {
        (("det", (0,), 1), ("sampled", (1,), 1), ("det", (0,), 2), ("sampled", (1, 2), 2)): F(4, 5),
        (("det", (0,), 1), ("sampled", (2,), 1), ("fill", (1,), 1), ("det", (0,), 2)): F(1, 5),
    }
    assert Exact(case, "dp").tau() == F(11, 5)


def test_doc_case_by_every_method():
    case = Case.from_json(DOC_CASE)
    laws = {m: Exact(case, m).token_law() for m in ("dp", "classes", "brute")}
    assert laws["dp"] == laws["classes"] == laws["brute"] == target_law(case)


def test_the_documented_output():
    res = run_rheo_case(DOC_CASE, "--method", "dp")
    assert {k: v for k, v in res.items() if k != "seconds"} == {k: v for k, v in DOC_OUTPUT.items() if k != "seconds"}


def test_same_kept_tree_is_one_outcome():
    """With the `true` proxy the classes of y are chosen when the sampled child is created (its
    factor depends on y); branches that end with the same kept tree merge before verification."""
    rng = random.Random(0)
    q, p = random_table(rng, 6, "draft"), random_table(rng, 6, "target")
    case = Case(q, p, Scheme(3, 1, 2, 3, 5, Proxy("true")), (0,))
    rounds = BestFirstRounds(case)
    law = rounds.round_law(case.context)
    shapes = [shape_of(kept) for _, kept in kept_trees(case, case.context, rounds.plans)]
    assert rounds.distinct == len(set(shapes)) < len(shapes) == rounds.enumerated
    assert law == Exact(case, "brute").round_law()


def test_far_fewer_outcomes_than_classes_on_a_deep_tree():
    V = 6
    row = [str(F(w, 21)) for w in range(1, V + 1)]
    q = _table({"": row, **{str(i): row[::-1] for i in range(V)}}, "draft")
    p = _table({"": row[::-1], **{str(i): row for i in range(V)}}, "target")
    case = Case(q, p, Scheme(3, 1, 2, 4, 6), (0,), 1)
    c, d = Exact(case, "classes"), Exact(case, "dp")
    assert d.round_law() == c.round_law()
    assert d.counter.enumerated * 20 < c.counter.enumerated


def test_rounds_are_cached_by_visible_context():
    """A 3-token law computes one round law per context the models can tell apart, once."""
    case = Case.from_json(load_json("small.json"))
    ex = Exact(case, "dp")
    law = ex.token_law(3)
    reached = {case.visible(case.context + s[:k]) for s in law for k in range(3)}
    assert ex.counter.rounds <= len(reached)
    before = (ex.counter.rounds, ex.counter.enumerated)
    assert ex.token_law(3) == law and (ex.counter.rounds, ex.counter.enumerated) == before
    assert tv(law, target_law(case, 3)) == 0


def test_dp_refuses_other_rules_and_a_scaled_proxy_above_one_up_front():
    case = Case.from_json(load_json("small.json"))
    with pytest.raises(CaseError, match="spec's rules only"):
        Exact(case, "dp", rules=Rules())
    big = case.with_scheme(proxy="scaled:3")
    with pytest.raises(CaseError, match="> 1"):
        Exact(big, "dp")


def test_dp_stops_when_a_round_passes_the_limit():
    case = Case.from_json(load_json("small.json")).with_scheme(K=3, m=0, W=3, D=3, R=9)
    with pytest.raises(TooLargeError, match="passed 5 kept trees"):
        Exact(case, "dp", max_trees=5).round_law()
    assert Exact(case, "dp", max_trees=None).round_law() == Exact(case, "classes").round_law()


def run_rheo_case(case: dict, *args: str) -> dict:
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        res = run_rheo("exact", write_case(Path(tmp), case), *args)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def test_cli_default_chooses_and_agrees_with_brute_and_dp(tmp_path):
    """Without --method the chosen method (named in `choice`) gives brute's and dp's output."""
    path = write_case(tmp_path, DOC_CASE)
    out = {m: json.loads(run_rheo("exact", path, *(["--method", m] if m else [])).stdout) for m in ("", "brute", "dp")}
    assert out[""]["method"] == out[""]["choice"]["method"] and out["brute"]["method"] == "brute"
    same = lambda o: {k: v for k, v in o.items() if k not in ("method", "enumerated", "seconds", "choice")}
    assert same(out[""]) == same(out["brute"]) == same(out["dp"])


def test_cli_dp_limit_exits_2_with_one_line(tmp_path):
    case = load_json("small.json") | {"scheme": {"K": 3, "m": 0, "W": 3, "D": 3, "R": 9}}
    res = run_rheo("exact", write_case(tmp_path, case), "--method", "dp", "--max-trees", "5")
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert "passed 5 kept trees" in res.stderr and "--force" in res.stderr


@pytest.mark.parametrize("D", [10**18, 10**4000])
def test_a_depth_past_R_costs_nothing_and_changes_nothing(D):
    """A kept node's depth is at most R, so D >= R gives the laws of D = R, in no more memory (D
    = 10^18 once allocated a per-depth counter of D + 1 entries: a MemoryError)."""
    case = P_EQ_Q.with_scheme(K=3, m=1, W=2, D=4, R=4)
    deep = case.with_scheme(D=D)
    a, b = Exact(case, "dp"), Exact(deep, "dp")
    assert b.round_law() == a.round_law() and b.token_law(2) == a.token_law(2)
    assert b.tau() == a.tau()
