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
from proofs.delayed import CE_73, CE_74, closed_form
from proofs.dominance import CE_42, CE_42_TIE_FREE, CE_44, depth1_case
from proofs.gen import one_row_case
from proofs.one_level import FILLS_FIRST_CASE, fills_first_law
from proofs.seed_tables import TOPK_BEATS_RHEO
from proofs.survival import CE_RRSW_LARGE_PROXY, TABLE1
from proofs.symbolic import Explorer
from proofs.traversal import BV_EXAMPLE, CE_64, CE_65, block_verification_law, symbolic_depth1
from proofs.treespark import CE_93, CE_94, CE_95
from proofs.treespark import tables as treespark_tables
from proofs.tsubame import CE_81, CE_82, CE_83, CE_84
from proofs.tsubame import tables as tsubame_tables
from rheo_ref.exact import Exact, target_law, tv
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.static.scheme import StaticScheme
from rheo_ref.models import Case, Proxy, TableModel
from rheo_ref.verifier_laws import DraftTree, verify_tree_law

pytestmark = pytest.mark.proof
F = Fraction


def test_python_m_proofs_reproduces_every_recorded_verdict(tmp_path):
    out = tmp_path / "proofs.json"
    proc = subprocess.run(
        [sys.executable, "-m", "proofs", "--json", str(out)], capture_output=True, text=True, timeout=600
    )
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


@pytest.mark.parametrize(
    "claim, rc",
    [
        (_fake(PROVED, PROVED), 0),
        (_fake(REFUTED, PROVED), 1),
        (_fake(PROVED, REFUTED), 1),
        (_fake(PROVED, PROVED, raises=True), 1),
    ],
)
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
        pr for s, pr in Exact(case, "brute").round_law().items() if s[0] == 1 and len(s) > 1
    ) == F(1, 3)
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


# --- claims 6 and 7: Traversal, Block Verification, delayed expansion ----------------------------------


def _row(row, name):
    return TableModel(len(row), 0, {"": tuple(F(x) for x in row)}, name)


def _tau(law) -> Fraction:
    return sum((len(s) * pr for s, pr in law.items()), F(0))


def _static_tau(q, p, kind, sizes, sampling, verify) -> Fraction:
    return Exact(
        Case(_row(q, "draft"), _row(p, "target"), StaticScheme(kind, tuple(sizes), sampling, verify), (), 1), "brute"
    ).tau()


def test_claim_6_2_the_block_verification_papers_example():
    """Sun et al. (arXiv 2403.10444), the motivating example: 10/9 accepted draft tokens token by
    token, 11/9 with block verification; traversal on the chain gives the latter."""
    e = BV_EXAMPLE
    token, block = (_static_tau(e["q"], e["p"], "branching", [1, 1], "iid", v) - 1 for v in ("specinfer", "traversal"))
    assert (token, block) == (F(10, 9), F(11, 9))


def test_claim_6_2_block_verification_as_written_is_traversal_on_a_recorded_chain():
    q = TableModel.from_rows(
        {"": ["1/2", "1/3", "1/6"], "0": ["1/4", "1/4", "1/2"], "1": ["2/3", "1/6", "1/6"], "2": ["1/3", "1/3", "1/3"]},
        context_length=1,
        name="draft",
    )
    p = TableModel.from_rows(
        {"": ["1/6", "1/2", "1/3"], "0": ["1/2", "0", "1/2"], "1": ["1/4", "1/4", "1/2"], "2": ["0", "1/2", "1/2"]},
        context_length=1,
        name="target",
    )
    differs = []
    for toks in ((0, 0, 1), (1, 2, 2), (2, 0, 0)):
        tree = DraftTree(tuple(range(len(toks))), toks)
        law = verify_tree_law(tree, p, q, verify="traversal", sampling="iid")
        assert law == {k: v for k, v in block_verification_law(toks, p, q).items() if v}
        differs.append(law != verify_tree_law(tree, p, q, verify="specinfer", sampling="iid"))
    assert any(differs)  # the comparison can tell a token-level law apart


def test_claim_6_4_one_fixed_chain_traversal_emits_less():
    c = CE_64
    tree = DraftTree((0, 1), tuple(c["chain"]))
    q, p = _row(c["q"], "draft"), _row(c["p"], "target")
    t, s = (_tau(verify_tree_law(tree, p, q, verify=v, sampling="iid")) for v in ("traversal", "specinfer"))
    assert (t, s) == (F(35, 16), F(37, 16))
    # averaged over the draws of the same chain shape, traversal wins (claim 6.3)
    assert _static_tau(c["q"], c["p"], "branching", [1, 1], "iid", "traversal") > _static_tau(
        c["q"], c["p"], "branching", [1, 1], "iid", "specinfer"
    )


@pytest.mark.parametrize("which", ["wor", "iid"])
def test_claim_6_5_on_a_tree_traversal_can_lose_on_average(which):
    c = CE_65[which]
    t = _static_tau(c["q"], c["p"], "parents", c["parents"], c["sampling"], "traversal")
    s = _static_tau(c["q"], c["p"], "parents", c["parents"], c["sampling"], c["token_level"])
    assert (str(t), str(s)) == (c["tau_traversal"], c["tau_token_level"]) and t < s
    # the same tables on the chain of the same depth: traversal wins there (claim 6.3)
    assert _static_tau(c["q"], c["p"], "branching", [1, 1, 1], "iid", "traversal") >= _static_tau(
        c["q"], c["p"], "branching", [1, 1, 1], "iid", "specinfer"
    )


def test_claim_6_1_symbolic_check_rejects_the_wrong_ms_update():
    """The negative control: the symbolic execution finds the branch where traversal with the
    other sampling mode's Ms update (a known lossy variant) leaves the token-level law."""
    assert symbolic_depth1(3, "wor", (0, 1), (), ()) > 1
    for sampling, wrong in (("wor", "iid"), ("iid", "wor")):
        with pytest.raises(ProofError, match="differ"):
            symbolic_depth1(3, sampling, (0, 1), (), (), traversal_update=wrong)


def test_symbolic_execution_explores_every_feasible_branch():
    """min(1, x/y) on positive x, y: three branches (x > y, x = y, x < y), each with its value."""
    ex = Explorer(["x", "y"])
    x, y = ex.symbol("x"), ex.symbol("y")
    for v in (x, y):
        ex.require_positive(v)
    results = [(r, path) for r, path in ex.paths(lambda: min(F(1), x / y))]
    assert len(results) == 3
    values = sorted(str(r.e if hasattr(r, "e") else r) for r, _ in results)
    assert values == ["1", "1", "x/y"]


@pytest.mark.parametrize("ce, winner", [(CE_73, "rollouts"), (CE_74, "delayed")])
def test_claim_7_delayed_against_root_rollouts(ce, winner):
    d = _static_tau(ce["q"], ce["p"], "delayed", [2, 2, 1], "iid", "specinfer")
    r = _static_tau(ce["q"], ce["p"], "delayed", [2, 0, 2], "iid", "specinfer")
    assert (str(d), str(r)) == (ce["tau_delayed_2_2_1"], ce["tau_rollouts_2_0_2"])
    assert (d > r) == (winner == "delayed")
    # claim 7.1's closed form, with beta and beta_2 from the depth-1 fans
    beta = _static_tau(ce["q"], ce["p"], "branching", [1], "iid", "specinfer") - 1
    beta_2 = _static_tau(ce["q"], ce["p"], "branching", [2], "iid", "specinfer") - 1
    assert (d, r) == (closed_form(beta, beta_2, 2, 1), closed_form(beta, beta_2, 0, 2))


@pytest.mark.parametrize(
    "ce, winner, loser",
    [(CE_81, "topk", "tsubame"), (CE_82, "tsubame", "topk"), (CE_83, "chain", "tsubame"), (CE_84, "tsubame", "chain")],
)
def test_claim_8_tsubame_against_topk_and_a_chain(ce, winner, loser):
    """Each recorded table, recomputed with rheo_ref directly: Tsubame (K=2, W=1, D=2, R=3) against
    the rheo family with m = K on the same K, W, D, R, and against the static chain of R nodes."""
    from rheo_ref.families.tsubame.scheme import TsubameScheme

    q, p = tsubame_tables(ce["V"], ce["seed"], ce["style"])
    sampling, verify = ce["pairing"].split("+")
    schemes = {
        "tsubame": TsubameScheme(2, 1, 2, 3, sampling, verify),
        "topk": Scheme(2, 2, 1, 2, 3),
        "chain": StaticScheme("branching", (1, 1, 1), sampling, verify),
    }
    t = {k: Exact(Case(q, p, schemes[k], (0,), 1), "brute").tau() for k in (winner, loser)}
    assert (str(t[winner]), str(t[loser])) == (ce[winner], ce[loser])
    assert t[winner] > t[loser]


def _spark(N: int, theta: str, cal: str, verify: str):
    from rheo_ref.families.treespark.scheme import Calibration, TreeSparkScheme

    return TreeSparkScheme(N, 2, 3, F(theta), Calibration.parse(cal), verify)


def test_claim_9_3_own_survival_counterexample_recomputed_with_rheo_ref():
    """The recorded smallest own-survival counterexample: TV > 0 under the mutant (brute, the
    recorded value), TV = 0 for the spec on the same case, and both laws equal at θ = 0."""
    from rheo_ref.variants import MUTANTS

    ce = CE_93
    q, p = treespark_tables(ce["V"], ce["style"], ce["seed"])
    cal = "identity" if ce["calibration"] == "identity" else "sigmoid:0.6684,-0.4587"
    case = Case(q, p, _spark(ce["N"], ce["theta"], cal, ce["verify"]), (0,), 2)
    own = MUTANTS["treespark-own-survival"]
    assert str(tv(Exact(case, "brute", variant=own).token_law(2), target_law(case, 2))) == ce["tv"] != "0"
    assert tv(Exact(case, "brute").token_law(2), target_law(case, 2)) == 0
    free = Case(q, p, _spark(ce["N"], "0", cal, ce["verify"]), (0,), 2)
    assert Exact(free, "brute", variant=own).token_law(2) == Exact(free, "brute").token_law(2)


def test_claim_9_lemma_holds_for_the_spec_and_fails_on_broken_builders(monkeypatch):
    """`lemma_violation` finds nothing on a spec round with siblings and binding θ, names node 1 on
    the own-survival mutant, and names a token law when the draw law it compares against is wrong
    (iid instead of wor: the second sibling's law differs)."""
    import proofs.treespark as t
    from rheo_ref.families.static.scheme import next_draw
    from rheo_ref.variants import MUTANTS

    q, p = treespark_tables(3, "uniform", 0)
    case = Case(q, p, _spark(4, "1/8", "identity", "traversal"), (0,), 1)
    assert t.lemma_violation(case, (0,)) is None
    bad = t.lemma_violation(Case(q, p, _spark(2, "2/5", "identity", "rrsw"), (0,), 1), (0,), MUTANTS[
        "treespark-own-survival"])  # fmt: skip
    assert bad is not None and bad.startswith("node 1 ") and "exists for some of its own tokens only" in bad
    monkeypatch.setattr(t, "next_draw", lambda row, drawn, mode: next_draw(row, drawn, "iid"))
    wrong = t.lemma_violation(case, (0,))
    assert wrong is not None and "token law" in wrong and "draw law" in wrong


@pytest.mark.parametrize("ce, winner, loser", [(CE_94, "chain", "treespark"), (CE_95, "treespark", "chain")])
def test_claim_9_treespark_against_a_chain(ce, winner, loser):
    """Each recorded grid point recomputed by brute force: TreeSpark N = 3, k = 2, D = 3, θ = 0
    (identity) against the wor chain of 3 nodes with the same verifier."""
    q, p = treespark_tables(ce["V"], ce["style"], ce["seed"])
    schemes = {"treespark": _spark(3, "0", "identity", ce["verify"]),
               "chain": StaticScheme("branching", (1, 1, 1), "wor", ce["verify"])}  # fmt: skip
    t = {k: Exact(Case(q, p, schemes[k], (0,), 1), "brute").tau() for k in (winner, loser)}
    assert (str(t[winner]), str(t[loser])) == (ce[winner], ce[loser]) and t[winner] > t[loser]


def test_proof_error_is_a_rheo_error():
    from rheo_ref.errors import RheoError

    assert issubclass(ProofError, RheoError)
