"""economize 0.3.2's verifiers as rules on the tables, exactly (Fractions).

- `rejection` on drafts it draws itself (`RejectionVerifier.draft_many`: x from the selector's q, its
  distribution handed to `verify_batch`): the algorithm, `rheo.decoders.laws.Chain` on the processed tables.
- `rejection` on deterministic drafts (`Draft.probs` None: a one-hot q, as for its n-gram lookup drafter):
  x accepted with p(x), a rejection draws from p with x removed (verifiers.py:56-64): `Chain` with an
  argmax drafter and a one-hot verify row.
- `typical` (verifiers.py:295-413, documented lossy): drafts are the draft logits' argmax; x is accepted
  when p(x) > cut(p) = min(threshold, alpha·exp(−H(p))), H(p) = −Σ p·log(p + 1e-5); the token after the
  accepted drafts comes from p restricted to {p ≥ cut}. The cut is a float; a comparison within 1e-4 of it
  is refused (the float32 rounding of the package's own sums could flip it).
"""

from __future__ import annotations

import math
from collections import defaultdict
from fractions import Fraction

from rheo.decoders.laws import Drafter, VerifyRow
from rheo_ref.errors import CaseError
from rheo_ref.laws import Law, compose, normalise
from rheo_ref.models import Context, Row, TableModel

ONE = Fraction(1)
NEAR = 1e-4


def argmax(r: Row) -> int:
    top = max(r)
    if sum(1 for x in r if x == top) > 1:
        raise CaseError(f"the draft row {[str(x) for x in r]} has a tied argmax: a deterministic draft is ambiguous")
    return r.index(top)


def one_hot(x: int, v: int) -> Row:
    return tuple(ONE if y == x else Fraction(0) for y in range(v))


def argmax_drafter(q: TableModel) -> Drafter:
    return lambda start, drafted: [(argmax(q.row(start + drafted)), ONE)]


def one_hot_row(v: int) -> VerifyRow:
    return lambda ctx, x: one_hot(x, v)


def cut(r: Row, threshold: float, alpha: float) -> float:
    entropy = -sum(float(x) * math.log(float(x) + 1e-5) for x in r)
    return min(threshold, alpha * math.exp(-entropy))


def _above(px: Fraction, c: float, where: str) -> bool:
    if abs(float(px) - c) < NEAR:
        raise CaseError(f"{where}: p = {float(px):.6f} is within {NEAR} of the typical cut {c:.6f}: not exact")
    return float(px) > c


def typical_token_law(
    p: TableModel, q: TableModel, context: Context, n: int, k: int, threshold: float, alpha: float
) -> Law:
    """Law of the first n tokens of economize's `typical` verifier, k argmax drafts a cycle."""

    def round_law(start: Context, m: int) -> Law:
        drafted: tuple[int, ...] = ()
        for _ in range(min(k, m)):
            drafted += (argmax(q.row(start + drafted)),)
        out: Law = defaultdict(Fraction)
        for a in range(len(drafted) + 1):
            r = p.row(start + drafted[:a])
            c = cut(r, threshold, alpha)
            if a < len(drafted) and _above(r[drafted[a]], c, f"row after {start + drafted[:a]}"):
                continue  # accepted: the next draft is tried
            kept = tuple(x if _above(x, c, "the following token") else 0 * x for x in r)
            kept = normalise(kept) if any(kept) else r  # nothing above the cut: p itself (verifiers.py:411)
            for y, ry in enumerate(kept):
                if ry:
                    out[drafted[:a] + (y,)] += ry
            break
        return dict(out)

    return compose(round_law, context, n)
