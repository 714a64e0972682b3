"""Seeded generators of exact rows, table models and cases for the proofs and notebooks.

Hypothesis (`rheo_ref.strategies`) drives the tests; `python -m proofs` and the notebooks need
reproducible, bounded generation without a test runner, so they use `random.Random(seed)`. The
generators live in `rheo_ref.generate` (sweeps use them too) and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction

from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.generate import contexts, mix, normalised, random_pair, random_row, table, temper_row, zipf_row
from rheo_ref.generate import temper as tempered
from rheo_ref.models import Case, Row, TableModel

__all__ = [
    "Row",
    "contexts",
    "mix",
    "normalised",
    "one_row_case",
    "random_pair",
    "random_row",
    "table",
    "temper_row",
    "tempered",
    "zipf_row",
]


def one_row_case(q: Sequence, p: Sequence, scheme: Scheme, q_samp: Sequence | None = None) -> Case:
    """A depth-free case: the same rows at every context (context_length 0)."""
    V = len(q)
    mk = lambda r, n: TableModel(V, 0, {"": tuple(Fraction(x) for x in r)}, n)
    return Case(mk(q, "draft"), mk(p, "target"), scheme, (), 1, None if q_samp is None else mk(q_samp, "draft_sample"))
