"""The static family under the lossless gate (docs/GATE_REFERENCE.md, "rheo's own gate"; docs/SCHEMES.md §8).

- The matrix's static rows (rheo.families.static.SCHEMES): every lossless pairing on a branching and a
  delayed shape at T = 1, 0.5 (a separate q_samp table, with zeros) and 0 (greedy), two at the fast
  path's own T = 0.5, and a parents shape. They run in tests/test_gate.py's parametrised gate test
  (α = ALPHA, power 0.99 at TV = DELTA); here: their coverage, and that the laws they test against
  are exact and lossless (brute force = subtree recursion, exact TV 0 to the target).
- The static mutants' exact counterparts come from the static exact methods under the variant's
  settings: brute = subtree recursion for the settings the recursion models (and it refuses the
  others), `specinfer-on-wor`'s law is the lossy pairing wor + specinfer's, and traversal's two
  leaf orders agree on the branching and delayed shapes (so the parents shape is needed).
- Coupled: the fast path running a static mutant emits, coin for coin, what the reference replay
  running it emits; the by-leaf traversal loop is the Euler walk wherever both apply.
- A mutant of one family on a case of the other is refused with one line, everywhere.
The negative controls themselves (the gate rejects every static mutant, each fast mutant fits its
exact counterpart) are tests/test_mutants.py's, parametrised over every family.
"""

from __future__ import annotations

import json
import random

import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_static_fast import Stream, exact_case

from rheo.cli import main
from rheo.families.static import MUTANT_CASES as STATIC_MUTANT_CASES
from rheo.families.static import SCHEMES as STATIC_SCHEMES
from rheo.families.static import SHAPES as STATIC_SHAPES
from rheo.selfgate.matrix import CHECKS, exact_tvs, gate_cases, mutant_case, mutant_cases
from rheo_fast.decode import decode
from rheo_fast.families.static.round import Walk, draw_tree, static_layout, verify_traversal, verify_traversal_by_leaves
from rheo_fast.models import TableTreeModel, as_rows
from rheo_ref.errors import CaseError
from rheo_ref.exact import Exact, target_law, tv
from rheo_ref.families.rheo.mutants import MutantExact
from rheo_ref.families.static.exact import ORDER_SETTINGS, StaticRounds
from rheo_ref.families.static.replay import replay_static_decode
from rheo_ref.families.static.scheme import LOSSLESS_PAIRINGS, SAMPLINGS, VERIFIERS, StaticScheme
from rheo_ref.families.static.strategies import static_cases
from rheo_ref.models import Case, TableModel
from rheo_ref.variants import MUTANTS, SPEC, Variant
from rheo_ref.verifier_laws import READ_BY

pytestmark = pytest.mark.usefixtures("one_thread")

CASES = gate_cases()
STATIC_ROWS = [name for name, gc in CASES.items() if gc.case.scheme.family == "static"]
STATIC_MUTANTS = sorted(n for n, v in MUTANTS.items() if v.family == "static")
# the settings the subtree recursion models (the others, ORDER_SETTINGS, need brute force)
IN_NODE = sorted(n for n in STATIC_MUTANTS if next(iter(MUTANTS[n].changed())) not in ORDER_SETTINGS)


def reads(name: str, verify: str) -> bool:
    """Whether a static verifier reads the setting mutant `name` changes."""
    (setting,) = MUTANTS[name].changed()
    return verify in READ_BY[setting]


# --- the matrix's static rows ---------------------------------------------------------------------


def test_static_rows_cover_every_lossless_pairing_on_both_shapes_at_three_temperatures():
    rows = {name: CASES[name] for name in STATIC_ROWS}
    for kind in ("branching", "delayed"):
        for sampling, verify in LOSSLESS_PAIRINGS:
            scheme = f"{kind}-{sampling}-{verify}"
            temps = {n.split("/", 1)[1] for n in rows if n.split("/")[0] == scheme}
            assert {"T1", "T0.5/zeros"} <= temps and temps & {"T0", "T0/zeros"}, (scheme, temps)
    assert {gc.T for gc in rows.values()} == {1.0, 0.5, 0.0}  # 0.5: the fast path's own temperature too
    assert all(gc.case.scheme_as(StaticScheme).lossless for gc in rows.values())
    assert {gc.case.scheme_as(StaticScheme).kind for gc in rows.values()} == {"branching", "delayed", "parents"}
    assert {n.split("/")[0] for n in rows} == set(STATIC_SCHEMES)
    assert {STATIC_SCHEMES[s].sizes for s in STATIC_SCHEMES} == set(STATIC_SHAPES.values())
    assert any("zeros" in n for n in rows) and any("zeros" not in n for n in rows)
    assert set(STATIC_MUTANT_CASES) <= set(rows)


@pytest.mark.parametrize("name", STATIC_ROWS)
def test_static_gate_references_are_exact_and_lossless(name):
    """The token law the joint checks test against is the spec's exactly (TV 0 to the target, so
    a rejection is a losslessness failure), and the round law the round checks test against is
    the same by brute force and by the subtree recursion."""
    gc = CASES[name]
    assert tv(Exact(gc.case).token_law(3), target_law(gc.case, 3)) == 0
    assert Exact(gc.case, "brute").round_law() == Exact(gc.case, "classes").round_law()


# --- the static mutants' exact counterparts -------------------------------------------------------


@pytest.mark.parametrize("name", IN_NODE)
def test_brute_force_and_the_subtree_recursion_agree_on_a_mutant(name):
    """Both exact methods read the settings; on each static mutant case whose verifier reads
    the setting, and on the iid rows, they give the same round and 3-token laws."""
    for case in (*STATIC_MUTANT_CASES, "parents-iid-traversal/T1", "branching-iid-rrsw/T0.5/zeros"):
        gc = CASES[case]
        if not reads(name, gc.case.scheme_as(StaticScheme).verify):
            continue
        brute, classes = (Exact(gc.case, m, variant=MUTANTS[name]) for m in ("brute", "classes"))
        assert brute.round_law() == classes.round_law(), case
        assert brute.token_law(3) == classes.token_law(3), case


@settings(
    suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow],
    deadline=None,
    max_examples=max(5, settings.default.max_examples // 4),
)
@given(data=st.data(), name=st.sampled_from(IN_NODE), sampling=st.sampled_from(SAMPLINGS))
def test_brute_force_and_the_subtree_recursion_agree_on_generated_cases(data, name, sampling):
    (setting,) = MUTANTS[name].changed()
    verify = data.draw(st.sampled_from(READ_BY[setting]), label="verify")
    case = data.draw(static_cases(sampling=sampling, verify=verify, max_trees=200), label="case")
    assert (
        Exact(case, "brute", variant=MUTANTS[name]).round_law()
        == Exact(case, "classes", variant=MUTANTS[name]).round_law()
    )


@pytest.mark.parametrize("name", sorted(n for n in STATIC_MUTANTS if n not in IN_NODE))
def test_the_subtree_recursion_refuses_an_order_setting(name):
    case = CASES["parents-wor-traversal/T0.5/zeros"].case
    with pytest.raises(CaseError, match="use method 'brute'") as e:
        Exact(case, "classes", variant=MUTANTS[name])
    assert "\n" not in str(e.value)
    assert Exact(case, "brute", variant=MUTANTS[name]).round_law()


def test_specinfer_on_wor_is_the_lossy_pairing():
    """The setting (rrsw's proposal row kept fixed) is wor + specinfer exactly, and lossy."""
    for name in ("branching-wor-rrsw/T0.5/zeros", "delayed-wor-rrsw/T1"):
        case = CASES[name].case
        lossy = case.with_scheme(verify="specinfer")
        assert not lossy.scheme_as(StaticScheme).lossless
        assert MutantExact(case, "specinfer-on-wor").token_law(3) == Exact(lossy).token_law(3)
        assert tv(Exact(lossy).token_law(3), target_law(case, 3)) > 0


@pytest.mark.parametrize("kind", ["branching", "delayed"])
def test_traversal_leaf_orders_agree_on_branching_and_delayed_shapes(kind):
    """Post-order and creation order visit the same leaves on these shapes (so the min-index
    mutant needs the parents shape); on the parents shape they differ: lossy under wor, and
    lossless but a different round law under iid (a fixed order of iid siblings)."""
    for sampling in SAMPLINGS:
        for gc in (CASES[f"{kind}-{sampling}-traversal/T1"], CASES[f"{kind}-{sampling}-traversal/T0.5/zeros"]):
            assert set(exact_tvs(gc, "traversal-min-index-leaf").values()) == {0}
    iid = exact_tvs(CASES["parents-iid-traversal/T1"], "traversal-min-index-leaf")
    assert iid["joint2"] == iid["joint3"] == 0 < iid["round"]
    assert min(exact_tvs(CASES["parents-wor-traversal/T0.5/zeros"], "traversal-min-index-leaf").values()) > 0


def test_every_static_mutant_runs_on_a_static_case_that_reads_its_setting():
    for name in STATIC_MUTANTS:
        assert mutant_case(name) in mutant_cases(name) and set(mutant_cases(name)) <= set(STATIC_MUTANT_CASES)
        assert all(reads(name, CASES[c].case.scheme_as(StaticScheme).verify) for c in mutant_cases(name))
    assert mutant_case("traversal-min-index-leaf") == "parents-wor-traversal/T0.5/zeros"
    assert mutant_case("specinfer-on-wor") == "branching-wor-rrsw/T0.5/zeros"


# --- coupled: fast path = reference replay, coin for coin, running a mutant -----------------------


def parents_case(sampling: str, verify: str, V: int = 5, seed: int = 3) -> Case:
    """Random first-order tables over V = 5, a zero in every row, a separate q_samp table, and the
    shape root -> 1, 2; 1 -> 3, 5; 2 -> 4 (two children per inner node, leaves out of post-order)."""
    rng = random.Random(seed)
    keys = [()] + [(i,) for i in range(V)]
    weights = lambda shift: {
        k: [0 if t == (i + shift) % V else rng.randint(1, 20) for t in range(V)] for i, k in enumerate(keys)
    }
    draft, sample, target = (
        TableModel.from_weights(weights(s), context_length=1, name=n)
        for s, n in ((0, "draft"), (1, "draft_sample"), (3, "target"))
    )
    return Case(draft, target, StaticScheme("parents", (0, 0, 1, 2, 1), sampling, verify), (0,), 3, sample)


COUPLED = [(name, verify) for name in STATIC_MUTANTS for verify in VERIFIERS if reads(name, verify)]


@pytest.mark.parametrize("T", [1.0, 0.5, 0.0])
@pytest.mark.parametrize("sampling", SAMPLINGS)
@pytest.mark.parametrize("name,verify", COUPLED)
def test_fast_mutant_replays_the_reference_mutant_coin_for_coin(name, verify, sampling, T):
    """40 trials, 3 tokens, coins with 5% exact zeros: every round of every trial is compared
    (the reference's decisions are all farther than 1e-9 from flipping here) and equal. At T = 1
    the mutant must also differ from the spec on some trial, so the comparison sees its step."""
    case = parents_case(sampling, verify)
    ref_case = exact_case(case, T)
    stream = Stream(case.scheme, 17, 0.05, trials=40)
    variant = MUTANTS[name]
    fast = decode(
        TableTreeModel(case, T=T),
        [case.context] * 40,
        case.scheme,
        case.tokens,
        coins=stream,
        variant=variant,
        keep_rounds=True,
    )
    differ = 0
    for b in range(40):
        rounds = replay_static_decode(ref_case, stream.trial(b), variant=variant)
        assert all(rd.comparable() for rd in rounds)
        for i, rd in enumerate(rounds):
            assert tuple(t for t in fast.per_round[i][b].tolist() if t >= 0) == rd.emitted, (b, i)
        spec = replay_static_decode(ref_case, stream.trial(b))
        differ += [rd.emitted for rd in spec] != [rd.emitted for rd in rounds]
    assert T != 1.0 or differ > 0


ROWS = [  # (α, Mb, Ms, x): S = 0; Ms(x) = 1 with S > 0 (the bad rate's limit, 1); a generic state
    ("1/2", ["1/4", "3/4", "0"], ["1/2", "1/2", "0"], 0),
    ("1/2", ["1", "0", "0"], ["0", "1", "0"], 1),
    ("2/3", ["1/2", "1/3", "1/6"], ["1/5", "3/10", "1/2"], 2),
]


@pytest.mark.parametrize("name", ["spec", "traversal-bad-rate", "traversal-wrong-update"])
def test_traversal_reject_is_one_rule_on_both_sides(name):
    """`rheo_ref.verifier_laws.traversal_reject` (exact) and `rheo_fast.families.static.round.traversal_reject`
    (float64) give the same (α, Mb, Ms) on states that reach every branch of the rate and Ms
    updates, at the root and below it, for both sampling modes (the coupled tests' cases never
    reach Ms(x) = 1 with S > 0)."""
    from fractions import Fraction

    from rheo_fast.families.static.round import traversal_reject as fast_reject
    from rheo_ref.verifier_laws import traversal_reject as ref_reject

    steps = (SPEC if name == "spec" else MUTANTS[name]).steps_of("static")
    seen = set()
    for alpha, Mb, Ms, x in ROWS:
        b, m = tuple(map(Fraction, Mb)), tuple(map(Fraction, Ms))
        for sampling in SAMPLINGS:
            for root in (False, True):
                a = Fraction(1) if root else Fraction(alpha)  # the root's α is 1
                ra, rb, rm = ref_reject(a, b, m, x, sampling, root=root, steps=steps)
                fa, fb, fm = fast_reject(
                    torch.tensor([float(a)], dtype=torch.float64),
                    torch.tensor([[float(t) for t in b]], dtype=torch.float64),
                    torch.tensor([[float(t) for t in m]], dtype=torch.float64),
                    torch.tensor([x]),
                    sampling,
                    root,
                    steps,
                )
                assert abs(fa.item() - float(ra)) < 1e-12
                assert torch.allclose(fb[0], torch.tensor([float(t) for t in rb], dtype=torch.float64), atol=1e-12)
                assert torch.allclose(fm[0], torch.tensor([float(t) for t in rm], dtype=torch.float64), atol=1e-12)
                seen.add(ra)
    assert len(seen) >= 3  # the rows reach different rates


def traversal_both_ways(
    case: Case, variant: Variant, coins: torch.Tensor, T: float, by_leaves: Variant | None = None
) -> tuple[torch.Tensor, ...]:
    """(end, bonus row) of the Euler walk running `variant` and of the by-leaf loop running
    `by_leaves` (default: the same variant) on the same drawn trees."""
    layout = static_layout(case.scheme_as(StaticScheme))
    model = TableTreeModel(case, T=T)
    state = model.start([case.context] * coins.shape[0])
    draw_c, accept_c, _ = layout.split(coins)
    tree, q_rows, _ = draw_tree(model, state, layout, draw_c)
    walk = Walk(as_rows(model.target(state, tree)), coins.shape[0], layout.N, coins.device)
    args = (tree, walk, q_rows, layout, accept_c, case.scheme_as(StaticScheme).sampling)
    steps, by_leaf_steps = (v.steps_of("static") for v in (variant, by_leaves or variant))
    return (*verify_traversal(*args, steps), *verify_traversal_by_leaves(*args, by_leaf_steps))


@pytest.mark.parametrize("name", ["spec", "traversal-bad-rate", "traversal-stale-bonus", "traversal-wrong-update"])
@pytest.mark.parametrize("sampling", SAMPLINGS)
def test_the_by_leaf_loop_is_the_euler_walk(name, sampling):
    """The by-leaf loop (serving the trial-dependent orders) ends at the same node with the same
    bonus row as the Euler walk wherever both apply (post-order, draw order), on 500 trials of the
    parents shape and of delayed [2, 1, 2], at T = 1 and T = 0; with the leaf order changed it does
    not (its teeth)."""
    variant = SPEC if name == "spec" else MUTANTS[name]
    for shape in (("parents", (0, 0, 1, 2, 1)), ("delayed", (2, 1, 2))):
        base = parents_case(sampling, "traversal")
        case = Case(base.draft, base.target, StaticScheme(*shape, sampling, "traversal"), (0,), 1, base.draft_sample)
        coins = Stream(case.scheme, 5, 0.05, trials=500)(0)
        for T in (1.0, 0.0):
            end, row, end2, row2 = traversal_both_ways(case, variant, coins, T)
            assert torch.equal(end, end2) and torch.allclose(row, row2, rtol=0, atol=1e-12)
    case = parents_case(sampling, "traversal")
    coins = Stream(case.scheme, 5, 0.0, trials=500)(0)
    end, _, end2, _ = traversal_both_ways(case, SPEC, coins, 1.0, MUTANTS["traversal-min-index-leaf"])
    assert not torch.equal(end, end2)


# --- refusals: one family's mutant on another family's case ---------------------------------------


def test_a_static_mutant_on_a_rheo_case_is_refused_with_one_line():
    rheo = CASES["rheo-m1/T0.5"].case
    static = CASES["branching-wor-rrsw/T1"].case
    for call, needle in [
        (
            lambda: decode(
                TableTreeModel(rheo),
                [rheo.context],
                rheo.scheme,
                2,
                generator=torch.Generator(),
                variant=MUTANTS["sorted-siblings"],
            ),
            "belongs to the static family",
        ),
        (lambda: MutantExact(rheo, "traversal-bad-rate"), "belongs to the static family"),
        (lambda: Exact(rheo, variant=MUTANTS["sorted-siblings"]), "belongs to the static family"),
        (lambda: Exact(rheo, variant=MUTANTS["fills-first"]), "rheo_ref.families.rheo.mutants"),
        (lambda: MutantExact(static, "fills-first"), "belongs to the rheo family"),
        (lambda: Exact(static, variant=MUTANTS["bonus-full-p"]), "belongs to the rheo family"),
        (lambda: StaticRounds(static, "brute", MUTANTS["proxy-true"]), "belongs to the rheo family"),
    ]:
        with pytest.raises(CaseError, match=needle) as e:
            call()
        assert "\n" not in str(e.value)


@pytest.fixture
def rheo_cli(capsys):
    """`rheo ARGS...` in this process: (exit status, stdout, stderr)."""

    def run(*args: str) -> tuple[int, str, str]:
        try:
            rc = main(list(args))
        except SystemExit as e:  # argparse
            rc = e.code
        out, err = capsys.readouterr()
        return rc, out, err

    return run


@pytest.mark.parametrize(
    "args,needle",
    [
        (
            ("--only", "sorted-siblings", "--case", "rheo-m1/T0.5"),
            "mutant 'sorted-siblings' belongs to the static family",
        ),
        (
            ("--only", "fills-first", "--case", "branching-wor-rrsw/T1"),
            "mutant 'fills-first' belongs to the rheo family",
        ),
    ],
    ids=["static-on-rheo", "rheo-on-static"],
)
def test_rheo_mutants_refuses_a_mutant_of_the_other_family(rheo_cli, args, needle):
    rc, out, err = rheo_cli("mutants", "--seeds", "0", *args)
    lines = err.strip().splitlines()
    assert rc == 2 and out == "" and len(lines) == 1 and needle in lines[0], (rc, out, err)


@pytest.mark.lossless
def test_rheo_mutants_runs_a_static_mutant_on_its_static_case(rheo_cli):
    """`rheo mutants --only traversal-wrong-update`: on its static mutant case, the exact TVs as
    rationals (those of rheo.selfgate.matrix.exact_tvs), every check ≥ δ = 0.05 rejected (α = 1e-6 each)."""
    rc, out, err = rheo_cli(
        "mutants", "--json", "--seeds", "0", "--tv", "0.05", "--alpha", "1e-6", "--only", "traversal-wrong-update"
    )
    assert rc == 0, err
    (row,) = json.loads(out)["mutants"]
    assert row["case"] == mutant_case("traversal-wrong-update") and row["verdict"] == "caught"
    assert row["exact_tv"] == {ch: str(v) for ch, v in exact_tvs(CASES[row["case"]], "traversal-wrong-update").items()}
    assert set(row["N"]) == set(CHECKS) and all(p < 1e-6 for p in row["p_value"].values())


def test_rheo_sample_runs_a_static_mutant_on_a_static_case(rheo_cli, tmp_path):
    from helpers import write_case

    case = CASES["branching-wor-traversal/T1"].case
    path = write_case(tmp_path, case.to_json())
    rc, out, err = rheo_cli("sample", path, "--samples", "200", "--seed", "1", "--mutant", "traversal-stale-bonus")
    assert rc == 0, err
    got = json.loads(out)
    assert got["mutant"] == "traversal-stale-bonus" and sum(got["counts"].values()) == 200
    rc, out, err = rheo_cli("sample", path, "--samples", "200", "--seed", "1", "--mutant", "fills-first")
    assert rc == 2 and out == "" and "belongs to the rheo family" in err and len(err.strip().splitlines()) == 1
