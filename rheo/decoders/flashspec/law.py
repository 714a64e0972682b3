"""The exact law of flashspec 0.3.1's speculative sampling as written, in Fractions.

Source: `flashspec/sampling/rejection.py` and `typical.py`, called from `flashspec/engine/speculative.py`.
One round from a context: the drafter draws x_1..x_γ from q at temperature T (`HuggingFaceDrafter`), the
target scores them at T (`TargetModel`); p_i, q_i are the rows at the context and x_<i.
- `variant="rejection"` (`rejection_step`, lines 542-629, on the batch-1 path; `rejection_sample`,
  lines 290-450, on the context loop): x_i accepted w.p. min(1, p_i(x_i)/q_i(x_i)); the first rejection
  draws from `_residual_probs` (lines 510-539): (p − q)+ normalised when its mass exceeds 1e-6, else p;
  all γ accepted: a bonus token from p_γ.
- `variant="typical"` (`typical_sample`, lines 15-170, documented lossy): x_i is accepted iff
  |−log p_i(x_i) − H(p_i)| <= −log(top_p), H computed as −Σ p log(p + 1e-9) (a float decision, made
  here in float64 as the code makes it in float32); the first rejected position emits a token drawn
  from p_i; all accepted: a bonus from p_γ.
`SamplingConfig.top_p` reaches only `typical_sample` (speculative.py line 804): the rejection variant
samples the untruncated p at T whatever top_p is, and `SamplingConfig` has no `top_k` field (pydantic's
default `extra="ignore"` drops one). `claimed_target_law` is what a setting claims: p at T, cut to the
k largest entries for a top_k, and to its nucleus
(the smallest set of largest entries holding >= top_p, `top_p_row`) where top_p < 1 (typical: p at T).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from rheo_ref import processing
from rheo_ref.errors import CaseError
from rheo_ref.laws import ONE, ZERO, Law, Row, normalise
from rheo_ref.models import TableModel

from ..rounds import RowMemo, single_token_law, temper, token_law, visible

RESIDUAL_FLOOR = Fraction(1, 10**6)  # _residual_probs: `mass > 1e-6` or the target row instead
ENTROPY_GUARD = 1e-9  # typical.py _ENTROPY_CLAMP_MIN


def top_p_row(row: Sequence[Fraction], top_p: Fraction, ties: processing.Ties = None) -> Row:
    """Nucleus: the fewest largest entries that hold >= top_p, renormalised; a cut between tied
    entries: `ties` (`rheo_ref.processing.keep_largest`; None refuses it)."""
    n, acc = 0, ZERO
    for x in sorted(row, reverse=True):
        n, acc = n + 1, acc + x
        if acc >= top_p:
            break
    rule = processing.tie_rule(processing.check_ties(ties), "top_p")
    return normalise(processing.keep_largest(tuple(row), n, rule, cut=f"top_p={processing.show_p(top_p)}"))


def typical_set(p: Row, top_p: Fraction) -> list[bool]:
    """typical_sample's acceptance of each token as a draft at a row p."""
    ent = -sum(float(x) * math.log(float(x) + ENTROPY_GUARD) for x in p)
    thr = -math.log(float(top_p))
    return [x > 0 and abs(-math.log(float(x)) - ent) <= thr for x in p]


@dataclass(frozen=True)
class Setting:
    gamma: int = 3
    temperature: Fraction = ONE
    top_p: Fraction = ONE
    variant: str = "rejection"

    def __post_init__(self) -> None:
        if isinstance(self.gamma, bool) or not isinstance(self.gamma, int) or not 1 <= self.gamma <= 6:
            raise CaseError(f"gamma={self.gamma!r} must be an integer in 1..6")
        if self.variant not in ("rejection", "typical"):
            raise CaseError(f"variant={self.variant!r}; allowed: rejection, typical")
        if not 0 < self.top_p <= 1:
            raise CaseError(f"top_p={self.top_p} must be in (0, 1]")


class FlashSpecLaw:
    def __init__(self, target: TableModel, draft: TableModel, setting: Setting) -> None:
        self.p, self.q, self.s = target, draft, setting
        self.visible = visible(target.context_length)
        self._rows = RowMemo(target.context_length)

    def _row(self, kind: str, ctx: tuple[int, ...]) -> Row:
        model = self.p if kind == "p" else self.q
        return self._rows.get(kind, ctx, lambda: temper(model.row(ctx), self.s.temperature))

    def p_row(self, ctx: tuple[int, ...]) -> Row:
        return self._row("p", ctx)

    def q_row(self, ctx: tuple[int, ...]) -> Row:
        return self._row("q", ctx)

    def round_law(self, ctx: tuple[int, ...], limit: int | None = None) -> Law:
        """The law of one round's tokens after ctx, each outcome cut to its first `limit` (None: whole)."""
        out: dict[tuple[int, ...], Fraction] = {}

        def add(row: Sequence[Fraction], head: tuple[int, ...], w: Fraction) -> None:
            for v, x in enumerate(row):
                if x:
                    out[head + (v,)] = out.get(head + (v,), ZERO) + w * x

        def level(acc: tuple[int, ...], w: Fraction) -> None:
            if limit is not None and len(acc) >= limit:  # the rest of the round is past the cut
                out[acc] = out.get(acc, ZERO) + w
                return
            c = ctx + acc
            p = self.p_row(c)
            if len(acc) == self.s.gamma:
                add(p, acc, w)
                return
            q = self.q_row(c)
            if self.s.variant == "typical":
                ok = typical_set(p, self.s.top_p)
                accept = [ONE if ok[x] else ZERO for x in range(len(p))]
            else:
                accept = [min(ONE, p[x] / q[x]) if q[x] else ZERO for x in range(len(p))]
            reject = ZERO
            for x, qx in enumerate(q):
                if qx and accept[x]:
                    level(acc + (x,), w * qx * accept[x])
                reject += qx * (1 - accept[x])
            if not reject:
                return
            if self.s.variant == "typical":
                add(p, acc, w * reject)
                return
            res = [max(a - b, ZERO) for a, b in zip(p, q)]
            mass = sum(res, ZERO)
            add(normalise(res) if mass > RESIDUAL_FLOOR else p, acc, w * reject)

        level((), ONE)
        return out

    def token_law(self, context: Sequence[int], n: int) -> Law:
        return token_law(self.round_law, context, n, label="flashspec", key=visible(self.p.context_length))


def top_k_row(row: Sequence[Fraction], k: int, ties: processing.Ties = None) -> Row:
    """The k largest entries (k clamped to 1..V; a cut between tied entries: `ties`), renormalised
    (`rheo_ref.processing.top_k`)."""
    return normalise(processing.top_k(tuple(row), min(max(k, 1), len(row)), ties))


def claimed_target_law(
    target: TableModel,
    setting: Setting,
    context: Sequence[int],
    n: int,
    *,
    top_k: int | None = None,
    ties: processing.Ties = None,
) -> Law:
    """The law a setting claims: p at T, cut to top_p's nucleus when top_p < 1 (for typical, top_p is
    the typical mass and the target is p at T); `ties`: who is kept of entries tied at a cut."""

    def row(c: tuple[int, ...]) -> Row:
        r = temper(target.row(c), setting.temperature)
        if top_k is not None:
            r = top_k_row(r, top_k, ties)
        return top_p_row(r, setting.top_p, ties) if setting.top_p < 1 and setting.variant == "rejection" else r

    return single_token_law(row, context, n)
