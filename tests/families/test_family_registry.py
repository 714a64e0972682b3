"""The family registries (rheo_ref.family, rheo_fast.family, rheo.families.registry): a family is a folder
and one registry entry per layer, nothing else.

The test defines a toy family here, in the test, and adds it through the three registries
alone: `toy`, plain autoregressive decoding as a tree scheme with no draft node (a round draws
its one token from p with its one coin, so it is lossless and τ = 1). It must then work end to
end, with no edit anywhere else: `rheo exact`, `rheo sample`, `rheo compare`, `rheo audit` (the
whole command, kept to the toy's rows by `--family toy`: exact TV, τ, brute = classes and the
fast path's verdict), the gate matrix (its row joins the matrix and the per-test α shrinks to
keep the family-wise total) and the fuzz harness's case strategies. A family that needs an edit outside its folders shows
up here as a failure.

The gate check of the toy row is a χ² test at the gate's derived α with power 0.99 at the gate's
δ (it asserts its detectable TV <= δ); its negative control is a broken toy (a round that draws
from q_samp instead of p, exact TV to the target > δ on these tables), which the same check
rejects.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

import pytest
import torch
from helpers import load_json, write_case
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rheo.families.registry as suite_registry
import rheo_fast.family as fast_registry
import rheo_ref.family as ref_registry
from rheo.cli import main
from rheo.compare import CompareCell
from rheo.selfgate.matrix import (
    CHECKS,
    DELTA,
    FAMILY_ALPHA,
    StatsError,
    all_schemes,
    alpha_per_test,
    gate_case,
    gate_cases,
    library_tests,
    run_check,
)
from rheo_fast.models import as_rows
from rheo_fast.slots import inverse_cdf as fast_inverse_cdf
from rheo_fast.tree import Tree
from rheo_fast.verify import Verdict
from rheo_ref.coins import coin, inverse_cdf
from rheo_ref.exact import Exact, target_law, tv
from rheo_ref.models import Case
from rheo_ref.sizes import Size
from rheo_ref.strategies import case_around, family_cases
from rheo_ref.validate import check_fields

# --- the toy family, in three registry entries -------------------------------------------------


@dataclass(frozen=True)
class ToyScheme:
    """No draft node: each round emits one token drawn from p."""

    family: ClassVar[str] = "toy"

    @property
    def D(self) -> int:
        return 0

    @property
    def nodes(self) -> int:
        return 0

    @classmethod
    def from_json(cls, obj: Any) -> ToyScheme:
        check_fields(obj, "scheme", (), ("family",))
        return cls()

    def to_json(self) -> dict:
        return {"family": "toy"}

    def check_vocab(self, vocab_size: int) -> None:
        return None

    def describe(self) -> str:
        return "toy: one token from p per round"


class ToyRounds:
    def __init__(self, case: Case, method: str, **_: Any) -> None:
        self.case, self.method, self.enumerated = case, method, 0

    def round_law(self, context: tuple[int, ...]) -> dict:
        self.enumerated += 1
        return {(y,): p for y, p in enumerate(self.case.target.row(context)) if p}


def toy_replay(case: Case, context: tuple[int, ...], coins: Any, variant: Any = None) -> tuple[int, ...]:
    return (inverse_cdf(case.target.row(context), coin(coins[0])),)


@dataclass
class RootOnly:
    """The tree of a round without draft nodes: the root, with the context the model sees."""

    path: torch.Tensor  # [B, 1, P]
    depth: torch.Tensor  # [1]
    P: int
    windows = Tree.windows
    all_windows = Tree.all_windows
    position_ids = Tree.position_ids


@dataclass(frozen=True)
class ToyLayout:
    n_coins: int = 1


def toy_round(model: Any, state: Any, scheme: Any, coins: torch.Tensor, todo: Any, *, variant: Any, layout: Any):
    B, dev = coins.shape[0], coins.device
    prefix = model.prefix(state) if model.prefix_len else torch.zeros((B, 0), dtype=torch.int64, device=dev)
    tree = RootOnly(prefix[:, None, :], torch.zeros(1, dtype=torch.int64, device=dev), prefix.shape[1])
    root = torch.zeros(B, dtype=torch.int64, device=dev)  # [B]
    p = as_rows(model.target(state, tree)).at(root)  # [B, V]
    y = fast_inverse_cdf(p, coins[:, 0])  # [B]
    return Verdict(y[:, None], torch.ones(B, dtype=torch.int64, device=dev), root[:, None], torch.isnan(p).any(-1))


def broken_toy_round(model: Any, state: Any, scheme: Any, coins: torch.Tensor, todo: Any, *, variant: Any, layout: Any):
    """The negative control: the token drawn from the draft's row instead of p."""
    v = toy_round(model, state, scheme, coins, todo, variant=variant, layout=layout)
    B, dev = coins.shape[0], coins.device
    prefix = model.prefix(state) if model.prefix_len else torch.zeros((B, 0), dtype=torch.int64, device=dev)
    tree = RootOnly(prefix[:, None, :], torch.zeros(1, dtype=torch.int64, device=dev), prefix.shape[1])
    q = model.draft(state, tree, torch.zeros((B, 1), dtype=torch.int64, device=dev)).q_samp[:, 0]  # [B, V]
    return Verdict(fast_inverse_cdf(q, coins[:, 0])[:, None], v.n_emitted, v.visited, v.missing)


@st.composite
def toy_cases(draw, *, max_trees: int, max_tokens: int) -> Case:
    return draw(case_around(ToyScheme(), draw(st.integers(2, 4)), 1, None, True, max_tokens))


REF = ref_registry.Family(
    name="toy",
    scheme=ToyScheme,
    summary="autoregressive decoding: no draft node",
    rounds=ToyRounds,
    estimate=lambda case, method, variant: Size.of(1),
    estimate_what=lambda case, method: "toy: one outcome per round",
    replay=toy_replay,
    cases=toy_cases,
)
FAST = fast_registry.FastFamily(name="toy", layout=lambda s: ToyLayout(), play_round=toy_round, rows=lambda s: (1, 1))
SUITE = suite_registry.SuiteFamily(
    name="toy",
    gate_schemes={"toy": ToyScheme()},
    gate_rows=lambda: {
        "toy/T1": gate_case("toy/T1", "toy"),
        "toy/T0.5/zeros": gate_case("toy/T0.5/zeros", "toy", zeros=True, temp="0.5"),
    },
    compare_cells=lambda N, V: [CompareCell(N, "toy", "toy AR", "toy AR", "none", ToyScheme(), "toy")],
    compare_rule="toy: no draft node.",
    audit_rows=lambda q, p: [("toy AR", Case(q, p, ToyScheme(), (0,), 3))],
)


@pytest.fixture
def toy():
    """The toy family in all three registries, for one test."""
    before = len(gate_cases()) * len(CHECKS)
    ref_registry.register(REF)
    fast_registry.register(FAST)
    suite_registry.register(SUITE)
    try:
        yield before
    finally:
        suite_registry.unregister("toy")
        fast_registry.unregister("toy")
        ref_registry.unregister("toy")


SMALL = load_json("small.json")
TOY_CASE = {**SMALL, "scheme": {"family": "toy"}}


def run(capsys, *args: str) -> tuple[int, str, str]:
    rc = main(list(args))
    out, err = capsys.readouterr()
    return rc, out, err


# --- the registries themselves -----------------------------------------------------------------


def test_the_built_in_families_are_registered_in_every_layer_under_one_name():
    names = list(ref_registry.families())
    assert names == list(ref_registry.DEFAULT_FAMILIES)
    assert list(fast_registry.fast_families()) == names == list(suite_registry.suite_families())
    for name, fam in ref_registry.families().items():
        assert fam.scheme.family == name
        assert set(fam.builds_on) < set(names) - {name}, (name, fam.builds_on)


def test_an_unknown_family_is_refused_with_the_allowed_names(tmp_path, capsys):
    rc, _, err = run(capsys, "exact", write_case(tmp_path, {**SMALL, "scheme": {"family": "toy"}}))
    assert rc == 2 and "unknown scheme family 'toy'" in err and "treespark" in err, err
    with pytest.raises(ref_registry.CaseError, match="already registered"):
        ref_registry.register(ref_registry.Family(**{**REF.__dict__, "name": "static"}))
    with pytest.raises(ref_registry.CaseError, match="built in"):
        ref_registry.unregister("rheo")


# --- the toy family end to end -----------------------------------------------------------------


def test_toy_family_exact_and_sample(toy, tmp_path, capsys):
    path = write_case(tmp_path, TOY_CASE)
    for method in ("dp", "classes", "brute"):
        rc, out, err = run(capsys, "exact", path, "--method", method)
        assert rc == 0, err
        got = json.loads(out)
        assert got["tv"] == "0" and got["tau"] == "1" and got["law"] == got["target"], got
    rc, out, err = run(capsys, "sample", path, "--samples", "400", "--seed", "3")
    assert rc == 0, err
    got = json.loads(out)
    assert sum(got["counts"].values()) == 400 and got["first_round"]["tau"] == 1.0
    law = {tuple(map(int, k.split(","))) for k in json.loads(run(capsys, "exact", path)[1])["law"]}
    assert {tuple(map(int, k.split(","))) for k in got["counts"]} <= law  # only sequences of positive p


def test_toy_family_compare_and_audit(toy, tmp_path, capsys):
    rc, out, err = run(capsys, "compare", write_case(tmp_path, TOY_CASE), "--nodes", "2", "--json")
    assert rc == 0, err
    rows = [r for r in json.loads(out)["rows"] if r["family"] == "toy"]
    assert len(rows) == 1 and rows[0]["tau"] == "1" and rows[0]["tv"] == "0", rows
    assert "toy: no draft node." in json.loads(out)["rules"]
    with pytest.raises(SystemExit) as done:
        main(["compare", "--help"])
    assert done.value.code == 0 and "toy: no draft node." in capsys.readouterr().out  # the help's rules too
    report = tmp_path / "audit.json"
    rc, out, err = run(capsys, "audit", "--family", "toy", "--json", str(report))  # the whole audit, toy rows only
    assert rc == 0, err
    (row,) = json.loads(report.read_text())
    assert row["scheme"] == "toy AR" and row["params"] == {"family": "toy"}, row
    assert row["tv"] == "0" and row["tau"] == "1" and row["brute"] == row["classes"] > 0, row
    assert row["fast"]["verdict"] == "pass" and row["fast"]["N"] > 0, row["fast"]
    assert "toy AR" in out


def test_toy_family_joins_the_gate_matrix_and_alpha_follows(toy):
    rows = {n: gc for n, gc in gate_cases().items() if gc.case.scheme.family == "toy"}
    assert set(rows) == {"toy/T1", "toy/T0.5/zeros"}
    matrix = len(gate_cases()) * len(CHECKS)
    assert matrix == toy + len(rows) * len(CHECKS)
    tests = matrix + library_tests()  # the case library's tests share the family-wise total
    assert alpha_per_test() == FAMILY_ALPHA / tests < FAMILY_ALPHA / (toy + library_tests())
    for gc in rows.values():
        res = run_check(gc, "joint2")
        assert res.detectable_tv <= DELTA and not res.rejected, res.summary()


def test_a_gate_scheme_name_another_family_gives_is_refused(toy):
    taken = next(iter(suite_registry.suite_families()["rheo"].gate_schemes))
    suite_registry.register(suite_registry.SuiteFamily("toy", gate_schemes={taken: ToyScheme()}))
    with pytest.raises(StatsError, match=rf"family 'toy': gate schemes \['{taken}'\] are already another family's"):
        all_schemes()


def test_the_gate_rejects_a_broken_toy(toy):
    gc = gate_cases()["toy/T1"]
    exact_tv = tv(Exact(gc.case).token_law(2), target_law(gc.case, 2))
    assert exact_tv == 0
    fast_registry.register(fast_registry.FastFamily("toy", FAST.layout, broken_toy_round, FAST.rows))
    q_law = {}
    for a, pa in enumerate(gc.case.q_samp_model.row((0,))):
        for b, pb in enumerate(gc.case.q_samp_model.row((0, a))):
            if pa * pb:
                q_law[(a, b)] = pa * pb
    assert tv(q_law, target_law(gc.case, 2)) > Fraction(DELTA)  # the control is detectable by design
    res = run_check(gc, "joint2", mutant=None)
    assert res.rejected, res.summary()


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(data=st.data())
def test_toy_family_is_in_the_fuzz_harness_case_strategies(data):
    ref_registry.register(REF)
    try:
        case = data.draw(family_cases(max_trees=60, max_tokens=2))
        assert ref_registry.family_of(case.scheme).name in ref_registry.families()
        ex = Exact(case, "classes")
        assert tv(ex.token_law(), target_law(case)) == 0 or case.scheme.family != "toy"
        toys = data.draw(REF.cases(max_trees=60, max_tokens=2))
        assert Exact(toys, "brute").tau() == 1
    finally:
        ref_registry.unregister("toy")
