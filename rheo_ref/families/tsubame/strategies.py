"""Hypothesis strategies for the tsubame family's schemes and small cases (the fuzz harness's and
the property tests'; shared pieces: `rheo_ref.strategies`)."""

from __future__ import annotations

from hypothesis import assume
from hypothesis import strategies as st

from rheo_ref.families.static.scheme import SAMPLINGS, VERIFIERS
from rheo_ref.families.tsubame.exact import estimate
from rheo_ref.families.tsubame.scheme import TsubameScheme
from rheo_ref.strategies import case_around


@st.composite
def tsubame_schemes(
    draw,
    vocab_size: int,
    *,
    max_depth: int = 3,
    max_nodes: int = 5,
    sampling: str | None = None,
    verify: str | None = None,
) -> TsubameScheme:
    """K, W, D, R of the planning pass (R <= max_nodes), sibling sampling and a verifier."""
    K = draw(st.integers(1, vocab_size))
    W = draw(st.integers(1, K))
    D = draw(st.integers(1, max_depth))
    R = draw(st.integers(1, max_nodes))
    samp = sampling if sampling is not None else draw(st.sampled_from(SAMPLINGS))
    ver = verify if verify is not None else draw(st.sampled_from(VERIFIERS))
    return TsubameScheme(K, W, D, R, samp, ver)


@st.composite
def tsubame_cases(
    draw,
    *,
    min_vocab: int = 2,
    max_vocab: int = 4,
    max_depth: int = 3,
    max_nodes: int = 5,
    max_tokens: int = 2,
    sampling: str | None = None,
    verify: str | None = None,
    separate_sample: bool | None = None,
    context_length: int = 1,
    max_trees: int = 300,
    method: str = "brute",
    zeros: bool = True,
):
    """A small tsubame case whose `method` is estimated at <= max_trees outcomes per round."""
    V = draw(st.integers(min_vocab, max_vocab))
    scheme = draw(tsubame_schemes(V, max_depth=max_depth, max_nodes=max_nodes, sampling=sampling, verify=verify))
    case = draw(case_around(scheme, V, context_length, separate_sample, zeros, max_tokens))
    assume(estimate(case, method) <= max_trees)
    return case
