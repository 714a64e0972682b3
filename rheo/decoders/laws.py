"""Exact laws of transformers' speculative decoders on table models (docs/THIRD_PARTY.md §3).

Pure `Fraction`s, no torch: what `target.generate(..., do_sample=True)` emits when its models are
`TableLM`s of a case, as far as rheo knows the decoder exactly.

- `Processing` (`.table`, `.case`; `rheo.processed`, in `rheo.decoders.settings`, for every setting): the processed law that sampling
  targets when `generate` gets temperature / top-k / top-p (transformers' warpers, in its order:
  temperature, top-k, top-p), exactly, by `rheo_ref.processing` (the one implementation of logits
  processing). A
  temperature must be 1/k (rows to the power k); a boundary that float rounding decides (a top-k
  near-tie, a top-p cumulative mass within 1e-6 of 1 − top_p) is refused, and so is a cut between
  exactly tied tokens unless `ties` names who is kept (`rheo_ref.processing.keep_largest`: "all" as
  transformers' top-k, "low" / "high" ids first, or a rule per cut; `--gen ties=...`).
- `Chain.round_law`: one round of chain speculative sampling as transformers runs it
  (`_speculative_sampling`; prompt lookup's "sample y ~ p, keep x while y = x" is the same law
  with q the point mass on x): a *drafter* proposes tokens one at a time (a table draft, with
  transformers' confidence stop; or prompt lookup's block of candidates), each drafted x is
  accepted w.p. min(1, 1 − w + w·p(x)/q(x)) (`rheo_ref.verifier_laws.specinfer_accept`; w = 1 unless
  `assistant_ensemble_weight`), where q is the row the decoder *verifies* with, and a rejection
  emits a bonus from norm((p − q)+); after the last draft the bonus comes from p.
  With a table drafter, no confidence stop and the verified q equal to the drafted one this is
  rheo_ref's static chain (`branching [1]*k`, iid, specinfer, `ensemble_weight` w): the tests
  check that the two agree.
- `Chain.token_law`: rounds composed up to n tokens (`rheo_ref.laws.compose`: each prefix is played
  once, with the whole context, which prompt lookup reads).

Draft lengths: transformers caps a round's drafts at max_length − cur_len − 1 (`Chain.horizon`).
The samplers of `rheo.decoders.gate` generate n + 1 tokens and keep the first n, so a round that starts after
m < n tokens drafts min(k, n − m): exactly as many as can reach the first n tokens.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from rheo_ref import processing
from rheo_ref.errors import CaseError, TieError
from rheo_ref.laws import Law, compose
from rheo_ref.models import Case, Context, Row, TableModel, present
from rheo_ref.verifier_laws import specinfer_accept, specinfer_reject

ZERO, ONE = Fraction(0), Fraction(1)
FLOAT_MARGIN = 1e-6  # how close to a processing boundary an exact value may come before float rounding decides it

# A drafter: (round start context, tokens drafted so far this round) -> law of the next draft token,
# or [] when drafting stops.
Drafter = Callable[[Context, tuple[int, ...]], list[tuple[int, Fraction]]]
VerifyRow = Callable[[Context, int], Row]  # (context of the drafted position, drafted x) -> q in the ratio


# --- processing: temperature, top-k, top-p -----------------------------------------------------

MAX_POWER = 100  # the smallest temperature is 1/MAX_POWER


@dataclass(frozen=True)
class Processing:
    """transformers' sampling warpers as exact rationals: rows to the power `power` (temperature
    1/power), then top-k, then top-p (None: off); `ties`: who is kept of tokens tied across a top-k
    or top-p cut (`rheo_ref.processing.check_ties`; None: such a cut is refused). The subset of the one
    settings model (`sampling`: `rheo_ref.processing.Sampling`) that `generate`'s warpers take, parsed from
    `--gen` (`from_gen`) and applied by the same checked steps as `rheo.processed` (`processed_row`)."""

    power: int = 1
    top_k: int | None = None
    top_p: Fraction | None = None
    ties: processing.Ties = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "ties", processing.check_ties(self.ties))

    @classmethod
    def from_gen(cls, gen: dict[str, Any]) -> Processing:
        """From `generate` keyword arguments (temperature, top_k, top_p, and rheo's `ties`; others ignored)."""
        power = 1
        T = gen.get("temperature")
        if T is not None:
            if isinstance(T, bool) or not isinstance(T, (int, float)) or not T > 0:
                raise CaseError(f"temperature={T!r} must be a number > 0")
            if T < 1 / MAX_POWER:  # rows to the power 1/T: exact numbers of 1/T times the digits
                raise CaseError(f"temperature={T!r} is below 1/{MAX_POWER}; allowed: 1/k with 1 <= k <= {MAX_POWER}")
            power = round(1 / T)
            if power < 1 or abs(1 / T - power) > 1e-9:
                raise CaseError(
                    f"temperature={T!r}: the exact target law needs 1/T to be an integer (T = 1, 0.5, 0.25, ...)"
                )
        k = gen.get("top_k")
        if k is not None and (isinstance(k, bool) or not isinstance(k, int) or k < 0):
            raise CaseError(f"top_k={k!r} must be an integer >= 0 (0: off)")
        tp = gen.get("top_p")
        if tp is not None and (isinstance(tp, bool) or not isinstance(tp, (int, float)) or not 0 < tp <= 1):
            raise CaseError(f"top_p={tp!r} must be a number in (0, 1] (1: off)")
        return cls(power, k or None, None if tp is None or tp == 1 else Fraction(tp), gen.get("ties"))

    @property
    def identity(self) -> bool:
        return self.power == 1 and self.top_k is None and self.top_p is None

    @property
    def sampling(self) -> processing.Sampling:
        """These settings in the one model of them (`rheo_ref.processing.Sampling`, transformers' order)."""
        return processing.Sampling(
            temperature=Fraction(1, self.power),
            top_k=self.top_k or 0,
            top_p=ONE if self.top_p is None else self.top_p,
            ties=self.ties,
        )

    def row(self, row: Sequence[Fraction], where: str = "row") -> Row:
        """The processed row: the core's steps (`processed_row`), refusing what float rounding or a tie decides."""
        if self.identity:
            return processing.normalise(tuple(row))
        return processed_row(tuple(row), self.sampling, (), (), where)

    def table(self, table: TableModel) -> TableModel:
        if self.identity:
            return table
        rows = {k: self.row(v, f"{table.name} row {k!r}") for k, v in table.probs.items()}
        return TableModel(table.vocab_size, table.context_length, rows, table.name)

    def for_draft(self) -> Processing:
        """The processing `case` gives a draft table: the draft plays no part in the target law, so a
        cut between tied draft tokens that `ties` leaves unnamed keeps them all instead of being refused
        (a decoder's own law that processes its draft, as transformers does, calls `table` on it)."""
        return replace(self, ties=processing.merge_ties("all", self.ties))

    def case(self, case: Case) -> Case:
        """The case with p and q_samp processed (q_rank too, so one table stays one table); a tie at a
        cut of a draft row needs no rule (`for_draft`), one of a target row does."""
        if self.identity:
            return case
        if case.constraint is not None and (self.top_k is not None or self.top_p is not None):
            raise CaseError(
                f"top_k={self.top_k}, top_p={self.top_p} on a case with a constraint: the grammar masks the row before "
                "top-k/top-p cut it, which these table laws do not model; use the temperature alone"
            )
        dp = self.for_draft()
        ds = None if case.draft_sample is None else dp.table(case.draft_sample)
        draft = dp.table(case.draft) if present(case.draft) else case.draft  # absent: a decoder with its own
        return replace(case, draft=draft, target=self.table(case.target), draft_sample=ds)


# --- the steps float rounding or a tie could decide, checked, then the core's step -------------


def _near(a: Fraction, b: Fraction, scale: Fraction) -> bool:
    return a != b and abs(float(a - b)) <= FLOAT_MARGIN * float(scale)


def _checked_steps(s: processing.Sampling, where: str) -> tuple[tuple[str, Any], ...]:
    def greedy(w, s_, counts, seen):
        w = processing.normalise(w)
        best = max(w)
        near = [i for i, x in enumerate(w) if _near(x, best, best)]
        if near:
            raise CaseError(
                f"{where}: T = 0: tokens {near} are within float rounding of the largest probability {best}"
            )
        tied = [i for i, x in enumerate(w) if x == best]
        if len(tied) > 1 and s.greedy_ties is None:
            raise TieError(
                f"row: T = 0: the argmax is tied between tokens {tied} (probability {best} each); name the "
                f'tie rule: ties="low" (the lowest id, as numpy and torch argmax) or "high" (the highest id)'
            )
        return processing.one_hot(w, tied[0] if s.greedy_ties != "high" else tied[-1])

    def top_k(w, s_, counts, seen):
        r = processing.normalise(w)
        if 0 < s.top_k < len(r):
            kth = sorted(r, reverse=True)[s.top_k - 1]
            for x in r:
                if x < kth and _near(x, kth, kth):
                    raise CaseError(
                        f"{where}: top_k={s.top_k} boundary: {x} is within float rounding of the k-th value {kth}"
                    )
        return processing.STEPS["top_k"](w, s_, counts, seen)

    def top_p(w, s_, counts, seen):
        r = processing.normalise(w)
        cum = Fraction(0)
        for x in sorted(r)[:-1]:
            cum += x
            if s.top_p < 1 and abs(float(cum - (1 - s.top_p))) <= FLOAT_MARGIN:
                raise CaseError(
                    f"{where}: top_p={processing.show_p(s.top_p)}: a cumulative mass {cum} is within float rounding of 1 - top_p"
                )
        return processing.STEPS["top_p"](w, s_, counts, seen)

    def min_p(w, s_, counts, seen):
        r = processing.normalise(w)
        cut = s.min_p * max(r)
        close = [i for i, x in enumerate(r) if s.min_p and x and (x == cut or _near(x, cut, max(r)))]
        if close:
            raise CaseError(
                f"{where}: min_p={processing.show_p(s.min_p)}: tokens {close} have a probability within float rounding "
                f"of min_p·max = {cut}, so float rounding decides whether they are kept"
            )
        return processing.STEPS["min_p"](w, s_, counts, seen)

    steps: list[tuple[str, Any]] = [("top_k", top_k), ("top_p", top_p), ("min_p", min_p)]
    if s.temperature == 0:
        steps.append(("temperature", greedy))
    return tuple(steps)


def processed_row(
    raw: tuple, s: processing.Sampling, emitted: tuple[int, ...], seen: tuple[int, ...], where: str
) -> tuple:
    """The processed, normalised row (exact) after `emitted` output tokens; `seen`: prompt and output."""
    if not any(raw):
        raise CaseError(
            f"{where}: no token has positive probability (a grammar state whose tokens the target never emits)"
        )
    counts = [emitted.count(t) for t in range(len(raw))]
    return processing.process(raw, s, counts, seen, replace=_checked_steps(s, where), where=where)


# --- drafters ----------------------------------------------------------------------------------


def table_drafter(q: TableModel, threshold: Fraction = ZERO) -> Drafter:
    """Draw the next draft from q(·|context); transformers' `assistant_confidence_threshold` stops
    drafting after a token x drawn with q(x) < threshold (`ConfidenceCriteria`)."""
    _check_threshold(q, threshold)

    def draft(start: Context, drafted: tuple[int, ...]) -> list[tuple[int, Fraction]]:
        if drafted and q.row(start + drafted[:-1])[drafted[-1]] < threshold:
            return []
        return [(x, qx) for x, qx in enumerate(q.row(start + drafted)) if qx]

    return draft


def _check_threshold(q: TableModel, threshold: Fraction) -> None:
    if threshold:
        for key, row in q.probs.items():
            for x in row:
                if x and abs(float(x - threshold)) <= FLOAT_MARGIN:
                    raise CaseError(
                        f"{q.name} row {key!r}: entry {x} is within float rounding of "
                        f"assistant_confidence_threshold {float(threshold):g}"
                    )


def lookup_candidates(ids: Sequence[int], num_tokens: int, max_ngram: int) -> list[int]:
    """transformers' `PromptLookupCandidateGenerator.get_candidates` on a context (no EOS, no
    logits processor, no max_length cut): the tokens after the first earlier occurrence of the
    longest matching suffix n-gram (n = max_ngram .. 1)."""
    n_ids = len(ids)
    for n in range(min(max_ngram, n_ids - 1), 0, -1):
        suffix = list(ids[-n:])
        for start in range(n_ids - n + 1):
            if list(ids[start : start + n]) == suffix:
                s, e = start + n, min(start + n + num_tokens, n_ids)
                if s < e:
                    return list(ids[s:e])
    return []


def lookup_drafter(num_tokens: int, max_ngram: int = 2) -> Drafter:
    """Prompt lookup: the round's candidate block, one point mass at a time."""

    def draft(start: Context, drafted: tuple[int, ...]) -> list[tuple[int, Fraction]]:
        cands = lookup_candidates(start, num_tokens, max_ngram)
        return [(cands[len(drafted)], ONE)] if len(drafted) < len(cands) else []

    return draft


def point_mass(V: int) -> VerifyRow:
    """Verify with the point mass on the drafted token (a deterministic drafter, honestly stated)."""
    return lambda ctx, x: tuple(ONE if t == x else ZERO for t in range(V))


def table_row(q: TableModel) -> VerifyRow:
    """Verify with q(·|context) (what a table drafter drew from, or another table: a mismatch)."""
    return lambda ctx, x: q.row(ctx)


# --- laws --------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Chain:
    """One decoder's rounds: target rows, drafter, the q it verifies with, ensemble weight, and the
    draft cap: at most `cap` drafts a round, and with `horizon` (generate's max_new_tokens) at most
    horizon − m − 1 in a round that starts after m new tokens (transformers' `_calculate_new_tokens`)."""

    p: TableModel
    drafter: Drafter
    verify_row: VerifyRow
    weight: Fraction = ONE
    cap: int = 1
    horizon: int | None = None

    def round_law(self, start: Context, m: int = 0) -> Law:
        """Law of what one round emits from `start`, m new tokens into the generation."""
        cap = self.cap if self.horizon is None else max(0, min(self.cap, self.horizon - m - 1))
        out: Law = defaultdict(Fraction)

        def level(drafted: tuple[int, ...], prob: Fraction) -> None:
            ctx = start + drafted
            r = self.p.row(ctx)
            opts = self.drafter(start, drafted) if len(drafted) < cap else []
            if not opts:
                _bonus(out, drafted, prob, r)
                return
            for x, px in opts:
                q = self.verify_row(ctx, x)
                a = specinfer_accept(r, q, x, self.weight) if q[x] else ONE  # q(x) = 0: p/q = inf, accepted
                if a:
                    level(drafted + (x,), prob * px * a)
                if a < 1:
                    _bonus(out, drafted, prob * px * (1 - a), specinfer_reject(r, q))

        level((), ONE)
        return dict(out)

    def token_law(self, context: Context, n: int) -> Law:
        """Law of the first n tokens from `context` (rounds composed, `rheo_ref.laws.compose`)."""
        start = len(context)
        return compose(lambda ctx, m: self.round_law(ctx, len(ctx) - start), context, n)


def _bonus(out: Law, head: tuple[int, ...], prob: Fraction, r: Row) -> None:
    if prob:
        for y, ry in enumerate(r):
            if ry:
                out[head + (y,)] += prob * ry


def parse_logit_bias(text: object) -> tuple[tuple[int, Fraction], ...]:
    """--gen logit_bias of a served decoder: "t:f,t:f" token:factor pairs, the bias ln f on token t (f > 0, a
    rational: 4, 1/2, 0.25), as (token, factor) pairs in the order given."""
    pairs = []
    for part in str(text).split(","):
        tok, sep, f = part.partition(":")
        try:
            factor = Fraction(f.strip())
        except (ValueError, ZeroDivisionError):
            factor = Fraction(-1)
        if not sep or not tok.strip().isdigit() or factor <= 0:
            raise CaseError(
                f"logit_bias={text!r}: write token:factor pairs with factors > 0 (the bias ln factor), e.g. 3:4,0:1/2"
            )
        pairs.append((int(tok), factor))
    return tuple(pairs)


def check_exact_float(value: Any, name: str) -> Fraction:
    """A float option read as the rational it denotes (0.4 -> 2/5 when that is within 1e-12)."""
    f = Fraction(value).limit_denominator(10**6)
    if not math.isclose(float(f), float(value), rel_tol=0, abs_tol=1e-12):
        raise CaseError(f"{name}={value!r} is not a short rational; give e.g. 0.4 or 0.25")
    return f
