"""The exact law of SGLang 0.5.23's `chain_speculative_sampling_triton` as written, in Fractions.

Source: `sglang/kernels/ops/speculative/reject_sampling.py` (kernel `speculative_sampling_classic_kernel`)
and its caller `sglang/srt/speculative/eagle_utils.py` (`eagle_sample`). One round from a context:
the draft draws x_1..x_γ from q_draw (x_i's row is q's at the context and x_<i); the kernel is handed
the target rows p_0..p_γ and the *stated* draft rows q_0..q_{γ−1} (q_draw unless a control sets them
apart); coins u are uniform on [0, 1).
- token level (lines 128-160): x_i is accepted iff 0 < q(x_i) <= 1 and u·q(x_i) < p(x_i), i.e. w.p.
  min(1, p/q); the first rejection ends the scan;
- block verification (lines 52-127, Sun et al. 2024, Algorithm 2): r_0 = 1, r_i = min(r_{i−1}·p(x_i)/
  q(x_i), 1) (0 when q(x_i) is not in (0, 1]); scanning i = γ..1 with one coin each, the longest i
  whose coin passes is kept: at i = γ the coin passes w.p. r_γ; below, w.p. min(r_i, h_i) with
  h_i = R_i/(R_i + 1 − r_i), R_i = Σ_v (r_i·p_i(v) − q_i(v))+, when 0 < r_i < 1, else w.p. r_i;
- then (lines 164-239): after all γ accepted, a token from p_γ; else from (s·p_i − q_i)+ normalised
  at the row i of the first rejection (s = r_i in block mode, 1 at token level), q clamped to 0 outside
  [0, 1] and NaN (lines 192-194, 220-222); a residual of mass 0 gives token V − 1 (the CDF walk finds no cell: lines 198-206).
The stated q rows may be what an engine's drafter hands over when it degenerates (`zero_token`: q(x) stated 0
for a token the drafter still draws, a probability that underflowed; `q_row`: every entry 0 or NaN): a draft
whose stated q(x) is not in (0, 1] is rejected, and the residual reads such entries as 0.
`threshold_single` and `threshold_acc` are arguments of `chain_speculative_sampling_triton` (lines 254-255)
that the function never passes to the kernel: they do not enter the law.

Target processing (eagle_utils.py lines 720-743): softmax(logits / T), then, when set, SGLang's
`top_k_renorm_prob` and then `top_p_renorm_prob` on the result (`renorm_triton.py`: a token is kept iff
its probability is >= a pivot, ties kept; top-p's pivot is the first ascending-sorted entry whose
cumulative sum is >= 1 − top_p, lines 122-130). Its plain sampler (`sglang/srt/layers/sampler.py`,
`top_k_top_p_sampling_from_probs(..., filter_apply_order="joint")`) keeps the tokens in *both* the top-k
set and the top-p set of the same softmax: `plain_row` below. With top-k and top-p together the
speculative path applies top-p to the top-k-renormalised row instead: `spec_row`.

SGLang's own processors (`OwnLaw`, `own_target_law`): a request's logit bias, frequency / presence /
repetition penalties and min-p. The case's context is a request one token into its output: its last
token is the output's first (the prefill's), the root of the first verify round; the rest is the prompt.
- The speculative verify (`eagle_sample`, eagle_utils.py lines 562-584, "a relaxed version of penalties
  for speculative decoding") adds the request's accumulated additive penalties (frequency, presence), then
  `apply_scaling_penalties` (repetition: logit·θ where the logit is < 0), then the logit bias, to every
  draft position of the round alike. The penalizers are fed once a round: `eagle_prepare_for_decode`
  (lines 857-863) calls `ScheduleBatch.cumulate_penalty_output_tokens` (managers/schedule_batch.py
  lines 3715-3734), which counts each request's *last* output token only. So the counted tokens are the
  output's first and each round's last; a token accepted inside a round is never counted. The state of
  a round is that multiset (`compose`'s state).
- min-p: `eagle_sample` never reads `min_ps` (the verify applies temperature, top-k and top-p only, lines
  720-743): the verified tokens and the bonus come from the row without it.
- The plain sampler (the target): every output token counted before the next is drawn
  (`prepare_for_decode` lines 3769-3770 without the overlap scheduler), SGLang's penalties on the output
  only (not the prompt: the penalizers' tensors start at 0 / 1), then the logit bias, softmax(·/T), and
  min-p (keep p >= min_p·max, layers/sampler.py lines 407-411).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction

from rheo_ref import processing
from rheo_ref.errors import CaseError
from rheo_ref.laws import ONE, ZERO, Law, Row, normalise
from rheo_ref.models import TableModel

from ..laws import parse_logit_bias, processed_row
from ..rounds import RowMemo, single_token_law, temper, token_law, visible


def top_k_keep(row: Sequence[Fraction], k: int) -> list[bool]:
    """renorm_triton.top_k_renorm_probs_triton: pivot = the k-th largest entry (k clamped to 1..V); keep
    entries >= pivot: every entry tied with the pivot (`rheo_ref.processing.top_k` with ties="all",
    the kernel's own rule: a comparison with the pivot, no sort order)."""
    kept = processing.top_k(tuple(row), min(max(k, 1), len(row)), "all")
    return [x > 0 or r == 0 for x, r in zip(kept, row)]


def top_p_keep(row: Sequence[Fraction], top_p: Fraction) -> list[bool]:
    """renorm_triton.top_p_renorm_probs_triton: ascending sort, cutoff = the first index whose
    cumulative sum is >= 1 − top_p (searchsorted, right=False), pivot = that entry; keep >= pivot."""
    if not 0 < top_p <= 1:
        raise CaseError(f"top_p {top_p} must be in (0, 1]")
    asc = sorted(row)
    acc, cut = ZERO, len(row) - 1
    for i, x in enumerate(asc):
        acc += x
        if acc >= 1 - top_p:
            cut = i
            break
    pivot = asc[cut]
    return [x >= pivot for x in row]


def _kept(row: Sequence[Fraction], keep: Sequence[bool]) -> Row:
    return normalise([x if k else ZERO for x, k in zip(row, keep)])  # kept no mass: CaseError


@dataclass(frozen=True)
class Processing:
    """SGLang's sampling parameters: temperature T = 1/k, top_k (None: off), top_p (None: off)."""

    temperature: Fraction = ONE
    top_k: int | None = None
    top_p: Fraction | None = None

    def spec_row(self, row: Sequence[Fraction]) -> Row:
        """What the speculative verify hands the kernel: softmax(·/T), top-k renorm, then top-p renorm."""
        r = temper(row, self.temperature)
        if self.top_k is not None:
            r = _kept(r, top_k_keep(r, self.top_k))
        if self.top_p is not None:
            r = _kept(r, top_p_keep(r, self.top_p))
        return r

    def plain_row(self, row: Sequence[Fraction]) -> Row:
        """What SGLang's plain sampler draws from: the joint top-k ∩ top-p support of softmax(·/T)."""
        r = temper(row, self.temperature)
        keep = [True] * len(r)
        if self.top_k is not None:
            keep = [a and b for a, b in zip(keep, top_k_keep(r, self.top_k))]
        if self.top_p is not None:
            keep = [a and b for a, b in zip(keep, top_p_keep(r, self.top_p))]
        return _kept(r, keep)


# A NaN in a stated q row, exactly: every range test the kernel makes is false for it (q > 0 and q <= 1 at the
# acceptance, lines 71 and 148; q >= 0 and q <= 1 where the residual clamps q to 0, lines 194 and 222), as it is for −1.
NOT_A_PROBABILITY = Fraction(-1)


def check_stated(zero_token: object, q_row: object, *, block: bool, vocab_size: int | None = None) -> None:
    """The stated q rows `ChainLaw` models: zero_token a token id (below `vocab_size` where it is known), q_row
    None, "zero" or "nan" (token-level verification only), not both."""
    if zero_token is not None and (
        isinstance(zero_token, bool)
        or not isinstance(zero_token, int)
        or zero_token < 0
        or (vocab_size is not None and zero_token >= vocab_size)
    ):
        top = "" if vocab_size is None else f" in 0..{vocab_size - 1}"
        raise CaseError(f"zero_token={zero_token!r} must be a token id{top}")
    if q_row not in (None, "zero", "nan"):
        raise CaseError(f"q_row={q_row!r}; allowed: zero, nan")
    if zero_token is not None and q_row is not None:
        raise CaseError("zero_token and q_row: set one")
    if block and q_row == "nan":
        raise CaseError(
            "q_row=nan is modelled with token-level verification: the block branch sums max(r·p − q, 0) over the "
            "unclamped q (reject_sampling.py lines 89-110), where a NaN's fate is the maximum's NaN rule"
        )


def _clamp(q: Fraction) -> Fraction:
    return q if 0 <= q <= 1 else ZERO


def _residual(p: Row, q: Row, scale: Fraction) -> Law:
    """The final token from (scale·p − q)+ normalised; token V − 1 when that has mass 0."""
    r = normalise([max(scale * a - _clamp(b), ZERO) for a, b in zip(p, q)], on_zero="none")
    if r is None:
        return {(len(p) - 1,): ONE}
    return {(v,): w for v, w in enumerate(r) if w}


class ChainLaw:
    """The law of `chain_speculative_sampling_triton` rounds on tables p (target) and q (draft)."""

    def __init__(
        self,
        target: TableModel,
        draft: TableModel,
        proc: Processing,
        *,
        num_steps: int,
        block: bool = False,
        draft_temperature: Fraction | None = None,
        zero_token: int | None = None,
        q_row: str | None = None,
    ) -> None:
        check_stated(zero_token, q_row, block=block, vocab_size=draft.vocab_size)
        self.zero_token, self.stated = zero_token, q_row
        if isinstance(num_steps, bool) or not isinstance(num_steps, int) or not 1 <= num_steps <= 6:
            raise CaseError(
                f"num_steps={num_steps!r} must be an integer in 1..6 (the law enumerates V^num_steps drafts)"
            )
        self.p, self.q, self.proc = target, draft, proc
        self.gamma, self.block = num_steps, block
        self.t_draw = proc.temperature if draft_temperature is None else Fraction(draft_temperature)
        self.visible = visible(target.context_length)
        self._rows = RowMemo(target.context_length)
        self._blocks: dict[tuple[int, ...], Law] = {}  # whole block-verification rounds, by visible context

    def _row(self, kind: str, ctx: tuple[int, ...]) -> Row:
        if kind == "p":
            return self._rows.get(kind, ctx, lambda: self.proc.spec_row(self.p.row(ctx)))
        t = self.proc.temperature if kind == "q" else self.t_draw
        return self._rows.get(kind, ctx, lambda: temper(self.q.row(ctx), t))

    def p_row(self, ctx: tuple[int, ...]) -> Row:
        return self._row("p", ctx)

    def q_row(self, ctx: tuple[int, ...]) -> Row:
        """The stated draft row handed to the kernel: q at T (SGLang's draft probs are not top-k / top-p processed
        here), with q(zero_token) stated 0 (not renormalised: a probability that underflowed), or every entry 0,
        or every entry NaN (`NOT_A_PROBABILITY`)."""
        q = self._row("q", ctx)
        if self.stated is not None:
            return tuple(ZERO if self.stated == "zero" else NOT_A_PROBABILITY for _ in q)
        if self.zero_token is not None:
            return tuple(ZERO if y == self.zero_token else x for y, x in enumerate(q))
        return q

    def draw_row(self, ctx: tuple[int, ...]) -> Row:
        return self._row("draw", ctx)

    def round_law(self, ctx: tuple[int, ...], limit: int | None = None) -> Law:
        """The law of one round's tokens after ctx, each outcome cut to its first `limit` (None: whole)."""
        if not self.block:
            return self._token_round(ctx, limit)
        key = self.visible(ctx)  # block verification reads the whole draft: one whole round per context, then cut
        whole = self._blocks.get(key)
        if whole is None:
            whole = self._blocks[key] = self._block_round(ctx)
        if limit is None:
            return whole
        out: Law = {}
        for s, w in whole.items():
            out[s[:limit]] = out.get(s[:limit], ZERO) + w
        return out

    def _token_round(self, ctx: tuple[int, ...], limit: int | None = None) -> Law:
        out: dict[tuple[int, ...], Fraction] = {}

        def add(law: Law, head: tuple[int, ...], w: Fraction) -> None:
            for k, v in law.items():
                out[head + k] = out.get(head + k, ZERO) + w * v

        def level(acc: tuple[int, ...], w: Fraction) -> None:
            if limit is not None and len(acc) >= limit:  # the rest of the round is past the cut
                out[acc] = out.get(acc, ZERO) + w
                return
            c = ctx + acc
            p = self.p_row(c)
            if len(acc) == self.gamma:
                add({(v,): x for v, x in enumerate(p) if x}, acc, w)
                return
            q, d = self.q_row(c), self.draw_row(c)
            reject = ZERO
            for x, dx in enumerate(d):
                if not dx:
                    continue
                a = min(ONE, p[x] / q[x]) if 0 < q[x] <= 1 else ZERO
                if a:
                    level(acc + (x,), w * dx * a)
                reject += dx * (1 - a)
            if reject:
                add(_residual(p, q, ONE), acc, w * reject)

        level((), ONE)
        return out

    def _block_round(self, ctx: tuple[int, ...], limit: int | None = None) -> Law:
        out: dict[tuple[int, ...], Fraction] = {}
        V, g = self.p.vocab_size, self.gamma
        for xs in itertools.product(range(V), repeat=g):
            w, r = ONE, ONE
            rows: list[tuple[Row, Row]] = []  # (p_i, q_i), i < γ
            rs: list[Fraction] = []
            for i, x in enumerate(xs):
                c = ctx + xs[:i]
                d = self.draw_row(c)
                w *= d[x]
                if not w:
                    break
                p, q = self.p_row(c), self.q_row(c)
                rows.append((p, q))
                r = min(r * p[x] / q[x], ONE) if 0 < q[x] <= 1 else ZERO
                rs.append(r)
            if not w:
                continue
            p_last = self.p_row(ctx + xs)
            passes = []  # the probability that step i's coin passes, i = 1..γ
            for i in range(1, g + 1):
                ri = rs[i - 1]
                if i < g and 0 < ri < 1:
                    p_next, q_next = rows[i]
                    R = sum((max(ri * a - b, ZERO) for a, b in zip(p_next, q_next)), ZERO)
                    passes.append(min(ri, R / (R + 1 - ri)))
                else:
                    passes.append(ri)
            above = ONE  # P(no coin above i passed)
            for i in range(g, -1, -1):
                a = passes[i - 1] if i >= 1 else ONE
                wi = w * above * a
                above *= 1 - a
                if not wi:
                    continue
                head = xs[:i]
                law: Law
                if i == g:
                    law = {(v,): x for v, x in enumerate(p_last) if x}
                else:
                    p_i, q_i = rows[i]
                    law = _residual(p_i, q_i, rs[i - 1] if i >= 1 else ONE)
                for k, v in law.items():
                    s = (head + k)[:limit]
                    out[s] = out.get(s, ZERO) + wi * v
        return out

    def token_law(self, context: Sequence[int], n: int) -> Law:
        return token_law(self.round_law, context, n, label="sglang", key=visible(self.p.context_length))


def spec_target_law(target: TableModel, proc: Processing, context: Sequence[int], n: int) -> Law:
    """The law the speculative path aims at: tokens from `spec_row` one at a time."""
    return single_token_law(lambda c: proc.spec_row(target.row(c)), context, n)


def plain_target_law(target: TableModel, proc: Processing, context: Sequence[int], n: int) -> Law:
    """The law SGLang's plain (non-speculative) sampler draws: tokens from `plain_row`."""
    return single_token_law(lambda c: proc.plain_row(target.row(c)), context, n)


OWN_KEYS = ("min_p", "logit_bias", "frequency", "presence", "repetition")  # --gen keys of SGLang's own processors


def own_sampling(vocab_size: int, gen: dict) -> processing.Sampling | None:
    """The request's own processors from --gen (None: none set), checked: logit_bias "t:f,..." (the bias
    ln f, f > 0), frequency ρ and presence π in [0.1354, 1] (frequency_penalty = −ln ρ, presence_penalty = −ln π: SGLang
    allows [−2, 2]), repetition θ = 1 or 2 (repetition_penalty = θ: SGLang allows (0, 2], the law needs an integer), min_p in [0, 1]; at T = 1/k, without top-k
    or top-p. Repetition is refused beside an additive processor: SGLang's plain sampler applies its
    penalizers in the iteration order of a set of classes (`penaltylib` orchestrator, `self.penalizers`),
    so which of logit·θ and logit − c comes first is not fixed there."""
    from rheo.decoders.settings import sampling

    if not any(gen.get(k) is not None for k in OWN_KEYS):
        return None
    if gen.get("top_k") is not None or gen.get("top_p") is not None or gen.get("block_verification"):
        raise CaseError(
            f"{next(k for k in OWN_KEYS if gen.get(k) is not None)} with top_k, top_p or block_verification: "
            "SGLang's own processors are modelled with token-level verification and temperature only"
        )
    if gen.get("draft_temperature") is not None:
        raise CaseError("draft_temperature (the negative control) is modelled without SGLang's own processors")
    bias = dict(parse_logit_bias(gen["logit_bias"])) if gen.get("logit_bias") is not None else {}
    additive = bias or gen.get("frequency") is not None or gen.get("presence") is not None
    if gen.get("repetition") not in (None, 1) and additive:
        raise CaseError(
            "repetition with logit_bias, frequency or presence: SGLang's plain sampler applies its penalizers in the "
            "iteration order of a set of classes, so the order of logit·θ and logit − c is not fixed; set one"
        )

    def num(k: str) -> Fraction | None:
        v = gen.get(k)
        return None if v is None else Fraction(str(v))

    for name in ("frequency", "presence"):  # SamplingParams.verify: frequency / presence_penalty in [-2, 2]
        factor = num(name)
        if factor is not None and not factor >= Fraction(13534, 100000):
            raise CaseError(f"{name}={gen[name]!r}: SGLang allows a penalty −ln {name[0]} <= 2, so {name} >= 0.1354")
    if gen.get("repetition") not in (None, 1, 2):
        raise CaseError(f"repetition={gen['repetition']!r}: SGLang allows repetition_penalty in (0, 2]; allowed: 1, 2")
    return sampling(
        vocab_size,
        temperature=float(Fraction(str(gen.get("temperature", 1)))),
        min_p=num("min_p"),
        repetition=gen.get("repetition"),
        frequency=num("frequency"),
        presence=num("presence"),
        logit_bias=bias or None,
        order="sglang",
    )


def own_params(s: processing.Sampling) -> dict:
    """SGLang `SamplingParams` keywords of the exact settings (floats: what a request carries)."""
    import math

    out: dict = {"temperature": float(s.temperature), "min_p": float(s.min_p)}
    out["frequency_penalty"] = -math.log(s.penalty)
    out["presence_penalty"] = -math.log(s.presence)
    out["repetition_penalty"] = float(s.repetition)
    if s.bias:
        out["logit_bias"] = {str(t): math.log(f) for t, f in s.bias}
    return out


def _counted_row(raw: Row, s: processing.Sampling, counted: tuple[int, ...], where: str) -> Row:
    """The processed row with `counted` (a multiset of output tokens) as the penalties' output."""
    return processed_row(tuple(raw), s, counted, counted, where)


class OwnLaw(ChainLaw):
    """Token-level verification with the request's own processors as SGLang's verify applies them (module
    docstring): the penalties read the counted tokens (the round's state), the same at every position of a
    round; min-p is dropped (the verify never reads it). State: the counted tokens, sorted."""

    def __init__(self, target: TableModel, draft: TableModel, own: processing.Sampling, *, num_steps: int) -> None:
        super().__init__(target, draft, Processing(temperature=own.temperature), num_steps=num_steps)
        self.own = replace(own, min_p=ZERO)  # eagle_sample never reads min_ps
        self._counted: tuple[int, ...] = ()

    def p_row(self, ctx: tuple[int, ...]) -> Row:
        counted = self._counted
        where = f"row {list(ctx)} (counted {list(counted)})"
        return self._rows.get(f"p{counted}", ctx, lambda: _counted_row(self.p.row(ctx), self.own, counted, where))

    def counted_round(
        self, ctx: tuple[int, ...], limit: int, counted: tuple[int, ...]
    ) -> dict[tuple[tuple[int, ...], tuple[int, ...]], Fraction]:
        """One round from ctx with `counted` fed to the penalizers: (tokens, counted after the round's last)."""
        self._counted = counted
        law = self._token_round(ctx, limit)
        return {(s, tuple(sorted(counted + s[-1:]))): w for s, w in law.items()}

    def token_law(self, context: Sequence[int], n: int) -> Law:
        if not context:
            raise CaseError("SGLang's own processors need a context: its last token is the output's first")
        first = (context[-1],)  # the prefill's token: counted by the first round's cumulate (output_ids[-1])
        return token_law(self.counted_round, context, n, label="sglang", key=self.visible, state=first)


def own_target_law(target: TableModel, s: processing.Sampling, context: Sequence[int], n: int) -> Law:
    """SGLang's plain sampler with the request's own processors: every output token counted (the context's
    last among them, module docstring), penalties, logit bias, softmax(·/T), min-p."""
    if not context:
        raise CaseError("SGLang's own processors need a context: its last token is the output's first")
    lead = len(context) - 1

    def row_of(c: tuple[int, ...]) -> Row:
        out = tuple(c[lead:])
        return _counted_row(target.row(list(c)), s, out, f"target row after {list(c)}")

    return single_token_law(row_of, context, n)
