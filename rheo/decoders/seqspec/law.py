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

How the law is built. `standard` goes one token at a time (`SeqSpec.moves`: from a draft position, the
next token and the position after it). The hsd rules' first coin reads the whole draft, so their step
is one round, cut to the n tokens asked for; the round is not walked draft by draft (V^γ drafts, γ
coins each) but over the draft's prefixes, once each (`SeqSpec._prefix_walk`): every coin after the
first reads a prefix only (naive: P_τ, Q_τ and the rows after x_0..x_τ; capped: x_0..x_{τ−1}), so the
probability that the backward scan reaches a prefix's coin is a sum over its children, and the stops
below it are added where they happen. The draft's last token is summed in closed form: naive's first
coin over it is Σ_y (q(y) − r p(y))+ with r the prefix's ratio (`_Hinge`, O(log V) from sorted ratios),
and capped's first coin does not read it. Outcomes are told apart only up to n tokens (a stop deeper
than n adds to its first n tokens). The walk visits the V^(γ−1) prefixes of γ − 1 tokens (20,736 at
V = 12, γ = 5) with a few Fraction operations each; no shorter walk exists in general: the probability of even the
first token sums min(P(x), Q(x)) over every draft x that starts with it. A bar over the prefixes shows
on a terminal, and a stopped run names the prefix it was at.
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterator
from fractions import Fraction
from typing import Any

from rheo.decoders.law_progress import LawProgress
from rheo.decoders.laws import Processing
from rheo.decoders.seqspec.sampler import CRASH, METHODS
from rheo_ref.errors import CaseError
from rheo_ref.laws import Law, compose, normalise
from rheo_ref.models import Context, Row, TableModel

Move = tuple[tuple[int, ...], int]  # (the tokens emitted, the decoder state after them)
ROUND, CRASHED = 0, -1  # states: a round's start (for standard: 0 drafts accepted), a crashed run
BAR_PREFIXES = 1_000  # a round law over this many draft prefixes shows a bar (on a terminal)


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
        self._rows: dict[tuple[int, ...], tuple[Row, Row]] = {}
        self._hinges: dict[tuple[int, ...], _Hinge] = {}

    def _key(self, ctx: Context) -> tuple[int, ...]:
        return tuple(ctx[-self.L :]) if self.L else ()

    def rows(self, ctx: tuple[int, ...], xs: tuple[int, ...]) -> tuple[list[Row], list[Row]]:
        """The processed p and q rows at positions 0..len(xs) of a draft xs after ctx."""
        ps = [self.p.row(list(ctx + xs[:i])) for i in range(len(xs) + 1)]
        qs = [self.q.row(list(ctx + xs[:i])) for i in range(len(xs) + 1)]
        return ps, qs

    def rows_after(self, ctx: tuple[int, ...]) -> tuple[Row, Row]:
        """The processed p and q rows after ctx (memoised by visible context)."""
        key = self._key(ctx)
        got = self._rows.get(key)
        if got is None:
            got = self._rows[key] = (self.p.row(list(ctx)), self.q.row(list(ctx)))
        return got

    def _hinge(self, ctx: tuple[int, ...]) -> _Hinge:
        key = self._key(ctx)
        got = self._hinges.get(key)
        if got is None:
            got = self._hinges[key] = _Hinge(*self.rows_after(ctx))
        return got

    def round_law(self, ctx: tuple[int, ...], cut: int | None = None) -> Law:
        """Law of the tokens one round appends to ctx, each outcome cut to its first `cut` tokens (None:
        whole); a CRASH round: the single outcome (CRASH,). `standard`: its token-level moves composed;
        the hsd rules: one walk over the draft's prefixes (a bar on a terminal when they are many)."""
        if cut is not None and cut > self.gamma:
            cut = None  # a round emits at most γ + 1 tokens
        key = (self._key(ctx), cut)
        if key in self._rounds:
            return self._rounds[key]
        if self.method == "standard":
            law = self._standard_round(ctx, cut)
        else:
            law = self._prefix_walk(ctx, cut)
        self._rounds[key] = law
        return law

    def _standard_round(self, ctx: tuple[int, ...], cut: int | None) -> Law:
        out: Law = defaultdict(Fraction)

        def walk(state: int, seq: tuple[int, ...], w: Fraction) -> None:
            for (s, nxt), pm in self.moves(state, ctx + seq).items():
                if nxt == ROUND or (cut is not None and len(seq) + 1 >= cut):
                    out[(seq + s)[:cut]] += w * pm
                else:
                    walk(nxt, seq + s, w * pm)

        walk(ROUND, (), ONE)
        return dict(out)

    # --- the hsd rules: one walk over the draft's prefixes

    def _prefix_walk(self, ctx: tuple[int, ...], cut: int | None) -> Law:
        """One round of naive_hsd or capped_hsd after ctx, cut to `cut` tokens, walked over the draft's
        prefixes π (x_0..x_{ℓ−1}, depth-first, q(π) > 0) instead of its V^γ drafts (see `_naive_node`,
        `_capped_node`): every coin after the first reads a prefix only, and the last draft token is
        summed in closed form below depth γ − 1 (naive) or never read by a coin (capped)."""
        from tqdm import tqdm

        g = self.gamma
        n = g + 1 if cut is None else cut  # outcomes are told apart up to n tokens
        total = self.V ** (g - 1)  # the prefixes of γ − 1 tokens, where the walk turns back
        bar = tqdm(
            total=total,
            desc=f"seqspec {self.method} round law after {list(ctx[-3:])}",
            unit="prefix",
            disable=(None if self._show is None else not self._show) if total >= BAR_PREFIXES else True,
            leave=False,
        )
        walk = _Walk(ctx, n, cut, bar, (self.V, g), self._progress)
        try:
            if self.method == "naive_hsd":
                walk.refills[(-1, ())] += self._naive_node(walk, (), ONE, ONE)  # every coin rejected
                for (tau, kept), w in walk.refills.items():
                    self._naive_refill(walk.out, ctx, tau, kept, w, cut)
            else:
                self._capped_node(walk, (), ONE, ONE, (), ONE)
                first_q = self.rows_after(ctx)[1]
                for after, w in walk.ends.items():  # everything rejected: one token from the τ = −1 row
                    p, q = self.rows_after(ctx + after)
                    r_star = [p[y] / q[y] if q[y] > 0 else ZERO for y in range(self.V)]
                    res = normalise([max(ZERO, qv * (r - 1)) for qv, r in zip(first_q, r_star)], on_zero="none")
                    _draw(walk.out, (), res, w, cut)
        finally:
            bar.close()
        if self._progress is not None:
            self._progress.detail = ""  # kept when stopped: where() names the prefix
        return dict(walk.out)

    def _enter(self, walk: _Walk, pi: tuple[int, ...]) -> tuple[tuple[int, ...], Row, Row, int]:
        """Both walks' step into the draft prefix π: (the context after it, p's and q's rows there, its
        depth); a prefix of γ − 1 tokens, where the walk turns back, counts as walked."""
        walk.enter(pi)
        here = walk.ctx + pi
        p, q = self.rows_after(here)
        if len(pi) == self.gamma - 1:
            walk.tick()
        return here, p, q, len(pi)

    def _children(
        self, walk: _Walk, pi: tuple[int, ...], P: Fraction, Q: Fraction, p: Row, q: Row
    ) -> Iterator[tuple[int, tuple[int, ...], Fraction, Fraction]]:
        """π's children the draft can reach (q(y) > 0): (y, πy, p(πy), q(πy)); the others count as walked."""
        for y in range(self.V):
            if not q[y]:
                walk.skip(len(pi) + 1)
                continue
            yield y, pi + (y,), P * p[y], Q * q[y]

    def _naive_node(self, walk: _Walk, pi: tuple[int, ...], P: Fraction, Q: Fraction) -> Fraction:
        """N(π): over the draft's completions after π (drawn from q), the probability that naive_hsd's
        backward scan reaches π's coin (every coin at a longer prefix rejected); adds the scan's stops below
        π to the walk. P, Q: p(π), q(π). N(π) = Σ_y q(y) N(πy) (1 − c(πy)) with c the coin of a prefix
        (min(1, P/Q) for the whole draft); below depth γ − 1 the sum is Σ_y (q(y) − r p(y))+, r = P/Q."""
        g, ctx = self.gamma, walk.ctx
        here, p, q, depth = self._enter(walk, pi)
        if depth == g - 1:
            if walk.n < g:  # the draft's last token never shows in the n tokens: closed form
                h = self._hinge(here)
                below = h.neg(P / Q)
                if h.sq > below:  # the whole draft accepted: Q·Σ_y min(q(y), r p(y))
                    walk.out[pi[: walk.n]] += Q * (h.sq - below)
                return below
        below = ZERO
        for y, child, P2, Q2 in self._children(walk, pi, P, Q, p, q):
            if depth + 1 == g:  # the whole draft: the first coin
                c, reach = coin(P2, Q2), ONE
                if c:
                    _draw(walk.out, child, self.rows_after(ctx + child)[0], Q2 * c, walk.cut)
            else:
                reach = self._naive_node(walk, child, P2, Q2)
                h = self._hinge(ctx + child)
                f, r = h.pos(P2 / Q2), P2 / Q2
                c = coin(f, max(f, h.neg(r)))  # D(p,q) / max(D(p,q), D(q,p)), both divided by Q2
                stop = Q2 * reach * c
                if stop:  # x_0..x_τ kept (τ = depth), the rest refilled from the branch residual
                    if depth + 1 >= walk.n:
                        walk.out[child[: walk.n]] += stop
                    else:
                        walk.refills[(depth, child)] += stop
            below += q[y] * reach * (1 - c)
        return below

    def _capped_node(
        self, walk: _Walk, pi: tuple[int, ...], P: Fraction, Q: Fraction, ratios: tuple[Fraction, ...], F: Fraction
    ) -> Fraction:
        """S(π): over the completions after π, the probability that capped_hsd's scan reaches the coin that
        keeps π (the first coin and every coin at a longer prefix rejected); adds the stops below π to the
        walk. The coin C_ℓ that keeps π and one more token reads π only (`_capped_divergences(ℓ)`), the
        first coin A the prefix of γ − 1 tokens (the whole draft at γ = 1): S(π) = (1 − C_ℓ(π)) Σ_y q(y)
        S(πy), and at depth γ − 1, Σ_y q(y) (1 − A). F = Π (1 − C) of the coins above π: everything
        rejected at a prefix of γ − 1 tokens has mass q(π) S(π) F."""
        g, ctx = self.gamma, walk.ctx
        here, p, q, depth = self._enter(walk, pi)
        if depth == g - 1:
            if g > 1:  # compute_capped_prefix_ratio(ratios, γ − 1) reads the first γ − 1 ratios only
                a = min(ONE, _capped_prefix_ratio(list(ratios) + [ZERO], g - 1))
            if g > 1 and walk.n < g:  # the draft's last token is read by nothing that shows: summed out
                sq = self._hinge(here).sq
                if a:
                    walk.out[pi[: walk.n]] += Q * sq * a
                reach = sq * (1 - a)
            else:
                reach = ZERO
                for y in range(self.V):
                    if not q[y]:
                        continue
                    if g == 1:  # ... which at γ = 1 is Python's ratios[-1], the whole draft's
                        a = min(ONE, P * p[y] / (Q * q[y]))
                    if a:  # the whole draft shows: its outcomes one by one
                        child = pi + (y,)
                        _draw(walk.out, child, self.rows_after(ctx + child)[0], Q * q[y] * a, walk.cut)
                    reach += q[y] * (1 - a)
            if reach:
                walk.ends[self._key(here)] += Q * reach * F
            return reach
        r_star, dpq, dqp = self._capped_divergences(pi, P, Q, ratios, p, q)
        c = coin(dpq, dqp)
        up = [y for y in range(self.V) if r_star[y] > 1]  # the residual's support, weighted by the next row
        below, F_below = ZERO, F * (1 - c)
        for y, child, P2, Q2 in self._children(walk, pi, P, Q, p, q):
            reach = self._capped_node(walk, child, P2, Q2, ratios + (P2 / Q2,), F_below)
            below += q[y] * reach
            stop = Q2 * reach * c
            if stop:  # x_0..x_τ kept (τ = depth), one token from max(q_{τ+1} q(π) (r* − 1), 0)
                q_next = self.rows_after(ctx + child)[1]
                if depth + 1 >= walk.n and any(q_next[z] for z in up):
                    walk.out[child[: walk.n]] += stop
                else:
                    res = normalise([max(ZERO, qv * Q * (r - 1)) for qv, r in zip(q_next, r_star)], on_zero="none")
                    _draw(walk.out, child, res, stop, walk.cut)
        return (1 - c) * below

    def _capped_divergences(self, pi: tuple, P: Fraction, Q: Fraction, ratios: tuple[Fraction, ...], p: Row, q: Row):
        """compute_capped_branch_divergences(t) at t = len(π), line by line: prefix π (p(π) = P, q(π) = Q),
        rows p, q at position t, divided by the prefix ratio at the first largest one above 1."""
        m = _max_prefix_index(list(ratios))
        divide = ratios[m - 1] if m else ONE
        q_joint = [Q * v for v in q]
        p_joint = [P * v for v in p]
        r_star = [(pj / qj if qj > 0 else ZERO) / divide for pj, qj in zip(p_joint, q_joint)]
        dpq = sum(((r - 1) * qj for r, qj in zip(r_star, q_joint) if r > 1), ZERO)
        dqp = sum(((1 - r) * qj for r, qj in zip(r_star, q_joint) if r <= 1), ZERO)
        return r_star, dpq, dqp

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


class _Hinge:
    """For the rows p, q after one context: pos(r) = Σ_y (r p(y) − q(y))+ and neg(r) = Σ_y (q(y) − r p(y))+
    (r ≥ 0) in O(log V), from the tokens sorted by q(y)/p(y) and prefix sums of p and q."""

    def __init__(self, p: Row, q: Row) -> None:
        terms = sorted((qy / py, py, qy) for py, qy in zip(p, q) if py > 0)
        self.ts = [t for t, _, _ in terms]
        self.cum_p, self.cum_q = [ZERO], [ZERO]
        for _, py, qy in terms:
            self.cum_p.append(self.cum_p[-1] + py)
            self.cum_q.append(self.cum_q[-1] + qy)
        self.sp, self.sq = sum(p, ZERO), sum(q, ZERO)

    def pos(self, r: Fraction) -> Fraction:
        k = bisect_left(self.ts, r)  # the tokens with q(y)/p(y) < r: r p(y) − q(y) > 0
        return r * self.cum_p[k] - self.cum_q[k]

    def neg(self, r: Fraction) -> Fraction:
        return self.pos(r) - (r * self.sp - self.sq)  # Σ (q − r p)+ − Σ (r p − q)+ = Σ (q − r p)


class _Walk:
    """One round's walk over the draft's prefixes: what it adds up and where it is."""

    def __init__(
        self,
        ctx: tuple[int, ...],
        n: int,
        cut: int | None,
        bar: Any,
        shape: tuple[int, int],
        progress: LawProgress | None,
    ) -> None:
        self.ctx, self.n, self.cut, self.bar, self.progress = ctx, n, cut, bar, progress
        self.V, self.gamma = shape
        self.total = self.V ** (self.gamma - 1)
        self.out: Law = defaultdict(Fraction)
        self.refills: dict[tuple[int, tuple[int, ...]], Fraction] = defaultdict(Fraction)  # naive's, by kept prefix
        self.ends: dict[tuple[int, ...], Fraction] = defaultdict(Fraction)  # capped's τ = −1, by visible context
        self.done = 0

    def enter(self, pi: tuple[int, ...]) -> None:
        """The walk is at the draft prefix π (a stopped run names it)."""
        if self.progress is not None:
            self.progress.detail = (
                f"at draft prefix {list(pi)}, {self.done:,} of {self.total:,} prefixes of {self.gamma - 1} "
                "tokens done at this round's start"
            )

    def tick(self) -> None:
        """A prefix of γ − 1 tokens is walked."""
        self.done += 1
        self.bar.update(1)

    def skip(self, depth: int) -> None:
        """A prefix of `depth` tokens with q = 0: its prefixes of γ − 1 tokens count as walked."""
        if depth <= self.gamma - 1:
            k = self.V ** (self.gamma - 1 - depth)
            self.done += k
            self.bar.update(k)
