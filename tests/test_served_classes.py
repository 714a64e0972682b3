"""Tree verification and batches on the bug-class decoder (docs/GATE_REFERENCE.md, "Bug classes").

- Tree verification (two branches, SpecInfer's multi-draft rejection with replacement) is exactly
  lossless: its law by enumeration equals the request's on random cases, γ = 1 and 2, with every
  setting and a grammar (the served draw); class 28 (a tree node verified against another branch's
  row) moves it on its report case and on its best hunted case, and the gate convicts it there at
  N = samples_to_convict.
- Batches: the law composed from each request's (in the batch, alone) law equals the enumeration
  of the whole batch wherever the requests read their own streams; on the report batch the three
  such mutants have the exact TVs docs/GATE_REFERENCE.md states and are convicted at their samples_to_convict
  (the invariance check: ⌈ln β / ln(1 − m)⌉ coupled samples, false alarm 0); the correct batch
  passes every check.
"""

from __future__ import annotations

import json
from dataclasses import replace
from fractions import Fraction

import pytest

from rheo.cli import main
from rheo.mutants.hunt import random_case
from rheo.mutants.hunt_served import served_case
from rheo.mutants.library import batch_mutant_rows
from rheo.selfgate.batches import batch_row, invariance_n, run_batch_check
from rheo.selfgate.matrix import BETA, alpha_per_test
from rheo_ref.bugclasses.batch import BATCH_MUTANTS, CORRECT_BATCH, enumerated_batch_law, independent_batch_law
from rheo_ref.bugclasses.cases import case_law, mutant_tvs, request_law
from rheo_ref.bugclasses.report_cases import report_batch, report_cases
from rheo_ref.errors import CaseError
from rheo_ref.laws import tv

ALPHA = alpha_per_test()


def test_tree_verification_is_exactly_lossless():
    for i in range(4):
        c = random_case(11, i)
        c = replace(c, request=replace(c.request, verify="tree", gamma=1 + i % 2), tokens=2)
        law = case_law(c)
        assert tv(law, request_law(c)) == 0 and sum(law.values()) == 1, i
    trees = [c for c in (served_case(1, i) for i in range(12)) if c.request.verify == "tree"]
    assert any(c.constraint is not None for c in trees)
    for c in trees[:3]:
        assert tv(case_law(c), request_law(c)) == 0


def test_the_wrong_tree_row_moves_the_law():
    tvs = mutant_tvs(report_cases()["tree"], "tree-node-wrong-row")
    assert tvs["joint1"] == tvs["joint2"] == 0  # rows of depth 0 are shared; the bonus after a branch is not
    assert tvs["joint3"] == Fraction(89, 5000) and tvs["logprobs"] == Fraction(17, 250)
    with pytest.raises(CaseError, match="needs verify='tree'"):  # a chain has one branch: nothing to show
        mutant_tvs(report_cases()["settings"], "tree-node-wrong-row")


@pytest.mark.parametrize("name", [m for m in BATCH_MUTANTS if m != "batch-shared-stream"] + ["correct"])
def test_the_composed_batch_law_is_the_enumerated_one(name):
    steps = CORRECT_BATCH if name == "correct" else BATCH_MUTANTS[name][1]
    cases, seeds = report_batch()
    for k in (1, 2):
        assert independent_batch_law(cases[:k], seeds[:k], steps) == enumerated_batch_law(cases[:k], seeds[:k], steps)


def test_the_report_batch_rows():
    cases, seeds = report_batch()
    want = {  # exact TV of the convicting check's law and samples_to_convict at the gate's α
        "batch-padding-temperature": ("invariance", Fraction(613, 1323), 8),
        "batch-token-broadcast": ("invariance", Fraction(103, 140), 4),
        "batch-corrupt-above-two": ("invariance", Fraction(41, 60), 5),
    }
    for name, (check, m, n) in want.items():
        r = batch_row(cases, seeds, name, alpha=ALPHA, beta=BETA)
        assert (r["convicting_check"], Fraction(r["exact_tv"][check]), r["samples_to_convict"]) == (check, m, n)
        assert invariance_n(m, BETA) == n
        assert r["exact_tv"]["request0"] == "0" and Fraction(r["exact_tv"]["request2"]) > 0
        res = run_batch_check(cases, seeds, check, alpha=ALPHA, beta=BETA, tv=float(m), seed=3, mutant=name, n=n)
        assert res["rejected"], (name, res)
    assert (
        batch_row(cases, seeds, "batch-padding-temperature", alpha=ALPHA, beta=BETA)["samples_per_check"]["request2"]
        == 276
    )


def test_the_correct_batch_passes_its_checks():
    cases, seeds = report_batch()
    for check in ("request2", "batch", "invariance"):
        res = run_batch_check(
            cases, seeds, check, alpha=1e-6, beta=0.01, tv=0.3, seed=5, n=None if check != "invariance" else 200
        )
        assert not res["rejected"], res


def test_rheo_mutants_lists_the_batch_classes(capsys):
    assert main(["mutants", "--only", "batch-token-broadcast", "--seeds", "0", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)["mutants"]
    assert row["mutant"] == "batch-token-broadcast" and row["class"].startswith("batch:") and row["rejected"]
    assert row["samples_to_convict"] == row["N"][row["convicting_check"]]
    assert row["samples_to_convict"] <= row["library_samples_to_convict"]
    (shared,) = batch_mutant_rows(["batch-shared-stream"], alpha=ALPHA, beta=BETA)
    assert shared["convicting_check"] == "invariance" and shared["rejected"], shared
