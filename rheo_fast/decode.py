"""Multi-round decoding (docs/ALGORITHM.md §6) of any family, coupled to the reference.

Randomness comes only from the caller's torch.Generator, as one fixed-size block of float64
uniforms in [0, 1) per round and trial (`layout.n_coins` = 2(N+1)+1 coins, N = non-root nodes;
`rheo_ref.coins.CoinLayout`, the same for every built-in family):

    coins[0 .. N]        sample coin of node i: draws the sampled token when node i is expanded
                         (node 0 = root); unused when i is not expanded or has no sampled slot;
    coins[N+1 .. 2N+1]   accept coin of node i (at N+1+i): decides whether child i is accepted
                         when verification tries it (index N+1 = root: unused);
    coins[2N+2]          bonus coin: draws the bonus token (inverse CDF, token-id order).

`rheo_ref.families.rheo.replay` consumes the very same block with exact arithmetic, so both emit the same
tokens (docs/FAST_PATH.md). Unused coins are still drawn: the stream never depends on outcomes.
A family says what N is and what its coins decide (the above: the rheo family's,
`rheo_ref.families.rheo.layout.RheoLayout`); every family has its own round and layout
(`rheo_fast.family`: `layout_for(scheme)` gives it, `play_round` runs it), and `decode` here is the
one multi-round loop of them all.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from rheo_fast.family import fast_family_of, layout_for
from rheo_fast.models import TreeModel
from rheo_fast.verify import Verdict
from rheo_ref.errors import CaseError
from rheo_ref.models import AnyScheme
from rheo_ref.variants import SPEC, Variant

CoinSource = Callable[[int], Tensor]  # round index -> coins [B, n_coins] float64


def round_coins(generator: torch.Generator, B: int, layout: Any) -> Tensor:
    """The coin block of one round: [B, 2(N+1)+1] float64 uniforms on the generator's device."""
    return torch.rand((B, layout.n_coins), generator=generator, dtype=torch.float64, device=generator.device)


@dataclass
class Decoded:
    tokens: Tensor  # [B, n]
    rounds: Tensor  # [B] rounds each trial needed to reach n tokens
    first_lengths: Tensor  # [B] tokens emitted by the first round
    per_round: list[Tensor]  # emitted [B, D+1] of every round (-1 padded), for coupling tests


def play_round(
    model: TreeModel,
    state: Any,
    scheme: AnyScheme,
    coins: Tensor,
    todo: Tensor,
    *,
    variant: Variant,
    layout: Any,
) -> Verdict:
    """One round of any family with a fast path (`rheo_fast.family`), refusals checked for the
    trials still decoding (todo [B])."""
    return fast_family_of(scheme).play_round(model, state, scheme, coins, todo, variant=variant, layout=layout)


def decode(
    model: TreeModel,
    contexts: Sequence[Sequence[int]],
    scheme: AnyScheme,
    n: int,
    *,
    generator: torch.Generator | None = None,
    coins: CoinSource | None = None,
    variant: Variant = SPEC,
    keep_rounds: bool = False,
    progress: Callable[[int], None] | None = None,
) -> Decoded:
    """Repeat rounds until every trial has n tokens (each round continues from its own output)."""
    if not isinstance(variant, Variant):
        raise CaseError(f"variant={variant!r} must be a rheo_ref.variants.Variant (SPEC, or MUTANTS[name])")
    scheme.check_vocab(model.vocab_size)
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise CaseError(f"tokens={n!r} must be an integer >= 1")
    if (generator is None) == (coins is None):
        raise CaseError("decode needs exactly one source of randomness: generator= or coins=")
    layout = layout_for(scheme)
    variant.check_family(scheme.family)
    B, D = len(contexts), scheme.D
    state = model.start(contexts)
    dev = model.device
    out = torch.full((B, n + D + 2), -1, dtype=torch.int64, device=dev)  # [B, n+D+2]; last col: dump
    filled = torch.zeros(B, dtype=torch.int64, device=dev)  # [B]
    rounds = torch.zeros(B, dtype=torch.int64, device=dev)  # [B]
    first = None
    per_round = []
    col = torch.arange(D + 1, device=dev)  # [D+1]
    for i in range(n):  # a round emits >= 1 token, so n rounds always suffice
        c = coins(i) if coins is not None else round_coins(generator, B, layout)  # [B, n_coins]
        todo = filled < n  # [B]
        v = play_round(model, state, scheme, c.to(dev), todo, variant=variant, layout=layout)
        write = todo[:, None] & (col < v.n_emitted[:, None])  # [B, D+1]
        idx = torch.where(write, filled[:, None] + col, n + D + 1)  # [B, D+1]
        out.scatter_(1, idx, torch.where(write, v.emitted, -1))  # [B, n+D+2]
        filled += torch.where(todo, v.n_emitted, 0)  # [B]
        invalid = (write & (v.emitted < 0)).any(-1)  # [B] a bonus from a massless row (mutants only)
        filled = torch.where(invalid, n, filled)  # [B] such a trial stops; its tokens stay -1
        rounds += todo.long()
        first = v.n_emitted if first is None else first
        if keep_rounds:
            per_round.append(v.emitted)
        state = model.advance(state, v.emitted, v.n_emitted)
        if progress is not None:
            progress(1)
        if bool((filled >= n).all()):
            break
    return Decoded(out[:, :n], rounds, first, per_round)
