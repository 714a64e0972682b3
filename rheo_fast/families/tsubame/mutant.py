"""The mutant `tsubame-plan-after-sampling` behind the fast path's interface (docs/SCHEMES.md §12).

There is no vectorised version: the mutant's kept tree has a different shape per trial *and* its
tokens come from the build, not from the static draw, so `rheo_fast.families.static.round` cannot verify it.
Instead, `sampled_plan_round` runs the reference sampler `rheo_ref.families.tsubame.mutant.
replay_sampled_plan_round` (its cached form
`SampledPlanReplay`, one per model) once per trial, reading that trial's row of the round's coin block
(one coin per draw of the build, then one coin for the verifier's exact law of the kept tree).
It needs the exact tables, so it runs on a `TableTreeModel` at T = 1 only (the gate's mutant
cases; another model or temperature is refused), and a scheme whose build draws fit the block:
K(1 + W(D-1)) + 1 <= 2(R+1)+1 coins (refused otherwise). It is the gate's negative control for
this mutant (`rheo mutants`), not a fast path to benchmark.
"""

from __future__ import annotations

from typing import Any
from weakref import WeakKeyDictionary

import torch
from torch import Tensor

from rheo_fast.verify import Verdict
from rheo_ref.errors import CaseError
from rheo_ref.families.tsubame.mutant import SampledPlanReplay
from rheo_ref.families.tsubame.scheme import TsubameScheme

_REPLAYS: WeakKeyDictionary = WeakKeyDictionary()  # model -> its cached reference sampler


def coins_needed(scheme: TsubameScheme) -> int:
    """Most coins one round of the mutant reads: K draws at the root, K per expanded node at each
    further depth (W of them), and one for the verifier."""
    return scheme.K * (1 + scheme.W * (scheme.D - 1)) + 1


def sampled_plan_round(model: Any, state: Any, scheme: TsubameScheme, coins: Tensor, todo: Tensor) -> Verdict:
    """One round of the mutant for the trials in `todo` [B] (the others emit nothing: n_emitted 0)."""
    from rheo_fast.models import TableTreeModel

    if not isinstance(model, TableTreeModel) or model.T != 1:
        raise CaseError(
            "variant 'tsubame-plan-after-sampling' runs the reference sampler on the exact tables: "
            f"it needs a TableTreeModel at T = 1, not {type(model).__name__}"
            + (f" at T = {model.T}" if isinstance(model, TableTreeModel) else "")
        )
    need, have = coins_needed(scheme), coins.shape[1]
    if need > have:
        raise CaseError(
            f"variant 'tsubame-plan-after-sampling': K(1+W(D-1))+1 = {need} coins per round exceed the "
            f"block of 2(R+1)+1 = {have}; use a scheme with fewer draws per round"
        )
    replay = _REPLAYS.get(model)
    if replay is None:
        replay = _REPLAYS[model] = SampledPlanReplay(model.case)
    B, D, dev = coins.shape[0], scheme.D, coins.device
    emitted = torch.full((B, D + 1), -1, dtype=torch.int64)  # [B, D+1]
    n_emitted = torch.zeros(B, dtype=torch.int64)  # [B]
    hist = model.prefix(state).tolist()  # [B, Lmax], left-padded with -1
    rows, todo_l = coins.tolist(), todo.tolist()
    for b in range(B):
        if not todo_l[b]:
            continue
        ctx = tuple(t for t in hist[b] if t >= 0)
        seq = replay.round(ctx, rows[b])
        emitted[b, : len(seq)] = torch.tensor(seq, dtype=torch.int64)
        n_emitted[b] = len(seq)
    z = torch.zeros(B, dtype=torch.bool)
    return Verdict(emitted.to(dev), n_emitted.to(dev), torch.zeros((B, 1), dtype=torch.int64, device=dev), z.to(dev))
