"""The treespark family under the lossless gate (docs/SCHEMES.md §13): its rows' references are exact
and lossless, the own-survival mutant's exact TV on its case is >= δ, and `rheo mutants` catches it
(a deliberately broken sampler detected: the gate's negative control)."""

from __future__ import annotations

import json

import pytest

from rheo.cli import main
from rheo.families.treespark import MUTANT_CASES as TREESPARK_MUTANT_CASES
from rheo.families.treespark import ROWS as TREESPARK_ROWS
from rheo.selfgate.matrix import CHECKS, DELTA, exact_tvs, gate_cases, mutant_case
from rheo_ref.exact import Exact, target_law, tv

CASES = gate_cases()
SPARK_ROWS = [n for n, gc in CASES.items() if gc.case.scheme.family == "treespark"]


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


def test_rows_cover_both_verifiers_both_thetas_three_temperatures():
    assert SPARK_ROWS == list(TREESPARK_ROWS)
    seen = {(CASES[n].case.scheme.verify, CASES[n].case.scheme.theta > 0, n.split("/")[1]) for n in SPARK_ROWS}
    assert {(v, t) for v, _, t in seen} == {(v, t) for v in ("rrsw", "traversal") for t in ("T1", "T0.5", "T0")}
    assert {(th, t) for _, th, t in seen} == {(th, t) for th in (False, True) for t in ("T1", "T0.5", "T0")}


@pytest.mark.parametrize("name", SPARK_ROWS)
def test_references_are_exact_and_lossless(name):
    gc = CASES[name]
    brute, classes = Exact(gc.case, "brute"), Exact(gc.case, "classes")
    assert tv(brute.token_law(3), target_law(gc.case, 3)) == 0
    assert classes.round_law() == brute.round_law()


def test_own_survival_exact_tv_on_its_case_exceeds_delta():
    name = mutant_case("treespark-own-survival")
    assert name in TREESPARK_MUTANT_CASES
    tvs = exact_tvs(CASES[name], "treespark-own-survival")
    assert min(tvs[c] for c in ("joint3", "round", "lengths")) >= DELTA  # measured: 0.076, 0.109, 0.109


@pytest.mark.lossless
def test_rheo_mutants_catches_own_survival(rheo_cli):
    rc, out, err = rheo_cli(
        "mutants", "--json", "--seeds", "0", "--tv", "0.05", "--alpha", "1e-6", "--only", "treespark-own-survival"
    )
    assert rc == 0, err
    (row,) = json.loads(out)["mutants"]
    assert row["case"] == mutant_case("treespark-own-survival") and row["verdict"] == "caught"
    caught = [ch for ch in CHECKS if row["p_value"][ch] < 1e-6]
    assert {"round", "lengths"} <= set(caught)
