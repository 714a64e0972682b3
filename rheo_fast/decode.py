"""One round and multi-round decoding (docs/ALGORITHM.md §4-§6), coupled to the reference.

Randomness comes only from the caller's torch.Generator, as one fixed-size block of float64
uniforms in [0, 1) per round and trial (`Layout.n_coins` = 2(N+1)+1 coins, N = non-root nodes):

    coins[0 .. N]        sample coin of node i: draws the sampled token when node i is expanded
                         (node 0 = root); unused when i is not expanded or has no sampled slot;
    coins[N+1 .. 2N+1]   accept coin of node i (at N+1+i): decides whether child i is accepted
                         when verification tries it (index N+1 = root: unused);
    coins[2N+2]          bonus coin: draws the bonus token (inverse CDF, token-id order).

`rheo_ref.families.rheo.replay` consumes the very same block with exact arithmetic, so both emit the same
tokens (docs/FAST_PATH.md). Unused coins are still drawn: the stream never depends on outcomes.
A scheme of the `static` family runs `rheo_fast.families.static.round.static_round` instead (its own block of
2(N+1)+1 coins, docs/SCHEMES.md §7), one of the `tsubame` family `rheo_fast.families.tsubame.round.tsubame_round`
(2(R+1)+1 coins); `layout_for` gives each family's block, and `decode` is the one multi-round loop.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import torch
from torch import Tensor

from rheo_fast.families.static.round import check_static_round, static_round
from rheo_fast.families.static.tree import StaticLayout, static_layout
from rheo_fast.families.treespark.round import TreeSparkLayout, check_treespark_round, treespark_layout, treespark_round
from rheo_fast.families.tsubame.mutant import sampled_plan_round
from rheo_fast.families.tsubame.round import TsubameLayout, tsubame_layout, tsubame_round
from rheo_ref.errors import CaseError
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.static.scheme import StaticScheme
from rheo_ref.families.treespark.scheme import TreeSparkScheme
from rheo_ref.families.tsubame.scheme import TsubameScheme
from rheo_ref.models import AnyScheme
from rheo_ref.variants import SPEC, Variant

from .models import TreeModel, as_rows
from .tree import Layout, Tree, build_tree
from .verify import Verdict, verify

CoinSource = Callable[[int], Tensor]  # round index -> coins [B, n_coins] float64


AnyLayout = Layout | StaticLayout | TsubameLayout | TreeSparkLayout


def layout_for(scheme: AnyScheme) -> AnyLayout:
    """The per-round coin layout of a scheme of any family with a fast path (`.n_coins` sizes the block)."""
    if isinstance(scheme, StaticScheme):
        return static_layout(scheme)
    if isinstance(scheme, TsubameScheme):
        return tsubame_layout(scheme)
    if isinstance(scheme, TreeSparkScheme):
        return treespark_layout(scheme)
    if isinstance(scheme, Scheme):
        return Layout(scheme.K, scheme.W, scheme.D)
    raise CaseError(f"scheme family {scheme.family!r} has no fast path in this version")


def round_coins(generator: torch.Generator, B: int, layout: AnyLayout) -> Tensor:
    """The coin block of one round: [B, 2(N+1)+1] float64 uniforms on the generator's device."""
    return torch.rand((B, layout.n_coins), generator=generator, dtype=torch.float64, device=generator.device)


def split_coins(coins: Tensor, layout: Layout) -> tuple[Tensor, Tensor, Tensor]:
    n = layout.N + 1
    return coins[:, :n], coins[:, n : 2 * n], coins[:, 2 * n]  # [B, 1+N], [B, 1+N], [B]


@dataclass
class RoundResult:
    tree: Tree
    verdict: Verdict
    missing_target: Tensor  # [B] bool: a visited node's context has no target row
    seconds: tuple[float, float, float] = (0.0, 0.0, 0.0)  # wall time of build, target, verify (host clock:
    # on CUDA only meaningful when the model syncs)


def run_round(
    model: TreeModel,
    state: Any,
    scheme: Scheme,
    coins: Tensor,
    *,
    variant: Variant = SPEC,
    layout: Layout | None = None,
) -> RoundResult:
    """Build, rerank and verify one tree per trial; coins [B, n_coins]."""
    layout = layout or Layout(scheme.K, scheme.W, scheme.D)
    sample_c, accept_c, bonus_c = split_coins(coins, layout)
    t0 = time.perf_counter()
    tree = build_tree(model, state, scheme, layout, sample_c, variant)
    t1 = time.perf_counter()
    p = as_rows(model.target(state, tree))  # rows [B, V] at any nodes [B]
    t2 = time.perf_counter()
    v = verify(tree, p, accept_c, bonus_c, scheme.K, scheme.m, scheme.D, scheme.verify, variant)
    return RoundResult(tree, v, v.missing, (t1 - t0, t2 - t1, time.perf_counter() - t2))


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
    layout: AnyLayout,
) -> Verdict:
    """One round of any family with a fast path, refusals checked for the trials still decoding (todo [B])."""
    if isinstance(scheme, TsubameScheme):
        assert isinstance(layout, TsubameLayout)
        if (
            variant.plan_tokens == "sampled"
        ):  # the mutant: reference sampler per trial (rheo_fast.families.tsubame.mutant)
            return sampled_plan_round(model, state, scheme, coins, todo)
        return tsubame_round(model, state, scheme, coins, todo, layout=layout, variant=variant).verdict
    if isinstance(scheme, TreeSparkScheme):
        assert isinstance(layout, TreeSparkLayout)
        tres = treespark_round(model, state, scheme, coins, layout=layout, variant=variant)
        check_treespark_round(model, state, tres, todo)
        return tres.verdict
    if isinstance(scheme, StaticScheme):
        assert isinstance(layout, StaticLayout)
        sres = static_round(model, state, scheme, coins, layout=layout, variant=variant)
        check_static_round(model, state, sres, todo)
        return sres.verdict
    assert isinstance(layout, Layout)
    res = run_round(model, state, scheme, coins, variant=variant, layout=layout)
    check_round(model, state, res, scheme, todo)
    return res.verdict


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


def check_round(model: TreeModel, state: Any, res: RoundResult, scheme: Scheme, todo: Tensor) -> None:
    """Refuse what the reference refuses (missing rows, proxy factors > 1), one sync per round."""
    t = res.tree
    flags = torch.stack(
        [(t.missing & todo).any(), (res.missing_target & todo).any(), (t.bad_factor & todo).any()]
    )  # [3]
    miss_d, miss_t, bad = flags.tolist()
    if miss_d or miss_t:
        which, nodes, table = (
            ("draft", t.expanded, "q_rank") if miss_d else ("target", res.verdict.visited.clamp(min=0), "p")
        )
        ctx = model.missing_context(state, t, nodes, table)
        if ctx is None and miss_d:
            ctx = model.missing_context(state, t, nodes, "q_samp")
        where = f" (ending {ctx})" if ctx is not None else ""
        raise CaseError(f"{which}: a reachable context{where} has no row (NaN); every reachable context needs one")
    if bad:
        raise CaseError(f"proxy {scheme.proxy} gives a factor > 1; the kept tree would not be closed under parents")
