"""The exact law of vLLM 0.33.0's `RejectionSampler` as written, on table models, in Fractions.

One round of a request with k drafts from context c (`vllm/v1/sample/rejection_sampler.py`):
- the drafts x_1..x_k are drawn one by one from the drafter's q (the harness's table drafter);
- p_j is the target row at c + x_<j processed by `apply_sampling_constraints` (lines 589-645:
  logits / temperature, then `apply_top_k_top_p`: top-k keeps values >= the k-th largest, top-p
  drops the tokens whose ascending cumulative mass is <= 1 - top_p; `rheo.decoders.laws.Processing` is
  that rule in rationals);
- `rejection_random_sample_kernel` (lines 896-967; the test on line 951) accepts x_j iff
  `draft_prob > 0 and target_prob / draft_prob >= uniform_prob`: w.p. min(1, p_j(x_j) / v_j(x_j)),
  where v_j is the q row handed to vLLM, or the point mass on x_j when `draft_probs` is None;
- the first rejection emits the recovered token of `sample_recovered_tokens_kernel` (lines
  1071-1152), the argmax of max(p_j - v_j, 0) / E with E ~ Exp(1): a draw from norm((p_j - v_j)+);
- all k accepted: the bonus from the `Sampler` on the bonus row (temperature, top-k, top-p), p_{k+1};
- temperature 0 (`rejection_greedy_sample_kernel`): x_j is kept iff it is the argmax of the raw
  target logits, the first mismatch emits the argmax, the bonus is the argmax;
- `synthetic_rates` (`rejection_sample_method="synthetic"`, lossy by design): x_j is accepted iff
  `uniform_prob < rate_j` (rates are the conditional ones vLLM derives from the unconditional
  list, `unconditional_to_conditional_rates`), else the recovered token as above.
Rounds repeat until n tokens; the law of the first n is computed lazily: a round is expanded only
as far as the n tokens asked for need.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction

from rheo.decoders.laws import Processing, parse_logit_bias
from rheo.decoders.rounds import token_law
from rheo_ref.errors import CaseError
from rheo_ref.laws import ONE, ZERO, Law, Row, normalise
from rheo_ref.models import TableModel
from rheo_ref.processing import Sampling, Ties


@dataclass(frozen=True)
class Setting:
    """One request's settings: temperature 1/power (0: greedy), top-k, top-p, drafts per round, and
    the tie rule at a top-k / top-p cut (`rheo.decoders.laws.Processing`)."""

    power: int = 1
    top_k: int | None = None
    top_p: Fraction | None = None
    k: int = 2
    greedy: bool = False
    ties: Ties = None
    min_p: Fraction | None = None  # vLLM's MinPLogitsProcessor (None or 0: off)
    # vLLM's LogitBiasLogitsProcessor: (token, factor) pairs, the bias ln(factor) (rheo_ref.processing.logit_bias)
    bias: tuple[tuple[int, Fraction], ...] = ()
    repetition: int = 1  # repetition_penalty θ (an integer: the weight w^θ on prompt and output tokens)
    frequency: Fraction = ONE  # frequency_penalty = -ln(ρ): the weight times ρ^count in the output
    presence: Fraction = ONE  # presence_penalty = -ln(π): the weight times π once a token is in the output
    bad_words: tuple[tuple[int, ...], ...] = ()  # vLLM's bad words, as token ids: the last is banned after the rest

    @property
    def history(self) -> bool:
        """Whether the rows depend on the output so far (penalties) or on processing the law applies per row."""
        return bool(self.bias or self.bad_words) or self.repetition != 1 or self.frequency != 1 or self.presence != 1

    @classmethod
    def from_gen(cls, gen: dict) -> Setting:
        k = gen.get("k", 2)
        if isinstance(k, bool) or not isinstance(k, int) or not 0 <= k <= 128:
            raise CaseError(f"k={k!r} must be an integer in 0..128 (vLLM's MAX_SPEC_LEN)")
        m = gen.get("min_p")
        if m is not None:
            if isinstance(m, bool) or not isinstance(m, (int, float, str)):
                raise CaseError(f"min_p={m!r} must be a number in [0, 1]")
            m = Fraction(str(m))
            if not 0 <= m <= 1:
                raise CaseError(f"min_p={m} must lie in [0, 1]")
            if m and (gen.get("top_k") is not None or gen.get("top_p") is not None):
                raise CaseError("min_p with top_k / top_p: vLLM applies min-p between temperature and top-k / top-p; "
                                "modelled here without them")  # fmt: skip
        extra = _penalties(gen)
        if gen.get("bad_words") is not None:
            extra["bad_words"] = parse_bad_words(gen["bad_words"])
        if extra and (gen.get("temperature") == 0 or m or gen.get("top_k") is not None or gen.get("top_p") is not None):
            raise CaseError(f"{sorted(extra)[0]} with temperature 0, min_p, top_k or top_p: modelled here without them")
        if gen.get("temperature") == 0:
            return cls(k=k, greedy=True, min_p=m or None)
        own = ("min_p", "bad_words", *PENALTY_KEYS)
        proc = Processing.from_gen({x: v for x, v in gen.items() if x not in own})
        return cls(power=proc.power, top_k=proc.top_k, top_p=proc.top_p, k=k, ties=proc.ties, min_p=m or None, **extra)

    def penalised(self, *, bias: bool = True) -> Sampling:
        """1/T, the logit bias (unless `bias` is False) and the penalties in the one settings model
        (`rheo_ref.processing.Sampling`), in vLLM's order (bias, repetition, frequency, presence,
        temperature; no cut: the penalised rows are modelled without top-k, top-p or min-p)."""
        return Sampling(
            temperature=Fraction(1, self.power),
            bias=self.bias if bias else (),
            repetition=self.repetition,
            penalty=self.frequency,
            presence=self.presence,
            order="vllm",
        )

    @property
    def processing(self) -> Processing:
        return Processing(power=self.power, top_k=self.top_k, top_p=self.top_p, ties=self.ties)


PENALTY_KEYS = ("logit_bias", "repetition", "frequency", "presence", "bad_words")


def parse_bad_words(v: object) -> tuple[tuple[int, ...], ...]:
    """--gen bad_words: words separated by commas, a word's token ids by '-' (`3` bans 3 everywhere, `1-3` bans 3
    right after 1 in the output), as vLLM's `SamplingParams.bad_words` reach the sampler once tokenised."""
    words = []
    for part in str(v).split(","):
        ids = part.strip().split("-")
        if not all(t.strip().isdigit() for t in ids):
            raise CaseError(f"bad_words={v!r}: write token ids joined by '-', words separated by ',', e.g. 3,1-2")
        words.append(tuple(int(t) for t in ids))
    return tuple(words)


def bad_words_row(row: Row, words: Sequence[tuple[int, ...]], out: Sequence[int], where: str = "") -> Row:
    """vLLM's bad words on one row (0.33 `vllm/v1/sample/ops/bad_words.py` `_apply_bad_words_single_batch`; 0.34
    `vllm/v1/worker/gpu/sample/bad_words.py` `_bad_words_kernel`): a word's last token gets logit -inf when the output
    so far (not the prompt) ends with the word's other tokens; the row renormalised."""
    kept = list(row)
    for w in words:
        if len(w) - 1 <= len(out) and tuple(out[len(out) - (len(w) - 1) :]) == w[:-1]:
            if w[-1] < len(kept):
                kept[w[-1]] = ZERO
    if not any(kept):
        raise CaseError(f"bad_words ban every token of row {where}")
    return normalise(kept)


def _factor(name: str, v: object) -> Fraction:
    """A penalty's factor in (0, 1] (frequency ρ, presence π)."""
    if isinstance(v, bool) or not isinstance(v, (int, float, str, Fraction)):
        raise CaseError(f"{name}={v!r} must be a rational factor, e.g. 1/2")
    try:
        f = Fraction(str(v))
    except (ValueError, ZeroDivisionError):
        raise CaseError(f"{name}={v!r} must be a rational factor, e.g. 1/2") from None
    if not 0 < f <= 1:
        raise CaseError(f"{name}={v} must lie in (0, 1]")
    return f


def _penalties(gen: dict) -> dict:
    """The logit bias and penalties of --gen, as exact factors (module docstring of rheo_ref.processing):
    logit_bias "t:f,t:f" (vLLM's logit_bias {t: ln f}), repetition θ an integer >= 1, frequency ρ and presence π
    in (0, 1] (vLLM's frequency_penalty = -ln ρ, presence_penalty = -ln π)."""
    out: dict = {}
    if gen.get("logit_bias") is not None:
        out["bias"] = parse_logit_bias(gen["logit_bias"])
    r = gen.get("repetition")
    if r is not None:
        if isinstance(r, bool) or not isinstance(r, int) or r < 1:
            raise CaseError(f"repetition={r!r} must be an integer >= 1 (the exact law of w^θ)")
        if r != 1:
            out["repetition"] = r
    for name in ("frequency", "presence"):
        if gen.get(name) is not None and _factor(name, gen[name]) != 1:
            out[name] = _factor(name, gen[name])
    return out


def min_p_row(row: Row, m: Fraction, where: str = "") -> Row:
    """vLLM's `MinPLogitsProcessor.apply` (vllm/v1/sample/logits_processor/builtin.py): tokens whose probability
    is `< min_p * max` are masked, the rest renormalised (a token exactly at the cut is refused: float decides)."""
    cut = m * max(row)
    if any(x == cut for x in row if x):
        raise CaseError(f"min_p={m}: a probability equals min_p * max = {cut} in row {where}; float would decide")
    return normalise([x if x >= cut else ZERO for x in row])


def min_p_table(t: TableModel, m: Fraction) -> TableModel:
    rows = {key: min_p_row(r, m, repr(key)) for key, r in t.probs.items()}
    return TableModel(t.vocab_size, t.context_length, rows, t.name)


def conditional_rates(rates: Sequence[Fraction]) -> list[Fraction]:
    """vLLM's `unconditional_to_conditional_rates`: r_i / r_{i-1} (0 after a 0)."""
    out, prev = [], ONE
    for r in rates:
        out.append(r / prev if prev else ZERO)
        prev = r
    return out


def _argmax(r: Row) -> int:
    top = max(r)
    if sum(1 for x in r if x == top) > 1:
        raise CaseError(f"greedy: the target row {[str(x) for x in r]} has tied maxima; float argmax would decide")
    return r.index(top)


class VLLMLaw:
    """The law of the tokens vLLM's rejection sampler emits for one request setting."""

    def __init__(
        self,
        p: TableModel,
        q: TableModel,
        setting: Setting,
        *,
        draft_probs: bool = True,
        synthetic_rates: Sequence[Fraction] | None = None,
        pad: int = 0,
        zero_token: int | None = None,
        q_row: str | None = None,
        v2: bool = False,
    ) -> None:
        self.raw, self.q, self.s, self.use_q = p, q, setting, draft_probs
        if not 0 <= pad <= setting.k:
            raise CaseError(f"pad={pad} with k={setting.k}; allowed: 0..k")
        if (zero_token is not None or q_row is not None) and not draft_probs:
            raise CaseError("zero_token / q_row state the draft probabilities handed to vLLM: they need draft_probs=1")
        if q_row not in (None, "zero", "nan"):
            raise CaseError(f"q_row={q_row!r}; allowed: zero, nan")
        if zero_token is not None and not 0 <= zero_token < p.vocab_size:
            raise CaseError(f"zero_token={zero_token}; allowed: 0..{p.vocab_size - 1}")
        if setting.greedy and (pad or zero_token is not None or q_row):
            raise CaseError("pad / zero_token / q_row are modelled at temperature > 0")
        self.pad, self.zero_token, self.q_row = pad, zero_token, q_row
        self.prompt = 0  # the prompt's length (token_law sets it): penalties count the output after it
        self.p = setting.processing.table(p)
        # vLLM 0.33: the bonus row goes through the Sampler (temperature, then every argmax-invariant processor:
        # min-p), the verified rows through apply_logits_processors, which runs only the non-argmax-invariant ones
        self.bonus = self.p if not setting.min_p or setting.greedy else min_p_table(self.p, setting.min_p)
        if v2 and setting.min_p:  # the V2 runner: Sampler.apply_sampling_params applies min-p at every position
            self.p = self.bonus
        self.v2 = v2  # the V2 runner: logit bias (like penalties and bad words) at every position, verified and bonus
        self.rates = None if synthetic_rates is None else conditional_rates([Fraction(r) for r in synthetic_rates])
        if self.rates is not None and len(self.rates) < setting.k:
            raise CaseError(f"synthetic_rates has {len(self.rates)} entries; k={setting.k} drafts need one each")
        self.L = max(p.context_length, q.context_length)

    def _key(self, ctx: tuple[int, ...]) -> tuple[int, ...]:
        return ctx[-self.L :] if self.L else ()

    def round_law(self, ctx: tuple[int, ...], limit: int) -> Law:
        """Law of one round's emitted tokens from ctx, cut to `limit` tokens."""
        out: Law = defaultdict(Fraction)
        k = self.s.k

        def emit(acc: tuple[int, ...], row: Row, w: Fraction) -> None:
            if len(acc) >= limit:
                out[acc[:limit]] += w
                return
            for y, py in enumerate(row):
                if py:
                    out[acc + (y,)] += w * py

        def walk(acc: tuple[int, ...], w: Fraction) -> None:
            c = ctx + acc
            if len(acc) >= limit:  # nothing after the first `limit` tokens is asked for
                out[acc[:limit]] += w
                return
            p = self._row(c) if not self.s.greedy else self.raw.row(list(c))
            if self.pad and len(acc) == k - self.pad:  # a padded draft id (-1): rejected, the recovered token
                emit(acc, p, w)  # from max(p - 0, 0) (a zero q row handed, or none: the mask skips id -1)
                return
            if len(acc) == k:  # all accepted: the bonus
                emit(acc, self._point(_argmax(p)) if self.s.greedy else self._row(c, bonus=True), w)
                return
            q = self.q.row(list(c))
            for x, qx in enumerate(q):
                if not qx:
                    continue
                if self.s.greedy:
                    g = _argmax(p)
                    if x == g:
                        walk(acc + (x,), w * qx)
                    else:
                        out[(acc + (g,))[:limit]] += w * qx
                    continue
                v = self._stated(q) if self.use_q else self._point(x)
                if self.rates is not None:
                    a = self.rates[len(acc)]
                else:  # `draft_prob > 0 and target_prob / draft_prob >= uniform_prob` (line 951)
                    a = min(ONE, p[x] / v[x]) if v[x] > 0 else ZERO  # (a NaN row: NaN > 0 is false)
                if a:
                    walk(acc + (x,), w * qx * a)
                if a < 1:
                    emit(acc, self._recovered(p, v), w * qx * (1 - a))

        walk((), ONE)
        return dict(out)

    def _point(self, x: int) -> Row:
        return tuple(ONE if y == x else ZERO for y in range(self.raw.vocab_size))

    def _row(self, c: tuple[int, ...], bonus: bool = False) -> Row:
        """The processed target row after c at a verified position or at the bonus. 0.33: the bonus goes through
        `Sampler.apply_logits_processors` (sampler.py lines 436-468: every non-argmax-invariant processor, line 464,
        logit bias among them, then the penalties on the output and all the drafts, line 468), a verified position
        through `RejectionSampler.apply_logits_processors` (rejection_sampler.py lines 329-384: penalties on the
        output and the drafts before it, line 357, bad words, and of the non-argmax-invariant processors only
        `MinTokensLogitsProcessor`, lines 372-373): no logit bias there. The V2 runner (`v2`):
        `Sampler.apply_sampling_params` runs logit bias, penalties and bad words on every logits row (0.34.0
        `vllm/v1/worker/gpu/sample/sampler.py` lines 69-76, 252): the logit bias at the verified positions too."""
        if not self.s.history:
            return (self.bonus if bonus else self.p).row(list(c))
        from rheo_ref.processing import process

        out = c[self.prompt :]
        counts = [out.count(t) for t in range(self.raw.vocab_size)]
        s = self.s.penalised(bias=bonus or self.v2)  # V2 applies the bias at every position, V1 at the bonus only
        row = process(self.raw.row(list(c)), s, counts, c, where=f"row {list(c)}")
        # bad words at the verified positions on the output and the drafts before each (0.33 rejection_sampler.py
        # lines 367-370, apply_bad_words_with_drafts), at the bonus on the output and all the drafts (sampler.py
        # lines 445-447); 0.34's _bad_words_kernel reads the output, then the drafts from the input ids (lines 144-162)
        return bad_words_row(row, self.s.bad_words, out, repr(list(c))) if self.s.bad_words else row

    def _stated(self, q: Row) -> Row:
        """The q row handed to vLLM: the drafter's, with q(zero_token) stated 0 (not renormalised: a probability
        that underflowed), or all zero; a NaN row is modelled in `_recovered` (its every entry fails `> 0`)."""
        if self.q_row is not None:
            return tuple(ZERO for _ in q)
        if self.zero_token is not None:
            return tuple(ZERO if y == self.zero_token else x for y, x in enumerate(q))
        return q

    def _recovered(self, p: Row, v: Row) -> Row:
        """`sample_recovered_tokens_kernel` (lines 1071-1152): the argmax of max(p - v, 0) / E. A NaN q row:
        `tl.maximum(target_prob - draft_prob, 0.0)` (line 1128; PropagateNan.NONE, a maxnum: NaN gives 0) is 0
        everywhere, every score 0, and `tl.max(score, axis=0, return_indices=True)` (line 1144) takes the first: token 0."""
        if self.q_row == "nan":
            return self._point(0)
        return normalise([max(ZERO, p[y] - v[y]) for y in range(len(p))])

    def token_law(self, context: Sequence[int], n: int, *, progress: bool = False) -> Law:
        """Law of the first n tokens from `context` (rounds composed, `rheo_ref.laws.compose`; round laws
        memoised by the tokens the models see and the tokens still wanted; with penalties, by the whole output)."""
        self.prompt = len(context)
        key = None if self.s.history else self._key
        return token_law(self.round_law, context, n, label="vLLM", key=key, show=progress)


class BlockLaw(VLLMLaw):  # (min-p: not driven on the V2 path)
    """Block verification as the V2 model runner writes it
    (`vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py`), at temperature 1 without top-k / top-p:
    - `_compute_cumulative_log_p_kernel`: p_0 = 1, p_i = min(1, p_{i-1} P_i(x_i) / Q_i(x_i)) (Q_i(x_i) = 1
      for one-hot drafts);
    - `_rejection_kernel` (block branch): for i < k, h_i = r_i / (r_i + 1 - p_i) with
      r_i = sum_y max(p_i P_{i+1}(y) - Q_{i+1}(y), 0) (one-hot: p_i (1 - P_{i+1}(x_{i+1})),
      `_compute_global_residual_mass`), h_k = p_k; with one uniform u_i per step,
      τ = the largest i with u_i <= h_i (0 if none);
    - `_resample_kernel`: after x_1..x_τ, the token from norm(max(p_τ P_{τ+1} - Q_{τ+1}, 0)) (one-hot:
      P_{τ+1} without x_{τ+1}), or from P_{k+1} when τ = k (the bonus)."""

    def __init__(self, p: TableModel, q: TableModel, setting: Setting, *, draft_probs: bool = True) -> None:
        if setting.greedy or not setting.processing.identity:
            raise CaseError("block verification is modelled at temperature 1 without top-k / top-p")
        super().__init__(p, q, setting, draft_probs=draft_probs)

    def round_law(self, ctx: tuple[int, ...], limit: int) -> Law:
        out: Law = defaultdict(Fraction)
        k, V = self.s.k, self.raw.vocab_size

        def residual(c: tuple[int, ...], pt: Fraction, x: int) -> Row:
            P, Q = self.p.row(list(c)), (self.q.row(list(c)) if self.use_q else self._point(x))
            r = [max(ZERO, pt * P[y] - Q[y]) for y in range(V)]
            if not any(r):
                raise CaseError(f"block verification: empty residual at context {list(c)}")
            return normalise(r)

        def finish(xs: tuple[int, ...], w: Fraction) -> None:
            ps = [ONE]  # p_0 .. p_k
            for i, x in enumerate(xs):
                c = ctx + xs[:i]
                Q = self.q.row(list(c))[x] if self.use_q else ONE
                ps.append(min(ONE, ps[-1] * self.p.row(list(c))[x] / Q))
            h = []
            for i in range(1, k + 1):
                if i == k:
                    h.append(ps[k])
                    continue
                c = ctx + xs[:i]
                P, Qr = self.p.row(list(c)), (self.q.row(list(c)) if self.use_q else self._point(xs[i]))
                r = sum((max(ZERO, ps[i] * P[y] - Qr[y]) for y in range(V)), ZERO)
                den = r + 1 - ps[i]
                h.append(r / den if den > 0 else ONE)
            for tau in range(k + 1):  # P(τ = tau) = h_tau · Π_{j > tau} (1 - h_j), h_0 = 1
                wt = w * (h[tau - 1] if tau else ONE)
                for j in range(tau + 1, k + 1):
                    wt *= 1 - h[j - 1]
                if not wt:
                    continue
                acc = xs[:tau]
                if len(acc) >= limit:
                    out[acc[:limit]] += wt
                    continue
                c = ctx + acc
                row = self.p.row(list(c)) if tau == k else residual(c, ps[tau], xs[tau])
                for y, py in enumerate(row):
                    if py:
                        out[acc + (y,)] += wt * py

        def draft(xs: tuple[int, ...], w: Fraction) -> None:
            if len(xs) == k:
                finish(xs, w)
                return
            for x, qx in enumerate(self.q.row(list(ctx + xs))):
                if qx:
                    draft(xs + (x,), w * qx)

        draft((), ONE)
        return dict(out)


FLY_MARGIN = 1e-6  # an entropy this close to the threshold is refused: float32 decides it, not the law


def top_entropy(row: Row, top_k: int) -> float:
    """`vllm.v1.worker.gpu.spec_decode.fly.compute_fly_entropy`: -sum p log p over the top_k largest p (float)."""
    import math

    return -sum(float(x) * math.log(float(x)) for x in sorted(row, reverse=True)[:top_k] if x > 0)


class FlyLaw(VLLMLaw):
    """FLy (`rejection_sample_method="fly"`, vLLM 0.34's V2 runner; its config warns "FLy verification is a
    lossy speculative decoding method"), at temperature 1, as `_rejection_kernel` writes it
    (`vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py`, the FLY_WINDOW_SIZE branches):
    - each draft x_i is tested natively, accepted w.p. min(1, p_i(x_i) / v_i(x_i));
    - a native rejection at step i with no window pending opens a window when `can_defer` (the draft's
      target and draft log-probs are finite: always, for a draft drawn from q with the harness's finite log 0),
      i + W < k and the top-`top_k` entropy of p_i is >= the threshold; else the recovered token from
      norm((p_i - v_i)+) ends the round;
    - in a window opened at step j, a native acceptance at step i with i - j = W confirms it (x_j..x_i
      accepted, no window pending); a native rejection in the window ends the round with x_<j and the
      recovered token of step j (the statistics frozen at j);
    - all k accepted: the bonus from p_{k+1}."""

    def __init__(
        self, p: TableModel, q: TableModel, setting: Setting, *, window: int, threshold: float, top_k: int,
        draft_probs: bool = True,
    ) -> None:  # fmt: skip
        if setting.greedy or not setting.processing.identity:
            raise CaseError("FLy is modelled at temperature 1 without top-k / top-p")
        if not 1 <= window < setting.k:
            raise CaseError(f"fly window {window}; allowed: 1..k-1 = {setting.k - 1} (vLLM's SpeculativeConfig)")
        super().__init__(p, q, setting, draft_probs=draft_probs)
        self.window, self.threshold, self.top_k = window, threshold, top_k

    def _high(self, c: tuple[int, ...]) -> bool:
        h = top_entropy(self.p.row(list(c)), self.top_k)
        if abs(h - self.threshold) < FLY_MARGIN:
            raise CaseError(f"fly: the entropy {h:.9f} at context {list(c)} is within {FLY_MARGIN} of the threshold")
        return h >= self.threshold

    def round_law(self, ctx: tuple[int, ...], limit: int) -> Law:
        out: Law = defaultdict(Fraction)
        k, W, V = self.s.k, self.window, self.raw.vocab_size

        def emit(acc: tuple[int, ...], row: Row, w: Fraction) -> None:
            if len(acc) >= limit:
                out[acc[:limit]] += w
                return
            for y, py in enumerate(row):
                if py:
                    out[acc + (y,)] += w * py

        def recovered(xs: tuple[int, ...], j: int, w: Fraction) -> None:  # x_<j, then the residual of step j
            c = ctx + xs[:j]
            p = self.p.row(list(c))
            v = self.q.row(list(c)) if self.use_q else self._point(xs[j])
            emit(xs[:j], normalise([max(ZERO, p[y] - v[y]) for y in range(V)]), w)

        def walk(xs: tuple[int, ...], pending: int | None, w: Fraction) -> None:
            i = len(xs)
            if (len(xs) if pending is None else pending) >= limit:  # the first `limit` tokens are settled
                out[xs[:limit]] += w
                return
            c = ctx + xs
            p = self.p.row(list(c))
            if i == k:  # (a window always closes by step k - 1)
                emit(xs, p, w)
                return
            for x, qx in enumerate(self.q.row(list(c))):
                if not qx:
                    continue
                v = self.q.row(list(c)) if self.use_q else self._point(x)
                a = min(ONE, p[x] / v[x])
                if pending is None:
                    if a:
                        walk(xs + (x,), None, w * qx * a)
                    if a < 1:
                        if i + W < k and self._high(c):
                            walk(xs + (x,), i, w * qx * (1 - a))
                        else:
                            recovered(xs + (x,), i, w * qx * (1 - a))
                else:
                    if a:
                        walk(xs + (x,), None if i - pending == W else pending, w * qx * a)
                    if a < 1:
                        recovered(xs, pending, w * qx * (1 - a))

        walk((), None, ONE)
        return dict(out)


SURVIVAL_MARGIN = 1e-6  # a survival this close to a companion's (and not equal) is refused: float32 decides it


def _float32_exact(x: Fraction) -> bool:
    """Whether x is a float32 value with no rounding (a dyadic rational with at most 24 significant bits)."""
    d = x.denominator
    return d & (d - 1) == 0 and x.numerator.bit_length() <= 24


class AdaptiveLaw(VLLMLaw):
    """Adaptive verification (vLLM 0.34's V2 runner, `enable_adaptive_verification`, DSpark speculative decoding):
    the runner drafts k tokens a request, then `assign_draft_token_budget`
    (`vllm/v1/worker/gpu/spec_decode/adaptive_verification.py`, `_assign_draft_token_budget_kernel`) admits the
    batch's best `budget` draft slots by survival, the running product of the drafter's per-step confidences
    (lines 84-92), at the largest threshold that still admits `budget` slots (lines 95-110), ties handed out in
    request order (lines 113-125); each request verifies the admitted prefix of its drafts
    (`reallocate_drafts`, lines 551-555: cu_num_logits = cumsum(admitted + 1)) with token-level
    `rejection_sample`, and its bonus after the last admitted draft.

    Here the judged request is request 0 of a batch of two; request 1 is a companion whose confidences are fixed
    (`companion`). The drafter's confidence for step i is a function of the state before x_i, as DSpark's
    confidence head (`qwen3_dspark.compute_confidence` on the Markov embedding of x_{i-1}): c_i = max_y q(y | c +
    x_<i) (`confidence="state"`). `confidence="draft"` (c_i = q(x_i | c + x_<i), a confidence that sees its own
    draft) is the rule's counterfactual: the admitted count then depends on the first unverified draft."""

    def __init__(
        self, p: TableModel, q: TableModel, setting: Setting, *, budget: int, companion: Sequence[Fraction],
        confidence: str = "state", draft_probs: bool = True,
    ) -> None:  # fmt: skip
        self.validate(setting, budget=budget, companion=companion, confidence=confidence)
        super().__init__(p, q, setting, draft_probs=draft_probs)
        self.budget, self.confidence = budget, confidence
        s, self.companion = ONE, []
        for c in companion:
            s *= c
            self.companion.append(s)

    @staticmethod
    def validate(setting: Setting, *, budget: int, companion: Sequence[Fraction], confidence: str) -> None:
        if setting.greedy or not setting.processing.identity or setting.history or setting.min_p:
            raise CaseError("adaptive verification is modelled at temperature 1 without top-k / top-p / processors")
        if len(companion) != setting.k or any(not 0 <= c <= 1 for c in companion):
            raise CaseError(f"companion confidences {[str(c) for c in companion]}: k={setting.k} values in [0, 1]")
        if not 1 <= budget < 2 * setting.k:
            raise CaseError(f"budget={budget}; allowed: 1..2k-1 = {2 * setting.k - 1} (the runner calls the kernel "
                            "only below 2k slots)")  # fmt: skip
        if confidence not in ("state", "draft"):
            raise CaseError(f"confidence={confidence!r}; allowed: state, draft")

    def admitted(self, ctx: tuple[int, ...], xs: tuple[int, ...]) -> int:
        """Request 0's admitted count for drafts xs from ctx, as `_assign_draft_token_budget_kernel` decides it."""
        ours, s = [], ONE
        for i in range(self.s.k):
            row = self.q.row(list(ctx + xs[:i]))
            s *= max(row) if self.confidence == "state" else row[xs[i]]
            ours.append(s)
        for a in ours:
            for c in self.companion:
                if a != c and abs(float(a) - float(c)) < SURVIVAL_MARGIN:
                    raise CaseError(f"adaptive: survival {a} is within {SURVIVAL_MARGIN} of the companion's {c}")
                if a == c and not (_float32_exact(a) and _float32_exact(c)):
                    raise CaseError(f"adaptive: survival {a} ties the companion's in rationals, not surely in float32")
        slots = sorted(ours + self.companion, reverse=True)
        lo = slots[self.budget - 1]  # the largest threshold admitting `budget` slots (lines 95-107)
        ties_left = self.budget - sum(1 for v in slots if v > lo)  # (lines 108-110)
        return sum(1 for v in ours if v > lo) + min(sum(1 for v in ours if v == lo), ties_left)  # request 0 first

    def round_law(self, ctx: tuple[int, ...], limit: int) -> Law:
        out: Law = defaultdict(Fraction)
        k, V = self.s.k, self.raw.vocab_size

        def emit(acc: tuple[int, ...], row: Row, w: Fraction) -> None:
            if len(acc) >= limit:
                out[acc[:limit]] += w
                return
            for y, py in enumerate(row):
                if py:
                    out[acc + (y,)] += w * py

        def verify(xs: tuple[int, ...], m: int, j: int, w: Fraction) -> None:
            if j >= limit:
                out[xs[:limit]] += w
                return
            c = ctx + xs[:j]
            p = self.p.row(list(c))
            if j == m:  # every admitted draft accepted: the bonus
                emit(xs[:j], p, w)
                return
            x = xs[j]
            v = self.q.row(list(c)) if self.use_q else self._point(x)
            a = min(ONE, p[x] / v[x])
            if a:
                verify(xs, m, j + 1, w * a)
            if a < 1:
                emit(xs[:j], normalise([max(ZERO, p[y] - v[y]) for y in range(V)]), w * (1 - a))

        def draft(xs: tuple[int, ...], w: Fraction) -> None:
            if len(xs) == k:
                verify(xs, self.admitted(ctx, xs), 0, w)
                return
            for x, qx in enumerate(self.q.row(list(ctx + xs))):
                if qx:
                    draft(xs + (x,), w * qx)

        draft((), ONE)
        return dict(out)
