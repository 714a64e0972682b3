"""Greedy identity (`rheo.lm.greedy`): at T = 0 speculative decoding emits the target's argmax path;
a flip is classified by its logit margin against the verify shape's float error bound.

Model-free, on a `TableLM` target (a transformers causal LM whose logits are a table's log rows,
float64: a forward over a block gives the one-token logits exactly, so the bound is 0 and every flip
is a bug): chain speculative greedy decoding with prompt-lookup drafts equals the argmax path on
every prompt; the off-by-one verifier (the token after the kept drafts read from the row one
position late) flips tokens, each classified `bug`; the rule itself on planted margins.

On SmolLM2 (`model`, `slow`): the bound is measured (max |one-token − block logit| over the greedy
paths of one HumanEval and one MT-bench prompt, blocks of 4 and 17 tokens); chain decoding (k = 3)
and rheo's LM path (the rheo family's tree, draft head) at T = 0 have no bug flip; the off-by-one
verifier has at least one.
"""

from __future__ import annotations

import random

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from rheo.lm.greedy import (  # noqa: E402
    argmax_path,
    block_logits,
    chain_greedy,
    classify,
    lookup_draft,
    one_token_logits,
    verify_shape_bound,
)
from rheo.lossless.stats import seed_for  # noqa: E402
from rheo_fast.table_lm import table_lm  # noqa: E402
from rheo_ref.models import TableModel  # noqa: E402

V = 6


def _target():
    rng = random.Random(seed_for("greedy|table"))
    keys = [(), *((a,) for a in range(V)), *((a, b) for a in range(V) for b in range(V))]
    rows = {k: [rng.randint(1, 30) for _ in range(V)] for k in keys}
    return table_lm(TableModel.from_weights(rows, context_length=2, name="target"))


PROMPTS = [[0, 1, 2, 0, 1], [3, 3, 4], [5, 0, 5, 0, 2, 1]]


def test_lookup_draft_proposes_after_the_latest_match():
    assert lookup_draft([1, 2, 3, 9, 1, 2, 4, 1, 2], 2) == [4, 1]
    assert lookup_draft([1, 2, 3], 2) == [2, 3]  # no match: the last k tokens again


def test_on_a_table_lm_the_verify_shape_is_exact_and_chain_greedy_is_the_argmax_path():
    model = _target()
    assert verify_shape_bound(model, PROMPTS, 12, (2, 4, 7)) == {2: 0.0, 4: 0.0, 7: 0.0}
    for ids in PROMPTS:
        path, logits = argmax_path(model, ids, 12)
        assert torch.equal(one_token_logits(model, ids, path), logits)
        assert torch.equal(block_logits(model, ids, path, 4), logits)
        for k in (1, 3):
            out, _ = chain_greedy(model, ids, 12, k=k)
            assert out == path
            c = classify(model, ids, out, 0.0, (path, logits))
            assert c.tokens == 12 and c.flips == []


def test_the_off_by_one_verifier_flips_tokens_and_each_flip_is_a_bug():
    model = _target()
    bugs = 0
    for ids in PROMPTS:
        path, logits = argmax_path(model, ids, 12)
        out, _ = chain_greedy(model, ids, 12, verifier="off-by-one")
        c = classify(model, ids, out, 0.0, (path, logits))
        assert all(f.kind == "bug" and f.margin > 0 for f in c.flips)
        # judged against its own prefix: the same classification without the reference path
        assert classify(model, ids, out, 0.0).flips == c.flips
        bugs += c.bugs
    assert bugs > 0


def test_a_flip_within_twice_the_bound_is_a_near_tie():
    model = _target()
    ids = PROMPTS[0]
    path, logits = argmax_path(model, ids, 3)
    second = int(logits[1].topk(2).indices[1])
    margin = float(logits[1, path[1]] - logits[1, second])
    out = [path[0], second, *argmax_path(model, [*ids, path[0], second], 1)[0]]
    near = classify(model, ids, out, margin / 2)
    far = classify(model, ids, out, margin / 2 * 0.999)
    assert [(f.position, f.kind) for f in near.flips] == [(1, "near-tie")]
    assert [(f.position, f.kind) for f in far.flips] == [(1, "bug")]
