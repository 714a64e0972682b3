"""One round of a chain speculative sampler as the package index's samplers write it, exactly (Fractions).

`round_law(p, q, gamma, lenience=1, residual=None)`: γ drafts from q; draft x is accepted with
min(1, p(x) / (l·q(x))) (l: a lenience, 1 for the algorithm); at the first rejection the token comes from
`residual(p_row, q_row, x)` (default: norm((p − q)+), the algorithm's); after γ acceptances the bonus comes
from `bonus(p_row)` (default: p itself). Drafts past the tokens still wanted are not enumerated (the law of the first n tokens does not depend
on them). `token_law` composes rounds (`rheo_ref.laws.compose`). With l = 1 and the default residual it is
`rheo.decoders.laws.Chain` with a table drafter (a test checks that the two agree); the variants are what
published packages do instead (speculative-decoding's lenience, rotalabs-accel's one-token residual).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from fractions import Fraction

from rheo_ref.laws import Law, compose, normalise
from rheo_ref.models import Context, Row, TableModel
from rheo_ref.verifier_laws import specinfer_reject

ONE = Fraction(1)
Residual = Callable[[Row, Row, int], Row]  # (p row, q row, rejected draft x) -> the row the token comes from
Bonus = Callable[[Row], Row]  # p row -> the row the token after gamma acceptances comes from


def same(r: Row) -> Row:
    return r


def algorithm_residual(r: Row, q: Row, x: int) -> Row:
    """norm((p − q)+): the algorithm's residual, whatever x was."""
    return specinfer_reject(r, q)


def one_token_residual(r: Row, q: Row, x: int) -> Row:
    """norm((p − q(x)·e_x)+): only the rejected draft's own draft probability subtracted."""
    return normalise(tuple(max(Fraction(0), ry - (q[x] if y == x else 0)) for y, ry in enumerate(r)), on_zero="raise")


def round_law(
    p: TableModel,
    q: TableModel,
    gamma: int,
    lenience: Fraction = ONE,
    residual: Residual = algorithm_residual,
    bonus: Bonus = same,
) -> Callable[[Context, int], Law]:
    """(context, tokens still wanted) -> the law of one round's tokens."""

    def law(start: Context, m: int) -> Law:
        out: Law = defaultdict(Fraction)
        cap = min(gamma, m)

        def emit(head: tuple[int, ...], prob: Fraction, row: Row) -> None:
            for y, ry in enumerate(row):
                if ry:
                    out[head + (y,)] += prob * ry

        def level(drafted: tuple[int, ...], prob: Fraction) -> None:
            ctx = start + drafted
            r = p.row(ctx)
            if len(drafted) == cap:
                emit(drafted, prob, r if cap < gamma else bonus(r))  # cap < gamma: a draft, past the wanted tokens
                return
            qr = q.row(ctx)
            for x, qx in enumerate(qr):
                if not qx:
                    continue
                a = min(ONE, r[x] / (lenience * qx))
                if a:
                    level(drafted + (x,), prob * qx * a)
                if a < 1:
                    emit(drafted, prob * qx * (1 - a), residual(r, qr, x))

        level((), ONE)
        return dict(out)

    return law


def token_law(
    p: TableModel,
    q: TableModel,
    context: Context,
    n: int,
    gamma: int,
    lenience: Fraction = ONE,
    residual: Residual = algorithm_residual,
    bonus: Bonus = same,
) -> Law:
    """Law of the first n tokens (rounds composed)."""
    return compose(round_law(p, q, gamma, lenience, residual, bonus), context, n)
