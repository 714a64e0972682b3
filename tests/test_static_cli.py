"""`rheo exact` on the static family: the scheme's JSON format, the same output contract as the
rheo family, and bad input (exit 2, one line naming the value and what is allowed)."""

from __future__ import annotations

import copy
import json
from fractions import Fraction

import pytest
from helpers import CASES, load_json, run_rheo, write_case

from rheo_ref.errors import CaseError
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.static.scheme import StaticScheme
from rheo_ref.family import MAX_NODES
from rheo_ref.models import Case, load_case

STATIC = load_json("static.json")


def with_scheme(**scheme) -> dict:
    case = copy.deepcopy(STATIC)
    case["scheme"] = scheme
    return case


def test_existing_case_files_keep_their_meaning():
    for name in ("small.json", "table1.json"):
        case = load_case(str(CASES / name))
        assert isinstance(case.scheme, Scheme) and case.scheme.family == "rheo"
    explicit = load_json("small.json")
    explicit["scheme"]["family"] = "rheo"
    assert Case.from_json(explicit) == load_case(str(CASES / "small.json"))


def test_the_example_case_file_is_static():
    case = load_case(str(CASES / "static.json"))
    assert isinstance(case.scheme, StaticScheme) and case.scheme.family == "static"
    assert Case.from_json(case.to_json()) == case


@pytest.mark.parametrize("method", ["classes", "brute"])
def test_exact_prints_the_documented_json(tmp_path, method):
    res = run_rheo("exact", write_case(tmp_path, STATIC), "--method", method)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert set(out) == {"law", "target", "tv", "tau", "round_lengths", "acceptance", "method", "enumerated", "seconds"}
    assert out["method"] == method and out["enumerated"] > 0
    assert out["tv"] == "0" and out["law"] == out["target"]
    assert all(len(k.split(",")) == STATIC["tokens"] for k in out["law"])
    lengths = {int(k): Fraction(v) for k, v in out["round_lengths"].items()}
    assert sum(lengths.values()) == 1 and Fraction(out["tau"]) == sum(k * v for k, v in lengths.items())
    assert max(lengths) <= load_case(str(CASES / "static.json")).scheme.D + 1


# Two over-proposed tokens (0, 1) and an unequal residual on (2, 3): wor's second draw comes from
# q without the first token, which specinfer's min(1, r/q) does not account for.
TWO_OVER = {
    "draft": {"vocab_size": 4, "context_length": 0, "probs": {"": ["3/8", "3/8", "1/8", "1/8"]}},
    "target": {"vocab_size": 4, "context_length": 0, "probs": {"": ["1/8", "1/8", "1/2", "1/4"]}},
    "context": [],
    "tokens": 2,
}


@pytest.mark.parametrize("verify,lossless", [("specinfer", False), ("rrsw", True), ("traversal", True)])
def test_both_methods_print_the_same_laws(tmp_path, verify, lossless):
    case = dict(TWO_OVER, scheme={"family": "static", "delayed": [2, 0, 1], "sampling": "wor", "verify": verify})
    path = write_case(tmp_path, case)
    outs = [json.loads(run_rheo("exact", path, "--method", m).stdout) for m in ("classes", "brute")]
    for field in ("law", "tv", "tau", "round_lengths", "acceptance"):
        assert outs[0][field] == outs[1][field], field
    assert (outs[0]["tv"] == "0") == lossless, outs[0]["tv"]


BAD = [
    (
        "unknown family",
        dict(family="medusa", branching=[2], sampling="iid", verify="rrsw"),
        "unknown scheme family 'medusa'; allowed: rheo, static, tsubame, treespark",
    ),
    (
        "unknown verifier",
        dict(family="static", branching=[2], sampling="iid", verify="rheo"),
        "unknown static verifier 'rheo'; allowed: specinfer, rrsw, traversal",
    ),
    (
        "unknown sampling",
        dict(family="static", branching=[2], sampling="topk", verify="rrsw"),
        "unknown sibling sampling 'topk'; allowed: iid, wor",
    ),
    ("zero branch", dict(family="static", branching=[2, 0], sampling="iid", verify="rrsw"), "branch 0 must be >= 1"),
    ("negative branch", dict(family="static", branching=[-1], sampling="iid", verify="rrsw"), "branch -1 must be >= 1"),
    ("empty branching", dict(family="static", branching=[], sampling="iid", verify="rrsw"), "at least one depth"),
    (
        "parents out of order",
        dict(family="static", parents=[0, 2], sampling="iid", verify="rrsw"),
        "node 2's parent 2 is out of order; allowed 0..1",
    ),
    (
        "negative parent",
        dict(family="static", parents=[-1], sampling="iid", verify="rrsw"),
        "parent -1 is out of order",
    ),
    (
        "too many nodes",
        dict(family="static", branching=[16, 16], sampling="iid", verify="rrsw"),
        f"more than {MAX_NODES} draft nodes",
    ),
    ("delayed length", dict(family="static", delayed=[2, 1], sampling="iid", verify="rrsw"), "must be [K, L1, L2]"),
    (
        "delayed no rollout",
        dict(family="static", delayed=[0, 1, 1], sampling="iid", verify="rrsw"),
        "allowed K >= 1 rollouts",
    ),
    ("delayed nothing", dict(family="static", delayed=[3, 0, 0], sampling="iid", verify="rrsw"), "drafts no node"),
    (
        "two shapes",
        dict(family="static", branching=[2], parents=[0], sampling="iid", verify="rrsw"),
        "give exactly one of branching, delayed, parents",
    ),
    ("no shape", dict(family="static", sampling="iid", verify="rrsw"), "gives 0 shapes"),
    ("missing verify", dict(family="static", branching=[2], sampling="iid"), "static scheme is missing 'verify'"),
    ("rheo field", dict(family="static", branching=[2], sampling="iid", verify="rrsw", K=2), "unknown field(s) ['K']"),
    ("not a list", dict(family="static", branching=3, sampling="iid", verify="rrsw"), "must be a list of integers"),
    (
        "bool branch",
        dict(family="static", branching=[True], sampling="iid", verify="rrsw"),
        "must be a list of integers",
    ),
]


@pytest.mark.parametrize("name,scheme,needle", BAD, ids=[b[0] for b in BAD])
def test_bad_scheme_exits_2_with_one_line(tmp_path, name, scheme, needle):
    with pytest.raises(CaseError) as err:
        Case.from_json(with_scheme(**scheme))
    assert needle in str(err.value)
    res = run_rheo("exact", write_case(tmp_path, with_scheme(**scheme)))
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert needle in lines[0], lines[0]
    assert res.stdout == ""


def test_the_size_limit_is_inclusive():
    assert StaticScheme("branching", (MAX_NODES,), "iid", "rrsw").nodes == MAX_NODES
    with pytest.raises(CaseError, match="more than"):
        StaticScheme("parents", (0,) * (MAX_NODES + 1), "iid", "rrsw")


def test_too_large_enumeration_refuses_up_front_and_force_overrides(tmp_path):
    path = write_case(tmp_path, with_scheme(family="static", branching=[2, 2], sampling="iid", verify="traversal"))
    res = run_rheo("exact", path, "--method", "brute", "--max-trees", "100")
    assert res.returncode == 2 and "outcomes per round" in res.stderr and "--force" in res.stderr
    res = run_rheo("exact", path, "--method", "brute", "--max-trees", "100", "--force", "--tokens", "1")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["enumerated"] > 100


def test_rheo_sample_runs_the_static_family(tmp_path):
    """A real process (the fast path's own tests are in tests/test_static_fast.py)."""
    res = run_rheo("sample", write_case(tmp_path, STATIC), "--samples", "10", "--seed", "1")
    assert res.returncode == 0 and res.stderr == "", res.stderr
    out = json.loads(res.stdout)
    assert sum(out["counts"].values()) == 10 and all(len(k.split(",")) == STATIC["tokens"] for k in out["counts"])
