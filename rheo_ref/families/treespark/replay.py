"""The treespark family driven by an explicit stream of uniforms: the reference side of the coupled
replay between `rheo_ref` and `rheo_fast.families.treespark.round` (docs/SCHEMES.md §13, "The coin stream").

One round reads one block of 2(N+1)+1 uniforms (N: the scheme's node budget), indexed by node id
in creation order (the root is 0), the static family's layout (`rheo_ref.families.treespark.layout`):
`coins[i]`, i = 1..N, draws node i's token (inverse CDF of q_samp(.|v) with the tokens already
drawn at v zeroed, token-id order, strict <); `coins[N+1+i]` is node i's accept coin (rrsw: accept
iff u < min(1, r(x)/s(x)); traversal: the first leaf v is accepted iff u < α[v]); `coins[2N+2]`
is the bonus coin. A coin no decision needs is skipped, never shifted. Under the own-survival
variant the discarded draw reads the coin of the node it would have been.

Besides the coins' margins (`CoinReader`), the margin records how close the builder's float
decisions came to flipping: the best bound against every other open slot's (an exact tie counts
as 0: float64 may order the two either way) and against θ, and (own-survival) the drawn
survival against θ; `comparable` rounds must be reproduced by float64 exactly.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from rheo_ref.coins import replay_rounds
from rheo_ref.families.static.replay import TOL, CoinReader, SampledTree, verify_topdown, verify_traversal
from rheo_ref.families.treespark.exact import Builder
from rheo_ref.families.treespark.layout import treespark_layout
from rheo_ref.families.treespark.scheme import TreeSparkScheme
from rheo_ref.models import Case, Context
from rheo_ref.variants import SPEC, Variant
from rheo_ref.verifier_laws import DraftTree


def build_by_coins(case: Case, context: Context, reader: CoinReader, variant: Variant = SPEC) -> DraftTree:
    """Run the builder, node i's token from its draw coin; record the heap's and θ's margins."""
    b = Builder.start(case, context, variant)
    theta = b.scheme.theta
    while True:
        top = b.best() if b.n < b.scheme.N else None
        if top is not None:
            for other in b.heap:
                if other is not top:
                    reader._near(float(top[0]) + 1.0, float(other[0]) + 1.0)  # (+1: an exact tie at 0 counts too)
            if theta > 0:
                reader._near(float(top[0]) + 1.0, float(theta) + 1.0)
        v = b.next_slot()
        if v is None:
            return b.tree()
        x = reader.draw(b.n + 1, b.draw_row(v))
        if variant.admission == "own_survival" and theta > 0:
            reader._near(float(b.own_survival(v, x)) + 1.0, float(theta) + 1.0)
        if b.own_survival_stops(v, x):
            return b.tree()
        b.add(v, x)


@dataclass(frozen=True)
class TreeSparkReplayRound:
    emitted: tuple[int, ...]
    tree: DraftTree
    margin: float

    def comparable(self, tol: float = TOL) -> bool:
        return self.margin > tol


def replay_treespark_round(
    case: Case, context: Context, coins: Sequence[float], variant: Variant = SPEC
) -> TreeSparkReplayRound:
    """One round of a treespark case from `context`, every random decision read from `coins`."""
    sch = case.scheme_as(TreeSparkScheme)
    variant.check_family("treespark")
    reader = CoinReader(coins, treespark_layout(sch))
    tree = build_by_coins(case, tuple(context), reader, variant)
    st = SampledTree(tree, tuple(range(len(tree.parents) + 1)))  # node ids are the coins' indices
    if sch.verify == "traversal":
        emitted = verify_traversal(st, case, tuple(context), reader, "wor")
    else:
        emitted = verify_topdown(st, case, tuple(context), reader, "rrsw")
    return TreeSparkReplayRound(emitted, tree, reader.margin)


def replay_treespark_decode(
    case: Case, coins: Callable[[int], Sequence[float]], n: int | None = None, variant: Variant = SPEC
) -> list[TreeSparkReplayRound]:
    """Rounds until n tokens (default case.tokens); round i reads the block `coins(i)`."""
    return replay_rounds(case, lambda ctx, block: replay_treespark_round(case, ctx, block, variant), coins, n)
