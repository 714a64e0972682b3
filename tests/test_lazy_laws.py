"""The exact laws of third-party decoders built one token at a time (`rheo.decoders.eagle.law`,
`rheo.decoders.seqspec.law`) are the laws rheo computed before, Fraction for Fraction, where those finish
(`baseline_laws`: the old enumerations, kept here only); they answer at V = 12, where the old ones
did not; and a stopped run (Ctrl-C, SIGTERM) says where it was.
"""

from __future__ import annotations

import importlib.util
import os
import random
import signal

import pytest
from baseline_laws import EagleEnumeration, SeqSpecEnumeration

from rheo.decoders.eagle.law import Eagle
from rheo.decoders.law_progress import LawProgress, LawStopped
from rheo.decoders.laws import Processing
from rheo.decoders.seqspec.law import SeqSpec
from rheo.decoders.seqspec.sampler import CRASH
from rheo_ref.exact import target_law, tv
from rheo_ref.generate import random_pair
from rheo_ref.models import load_case

CASE = load_case("tests/cases/eagle.json")  # V = 10, 4 tokens in every row's support
CASE12 = load_case("tests/cases/eagle12.json")  # V = 12, first order, every token in every row's support
SETTINGS = {"T1": {}, "T0.5": {"temperature": 0.5}, "top-p0.9": {"top_p": 0.9}, "top-k2": {"top_k": 2, "ties": "all"}}
SMALL_TREE = ((0,), (1,), (0, 0), (0, 1), (0, 0, 0))  # eagle's rule on a tree whose old law is quick at V = 4


@pytest.mark.parametrize("leaf_bonus", ["raw", "processed"])
@pytest.mark.parametrize("name", list(SETTINGS))
def test_eagle_one_token_at_a_time_is_the_old_enumeration(name, leaf_bonus):
    """eagle's tree mc_sim_7b_63, every setting, 1..7 tokens (the deepest leaf and its bonus)."""
    proc = Processing.from_gen(SETTINGS[name])
    old = EagleEnumeration(CASE.target, CASE.q_samp_model, proc, leaf_bonus=leaf_bonus)
    new = Eagle(CASE.target, CASE.q_samp_model, proc, leaf_bonus=leaf_bonus)
    for n in (1, 2, 4, 7):
        assert new.token_law(CASE.context, n, show=False) == old.token_law(CASE.context, n), n


@pytest.mark.parametrize("seed", range(6))
def test_eagle_one_token_at_a_time_is_the_old_enumeration_on_random_tables(seed):
    """Random first-order V = 4 tables (with zeros: children skipped without a coin), a small tree,
    up to 5 tokens (two rounds), both leaf rules."""
    q, p = random_pair(random.Random(seed), 4, 1, style="uniform" if seed % 2 else "close")
    for leaf_bonus in ("raw", "processed"):
        for gen in ({}, {"temperature": 0.5}):
            proc = Processing.from_gen(gen)
            old = EagleEnumeration(p, q, proc, leaf_bonus=leaf_bonus, tree=SMALL_TREE)
            new = Eagle(p, q, proc, leaf_bonus=leaf_bonus, tree=SMALL_TREE)
            for n in (1, 2, 3, 5):
                law = new.token_law((seed % 4,), n, show=False)
                assert law == old.token_law((seed % 4,), n) and sum(law.values()) == 1, (leaf_bonus, gen, n)


def test_eagle_answers_at_v12_and_is_exact_there():
    """V = 12 (the old enumeration gave no answer in 5 minutes at 2 tokens): 2 tokens lossless at T = 1 and
    with the corrected leaf rule at T = 1/2; 4 tokens lossy as coded at T = 1/2."""
    for gen, leaf_bonus, lossless in (({}, "raw", True), ({"temperature": 0.5}, "processed", True)):
        proc = Processing.from_gen(gen)
        law = Eagle(CASE12.target, CASE12.q_samp_model, proc, leaf_bonus=leaf_bonus).token_law(CASE12.context, 2)
        assert (tv(law, target_law(proc.case(CASE12), 2)) == 0) is lossless and len(law) == 144
    proc = Processing.from_gen({"temperature": 0.5})  # the raw p's bonus after a leaf: reached from token 4 on
    coded = Eagle(CASE12.target, CASE12.q_samp_model, proc).token_law(CASE12.context, 4, show=False)
    assert sum(coded.values()) == 1 and tv(coded, target_law(proc.case(CASE12), 4)) > 0


def stop_on_call(monkeypatch, stop, how: str) -> list:
    """Make the first call of Eagle.moves for which stop(path, ctx) holds stop the run (Ctrl-C, or SIGTERM
    to this process); returns the calls (path, ctx) made."""
    calls: list = []
    real = Eagle.moves

    def moves(self, path, ctx):
        calls.append((path, tuple(ctx)))
        if stop(path, tuple(ctx)):
            if how == "sigterm":
                os.kill(os.getpid(), signal.SIGTERM)
            else:
                raise KeyboardInterrupt
        return real(self, path, ctx)

    monkeypatch.setattr(Eagle, "moves", moves)
    return calls


def test_a_stopped_eagle_law_says_where_it_was(monkeypatch):
    """Two tokens, stopped at the root after the first token 1, when the law after the first token 0 is
    done: the message names the prefix [1], the tree node [] (the root), and p(0) of the mass done."""
    ex = Eagle(CASE12.target, CASE12.q_samp_model, Processing())
    p = ex.p.row(list(CASE12.context))
    calls = stop_on_call(monkeypatch, lambda path, ctx: ctx == (0, 1), "ctrl-c")
    with pytest.raises(LawStopped) as info:
        ex.token_law(CASE12.context, 2, show=False)
    assert calls == [((), (0, 0)), ((), (0, 1))]  # one move law per first token, at its root
    msg = str(info.value)
    assert "prefix [1] (token 2 of 2, tree node [], 1 deep)" in msg, msg
    assert f"{float(p[0]):.1%} of the law's mass done" in msg, msg
    assert isinstance(info.value, KeyboardInterrupt)


def test_law_progress_counts_parts_whatever_is_reported_inside():
    with LawProgress("law", 2, (0,), state_name="state", show=False) as prog:
        with prog.part(0.25):
            prog.enter((0, 3), "s")
            prog.done(0.5)
            prog.leave()
        assert prog.mass == 0.25  # the whole part, though only half of it was reported inside
        with prog.part(0.75):
            prog.enter((0, 2), "s")
            prog.enter((0, 2, 1), "t")
            with pytest.raises(LawStopped, match=r"at the 0 tokens after prefix \[2, 1\] .*state t, 2 deep.*25.0%"):
                prog.__exit__(KeyboardInterrupt, KeyboardInterrupt(), None)


@pytest.mark.skipif(importlib.util.find_spec("transformers") is None, reason="rheo gate-hf needs transformers")
@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_rheo_gate_hf_stopped_in_the_exact_law_says_where_it_was(monkeypatch, capsys, how):
    """`rheo gate-hf --decoder eagle` stopped (Ctrl-C, or SIGTERM as `timeout` sends) while the exact
    law works: exit 130 and one line that says where the law was."""
    from rheo.cli import main

    before = signal.getsignal(signal.SIGTERM)
    stop_on_call(monkeypatch, lambda path, ctx: len(ctx) == 3 and path == (0,), how)  # a child of the 2nd root
    code = main(["gate-hf", "tests/cases/eagle12.json", "--decoder", "eagle", "--tokens", "3", "--tv", "0.3"])
    out, err = capsys.readouterr()
    assert code == 130 and out == "" and err.count("\n") == 1, err
    assert err.startswith("rheo: interrupted: eagle exact law of 3 tokens stopped after") and "prefix [" in err, err
    assert "of the law's mass done" in err and signal.getsignal(signal.SIGTERM) is before


def test_law_stopped_is_exact_about_nothing_done():
    with pytest.raises(LawStopped, match=r"the first token; 0.0% of the law's mass done"):
        with LawProgress("law", 1, (), state_name="state", show=False):
            raise KeyboardInterrupt


HF = load_case("tests/cases/hf.json")  # V = 4, first order


@pytest.mark.parametrize("method", ["standard", "naive_hsd", "capped_hsd"])
@pytest.mark.parametrize("name", list(SETTINGS))
def test_seqspec_one_token_at_a_time_is_the_old_enumeration(method, name):
    """Every method and setting, γ = 1..3, 1..6 tokens (two rounds and more), one object asked in turn."""
    proc = Processing.from_gen(SETTINGS[name])
    for gamma in (1, 2, 3):
        new = SeqSpec(HF.target, HF.q_samp_model, proc, method=method, gamma=gamma)
        old = SeqSpecEnumeration(HF.target, HF.q_samp_model, proc, method=method, gamma=gamma)
        for n in (4, 1, 2, 6):
            assert new.token_law(HF.context, n, show=False) == old.token_law(HF.context, n), (gamma, n)


CRASH_SEEDS = (1, 4, 5, 6)  # the seeds below whose tables make capped_hsd crash (a row summing to 0)


@pytest.mark.parametrize("seed", range(7))
def test_seqspec_one_token_at_a_time_is_the_old_enumeration_on_random_tables(seed):
    """Random V = 3 tables with zeros, some with rows that crash torch.multinomial (the outcome CRASH)."""
    q, p = random_pair(random.Random(seed), 3, 1, style="uniform")
    crashes = 0
    for method in ("standard", "naive_hsd", "capped_hsd"):
        for gamma in (2, 3):
            new = SeqSpec(p, q, Processing(), method=method, gamma=gamma)
            old = SeqSpecEnumeration(p, q, Processing(), method=method, gamma=gamma)
            for n in (3, 1, 5):
                law = new.token_law((seed % 3,), n, show=False)
                assert law == old.token_law((seed % 3,), n) and sum(law.values()) == 1, (method, gamma, n)
                crashes += (CRASH,) * n in law
    assert (crashes > 0) == (seed in CRASH_SEEDS)  # the crash path is among those compared


def test_seqspec_standard_answers_at_v12_with_five_drafts_and_is_exact_there():
    """γ = 5 (the package's default) at V = 12: the old law enumerated 12^5 drafts a round."""
    for gen in ({}, {"temperature": 0.5}):
        proc = Processing.from_gen(gen)
        law = SeqSpec(CASE12.target, CASE12.q_samp_model, proc, method="standard", gamma=5).token_law(
            CASE12.context, 3, show=False
        )
        assert len(law) == 12**3 and tv(law, target_law(proc.case(CASE12), 3)) == 0


@pytest.mark.parametrize("seed", range(4))
def test_seqspec_hsd_prefix_walk_is_the_old_enumeration_with_long_drafts(seed):
    """naive_hsd and capped_hsd with γ = 4 and 5 (V = 3, drafts of 81 and 243 tokens a round), raw and
    top-k 2 (zeros in q), n from 1 to γ + 2: cut inside the draft, at its last token, at the bonus, and
    into a second round."""
    q, p = random_pair(random.Random(seed), 3, 1, style="uniform" if seed % 2 else "close")
    for method in ("naive_hsd", "capped_hsd"):
        for gamma in (4, 5):
            for gen in ({}, {"top_k": 2, "ties": "all"}):
                proc = Processing.from_gen(gen)
                new = SeqSpec(p, q, proc, method=method, gamma=gamma)
                old = SeqSpecEnumeration(p, q, proc, method=method, gamma=gamma)
                for n in (1, 3, gamma - 1, gamma, gamma + 1, gamma + 2):
                    law = new.token_law((seed % 3,), n, show=False)
                    assert law == old.token_law((seed % 3,), n) and sum(law.values()) == 1, (method, gamma, gen, n)


def test_seqspec_hsd_answers_at_v12_with_five_drafts():
    """γ = 5 at V = 12 (the enumeration walked 12^5 = 248,832 drafts a round, Fraction by Fraction):
    naive_hsd is lossless over 3 tokens, capped_hsd is not over 2."""
    proc = Processing()
    target = target_law(CASE12, 3)
    naive = SeqSpec(CASE12.target, CASE12.q_samp_model, proc, method="naive_hsd", gamma=5)
    law = naive.token_law(CASE12.context, 3, show=False)
    assert len(law) == 12**3 and tv(law, target) == 0
    capped = SeqSpec(CASE12.target, CASE12.q_samp_model, proc, method="capped_hsd", gamma=5)
    law = capped.token_law(CASE12.context, 2, show=False)
    assert sum(law.values()) == 1 and tv(law, target_law(CASE12, 2)) > 0


def test_a_stopped_seqspec_round_law_names_the_draft_prefix_it_was_at(monkeypatch):
    """naive_hsd walks a round's draft prefixes: stopped at the prefix (1, 2) of the first round (γ = 3),
    the message says so, and that 5 of the 3^2 prefixes of 2 tokens were done there (in lexicographic
    order)."""
    q, p = random_pair(random.Random(0), 3, 1, style="close")
    assert all(v > 0 for row in (q.row([x]) for x in range(3)) for v in row)  # no prefix skipped
    real = SeqSpec._hinge

    def hinge(self, ctx):
        if ctx == (0, 1, 2):
            raise KeyboardInterrupt
        return real(self, ctx)

    monkeypatch.setattr(SeqSpec, "_hinge", hinge)
    with pytest.raises(LawStopped) as info:
        SeqSpec(p, q, Processing(), method="naive_hsd", gamma=3).token_law((0,), 2, show=False)
    msg = str(info.value)
    assert "the 2 tokens after prefix [] (token 1 of 2, at a round's start, 1 deep)" in msg, msg
    assert "at draft prefix [1, 2], 5 of 9 prefixes of 2 tokens done at this round's start; 0.0% of" in msg, msg


@pytest.mark.parametrize(
    "name, gen",
    [
        ("sglang", {"num_steps": 3}),
        ("sglang", {"num_steps": 3, "block_verification": True}),
        ("eagle-harness", {"children": 2, "depth": 2}),
        ("flashspec", {"gamma": 3}),
    ],
)
def test_served_exact_laws_answer_at_v12(name, gen):
    """The served decoders' exact laws at V = 12, first order, 3 tokens (round laws memoised by visible
    context, cut to the tokens left): every outcome, lossless where the algorithm is."""
    from rheo.decoders import DecoderRun, decoders

    dec, run = decoders()[name], DecoderRun.parse(name, gen)
    law = dec.exact_law(CASE12, 3, run)
    assert law is not None and len(law) == 12**3 and tv(law, dec.target_law(CASE12, 3, run)) == 0
