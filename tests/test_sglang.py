"""SGLang 0.5.23's chain_speculative_sampling_triton under the gate (docs/THIRD_PARTY.md, "SGLang").

Exact-law tests run everywhere; rows marked `served` run SGLang's own kernel in .venv-sglang (Triton's
interpreter) and skip, with the make command, where that environment is not built. The whole verdict
table is `slow` (about 6 minutes on 2 cores at δ = 0.2: 50 ms per kernel program in the interpreter).
"""

from __future__ import annotations

from fractions import Fraction as F

import pytest
from helpers import SERVED_CASE, decode_fails, gate_decoder, needs_env, row_gen, verdict_row

from rheo.decoders import decoders
from rheo.decoders.sglang import exact_law, target_law
from rheo.decoders.sglang.law import ChainLaw, Processing, plain_target_law, spec_target_law, top_p_keep
from rheo.lossless.stats import seed_for
from rheo_ref.errors import CaseError
from rheo_ref.exact import tv
from rheo_ref.models import load_case

CASE = load_case(str(SERVED_CASE))
N_TOKENS = 3
NAME = "sglang"
served = needs_env(NAME)


@pytest.mark.parametrize("block", [False, True], ids=["token", "block"])
@pytest.mark.parametrize("temperature", [F(1), F(1, 2)], ids=["T1", "T1/2"])
def test_chain_law_is_the_target_law(block, temperature):
    """Token-level and block verification, as written, are lossless in exact arithmetic at every
    position of 3 tokens (rounds of 3 drafts: the bonus and a second round are reached)."""
    proc = Processing(temperature=temperature)
    law = ChainLaw(CASE.target, CASE.draft, proc, num_steps=3, block=block).token_law(CASE.context, N_TOKENS)
    assert sum(law.values()) == 1
    assert tv(law, spec_target_law(CASE.target, proc, CASE.context, N_TOKENS)) == 0


def test_block_and_token_rounds_differ():
    """The two verifications have the same token law but different round laws (block accepts more)."""
    proc = Processing()
    token = ChainLaw(CASE.target, CASE.draft, proc, num_steps=3).round_law(tuple(CASE.context))
    block = ChainLaw(CASE.target, CASE.draft, proc, num_steps=3, block=True).round_law(tuple(CASE.context))
    assert tv(token, block) > F(1, 100)

    def mean_len(law):
        return sum(len(k) * v for k, v in law.items())

    assert mean_len(block) > mean_len(token)


def test_stated_draft_probs_unlike_the_proposal_are_lossy():
    """The negative control's law: candidates from q at T = 1/4, the kernel told q at T = 1."""
    gen = {"num_steps": 3, "draft_temperature": 0.25}
    assert tv(exact_law(CASE, gen, N_TOKENS), target_law(CASE, gen, N_TOKENS)) > F(3, 10)


def test_thresholds_do_not_enter_the_law():
    plain = exact_law(CASE, {"num_steps": 3}, N_TOKENS)
    assert exact_law(CASE, {"num_steps": 3, "threshold_single": 0.5, "threshold_acc": 0.5}, N_TOKENS) == plain


def test_top_p_keeps_the_boundary_token():
    """renorm_triton's rule: keep a token iff its probability >= the pivot found with cumsum >= 1 − p.
    Here the ascending cumulative sum reaches exactly 1 − p = 1/2 at 3/10, so 3/10 is kept; the strict
    rule of transformers and vLLM (cumsum > 1 − p) keeps only 1/2."""
    row = (F(1, 10), F(1, 10), F(3, 10), F(1, 2))
    assert top_p_keep(row, F(1, 2)) == [False, False, True, True]
    assert top_p_keep(row, F(49, 100)) == [False, False, False, True]


def test_top_k_with_top_p_differs_from_the_plain_sampler():
    """Each alone, the speculative path's target is the plain sampler's; together it applies top-p to the
    top-k-renormalised row (eagle_utils.py 728-743), the plain sampler the joint sets (sampler.py 435-439)."""
    for proc in (Processing(top_k=2), Processing(top_p=F(7, 10))):
        spec = spec_target_law(CASE.target, proc, CASE.context, N_TOKENS)
        assert tv(spec, plain_target_law(CASE.target, proc, CASE.context, N_TOKENS)) == 0
    both = Processing(top_k=3, top_p=F(7, 10))
    d = tv(
        spec_target_law(CASE.target, both, CASE.context, N_TOKENS),
        plain_target_law(CASE.target, both, CASE.context, N_TOKENS),
    )
    assert d == F(149, 864)


@served
def test_token_level_kernel_passes(request):
    r = gate_decoder(NAME, {"num_steps": 3}, seed_for(request.node.nodeid), tv=0.3)
    assert r["exact_tv"] == "0"
    assert r["verdict"] == "pass", r


@served
def test_negative_control_is_rejected(request):
    """α = 1e-3, δ = 0.2 (power 0.99); the control's exact TV is 0.41. (At δ = 0.3, N = 96 pools
    the 64 outcomes into 2 cells, whose law is far closer than 0.41: the control passed on two seeds.)"""
    r = gate_decoder(
        NAME, row_gen(NAME, "control: draft probs at T=1, drawn at T=1/4"), seed_for(request.node.nodeid), tv=0.2
    )
    assert r["exact_tv_float"] > 0.3
    assert r["verdict"] == "REJECT", r


@served
def test_renorm_refuses_cpu_tensors():
    assert "renorm kernels require a CUDA/HIP tensor" in decode_fails(NAME, {"num_steps": 3, "top_k": 2})


@pytest.mark.slow
@served
@pytest.mark.parametrize("setting", [r.setting for r in decoders()[NAME].table.rows])
def test_verdict_table(setting, request):
    """Each row on two seeds, δ = 0.2, α = 1e-3 for the whole table (helpers.verdict_row): a row whose exact TV is 0 passes, a row whose exact
    TV exceeds δ is rejected, a row that cannot run on CPU fails with its reason."""
    verdict_row(NAME, setting, request.node.nodeid, error="CUDA/HIP")


# --- SGLang's own processors: a request's min-p, logit bias and penalties ----------------------------------------


def _own(gen):
    from rheo.decoders.sglang.law import OwnLaw, own_sampling, own_target_law

    s = own_sampling(CASE.target.vocab_size, gen)
    spec = OwnLaw(CASE.target, CASE.draft, s, num_steps=3)
    return spec, lambda n: own_target_law(CASE.target, s, CASE.context, n)


OWN_ROWS = [r for r in decoders()[NAME].table.rows if r.path and "penaltylib" in r.path]


def test_the_own_processor_rows_are_the_tables():
    assert [r.setting for r in OWN_ROWS] == [
        "min-p 0.35", "logit bias 3:4 0:1/2", "frequency 1/7", "presence 1/7", "repetition 2 T=1/2"
    ]  # fmt: skip


@pytest.mark.parametrize("setting", [r.setting for r in OWN_ROWS])
def test_own_processors_exact_tv(setting):
    """Exact TV of each row at 3 tokens: the logit bias (added at every position) is lossless, min-p (never read by the
    verify) and the penalties (counted once a round) are lossy by more than the table's δ = 0.2; at 1 token the
    penalties are still exact (the first round's rows count the output's first token, as the plain sampler does)."""
    gen = dict(decoders()[NAME].table.row(setting).gen)
    spec, target = _own(gen)
    d3 = tv(spec.token_law(CASE.context, N_TOKENS), target(N_TOKENS))
    d1 = tv(spec.token_law(CASE.context, 1), target(1))
    if "logit_bias" in gen:
        assert d3 == 0 and d1 == 0
    elif "min_p" in gen:
        assert d1 == F(1, 5) and d3 > F(2, 5)  # at 1 token: the two tokens of p = 1/10 below 0.35 · 1/2, cut
    else:
        assert d1 == 0 and d3 > F(7, 20)


def test_penalties_counted_once_a_round_two_tokens_by_hand():
    """The law of 2 tokens with frequency ρ = 1/7, written independently of `OwnLaw`'s state: the first round's rows are
    penalised for the context's last token c; when that round emits one token x1 only, the second round's rows are
    penalised for {c, x1}; when it emits two or more, the second token came from the first round's rows."""
    from rheo.decoders.laws import processed_row
    from rheo.decoders.sglang.law import own_sampling
    from rheo_ref.models import TableModel

    s = own_sampling(4, {"frequency": "1/7"})
    c = CASE.context[-1]

    def penalised(counted):
        rows = {k: processed_row(r, s, counted, counted, "t") for k, r in CASE.target.probs.items()}
        return TableModel(4, CASE.target.context_length, rows, "p")

    first = ChainLaw(penalised((c,)), CASE.draft, Processing(), num_steps=3).round_law(tuple(CASE.context))
    want: dict = {}
    for out, w in first.items():
        if len(out) >= 2:
            want[out[:2]] = want.get(out[:2], 0) + w
            continue
        nxt = ChainLaw(penalised(tuple(sorted((c, out[0])))), CASE.draft, Processing(), num_steps=3)
        for o2, w2 in nxt.round_law(tuple(CASE.context) + out, 1).items():
            want[out + o2] = want.get(out + o2, 0) + w * w2
    spec, _ = _own({"frequency": "1/7"})
    assert spec.token_law(CASE.context, 2) == want


@pytest.mark.parametrize(
    "gen, message",
    [
        ({"frequency": "1/8"}, "frequency >= 0.1354"),
        ({"repetition": 3}, "allowed: 1, 2"),
        ({"repetition": 2, "presence": "1/2"}, "iteration order of a set"),
        ({"min_p": 0.35, "top_k": 2}, "token-level verification and temperature only"),
        ({"logit_bias": "3=4"}, "token:factor pairs"),
        ({"logit_bias": "3:0"}, "factors > 0"),
        ({"min_p": 1.5}, "min_p"),
    ],
)
def test_bad_own_processor_settings_are_refused(gen, message):
    from rheo.decoders.sglang import check

    with pytest.raises(CaseError, match=message):
        check({"num_steps": 3, **gen})


@served
@pytest.mark.lossless
@pytest.mark.parametrize("setting, verdict", [("frequency 1/7", "REJECT"), ("logit bias 3:4 0:1/2", "pass")])
def test_quick_sglang_own_processors(setting, verdict, rheo_seed):
    """SGLang's penalizer classes and logit bias, at δ = 0.2, α = 1e-3 (power 0.99): the frequency penalty counted once a
    round (exact TV 0.41) is rejected and its samples fit SGLang's own law; the logit bias (exact TV 0) passes."""
    r = gate_decoder(NAME, row_gen(NAME, setting), rheo_seed, tv=0.2)
    assert r["verdict"] == verdict, r["summary"]
    if verdict == "pass":
        assert r["exact_tv"] == "0", r  # (the own law is the target law: no second test)
    else:
        assert r["own_law_p"] >= 1e-3, r


@pytest.mark.slow
@served
def test_slow_the_documented_own_processor_command_runs_end_to_end(tmp_path, monkeypatch):
    """The command docs/THIRD_PARTY.md quotes for SGLang's own processors, through the CLI as a user runs it:
    `rheo gate --decoder sglang --rows 'min-p 0.35,logit bias 3:4 0:1/2,frequency 1/7,presence 1/7,repetition 2
    T=1/2' --seeds 1,2` (about 3 minutes): the logit bias passes on both seeds, the other four are rejected on both,
    recorded as sglang 0.5.23, and the exit status says every verdict is the one the exact TV promises."""
    import json

    from rheo.cli.main import main
    from rheo.decoders.served import REPO

    monkeypatch.chdir(REPO)
    out = tmp_path / "rows.json"
    rows = "min-p 0.35,logit bias 3:4 0:1/2,frequency 1/7,presence 1/7,repetition 2 T=1/2"
    assert main(["gate", "--decoder", NAME, "--rows", rows, "--seeds", "1,2", "--json", str(out)]) == 0
    records = {r["setting"]: r for r in json.loads(out.read_text())}
    assert list(records) == rows.split(",")
    for setting, r in records.items():
        want = ["pass", "pass"] if setting.startswith("logit bias") else ["REJECT", "REJECT"]
        assert (r["version"], r["verdicts"]) == ("0.5.23", want), r


# --- the stated q rows of a degenerate drafter -------------------------------------------------------------------

STATED_ROWS = ["q-zero", "q-row-zero", "q-row-nan", "block q-zero"]


@pytest.mark.parametrize("setting", STATED_ROWS)
def test_degenerate_stated_q_rows_are_lossless_exactly(setting):
    """A stated q(x) = 0 for a token the drafter draws, an all-zero and an all-NaN q row: the kernel rejects a draft
    whose stated q is not in (0, 1] and reads such entries as 0 in the residual, so the law is the target's."""
    gen = row_gen(NAME, setting)
    assert tv(exact_law(CASE, gen, N_TOKENS), target_law(CASE, gen, N_TOKENS)) == 0


@pytest.mark.parametrize("q_row", ["zero", "nan"])
def test_a_rejected_row_emits_one_token_from_p(q_row):
    """Every draft of a zero or NaN row is rejected: a round is one token, drawn from p."""
    law = ChainLaw(CASE.target, CASE.draft, Processing(), num_steps=3, q_row=q_row).round_law(tuple(CASE.context))
    assert law == {(v,): x for v, x in enumerate(CASE.target.row(list(CASE.context))) if x}


def test_an_underflowed_q_changes_the_rounds_not_the_law():
    """q(1) stated 0 (token 1 is drawn w.p. 2/5 after 0): the round law changes (fewer tokens a round), the token law
    does not."""
    plain = ChainLaw(CASE.target, CASE.draft, Processing(), num_steps=3).round_law(tuple(CASE.context))
    zero = ChainLaw(CASE.target, CASE.draft, Processing(), num_steps=3, zero_token=1).round_law(tuple(CASE.context))
    assert tv(plain, zero) > F(1, 10)


@pytest.mark.parametrize(
    "gen, message",
    [
        ({"q_row": "inf"}, "allowed: zero, nan"),
        ({"zero_token": -1}, "must be a token id"),
        ({"q_row": "nan", "block_verification": True}, "token-level verification"),
        ({"q_row": "zero", "zero_token": 1}, "set one"),
        ({"q_row": "zero", "frequency": "1/2"}, "without draft_temperature and SGLang's own processors"),
    ],
)
def test_bad_stated_rows_are_refused(gen, message):
    from rheo.decoders.sglang import check

    with pytest.raises(CaseError, match=message):
        check({"num_steps": 3, **gen})


@served
@pytest.mark.lossless
def test_quick_sglang_all_nan_q_rows_pass(rheo_seed):
    """All-NaN stated q rows at δ = 0.2, α = 1e-3 (power 0.99): SGLang's kernel guards them (exact TV 0: it passes),
    where vLLM 0.33.0's sampler turns them into token 0 (exact TV 177/184 on its case)."""
    r = gate_decoder(NAME, row_gen(NAME, "q-row-nan"), rheo_seed, tv=0.2)
    assert r["exact_tv"] == "0" and r["verdict"] == "pass", r["summary"]


@pytest.mark.slow
@served
def test_slow_the_documented_stated_row_command_runs_end_to_end(tmp_path, monkeypatch):
    """The command docs/THIRD_PARTY.md quotes for the stated q rows, through the CLI: `rheo gate --decoder sglang --rows
    'q-zero,q-row-zero,q-row-nan,block q-zero' --seeds 1,2` (about 3 minutes): every row passes on both seeds."""
    import json

    from rheo.cli.main import main
    from rheo.decoders.served import REPO

    monkeypatch.chdir(REPO)
    out = tmp_path / "rows.json"
    rows = ",".join(STATED_ROWS)
    assert main(["gate", "--decoder", NAME, "--rows", rows, "--seeds", "1,2", "--json", str(out)]) == 0
    records = json.loads(out.read_text())
    assert [r["setting"] for r in records] == STATED_ROWS
    assert all((r["version"], r["exact_tv"], r["verdicts"]) == ("0.5.23", "0", ["pass", "pass"]) for r in records)


@pytest.mark.slow
@served
@pytest.mark.parametrize(
    "dask", [[], ["--scheduler", "local", "--workers", "2", "--chunk", "383"]], ids=["here", "dask"]
)
def test_slow_the_quoted_dask_commands_run_end_to_end(dask, capsys, monkeypatch):
    """The timing the closing note quotes, through the CLI: `rheo gate tests/cases/served.json --decoder sglang --gen
    num_steps=3 --tv 0.2 --tokens 3 --seed 1`, in this process and with `--scheduler local --workers 2 --chunk 383`
    (N = 766 in two chunks, one per worker): a pass, exact TV 0, the Dask record with its scheduler and chunk."""
    import json

    from rheo.cli.main import main
    from rheo.decoders.served import REPO

    monkeypatch.chdir(REPO)
    argv = ["gate", "tests/cases/served.json", "--decoder", NAME, "--gen", "num_steps=3", "--tv", "0.2", "--tokens", "3",
            "--seed", "1", *dask]  # fmt: skip
    code = main(argv)
    out = capsys.readouterr()
    assert code == 0, out.err[-2000:]
    r = json.loads(out.out.strip().splitlines()[-1])
    assert (r["verdict"], r["N"], r["exact_tv"]) == ("pass", 766, "0"), r
    assert (r.get("scheduler"), r.get("chunk")) == (("local", 383) if dask else (None, None)), r
