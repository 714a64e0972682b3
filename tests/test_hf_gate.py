"""Third-party decoders under the gate (docs/THIRD_PARTY.md): transformers' speculative decoding and
rheo's own LM code path, run on `TableLM`s of tests/cases/hf.json (V = 4, first-order tables,
context [0, 1, 2, 0, 1], which repeats for prompt lookup).

Every row is `rheo.decoders.gate.gate_hf`: the decoder's first n tokens against the exact (processed) target
law, N from α and δ (`rheo.lossless.stats.samples_for`, power 0.99), the seed fixed by the test id.
- default profile (`lossless`): α = 1e-3, δ = 0.25, n = 2 (16 cells, N ≈ 240, 1-4 s each);
- `slow`: α = 1e-4, δ = 0.05, n = 3 (64 cells, N ≈ 10,600; n = 4 for four drafts, N ≈ 17,300).
Family-wise false-alarm probability: at most 8 × 1e-3 (default) and 12 × 1e-4 (slow).
Negative controls, each with its exact TV: transformers' static ensemble verification (documented
lossy), a candidate generator that returns a q it did not sample from (bug class 2 of
docs/GATE_REFERENCE.md's table), a deterministic draft verified with a soft q (class 3), a broken variant of
rheo's LM path; each must be rejected, and each of the first two must fit its own exact law.
"""

from __future__ import annotations

import contextlib
import json
from fractions import Fraction
from typing import Any

import pytest

pytest.importorskip("transformers")

import torch
from helpers import CASES, run_cli

from rheo.decoders import DecoderRun
from rheo.decoders.gate import decode_batch, gate_hf
from rheo.decoders.laws import Chain, Processing, lookup_candidates, lookup_drafter, table_drafter, table_row
from rheo.lossless.stats import check_law, samples_for, seed_for
from rheo_ref.errors import CaseError
from rheo_ref.exact import Exact, target_law, tv
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.static.scheme import StaticScheme
from rheo_ref.models import Case, load_case

pytestmark = pytest.mark.usefixtures("one_thread")

CASE = load_case(str(CASES / "hf.json"))
QUICK = {"alpha": 1e-3, "tv": 0.25, "tokens": 2}
SLOW = {"alpha": 1e-4, "tv": 0.05, "tokens": 3}
EXACT_THR = {"assistant_confidence_threshold": 0.0}  # no confidence stop: the draft length is fixed

ROWS: dict[str, tuple[str, dict[str, Any]]] = {
    "assisted-k1": ("assisted", {"num_assistant_tokens": 1, **EXACT_THR}),
    "assisted-k2": ("assisted", {"num_assistant_tokens": 2, **EXACT_THR}),
    "assisted-k3": ("assisted", {"num_assistant_tokens": 3, **EXACT_THR}),
    "assisted-k4": ("assisted", {"num_assistant_tokens": 4, **EXACT_THR}),
    "assisted-heuristic": (
        "assisted",
        {"num_assistant_tokens": 2, "num_assistant_tokens_schedule": "heuristic", **EXACT_THR},
    ),
    "assisted-threshold": ("assisted", {"num_assistant_tokens": 4, "assistant_confidence_threshold": 0.4}),
    "assisted-processed": ("assisted", {"num_assistant_tokens": 3, "temperature": 0.5, "top_k": 3, "top_p": 0.9}),
    "prompt-lookup": ("prompt-lookup", {"prompt_lookup_num_tokens": 3}),
    "rheo-lm": ("rheo-lm", {}),
}
QUICK_ROWS = ("assisted-k2", "assisted-heuristic", "assisted-processed", "prompt-lookup", "rheo-lm")


def run_row(name: str, seed: int, *, alpha: float, tv: float, tokens: int) -> dict:
    decoder, gen = ROWS[name]
    return gate_hf(CASE, DecoderRun.parse(decoder, gen), alpha=alpha, tv=tv, tokens=tokens, seed=seed)


def assert_passes(res: dict, tv_: float) -> None:
    assert res["detectable_tv"] <= tv_ + 1e-12, res
    assert res["verdict"] == "pass", res
    assert res["exact_tv"] in ("0", None), res  # rheo's exact law of the decoder, where it knows it, is the target's


# --- lossless decoders: their rows pass ---------------------------------------------------------


@pytest.mark.lossless
@pytest.mark.parametrize("row", QUICK_ROWS)
def test_decoder_passes_the_gate(row, rheo_seed):
    """α = 1e-3, detects TV ≥ 0.25 with power 0.99 on the first 2 tokens (N ≈ 200-240, 1-4 s each)."""
    res = run_row(row, rheo_seed, **QUICK)
    print(json.dumps(res))
    assert_passes(res, QUICK["tv"])


@pytest.mark.slow
@pytest.mark.lossless
@pytest.mark.parametrize("row", list(ROWS))
def test_decoder_passes_the_gate_slow(row, rheo_seed):
    """α = 1e-4, detects TV ≥ 0.05 with power 0.99 on the first 3 tokens (4 for four drafts);
    N and wall time per row are in docs/THIRD_PARTY.md (about 2-5 min each, 30 min in all)."""
    stats = dict(SLOW, tokens=4) if row == "assisted-k4" else SLOW
    res = run_row(row, rheo_seed, **stats)
    print(json.dumps(res))
    assert_passes(res, SLOW["tv"])


# --- the documented-lossy decoder: rejected, with its exact TV ---------------------------------

ENSEMBLE = ("ensemble:1/2", {"num_assistant_tokens": 2, **EXACT_THR})


def test_ensemble_exact_tv_is_the_static_chain_s():
    """The reference states the exact TV of transformers' static ensemble verification: rheo_ref's
    static chain with `ensemble_weight` and rheo.decoders.laws' chain give the same law."""
    n = 2
    case = Case(
        CASE.draft, CASE.target, StaticScheme("branching", (1, 1), "iid", "specinfer", Fraction(1, 2)), CASE.context, n
    )
    ref = Exact(case).token_law(n)
    assert ref == DecoderRun.parse(*ENSEMBLE).exact_law(CASE, n)
    assert tv(ref, target_law(case, n)) == Fraction(4735, 18032)  # 0.263


@pytest.mark.lossless
def test_ensemble_is_rejected_with_its_exact_tv(rheo_seed):
    """assistant_ensemble_weight = 1/2, two drafts: exact TV 4735/18032 ≈ 0.263 on the first 2
    tokens; the row (α = 1e-3, detects TV ≥ 0.25, N ≈ 240) must reject."""
    res = gate_hf(CASE, DecoderRun.parse(*ENSEMBLE), seed=rheo_seed, **QUICK)
    print(json.dumps(res))
    assert res["exact_tv"] == "4735/18032" and res["detectable_tv"] <= res["exact_tv_float"]
    assert res["verdict"] == "REJECT", res


@pytest.mark.slow
@pytest.mark.lossless
def test_ensemble_near_one_is_rejected_slow(rheo_seed):
    """assistant_ensemble_weight = 9/10, three drafts: exact TV ≈ 0.0739 on the first 3 tokens; the slow
    row (α = 1e-4, detects TV ≥ 0.05, N ≈ 10,600; wall time in docs/THIRD_PARTY.md) must reject."""
    dec = DecoderRun.parse("ensemble:9/10", {"num_assistant_tokens": 3, **EXACT_THR})
    res = gate_hf(CASE, dec, seed=rheo_seed, **SLOW)
    print(json.dumps(res))
    assert 0.0738 < res["exact_tv_float"] < 0.074 and res["detectable_tv"] <= SLOW["tv"]
    assert res["verdict"] == "REJECT", res


@pytest.mark.slow
def test_samples_split_over_worker_processes():
    """--workers: chunks in fresh processes, each with its own seed, results in chunk order (~1 min:
    two pools of two fresh interpreters, each loading transformers)."""
    dec = DecoderRun.parse(*ROWS["prompt-lookup"])
    c = Case(CASE.draft, CASE.target, CASE.scheme, CASE.context, 2)
    a = dec.sampler(CASE, workers=2)(c, 7, 11)
    assert len(a) == 11 and all(len(s) == 2 for s in a)
    assert a == dec.sampler(CASE, workers=2)(c, 7, 11)


# --- the q-processing question: what transformers hands its verifier ----------------------------


@contextlib.contextmanager
def spying_on_speculative_sampling(monkeypatch):
    """Record (candidate ids, candidate logits, target logits) of every `_speculative_sampling` call."""
    from transformers.generation import utils

    calls: list[tuple] = []
    real = utils._speculative_sampling

    def spy(candidate_input_ids, candidate_logits, candidate_length, new_logits, **kw):
        calls.append((candidate_input_ids.clone(), candidate_logits.clone(), new_logits.clone()))
        return real(candidate_input_ids, candidate_logits, candidate_length, new_logits, **kw)

    monkeypatch.setattr(utils, "_speculative_sampling", spy)
    yield calls


@pytest.mark.parametrize("gen", [{"temperature": 0.5}, {"top_p": 0.7}, ROWS["assisted-processed"][1]])
def test_the_draft_q_is_processed_twice_in_sampling_and_ratio_alike(monkeypatch, gen):
    """Finding 2 (transformers 5.24): the q that `_speculative_sampling` divides by, which is also what
    the assistant sampled from (its scores), is the draft's table processed *twice* (temperature T acts
    as T², top-p is applied twice), while p is processed once, row by row (float32). Consistent, hence
    lossless (the gate rows pass); it only lowers acceptance (docs/THIRD_PARTY.md)."""
    gen = {"num_assistant_tokens": 3, **gen}
    proc = Processing.from_gen(gen)
    q, p = proc.table(proc.table(CASE.q_samp_model)), proc.table(CASE.target)
    with spying_on_speculative_sampling(monkeypatch) as calls:
        decode_batch(CASE.to_json(), DecoderRun.parse("assisted", gen), list(CASE.context), 4, 0, 20)
    assert len(calls) >= 20
    for ids, cand, new in calls:
        ids = ids[0].tolist()
        k = cand.shape[1]
        start = len(ids) - k
        for i in range(k):
            want_q = torch.tensor([float(x) for x in q.row(ids[: start + i])], dtype=torch.float64)
            assert torch.allclose(cand[0, i].softmax(-1).double(), want_q, atol=2e-6), (ids, i)
        for i in range(k + 1):
            want_p = torch.tensor([float(x) for x in p.row(ids[: start + i])], dtype=torch.float64)
            assert torch.allclose(new[0, i].softmax(-1).double(), want_p, atol=2e-6), (ids, i)


def raw_q_candidates(self, generation_args):
    """AssistedCandidateGenerator._generate_candidates returning the raw draft logits (q before
    temperature / top-k / top-p) instead of the processed ones its tokens were sampled from."""
    self.generation_config.output_logits = True
    out = self.assistant_model.generate(**generation_args, **self.assistant_kwargs)
    self.assistant_kwargs["cache"] = out.cache
    return out.sequences, torch.stack(out.logits, dim=1)


@pytest.mark.lossless
def test_a_candidate_generator_returning_a_q_it_did_not_sample_from_is_rejected(monkeypatch, rheo_seed):
    """Bug class 2 of docs/GATE_REFERENCE.md's table (DFlash, MTP), planted in the assisted generator: drafts
    sampled from the processed q (T = 1/2, top-k 3, top-p 0.9, applied twice as transformers does) but
    verified with the raw q. Exact TV on the first 3 tokens ≈ 0.209 (rheo.decoders.laws.Chain with the raw q
    in the ratio); the samples fit that law (α = 1e-3, δ = 0.3) and the gate, at N sized to detect
    TV 0.208, rejects the target law (≈ 8 s)."""
    from transformers.generation.candidate_generator import AssistedCandidateGenerator

    gen = {"num_assistant_tokens": 2, **EXACT_THR, "temperature": 0.5, "top_k": 3, "top_p": 0.9}
    dec, n = DecoderRun.parse("assisted", gen), 3
    proc = Processing.from_gen(gen)
    p, q = proc.table(CASE.target), proc.table(proc.table(CASE.q_samp_model))
    law = Chain(p, table_drafter(q), table_row(CASE.q_samp_model), cap=2, horizon=n + 1).token_law(CASE.context, n)
    exact_tv = tv(law, target_law(dec.target_case(CASE, n), n))
    assert 0.209 < exact_tv < 0.2094
    delta = float(exact_tv) - 0.001
    monkeypatch.setattr(AssistedCandidateGenerator, "_generate_candidates", raw_q_candidates)
    res = gate_hf(CASE, dec, alpha=1e-3, tv=delta, tokens=n, seed=rheo_seed)
    print(json.dumps(res))
    assert res["verdict"] == "REJECT", res
    own = decode_batch(
        CASE.to_json(), dec, list(CASE.context), n, seed_for(f"{rheo_seed}|own"), samples_for(law, 0.3, 1e-3, 0.01)
    )
    assert not check_law(own, law, alpha=1e-3, tv=0.3).rejected


@pytest.mark.lossless
def test_a_deterministic_draft_verified_as_if_sampled_is_rejected(monkeypatch, rheo_seed):
    """Bug class 3 of docs/GATE_REFERENCE.md's table: prompt lookup's deterministic candidates handed to
    `_speculative_sampling` with a soft q (uniform logits) instead of the point mass they are. Exact
    TV on the first 2 tokens ≈ 0.752; the gate (α = 1e-3, δ = 0.25, N ≈ 240) rejects."""
    from transformers.generation.candidate_generator import PromptLookupCandidateGenerator

    real = PromptLookupCandidateGenerator.get_candidates

    def soft_q(self, input_ids, **kw):
        ids, logits = real(self, input_ids, **kw)
        k = ids.shape[1] - input_ids.shape[1]
        return ids, (None if k == 0 else torch.zeros(1, k, self.vocab_size))

    uniform = tuple(Fraction(1, 4) for _ in range(4))
    law = Chain(CASE.target, lookup_drafter(3), lambda ctx, x: uniform, cap=2, horizon=3).token_law(CASE.context, 2)
    assert tv(law, target_law(CASE, 2)) > Fraction(3, 4)
    monkeypatch.setattr(PromptLookupCandidateGenerator, "get_candidates", soft_q)
    res = gate_hf(CASE, DecoderRun.parse(*ROWS["prompt-lookup"]), seed=rheo_seed, **QUICK)
    print(json.dumps(res))
    assert res["verdict"] == "REJECT", res


@pytest.mark.lossless
def test_a_broken_rheo_lm_path_is_rejected(rheo_seed):
    """rheo's LM path on TableLM running the verify-q-not-qtilde mutant (exact TV 0.264 on the first
    2 tokens, rheo_ref.families.rheo.mutants): rejected at α = 1e-3, δ = 0.25 (N ≈ 240, ≈ 2 s)."""
    from rheo import assert_lossless
    from rheo_fast.lm.decode import generate_tree
    from rheo_fast.lm.table_head import table_tree_model
    from rheo_ref.errors import LosslessError
    from rheo_ref.families.rheo.mutants import MutantExact
    from rheo_ref.variants import MUTANTS

    n = 2
    assert tv(MutantExact(CASE, "verify-q-not-qtilde").token_law(n), target_law(CASE, n)) > 0.26

    def broken(case, seed, num):
        lm, g = table_tree_model(CASE), torch.Generator().manual_seed(seed % 2**63)
        return [
            generate_tree(
                lm,
                list(case.context),
                CASE.scheme_as(Scheme),
                max_new=n,
                generator=g,
                variant=MUTANTS["verify-q-not-qtilde"],
            ).tokens[:n]
            for _ in range(num)
        ]

    with pytest.raises(LosslessError) as err:
        assert_lossless(broken, CASE, alpha=1e-3, tv=QUICK["tv"], tokens=n, seed=rheo_seed)
    print(err.value.result.summary())


# --- transformers' behaviour that the rows depend on (findings) ---------------------------------


def test_assistant_options_given_to_generate_are_ignored(monkeypatch):
    """Finding 1 (transformers 5.24): num_assistant_tokens and assistant_confidence_threshold passed to
    `generate` do not reach the assistant, which reads its own generation_config (defaults 20 and
    0.4); set there, they take effect. If this fails after an upgrade, update docs/THIRD_PARTY.md."""
    from rheo_fast.table_lm import table_lms

    draft, target = table_lms(CASE)
    ids = torch.tensor([list(CASE.context)])
    torch.manual_seed(0)
    with spying_on_speculative_sampling(monkeypatch) as calls:
        for _ in range(5):
            target.generate(
                ids,
                assistant_model=draft,
                do_sample=True,
                max_new_tokens=12,
                num_assistant_tokens=1,
                assistant_confidence_threshold=0.0,
            )
    assert max(c[1].shape[1] for c in calls) > 1  # drafted more than the one token asked for
    draft.generation_config.num_assistant_tokens = 1
    with spying_on_speculative_sampling(monkeypatch) as calls:
        for _ in range(5):
            target.generate(ids, assistant_model=draft, do_sample=True, max_new_tokens=12)
    assert {c[1].shape[1] for c in calls} == {1}


# --- the exact laws behind the rows -------------------------------------------------------------


@pytest.mark.parametrize("k", [1, 2, 3, 4])
@pytest.mark.parametrize("w", ["1", "1/2", "1/4"])
def test_transformers_chain_is_rheo_ref_s_static_chain(k, w):
    """With a table draft, no confidence stop and drafts capped at n, rheo.decoders.laws.Chain equals rheo_ref's
    static chain (branching [1]*min(k, n), iid, specinfer, ensemble_weight w), exactly."""
    n = 3
    weight = Fraction(w)
    chain = Chain(CASE.target, table_drafter(CASE.draft), table_row(CASE.draft), weight, k, horizon=n + 1)
    static = StaticScheme("branching", (1,) * min(k, n), "iid", "specinfer", None if weight == 1 else weight)
    ref = Exact(Case(CASE.draft, CASE.target, static, CASE.context, n)).token_law(n)
    assert chain.token_law(CASE.context, n) == ref


def test_processing_matches_transformers_warpers():
    """rheo.decoders.laws.Processing against transformers' own TemperatureLogitsWarper, TopK and TopP, on
    every row of the case's tables (logits as TableLM gives them)."""
    from transformers.generation.logits_process import (
        LogitsProcessorList,
        TemperatureLogitsWarper,
        TopKLogitsWarper,
        TopPLogitsWarper,
    )

    from rheo_fast.table_lm import log_rows

    for gen in (
        {"temperature": 0.5},
        {"top_k": 2},
        {"top_p": 0.7},
        {"temperature": 0.5, "top_k": 3, "top_p": 0.9},
        {"temperature": 0.25, "top_p": 0.5},
    ):
        proc = Processing.from_gen(gen)
        warpers = LogitsProcessorList(
            ([TemperatureLogitsWarper(gen["temperature"])] if "temperature" in gen else [])
            + ([TopKLogitsWarper(gen["top_k"])] if "top_k" in gen else [])
            + ([TopPLogitsWarper(gen["top_p"])] if "top_p" in gen else [])
        )
        for table in (CASE.draft, CASE.target):
            for key, row in table.probs.items():
                logits = log_rows(torch.tensor([[float(x) for x in row]], dtype=torch.float64)).float()
                got = warpers(torch.zeros(1, 1, dtype=torch.long), logits).softmax(-1)[0].double()
                want = torch.tensor([float(x) for x in proc.row(row)], dtype=torch.float64)
                assert torch.equal(got == 0, want == 0), (gen, key)
                assert torch.allclose(got, want, atol=1e-6), (gen, key)


def test_processing_refuses_what_float_rounding_would_decide():
    with pytest.raises(CaseError, match="1/T to be an integer"):
        Processing.from_gen({"temperature": 0.3})
    row = tuple(Fraction(x, 10) for x in (4, 3, 2, 1))
    with pytest.raises(CaseError, match="within float rounding of 1 - top_p"):
        Processing.from_gen({"top_p": 0.9}).row(row)  # cumulative masses 0.1, 0.3, ... : 0.1 = 1 - 0.9
    with pytest.raises(CaseError, match="cuts between tied tokens"):
        Processing.from_gen({"top_p": 0.65}).row(tuple(Fraction(x, 10) for x in (4, 2, 2, 2)))


def test_lookup_candidates_are_transformers_s():
    """rheo.decoders.laws.lookup_candidates against transformers' PromptLookupCandidateGenerator on random contexts."""
    import random

    from transformers.generation.candidate_generator import PromptLookupCandidateGenerator

    rng = random.Random(0)
    for _ in range(300):
        ids = [rng.randrange(3) for _ in range(rng.randint(1, 9))]
        k, ngram = rng.randint(1, 4), rng.randint(1, 3)
        gen = PromptLookupCandidateGenerator(num_output_tokens=k, max_matching_ngram_size=ngram, max_length=100)
        out, _ = gen.get_candidates(torch.tensor([ids]))
        assert out[0, len(ids) :].tolist() == lookup_candidates(ids, k, ngram), (ids, k, ngram)


def test_decoder_names_and_options_are_checked():
    for name, gen, msg in [
        ("beam", {}, "unknown decoder 'beam'"),
        ("ensemble", {}, "unknown decoder"),
        ("ensemble:1", {}, "1 is plain assisted"),
        ("ensemble:0.5", {}, None),
        ("assisted", {"repetition_penalty": 1.2}, "repetition_penalty is not supported"),
        ("assisted", {"num_assistant_tokens": 0}, "num_assistant_tokens=0"),
        ("assisted", {"num_assistant_tokens_schedule": "fast"}, "allowed: constant"),
        ("rheo-lm", {"top_k": 2}, "top_k is not supported"),
        ("prompt-lookup", {"temperature": 2.0}, "1/T to be an integer"),
    ]:
        if msg is None:
            assert DecoderRun.parse(name, gen).arg == Fraction(1, 2)
            continue
        with pytest.raises(CaseError, match=msg):
            DecoderRun.parse(name, gen)


def test_ensemble_weight_in_the_case_format():
    obj = {"family": "static", "branching": [1, 1], "sampling": "iid", "verify": "specinfer", "ensemble_weight": "1/2"}
    s = StaticScheme.from_json(obj)
    assert s.weight == Fraction(1, 2) and not s.lossless and s.to_json() == obj
    assert StaticScheme.from_json({**obj, "ensemble_weight": 1}).lossless
    for bad, msg in [
        (0.5, "floats are not exact"),
        ("0", r"must be in \(0, 1\]"),
        ("3/2", r"must be in \(0, 1\]"),
        ("x", "is not a number"),
    ]:
        with pytest.raises(CaseError, match=msg):
            StaticScheme.from_json({**obj, "ensemble_weight": bad})
    with pytest.raises(CaseError, match="needs verify 'specinfer'"):
        StaticScheme.from_json({**obj, "verify": "rrsw"})


def test_rheo_exact_states_the_ensemble_s_tv(tmp_path, capsys):
    """`rheo exact` on the case file with transformers' chain (two drafts) and ensemble weight 1/2."""
    obj = CASE.to_json()
    obj["tokens"] = 2
    obj["scheme"] = {
        "family": "static",
        "branching": [1, 1],
        "sampling": "iid",
        "verify": "specinfer",
        "ensemble_weight": "1/2",
    }
    path = tmp_path / "ensemble.json"
    path.write_text(json.dumps(obj))
    code, out, _ = run_cli(capsys, "exact", str(path))
    assert code == 0 and json.loads(out)["tv"] == "4735/18032"


# --- rheo gate-hf -------------------------------------------------------------------------------


@pytest.mark.lossless
def test_gate_hf_prints_the_verdict(capsys):
    """`rheo gate-hf` on the case file: prompt lookup passes (exit 0), the ensemble is rejected with its
    exact TV (exit 1); α = 1e-3, δ = 0.3, 2 tokens (N ≈ 160)."""
    case = str(CASES / "hf.json")
    code, out, _ = run_cli(capsys, "gate-hf", case, "--decoder", "prompt-lookup", "--tv", "0.3", "--tokens", "2")
    rep = json.loads(out)
    assert code == 0 and rep["verdict"] == "pass" and rep["exact_tv"] == "0", rep
    assert rep["gen"] == {"prompt_lookup_num_tokens": 3, "max_matching_ngram_size": 2}
    assert {"N", "alpha", "detectable_tv", "p_value", "transformers", "seconds"} <= set(rep)
    code, out, _ = run_cli(
        capsys,
        "gate-hf",
        case,
        "--decoder",
        "ensemble:1/2",
        "--gen",
        "num_assistant_tokens=2",
        "--gen",
        "assistant_confidence_threshold=0",
        "--tv",
        "0.25",
        "--tokens",
        "2",
    )
    rep = json.loads(out)
    assert code == 1 and rep["verdict"] == "REJECT" and rep["exact_tv"] == "4735/18032", rep


@pytest.mark.lossless
def test_gate_hf_horizon_says_where_and_plots(capsys, tmp_path):
    """`--horizon 3`: the windows (x1, x2), (x2, x3) at family α = 1e-3 (Bonferroni, 5e-4 each), each
    detecting TV ≥ 0.25 with power 0.99; the ensemble's window (x1, x2) is at exact TV 4735/18032 ≈ 0.263
    (its 2-token TV), so it is rejected, with the conditional law that deviates most, drawn by --plot."""
    png = tmp_path / "worst.png"
    argv = ["gate-hf", str(CASES / "hf.json"), "--decoder", "ensemble:1/2", "--gen", "num_assistant_tokens=2"]
    argv += ["--gen", "assistant_confidence_threshold=0", "--tv", "0.25", "--horizon", "3", "--plot", str(png)]
    code, out, _ = run_cli(capsys, *argv)
    rep = json.loads(out)
    assert code == 1 and rep["verdict"] == "REJECT" and rep["horizon"] == 3 and rep["tests"] == 2, rep
    assert rep["alpha"] == 1e-3 and rep["alpha_each"] == 5e-4 and rep["detectable_tv"] <= 0.25
    assert rep["worst_conditional"].startswith("token ") and rep["worst_conditional"] in rep["summary"]
    assert png.stat().st_size > 1000 and rep["plot"] == str(png)


@pytest.mark.parametrize(
    "argv, msg",
    [
        (["--decoder", "beam"], "unknown decoder 'beam'"),
        (["--decoder", "assisted", "--horizon", "1"], "--horizon"),
        (["--decoder", "assisted", "--gen", "top_k"], "must be KEY=VALUE"),
        (["--decoder", "assisted", "--gen", "repetition_penalty=1.1"], "repetition_penalty is not supported"),
        (["--decoder", "assisted", "--gen", "temperature=0.3"], "1/T to be an integer"),
        (["--decoder", "assisted", "--alpha", "2"], "--alpha 2.0 must be a number strictly between 0 and 1"),
    ],
)
def test_gate_hf_bad_input_is_one_line(capsys, argv, msg):
    code, out, err = run_cli(capsys, "gate-hf", str(CASES / "hf.json"), *argv)
    assert code == 2 and out == "" and err.count("\n") == 1 and msg in err, err


def test_gate_hf_rheo_lm_needs_a_rheo_scheme(capsys):
    code, _, err = run_cli(capsys, "gate-hf", str(CASES / "static.json"), "--decoder", "rheo-lm")
    assert code == 2 and "needs a scheme of family rheo" in err, err
