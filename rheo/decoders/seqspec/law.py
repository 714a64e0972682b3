"""The exact laws of sequential-speculative-decoding 0.1.1's three rounds as coded (docs/THIRD_PARTY.md §7),
in pure Fractions.

One round from a context: the draft draws x_1..x_γ from the processed q (x_i's row is q of the context
and x_1..x_{i−1}); p_i, q_i are the processed rows at position i (0-based below, as the code indexes),
P_i = Π_{j≤i} p_j(x_j), Q_i likewise, r_i = P_i / Q_i. A coin `u < a` (u = torch.rand) is accepted
w.p. a clipped to [0, 1]; a NaN (0/0) never is, +inf always is. The round returns the accepted
tokens and then:
- `standard` (standard_sd.py): the chain rule of Leviathan et al.: x_i accepted w.p. min(1, p_i/q_i);
  the first rejection resamples from norm((p_i − q_i)+); all accepted: a bonus from p_γ;
- `naive_hsd` (naive_hsd.py): a backward scan: the whole draft accepted w.p. min(1, r_{γ−1}); a
  rejection at t sets τ = t − 1 and the next coin to D(p,q)/max(D(p,q), D(q,p)) with
  D(p,q) = Σ_y (P_τ p_{τ+1}(y) − Q_τ q_{τ+1}(y))+; the scan stops at the first accepted coin (τ = t)
  or after t = 0 (τ = −1). τ = γ−1: a bonus from p_γ. Else x_0..x_τ are kept and γ−1−τ tokens are
  drawn, each from norm((P p − Q q)+) (p if that sums to 0), where p, q start as p_{τ+1}, q_{τ+1} and
  P, Q as P_τ, Q_τ (1 at τ = −1), and after a token y: P ← P p(y), Q ← Q q(y), p, q ← the rows after y.
  The round emits γ tokens after a rejection, γ + 1 after a full acceptance;
- `capped_hsd` (capped_hsd.py): the same scan with capped ratios, transcribed line by line from the
  code: the first coin is min(1, r*) with `compute_capped_prefix_ratio(ratios, γ − 1)`, which reads
  r_{γ−2} (the ratio of the first γ − 1 tokens, not of all γ: lines 68-75) capped by its largest
  prefix ratio above 1; a rejection at t sets τ = t − 1 and, for τ ≥ 0, the next coin to
  D_cap(p,q)/D_cap(q,p) of `compute_capped_branch_divergences(τ)` (prefix x_0..x_{τ−1}, rows p_τ,
  q_τ); τ < γ−1: x_0..x_τ kept and one token from norm(max(q_{τ+1}·Q_{τ−1}·(r*_τ − 1), 0)), r*_τ the
  vector of that call at τ (at τ = −1 Python's index −1 reads the rows of the *last* position
  and the empty prefix). A row summing to 0 makes torch.multinomial raise: the outcome `CRASH`.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Callable
from fractions import Fraction

from rheo.decoders.law_progress import LawProgress
from rheo.decoders.laws import Processing
from rheo.decoders.seqspec.sampler import CRASH, METHODS
from rheo_ref.errors import CaseError
from rheo_ref.laws import Law, compose, normalise
from rheo_ref.models import Context, Row, TableModel

Move = tuple[tuple[int, ...], int]  # (the tokens emitted, the decoder state after them)
ROUND, CRASHED = 0, -1  # states: a round's start (for standard: 0 drafts accepted), a crashed run
BAR_DRAFTS = 10_000  # a round law over this many drafts shows a bar (on a terminal)


ZERO, ONE = Fraction(0), Fraction(1)
NAN = None  # 0/0 in the package's floats: a coin that is never accepted


def coin(num: Fraction, den: Fraction) -> Fraction:
    """P(num/den > u) for u uniform on [0, 1), with IEEE division: x/0 = inf (x > 0), 0/0 = NaN."""
    if den == 0:
        return ONE if num > 0 else ZERO
    return max(ZERO, min(ONE, num / den))


class SeqSpec:
    """The law of `speculative_generate(method=…, gamma=…)` on tables p (target) and q (draft), both
    processed by `proc` (see the module docstring)."""

    def __init__(self, p: TableModel, q: TableModel, proc: Processing, *, method: str, gamma: int) -> None:
        if method not in METHODS:
            raise CaseError(f"seqspec method {method!r}; allowed: {', '.join(METHODS)}")
        if isinstance(gamma, bool) or not isinstance(gamma, int) or gamma < 1:
            raise CaseError(f"gamma={gamma!r} must be an integer >= 1")
        self.p, self.q = proc.table(p), proc.table(q)
        self.method, self.gamma = method, gamma
        self.L, self.V = p.context_length, p.vocab_size
        self._rounds: dict[tuple, Law] = {}
        self._moves: dict[tuple, dict[Move, Fraction]] = {}
        self._progress: LawProgress | None = None
        self._cut: int | None = None  # the tokens asked for: round laws are cut to them
        self._show: bool | None = None
        self._verify: Callable = {"standard": self._standard, "naive_hsd": self._naive, "capped_hsd": self._capped}[
            method
        ]

    def _key(self, ctx: Context) -> tuple[int, ...]:
        return tuple(ctx[-self.L :]) if self.L else ()

    def rows(self, ctx: tuple[int, ...], xs: tuple[int, ...]) -> tuple[list[Row], list[Row]]:
        """The processed p and q rows at positions 0..len(xs) of a draft xs after ctx."""
        ps = [self.p.row(list(ctx + xs[:i])) for i in range(len(xs) + 1)]
        qs = [self.q.row(list(ctx + xs[:i])) for i in range(len(xs) + 1)]
        return ps, qs

    def round_law(self, ctx: tuple[int, ...], cut: int | None = None) -> Law:
        """Law of the tokens one round appends to ctx, each outcome cut to its first `cut` tokens (None:
        whole); a CRASH round: the single outcome (CRASH,). Enumerates the V^γ drafts (a bar on a
        terminal when they are many): the hsd rules' first coin reads the whole draft."""
        if cut is not None and cut > self.gamma:
            cut = None  # a round emits at most γ + 1 tokens
        key = (self._key(ctx), cut)
        if key in self._rounds:
            return self._rounds[key]
        from tqdm import tqdm

        out: Law = defaultdict(Fraction)
        drafts = itertools.product(range(self.V), repeat=self.gamma)
        total = self.V**self.gamma
        progress = self._progress
        bar = tqdm(
            drafts,
            total=total,
            desc=f"seqspec {self.method} round law after {list(ctx[-3:])}",
            unit="draft",
            disable=(None if self._show is None else not self._show) if total >= BAR_DRAFTS else True,
            leave=False,
        )
        refills: dict[tuple[int, tuple[int, ...]], Fraction] = defaultdict(Fraction)  # naive_hsd's, by kept prefix
        for k, xs in enumerate(bar):
            if progress is not None:
                progress.detail = f"verifying draft {list(xs)}, {k:,} of {total:,} drafts done at this round's start"
            ps, qs = self.rows(ctx, xs)
            w = ONE
            for i, x in enumerate(xs):
                w *= qs[i][x]
                if not w:
                    break
            if not w:
                continue
            pending: dict[tuple[int, tuple[int, ...]], Fraction] = defaultdict(Fraction)
            for s, pr in self._verify(ctx, xs, ps, qs, cut, pending).items():
                out[s] += w * pr
            for where, pr in pending.items():
                refills[where] += w * pr
        bar.close()
        for (tau, kept), w in refills.items():
            self._naive_refill(out, ctx, tau, kept, w, cut)
        if progress is not None:
            progress.detail = ""
        self._rounds[key] = dict(out)
        return self._rounds[key]

    # --- the three verifiers: law of the round's new tokens given the draft xs

    def _standard(self, ctx: tuple, xs: tuple, ps: list[Row], qs: list[Row], cut: int | None, pending: dict) -> Law:
        out: Law = defaultdict(Fraction)
        w = ONE
        for t, x in enumerate(xs):
            a = coin(ps[t][x], qs[t][x])
            res = normalise([max(ZERO, ps[t][y] - qs[t][y]) for y in range(self.V)], on_zero="none")
            if a < 1:
                _draw(out, xs[:t], res, w * (1 - a), cut)
            w *= a
            if not w:
                return dict(out)
        _draw(out, xs, ps[self.gamma], w, cut)
        return dict(out)

    def _naive(self, ctx: tuple, xs: tuple, ps: list[Row], qs: list[Row], cut: int | None, pending: dict) -> Law:
        """The round's law given the draft xs; the refills after a rejection (which depend on the kept
        prefix only) are added to `pending` by (τ, kept prefix), for round_law to walk once per prefix."""
        g, V = self.gamma, self.V
        P, Q = _prefix(ps, xs), _prefix(qs, xs)
        out: Law = defaultdict(Fraction)
        a, w = coin(P[g - 1], Q[g - 1]), ONE
        for t in range(g - 1, -1, -1):
            if a:
                self._naive_tail(out, pending, xs, t, ps, w * a, cut)
            w *= 1 - a
            if not w:
                return dict(out)
            tau = t - 1  # the code computes the next coin with P[tau], Q[tau]: at tau = -1 that is
            # Python's last element, but the loop ends there and the coin is never used
            dpq = sum((max(ZERO, P[tau] * ps[tau + 1][y] - Q[tau] * qs[tau + 1][y]) for y in range(V)), ZERO)
            dqp = sum((max(ZERO, Q[tau] * qs[tau + 1][y] - P[tau] * ps[tau + 1][y]) for y in range(V)), ZERO)
            a = coin(dpq, max(dpq, dqp))
        self._naive_tail(out, pending, xs, -1, ps, w, cut)
        return dict(out)

    def _naive_tail(self, out: Law, pending: dict, xs: tuple, tau: int, ps, w: Fraction, cut: int | None) -> None:
        g = self.gamma
        if tau == g - 1:
            _draw(out, xs, ps[g], w, cut)
        else:
            pending[(tau, xs[: tau + 1])] += w

    def _naive_refill(self, out: Law, ctx: tuple, tau: int, kept: tuple, w: Fraction, cut: int | None) -> None:
        """x_0..x_τ kept, then γ − 1 − τ tokens each from norm((P·p − Q·q)+) (p where that is 0)."""
        ps, qs = self.rows(ctx, kept)
        P, Q = _prefix(ps, kept), _prefix(qs, kept)
        Pc, Qc = (ONE, ONE) if tau == -1 else (P[tau], Q[tau])

        def walk(seq: tuple, p: Row, q: Row, Pc: Fraction, Qc: Fraction, w: Fraction, left: int) -> None:
            if left == 0 or (cut is not None and len(seq) >= cut):
                out[seq[:cut]] += w
                return
            res = normalise([max(ZERO, Pc * p[y] - Qc * q[y]) for y in range(self.V)], on_zero="none") or p
            for y, ry in enumerate(res):
                if ry:
                    nxt = ctx + seq + (y,)
                    walk(
                        seq + (y,), self.p.row(list(nxt)), self.q.row(list(nxt)), Pc * p[y], Qc * q[y], w * ry, left - 1
                    )

        walk(kept, ps[tau + 1], qs[tau + 1], Pc, Qc, w, self.gamma - 1 - tau)

    def _capped(self, ctx: tuple, xs: tuple, ps: list[Row], qs: list[Row], cut: int | None, pending: dict) -> Law:
        g = self.gamma
        ratios = [pr / qr for pr, qr in zip(_prefix(ps, xs), _prefix(qs, xs))]
        out: Law = defaultdict(Fraction)
        a, w = min(ONE, _capped_prefix_ratio(ratios, g - 1)), ONE
        for t in range(g - 1, -1, -1):
            if a:
                self._capped_tail(out, xs, t, ps, qs, ratios, w * a, cut)
            w *= 1 - a
            if not w:
                return dict(out)
            tau = t - 1
            if tau >= 0:
                _, dpq, dqp = self._capped_divergences(xs, ps, qs, tau, ratios)
                a = coin(dpq, dqp)
        self._capped_tail(out, xs, -1, ps, qs, ratios, w, cut)
        return dict(out)

    def _capped_divergences(self, xs: tuple, ps, qs, t: int, ratios: list[Fraction]):
        """compute_capped_branch_divergences(t), line by line (t = −1 reads position −1 = γ−1)."""
        m = _max_prefix_index(ratios[:t])
        divide, q_prefix, p_prefix = ONE, ONE, ONE
        for i in range(t):
            q_prefix *= qs[i][xs[i]]
            p_prefix *= ps[i][xs[i]]
            if m >= 0:
                m -= 1
            if m == 0:
                divide = p_prefix / q_prefix
        q_dist, p_dist = qs[t if t >= 0 else self.gamma + t], ps[t if t >= 0 else self.gamma + t]
        q_joint = [q_prefix * v for v in q_dist]
        p_joint = [p_prefix * v for v in p_dist]
        r_star = [(pj / qj if qj > 0 else ZERO) / divide for pj, qj in zip(p_joint, q_joint)]
        dpq = sum(((r - 1) * qj for r, qj in zip(r_star, q_joint) if r > 1), ZERO)
        dqp = sum(((1 - r) * qj for r, qj in zip(r_star, q_joint) if r <= 1), ZERO)
        return r_star, dpq, dqp

    def _capped_tail(self, out: Law, xs: tuple, tau: int, ps, qs, ratios, w: Fraction, cut: int | None) -> None:
        g = self.gamma
        if tau == g - 1:
            _draw(out, xs, ps[g], w, cut)
            return
        r_star, _, _ = self._capped_divergences(xs, ps, qs, tau, ratios)
        q_prefix = ONE
        for i in range(tau):
            q_prefix *= qs[i][xs[i]]
        res = normalise([max(ZERO, qv * q_prefix * (r - 1)) for qv, r in zip(qs[tau + 1], r_star)], on_zero="none")
        _draw(out, xs[: tau + 1], res, w, cut)

    # --- many rounds, one token (standard) or one round (hsd) at a time

    def moves(self, state: int, ctx: tuple[int, ...]) -> dict[Move, Fraction]:
        """The law of what comes next from a decoder state, with the state after it. `standard`: one
        token (state = drafts accepted this round: a draft accepted moves to the next position, a
        rejection's token or the bonus to a new round, ROUND). The hsd rules read the whole draft
        before their first coin: one round, cut to the tokens asked for (a crash: CRASHED)."""
        key = (state, self._key(ctx), None if self.method == "standard" else self._cut)  # hsd: cut rounds
        if key in self._moves:
            return self._moves[key]
        if self.method != "standard":
            law = self.round_law(ctx, self._cut)
            self._moves[key] = {(s, CRASHED if s == (CRASH,) else ROUND): pr for s, pr in law.items()}
            return self._moves[key]
        p, q = self.p.row(list(ctx)), self.q.row(list(ctx))
        out: dict[Move, Fraction] = defaultdict(Fraction)
        if state == self.gamma:  # every draft accepted: the bonus from p
            for y, py in enumerate(p):
                if py:
                    out[((y,), ROUND)] += py
        else:
            rejected = ZERO
            for x, qx in enumerate(q):
                if qx:
                    a = coin(p[x], qx)
                    if a:
                        out[((x,), state + 1)] += qx * a
                    rejected += qx * (1 - a)
            if rejected:  # (p − q)+ sums to 0 only where p = q, where nothing is rejected
                res = normalise([max(ZERO, p[y] - q[y]) for y in range(self.V)], on_zero="none")
                for y, ry in enumerate(res or ()):
                    if ry:
                        out[((y,), ROUND)] += rejected * ry
        self._moves[key] = dict(out)
        return self._moves[key]

    def token_law(self, context: Context, n: int, *, show: bool | None = None) -> Law:
        """Law of the first n tokens speculative_generate emits after `context` (a crash: n tokens CRASH):
        the moves composed (`rheo_ref.laws.compose`; a crash ends the decode). `show`: the progress bars
        (None: on a terminal only)."""
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise CaseError(f"n={n!r} must be an integer >= 1")
        self._cut, self._show = n, show  # a law of m <= n tokens is the same whatever n cut the rounds to
        describe = lambda state: "a round's start" if state == ROUND else f"draft position {state}"
        what = f"seqspec {self.method} exact law"
        with LawProgress(what, n, context, state_name="at", describe=describe, show=show) as progress:
            self._progress = progress
            try:
                law = compose(
                    lambda ctx, m, state: self.moves(state, ctx), context, n, state=ROUND, stop=CRASH, progress=progress
                )
            finally:
                self._progress = None
        out = {s: p for s, p in law.items() if CRASH not in s}  # a crash is a crash wherever it happens:
        crashed = sum((p for s, p in law.items() if CRASH in s), ZERO)  # the sample is n tokens CRASH
        if crashed:
            out[(CRASH,) * n] = crashed
        return out


def _prefix(rows: list[Row], xs: tuple) -> list[Fraction]:
    """[Π_{j≤i} rows[j][xs[j]] for i < len(xs)]."""
    out, acc = [], ONE
    for r, x in zip(rows, xs):
        acc *= r[x]
        out.append(acc)
    return out


def _draw(out: Law, kept: tuple, row: Row | None, w: Fraction, cut: int | None) -> None:
    """kept, then one token from row (None: a row summing to 0, which torch.multinomial refuses);
    cut to the first `cut` tokens (a crash is a crash wherever it happens)."""
    if not w:
        return
    if row is None:
        out[(CRASH,)] += w
        return
    if cut is not None and len(kept) >= cut:
        out[kept[:cut]] += w
        return
    for y, ry in enumerate(row):
        if ry:
            out[kept + (y,)] += w * ry


def _max_prefix_index(ratios: list[Fraction]) -> int:
    """compute_maximum_prefix_ratio_index: 1-based index of the first largest ratio above 1, else 0."""
    m, best = 0, ZERO
    for i, r in enumerate(ratios):
        if r > 1 and r > best:
            best, m = r, i + 1
    return m


def _capped_prefix_ratio(ratios: list[Fraction], t: int) -> Fraction:
    """compute_capped_prefix_ratio(ratios, t): reads ratios[t − 1] (Python's last at t = 0)."""
    m = _max_prefix_index(ratios[:t])
    return ratios[t - 1] if m == 0 else ratios[t - 1] / ratios[m - 1]
