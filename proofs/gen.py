"""Seeded generators of exact rows, table models and cases for the proofs and notebooks.

Hypothesis (`rheo_ref.strategies`) drives the tests; `python -m proofs` and the notebooks need
reproducible, bounded generation without a test runner, so they use `random.Random(seed)` here.
Rows are integer weights over their sum, like the strategies, so numbers stay readable.
"""
from __future__ import annotations

import random
from fractions import Fraction
from itertools import product
from typing import Sequence

from rheo_ref.errors import CaseError
from rheo_ref.models import Case, Scheme, TableModel
from rheo_ref.slots import ranked

Row = tuple[Fraction, ...]


def normalised(weights: Sequence[int | Fraction]) -> Row:
    z = sum(weights)
    return tuple(Fraction(w) / z for w in weights)


def random_row(rng: random.Random, V: int, *, max_weight: int = 6, zeros: bool = True) -> Row:
    """Integer weights in [0 or 1, max_weight], at least one positive, over their sum."""
    lo = 0 if zeros else 1
    while True:
        w = [rng.randint(lo, max_weight) for _ in range(V)]
        if sum(w) > 0:
            return normalised(w)


def zipf_row(rng: random.Random, V: int, *, skew: float = 1.2, scale: int = 60) -> Row:
    """A peaked row, like a language model's: shuffled Zipf weights rounded to integers >= 1."""
    w = [max(1, round(scale / (i + 1) ** skew)) for i in range(V)]
    rng.shuffle(w)
    return normalised(w)


def mix(a: Row, b: Row, lam: Fraction) -> Row:
    """(1 - lam) a + lam b, exactly."""
    return tuple((1 - lam) * x + lam * y for x, y in zip(a, b))


def contexts(V: int, context_length: int) -> list[tuple[int, ...]]:
    keys: list[tuple[int, ...]] = [()]
    if context_length > 0:
        keys += list(product(range(V), repeat=context_length))
    return keys


def table(rows: dict[tuple[int, ...], Row], V: int, context_length: int, name: str) -> TableModel:
    return TableModel(V, context_length, {",".join(map(str, k)): r for k, r in rows.items()}, name)


def random_pair(rng: random.Random, V: int, context_length: int = 1, *, style: str = "uniform",
                max_weight: int = 6) -> tuple[TableModel, TableModel]:
    """(draft, target) table models. Styles: `uniform` (independent integer weights),
    `close` (target = draft mixed with an independent row, lam in {1/4, 1/2}), `zipf` (peaked
    draft, target a peaked row mixed with the draft)."""
    q_rows, p_rows = {}, {}
    for k in contexts(V, context_length):
        if style == "uniform":
            q, p = random_row(rng, V, max_weight=max_weight), random_row(rng, V, max_weight=max_weight)
        elif style == "close":
            q = random_row(rng, V, max_weight=max_weight, zeros=False)
            p = mix(q, random_row(rng, V, max_weight=max_weight), Fraction(rng.choice([1, 2]), 4))
        elif style == "zipf":
            q = zipf_row(rng, V)
            p = mix(q, zipf_row(rng, V), Fraction(rng.choice([1, 2, 3]), 4))
        else:
            raise CaseError(f"unknown style {style!r}; allowed: uniform, close, zipf")
        q_rows[k], p_rows[k] = q, p
    return table(q_rows, V, context_length, "draft"), table(p_rows, V, context_length, "target")


def one_row_case(q: Sequence, p: Sequence, scheme: Scheme, q_samp: Sequence | None = None) -> Case:
    """A depth-free case: the same rows at every context (context_length 0)."""
    V = len(q)
    mk = lambda r, n: TableModel(V, 0, {"": tuple(Fraction(x) for x in r)}, n)  # noqa: E731
    return Case(mk(q, "draft"), mk(p, "target"), scheme, (), 1, None if q_samp is None else mk(q_samp, "draft_sample"))


def temper_row(row: Row, T: Fraction, *, max_denominator: int = 10**4) -> Row:
    """softmax(log row / T) over the row's support: row^(1/T) renormalised, exactly when 1/T is an
    integer, else each entry's float power rounded to denominators <= max_denominator (itself a
    valid row); T = 0: the point mass on the argmax (ties by lower id, docs/ALGORITHM.md §1)."""
    if T == 0:
        top = ranked(row)[0]
        return tuple(Fraction(int(i == top)) for i in range(len(row)))
    if (1 / T).denominator == 1:
        w = [x ** int(1 / T) for x in row]
    else:
        w = [Fraction(float(x) ** float(1 / T)).limit_denominator(max_denominator) if x else Fraction(0) for x in row]
    z = sum(w)
    return tuple(x / z for x in w)


def tempered(model: TableModel, T: Fraction, name: str, *, max_denominator: int = 10**4) -> TableModel:
    """The table with every row at temperature T (`temper_row`)."""
    return TableModel(model.vocab_size, model.context_length,
                      {k: temper_row(r, T, max_denominator=max_denominator) for k, r in model.probs.items()}, name)
