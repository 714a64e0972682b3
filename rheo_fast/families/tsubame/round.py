"""Family `tsubame` on the fast path, vectorised over B trials and coupled coin for coin to
`rheo_ref.families.tsubame.replay` (docs/SCHEMES.md, "Family tsubame").

- Pass 1 (`plan`): `rheo_fast.tree.build_tree` with the rheo scheme (K, m = K, W, D, R): the
  deterministic Top-K tree of every trial, whose kept nodes become the trial's planned `parents`
  (creation order, parents re-indexed among the kept nodes). The draft is seen through
  `TopKDraft`, which hands the builder q_rank only (m = K never samples; this makes it plain that
  the plan cannot read q_samp). It draws no coin and makes D draft calls.
- Pass 2: the static fast path (`rheo_fast.families.static.round.static_round`) on each planned shape. Trials
  that share a shape form a group (`torch.unique` over the [B, n] planned parents); each group's
  static round runs over the whole batch (a `TreeModel`'s state cannot be split into trials
  through its protocol) and its rows are taken where the trial belongs to the group. Trials in
  one context share one plan, so a table-model batch from one context is one group, and a
  language model decodes one trial (one group) at a time.
Coins per round and trial, `TsubameLayout.n_coins` = 2(R+1)+1: a shape of n <= R nodes reads the
draw coins 0..n, the accept coins R+1..R+1+n and the bonus coin 2R+2, as the reference does.

Draft calls: pass 2 re-runs the draft along the sampled paths (the plan's tokens are not the
drawn ones), one call per depth of the shape that has nodes with children. `TsubameResult`
reports `plan_calls` (D, pass 1), `draft_calls` [B] (pass 2, what each trial's own shape needs)
and `issued_calls` (pass 2 calls this batched implementation made: the sum over groups).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from rheo_fast.families.static.round import StaticResult, check_static_round, static_round
from rheo_fast.models import DraftRows, TreeModel
from rheo_fast.tree import Tree, build_tree
from rheo_fast.verify import Verdict
from rheo_ref.errors import CaseError
from rheo_ref.families.static.layout import StaticLayout, static_layout
from rheo_ref.families.static.scheme import StaticScheme
from rheo_ref.families.tsubame.exact import topk_scheme
from rheo_ref.families.tsubame.layout import TsubameLayout, tsubame_layout
from rheo_ref.families.tsubame.scheme import TsubameScheme
from rheo_ref.variants import SPEC, Variant


class TopKDraft:
    """A `TreeModel` seen by pass 1: the draft's q_rank as both rows (m = K reads q_rank only)."""

    def __init__(self, model: TreeModel) -> None:
        self.model = model
        self.vocab_size = model.vocab_size

    @property
    def device(self) -> torch.device:
        return self.model.device

    @property
    def prefix_len(self) -> int:
        return self.model.prefix_len

    def prefix(self, state: Any) -> Tensor:
        return self.model.prefix(state)

    def draft(self, state: Any, tree: Any, nodes: Tensor) -> DraftRows:
        return DraftRows.one(self.model.draft(state, tree, nodes).q_rank)  # [B, F, V]


@dataclass
class Plan:
    tree: Tree  # pass 1's Top-K tree (kept: the plan)
    shapes: list[tuple[int, ...]]  # the distinct planned parents lists
    group: Tensor  # [B] index into shapes


def plan(model: TreeModel, state: Any, scheme: TsubameScheme, layout: TsubameLayout, todo: Tensor) -> Plan:
    """Pass 1 for every trial: its planned parents, grouped by shape (one host sync)."""
    B, dev = todo.shape[0], todo.device
    unused = torch.zeros((B, layout.plan.N + 1), dtype=torch.float64, device=dev)  # m = K: no sample coin
    tree = build_tree(TopKDraft(model), state, topk_scheme(scheme), layout.plan, unused)
    if bool((tree.missing & todo).any()):
        ctx = model.missing_context(state, tree, tree.expanded, "q_rank")
        where = f" (ending {ctx})" if ctx is not None else ""
        raise CaseError(f"draft: a reachable context{where} has no row (NaN); every reachable context needs one")
    kept = tree.kept  # [B, 1+N']
    assert kept is not None
    new = kept.long().cumsum(1) - 1  # [B, 1+N'] index among the kept nodes (root: 0)
    par = new.gather(1, tree.parent.clamp(min=0))  # [B, 1+N'] the parent's new index
    n = layout.planned_nodes
    planned = par[:, 1:][kept[:, 1:]].reshape(B, n)  # [B, n] creation order: ids ascending
    shapes, group = torch.unique(planned, dim=0, return_inverse=True)  # [G, n], [B]
    return Plan(tree, [tuple(int(x) for x in row) for row in shapes.tolist()], group)


@dataclass
class TsubameResult:
    plan: Plan
    verdict: Verdict  # emitted [B, D+1], n_emitted [B], visited [B, 1] (the plan's node id), missing [B]
    groups: list[StaticResult]  # pass 2's static round per shape (rows of the group's trials count)
    plan_calls: int  # draft calls of pass 1 (D)
    draft_calls: Tensor  # [B] draft calls of pass 2 that each trial's own shape needs
    issued_calls: int  # draft calls of pass 2 this implementation issued (sum over the groups)


def tsubame_round(
    model: TreeModel,
    state: Any,
    scheme: TsubameScheme,
    coins: Tensor,
    todo: Tensor | None = None,
    *,
    layout: TsubameLayout | None = None,
    variant: Variant = SPEC,
) -> TsubameResult:
    """Plan, then draw and verify one tree per trial on its plan; coins [B, 2(R+1)+1]. Missing rows
    are refused for the trials in `todo` [B] (default: all)."""
    variant.check_family("tsubame")
    if variant.plan_tokens != "top_k":
        raise CaseError(
            f"variant {variant.name!r}: the fast path runs the spec's plan only; its exact law is "
            f"rheo_ref.families.tsubame.mutant's (rheo mutants rejects it through that law's sampler)"
        )
    layout = layout or tsubame_layout(scheme)
    B, dev = coins.shape[0], coins.device
    todo = torch.ones(B, dtype=torch.bool, device=dev) if todo is None else todo
    pl = plan(model, state, scheme, layout, todo)
    D = scheme.D
    emitted = torch.full((B, D + 1), -1, dtype=torch.int64, device=dev)  # [B, D+1]
    n_emitted = torch.zeros(B, dtype=torch.int64, device=dev)  # [B]
    visited = torch.zeros((B, 1), dtype=torch.int64, device=dev)  # [B, 1]
    missing = torch.zeros(B, dtype=torch.bool, device=dev)  # [B]
    calls = torch.zeros(B, dtype=torch.int64, device=dev)  # [B]
    results, issued = [], 0
    for g, parents in enumerate(pl.shapes):
        sch = StaticScheme("parents", parents, scheme.sampling, scheme.verify)
        slay: StaticLayout = static_layout(sch)
        res = static_round(model, state, sch, layout.coins_for(coins, slay.N), layout=slay)
        mine = pl.group == g  # [B]
        check_static_round(model, state, res, todo & mine)
        v = res.verdict
        w = v.emitted.shape[1]
        emitted[:, :w] = torch.where(mine[:, None], v.emitted, emitted[:, :w])  # [B, D+1]
        n_emitted = torch.where(mine, v.n_emitted, n_emitted)  # [B]
        visited = torch.where(mine[:, None], v.visited, visited)  # [B, 1]
        missing = torch.where(mine, v.missing, missing)  # [B]
        calls = torch.where(mine, len(slay.levels), calls)  # [B]
        issued += len(slay.levels)
        results.append(res)
    return TsubameResult(pl, Verdict(emitted, n_emitted, visited, missing), results, D, calls, issued)
