"""flashspec 0.3.1's SpeculativeEngine under the gate (docs/THIRD_PARTY.md, "flashspec").

Exact-law tests run everywhere; rows marked `served` run the engine on TableLMs in .venv-flashspec
(skipped, with the make command, where it is not built); the verdict table is `slow`.
"""

from __future__ import annotations

from fractions import Fraction as F

import pytest
from helpers import SERVED_CASE, gate_decoder, needs_env, row_gen, verdict_row

from rheo.decoders import decoders
from rheo.decoders.flashspec import exact_law, target_law
from rheo.decoders.flashspec.law import FlashSpecLaw, Setting, claimed_target_law
from rheo.lossless.stats import seed_for
from rheo_ref.exact import tv
from rheo_ref.models import TableModel, load_case

CASE = load_case(str(SERVED_CASE))
N_TOKENS = 3
NAME = "flashspec"
CONTROL = "control: typical top_p=0.9"
served = needs_env(NAME)


@pytest.mark.parametrize("temperature", [F(1), F(1, 2)])
@pytest.mark.parametrize("gamma", [1, 3])
def test_rejection_law_is_the_target_law(gamma, temperature):
    s = Setting(gamma=gamma, temperature=temperature)
    law = FlashSpecLaw(CASE.target, CASE.draft, s).token_law(CASE.context, N_TOKENS)
    assert sum(law.values()) == 1
    assert tv(law, claimed_target_law(CASE.target, s, CASE.context, N_TOKENS)) == 0


def test_residual_floor_makes_a_tiny_error():
    """`_residual_probs` draws from p, not (p − q)+, when that mass is at most 1e-6: with p and q 1e-7 apart
    the law is off by a TV the gate cannot see, but the exact law shows it."""
    eps = F(1, 10**7)
    p = TableModel.from_rows({(): (F(1, 2) + eps, F(1, 2) - eps)}, context_length=0)
    q = TableModel.from_rows({(): (F(1, 2), F(1, 2))}, context_length=0)
    s = Setting(gamma=1)
    d = tv(FlashSpecLaw(p, q, s).token_law((), 1), claimed_target_law(p, s, (), 1))
    assert 0 < d < F(1, 10**6)


def test_ignored_top_p_and_top_k_are_lossy():
    """top_p reaches only the typical variant; top_k is no field of SamplingConfig: the engine samples p."""
    for gen, want in (
        ({"gamma": 3, "top_p": 0.9, "ties": "low"}, F(271, 1000)),
        ({"gamma": 3, "top_k": 2, "ties": "all"}, None),
    ):
        d = tv(exact_law(CASE, gen, N_TOKENS), target_law(CASE, gen, N_TOKENS))
        assert d > F(1, 10) and (want is None or d == want), d


def test_typical_is_lossy():
    gen = row_gen(NAME, CONTROL)
    assert tv(exact_law(CASE, gen, N_TOKENS), target_law(CASE, gen, N_TOKENS)) > F(3, 10)


@served
def test_rejection_engine_passes(request):
    """α = 1e-3, δ = 0.3 (power 0.99): the batch-1 fast path (rejection_step)."""
    r = gate_decoder(NAME, {"gamma": 3}, seed_for(request.node.nodeid), tv=0.3)
    assert r["exact_tv"] == "0" and r["verdict"] == "pass", r


@served
def test_negative_control_is_rejected(request):
    """α = 1e-3, δ = 0.2 (on the batch-64 loop: about 1 s); typical's exact TV here is 0.337."""
    r = gate_decoder(NAME, row_gen(NAME, CONTROL), seed_for(request.node.nodeid), tv=0.2)
    assert r["verdict"] == "REJECT", r


REPRO = """
import torch
from flashspec.engine.hf_drafter import HuggingFaceDrafter
from rheo_fast.table_lm import table_lm
from rheo_ref.models import load_case

case = load_case("tests/cases/served.json")
drafter = HuggingFaceDrafter("d", "cpu", torch.float32, temperature=1.0, model=table_lm(case.draft))
g = torch.Generator().manual_seed(0)
for ctx in ([0], [0, 1], [0, 1, 2], [0, 3]):  # prefill, then the cached path: append, crop + append
    ids, _ = drafter.generate_draft(torch.tensor([ctx]), 3, generator=g)
    assert drafter._kv.enabled and drafter._kv._cached_ids.shape[1] == len(ctx) + 3, ctx
print("ok")
"""


@served
def test_the_drafter_cache_grows_on_a_table_lm():
    """The "batch 64" row crashed when a context-length group held one row: flashspec's batch-1 cache path
    (`hf_drafter.py` `_sample_cached` -> `kv_cache.py` `_call`, line 526) passes `past_key_values`, which the
    TableLM ignored until it took transformers' pre-5.25 name; this is that path, run unmodified."""
    import subprocess

    from rheo.decoders.served import REPO, env_python

    proc = subprocess.run(
        [str(env_python(NAME)), "-c", REPRO],
        cwd=REPO,
        env={**__import__("os").environ, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr[-2000:]


@pytest.mark.slow
@served
@pytest.mark.parametrize("setting", [r.setting for r in decoders()[NAME].table.rows])
def test_verdict_table(setting, request):
    """Each row on two seeds, δ = 0.1, α = 1e-3 for the whole table (helpers.verdict_row)."""
    verdict_row(NAME, setting, request.node.nodeid)


def test_a_row_whose_name_holds_a_comma_is_selected_whole():
    table = decoders()[NAME].table
    assert [r.setting for r in table.select("rejection T=1, batch 64")] == ["rejection T=1, batch 64"]
    assert [r.setting for r in table.select(CONTROL)] == [CONTROL]


SPARSE = load_case(str(SERVED_CASE.parent / "served-sparse-draft.json"))


@pytest.mark.parametrize("gen", [{"gamma": 3}, {"gamma": 3, "batch": 64}, {"gamma": 2, "temperature": 0.5}])
def test_a_draft_with_zeros_is_lossless_exactly(gen):
    """A draft model with zeros (each row's q > 0 on 1 or 2 tokens; p > 0 everywhere): lossless in exact arithmetic
    (rejection_step and rejection_sample read q's zeros as zeros: the residual carries those tokens)."""
    assert tv(exact_law(SPARSE, gen, 3), target_law(SPARSE, gen, 3)) == 0


@pytest.mark.slow
@served
def test_slow_the_documented_zeros_row_command_runs_end_to_end(tmp_path, monkeypatch):
    """`rheo gate --decoder flashspec --rows 'rejection T=1, batch 1, q with zeros' --seeds 1,2`, as docs/THIRD_PARTY.md
    quotes it: pass on both seeds, exact TV 0."""
    import json

    from rheo.cli.main import main
    from rheo.decoders.served import REPO

    monkeypatch.chdir(REPO)
    out = tmp_path / "rows.json"
    rows = "rejection T=1, batch 1, q with zeros"
    assert main(["gate", "--decoder", NAME, "--rows", rows, "--seeds", "1,2", "--json", str(out)]) == 0
    (r,) = json.loads(out.read_text())
    assert (r["exact_tv"], r["verdicts"]) == ("0", ["pass", "pass"]), r
