"""The bug-class baseline decoder on the fast path: `rheo_ref.bugclasses.decoder` vectorised over B
independent trials of one case, float64 torch, the logits processing of `rheo_fast.processing`.

The same algorithm as the reference, step for step: the first token from the target's processed
row after the prompt; each round γ draft tokens from the draft's processed rows, then the γ + 1
target rows (row j after x_1..x_j: processed with the penalties counting the emitted tokens and the
drafts before it, masked by the grammar state along its path), then token-level verification (x_j
kept iff u·q(x_j) < p(x_j), the residual max(p − q, 0) renormalised at the first rejection, the
bonus from p after x_γ) or block verification (Sun et al. 2024, Algorithm 2: τ the last i whose
test u_i < h_i passes, one token from max(w_τ·p − q, 0) renormalised, or the bonus) or tree
verification (`TREE_WIDTH` branches of γ draft tokens, each drawn as the chain above; the branches'
first tokens tried in branch order against p, then the residuals max(p_b − q, 0) renormalised
after each rejection, one residual draw after every branch is rejected; the accepted branch's
chain verified token by token against its own rows, then its bonus). Draws are by inverse CDF in
token-id order: the first t with u·Σ < Σ_{i≤t} row_i.

Randomness: one float64 uniform per draw and per test from the caller's `torch.Generator` (or, with
`grid`, uniforms k/grid, k uniform in 0..grid − 1: the `grid` check's coins); the fast path is not
coupled coin for coin to the reference, its law is checked against the reference's exact law
(`tests/test_fast_bugclasses.py`).

Every step a bug class got wrong is a method of `FastSteps`, named as in the reference's `Steps`;
the decoder calls only those methods. A mutant is a `FastSteps` subclass handed in
(`rheo_fast.bugclasses.mutants`): this module never names one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from rheo_fast import processing
from rheo_fast.models import _Table
from rheo_ref.bugclasses.cases import BugCase
from rheo_ref.bugclasses.decoder import TREE_WIDTH, Request
from rheo_ref.constraint import Constraint
from rheo_ref.errors import CaseError

LOGPROB_RTOL = 1e-9  # a reported probability within this (relative) of the processed target's is exact


class Grammar:
    """A `rheo_ref.constraint.Constraint` as tensors: allowed [S, V] bool, next state [S, V] (a
    disallowed token leaves the state where it was, as the reference)."""

    def __init__(self, c: Constraint, V: int) -> None:
        S = len(c.allowed)
        self.allowed = torch.zeros(S, V, dtype=torch.bool)  # [S, V]
        self.next = torch.arange(S)[:, None].repeat(1, V)  # [S, V]
        for s, (ok, nxt) in enumerate(zip(c.allowed, c.next)):
            self.allowed[s, sorted(ok)] = True
            for t, u in nxt:
                self.next[s, t] = u

    def mask(self, raw: Tensor, state: Tensor | None) -> Tensor:
        """raw [B, V] with the tokens each row's state [B] disallows set to 0 (None: unmasked)."""
        return raw if state is None else raw * self.allowed[state]  # [B, V]

    def step(self, state: Tensor, token: Tensor) -> Tensor:
        return self.next[state, token]  # [B]


class FastSteps:
    """The steps of the decoder, correct (`rheo_ref.bugclasses.decoder.Steps`, same names)."""

    def target_request(self, req: Request) -> Request:
        """The sampling parameters the target's rows are processed with: the request's."""
        return req

    def target_steps(self, j: int | None, gamma: int) -> tuple:
        """Processing steps replaced in target row j (None: after the prompt; γ: the bonus): none."""
        return ()

    def target_position(self, j: int, gamma: int) -> int:
        """Which of the γ + 1 target rows verifies draft position j (0-based): row j."""
        return j

    def tree_row(self, branch: int, j: int) -> tuple[int, int]:
        """Which target row verifies node j (0-based depth; γ: the bonus) of a tree branch: that
        branch's row j, after its own tokens x^b_1..x^b_j."""
        return branch, j

    def target_counted(self, out_counts: Tensor, draft_counts: Tensor) -> Tensor:
        """The counts [B, V] the penalties read at a target row: the emitted tokens and the drafts before it."""
        return out_counts + draft_counts

    def mask_state(self, j: int, gamma: int, states: Tensor) -> Tensor | None:
        """The grammar state [B] that masks target row j (`states` [B, γ + 1]: after the emitted
        tokens and x_1..x_i); None: unmasked. The state along the row's own path."""
        return states[:, j]

    def recovery_row(self, p: Tensor, p_raw: Tensor) -> Tensor:
        """The target rows [B, V] the residual and bonus draws use: the processed ones."""
        return p

    def accept(self, u: Tensor, px: Tensor, qx: Tensor) -> Tensor:
        """Token-level acceptance [B]: u < min(1, p(x)/q(x)), i.e. u·q(x) < p(x) (q = 0: p > 0)."""
        return torch.where(qx > 0, u * qx < px, px > 0)

    def residual_row(self, p: Tensor, q: Tensor) -> Tensor:
        """The rows [B, V] drawn from after a rejection: max(p − q, 0) (renormalised by the draw)."""
        return residual(p, q)

    def closed(self) -> bool:
        """Whether inverse CDF compares u ≤ the cumulative sum (instead of <)."""
        return False

    def reported_prob(self, p: Tensor, p_raw: Tensor, t: Tensor) -> Tensor:
        """The probability [B] reported for emitted tokens t [B]: the processed target row's."""
        return p.gather(-1, t[:, None])[:, 0]


CORRECT = FastSteps()


def residual(p: Tensor, q: Tensor, weight: Tensor | float = 1.0) -> Tensor:
    """max(weight·p − q, 0) [B, V]; a row of zero mass (reachable only when the q verification sees
    is not the q that was sampled) is p, as the reference."""
    r = (weight * p - q).clamp(min=0)  # [B, V]
    r = torch.where(r < 1e-12 * torch.maximum(p, q), 0.0, r)  # rounding noise of an exact 0
    return torch.where(r.sum(-1, keepdim=True) > 0, r, p)  # [B, V]


def pick(u: Tensor, rows: Tensor, closed: bool = False) -> Tensor:
    """Inverse CDF [B]: the first t with u·Σ < Σ_{i≤t} row_i (`closed`: ≤, zero-mass tokens
    included); u·Σ rounded past the last cumulative sum takes the last token with mass."""
    cum = rows.cumsum(-1)  # [B, V]
    x = u[:, None] * cum[:, -1:]  # [B, 1]
    hit = (x <= cum) if closed else (x < cum) & (rows > 0)  # [B, V]
    last = (rows > 0).to(torch.int8).flip(-1).argmax(-1)  # [B] from the end
    last = rows.shape[-1] - 1 - last
    return torch.where(hit.any(-1), hit.to(torch.int8).argmax(-1), last)  # [B]


@dataclass
class Coins:
    """Uniforms for B trials: float64 in [0, 1), or on the grid {k/grid}."""

    generator: torch.Generator
    B: int
    grid: int | None = None

    def __call__(self) -> Tensor:
        if self.grid is None:
            return torch.rand(self.B, dtype=torch.float64, generator=self.generator)  # [B]
        return torch.randint(self.grid, (self.B,), generator=self.generator).to(torch.float64) / self.grid  # [B]


class Run:
    """One batch of B trials of a case: the token buffer, the tables and the processing of each row."""

    def __init__(self, case: BugCase, B: int, steps: FastSteps, width: int) -> None:
        self.case, self.B, self.steps, self.V = case, B, steps, case.vocab_size
        self.req, self.treq = case.request, steps.target_request(case.request)
        self.draft = _Table(case.draft, torch.device("cpu"), lambda t: t)
        self.target = _Table(case.target, torch.device("cpu"), lambda t: t)
        self.L = max(self.draft.L, self.target.L, 1)
        C = len(case.context)
        self.C = C
        self.seq = torch.full((B, self.L + C + width), -1, dtype=torch.long)  # [B, L + C + width] -1 left pad
        self.seq[:, self.L : self.L + C] = torch.tensor(case.context, dtype=torch.long)
        self.length = torch.zeros(B, dtype=torch.long)  # [B] tokens emitted
        self.context_seen = torch.zeros(B, self.V, dtype=torch.bool)  # [B, V]
        if C:
            self.context_seen[:, list(case.context)] = True
        self.grammar = None if case.constraint is None else Grammar(case.constraint, self.V)
        self.state = torch.zeros(B, dtype=torch.long)  # [B] grammar state after the emitted tokens

    def window(self, extra: Tensor) -> Tensor:
        """The last L tokens [B, L] of context + emitted + `extra` [B, j] (-1: none)."""
        j = extra.shape[1]
        end = self.L + self.C + self.length  # [B] one past the last emitted token
        idx = end[:, None] - self.L + torch.arange(self.L)  # [B, L] window over the buffer
        base = self.seq.gather(1, idx.clamp(min=0))  # [B, L]
        if j == 0:
            return base
        both = torch.cat([base, extra], 1)  # [B, L + j]
        return both[:, j:]  # [B, L]

    def rows(self, table: _Table, extra: Tensor) -> Tensor:
        rows = table.lookup(self.window(extra))  # [B, V]
        if bool(rows.isnan().any()):
            b = int(rows.isnan().any(-1).nonzero()[0, 0])
            ctx = self.emitted(b) + extra[b].tolist()
            raise CaseError(f"{table.name}: reachable context {[*self.case.context, *ctx]} has no row")
        return rows

    def emitted(self, b: int) -> list[int]:
        s = self.L + self.C
        return self.seq[b, s : s + int(self.length[b])].tolist()

    def counts(self, extra: Tensor) -> Tensor:
        """Occurrences [B, V] of each token among `extra` [B, j] (-1: none)."""
        c = torch.zeros(self.B, self.V + 1, dtype=torch.long)  # [B, V + 1] column V: none
        return c.scatter_add_(1, extra.clamp(min=-1) % (self.V + 1), torch.ones_like(extra))[:, : self.V]

    def out_counts(self) -> Tensor:
        s = self.L + self.C
        return self.counts(self.seq[:, s:])  # [B, V] (the buffer past the emitted tokens is -1)

    def process(self, raw: Tensor, counted: Tensor, req: Request, replace: tuple = ()) -> Tensor:
        seen = self.context_seen | (counted > 0)  # [B, V] prompt and counted output
        return processing.process(raw, req, counted, seen, replace=replace)  # [B, V]

    def target_row(self, extra: Tensor, j: int | None, states: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """(processed p for verification, the row residual/bonus draws use, the raw row normalised) [B, V] each."""
        raw = self.rows(self.target, extra)  # [B, V]
        if self.grammar is not None:
            state = states[:, 0] if j is None else self.steps.mask_state(j, self.req.gamma, states)
            raw = self.grammar.mask(raw, state)
        counted = self.steps.target_counted(self.out_counts(), self.counts(extra))
        p = self.process(raw, counted, self.treq, self.steps.target_steps(j, self.req.gamma))
        raw_n = processing.normalise(raw)
        return p, self.steps.recovery_row(p, raw_n), raw_n

    def path_states(self, xs: Tensor) -> Tensor:
        """Grammar states [B, γ + 1] after the emitted tokens and x_1..x_i."""
        states = [self.state]
        if self.grammar is not None:
            for i in range(xs.shape[1]):
                states.append(self.grammar.step(states[-1], xs[:, i]))
        else:
            states *= xs.shape[1] + 1
        return torch.stack(states, 1)

    def emit(self, tokens: Tensor, n_emit: Tensor, live: Tensor) -> None:
        """Append tokens [B, k] (the first n_emit [B] of each row) to the live trials."""
        for i in range(tokens.shape[1]):
            on = live & (i < n_emit)  # [B]
            at = self.L + self.C + self.length  # [B]
            self.seq[on, at[on]] = tokens[on, i]
            if self.grammar is not None:
                self.state = torch.where(on, self.grammar.step(self.state, tokens[:, i].clamp(min=0)), self.state)
            self.length += on.long()


def decode(
    case: BugCase,
    B: int,
    generator: torch.Generator,
    steps: FastSteps = CORRECT,
    *,
    first_round: bool = False,
    logprobs: bool = False,
    grid: int | None = None,
) -> list[tuple[int, ...]]:
    """B runs of the decoder on `case` (module docstring): each the first `case.tokens` tokens
    (`first_round`: the prefill token and the first verification step's tokens); `logprobs`: each
    followed by 1 when every probability it reports is the processed target's, else 0; `grid`:
    uniforms on {k/grid}."""
    req = case.request
    gamma, n = req.gamma, (req.gamma + 2 if first_round else case.tokens)
    run = Run(case, B, steps, n + gamma + 1)
    coin = Coins(generator, B, grid)
    closed = steps.closed()
    none = torch.zeros(B, 0, dtype=torch.long)  # [B, 0]
    reported = torch.full((B, n + gamma + 1), float("nan"), dtype=torch.float64)  # [B, width]
    p0, _, raw0 = run.target_row(none, None, run.path_states(none))
    t0 = pick(coin(), p0, closed)  # [B]
    reported[:, 0] = steps.reported_prob(p0, raw0, t0)
    run.emit(t0[:, None], torch.ones(B, dtype=torch.long), torch.ones(B, dtype=torch.bool))
    rounds = 0
    while bool((run.length < n).any()) and not (first_round and rounds == 1):
        live = run.length < n  # [B]
        branches = [draft_chain(run, B, gamma, coin, closed) for _ in range(TREE_WIDTH if req.verify == "tree" else 1)]
        # target: γ + 1 rows per branch, row j after x_1..x_j of that branch: γ + 1 × ([B, V] × 3)
        rows = []
        for xs, _ in branches:
            states = run.path_states(xs)  # [B, γ + 1]
            rows.append([run.target_row(xs[:, :j], j, states) for j in range(gamma + 1)])
        if req.verify == "tree":
            tokens, n_emit, used = verify_tree(branches, rows, coin, steps, closed)  # [B, γ + 1], [B], rows
        else:
            (xs, qs), verify = branches[0], (verify_token if req.verify == "token" else verify_block)
            tokens, n_emit = verify(xs, qs, rows[0], coin, steps, closed)  # [B, γ + 1], [B]
            used = [rows[0][steps.target_position(j, gamma) if j < gamma else gamma] for j in range(gamma + 1)]
        for j in range(gamma + 1):  # each emitted token's report, from the row it was verified or drawn at
            p, _, raw = used[j]
            at = run.length + j  # [B]
            on = live & (j < n_emit)
            rep = steps.reported_prob(p, raw, tokens[:, j].clamp(min=0))  # [B]
            reported[on, at[on]] = rep[on]
        run.emit(tokens, n_emit, live)
        rounds += 1
    out = run.seq[:, run.L + run.C :]  # [B, width]
    if first_round:  # the prefill token and the first step's tokens: their number varies
        result = [tuple(out[b, : int(run.length[b])].tolist()) for b in range(B)]
    else:
        result = [tuple(r) for r in out[:, :n].tolist()]
    if not logprobs:
        return result
    ok = reports_ok(case, out, run.length if first_round else torch.full((B,), n), reported)  # [B]
    return [(*r, int(o)) for r, o in zip(result, ok.tolist())]


def draft_chain(run: Run, B: int, gamma: int, coin: Coins, closed: bool) -> tuple[Tensor, Tensor]:
    """γ draft tokens [B, γ] from the processed draft rows [B, γ, V] (the draft is not constrained)."""
    xs = torch.zeros(B, gamma, dtype=torch.long)  # [B, γ]
    qs = torch.zeros(B, gamma, run.V, dtype=torch.float64)  # [B, γ, V]
    for j in range(gamma):
        counted = run.out_counts() + run.counts(xs[:, :j])
        qs[:, j] = run.process(run.rows(run.draft, xs[:, :j]), counted, run.req)
        xs[:, j] = pick(coin(), qs[:, j], closed)
    return xs, qs


def verify_token(
    xs: Tensor, qs: Tensor, rows: list, coin: Coins, steps: FastSteps, closed: bool
) -> tuple[Tensor, Tensor]:
    """Token-level verification of every trial: (tokens [B, γ + 1], how many of them were emitted [B])."""
    B, gamma = xs.shape
    tokens = torch.cat([xs, torch.zeros(B, 1, dtype=torch.long)], 1)  # [B, γ + 1]
    n_emit = torch.full((B,), gamma + 1, dtype=torch.long)  # [B] every draft kept + bonus
    open_ = torch.ones(B, dtype=torch.bool)  # [B] no rejection yet
    for j in range(gamma):
        p, p_draw, _ = rows[steps.target_position(j, gamma)]
        x = xs[:, j : j + 1]  # [B, 1]
        ok = steps.accept(coin(), p.gather(-1, x)[:, 0], qs[:, j].gather(-1, x)[:, 0])  # [B]
        rej = open_ & ~ok  # [B] first rejection here
        y = pick(coin(), steps.residual_row(p_draw, qs[:, j]), closed)  # [B]
        tokens[rej, j] = y[rej]
        n_emit[rej] = j + 1
        open_ &= ok
    bonus = pick(coin(), rows[gamma][1], closed)  # [B]
    tokens[open_, gamma] = bonus[open_]
    return tokens, n_emit


def verify_tree(branches: list, rows: list, coin: Coins, steps: FastSteps, closed: bool) -> tuple[Tensor, Tensor, list]:
    """Tree verification of every trial (module docstring): (tokens [B, γ + 1], emitted [B], the
    rows the emitted tokens were verified or drawn at, γ + 1 × ([B, V] × 3)). `branches`: per
    branch (x [B, γ], q [B, γ, V]); `rows[b][j]`: the target rows after x^b_1..x^b_j."""
    W, (B, gamma) = len(branches), branches[0][0].shape
    branch = torch.full((B,), W - 1, dtype=torch.long)  # [B] the branch followed (all rejected: the last)
    open_ = torch.ones(B, dtype=torch.bool)  # [B] every first token so far rejected
    p, p_draw, _ = rows[steps.tree_row(0, 0)[0]][steps.tree_row(0, 0)[1]]
    first = torch.zeros(B, dtype=torch.long)  # [B] the token at depth 0
    for b, (xs, qs) in enumerate(branches):
        x = xs[:, :1]  # [B, 1]
        ok = open_ & steps.accept(coin(), p.gather(-1, x)[:, 0], qs[:, 0].gather(-1, x)[:, 0])  # [B]
        branch[ok], first[ok] = b, xs[ok, 0]
        if b == W - 1:  # every first token rejected: one token from the last residual
            y = pick(coin(), steps.residual_row(p_draw, qs[:, 0]), closed)  # [B]
            first = torch.where(open_ & ~ok, y, first)
        else:
            p = processing.normalise(steps.residual_row(p, qs[:, 0]))  # the next branch's p_{b+1}
            p_draw = processing.normalise(steps.residual_row(p_draw, qs[:, 0]))
        open_ &= ~ok

    def sel(stack: list[Tensor]) -> Tensor:  # [W, B, ...] -> [B, ...] at each trial's branch
        return torch.stack(stack)[branch, torch.arange(B)]

    at = []
    for j in range(gamma + 1):  # node j's rows as each trial's branch reads them (tree_row)
        picked = [rows[bb][jj] for bb, jj in (steps.tree_row(b, j) for b in range(W))]
        at.append(tuple(sel([r[k] for r in picked]) for k in range(3)))
    xs, qs = sel([x for x, _ in branches]), sel([q for _, q in branches])  # [B, γ], [B, γ, V]
    tokens = torch.cat([xs, torch.zeros(B, 1, dtype=torch.long)], 1)  # [B, γ + 1]
    tokens[:, 0] = first
    n_emit = torch.where(open_, 1, gamma + 1)  # [B]
    chain = ~open_  # [B] on the accepted branch, no rejection yet
    for j in range(1, gamma):  # the accepted branch's chain, token by token
        p, p_draw, _ = at[j]
        x = xs[:, j : j + 1]  # [B, 1]
        ok = steps.accept(coin(), p.gather(-1, x)[:, 0], qs[:, j].gather(-1, x)[:, 0])  # [B]
        rej = chain & ~ok  # [B]
        y = pick(coin(), steps.residual_row(p_draw, qs[:, j]), closed)  # [B]
        tokens[rej, j] = y[rej]
        n_emit[rej] = j + 1
        chain &= ok
    bonus = pick(coin(), at[gamma][1], closed)  # [B]
    tokens[chain, gamma] = bonus[chain]
    return tokens, n_emit, at


def verify_block(
    xs: Tensor, qs: Tensor, rows: list, coin: Coins, steps: FastSteps, closed: bool
) -> tuple[Tensor, Tensor]:
    """Block verification of every trial (module docstring): (tokens [B, γ + 1], emitted [B])."""
    B, gamma = xs.shape
    w = [torch.ones(B, dtype=torch.float64)]  # w_0 = 1, [B] each
    for j in range(gamma):
        pj = rows[steps.target_position(j, gamma)][0].gather(-1, xs[:, j : j + 1])[:, 0]  # [B]
        qj = qs[:, j].gather(-1, xs[:, j : j + 1])[:, 0]  # [B]
        w.append(torch.where(qj > 0, torch.minimum(w[-1] * pj / qj.clamp(min=1e-300), w[0]), (pj > 0).double()))
    tau = torch.zeros(B, dtype=torch.long)  # [B]
    for i in range(1, gamma + 1):
        if i == gamma:
            h = w[gamma]
        else:
            s = (w[i][:, None] * rows[steps.target_position(i, gamma)][0] - qs[:, i]).clamp(min=0).sum(-1)  # [B]
            d = s + 1 - w[i]
            h = torch.where(d > 0, s / d.clamp(min=1e-300), w[0])  # [B]
        tau = torch.where(coin() < h, i, tau)
    tokens = torch.cat([xs, torch.zeros(B, 1, dtype=torch.long)], 1)  # [B, γ + 1]
    u = coin()
    bonus = pick(u, rows[gamma][1], closed)  # [B]
    for t in range(gamma):  # the token after the kept prefix, drawn from the block residual at τ = t
        at = tau == t
        wt = torch.stack(w, 1).gather(1, tau[:, None])  # [B, 1]
        y = pick(u, residual(rows[steps.target_position(t, gamma)][1], qs[:, t], wt), closed)  # [B]
        tokens[at, t] = y[at]
    tokens[tau == gamma, gamma] = bonus[tau == gamma]
    return tokens, tau + 1


def reports_ok(case: BugCase, out: Tensor, lengths: Tensor, reported: Tensor) -> Tensor:
    """Whether every reported probability [B, width] is the request's processed (masked) target's
    at its position along the emitted tokens out [B, width], within LOGPROB_RTOL [B]."""
    B = out.shape[0]
    run = Run(case, B, CORRECT, out.shape[1] + 1)
    ok = torch.ones(B, dtype=torch.bool)  # [B]
    for i in range(int(lengths.max())):
        states = run.state[:, None]  # [B, 1]
        p = run.target_row(torch.zeros(B, 0, dtype=torch.long), None, states)[0]  # [B, V]
        t = out[:, i].clamp(min=0)  # [B]
        want = p.gather(-1, t[:, None])[:, 0]  # [B]
        good = (reported[:, i] - want).abs() <= LOGPROB_RTOL * want.abs().clamp(min=1e-300)
        ok &= good | (i >= lengths)
        run.emit(t[:, None], torch.ones(B, dtype=torch.long), i < lengths)
    return ok


def sampler(steps: FastSteps = CORRECT, **kw: Any):
    """(case, seed, n) -> n runs of `decode` with a generator seeded by `seed` (the gate's sampler)."""

    def run(case: BugCase, seed: int, n: int) -> list[tuple[int, ...]]:
        return decode(case, n, torch.Generator().manual_seed(seed), steps, **kw)

    return run
