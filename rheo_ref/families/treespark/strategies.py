"""Hypothesis strategies for the treespark family's schemes and small cases (the fuzz harness's and
the property tests'; shared pieces: `rheo_ref.strategies`)."""

from __future__ import annotations

from fractions import Fraction

from hypothesis import assume
from hypothesis import strategies as st

from rheo_ref.families.treespark.exact import estimate
from rheo_ref.families.treespark.scheme import PAPER_SIGMOID, Calibration, TreeSparkScheme
from rheo_ref.families.treespark.scheme import VERIFIERS as TREESPARK_VERIFIERS
from rheo_ref.strategies import case_around


@st.composite
def treespark_schemes(
    draw, *, max_nodes: int = 4, verify: str | None = None, calibration: str | None = None
) -> TreeSparkScheme:
    """A treespark scheme of 1..max_nodes nodes; θ among 0, small and binding values; shrinks to θ = 0."""
    N = draw(st.integers(1, max_nodes))
    k, D = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    theta = draw(st.sampled_from(["0", "1/20", "1/5", "1/3", "1/2", "1"]))
    cal = (
        calibration
        if calibration is not None
        else draw(st.sampled_from(["identity", str(Calibration("sigmoid", *PAPER_SIGMOID))]))
    )
    ver = verify if verify is not None else draw(st.sampled_from(TREESPARK_VERIFIERS))
    return TreeSparkScheme(N, k, D, Fraction(theta), Calibration.parse(cal), ver)


@st.composite
def treespark_cases(
    draw,
    *,
    min_vocab: int = 2,
    max_vocab: int = 4,
    max_nodes: int = 4,
    max_tokens: int = 2,
    verify: str | None = None,
    calibration: str | None = None,
    separate_sample: bool | None = None,
    max_trees: int = 300,
    zeros: bool = True,
):
    """A small treespark case whose enumeration is estimated at <= max_trees trees per round."""
    V = draw(st.integers(min_vocab, max_vocab))
    scheme = draw(treespark_schemes(max_nodes=max_nodes, verify=verify, calibration=calibration))
    case = draw(case_around(scheme, V, 1, separate_sample, zeros, max_tokens))
    assume(estimate(case) <= max_trees)
    return case
