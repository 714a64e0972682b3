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

from fractions import Fraction

from rheo.decoders import chain_law
from rheo_ref.laws import Law
from rheo_ref.models import Context, TableModel


def token_law(p: TableModel, q: TableModel, context: Context, n: int, gamma: int, lenience: Fraction) -> Law:
    """Law of the first n tokens: `rheo.decoders.chain_law` with the package's lenience."""
    return chain_law.token_law(p, q, context, n, gamma, lenience)
