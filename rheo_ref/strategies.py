"""Hypothesis strategies for exact probability vectors, table models and cases.

Rows are integer weights (zeros allowed) normalised to `Fraction`s, so shrinking moves toward
small denominators and counterexamples stay readable. `cases` bounds the enumeration size so
that an exact answer is cheap.
"""

from __future__ import annotations

import random
from fractions import Fraction
from itertools import product

from hypothesis import assume
from hypothesis import strategies as st

from rheo_ref.families.rheo.enumerate import estimate_trees_per_round
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.static.exact import estimate_static
from rheo_ref.families.static.scheme import SAMPLINGS, SHAPE_KINDS, VERIFIERS, StaticScheme
from rheo_ref.families.treespark.exact import estimate_treespark
from rheo_ref.families.treespark.scheme import VERIFIERS as TREESPARK_VERIFIERS
from rheo_ref.families.treespark.scheme import Calibration, TreeSparkScheme
from rheo_ref.families.tsubame.exact import estimate_tsubame
from rheo_ref.families.tsubame.scheme import TsubameScheme
from rheo_ref.models import AnyScheme, Case, Proxy, TableModel

from .generate import random_table  # noqa: F401  (re-exported: the benchmarks' tables)

ONE = Fraction(1)


@st.composite
def prob_vectors(draw, size: int, *, max_weight: int = 6, zeros: bool = True):
    """An exact probability vector of length `size` (integer weights over their sum)."""
    lo = 0 if zeros else 1
    w = draw(st.lists(st.integers(lo, max_weight), min_size=size, max_size=size).filter(lambda ws: sum(ws) > 0))
    z = sum(w)
    return tuple(Fraction(x, z) for x in w)


def one_hot(size: int, t: int) -> tuple[Fraction, ...]:
    return tuple(ONE if i == t else Fraction(0) for i in range(size))


@st.composite
def tables(
    draw, vocab_size: int, context_length: int = 1, *, name: str = "model", zeros: bool = True, max_weight: int = 6
):
    """A table model with a row for every context of length <= context_length."""
    rows = {}
    for L in range(context_length + 1):
        keys: list[tuple[int, ...]] = list(product(range(vocab_size), repeat=L))
        if L < context_length and L > 0:
            keys = []  # only the start row () and full-length contexts
        for k in keys:
            rows[",".join(map(str, k))] = draw(prob_vectors(vocab_size, zeros=zeros, max_weight=max_weight))
    return TableModel(vocab_size, context_length, rows, name)


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
    assume(estimate_trees_per_round(case, method) <= max_trees)
    return case


def distinct_weights(rng: random.Random, V: int, *, high: int = 200, zero: int | None = None) -> list[int]:
    """V distinct integer weights in [1, high) (so scores rarely tie), the one at `zero` set to 0;
    rows for `TableModel.from_weights` (fixed cases: no hypothesis)."""
    w = rng.sample(range(1, high), V)
    if zero is not None:
        w[zero] = 0
    return w


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
def case_around(
    draw, scheme: AnyScheme, V: int, context_length: int, separate_sample: bool | None, zeros: bool, max_tokens: int
) -> Case:
    """A case of `scheme` on drawn tables of V tokens (a separate q_samp table or not) from a
    context the tables have rows for, decoding 1..max_tokens tokens."""
    sep = draw(st.booleans()) if separate_sample is None else separate_sample
    draft = draw(tables(V, context_length, name="draft", zeros=zeros))
    target = draw(tables(V, context_length, name="target", zeros=zeros))
    sample = draw(tables(V, context_length, name="draft_sample", zeros=zeros)) if sep else None
    ctx = tuple(draw(st.integers(0, V - 1)) for _ in range(max(1, context_length)))
    return Case(draft, target, scheme, ctx, draw(st.integers(1, max_tokens)), sample)


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
    assume(estimate_static(case, method) <= max_trees)
    return case


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
    assume(estimate_tsubame(case, method) <= max_trees)
    return case


@st.composite
def treespark_schemes(
    draw, *, max_nodes: int = 4, verify: str | None = None, calibration: str | None = None
) -> TreeSparkScheme:
    """A treespark scheme of 1..max_nodes nodes; θ among 0, small and binding values; shrinks to θ = 0."""
    N = draw(st.integers(1, max_nodes))
    k, D = draw(st.integers(1, 3)), draw(st.integers(1, 3))
    theta = draw(st.sampled_from(["0", "1/20", "1/5", "1/3", "1/2", "1"]))
    cal = calibration if calibration is not None else draw(st.sampled_from(["identity", "sigmoid:0.6684,-0.4587"]))
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
    assume(estimate_treespark(case) <= max_trees)
    return case
