"""The case library's shared cases of the algorithmic families (`rheo cases`; docs/GATE_REFERENCE.md,
"Pick a case"): per family and verifier pairing, one hunted case (`rheo.mutants.hunt.shared_case`) on
which every mutant of that pairing has exact TV ≥ the stated floor.

- Each case's floor holds: every listed mutant's exact TV on its best check (from its exact
  counterpart, `rheo_ref.exact.mutant_exact`) is ≥ the floor, and the list is every detectable mutant of the
  pairing (`rheo.mutants.hunt.shared_mutants`); each case is the hunt cell its `hunt` entry names, and the
  shared hunt resumes from its file and keeps each pairing's best floor.
- (lossless) Each case is a gate row: the correct fast path passes the gate's four checks at the
  gate's α, β and δ (counted in the family-wise α bound with the matrix and the bug-class rows).
- (lossless) Each listed mutant's fast path is rejected there by the gate's four checks at
  δ = the floor, α = the gate's, β = 1e-4 (each mutant missed with probability ≤ 1e-4 on its best
  check; ≤ 0.2% for all 20): the floor is what a downstream gate at δ = floor catches.
"""

from __future__ import annotations

import pytest

from rheo.mutants.hunt import shared_floor, shared_mutants
from rheo.mutants.library import library_gate_case, library_rows
from rheo.selfgate.bugclasses import checks
from rheo.selfgate.case_library import LIBRARY
from rheo.selfgate.matrix import (
    BETA,
    CHECKS,
    DELTA,
    FAMILY_ALPHA,
    alpha_per_test,
    family_alpha,
    gate_cases,
    library_tests,
    run_check,
)
from rheo_ref.bugclasses.cases import BugCase

ALPHA = alpha_per_test()  # the gate's per-test α, derived from the registered rows

SHARED = [name for name, e in LIBRARY.items() if e["family"] != "bugclasses"]


def test_every_family_has_a_shared_case():
    assert {LIBRARY[n]["family"] for n in SHARED} == {"rheo", "static", "tsubame", "treespark"}


@pytest.mark.parametrize("name", SHARED)
def test_every_mutant_of_the_pairing_is_above_the_floor(name):
    entry = LIBRARY[name]
    assert sorted(entry["mutants"]) == sorted(shared_mutants(entry["hunt"]["base"]))
    tvs = shared_floor(library_gate_case(name), entry["mutants"])
    assert min(tvs.values()) >= entry["floor"], tvs


def test_the_library_rows_with_the_shared_cases_keep_the_family_wise_bound():
    tests = sum(
        len(checks(BugCase.from_json(e["case"]))) if e["family"] == "bugclasses" else len(CHECKS)
        for e in LIBRARY.values()
    )
    assert library_tests() == tests  # counted in the derived per-test α
    assert ALPHA * (len(gate_cases()) * len(CHECKS) + tests) <= FAMILY_ALPHA * (1 + 1e-12)
    assert family_alpha() <= FAMILY_ALPHA * (1 + 1e-12)
    rows = {r["name"]: r for r in library_rows(ALPHA, BETA)}
    assert all(rows[n]["N"] < 72_000 for n in SHARED), {n: rows[n]["N"] for n in SHARED}


@pytest.mark.lossless
@pytest.mark.parametrize("name", SHARED)
def test_baseline_passes_the_shared_library_rows(name, rheo_seed):
    gc = library_gate_case(name)
    for i, check in enumerate(CHECKS):
        res = run_check(gc, check, seed=rheo_seed + i, alpha=ALPHA, beta=BETA, tv=DELTA)
        assert res.detectable_tv <= DELTA and not res.rejected, res.summary()


@pytest.mark.lossless
@pytest.mark.parametrize("name", SHARED)
def test_every_mutant_is_rejected_at_the_floor(name, rheo_seed):
    entry = LIBRARY[name]
    gc = library_gate_case(name)
    for m in entry["mutants"]:
        tests = [
            run_check(gc, ch, seed=rheo_seed + i, mutant=m, alpha=ALPHA, beta=1e-4, tv=entry["floor"])
            for i, ch in enumerate(CHECKS)
        ]
        assert any(t.rejected for t in tests), (m, [t.summary() for t in tests])


@pytest.mark.parametrize("name", SHARED)
def test_each_case_is_the_hunt_cell_it_names(name):
    from rheo.mutants.hunt import shared_case

    h = LIBRARY[name]["hunt"]
    assert shared_case(h["base"], h["seed"], h["i"], label=h.get("label")).case.to_json() == LIBRARY[name]["case"]


def test_the_shared_hunt_resumes_and_keeps_the_best_floor(tmp_path):
    from rheo.mutants.hunt import best, hunt

    base = "tsubame-w1-wor-traversal/T1"
    cells = hunt(tmp_path, seed=1, cases=2, alpha=ALPHA, beta=BETA, verify="token", shared=[base])
    shared = [c for c in cells if c.get("base") == base]
    assert len(shared) == 2 and best(cells)["shared"][base]["floor"] == max(c["floor"] for c in shared)
    lines = (tmp_path / "hunt.jsonl").read_text().splitlines()
    assert hunt(tmp_path, seed=1, cases=2, alpha=ALPHA, beta=BETA, verify="token", shared=[base]) == cells
    assert (tmp_path / "hunt.jsonl").read_text().splitlines() == lines
