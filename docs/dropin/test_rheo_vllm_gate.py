"""rheo's lossless gate for a vLLM fork's rejection sampler: copy this file into the fork's tests.

It needs nothing but `pip install rheo` in the environment where the fork's vLLM is installed (rheo's pytest
plugin, loaded by that install, gives the `lossless` marker and the `rheo_lossless` fixture). Each test drives
the installed vLLM's own sampler, unmodified, in Triton's interpreter (`rheo.decoders.vllm.sampler`: the
installed release's RejectionSampler, or 0.34's V2 `rejection_sample`), decoding a small table model whose
exact law rheo knows, and fails when the sampler's output law is detectably (TV >= TV below) off the target's.

    pytest -m lossless tests/test_rheo_vllm_gate.py     # about 20-60 s a setting on a CPU

On a GPU runner, RHEO_SERVED_DEVICE=cuda runs the same rows on the compiled kernels (rheo's driver then sets no
TRITON_INTERPRET; with no CUDA device in that environment's torch each test fails with DeviceUnavailable, whose
one line says so).

RHEO_VLLM_GEN (JSON) adds settings to every row, e.g. '{"synthetic": "1,1,1"}' (vLLM's documented-lossy
synthetic acceptance): the gate must then fail, the way a fork's lossy change fails it. Seeds come from the test
ids; set RHEO_SEED_SALT (e.g. to the date) in a nightly job to vary them.
"""

from __future__ import annotations

import json
import os

import pytest

from rheo.decoders import vllm as rheo_vllm
from rheo_ref.models import Case

# V = 4, a first-order target p and drafter q, context [0, 1, 2, 0, 1]: the joint law of the first 2 tokens (16 cells)
CASE = Case.from_json(
    {
        "target": {"vocab_size": 4, "context_length": 1, "probs": {
            "": ["6/23", "10/23", "3/23", "4/23"], "0": ["1/8", "3/8", "5/24", "7/24"],
            "1": ["7/23", "4/23", "9/23", "3/23"], "2": ["5/24", "1/3", "1/12", "3/8"],
            "3": ["9/22", "2/11", "7/22", "1/11"]}},
        "draft": {"vocab_size": 4, "context_length": 1, "probs": {
            "": ["11/26", "7/26", "5/26", "3/26"], "0": ["3/7", "2/7", "4/21", "2/21"],
            "1": ["1/7", "10/21", "2/7", "2/21"], "2": ["1/6", "1/8", "1/2", "5/24"],
            "3": ["4/13", "3/26", "1/13", "1/2"]}},
        "context": [0, 1, 2, 0, 1],
        "tokens": 2,
    }
)  # fmt: skip
ALPHA, TV = 1e-3, 0.3  # a lossless sampler fails one row with probability <= 1e-3; TV >= 0.3 is caught w.p. 0.99
EXTRA = json.loads(os.environ.get("RHEO_VLLM_GEN", "{}"))

ROWS = {
    "draft-probs": {"k": 3},  # token-level verification, the q rows handed to vLLM
    "one-hot": {"k": 3, "draft_probs": 0},  # no draft probabilities (n-gram drafting)
}


@pytest.mark.lossless
@pytest.mark.parametrize("row", list(ROWS))
def test_vllm_rejection_sampler_is_lossless(row, rheo_lossless):
    """The sampler's law of the first 2 tokens against the target p's (temperature 1: the target is the case's p)."""
    rheo_lossless(rheo_vllm.sampler({**ROWS[row], **EXTRA}), CASE, alpha=ALPHA, tv=TV)
