"""The bug classes that broke real decoders (docs/GATE_REFERENCE.md, "Bug classes"), on rheo's baseline
decoder (rheo_ref.bugclasses), and the case library (`rheo cases`).

- The baseline decoder is exactly lossless (its law by enumeration of the stream's uniforms
  equals the request's law, token and block verification), on the library cases and on hunted ones.
- Each bug-class mutant moves the law on its library case by its exact TV; the one lossless class
  (a draft verified as a point mass) moves only the round law, exactly as the argument in
  docs/GATE_REFERENCE.md says; the float-level one (bfloat16) stays below its proved bound
  (rheo_ref.bugclasses.float_level; tests/test_best_cases.py checks it on hunted cases).
- Class 12 (block verification with the token-level residual) cannot move the law by more than
  (5√5 − 11)/2 with γ <= 2 (proofs/blockres.py): the block draw of the hunt (rheo.mutants.hunt_block)
  reaches the bound to 0.03%, the library's block case is its hunt cell refined, and no case with
  γ <= 2 convicts the class with 600 samples.
- (lossless) The baseline passes every check of every library case at the gate's α, β and δ
  (gate rows, counted in the family-wise α); every other mutant is rejected by its convicting check
  at N = samples_to_convict (power ≥ 0.99 at its exact TV); each sampled mutant's round law fits its
  exact law (α = 1e-6, δ = 0.1), so the exact TVs describe what runs.
"""

from __future__ import annotations

import json
from fractions import Fraction

import pytest

from rheo.cli import main
from rheo.lossless.stats import check_law, min_num_samples, samples_for, samples_for_coarse
from rheo.mutants.hunt import random_case, refine
from rheo.mutants.hunt_block import block_case
from rheo.mutants.library import before_case, bug_mutant_rows, library_case_of
from rheo.selfgate.bugclasses import CLASS_OF, check_law_of, checks, convict_n, run_check, sampler, seed
from rheo.selfgate.case_library import LIBRARY
from rheo.selfgate.matrix import BETA, CHECKS, DELTA, FAMILY_ALPHA, alpha_per_test, family_alpha, gate_cases
from rheo_ref.bugclasses.batch import BATCH_MUTANTS
from rheo_ref.bugclasses.cases import BugCase, case_law, mutant_tvs, request_law
from rheo_ref.bugclasses.decoder import Request
from rheo_ref.bugclasses.float_level import case_bounds
from rheo_ref.bugclasses.mutants import BUG_MUTANTS, bfloat16
from rheo_ref.errors import CaseError
from rheo_ref.laws import tv
from rheo_ref.processing import top_k, top_p
from rheo_ref.variants import MUTANTS

ALPHA = alpha_per_test()  # the gate's per-test α, derived from the registered rows

CASES = {name: BugCase.from_json(e["case"]) for name, e in LIBRARY.items() if e["family"] == "bugclasses"}
LOSSLESS = {"draft-as-point-mass"}  # token-level point-mass verification is valid for any draft
FLOAT_LEVEL = {"draft-bfloat16"}
F = Fraction
BLOCK_BOUND = (5 * 5**0.5 - 11) / 2  # class 12's largest exact TV with γ <= 2 (proofs/blockres.py)


def test_processors_match_transformers_rules():
    w = (F(1, 10), F(2, 10), F(3, 10), F(4, 10))
    assert top_k(w, 2) == (0, 0, F(3, 10), F(4, 10))
    assert top_k((F(1), F(2), F(2), F(3)), 2, "all") == (0, F(2), F(2), F(3))  # transformers: ties at the k-th kept
    # TopP: ascending cumulative 0.1, 0.3, 0.6: dropped while <= 1 - top_p
    assert top_p(w, F(8, 10)) == (0, F(2, 10), F(3, 10), F(4, 10))
    assert top_p(w, F(7, 10)) == (0, 0, F(3, 10), F(4, 10))
    assert top_p(w, F(4, 10)) == (0, 0, 0, F(4, 10))
    assert bfloat16(F(1, 3)) != F(1, 3) and abs(bfloat16(F(1, 3)) - F(1, 3)) < F(1, 3) / 2**8


@pytest.mark.parametrize(
    "req",
    [Request(), Request(temperature=F(1, 2), top_k=3, top_p=F(9, 10), penalty=F(1, 2), gamma=2, verify="block")],
    ids=str,
)
def test_baseline_is_exactly_lossless_on_the_library_and_hunted_cases(req):
    for name, case in CASES.items():
        assert tv(case_law(case), request_law(case)) == 0, name
    for i in range(3):
        c = random_case(11, i, verify=req.verify)
        assert tv(case_law(c), request_law(c)) == 0 and sum(case_law(c).values()) == 1


def test_every_mutant_has_a_class():
    assert set(CLASS_OF) == set(MUTANTS) | set(BUG_MUTANTS) | set(BATCH_MUTANTS)
    assert sorted(m.klass for m in BUG_MUTANTS.values()) == list(range(1, 29))


@pytest.mark.parametrize("name", list(BUG_MUTANTS))
def test_each_class_moves_the_law_on_its_library_case(name):
    label, case = before_case(name)
    tvs = mutant_tvs(case, name)
    if BUG_MUTANTS[name].kind != "seam":  # a report case (rheo_ref.bugclasses.report_cases): no floor
        assert max(tvs.values()) > 0 and tv(case_law(case), request_law(case)) == 0, (label, tvs)
        return
    joint = max(v for k, v in tvs.items() if k != "round")
    if name in LOSSLESS:
        assert joint == 0 and tvs["round"] > 0
    elif name in FLOAT_LEVEL:  # below its proved bound (proofs claim 10.1) on every check
        bounds = case_bounds(case)
        assert 0 < joint and all(v <= bounds[c] for c, v in tvs.items()), (tvs, bounds)
    else:
        assert max(tvs.values()) >= LIBRARY[library_case_of(name)]["floor"] - 1e-12


def test_point_mass_verification_is_lossless_on_random_cases():
    """The exact argument for class 8: P(y) = q(y)p(y) + Σ_{x≠y} q(x)(1 − p(x))·p(y)/(1 − p(x)) = p(y)."""
    for i in range(4):
        c = random_case(5, i, verify="token")
        assert tv(case_law(c, "draft-as-point-mass"), request_law(c)) == 0


def test_samples_to_convict_is_the_gate_rule_at_the_exact_tv():
    case = CASES[library_case_of("verify-argmax")]
    law, bad = check_law_of(case, "joint2"), check_law_of(case, "joint2", "verify-argmax")
    n = convict_n(law, bad, ALPHA, BETA)
    # the mutant's law is known exactly: its N is the coarse rule's (rheo.lossless.stats.samples_for_coarse)
    assert n is not None and n >= samples_for_coarse(law, float(tv(bad, law)), ALPHA, BETA)
    assert convict_n(law, law, ALPHA, BETA) is None


def test_the_twenty_get_samples_to_convict_on_their_gate_cases():
    from rheo.selfgate.bugclasses import samples_to_convict
    from rheo.selfgate.matrix import CHECKS, gate_cases, mutant_case
    from rheo.selfgate.matrix import check_law_of as gate_law

    gc = gate_cases()[mutant_case("proxy-true")]
    laws = {ch: gate_law(gc, ch) for ch in CHECKS}
    n, ch = samples_to_convict(laws, {c: gate_law(gc, c, "proxy-true") for c in CHECKS}, ALPHA, BETA)
    assert ch in CHECKS and 0 < n < 1000
    n0, _ = samples_to_convict(laws, laws, ALPHA, BETA)
    assert n0 is None


def test_the_library_rows_keep_the_family_wise_bound():
    """The library's tests are counted in the derivation of the per-test α: the matrix and the
    library together stay within the family-wise total."""
    tests = sum(len(checks(c)) for c in CASES.values())
    assert tests > 0
    assert ALPHA * (len(gate_cases()) * len(CHECKS) + tests) <= FAMILY_ALPHA * (1 + 1e-12)
    assert family_alpha() <= FAMILY_ALPHA * (1 + 1e-12)


@pytest.mark.lossless
@pytest.mark.parametrize("name", list(CASES))
def test_baseline_passes_the_library_rows(name, rheo_seed):
    case = CASES[name]
    for check in checks(case):
        res = run_check(case, check, alpha=ALPHA, beta=BETA, tv=DELTA, seed=rheo_seed + len(check))
        assert res.detectable_tv <= DELTA and not res.rejected, res.summary()


@pytest.mark.lossless
def test_every_detectable_class_is_rejected_at_its_samples_to_convict():
    rows = bug_mutant_rows(list(BUG_MUTANTS), alpha=ALPHA, beta=BETA, max_n=20_000)
    assert {r["mutant"] for r in rows} == set(BUG_MUTANTS)
    for r in rows:
        if r["mutant"] in FLOAT_LEVEL:
            assert not r["expected"], r
            continue
        assert r["expected"] and r["rejected"], r
        assert r["N"][r["convicting_check"]] == r["samples_to_convict"]


def test_the_block_draw_plants_the_block_residual_skeleton():
    """Class 12 moves the law by at most (5√5 − 11)/2 with γ <= 2 (proofs/blockres.py); the block
    draw's cells reach 75/832 (T = 1) and none exceeds the bound."""
    tvs = [max(mutant_tvs(block_case(1, i), "block-token-residual").values()) for i in range(16)]
    assert max(tvs) == Fraction(75, 832) and all(t <= float(BLOCK_BOUND) for t in tvs), tvs
    assert all(block_case(1, i).request.gamma == 2 and block_case(1, i).request.verify == "block" for i in range(4))


def test_the_block_residual_class_cannot_be_convicted_with_600_samples_at_gamma_2():
    """The bound's N (two cells, the fewest any check has) is above 600; the best hunted case (block
    draw, seed 1 cell 15: TV 75/832 on joint3, three cells) is within 10% of it."""
    floor_n = min_num_samples(float(BLOCK_BOUND), ALPHA, BETA, 2)
    case = block_case(1, 15)
    law, bad = check_law_of(case, "joint3"), check_law_of(case, "joint3", "block-token-residual")
    n = convict_n(law, bad, ALPHA, BETA)
    assert 600 < floor_n <= n < 1.1 * floor_n, (floor_n, n)


@pytest.mark.slow
def test_the_block_library_case_is_its_hunt_cell_refined():
    h = LIBRARY["bugclasses-block"]["hunt"]
    case, floor = refine(
        block_case(h["seed"], h["i"]), seed=h["refine_seed"], steps=h["refine_steps"], alpha=ALPHA, beta=BETA
    )
    assert case.to_json() == LIBRARY["bugclasses-block"]["case"] and floor >= LIBRARY["bugclasses-block"]["floor"]


def test_the_block_draw_hunts_and_resumes(tmp_path, capsys):
    """Block-draw cells are keyed apart from the random draw's (a planted random cell of the same
    seed and index stays as it is) and are not run again; the CLI takes --hunt-draw."""
    from rheo.mutants.hunt import hunt

    planted = {"seed": 1, "i": 0, "case": {}, "floor": 0.5, "rows": {}}
    (tmp_path / "hunt.jsonl").write_text(json.dumps(planted) + "\n")
    (cell,) = hunt(tmp_path, seed=1, cases=1, alpha=ALPHA, beta=BETA, draw="block")
    assert cell["draw"] == "block" and cell["case"] == block_case(1, 0).to_json()
    assert hunt(tmp_path, seed=1, cases=1, alpha=ALPHA, beta=BETA) == [planted]
    argv = ["mutants", "--hunt", "1", "--hunt-seed", "1", "--hunt-draw", "block", "--hunt-out", str(tmp_path)]
    assert main([*argv, "--json", "--only", "block-token-residual"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["per_mutant"]["block-token-residual"]["draw"] == "block"
    assert len((tmp_path / "hunt.jsonl").read_text().splitlines()) == 2
    with pytest.raises(CaseError, match="allowed: random, block"):
        hunt(tmp_path, seed=1, cases=1, alpha=ALPHA, beta=BETA, draw="nope")


@pytest.mark.lossless
@pytest.mark.parametrize("name", list(BUG_MUTANTS))
def test_sampled_mutant_fits_its_exact_round_law(name):
    _, case = before_case(name)
    law = case_law(case, name, first_round=True)
    n = samples_for(law, 0.1, 1e-6, 0.01)
    res = check_law(sampler(name, first_round=True)(case, seed(f"fit|{name}"), n), law, alpha=1e-6, tv=0.1)
    assert not res.rejected, res.summary()


def test_cli_cases_and_mutants(capsys, tmp_path):
    assert main(["cases", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert {r["name"] for r in out["cases"]} == set(LIBRARY)
    token = next(r for r in out["cases"] if r["pairing"] == "token")
    assert token["floor"] >= 0.15 and token["N"] < 5_000  # vs ~40,000-70,000 at the gate's δ = 0.025
    block = next(r for r in out["cases"] if r["pairing"] == "block")  # its floor: class 12, <= 0.0902
    assert block["floor"] >= 0.089 and block["N"] < 5_000
    assert main(["cases", "--show", "nope"]) == 2
    assert "not a library case" in capsys.readouterr().err
    assert main(["cases", "--false-alarms", "2", "--fa-case", "rheo-shared"]) == 2  # not a bug-class case
    assert "not a bug-class library case" in capsys.readouterr().err
    assert main(["cases", "--false-alarms", "2", "--fa-case", "bugclasses-token", "--json"]) == 0
    fa = {r["name"]: r.get("false_alarm") for r in json.loads(capsys.readouterr().out)["cases"]}
    assert fa["bugclasses-token"]["seeds"] == 2 and all(v is None for n, v in fa.items() if n != "bugclasses-token")
    assert main(["mutants", "--only", "verify-argmax", "--seeds", "0", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["mutants"]
    assert row["mutant"] == "verify-argmax" and row["class"].startswith("10:") and row["rejected"]
    assert row["samples_to_convict"] == row["N"][row["convicting_check"]]


def test_hunt_resumes_from_its_file(tmp_path):
    """A cell already in hunt.jsonl is not run again (a planted row comes back as it is)."""
    from rheo.mutants.hunt import hunt

    planted = {"seed": 3, "i": 0, "case": {}, "floor": 0.5, "rows": {}}
    (tmp_path / "hunt.jsonl").write_text(json.dumps(planted) + "\n")
    assert hunt(tmp_path, seed=3, cases=1, alpha=ALPHA, beta=BETA) == [planted]
    assert len((tmp_path / "hunt.jsonl").read_text().splitlines()) == 1


@pytest.mark.slow
def test_cli_hunt_runs_and_resumes(capsys, tmp_path):
    argv = [
        "mutants",
        "--hunt",
        "2",
        "--hunt-seed",
        "3",
        "--hunt-out",
        str(tmp_path),
        "--json",
        "--only",
        "verify-argmax",
    ]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    assert len((tmp_path / "hunt.jsonl").read_text().splitlines()) == 2
    assert main(argv) == 0  # resumed: nothing run again, the same answer
    assert json.loads(capsys.readouterr().out) == first
    assert len((tmp_path / "hunt.jsonl").read_text().splitlines()) == 2
