"""The lossless gate on random cases (hypothesis): the fast path's first n tokens against the
exact target law, for random small table cases, schemes (rheo proxy, both verification
orders) and separate q_samp tables. Each example is one χ² test at α = 1e-6 (40 examples in the
ci/dev profiles: family-wise ≤ 4e-5) detecting TV ≥ 0.05 with power 0.99; its seed is fixed
by the test id and the case, so the ci profile (derandomized) is reproducible."""

from __future__ import annotations

import json

import pytest
from hypothesis import given

from rheo import assert_lossless, seed_for
from rheo.selfgate.matrix import fast_sampler
from rheo_ref.families.rheo.strategies import cases

pytest.importorskip("rheo_fast.decode")


@pytest.mark.lossless
@pytest.mark.slow
@given(case=cases(max_vocab=5, max_depth=3, max_tokens=3, max_trees=10**9))
def test_fast_path_is_lossless_on_random_cases(case, request):
    seed = seed_for(request.node.nodeid + json.dumps(case.to_json(), sort_keys=True))
    res = assert_lossless(fast_sampler(), case, alpha=1e-6, tv=0.05, seed=seed)
    assert res.detectable_tv <= 0.05
