"""Seeded generators of exact table models, and temperature (no hypothesis, no test runner).

Sweeps (`rheo_ref.grid`, `rheo sweep`), the proofs and the notebooks need reproducible tables:
each generator draws from a `random.Random` it is given. Rows are integer weights over their sum,
so numbers stay readable. `temper` applies a sampling temperature to a table the way
docs/ALGORITHM.md §1 does to logits: softmax(log row / T), the argmax point mass at T = 0.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from fractions import Fraction
from itertools import product

from rheo_ref.laws import normalise

from . import processing
from .errors import CaseError
from .models import Case, Row, TableModel

STYLES = ("uniform", "close", "zipf")


def normalised(weights: Sequence[int | Fraction]) -> Row:
    """Integer or rational weights over their sum (`rheo_ref.laws.normalise`)."""
    return normalise([Fraction(w) for w in weights])


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
    """The empty context and every context of exactly `context_length` tokens."""
    keys: list[tuple[int, ...]] = [()]
    if context_length > 0:
        keys += list(product(range(V), repeat=context_length))
    return keys


def table(rows: dict[tuple[int, ...], Row], V: int, context_length: int, name: str) -> TableModel:
    return TableModel(V, context_length, {",".join(map(str, k)): r for k, r in rows.items()}, name)


def random_pair(
    rng: random.Random, V: int, context_length: int = 1, *, style: str = "uniform", max_weight: int = 6
) -> tuple[TableModel, TableModel]:
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
            raise CaseError(f"unknown style {style!r}; allowed: {', '.join(STYLES)}")
        q_rows[k], p_rows[k] = q, p
    return table(q_rows, V, context_length, "draft"), table(p_rows, V, context_length, "target")


def random_table(rng: random.Random, V: int, name: str, *, max_weight: int = 20) -> TableModel:
    """A first-order table with random positive rational rows (the benchmarks' tables)."""
    keys = [()] + [(i,) for i in range(V)]
    return TableModel.from_weights(
        {k: [rng.randint(1, max_weight) for _ in range(V)] for k in keys}, context_length=1, name=name
    )


def temper_row(row: Row, T: Fraction, *, max_denominator: int = 10**4) -> Row:
    """softmax(log row / T) over the row's support; T = 0: the point mass on the argmax (ties by
    lower id). Exact when 1/T is an integer (row^(1/T) normalised); otherwise each entry is the
    float power rounded to a denominator <= max_denominator, renormalised exactly: itself a valid exact row."""
    if T < 0:
        raise CaseError(f"temperature {T} must be >= 0")
    if T == 0 or (1 / T).denominator == 1:  # exact: rheo_ref.processing (T = 0: argmax, ties by lower id)
        return processing.normalise(processing.temperature(tuple(row), T))
    w = [Fraction(float(x) ** float(1 / T)).limit_denominator(max_denominator) if x else Fraction(0) for x in row]
    if not any(w):  # every power underflowed: the same powers relative to the largest entry (which is 1)
        largest = float(max(row))
        w = [
            Fraction((float(x) / largest) ** float(1 / T)).limit_denominator(max_denominator) if x else Fraction(0)
            for x in row
        ]
    z = sum(w, Fraction(0))
    return tuple(x / z for x in w)


def temper(model: TableModel, T: Fraction, name: str, *, max_denominator: int = 10**4) -> TableModel:
    """The table at temperature T (T = 1: the same rows), renamed."""
    rows = {k: temper_row(r, T, max_denominator=max_denominator) for k, r in model.probs.items()}
    return TableModel(model.vocab_size, model.context_length, rows, name)


def greedy_case(case: Case) -> Case:
    """The case at T = 0: q_samp and p become point masses on their argmax (ties: lower id)."""

    def argmax_table(t: TableModel) -> TableModel:
        rows = {}
        for k, row in t.probs.items():
            best = min(range(len(row)), key=lambda i: (-row[i], i))
            rows[k] = tuple(Fraction(1) if i == best else Fraction(0) for i in range(len(row)))
        return TableModel(t.vocab_size, t.context_length, rows, t.name)

    return Case(
        case.draft, argmax_table(case.target), case.scheme, case.context, case.tokens, argmax_table(case.q_samp_model)
    )
