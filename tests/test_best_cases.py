"""Each mutant's best case (rheo.mutants.best_cases; docs/GATE_REFERENCE.md, "The fewest samples") and the
before/after table (`rheo mutants --fewest`).

- Every best case is the hunt cell it names, refined as recorded: rebuilt from its seed, index and
  refine steps (at the level the search ran at) it is the stored case (the refined ones `slow`);
  `rheo.mutants.hunt.refine` aimed at a mutant never raises its samples_to_convict, and `rheo mutants --hunt
  --refine` refines only the mutants named in --only.
- `rheo mutants` runs each bug class on its best case: samples_to_convict there is ≤ the one on its
  library case, and ≤ 600 for every detectable class but `block-token-residual`, whose best case
  (the hunt's block draw) is above the fewest its proved bound allows (proofs claim 11.1), > 600; the
  served-decoder classes (15–28) on cells of the served draw (`rheo.mutants.hunt_served`).
- The float-level class: its exact TV on every hunted case stays below its proved bound
  (rheo_ref.bugclasses.float_level, proofs claim 10.1), so its samples_to_convict is ≥ the fewest the
  bound allows.
"""

from __future__ import annotations

import json

import pytest

from rheo.cli import main
from rheo.lossless.stats import min_num_samples
from rheo.mutants.best_cases import ALPHA_FOUND, BEST_BATCHES, BEST_CASES, BEST_HUNTED
from rheo.mutants.fewest import batch_row_pair
from rheo.mutants.hunt import GAMMAS, MAX_TOKENS, float_level_bound, random_case, refine
from rheo.mutants.hunt_batch import batch_case, batch_json, for_mutant
from rheo.mutants.hunt_block import block_case
from rheo.mutants.hunt_served import served_case
from rheo.mutants.library import bug_mutant_rows
from rheo.selfgate.bugclasses import bug_row, min_possible_samples
from rheo.selfgate.matrix import BETA, alpha_per_test
from rheo_ref.bugclasses.batch import BATCH_MUTANTS
from rheo_ref.bugclasses.cases import BugCase, mutant_tvs
from rheo_ref.bugclasses.float_level import case_bounds
from rheo_ref.bugclasses.mutants import BUG_MUTANTS
from rheo_ref.variants import MUTANTS

ALPHA = alpha_per_test()

GOAL = 600  # the goal: every detectable mutant convicted with at most 600 samples on its best case
NOT_YET = {"draft-bfloat16"}  # float-level: its library case
# above the goal on every case of the hunt's space: its TV <= (5√5 − 11)/2 with γ <= 2 (proofs claim 11.1)
ABOVE_GOAL = {"block-token-residual": min_num_samples((5 * 5**0.5 - 11) / 2, ALPHA, BETA, 2)}


def rebuilt(name: str) -> dict:
    h = BEST_CASES[name]["hunt"]
    draw = {"block": block_case, "served": served_case}.get(h.get("draw", "random"), random_case)
    case = draw(h["seed"], h["i"])
    if h["refine_steps"]:
        case, _ = refine(
            case, seed=h["refine_seed"], steps=h["refine_steps"], alpha=ALPHA_FOUND, beta=BETA, mutant=name
        )
    return case.to_json()


def test_the_best_cases_cover_the_classes_and_the_twenty():
    assert set(BEST_CASES) == set(BUG_MUTANTS) - NOT_YET
    assert set(BEST_HUNTED) == set(MUTANTS) - {"leq-coin", "float16"}
    assert set(BEST_BATCHES) == set(BATCH_MUTANTS)


def test_the_best_batches_are_the_cells_they_name_within_the_goal():
    """Each stored batch is its batch-draw cell (cut to the requests its mutant runs on); its exact
    samples_to_convict, recomputed, is within the goal, and `--fewest`'s "after" is the better of
    it and the report batch's."""
    for name, e in BEST_BATCHES.items():
        h = e["hunt"]
        cases, seeds = for_mutant(name, *batch_case(h["seed"], h["i"]))
        assert batch_json(cases, seeds) == e["batch"], name
        row = batch_row_pair(name, alpha=ALPHA, beta=BETA)  # the exact rows on the report and the best batch
        n = row["hunted"]
        assert n is not None and n <= GOAL and row["after"] == min(n, row["before"]), row


def test_the_unrefined_best_cases_are_the_hunt_cells_they_name():
    plain = [n for n, e in BEST_CASES.items() if not e["hunt"]["refine_steps"]]
    assert plain
    for name in plain:
        assert rebuilt(name) == BEST_CASES[name]["case"]


def test_refine_is_seeded():
    case = random_case(1, BEST_CASES["stream-positions-shared"]["hunt"]["i"])
    a, b = (refine(case, seed=1, steps=6, alpha=ALPHA, beta=BETA, mutant="stream-positions-shared") for _ in "ab")
    assert a[0].to_json() == b[0].to_json() and a[1] == b[1]


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(BEST_CASES))
def test_every_best_case_is_the_refined_hunt_cell_it_names(name):
    assert rebuilt(name) == BEST_CASES[name]["case"]


def test_refine_aimed_at_a_mutant_never_raises_its_samples():
    case = random_case(1, BEST_CASES["stream-positions-shared"]["hunt"]["i"])
    n0 = bug_row(case, "stream-positions-shared", alpha=ALPHA, beta=BETA)["samples_to_convict"]
    better, score = refine(case, seed=2, steps=10, alpha=ALPHA, beta=BETA, mutant="stream-positions-shared")
    n1 = bug_row(better, "stream-positions-shared", alpha=ALPHA, beta=BETA)["samples_to_convict"]
    assert n1 <= n0 and score == pytest.approx(1 / n1)


def test_rheo_mutants_runs_each_class_on_its_best_case():
    rows = bug_mutant_rows(sorted(BEST_CASES), alpha=ALPHA, beta=BETA, max_n=0)  # exact rows only, nothing run
    for r in rows:
        assert r["case"] == f"best/{r['mutant']}"
        n, lib = r["samples_to_convict"], r["library_samples_to_convict"]
        assert n is not None and (lib is None or n <= lib), r
        assert n <= GOAL if r["mutant"] not in ABOVE_GOAL else GOAL < ABOVE_GOAL[r["mutant"]] <= n, r


def test_fewest_table_from_exact_laws(capsys):
    assert main(["mutants", "--fewest", "--json", "--only", "proxy-true", "draft-bfloat16", "verify-argmax"]) == 0
    out = json.loads(capsys.readouterr().out)
    rows = {r["mutant"]: r for r in out["rows"]}
    assert out["alpha"] == ALPHA and set(rows) == {"proxy-true", "draft-bfloat16", "verify-argmax"}
    for name in ("proxy-true", "verify-argmax"):
        assert rows[name]["after"] <= rows[name]["before"]
    bf = rows["draft-bfloat16"]
    assert bf["float_level"] and bf["before"] >= bf["min_possible_samples"]


def test_the_hunt_space_stays_inside_the_float_level_bound():
    """The bound: γ ≤ 2 and ≤ 3 tokens in the hunt's space, so ≤ 4 draft draws per check."""
    bound = float_level_bound()
    n_min = min_possible_samples(bound, ALPHA, BETA)
    assert 0.0078 < bound < 0.0079 and n_min > 200_000
    for i in range(6):
        case = random_case(2, i, verify="token")
        assert case.request.gamma in GAMMAS and case.tokens <= MAX_TOKENS
        tvs, per_check = mutant_tvs(case, "draft-bfloat16"), case_bounds(case)
        assert all(tvs[c] <= per_check[c] and float(per_check[c]) <= bound for c in tvs), (tvs, per_check)
        row = bug_row(case, "draft-bfloat16", alpha=ALPHA, beta=BETA)
        assert row["samples_to_convict"] is None or row["samples_to_convict"] >= n_min


def test_a_case_past_the_rounding_midpoints_nearly_attains_the_bound():
    from proofs.bfloat16 import near_case

    case = near_case()
    assert isinstance(case, BugCase)
    tv, bound = mutant_tvs(case, "draft-bfloat16")["joint2"], case_bounds(case)["joint2"]
    assert 0.99 * bound <= tv <= bound


def test_cli_hunt_refines_only_the_named_mutants(capsys, tmp_path):
    argv = ["mutants", "--hunt", "2", "--hunt-seed", "1", "--hunt-out", str(tmp_path), "--refine", "4", "--json"]
    assert main([*argv, "--only", "stream-positions-shared"]) == 0
    per = json.loads(capsys.readouterr().out)["per_mutant"]
    assert "stream-positions-shared" in per
    assert all("refine" not in r for n, r in per.items() if n != "stream-positions-shared")
    r = per["stream-positions-shared"]
    if "refine" in r:  # kept only where it lowered samples_to_convict
        assert r["samples_to_convict"] < r["refine"]["from"] and r["refine"]["steps"] == 4
    assert main([*argv[:7], "--refine=-1"]) == 2
