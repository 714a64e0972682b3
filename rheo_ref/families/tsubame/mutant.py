"""The mutant `tsubame-plan-after-sampling` (docs/SCHEMES.md §8): the topology sees the drawn tokens.

Instead of planning the shape on the deterministic Top-K tokens and then drawing tokens into it,
every expanded node's K children are *drawn* (with the case's sibling sampling, from q_samp at the
node's drawn path), each scored by the product of q_rank of the drawn tokens along its path; the
frontier is the W best nodes per depth, the R best nodes are kept (ties exactly as the rheo
builder's, docs/ALGORITHM.md §4: frontier by score then creation, rerank by score, then smaller
depth, then creation), and the kept drawn tree is verified by the case's verifier. Whether a child
survives the rerank now depends on its own token, so the verifier's proposal is no longer the
law the kept child was drawn from: lossy.

Its exact round law is enumerated by brute force (every joint draw during the build);
`replay_sampled_plan_round` runs one round from a block of uniforms (the gate's sampler of it).
"""

from __future__ import annotations

from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction

from rheo_ref.families.rheo.tree import frontier, rerank
from rheo_ref.families.static.exact import Law, _add
from rheo_ref.families.static.scheme import next_draw
from rheo_ref.families.tsubame.scheme import TsubameScheme
from rheo_ref.models import Case, Context
from rheo_ref.verifier_laws import DraftTree, topdown_law, traversal_law

ONE = Fraction(1)


@dataclass(frozen=True)
class Drawn:
    """A drawn node of the mutant's build (the root: id 0, parent -1, token -1)."""

    id: int
    parent: int
    depth: int
    token: int
    score: Fraction
    path: tuple[int, ...]  # tokens from the root (exclusive) to this node (inclusive)


def _kept_tree(nodes: Sequence[Drawn], R: int) -> DraftTree:
    """The R nodes the rheo family's global rerank keeps (`rheo_ref.families.rheo.tree.rerank`), in creation order."""
    ids = sorted(rerank(nodes, R))
    new = {0: 0, **{nid: i for i, nid in enumerate(ids, start=1)}}
    return DraftTree(tuple(new[nodes[i].parent] for i in ids), tuple(nodes[i].token for i in ids))


def sampled_plan_trees(case: Case, context: Context) -> Iterator[tuple[Fraction, DraftTree]]:
    """(probability, kept drawn tree) of every joint draw of the mutant's build from `context`."""
    sch = case.scheme_as(TsubameScheme)
    q_rank, q_samp = case.draft, case.q_samp_model
    ctx0 = tuple(context)

    def expand_queue(nodes: list[Drawn], queue: list[int], depth: int, prob: Fraction):
        if not queue:
            if depth + 1 < sch.D:
                nxt = frontier(nodes, depth + 1, sch.W)
                if nxt:
                    yield from expand_queue(nodes, nxt, depth + 1, prob)
                    return
            yield prob, _kept_tree(nodes, sch.R)
            return
        yield from draw_children(nodes, queue[0], queue[1:], depth, prob, ())

    def draw_children(nodes: list[Drawn], nid: int, rest: list[int], depth: int, prob: Fraction, drawn: tuple):
        parent = nodes[nid]
        ctx = ctx0 + parent.path
        law = next_draw(q_samp.row(ctx), drawn, sch.sampling) if len(drawn) < sch.K else []
        if not law:  # K children drawn (or wor's support used up)
            yield from expand_queue(nodes, rest, depth, prob)
            return
        qr = q_rank.row(ctx)
        for x, px in law:
            child = Drawn(len(nodes), nid, depth + 1, x, parent.score * qr[x], parent.path + (x,))
            yield from draw_children(nodes + [child], nid, rest, depth, prob * px, drawn + (x,))

    root = Drawn(0, -1, 0, -1, ONE, ())
    yield from expand_queue([root], [0], 0, ONE)


def verify_law(case: Case, tree: DraftTree, context: Context) -> Law:
    sch = case.scheme_as(TsubameScheme)
    if sch.verify == "traversal":
        return traversal_law(tree, case.target, case.q_samp_model, context, sch.sampling)
    return topdown_law(tree, case.target, case.q_samp_model, context, sch.verify)


def sampled_plan_round_law(case: Case, context: Context) -> tuple[Law, int]:
    """(round law, trees enumerated) of the mutant."""
    law: Law = defaultdict(Fraction)
    trees = 0
    for prob, tree in sampled_plan_trees(case, tuple(context)):
        trees += 1
        _add(law, prob, (), verify_law(case, tree, tuple(context)))
    return dict(law), trees


def _cdf(items: Sequence, masses: Sequence[Fraction]) -> tuple[list, list[Fraction], list[float]]:
    cums, cum = [], Fraction(0)
    for m in masses:
        cum += m
        cums.append(cum)
    return list(items), cums, [float(c) for c in cums]


def _first_above(cums: Sequence[Fraction], floats: Sequence[float], u: float) -> int:
    """The first i with u < cums[i] (len(cums) if none). floats[i] = float(cums[i]) rounded to
    nearest, so a float u < floats[i] is < cums[i] and u > floats[i] is > cums[i]: only a tie is
    compared exactly."""
    i = bisect_left(floats, u)
    while i < len(cums) and floats[i] == u and not u < cums[i]:
        i += 1
    return i


class SampledPlanReplay:
    """The mutant's round from uniforms, with the draw laws and the verifier's law of each kept tree
    cached per context (the gate draws tens of thousands of rounds from a handful of contexts).
    Coins are read in order: one per draw during the build (inverse CDF in token-id order over the
    next draw's law), then one for the verifier's exact law of the kept tree (inverse CDF over its
    sequences in sorted order). The first cumulative mass above the coin is found on the
    correctly rounded floats of the cumulative masses and settled exactly where the coin equals
    one (`_first_above`), so the draw is the exact inverse CDF's."""

    def __init__(self, case: Case) -> None:
        self.case, self.scheme = case, case.scheme_as(TsubameScheme)
        self._draws: dict[tuple, tuple[list, list[Fraction], list[float]]] = {}
        self._laws: dict[tuple, tuple[list, list[Fraction], list[float]]] = {}

    def _draw_cdf(self, ctx: Context, drawn: tuple[int, ...]) -> tuple[list, list[Fraction], list[float]]:
        key = (ctx, drawn)
        if key not in self._draws:
            law = next_draw(self.case.q_samp_model.row(ctx), drawn, self.scheme.sampling)
            self._draws[key] = _cdf([x for x, _ in law], [px for _, px in law])
        return self._draws[key]

    def _law_cdf(self, ctx: Context, tree: DraftTree) -> tuple[list, list[Fraction], list[float]]:
        key = (ctx, tree)
        if key not in self._laws:
            law = verify_law(self.case, tree, ctx)
            seqs = sorted(law)
            self._laws[key] = _cdf(seqs, [law[s] for s in seqs])
        return self._laws[key]

    def round(self, context: Context, coins: Sequence[float]) -> tuple[int, ...]:
        it = iter(coins)
        sch = self.scheme
        ctx0 = tuple(context)
        nodes = [Drawn(0, -1, 0, -1, ONE, ())]
        queue, depth = [0], 0
        while True:
            for nid in queue:
                parent = nodes[nid]
                ctx = ctx0 + parent.path
                qr = self.case.draft.row(ctx)
                drawn: tuple[int, ...] = ()
                for _ in range(sch.K):
                    toks, cums, floats = self._draw_cdf(ctx, drawn)
                    if not toks:  # wor: the support is used up
                        break
                    x = toks[_first_above(cums, floats, next(it))]
                    nodes.append(Drawn(len(nodes), nid, depth + 1, x, parent.score * qr[x], parent.path + (x,)))
                    drawn += (x,)
            if depth + 1 >= sch.D:
                break
            queue, depth = frontier(nodes, depth + 1, sch.W), depth + 1
            if not queue:
                break
        seqs, cums, floats = self._law_cdf(ctx0, _kept_tree(nodes, sch.R))
        return seqs[min(_first_above(cums, floats, next(it)), len(seqs) - 1)]


def replay_sampled_plan_round(case: Case, context: Context, coins: Sequence[float]) -> tuple[int, ...]:
    """One round of the mutant from uniforms (read in order: one per draw, then the verifier's
    law sampled by the last coin): a sampler of the exact law, for the gate's negative control."""
    return SampledPlanReplay(case).round(context, coins)
