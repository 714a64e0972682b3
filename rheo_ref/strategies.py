"""Hypothesis strategies for exact probability vectors, table models and cases.

Rows are integer weights (zeros allowed) normalised to `Fraction`s, so shrinking moves toward
small denominators and counterexamples stay readable. Each family's scheme and case strategies
live in its folder (`rheo_ref/families/<name>/strategies.py`); `family_cases` draws a small case
of any registered family (`rheo_ref.family.Family.cases`), as the fuzz harness does.
"""

from __future__ import annotations

import random
from fractions import Fraction
from itertools import product
from typing import Any

from hypothesis import strategies as st

from rheo_ref.family import families
from rheo_ref.models import AnyScheme, Case, TableModel

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


def distinct_weights(rng: random.Random, V: int, *, high: int = 200, zero: int | None = None) -> list[int]:
    """V distinct integer weights in [1, high) (so scores rarely tie), the one at `zero` set to 0;
    rows for `TableModel.from_weights` (fixed cases: no hypothesis)."""
    w = rng.sample(range(1, high), V)
    if zero is not None:
        w[zero] = 0
    return w


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


def family_cases(*, max_trees: int = 60, max_tokens: int = 3) -> Any:
    """A small case of any registered family that declares case strategies, its method estimated
    at <= max_trees outcomes per round."""
    return st.one_of(
        *(f.cases(max_trees=max_trees, max_tokens=max_tokens) for f in families().values() if f.cases is not None)
    )
