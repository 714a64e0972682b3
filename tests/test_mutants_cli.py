"""`rheo mutants [--json]`: the negative-control table and the false-alarm measurement."""

from __future__ import annotations

import json
from fractions import Fraction

import pytest
from helpers import run_rheo


def test_one_mutant_json_and_bad_input():
    r = run_rheo("mutants", "--json", "--only", "bonus-full-p", "--seeds", "0", "--tv", "0.1")
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    (row,) = out["mutants"]
    assert row["mutant"] == "bonus-full-p" and row["verdict"] == "caught" and row["rejected"]
    assert Fraction(row["exact_tv"]["joint3"]) >= Fraction(1, 10)
    assert set(row["N"]) == {"joint2", "joint3", "round", "lengths"} and out["false_alarm"] is None
    bad = run_rheo("mutants", "--only", "no-such-mutant", "--seeds", "0")
    assert bad.returncode == 2 and "no-such-mutant" in bad.stderr and "Traceback" not in bad.stderr
    bad = run_rheo("mutants", "--alpha", "0", "--seeds", "0")
    assert bad.returncode == 2 and "alpha" in bad.stderr


@pytest.mark.lossless
@pytest.mark.slow
def test_every_mutant_is_caught_and_false_alarms_are_consistent_with_alpha():
    """The whole table, every family, at δ = 0.05 (α = rheo.selfgate.matrix.alpha_per_test() per test, power
    0.99): every mutant with an exact TV ≥ δ rejected, leq-coin and float16 reported below δ, and
    the correct fast path under 100 seeds rejected at a rate consistent with α and with 0.05
    (binomial p ≥ 0.001)."""
    r = run_rheo("mutants", "--json", "--tv", "0.05", "--seeds", "100", timeout=900)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr
    out = json.loads(r.stdout)
    verdicts = {m["mutant"]: m["verdict"] for m in out["mutants"]}
    assert len(verdicts) >= 18 and {m["case"] for m in out["mutants"]} & {"parents-wor-traversal/T0.5/zeros"}
    assert {n for n, v in verdicts.items() if v == "below δ"} == {"leq-coin", "float16"}
    assert all(v == "caught" for n, v in verdicts.items() if n not in ("leq-coin", "float16"))
    fa = out["false_alarm"]
    assert fa["seeds"] == 100
    assert fa["at_alpha"]["binomial_p"] >= 1e-3 and fa["at_0.05"]["binomial_p"] >= 1e-3


def test_fewest_runs_end_to_end():
    """`rheo mutants --fewest`, the headline table of docs/GATE_REFERENCE.md, as a user runs it on a fresh clone
    (about 40 s on 2 cores): every mutant gets a row, no hunted case is worse than its before case, and
    the hunted cases are used (residual-unnormalised's, on which the mutant emits the invalid token V,
    once stopped the command with "draft: reachable context [3] (key '3') has no row")."""
    from rheo_ref.bugclasses.batch import BATCH_MUTANTS
    from rheo_ref.bugclasses.mutants import BUG_MUTANTS
    from rheo_ref.variants import MUTANTS

    r = run_rheo("mutants", "--fewest", "--json", timeout=600)
    assert r.returncode == 0, r.stderr[-2000:]
    rows = {row["mutant"]: row for row in json.loads(r.stdout)["rows"]}
    assert set(rows) == {*MUTANTS, *BUG_MUTANTS, *BATCH_MUTANTS}
    for row in rows.values():
        if not row["float_level"] and row["before"] is not None:
            assert row["after"] <= row["before"], row
    hunted = rows["residual-unnormalised"]
    assert hunted["after_case"].startswith("hunt seed") and hunted["after"] < hunted["before"], hunted
    table = run_rheo("mutants", "--fewest", "--only", "residual-unnormalised", timeout=600)
    assert table.returncode == 0 and "| `residual-unnormalised` | residual |" in table.stdout, table.stderr[-2000:]
