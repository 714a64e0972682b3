"""Greedy identity on SmolLM2 (`rheo.lm.greedy`; marker `model`, `slow`: a few minutes on 2 cores).

The float error bound of the verify shapes is measured on the greedy paths (16 tokens) of one
HumanEval and one MT-bench prompt (read from their installed packages): max |one-token − block
logit| over blocks of 4 (chain, k = 3) and 17 (rheo's tree: the root and R = 16 nodes) tokens.
Then, on the same prompts: chain speculative greedy decoding and rheo's LM path (the rheo family's
tree with a draft head: the trained one when the cache holds it, else the head initialised from
the target, untrained, which drafts badly but runs the same code) have no flip beyond near-tie
numerics (every flip's margin ≤ 2·bound); the off-by-one verifier (the negative control) has at
least one flip classified `bug`.
"""

from __future__ import annotations

import os

import pytest

from rheo_fast.lm.target import model_available
from rheo_ref.errors import MissingDependencyError

REASON = model_available()
pytestmark = [
    pytest.mark.model,
    pytest.mark.slow,
    pytest.mark.skipif(REASON is not None, reason=REASON or ""),
    pytest.mark.xdist_group("model"),
]
N = 12


def _head(model):
    import torch

    from rheo_fast.lm.draft_head import DraftHead, HeadConfig, load_head

    try:
        return load_head()[0]
    except MissingDependencyError:
        torch.manual_seed(0)
        head = DraftHead(HeadConfig())
        head.init_from_target(model, torch.arange(HeadConfig().draft_vocab))
        return head.eval().requires_grad_(False)


def test_greedy_identity_on_smollm2_flips_only_at_near_ties():
    import torch

    from rheo.lm.greedy import greedy_report
    from rheo_fast.lm.prompts import render, sample_prompts
    from rheo_fast.lm.target import load_target

    torch.set_num_threads(1 if os.environ.get("PYTEST_XDIST_WORKER") else 2)
    target = load_target()
    model = target.model
    prompts = [render(p, target.tokenizer) for p in sample_prompts(1)]
    rep = greedy_report(model, prompts, N, head=_head(model))
    assert 0 < rep.threshold < 1e-2, rep.bound  # float32 rounding, far below a logit's scale
    for decoder in ("chain", "tree"):
        c = rep.counts(decoder)
        assert c["tokens"] == N * len(prompts) and c["bug"] == 0, (decoder, c, rep.bound)
    bad = rep.counts("chain-off-by-one")
    assert bad["bug"] >= 1, (bad, rep.bound)
