"""Hypothesis strategies for the rheo family's schemes and small cases (the fuzz harness's and
the property tests'; shared pieces: `rheo_ref.strategies`)."""

from __future__ import annotations

from hypothesis import assume
from hypothesis import strategies as st

from rheo_ref.families.rheo.exact import estimate
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.models import Case, Proxy
from rheo_ref.strategies import tables


@st.composite
def schemes(draw, vocab_size: int, *, max_depth: int = 3, proxy: str | None = "rheo", verify: str | None = None):
    K = draw(st.integers(1, vocab_size))
    m = draw(st.integers(0, K))
    W = draw(st.integers(1, K))
    D = draw(st.integers(1, max_depth))
    R = draw(st.integers(1, K * (1 + W * (D - 1))))
    v = verify if verify is not None else draw(st.sampled_from(["rheo", "rrsw"]))
    pr = proxy if proxy is not None else draw(st.sampled_from(["rheo", "true", "const:1/4", "const:1/2", "scaled:1/2"]))
    return Scheme(K, m, W, D, R, Proxy.parse(pr), v)


@st.composite
def cases(
    draw,
    *,
    min_vocab: int = 2,
    max_vocab: int = 6,
    max_depth: int = 3,
    max_tokens: int = 3,
    proxy: str | None = "rheo",
    verify: str | None = None,
    separate_sample: bool | None = None,
    max_trees: int = 400,
    method: str = "brute",
    zeros: bool = True,
):
    """A small case whose `method` enumeration is estimated at <= max_trees trees per round."""
    V = draw(st.integers(min_vocab, max_vocab))
    scheme = draw(schemes(V, max_depth=max_depth, proxy=proxy, verify=verify))
    sep = draw(st.booleans()) if separate_sample is None else separate_sample
    draft = draw(tables(V, name="draft", zeros=zeros))
    target = draw(tables(V, name="target", zeros=zeros))
    sample = draw(tables(V, name="draft_sample", zeros=zeros)) if sep else None
    ctx = (draw(st.integers(0, V - 1)),)
    n = draw(st.integers(1, max_tokens))
    case = Case(draft, target, scheme, ctx, n, sample)
    assume(estimate(case, "brute" if method == "brute" else "classes") <= max_trees)
    return case
