"""What the benchmarks share: whether their goals are asserted (`strict`) and, for the `model`
benches, the real model they measure (`real_model`: the SmolLM2 target and the trained draft head).

Benchmarks are out of the default run (marker `bench`); `pytest -m bench tests/bench -s` runs them.
"""

from __future__ import annotations

import os

import pytest


@pytest.fixture
def strict() -> bool:
    """Goals are asserted only with RHEO_BENCH_ASSERT=1 (shared cores make timings noisy); the
    numbers are always printed and recorded."""
    return os.environ.get("RHEO_BENCH_ASSERT") == "1"


@pytest.fixture(scope="module")
def real_model():
    """(target, draft head), torch on two threads; skips without the model package or a trained
    head (`rheo train-draft`)."""
    import torch

    from rheo_fast.lm.draft_head import load_head
    from rheo_fast.lm.target import load_target, model_available
    from rheo_ref.errors import RheoError

    reason = model_available()
    if reason is not None:
        pytest.skip(reason)
    try:
        head, _ = load_head()
    except RheoError as e:
        pytest.skip(str(e))
    torch.set_num_threads(2)
    return load_target(), head
