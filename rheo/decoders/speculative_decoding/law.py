"""The exact law of speculative-decoding 0.2.0's `speculative_decoding` on table models, as coded.

One round (speculative_decoding/speculative_decoding.py, lines 103-255 of the released wheel): γ
drafts x_1..x_γ from the processed q (`gumbel_sample` of the top-k'd logits at temperature T, lines
147-150); the target's processed rows p (lines 169-173); draft i is accepted while r_i ≤ p(x_i) /
(l·q(x_i)) with l the `lenience` (line 179: `q = small_prob.gather(...) * lenience`; line 185: `accepted =
find_first_true_index(r > (p / q))`); at the first rejection the token comes from norm((p − q)+) with
the *unscaled* q (lines 195-197), after γ acceptances from p (line 199, `prob_next`). With l = 1 this
is chain speculative sampling (`rheo.decoders.laws.Chain`); with l > 1 a draft is accepted more often
than p allows while the residual is still p − q: lossy (the package's documented speed knob).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable
from fractions import Fraction

from rheo_ref.laws import Law, compose
from rheo_ref.models import Context, TableModel
from rheo_ref.verifier_laws import specinfer_reject

ONE = Fraction(1)


def round_law(p: TableModel, q: TableModel, gamma: int, lenience: Fraction = ONE) -> Callable[[Context, int], Law]:
    """(context, tokens still wanted) -> law of one round's tokens; drafts past the wanted ones are not enumerated."""

    def law(start: Context, m: int) -> Law:
        out: Law = defaultdict(Fraction)
        cap = min(gamma, m)

        def level(drafted: tuple[int, ...], prob: Fraction) -> None:
            ctx = start + drafted
            r = p.row(ctx)
            if len(drafted) == cap:
                for y, ry in enumerate(r):
                    if ry:
                        out[drafted + (y,)] += prob * ry
                return
            qr = q.row(ctx)
            for x, qx in enumerate(qr):
                if not qx:
                    continue
                a = min(ONE, r[x] / (lenience * qx))
                if a:
                    level(drafted + (x,), prob * qx * a)
                if a < 1:
                    for y, ry in enumerate(specinfer_reject(r, qr)):
                        if ry:
                            out[drafted + (y,)] += prob * qx * (1 - a) * ry

        level((), ONE)
        return dict(out)

    return law


def token_law(p: TableModel, q: TableModel, context: Context, n: int, gamma: int, lenience: Fraction = ONE) -> Law:
    """Law of the first n tokens (rounds composed, `rheo_ref.laws.compose`)."""
    return compose(round_law(p, q, gamma, lenience), context, n)
