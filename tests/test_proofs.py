"""`python -m proofs` and the recorded counterexamples of proofs/.

The runner test reruns every claim in a subprocess, as `make proofs` does, and checks that each
verdict equals the recorded one. The regression tests recompute every recorded counterexample
directly with rheo_ref (not through proofs' own checks), so a counterexample that stops
refuting fails here by name.
"""
from __future__ import annotations

import json
import subprocess
import sys
from fractions import Fraction

import pytest

from proofs import all_claims
from proofs.__main__ import main
from proofs._claim import PROVED, REFUTED, Claim, Outcome, ProofError
from rheo_ref.exact import Exact, target_law, tv
from rheo_ref.models import Case, Proxy, Scheme

from proofs.dominance import CE_42, CE_42_TIE_FREE, CE_44, depth1_case
from proofs.gen import one_row_case
from proofs.one_level import FILLS_FIRST_CASE, fills_first_law
from proofs.seed_tables import TOPK_BEATS_RHEO
from proofs.survival import CE_RRSW_LARGE_PROXY, TABLE1

pytestmark = pytest.mark.proof
F = Fraction


def test_python_m_proofs_reproduces_every_recorded_verdict(tmp_path):
    out = tmp_path / "proofs.json"
    proc = subprocess.run([sys.executable, "-m", "proofs", "--json", str(out)], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    results = json.loads(out.read_text())
    ids = [c.id for c in all_claims()]
    assert [r["id"] for r in results] == ids
    for r in results:
        assert r["verdict"] == r["recorded"], r
        assert r["verdict"] == PROVED or r["verdict"].startswith("proved up to size ") or r["verdict"] == REFUTED
        if r["verdict"] == REFUTED:
            assert r["counterexample"], f"claim {r['id']} is refuted without a recorded counterexample"
    for cid in ids:
        assert any(line.startswith(f"{cid} · ") for line in proc.stdout.splitlines()), cid
    assert f"{len(ids)}/{len(ids)} verdicts as recorded" in proc.stdout


def _fake(verdict: str, recorded: str, raises: bool = False) -> Claim:
    def check() -> Outcome:
        if raises:
            raise ProofError("a lemma no longer holds")
        return Outcome(verdict, "fake")
    return Claim("9", "fake claim", "none", recorded, check)


@pytest.mark.parametrize("claim, rc", [
    (_fake(PROVED, PROVED), 0),
    (_fake(REFUTED, PROVED), 1),
    (_fake(PROVED, REFUTED), 1),
    (_fake(PROVED, PROVED, raises=True), 1),
])
def test_exit_status_is_nonzero_when_a_verdict_differs(monkeypatch, capsys, claim, rc):
    monkeypatch.setattr("proofs.__main__.all_claims", lambda: [claim])
    assert main([]) == rc
    printed = capsys.readouterr()
    assert "fake claim" in printed.out
    if rc:
        assert "DIFFERS: 9" in printed.err


def test_list_and_bad_only(capsys):
    assert main(["--list"]) == 0
    assert "4.2" in capsys.readouterr().out
    with pytest.raises(SystemExit) as e:
        main(["--only", "nope"])
    assert e.value.code == 2


# --- the recorded counterexamples, recomputed with rheo_ref -------------------------------------

def _acc(case: Case) -> Fraction:
    return Exact(case, "brute").acceptance()


@pytest.mark.parametrize("ce", [CE_42, CE_42_TIE_FREE], ids=["smallest", "tie-free"])
def test_claim_4_2_one_level_with_a_fill_ot_accepts_less(ce):
    ot = _acc(depth1_case(ce["p"], ce["q"], 1, 1, "rheo"))
    rrsw = _acc(depth1_case(ce["p"], ce["q"], 1, 1, "rrsw"))
    assert (str(ot), str(rrsw)) == (ce["acceptance_ot"], ce["acceptance_rrsw"])
    assert ot < rrsw
    # without the fill (K = m + 1) the order of 4.1 is restored
    assert _acc(depth1_case(ce["p"], ce["q"], 1, 0, "rheo")) >= _acc(depth1_case(ce["p"], ce["q"], 1, 0, "rrsw"))


def test_claim_4_4_pruned_tree_without_fills_ot_has_smaller_tau():
    case = Case.from_json(CE_44)
    ot, rrsw = Exact(case, "brute").tau(), Exact(case.with_scheme(verify="rrsw"), "brute").tau()
    assert (ot, rrsw) == (F(7, 4), F(11, 6))
    # both orders are still lossless, and the root acceptance still favours OT (claim 4.5)
    for v in ("rheo", "rrsw"):
        c = case.with_scheme(verify=v)
        assert tv(Exact(c).token_law(2), target_law(c, 2)) == 0
    assert _acc(case) >= _acc(case.with_scheme(verify="rrsw"))


def test_claim_3_rrsw_large_proxy_is_lossy_only_with_rrsw():
    case = Case.from_json(CE_RRSW_LARGE_PROXY)
    assert tv(Exact(case, "brute").token_law(1), target_law(case, 1)) == F(1, 6)
    assert Exact(case, "brute").round_law()[(1,)] + sum(
        pr for s, pr in Exact(case, "brute").round_law().items() if s[0] == 1 and len(s) > 1) == F(1, 3)
    for changes in ({"verify": "rheo"}, {"proxy": "rheo"}):
        c = case.with_scheme(**changes)
        assert tv(Exact(c, "brute").token_law(2), target_law(c, 2)) == 0


def test_table1_adhoc_proxies_bias_and_lose_exactness():
    t = TABLE1
    for proxy, want in (("rheo", 0), ("true", F(1, 5)), ("const:1/4", F(1, 5)), ("scaled:1/2", F(1, 5))):
        case = one_row_case(t["q"], t["p"], Scheme(t["K"], t["m"], t["W"], t["D"], t["R"], Proxy.parse(proxy), "rheo"))
        assert tv(Exact(case, "brute").token_law(1), target_law(case, 1)) == want, proxy


def test_claim_2_negative_control_fills_before_the_sampled_child():
    c = FILLS_FIRST_CASE
    p = [F(x) for x in c["p"]]
    law = fills_first_law(p, [F(x) for x in c["qtilde"]], c["m"], c["k"])
    assert [law[t] for t in range(3)] == [0, F(1, 16), F(15, 16)] != p


def test_table4_setting_topk_can_beat_rheo():
    c = TOPK_BEATS_RHEO
    topk = one_row_case(c["q"], c["p"], Scheme(3, 3, 3, 1, 3, Proxy.parse("rheo"), "rheo"))
    assert _acc(topk) == 1
    for v in ("rheo", "rrsw"):
        assert _acc(depth1_case(c["p"], c["q"], 1, 1, v)) == F(5, 6)


def test_proof_error_is_a_rheo_error():
    from rheo_ref.errors import RheoError
    assert issubclass(ProofError, RheoError)
