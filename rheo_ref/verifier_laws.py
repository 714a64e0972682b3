"""The static family's three verifiers, exactly, on one given draft tree (docs/SCHEMES.md).

Every verifier starts at a node with context c from r = p(.|c) and ends with one bonus token
drawn from what is left of the target there. Children are tried in draw order.
- `specinfer` (recursive rejection with replacement): accept child x w.p. min(1, r(x)/q(x)),
  q = q_samp(.|c) fixed; on reject r <- norm((r - q)+). With an ensemble weight w (static
  ensemble verification, transformers' `assistant_ensemble_weight`; lossy for w < 1) the
  acceptance is min(1, 1 - w + w·r(x)/q(x)) and the residual the same.
- `rrsw` (recursive rejection without replacement): s = q_samp(.|c); a child whose token has
  s(x) = 0 (a duplicate) is skipped; accept w.p. min(1, r(x)/s(x)); on reject
  r <- norm((r - s)+), then s(x) <- 0, s <- norm(s).
- `traversal` (Traversal Verification, sequence level, leaf to root): per node v a rate α[v]
  and rows Mb[v] (from p) and Ms[v] (from q_samp); the first leaf in post-order is accepted with
  its whole path w.p. α[v] (then the bonus comes from Mb[v]), else it is removed and its parent
  updated (`traversal_reject`).
Laws are computed in closed form: no coin is enumerated.

Every step reads a `VerifierSteps` (`steps=`, the spec by default), the verifiers' typed settings:
the order children are tried in (`sibling_order`), the top-down proposal row after a rejection
(`proposal_update`), traversal's rate after a removal (`traversal_rate`), next leaf (`leaf_order`),
Ms update (`ms_update`) and bonus row (`traversal_bonus`). They are the static family's settings
(`rheo_ref.family.Family.steps`): its mutants (`rheo_ref.families.static.settings`) change one
each, and `READ_BY` says which verifiers read each one. The families that build on these laws
(tsubame, treespark) verify with the spec's.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Literal

from rheo_ref.errors import CaseError
from rheo_ref.laws import Law, normalise
from rheo_ref.models import Context, Row, TableModel

ZERO, ONE = Fraction(0), Fraction(1)

SiblingOrder = Literal["draw", "token_id"]
ProposalUpdate = Literal["verifier", "fixed"]
TraversalRate = Literal["residual", "one_minus_ms"]
LeafOrder = Literal["post_order", "min_index"]
MsUpdate = Literal["own", "other"]
TraversalBonus = Literal["mb", "target"]


@dataclass(frozen=True)
class VerifierSteps:
    """How the three verifiers run, one field per step (docs/SCHEMES.md §2); the defaults are the spec."""

    sibling_order: SiblingOrder = "draw"  # children tried in draw order, or sorted by token id (ties: draw order)
    proposal_update: ProposalUpdate = "verifier"  # specinfer/rrsw: each one's own proposal row after a rejection;
    #                                            fixed: the row never changes (rrsw then verifies as specinfer)
    traversal_rate: TraversalRate = "residual"  # α[u] after a removal: S/(S + 1 - α[u]), or min(1, S/(1 - Ms[u][x]))
    leaf_order: LeafOrder = "post_order"  # traversal's next leaf: first in post-order, or the live leaf created first
    ms_update: MsUpdate = "own"  # traversal's Ms update: the tree's own sampling mode's, or the other's
    traversal_bonus: TraversalBonus = "mb"  # traversal's bonus row: Mb at the accepted node, or p there


VERIFIER_SPEC = VerifierSteps()
# The verifiers that read each setting (a setting read by none leaves their round unchanged)
READ_BY = {
    "sibling_order": ("specinfer", "rrsw", "traversal"),
    "proposal_update": ("rrsw",),
    "traversal_rate": ("traversal",),
    "leaf_order": ("traversal",),
    "ms_update": ("traversal",),
    "traversal_bonus": ("traversal",),
}


def positive_part(a: Sequence[Fraction], b: Sequence[Fraction]) -> list[Fraction]:
    """(a - b)+ entrywise."""
    return [max(ZERO, x - y) for x, y in zip(a, b)]


# --- specinfer ---------------------------------------------------------------------------------


def specinfer_accept(r: Row, q: Row, x: int, weight: Fraction = ONE) -> Fraction:
    """min(1, 1 - w + w·r(x)/q(x)); w = 1: min(1, r(x)/q(x))."""
    return min(ONE, 1 - weight + weight * r[x] / q[x])


def specinfer_reject(r: Row, q: Row) -> Row:
    """What is left of r once a child drawn from q is rejected (whatever its token)."""
    rest = positive_part(r, q)
    assert sum(rest, ZERO) > 0, "a rejection of probability 0 was followed"
    return normalise(rest, on_zero="zeros")


# --- rrsw --------------------------------------------------------------------------------------


def rrsw_accept(r: Row, s: Row, x: int) -> Fraction:
    return min(ONE, r[x] / s[x])


def rrsw_reject(r: Row, s: Row, x: int) -> tuple[Row, Row]:
    """(r, s) once child x is rejected: r <- norm((r - s)+) with s before removing x, then s
    loses x and is renormalised."""
    rest = positive_part(r, s)
    assert sum(rest, ZERO) > 0, "a rejection of probability 0 was followed"
    return normalise(rest, on_zero="zeros"), normalise(
        [ZERO if t == x else st for t, st in enumerate(s)], on_zero="zeros"
    )


def topdown_accept(r: Row, s: Row, x: int, verify: str, weight: Fraction = ONE) -> Fraction:
    """Acceptance of child x: specinfer's (with ensemble weight `weight`), or rrsw's."""
    return specinfer_accept(r, s, x, weight) if verify == "specinfer" else rrsw_accept(r, s, x)


def topdown_reject(r: Row, s: Row, x: int, verify: str, steps: VerifierSteps = VERIFIER_SPEC) -> tuple[Row, Row]:
    """(r, s) once child x is rejected: specinfer's rule, or rrsw's; `proposal_update` "fixed"
    keeps s (rrsw's residual is then specinfer's)."""
    if verify == "specinfer" or steps.proposal_update == "fixed":
        return specinfer_reject(r, s), s
    return rrsw_reject(r, s, x)


def try_order(kids: Sequence[int], token_of, steps: VerifierSteps = VERIFIER_SPEC) -> list[int]:
    """The order a node's children are tried in: draw (= index) order, or by token id (`sibling_order`)."""
    if steps.sibling_order == "token_id":
        return sorted(kids, key=lambda c: (token_of(c), c))
    return list(kids)


# --- traversal ---------------------------------------------------------------------------------


def child_rate(alpha: Fraction, Mb: Row, Ms: Row, x: int) -> Fraction:
    """α of a child with token x of a node in state (α, Mb, Ms): min(1, α·Mb(x)/Ms(x)), 0 if Ms(x) = 0."""
    return min(ONE, alpha * Mb[x] / Ms[x]) if Ms[x] else ZERO


OTHER_SAMPLING = {"iid": "wor", "wor": "iid"}


def traversal_reject(
    alpha: Fraction,
    Mb: Row,
    Ms: Row,
    x: int,
    sampling: str,
    *,
    root: bool = False,
    steps: VerifierSteps = VERIFIER_SPEC,
) -> tuple[Fraction, Row, Row]:
    """A node's (α, Mb, Ms) once its child with token x is removed (rejected with its subtree).

    R = (α·Mb - Ms)+, S = ΣR; α <- S / (S + 1 - α) (0 when S = 0; the root's stays 1);
    Mb <- R / S when S > 0; `wor` siblings: Ms loses x and is renormalised; `iid`: Ms unchanged.
    Settings: `traversal_rate` "one_minus_ms": α <- min(1, S / (1 - Ms(x))) (0 when S = 0; 1 when
    Ms(x) = 1, the limit); `ms_update` "other": the other sampling mode's Ms update.
    """
    R = positive_part([alpha * b for b in Mb], Ms)
    S = sum(R, ZERO)
    if root:
        new_alpha = ONE
    elif steps.traversal_rate == "one_minus_ms":
        new_alpha = ZERO if not S else ONE if Ms[x] == 1 else min(ONE, S / (1 - Ms[x]))
    else:
        new_alpha = S / (S + 1 - alpha) if S else ZERO
    new_Mb = tuple(t / S for t in R) if S else Mb
    mode = sampling if steps.ms_update == "own" else OTHER_SAMPLING[sampling]
    new_Ms = normalise([ZERO if t == x else m for t, m in enumerate(Ms)], on_zero="zeros") if mode == "wor" else Ms
    return new_alpha, new_Mb, new_Ms


# --- one given tree ----------------------------------------------------------------------------


def children_lists(parents: Sequence[int]) -> list[list[int]]:
    """Children of nodes 0..N, each list in draw (= index) order."""
    kids: list[list[int]] = [[] for _ in range(len(parents) + 1)]
    for i, u in enumerate(parents):
        kids[u].append(i + 1)
    return kids


@dataclass(frozen=True)
class DraftTree:
    """A draft tree with its tokens: node i+1 has parent `parents[i]` (0 = root) and token
    `tokens[i]`; a node's children in index order are its draw order."""

    parents: tuple[int, ...]
    tokens: tuple[int, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "parents", tuple(self.parents))
        object.__setattr__(self, "tokens", tuple(self.tokens))
        if len(self.parents) != len(self.tokens):
            raise CaseError(f"draft tree has {len(self.parents)} parents but {len(self.tokens)} tokens")
        for i, u in enumerate(self.parents):
            if not 0 <= u <= i:
                raise CaseError(f"draft tree: node {i + 1}'s parent {u} is out of order; allowed 0..{i}")

    def children(self) -> list[list[int]]:
        return children_lists(self.parents)

    def parent(self, v: int) -> int:
        return self.parents[v - 1]

    def token(self, v: int) -> int:
        return self.tokens[v - 1]

    def path(self, v: int) -> tuple[int, ...]:
        """Tokens from the root (exclusive) to node v (inclusive)."""
        out = []
        while v > 0:
            out.append(self.token(v))
            v = self.parent(v)
        return tuple(reversed(out))


def check_drawable(tree: DraftTree, q: TableModel, context: Context, sampling: str) -> None:
    """Every token must be one the draft could have drawn there (q_samp > 0; `wor`: no duplicates)."""
    for u, kids in enumerate(tree.children()):
        ctx = tuple(context) + tree.path(u)
        row = q.row(ctx)
        toks = [tree.token(c) for c in kids]
        for c, x in zip(kids, toks):
            if not 0 <= x < len(row) or row[x] == 0:
                raise CaseError(
                    f"draft tree: node {c}'s token {x} has q_samp 0 (or is outside the vocabulary) "
                    f"at context {list(ctx)}; the draft could not have drawn it"
                )
        if sampling == "wor" and len(set(toks)) < len(toks):
            raise CaseError(f"draft tree: node {u}'s children {toks} repeat a token; wor siblings are distinct")


def topdown_law(
    tree: DraftTree,
    p: TableModel,
    q: TableModel,
    context: Context,
    verify: str,
    steps: VerifierSteps = VERIFIER_SPEC,
    weight: Fraction = ONE,
) -> Law:
    """Law of the emitted sequence under `specinfer` (ensemble weight `weight`) or `rrsw` (top-down, token level)."""
    kids = tree.children()

    def level(v: int, ctx: Context) -> Law:
        r, s = p.row(ctx), q.row(ctx)  # s: specinfer's fixed q, rrsw's shrinking s
        out: Law = defaultdict(Fraction)
        stay = ONE  # probability that every child tried so far was rejected
        for c in try_order(kids[v], tree.token, steps):
            x = tree.token(c)
            if verify == "rrsw" and s[x] == 0:
                continue  # a duplicate of a rejected sibling: skipped
            a = topdown_accept(r, s, x, verify, weight)
            if a:
                for seq, pr in level(c, ctx + (x,)).items():
                    out[(x,) + seq] += stay * a * pr
            stay *= 1 - a
            if not stay:
                return dict(out)
            r, s = topdown_reject(r, s, x, verify, steps)
        for y, ry in enumerate(r):
            if ry:
                out[(y,)] += stay * ry
        return dict(out)

    return level(0, tuple(context))


class TraversalState:
    """Traversal Verification's state on one tree: α, Mb, Ms per node and the remaining children.
    `first_leaf` and `reject` are the two steps of the loop, `bonus_row` the row of the bonus at
    the accepted node; `traversal_law` runs it exactly."""

    def __init__(
        self,
        tree: DraftTree,
        p: TableModel,
        q: TableModel,
        *,
        sampling: str,
        context: Context = (),
        steps: VerifierSteps = VERIFIER_SPEC,
    ) -> None:
        self.tree, self.sampling, self.steps = tree, sampling, steps
        self.kids = tree.children()
        self.live = set(range(1, len(tree.parents) + 1))  # the non-root nodes not removed yet
        ctxs = [tuple(context) + tree.path(v) for v in range(len(tree.parents) + 1)]
        self.p: dict[int, Row] = {v: p.row(c) for v, c in enumerate(ctxs)}
        self.Mb: dict[int, Row] = dict(self.p)
        self.Ms: dict[int, Row] = {v: q.row(c) for v, c in enumerate(ctxs)}
        self.alpha: dict[int, Fraction] = {0: ONE}
        self._rates_below(0)

    def _rates_below(self, u: int) -> None:
        """Recompute α of every remaining node under u from u's state."""
        for c in self.kids[u]:
            self.alpha[c] = child_rate(self.alpha[u], self.Mb[u], self.Ms[u], self.tree.token(c))
            self._rates_below(c)

    def first_leaf(self) -> int:
        """The first leaf in post-order: from the root, always the first remaining child (in the
        `sibling_order`). `leaf_order` "min_index": the live leaf created first. The root when
        nothing is left."""
        if self.steps.leaf_order == "min_index":
            return min((v for v in self.live if not self.kids[v]), default=0)
        v = 0
        while self.kids[v]:
            v = try_order(self.kids[v], self.tree.token, self.steps)[0]
        return v

    def bonus_row(self, v: int) -> Row:
        """The row of the bonus once node v is accepted (v = 0: nothing was): Mb[v], or the
        original p at v (`traversal_bonus` "target")."""
        return self.p[v] if self.steps.traversal_bonus == "target" else self.Mb[v]

    def reject(self, v: int) -> None:
        """Remove leaf v and update its parent (and the rates below the parent)."""
        assert v != 0 and not self.kids[v], f"node {v} is not a non-root leaf"
        u = self.tree.parent(v)
        self.kids[u].remove(v)
        self.live.remove(v)
        self.alpha[u], self.Mb[u], self.Ms[u] = traversal_reject(
            self.alpha[u], self.Mb[u], self.Ms[u], self.tree.token(v), self.sampling, root=u == 0, steps=self.steps
        )
        self._rates_below(u)


def traversal_law(
    tree: DraftTree, p: TableModel, q: TableModel, context: Context, sampling: str, steps: VerifierSteps = VERIFIER_SPEC
) -> Law:
    """Law of the emitted sequence under `traversal`: one pass over the leaves it visits, since
    an accept ends the round (the state after each rejection is deterministic)."""
    st = TraversalState(tree, p, q, sampling=sampling, context=context, steps=steps)
    out: Law = defaultdict(Fraction)
    stay = ONE
    while True:
        v = st.first_leaf()
        a = st.alpha[v]  # the root's is 1: the bonus
        if a:
            path = tree.path(v)
            for y, by in enumerate(st.bonus_row(v)):
                if by:
                    out[path + (y,)] += stay * a * by
        stay *= 1 - a
        if not stay:
            return dict(out)
        st.reject(v)


def verify_tree_law(
    tree: DraftTree,
    p: TableModel,
    q: TableModel,
    *,
    verify: str,
    sampling: str,
    context: Context = (),
    steps: VerifierSteps = VERIFIER_SPEC,
    weight: Fraction = ONE,
) -> Law:
    """Exact law of what `verify` emits on the given tree (p: target, q: q_samp; `sampling`
    only matters to traversal's Ms update and to the check that the tree could be drawn)."""
    check_drawable(tree, q, context, sampling)
    if verify == "traversal":
        return traversal_law(tree, p, q, tuple(context), sampling, steps)
    if verify in ("specinfer", "rrsw"):
        return topdown_law(tree, p, q, tuple(context), verify, steps, weight)
    raise CaseError(f"unknown static verifier {verify!r}; allowed: specinfer, rrsw, traversal")
