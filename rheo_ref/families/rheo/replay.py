"""An exact sampler driven by an explicit stream of uniforms: the reference side of the coupled
replay between `rheo_ref` and `rheo_fast` (docs/ALGORITHM.md §3-§5 and §8).

One round consumes one fixed-size block of uniforms u in [0, 1) (floats, read exactly as
Fractions), indexed by *node creation index* (the root is 0, children are numbered in
expansion order, slot by slot, as in `rheo_ref.families.rheo.tree`). With N non-root nodes per round
(`rheo_ref.families.rheo.layout.RheoLayout`), the block has 2(N+1)+1 coins:

- `coins[i]`, i = 0..N: the *sample coin* of node i. When node i is expanded and its tail has
  q_samp mass, the sampled slot holds the first token y (in token-id order) with
  u < Σ_{t<=y} q̃(t).
- `coins[N+1+i]`: the *accept coin* of node i, used when verification tries node i
  (`coins[N+1]`, the root's, is never used). A sampled child y is accepted iff
  u < min(1, p(y)/q̃(y)) (with the current residual r in place of p), a point mass t iff u < r(t).
  Strict comparisons: a coin of 0 never accepts a token of probability 0.
- `coins[2N+2]`: the *bonus coin*, drawn once per round from the final residual r: the first
  token y with u < Σ_{t<=y} r(t).

A coin that no decision needs is skipped, never shifted onto the next decision, so the stream
layout does not depend on outcomes. `rheo_fast.decode` draws the same block per round and trial
(`torch.rand(B, 2(N+1)+1)`), which is what lets both sides emit identical tokens.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from math import log

from rheo_ref.coins import coin, inverse_cdf, replay_rounds
from rheo_ref.errors import CaseError
from rheo_ref.families.rheo.layout import rheo_layout
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.rheo.slots import Expansion, expand
from rheo_ref.families.rheo.tree import Node, Nodes, build_tree, children, path_tokens, rerank
from rheo_ref.families.rheo.verify import SPEC_RULES, Rules
from rheo_ref.models import Case, Context

ZERO, ONE = Fraction(0), Fraction(1)


class ReplayChooser:
    """A `rheo_ref.families.rheo.tree.Chooser` that takes the sampled token from node `parent.id`'s sample coin."""

    def __init__(self, coins: Sequence[float]) -> None:
        self.coins = coins

    def sample_groups(self, plan: Expansion, parent: Node) -> list[tuple[Fraction, tuple[int, ...]]]:
        return [(ONE, (inverse_cdf(plan.qtilde_row(), coin(self.coins[parent.id])),))]

    def resolve(self, node: Node) -> list[tuple[Fraction, int]]:
        raise AssertionError("replay never builds class nodes")


@dataclass(frozen=True)
class ReplayRound:
    emitted: tuple[int, ...]
    nodes: Nodes
    kept: frozenset[int]


def replay_round(case: Case, context: Context, coins: Sequence[float], rules: Rules = SPEC_RULES) -> ReplayRound:
    """One round from `context`, every random decision read from `coins` (layout above)."""
    s = case.scheme_as(Scheme)
    layout = rheo_layout(s)
    N = layout.N
    if len(coins) != layout.n_coins:
        raise CaseError(f"a round of scheme {s.to_json()} needs {layout.n_coins} coins, got {len(coins)}")
    ((_, nodes),) = list(build_tree(case.draft, case.q_samp_model, tuple(context), s, ReplayChooser(coins)))
    assert len(nodes) == N + 1, f"tree has {len(nodes) - 1} nodes, layout says {N}"
    kept = rerank(nodes, s.R)
    kids = children(nodes, kept)
    ctx, nid, out = tuple(context), 0, []
    r = case.target.row(ctx)
    while True:
        p_here, moved = r, False
        for ch in rules.verification_order(kids[nid], s.verify):
            u = coin(coins[layout.accept(ch.id)])
            if ch.kind == "sampled":
                if u < rules.accept_sampled(r, ch.qtilde_row(), ch.token):
                    moved = True
                else:
                    r = rules.residual_sampled(r, ch.qtilde_row())
            elif u < r[ch.token]:
                moved = True
            else:
                r = rules.residual_point(r, ch.token)
            if moved:
                out.append(ch.token)
                ctx, nid = ctx + (ch.token,), ch.id
                r = rules.next_row(r, case.target.row(ctx))
                break
        if not moved:
            out.append(inverse_cdf(rules.bonus(r, p_here), coin(coins[layout.bonus])))
            return ReplayRound(tuple(out), nodes, kept)


def replay_decode(
    case: Case, coins: Callable[[int], Sequence[float]], n: int | None = None, rules: Rules = SPEC_RULES
) -> list[ReplayRound]:
    """Rounds until n tokens (default case.tokens); round i reads the block `coins(i)`."""
    return replay_rounds(case, lambda ctx, block: replay_round(case, ctx, block, rules), coins, n)


def float_signature(case: Case, context: Context, nodes: Nodes, nid: int) -> tuple:
    """What a float64 implementation adds up to get node nid's log-score: equal signatures give
    bit-equal floats. A sampled factor equal to z_r is a float sum, so it gets its own symbol."""
    s, sig = case.scheme_as(Scheme), []
    while nid > 0:
        n = nodes[nid]
        f: object = n.score / nodes[n.parent].score if nodes[n.parent].score else ("zero", nid)
        if n.kind == "sampled":
            pctx = tuple(context) + path_tokens(nodes, n.parent)
            plan = expand(case.draft.row(pctx), case.q_samp_model.row(pctx), s.K, s.m, s.proxy)
            from_z_r = s.proxy.kind == "rheo" and s.m >= 1 and plan.z_r <= plan.q_rank[plan.order[s.m - 1]]
            if s.proxy.kind == "scaled" or from_z_r:
                f = ("float-expr", plan.q_rank, f)
        sig.append(f)
        nid = n.parent
    return tuple(reversed(sig))


def comparable(case: Case, context: Context, nodes: Nodes, tol: float = 1e-9) -> bool:
    """Whether float64 tie-breaking must agree with the exact one on this tree (docs/ALGORITHM.md §8):
    no two positive-score nodes with different float signatures have log-scores within `tol`."""
    pos = [n for n in nodes[1:] if n.score > 0]
    sigs = {n.id: float_signature(case, context, nodes, n.id) for n in pos}
    logs = {n.id: log(n.score) for n in pos}
    for i, a in enumerate(pos):
        for b in pos[i + 1 :]:
            if abs(logs[a.id] - logs[b.id]) <= tol and sigs[a.id] != sigs[b.id]:
                return False
    return True
