"""Greedy identity on SmolLM2 through `rheo greedy` (`rheo.lm.greedy`; marker `model`, `slow`: a
few minutes on 2 cores).

The float error bound of the verify shapes is measured on the greedy paths (12 tokens) of one
HumanEval and one MT-bench prompt (read from their installed packages): max |one-token − block
logit| over blocks of 4 (chain, k = 3) and 17 (rheo's tree: the root and R = 16 nodes) tokens.
Then, on the same prompts: chain speculative greedy decoding and rheo's LM path (the rheo family's
tree with a draft head: the trained one when the cache holds it, else the head initialised from
the target, untrained, which drafts badly but runs the same code) have no flip beyond near-tie
numerics (every flip's margin ≤ 2·bound); the off-by-one verifier (the negative control) has at
least one flip classified `bug`, so the command exits 1.
"""

from __future__ import annotations

import os

import pytest

from rheo_fast.lm.target import model_available

REASON = model_available()
pytestmark = [
    pytest.mark.model,
    pytest.mark.slow,
    pytest.mark.skipif(REASON is not None, reason=REASON or ""),
    pytest.mark.xdist_group("model"),
]
N = 12


def test_greedy_identity_on_smollm2_flips_only_at_near_ties(capsys):
    """Through `rheo greedy` (one prompt per set, N tokens, every decoder): exit 1, because the
    control is convicted; the correct decoders have no bug flip."""
    import json

    import torch

    from rheo.cli.main import main

    threads = torch.get_num_threads()
    try:
        rc = main(["greedy", "--prompts", "1", "--tokens", str(N), "--decoder", "chain,tree,off-by-one", "--json", "--quiet",
                   "--threads", "1" if os.environ.get("PYTEST_XDIST_WORKER") else "2"])  # fmt: skip
    finally:
        torch.set_num_threads(threads)
    out, err = capsys.readouterr()
    rep = json.loads(out)
    rows = {r["decoder"]: r for r in rep["decoders"]}
    assert rc == 1 and rep["bug"] is True and len(rep["prompts"]) == 2, err
    for decoder in ("chain", "tree"):
        r = rows[decoder]
        assert 0 < r["bound"] < 1e-2, r  # float32 rounding, far below a logit's scale
        assert r["tokens"] == N * 2 and r["bug"] == 0, r
    assert all(r["threshold"] == 2 * r["bound"] for r in rows.values())
    bad = rows["off-by-one"]
    assert bad["bug"] >= 1 and bad["first_bug"]["margin"] > 2 * bad["bound"], bad
