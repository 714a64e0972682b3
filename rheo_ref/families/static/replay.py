"""The static family driven by an explicit stream of uniforms: the reference side of the coupled
replay between `rheo_ref` and `rheo_fast.families.static.round` (docs/SCHEMES.md §7, "The coin stream").

One round reads one block of 2(N+1)+1 uniforms u in [0, 1) (floats, read exactly as Fractions),
N being the shape's draft nodes, indexed by node id (the root is 0, nodes in creation order),
as `rheo_ref.families.static.layout.StaticLayout` lays it out:

- `coins[i]`, i = 1..N: the *draw coin* of node i. Its token is the inverse CDF, in token-id
  order with strict `<` (`rheo_ref.coins.inverse_cdf`), of its sibling row: `iid`: q_samp(.|c);
  `wor`: q_samp(.|c) with the tokens of its earlier siblings zeroed (renormalised implicitly).
  `coins[0]` (the root's) is never used, nor is the coin of a node that is not drafted.
- `coins[N+1+i]`: the *accept coin* of node i, read when the verifier tries node i:
  `specinfer` / `rrsw` accept child x iff u < min(1, r(x)/s(x)) (a skipped duplicate reads
  nothing); `traversal` accepts node v, when it is the first leaf, iff u < α[v]. Every node is
  tried at most once, so one coin each suffices, and the order in which coins are read (top-down:
  the accepted path's children in draw order; traversal: the drafted nodes in post-order) never
  changes which coin a decision reads.
- `coins[2N+2]`: the *bonus coin*: the bonus is the inverse CDF of the final row (the residual
  r, or traversal's Mb at the accepted node).

Unused coins are skipped, never shifted. `CoinReader` also records how close each decision came
to flipping (`margin`): a float64 implementation must agree with this one whenever the margin
exceeds its rounding error (`comparable`). A variant of the static family (`variant=`, the spec
by default) is read by the verifiers' steps (`rheo_ref.verifier_laws`); a mutant reads the same coins.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from fractions import Fraction

from rheo_ref.coins import CoinLayout, coin, inverse_cdf, replay_rounds
from rheo_ref.errors import CaseError
from rheo_ref.families.static.layout import static_layout
from rheo_ref.families.static.scheme import StaticScheme
from rheo_ref.models import Case, Context, Row
from rheo_ref.variants import SPEC, Variant
from rheo_ref.verifier_laws import DraftTree, TraversalState, children_lists, topdown_accept, topdown_reject, try_order

ZERO = Fraction(0)
ONE = Fraction(1)
TOL = 1e-9  # decisions closer than this to flipping are not compared with float64 (`comparable`)


class CoinReader:
    """The coin block of one round (laid out by `layout`, a family's `rheo_ref.coins.CoinLayout`),
    read by decision; `margin` is the smallest distance (a float) of a coin to a boundary that
    would have changed a decision (agreements on 0 do not count)."""

    def __init__(self, coins: Sequence[float], layout: CoinLayout) -> None:
        if len(coins) != layout.n_coins:
            raise CaseError(f"a round with {layout.N} node slots needs {layout.n_coins} coins, got {len(coins)}")
        self.coins, self.layout = coins, layout
        self.margin = math.inf

    def _near(self, coin: float, boundary: float) -> None:
        if coin or boundary:  # 0 < 0 is false in floats too
            self.margin = min(self.margin, abs(coin - boundary))

    def _cdf(self, row: Sequence[Fraction], i: int) -> int:
        """The inverse CDF at coin i; its margin: the coin's distance to the chosen token's two
        cumulative boundaries (the others are farther, the sums being monotone)."""
        t = inverse_cdf(row, coin(self.coins[i]))
        f = [float(x) for x in row]  # (margins need no exactness)
        total, below = sum(f), sum(f[:t])
        self._near(self.coins[i], below / total)
        self._near(self.coins[i], (below + f[t]) / total)
        return t

    def draw(self, node: int, row: Sequence[Fraction]) -> int:
        """Node `node`'s token from its sibling row (unnormalised, mass > 0)."""
        return self._cdf(row, node)

    def accept(self, node: int, a: Fraction) -> bool:
        """Whether the verifier accepts node `node`, tried with acceptance probability a."""
        i = self.layout.accept(node)
        self._near(self.coins[i], float(a))
        return coin(self.coins[i]) < a

    def bonus(self, row: Sequence[Fraction]) -> int:
        return self._cdf(row, self.layout.bonus)


def sibling_row(q: Row, drawn: Sequence[int], sampling: str) -> Row:
    """The row a node's next child is drawn from (unnormalised): `iid` q itself, `wor` q with the
    tokens already drawn at the node zeroed (mass 0: the child is not drafted)."""
    if sampling == "iid":
        return q
    return tuple(ZERO if t in drawn else x for t, x in enumerate(q))


@dataclass(frozen=True)
class SampledTree:
    """The drafted nodes of one round as a `DraftTree` (renumbered in creation order), and the
    shape's node id of each (`ids[v]`, `ids[0] = 0`): the coins are indexed by the shape's ids."""

    tree: DraftTree
    ids: tuple[int, ...]


def draw_tree(case: Case, context: Context, reader: CoinReader) -> SampledTree:
    """Draw every node in creation order by its draw coin; `wor` nodes past the support are not
    drafted, and neither are their subtrees."""
    sch, q = case.scheme_as(StaticScheme), case.q_samp_model
    kids = children_lists(sch.parents)
    new_id, paths = {0: 0}, {0: tuple(context)}
    parents: list[int] = []
    tokens: list[int] = []
    ids = [0]
    for c in range(1, sch.nodes + 1):
        u = sch.parents[c - 1]
        if u not in new_id:
            continue  # the parent was not drafted
        drawn = [tokens[new_id[s] - 1] for s in kids[u] if s < c and s in new_id]
        row = sibling_row(q.row(paths[u]), drawn, sch.sampling)
        if not any(row):
            continue  # wor: the parent's support is used up
        x = reader.draw(c, row)
        parents.append(new_id[u])
        tokens.append(x)
        ids.append(c)
        new_id[c] = len(tokens)
        paths[c] = paths[u] + (x,)
    return SampledTree(DraftTree(tuple(parents), tuple(tokens)), tuple(ids))


def verify_topdown(
    st: SampledTree,
    case: Case,
    context: Context,
    reader: CoinReader,
    verify: str,
    variant: Variant = SPEC,
    weight: Fraction = ONE,
) -> tuple[int, ...]:
    """`specinfer` / `rrsw` on the drawn tree: from the root, children in draw order (the
    variant's `sibling_order`), each with its accept coin; the bonus from the final residual.
    `weight`: specinfer's ensemble weight (a static scheme's `weight`; 1 for plain specinfer)."""
    tree, p, q = st.tree, case.target, case.q_samp_model
    kids = tree.children()
    v, ctx, out = 0, tuple(context), []
    while True:
        r, s = p.row(ctx), q.row(ctx)  # s: specinfer's fixed q, rrsw's shrinking s
        for c in try_order(kids[v], tree.token, variant):
            x = tree.token(c)
            if verify == "rrsw" and s[x] == 0:
                continue  # a duplicate of a rejected sibling: skipped, no coin read
            if reader.accept(st.ids[c], topdown_accept(r, s, x, verify, weight)):
                out.append(x)
                v, ctx = c, ctx + (x,)
                break
            r, s = topdown_reject(r, s, x, verify, variant)
        else:
            out.append(reader.bonus(r))
            return tuple(out)


def verify_traversal(
    st: SampledTree, case: Case, context: Context, reader: CoinReader, sampling: str, variant: Variant = SPEC
) -> tuple[int, ...]:
    """Traversal Verification on the drawn tree: the first leaf in post-order is accepted iff its
    accept coin is below α; `sampling` chooses the Ms update (the tree's own sampling: lossless)."""
    state = TraversalState(st.tree, case.target, case.q_samp_model, sampling=sampling, context=context, variant=variant)
    while True:
        v = state.first_leaf()
        if v == 0:
            return (reader.bonus(state.bonus_row(0)),)
        if reader.accept(st.ids[v], state.alpha[v]):
            return st.tree.path(v) + (reader.bonus(state.bonus_row(v)),)
        state.reject(v)


@dataclass(frozen=True)
class StaticReplayRound:
    emitted: tuple[int, ...]
    drawn: SampledTree
    margin: float  # the closest call of any decision (inf: none was close to anything)

    def comparable(self, tol: float = TOL) -> bool:
        """Whether float64 must take every decision of this round as exact arithmetic did."""
        return self.margin > tol


def replay_static_round(
    case: Case, context: Context, coins: Sequence[float], variant: Variant = SPEC
) -> StaticReplayRound:
    """One round of a static case from `context`, every random decision read from `coins`."""
    sch = case.scheme_as(StaticScheme)
    variant.check_family("static")
    reader = CoinReader(coins, static_layout(sch))
    drawn = draw_tree(case, context, reader)
    if sch.verify == "traversal":
        emitted = verify_traversal(drawn, case, context, reader, sch.sampling, variant)
    else:
        emitted = verify_topdown(drawn, case, context, reader, sch.verify, variant, sch.weight)
    return StaticReplayRound(emitted, drawn, reader.margin)


def replay_static_decode(
    case: Case, coins: Callable[[int], Sequence[float]], n: int | None = None, variant: Variant = SPEC
) -> list[StaticReplayRound]:
    """Rounds until n tokens (default case.tokens); round i reads the block `coins(i)`."""
    return replay_rounds(case, lambda ctx, block: replay_static_round(case, ctx, block, variant), coins, n)
