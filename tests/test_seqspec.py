"""sequential-speculative-decoding 0.1.1 (`seqspecdecod`) judged on TableLMs (docs/THIRD_PARTY.md §7).

Its own `speculative_generate` runs unmodified; its output must fit the *exact law of its rule as
coded* (`rheo.decoders.seqspec.law.SeqSpec`): `standard` and `naive_hsd` are lossless exactly, `capped_hsd` is
not (its ratios are read at the wrong positions: capped_hsd.py lines 68-75, 210, 243-253).
Case tests/cases/hf.json (V = 4), γ = 3, the first 4 tokens (every draft level of the first round and
its bonus). Quick rows: α = 1e-3, δ = 0.25 (power 0.99); slow rows: δ = 0.1, every setting, two seeds.
"""

from __future__ import annotations

from fractions import Fraction

import pytest
from helpers import run_cli

from rheo.decoders import DecoderRun
from rheo.decoders.gate import decode_batch, gate_hf
from rheo.decoders.laws import Processing
from rheo.lossless.stats import check_law, samples_for, seed_for
from rheo_ref.errors import CaseError
from rheo_ref.exact import target_law, tv
from rheo_ref.models import load_case

pytest.importorskip("seqspecdecod")

from rheo.decoders.seqspec.law import SeqSpec

CASE = load_case("tests/cases/hf.json")
GAMMA, N_TOKENS = 3, 4  # γ draft levels + the bonus after the deepest
SETTINGS = {
    "T1": {},
    "T0.5": {"temperature": 0.5},
    "top-p0.9": {"top_p": 0.9},
    "top-k2": {"top_k": 2},
    "T0.5-top-p0.9": {"temperature": 0.5, "top_p": 0.9},
}


def laws(method, gen, n=N_TOKENS, gamma=GAMMA):
    """(the method's exact law as coded, the exact processed target law) of the first n tokens."""
    proc = Processing.from_gen(gen)
    own = SeqSpec(CASE.target, CASE.q_samp_model, proc, method=method, gamma=gamma).token_law(CASE.context, n)
    return own, target_law(proc.case(CASE), n)


@pytest.mark.parametrize("name", list(SETTINGS))
@pytest.mark.parametrize("method", ["standard", "naive_hsd"])
def test_standard_and_naive_hsd_are_lossless_exactly(method, name):
    own, target = laws(method, SETTINGS[name])
    assert tv(own, target) == 0


@pytest.mark.parametrize("name", ["T1", "T0.5"])
def test_capped_hsd_at_one_draft_token_is_standard_where_q_covers_p(name):
    """γ = 1: the capped rule reads the right positions by accident (Python's index −1 is 0) and is the
    standard rule when q > 0 wherever p > 0; from γ = 2 it reads them wrong."""
    one, target = laws("capped_hsd", SETTINGS[name], gamma=1)
    assert tv(one, target) == 0
    two, _ = laws("capped_hsd", SETTINGS[name], gamma=2)
    assert tv(two, target) > 0


@pytest.mark.parametrize("name", ["top-p0.9", "top-k2"])
def test_capped_hsd_never_resamples_a_token_the_draft_cannot_propose(name):
    """γ = 1, the first token: r* = 0 where q = 0 (capped_hsd.py lines 132-136), so the resampling row
    max(q·(r* − 1), 0) drops the tokens with q = 0 < p; the law is min(p, q) + (1 − Σ min(p, q)) times
    (p − q)+ renormalised on q > 0 only."""
    proc = Processing.from_gen(SETTINGS[name])
    p, q = proc.table(CASE.target).row(CASE.context), proc.table(CASE.q_samp_model).row(CASE.context)
    assert any(py > 0 == qy for py, qy in zip(p, q))  # the case exercises the defect
    res = [max(py - qy, Fraction(0)) if qy > 0 else Fraction(0) for py, qy in zip(p, q)]
    rest = 1 - sum(min(py, qy) for py, qy in zip(p, q))
    expected = {(y,): min(py, qy) + rest * r / sum(res) for y, (py, qy, r) in enumerate(zip(p, q, res))}
    own, target = laws("capped_hsd", SETTINGS[name], 1, gamma=1)
    assert own == {k: v for k, v in expected.items() if v} and tv(own, target) > 0


def sample(method, gen, seed, num):
    dec = DecoderRun.parse(f"seqspec:{method}", {**gen, "gamma": GAMMA})
    return decode_batch(CASE.to_json(), dec, list(CASE.context), N_TOKENS, seed, num)


def judge(method, gen, seed, delta):
    """Sample once (N from the planner); the samples against the target law and against the method's own law."""
    own, target = laws(method, gen)
    n = samples_for(target, delta, 1e-3, 0.01)
    samples = sample(method, gen, seed, n)
    return (
        check_law(samples, target, alpha=1e-3, tv=delta),
        check_law(samples, own, alpha=1e-3, tv=delta),
        tv(own, target),
    )


@pytest.mark.lossless
@pytest.mark.parametrize("method, name", [("standard", "T0.5"), ("naive_hsd", "T1")])
def test_quick_lossless_methods_pass(method, name, rheo_seed):
    res, own, exact = judge(method, SETTINGS[name], rheo_seed, 0.25)
    assert exact == 0 and not res.rejected and res.detectable_tv <= 0.25, res.summary()


@pytest.mark.lossless
def test_quick_capped_hsd_is_rejected_and_fits_its_own_law(rheo_seed):
    res, own, exact = judge("capped_hsd", SETTINGS["T0.5-top-p0.9"], rheo_seed, 0.25)
    assert exact >= 0.25 and res.rejected, res.summary()
    assert not own.rejected, own.summary()


@pytest.mark.slow
@pytest.mark.lossless
@pytest.mark.parametrize("salt", ["a", "b"])
@pytest.mark.parametrize("name", list(SETTINGS))
@pytest.mark.parametrize("method", ["naive_hsd", "capped_hsd"])
def test_slow_seqspec_rows(method, name, salt, rheo_seed):
    """δ = 0.1: every setting, two seeds; the samples fit the method's law; pass where its exact TV is 0."""
    res, own, exact = judge(method, SETTINGS[name], seed_for(f"{rheo_seed}|{salt}"), 0.1)
    assert not own.rejected, own.summary()
    if exact == 0:
        assert not res.rejected, res.summary()


def test_exact_tv_is_reported_by_the_gate():
    dec = DecoderRun.parse("seqspec:capped_hsd", {"gamma": 2})
    res = gate_hf(CASE, dec, alpha=1e-3, tv=0.5, tokens=2, seed=0)
    own, target = laws("capped_hsd", {}, 2, 2)
    assert Fraction(res["exact_tv"]) == tv(own, target) > 0
    assert res["package"] == "sequential-speculative-decoding 0.1.1"


@pytest.mark.parametrize(
    "name, gen, match",
    [
        ("seqspec", {}, "unknown decoder"),
        ("seqspec:fast", {}, "unknown method 'fast'"),
        ("seqspec:standard", {"gamma": 0}, "gamma=0 must be an integer in"),
        ("seqspec:standard", {"gamma": 9}, "gamma=9 must be an integer in"),
        ("seqspec:standard", {"gamma": True}, "gamma=True"),
        ("seqspec:naive_hsd", {"temperature": 0.6}, "1/T to be an integer"),
        ("seqspec:capped_hsd", {"repetition_penalty": 1.2}, "not supported"),
    ],
)
def test_bad_seqspec_options_are_refused(name, gen, match):
    with pytest.raises(CaseError, match=match):
        DecoderRun.parse(name, gen)


def test_gate_hf_help_lists_seqspec(capsys):
    with pytest.raises(SystemExit):
        run_cli(capsys, "gate-hf", "--help")
    out = capsys.readouterr().out
    assert "seqspec:METHOD" in out and "capped_hsd" in out


@pytest.mark.parametrize(
    "argv, msg",
    [
        (["--decoder", "seqspec:x"], "unknown method 'x'"),
        (["--decoder", "seqspec:standard", "--gen", "gamma=99"], "gamma=99 must be an integer in [1, 8]"),
        (["--decoder", "seqspec:standard", "--gen", "temperature=0"], "temperature=0 must be a number > 0"),
    ],
)
def test_gate_hf_seqspec_bad_input_is_one_line(capsys, argv, msg):
    code, out, err = run_cli(capsys, "gate-hf", "tests/cases/hf.json", *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and msg in err, err
