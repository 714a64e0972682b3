"""vLLM 0.33.0's RejectionSampler (docs/THIRD_PARTY.md, "vLLM 0.33.0"), judged unmodified.

Exact-law tests need no venv. Rows marked `served` run vLLM's own code in `.venv-vllm` (built by
`make .venv-vllm/.installed`; skipped with the reason when absent), in Triton's CPU interpreter.
Quick rows (about 55 s together): α = 1e-3, δ = 0.35 and 0.3 (power 0.99), the first 2 tokens (16 cells);
slow rows: every row of the verdict table (`rheo gate --decoder vllm --rows all`), δ = 0.2, two seeds.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest
from helpers import CASES, gate_decoder, needs_env, verdict_row

from rheo.decoders import decoders, vllm
from rheo.decoders.laws import Chain, table_drafter
from rheo.decoders.served import env_missing_reason, run_driver
from rheo.decoders.vllm.law import BlockLaw, Setting, VLLMLaw, conditional_rates
from rheo.lossless.stats import samples_for
from rheo_ref.errors import CaseError, EnvironmentFailure
from rheo_ref.exact import tv
from rheo_ref.models import load_case

CASE = load_case(str(CASES / "hf.json"))
NAME = "vllm"
served = needs_env(NAME)
SETTINGS = {
    "T1": {},
    "T0.5": {"temperature": 0.5},
    "top-k2": {"top_k": 2},
    "top-p0.9": {"top_p": 0.9},
    "T0.5-top-k3-top-p0.9": {"temperature": 0.5, "top_k": 3, "top_p": 0.9},
}


@pytest.mark.parametrize("k", [0, 1, 2, 3])
@pytest.mark.parametrize("draft_probs", [1, 0])
@pytest.mark.parametrize("name", list(SETTINGS))
def test_vllms_law_as_written_is_the_target_law_exactly(name, draft_probs, k):
    gen = dict(SETTINGS[name], k=k, draft_probs=draft_probs)
    assert tv(vllm.law(CASE, gen, 4), vllm.target(CASE, gen, 4)) == 0


@pytest.mark.parametrize("draft_probs", [True, False])
def test_one_round_agrees_with_the_chain_rule_written_independently(draft_probs):
    """A round's law (variable-length outcomes, not the target law) against rheo.decoders.laws.Chain."""
    q, p, ctx = CASE.q_samp_model, CASE.target, tuple(CASE.context)

    def verify_row(c, x):
        return q.row(c) if draft_probs else tuple(Fraction(int(y == x)) for y in range(p.vocab_size))

    for k in (1, 2, 3):
        ours = VLLMLaw(p, q, Setting(k=k), draft_probs=draft_probs).round_law(ctx, k + 1)
        chain = Chain(p, table_drafter(q), verify_row, cap=k).round_law(ctx)
        assert ours == chain


@pytest.mark.parametrize("draft_probs", [1, 0])
def test_block_verification_as_written_is_lossless_and_accepts_at_least_as_much(draft_probs):
    """The V2 runner's block verification (Sun et al.): TV 0 to the target, and a round's expected length
    at least token-level verification's (the paper's claim): strictly more with draft probabilities; the
    same with one-hot drafts (on this case: with a point-mass q, block verification gains nothing)."""
    q, p, ctx = CASE.q_samp_model, CASE.target, tuple(CASE.context)
    more = False
    for k in (1, 2, 3):
        gen = {"k": k, "method": "block", "draft_probs": draft_probs}
        assert tv(vllm.law(CASE, gen, 4), vllm.target(CASE, gen, 4)) == 0
        mean = [
            sum(len(s) * w for s, w in law.round_law(ctx, k + 1).items())
            for law in (
                BlockLaw(p, q, Setting(k=k), draft_probs=bool(draft_probs)),
                VLLMLaw(p, q, Setting(k=k), draft_probs=bool(draft_probs)),
            )
        ]
        assert mean[0] >= mean[1]
        more |= mean[0] > mean[1]
    assert more == bool(draft_probs)


def test_the_synthetic_method_is_lossy_exactly():
    """vLLM's documented-lossy synthetic acceptance: the negative control's law is far from the target."""
    gen = {"k": 3, "synthetic": "9/10,4/5,7/10"}
    assert conditional_rates([Fraction(9, 10), Fraction(4, 5), Fraction(7, 10)]) == [
        Fraction(9, 10),
        Fraction(8, 9),
        Fraction(7, 8),
    ]
    assert tv(vllm.law(CASE, gen, 4), vllm.target(CASE, gen, 4)) > Fraction(1, 3)


def test_greedy_is_the_argmax_chain():
    gen = {"k": 2, "temperature": 0}
    law = vllm.law(CASE, gen, 4)
    assert list(law.values()) == [1] and law == vllm.target(CASE, gen, 4)


def test_the_law_is_lazy_in_the_tokens_asked_for():
    law = VLLMLaw(CASE.target, CASE.q_samp_model, Setting(k=3))
    assert all(len(s) == 1 for s in law.round_law(tuple(CASE.context), 1))


@pytest.mark.parametrize(
    "gen, message",
    [({"temperature": 0.3}, "1/T"), ({"k": 200}, "k=200"), ({"repetition_penalty": 1.2}, "not a vLLM option"),
     ({"synthetic": "1/2,3/4"}, "not increase"), ({"method": "block", "temperature": 0.5}, "temperature 1"),
     ({"method": "tree"}, "allowed: token, block")],
)  # fmt: skip
def test_bad_settings_are_refused(gen, message):
    with pytest.raises(CaseError, match=message):
        vllm.law(CASE, gen, 2)


def test_an_absent_environment_says_how_to_build_it():
    assert "envs/nope.txt does not exist" in (env_missing_reason("nope") or "")


@served
def test_a_failing_driver_names_env_module_and_its_stderr():
    with pytest.raises(EnvironmentFailure, match=r"(?s)rheo\.no_such_driver in \.venv-vllm exited.*No module named"):
        run_driver("vllm", "rheo.no_such_driver", {}, timeout=120)


@served
@pytest.mark.lossless
def test_quick_vllm_with_draft_probs_passes(rheo_seed):
    """`rheo gate tests/cases/hf.json --decoder vllm --gen k=2 --tokens 2 --tv 0.35` (α = 1e-3, power 0.99)."""
    r = gate_decoder(NAME, {"k": 2}, rheo_seed, tv=0.35, tokens=2, case=CASES / "hf.json")
    assert r["exact_tv"] == "0" and r["verdict"] == "pass" and r["detectable_tv"] <= 0.35, r["summary"]


@served
@pytest.mark.lossless
def test_quick_vllm_synthetic_is_rejected_and_fits_its_own_law(rheo_seed):
    """The negative control at δ = 0.3 (N = 127): the law pooled to the cells the test uses is itself at
    TV >= δ from the target (checked here: at δ = 0.35, N = 79 pools 16 outcomes into 3 cells and the pooled
    TV falls to 0.18, which the test cannot promise to see), so the rejection is promised with power 0.99."""
    from rheo.lossless.cells import pool_cells

    gen, delta = {"k": 2, "synthetic": "1,1"}, 0.3
    c = replace(CASE, tokens=2)
    claimed, own = vllm.target(c, gen, 2), vllm.law(c, gen, 2)
    groups = pool_cells(claimed, samples_for(claimed, delta, 1e-3, 0.01))
    pooled_tv = sum(abs(sum(own.get(o, 0) for o in g) - sum(claimed[o] for o in g)) for g in groups) / 2
    assert pooled_tv >= delta
    r = gate_decoder(NAME, gen, rheo_seed, tv=delta, tokens=2, case=CASES / "hf.json")
    assert r["exact_tv_float"] > delta and r["verdict"] == "REJECT", r["summary"]
    assert r["own_law_p"] >= 1e-3, r  # the samples fit vLLM's own exact law (α = 1e-3)


@pytest.mark.slow
@served
@pytest.mark.lossless
@pytest.mark.parametrize("setting", [r.setting for r in decoders()[NAME].table.rows])
def test_slow_vllm_rows(setting, request):
    """The verdict table (`rheo gate --decoder vllm --rows all`), two seeds: the verdict follows the exact TV
    (pass at 0, REJECT above δ), a lossy row's samples fit vLLM's own exact law, and the row that cannot
    run here fails with its reason."""
    r = verdict_row(NAME, setting, request.node.nodeid, error="AttributeError")
    assert all(p is None or p >= 1e-3 for p in r.get("own_law_p", [])), r


# --- vLLM's own logits processors, FLy, and the 0.34.0 release --------------------------------------------------

served034 = needs_env("vllm034")  # vLLM 0.34.0 (envs/vllm034.txt): built on demand, not by make test


def test_min_p_reaches_only_the_bonus_token_exactly():
    """0.33's RejectionSampler runs only non-argmax-invariant processors at verified positions; MinPLogitsProcessor
    is argmax-invariant, so min-p shapes the bonus alone: the law at k = 3 is p's on the first 3 tokens."""
    from rheo_ref.exact import target_law

    gen = {"k": 3, "min_p": 0.5}
    assert vllm.law(CASE, gen, 3) == target_law(CASE, 3)  # the first k tokens: no min-p at all
    assert tv(vllm.law(CASE, gen, 2), vllm.claimed(CASE, gen, 2)) == Fraction(3, 8)
    assert tv(vllm.law(CASE, {"k": 3, "min_p": 0}, 4), vllm.target(CASE, {"k": 3, "min_p": 0}, 4)) == 0
    # k = 0: every token is a bonus, so the law is min-p's target exactly
    assert tv(vllm.law(CASE, {"k": 0, "min_p": 0.5}, 3), vllm.claimed(CASE, {"k": 0, "min_p": 0.5}, 3)) == 0


@pytest.mark.parametrize("draft_probs", [1, 0])
def test_fly_with_no_deferral_is_token_level_and_lossy_with_vllms_defaults(draft_probs):
    """FLy's law: with an entropy threshold above every row's top-3 entropy (<= log 3) no rejection is deferred and
    the law is token-level verification's (TV 0); at vLLM's defaults (0.3, top 3, W = k - 1) it is lossy (over 2
    tokens: 0.213 / 0.145 at k = 2 / 3 with draft probabilities, about 0.03 one-hot)."""
    for k in (2, 3):
        never = {"k": k, "method": "fly", "fly_threshold": 1.2, "draft_probs": draft_probs}
        assert vllm.law(CASE, never, 3) == vllm.law(CASE, {"k": k, "draft_probs": draft_probs}, 3)
        assert tv(vllm.law(CASE, {**never, "fly_threshold": 0.3}, 2), vllm.target(CASE, never, 2)) > 0


@pytest.mark.parametrize(
    "gen, message",
    [({"min_p": 2}, "min_p=2 must lie"), ({"min_p": 0.5, "top_k": 2}, "min_p with top_k"),
     ({"method": "fly", "k": 2, "fly_window": 2}, "fly_window=2 with k=2"), ({"fly_window": 1}, "without method=fly"),
     ({"method": "fly", "synthetic": "1"}, "synthetic"),
     ({"logit_bias": "3"}, "token:factor"), ({"repetition": 0}, "repetition=0"), ({"frequency": 2}, r"\(0, 1\]"),
     ({"pad": 4, "k": 3}, "pad=4"), ({"q_row": "inf"}, "q_row='inf'"), ({"zero_token": 1, "draft_probs": 0}, "need"),
     ({"repetition": 2, "temperature": 0}, "temperature 0"), ({"pad": 1, "method": "block"}, "method=block"),
     ({"pad": 1, "repetition": 2}, "pad with penalties")],
)  # fmt: skip
def test_bad_processing_and_verifier_settings_are_refused(gen, message):
    """min-p, fly, processor and verifier-input settings vLLM's driver cannot give, refused by `check` or the law."""
    with pytest.raises(CaseError, match=message):
        vllm.check(gen)
        vllm.law(CASE, gen, 2)


@served
@pytest.mark.lossless
@pytest.mark.parametrize("min_p, verdict", [(0.5, "REJECT"), (0, "pass")])
def test_quick_vllm_own_min_p_processor(min_p, verdict, rheo_seed):
    """vLLM 0.33.0's MinPLogitsProcessor through its RejectionSampler, at δ = 0.3 (α = 1e-3, power 0.99): min-p = 0.5
    (exact TV 3/8 at 2 tokens) is rejected, min-p = 0 passes; the version is the installed one."""
    r = gate_decoder(NAME, {"k": 3, "min_p": min_p}, rheo_seed, tv=0.3, tokens=2, case=CASES / "hf.json")
    assert r["verdict"] == verdict, r["summary"]
    assert r["package"].startswith("vllm 0.33"), r["package"]


@served034
@pytest.mark.lossless
@pytest.mark.parametrize(
    "gen, verdict",
    [({"k": 2}, "pass"), ({"k": 2, "method": "block", "draft_probs": 0}, "pass"),
     ({"k": 2, "synthetic": "1,1"}, "REJECT")],
)  # fmt: skip
def test_quick_vllm_034_v2_sampler(gen, verdict, rheo_seed, monkeypatch):
    """vLLM 0.34.0's V2 rejection_sample (its only sampler), driven by --python in its environment, δ = 0.3."""
    from rheo.decoders.served import PYTHON_VAR, REPO

    monkeypatch.setenv(PYTHON_VAR, str(REPO / ".venv-vllm034" / "bin" / "python"))
    r = gate_decoder(NAME, gen, rheo_seed, tv=0.3, tokens=2, case=CASES / "hf.json")
    assert r["verdict"] == verdict and r["package"] == "vllm 0.34.0", r


@served034
def test_vllm_034_moved_pieces_exit_2_with_one_line(capsys, monkeypatch):
    """What 0.34.0 removed (the V1 RejectionSampler's temperature / top-k / top-p, MinPLogitsProcessor, its logit
    bias without runner=v2): exit 2, one line naming the piece, the installed version and the supported range; no
    traceback."""
    from rheo.cli.main import main
    from rheo.decoders.served import PYTHON_VAR, REPO

    python = str(REPO / ".venv-vllm034" / "bin" / "python")
    monkeypatch.setenv(PYTHON_VAR, python)  # (restored after: the CLI sets it for its workers)
    for gen in (["--gen", "temperature=0.5"], ["--gen", "min_p=0.5"], ["--gen", "logit_bias=3:4"]):
        code = main(["gate", str(CASES / "hf.json"), "--decoder", "vllm", "--python", python, "--tokens", "2", *gen])
        err = [ln for ln in capsys.readouterr().err.splitlines() if ln.startswith("rheo")]
        assert code == 2 and len(err) == 1, err
        assert "vllm 0.34.0: " in err[0] and "is not in this release" in err[0] and ">=0.33.0,<0.35" in err[0], err
        assert "Traceback" not in err[0]


# --- vLLM's logit bias and penalties, and the verifier inputs engines produce (0.33's V1 RejectionSampler) -------


def test_logit_bias_reaches_only_the_bonus_token_exactly():
    """0.33 applies LogitBiasLogitsProcessor only in the bonus's Sampler: at k = 3 the first 3 tokens follow the raw
    p, the claimed law (the bias at every position) is at TV > 0.2 over 2 tokens; at k = 0 every token is a bonus."""
    from rheo_ref.exact import target_law

    gen = {"k": 3, "logit_bias": "3:4"}
    assert vllm.law(CASE, gen, 3) == target_law(CASE, 3)
    assert tv(vllm.law(CASE, gen, 2), vllm.claimed(CASE, gen, 2)) > Fraction(1, 5)
    assert (
        tv(vllm.law(CASE, {"k": 0, "logit_bias": "3:4"}, 3), vllm.claimed(CASE, {"k": 0, "logit_bias": "3:4"}, 3)) == 0
    )


@pytest.mark.parametrize("draft_probs", [1, 0])
@pytest.mark.parametrize("k", [0, 1, 3])
def test_penalties_on_the_output_and_drafts_are_lossless_exactly(k, draft_probs):
    """Penalties at the verified positions count the output and the drafts before each (`_combine_outputs_with_spec_
    tokens`), at the bonus all the drafts: the law is the penalised target's, which differs from the raw p's."""
    from rheo_ref.exact import target_law

    gen = {"k": k, "draft_probs": draft_probs, "repetition": 2, "frequency": "1/2", "presence": "1/2"}
    claimed = vllm.claimed(CASE, gen, 3)
    assert tv(vllm.law(CASE, gen, 3), claimed) == 0
    assert tv(claimed, target_law(CASE, 3)) > Fraction(1, 10)


@pytest.mark.parametrize("draft_probs", [1, 0])
def test_a_padded_draft_id_ends_the_round_with_a_draw_from_p(draft_probs):
    """A padded id (-1) is rejected (rejection_sampler.py line 931) and the recovered token is drawn from p: lossless
    at every padding, and a padded slot makes a round shorter on average."""
    q, p, ctx = CASE.q_samp_model, CASE.target, tuple(CASE.context)
    for pad in (1, 2, 3):
        gen = {"k": 3, "pad": pad, "draft_probs": draft_probs}
        assert tv(vllm.law(CASE, gen, 4), vllm.target(CASE, gen, 4)) == 0
    mean = [
        sum(len(o) * w for o, w in VLLMLaw(p, q, Setting(k=3), draft_probs=bool(draft_probs), pad=pad)
            .round_law(ctx, 4).items())
        for pad in (0, 1)
    ]  # fmt: skip
    assert mean[1] < mean[0]


def test_a_draft_stated_at_q_zero_and_a_zero_q_row_stay_lossless_and_a_nan_row_emits_token_0():
    """`draft_prob > 0 and ...` (line 951) rejects a draft whose stated q(x) is 0 and the residual max(p - q, 0) then
    holds all of p(x): lossless for every such token, and for an all-zero row (every draft rejected, the residual p).
    An all-NaN row: rejected, the residual's maximum drops NaN to 0 (line 1128), the first id wins (line 1144)."""
    for t in range(CASE.target.vocab_size):
        gen = {"k": 3, "zero_token": t}
        assert tv(vllm.law(CASE, gen, 4), vllm.target(CASE, gen, 4)) == 0
    assert tv(vllm.law(CASE, {"k": 3, "q_row": "zero"}, 4), vllm.target(CASE, {"k": 3}, 4)) == 0
    assert vllm.law(CASE, {"k": 3, "q_row": "nan"}, 3) == {(0, 0, 0): 1}
    # the same zero stated but the row renormalised is lossy: the rule above is what keeps it lossless
    q, p = CASE.q_samp_model, CASE.target
    law = VLLMLaw(p, q, Setting(k=1), zero_token=1)
    row = law._stated(q.row(list(CASE.context)))
    renorm = VLLMLaw(p, q, Setting(k=1))
    renorm._stated = lambda r: tuple(x / sum(row) for x in row)  # type: ignore[method-assign]
    assert tv(renorm.token_law(CASE.context, 1), vllm.target(CASE, {"k": 1}, 1)) > 0


@served
@pytest.mark.lossless
@pytest.mark.parametrize(
    "gen, verdict",
    [({"k": 3, "logit_bias": "3:4"}, "REJECT"), ({"k": 3, "repetition": 2, "frequency": "1/2", "presence": "1/2"}, "pass"),
     ({"k": 3, "pad": 1}, "pass"), ({"k": 3, "q_row": "nan"}, "REJECT")],
)  # fmt: skip
def test_quick_vllm_processors_and_verifier_inputs(gen, verdict, rheo_seed):
    """vLLM 0.33.0's LogitBiasLogitsProcessor (exact TV 0.368 at 2 tokens: REJECT), its penalties (pass), a padded draft
    id (pass) and an all-NaN q row (exact TV 177/184: REJECT), at δ = 0.3; the samples fit vLLM's own law."""
    r = gate_decoder(NAME, gen, rheo_seed, tv=0.3, tokens=2, case=CASES / "hf.json")
    assert r["verdict"] == verdict, r["summary"]
    assert r.get("own_law_p") is None or r["own_law_p"] >= 1e-3, r


# --- adaptive verification, bad words, and the V2 runner's own min-p (vLLM 0.34's V2 runner; 0.33 where present) ----


@pytest.mark.parametrize("draft_probs", [1, 0])
@pytest.mark.parametrize("budget", [1, 2, 3, 4, 5])
def test_adaptive_verification_with_a_state_confidence_is_lossless_exactly(budget, draft_probs):
    """`assign_draft_token_budget` admits a prefix of each request's drafts by survival (the running product of the
    drafter's confidences): with a confidence that is a function of the state before the draft (DSpark's head), the
    admitted count is a stopping time of the drafts and the law is the target's, at every budget."""
    gen = {**vllm.ADAPTIVE_ROW, "adaptive_budget": budget, "draft_probs": draft_probs}
    assert tv(vllm.law(CASE, gen, 4), vllm.target(CASE, gen, 4)) == 0


def test_the_adaptive_rows_admitted_count_varies_with_the_drafts_and_never_ties():
    """The row's companion makes the admitted count depend on the drafts (1 or 2 in the first round, so the test
    exercises the trimming), with no tie at the threshold (0.33 breaks ties by torch.topk, 0.34 by request order)."""
    import itertools

    from rheo.decoders.vllm.law import AdaptiveLaw

    law = AdaptiveLaw(CASE.target, CASE.q_samp_model, Setting(k=3), **vllm._adaptive(vllm.ADAPTIVE_ROW, 3))
    ctx = tuple(CASE.context)
    counts = {law.admitted(ctx, xs) for xs in itertools.product(range(4), repeat=3)}
    assert counts == {1, 2}
    for xs in itertools.product(range(4), repeat=3):
        s, ours = Fraction(1), []
        for i in range(3):
            s *= max(CASE.q_samp_model.row(list(ctx + xs[:i])))
            ours.append(s)
        assert not set(ours) & set(law.companion)


def test_adaptive_verification_with_a_confidence_that_sees_its_draft_is_lossy_exactly():
    """The counterfactual: c_i = q(x_i) makes the admitted count depend on the first unverified draft, so the verified
    drafts are drawn from q conditioned on what follows them: lossy (TV 1579/11592 over 2 tokens at budget 2)."""
    gen = {**vllm.ADAPTIVE_ROW, "adaptive_budget": 2, "adaptive_confidence": "draft"}
    assert tv(vllm.law(CASE, gen, 2), vllm.target(CASE, gen, 2)) == Fraction(1579, 11592)


@pytest.mark.parametrize("runner", [{}, {"runner": "v2"}])
@pytest.mark.parametrize("draft_probs", [1, 0])
@pytest.mark.parametrize("k", [0, 1, 3])
@pytest.mark.parametrize("words", ["2", "1-3", "0-1,2"])
def test_bad_words_on_the_output_and_drafts_are_lossless_exactly(words, k, draft_probs, runner):
    """vLLM's bad words at the verified positions read the output and the drafts before each (0.33
    apply_bad_words_with_drafts, 0.34 _bad_words_kernel), at the bonus the output and all the drafts: the law is the
    target with the words banned on the output so far, which differs from the raw p's."""
    from rheo_ref.exact import target_law

    gen = {"k": k, "draft_probs": draft_probs, "bad_words": words, **runner}
    claimed = vllm.claimed(CASE, gen, 3)
    assert tv(vllm.law(CASE, gen, 3), claimed) == 0
    assert tv(claimed, target_law(CASE, 3)) > Fraction(1, 50)


def test_the_v2_runners_min_p_applies_at_every_position_exactly():
    """0.34's Sampler.apply_sampling_params runs apply_min_p on every logits row, verified and bonus: the law is min-p's
    target (TV 0), where 0.33's V1 RejectionSampler, min-p at the bonus only, is at TV 3/8."""
    gen = {"k": 3, "min_p": 0.5}
    assert tv(vllm.law(CASE, {**gen, "runner": "v2"}, 2), vllm.claimed(CASE, gen, 2)) == 0
    assert tv(vllm.law(CASE, gen, 2), vllm.claimed(CASE, gen, 2)) == Fraction(3, 8)


@pytest.mark.parametrize("draft_probs", [1, 0])
@pytest.mark.parametrize("k", [0, 1, 3])
@pytest.mark.parametrize(
    "extra",
    [{"logit_bias": "3:4"}, {"logit_bias": "0:1/3,2:5"}, {"repetition": 2, "frequency": "1/2", "presence": "1/2"}],
)
def test_the_v2_runners_logit_bias_and_penalties_apply_at_every_position_exactly(extra, k, draft_probs):
    """0.34's Sampler.apply_sampling_params runs its logit bias and penalties (LogitBiasState, PenaltiesState) on every
    logits row, verified and bonus, the penalties on the output and the drafts before each position: the law is the
    processed target on the output so far (TV 0), which is far from the raw p."""
    from rheo_ref.exact import target_law

    gen = {"k": k, "draft_probs": draft_probs, **extra}
    claimed = vllm.claimed(CASE, gen, 2)
    assert tv(vllm.law(CASE, {**gen, "runner": "v2"}, 2), claimed) == 0
    assert tv(claimed, target_law(CASE, 2)) > Fraction(1, 20)


def test_the_v2_runners_logit_bias_row_is_lossless_where_the_v1_rows_is_not():
    """The logit-bias-v2 row's exact law is its claimed law; the same setting on 0.33's V1 RejectionSampler (bias at
    the bonus only) is at TV 9528271/25899840 from it: the row would see the V1 defect if the V2 runner had it."""
    row = {r.setting: dict(r.gen) for r in vllm.DECODER.table.rows}
    v2, v1 = row["logit-bias-v2"], row["logit-bias"]
    assert {x: y for x, y in v2.items() if x != "runner"} == v1
    assert tv(vllm.law(CASE, v2, 2), vllm.claimed(CASE, v2, 2)) == 0
    assert tv(vllm.law(CASE, v1, 2), vllm.claimed(CASE, v1, 2)) == Fraction(9528271, 25899840)


@pytest.mark.parametrize(
    "gen, message",
    [({"method": "adaptive", "k": 3, "adaptive_budget": 6}, "budget=6"), ({"adaptive_budget": 2}, "without method"),
     ({"method": "adaptive", "k": 2, "adaptive_companion": "1/2"}, "k=2 values"),
     ({"method": "adaptive", "k": 2, "adaptive_confidence": "peek"}, "state, draft"),
     ({"bad_words": "a"}, "token ids"), ({"runner": "v1"}, "runner='v1'"),
     ({"runner": "v2", "pad": 1}, "pad with runner=v2"), ({"runner": "v2", "method": "block"}, "V2 already"),
     ({"bad_words": "2", "temperature": 0}, "temperature 0")],
)  # fmt: skip
def test_bad_adaptive_bad_words_and_runner_settings_are_refused(gen, message):
    with pytest.raises(CaseError, match=message):
        vllm.check(gen)
        vllm.law(CASE, gen, 2)


NEW_ROWS = ("adaptive", "bad-words-v2", "min-p-v2", "logit-bias-v2", "penalties-v2")


@pytest.mark.slow
@served034
@pytest.mark.lossless
@pytest.mark.parametrize("setting", NEW_ROWS)
def test_slow_vllm_034_v2_rows(setting, request, monkeypatch):
    """The V2 runner's adaptive verification, bad words, min-p, logit bias and penalties rows on vLLM 0.34.0
    (--python its environment), two seeds; the records carry the installed version."""
    from rheo.decoders.served import PYTHON_VAR, REPO

    monkeypatch.setenv(PYTHON_VAR, str(REPO / ".venv-vllm034" / "bin" / "python"))
    r = verdict_row(NAME, setting, request.node.nodeid)
    assert (r["package"], r["version"]) == ("vllm", "0.34.0"), r


@pytest.mark.slow
@served034
@pytest.mark.lossless
def test_slow_the_documented_v2_processor_command_runs_end_to_end(tmp_path, monkeypatch):
    """The command docs/THIRD_PARTY.md quotes for 0.34.0's own logit bias and penalties, run through the CLI as a user
    would: `rheo gate --decoder vllm --python .venv-vllm034/bin/python --rows logit-bias-v2,penalties-v2 --seeds 1,2`;
    both rows pass on both seeds (exact TV 0), recorded as vllm 0.34.0."""
    import json

    from rheo.cli.main import main
    from rheo.decoders.served import REPO

    monkeypatch.chdir(REPO)
    out = tmp_path / "rows.json"
    argv = ["gate", "--decoder", "vllm", "--python", ".venv-vllm034/bin/python", "--rows", "logit-bias-v2,penalties-v2",
            "--seeds", "1,2", "--json", str(out)]  # fmt: skip
    assert main(argv) == 0
    records = json.loads(out.read_text())
    assert [r["setting"] for r in records] == ["logit-bias-v2", "penalties-v2"]
    for r in records:
        assert (r["version"], r["exact_tv"], r["verdicts"]) == ("0.34.0", "0", ["pass", "pass"]), r
