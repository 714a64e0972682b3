"""Hypothesis strategies for exact probability vectors, table models and cases.

Rows are integer weights (zeros allowed) normalised to `Fraction`s, so shrinking moves toward
small denominators and counterexamples stay readable. `cases` bounds the enumeration size so
that an exact answer is cheap.
"""
from __future__ import annotations

from fractions import Fraction
import random
from itertools import product

from hypothesis import strategies as st

from .enumerate import estimate_trees_per_round
from .models import Case, Proxy, Scheme, TableModel

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
def tables(draw, vocab_size: int, context_length: int = 1, *, name: str = "model", zeros: bool = True,
           max_weight: int = 6):
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
def cases(draw, *, min_vocab: int = 2, max_vocab: int = 6, max_depth: int = 3, max_tokens: int = 3,
          proxy: str | None = "rheo", verify: str | None = None, separate_sample: bool | None = None,
          max_trees: int = 400, method: str = "brute", zeros: bool = True):
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
    from hypothesis import assume
    assume(estimate_trees_per_round(case, method) <= max_trees)
    return case


def distinct_weights(rng: random.Random, V: int, *, high: int = 200, zero: int | None = None) -> list[int]:
    """V distinct integer weights in [1, high) (so scores rarely tie), the one at `zero` set to 0;
    rows for `TableModel.from_weights` (fixed cases: no hypothesis)."""
    w = rng.sample(range(1, high), V)
    if zero is not None:
        w[zero] = 0
    return w


def random_table(rng: random.Random, V: int, name: str, *, max_weight: int = 20) -> TableModel:
    """A first-order table with random positive rational rows (benchmarks: no hypothesis)."""
    keys = [()] + [(i,) for i in range(V)]
    return TableModel.from_weights({k: [rng.randint(1, max_weight) for _ in range(V)] for k in keys},
                                   context_length=1, name=name)
