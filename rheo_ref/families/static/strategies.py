"""Hypothesis strategies for the static family's schemes and small cases (the fuzz harness's and
the property tests'; shared pieces: `rheo_ref.strategies`)."""

from __future__ import annotations

from hypothesis import assume
from hypothesis import strategies as st

from rheo_ref.families.static.exact import estimate
from rheo_ref.families.static.scheme import SAMPLINGS, SHAPE_KINDS, VERIFIERS, StaticScheme
from rheo_ref.strategies import case_around


@st.composite
def static_shapes(draw, *, max_nodes: int = 5, kinds=SHAPE_KINDS) -> tuple[str, tuple[int, ...]]:
    """(kind, sizes) of a static shape with 1..max_nodes draft nodes; shrinks toward a chain."""
    kind = draw(st.sampled_from(kinds))
    if kind == "branching":
        ks = draw(st.lists(st.integers(1, 3), min_size=1, max_size=3))
        nodes, width = 0, 1
        for k in ks:
            width *= k
            nodes += width
        assume(nodes <= max_nodes)
        return kind, tuple(ks)
    if kind == "delayed":
        K, L1, L2 = draw(st.integers(1, 3)), draw(st.integers(0, 2)), draw(st.integers(0, 2))
        assume(1 <= L1 + K * L2 <= max_nodes)
        return kind, (K, L1, L2)
    n = draw(st.integers(1, max_nodes))
    return kind, tuple(draw(st.integers(0, i)) for i in range(n))


@st.composite
def static_schemes(
    draw, *, max_nodes: int = 5, sampling: str | None = None, verify: str | None = None, kinds=SHAPE_KINDS
) -> StaticScheme:
    kind, sizes = draw(static_shapes(max_nodes=max_nodes, kinds=kinds))
    samp = sampling if sampling is not None else draw(st.sampled_from(SAMPLINGS))
    ver = verify if verify is not None else draw(st.sampled_from(VERIFIERS))
    return StaticScheme(kind, sizes, samp, ver)


@st.composite
def static_cases(
    draw,
    *,
    min_vocab: int = 2,
    max_vocab: int = 4,
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
    """A small static-family case whose `method` is estimated at <= max_trees outcomes per round."""
    V = draw(st.integers(min_vocab, max_vocab))
    scheme = draw(static_schemes(max_nodes=max_nodes, sampling=sampling, verify=verify))
    case = draw(case_around(scheme, V, context_length, separate_sample, zeros, max_tokens))
    assume(estimate(case, method) <= max_trees)
    return case
