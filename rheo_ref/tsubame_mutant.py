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

from collections import defaultdict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from fractions import Fraction

from .models import Case, Context
from .slots import inverse_cdf
from .static import next_draw
from .static_exact import Law, _add
from .verifiers import DraftTree, topdown_law, traversal_law

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


def _frontier(nodes: Sequence[Drawn], depth: int, W: int) -> list[int]:
    cands = sorted((n for n in nodes if n.depth == depth), key=lambda n: (-n.score, n.id))
    return [n.id for n in cands[:W]]


def _kept_tree(nodes: Sequence[Drawn], R: int) -> DraftTree:
    """The R best non-root nodes (score, then smaller depth, then creation), in creation order."""
    best = sorted(nodes[1:], key=lambda n: (-n.score, n.depth, n.id))[:R]
    ids = sorted(n.id for n in best)
    new = {0: 0, **{nid: i for i, nid in enumerate(ids, start=1)}}
    for nid in ids:
        assert nodes[nid].parent in new, f"kept set not closed under parents at node {nid}"
    return DraftTree(tuple(new[nodes[i].parent] for i in ids), tuple(nodes[i].token for i in ids))


def sampled_plan_trees(case: Case, context: Context) -> Iterator[tuple[Fraction, DraftTree]]:
    """(probability, kept drawn tree) of every joint draw of the mutant's build from `context`."""
    sch = case.tsubame_scheme()
    q_rank, q_samp = case.draft, case.q_samp_model
    ctx0 = tuple(context)

    def expand_queue(nodes: list[Drawn], queue: list[int], depth: int, prob: Fraction):
        if not queue:
            if depth + 1 < sch.D:
                nxt = _frontier(nodes, depth + 1, sch.W)
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
    sch = case.tsubame_scheme()
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


def replay_sampled_plan_round(case: Case, context: Context, coins: Sequence[float]) -> tuple[int, ...]:
    """One round of the mutant from uniforms (read in order: one per draw, then the verifier's
    law sampled by the last coin): a sampler of the exact law, for the gate's negative control."""
    it = iter(coins)
    sch = case.tsubame_scheme()
    ctx0 = tuple(context)
    nodes = [Drawn(0, -1, 0, -1, ONE, ())]
    queue, depth = [0], 0
    while True:
        for nid in queue:
            parent = nodes[nid]
            ctx = ctx0 + parent.path
            qr = case.draft.row(ctx)
            drawn: tuple[int, ...] = ()
            for _ in range(sch.K):
                sib = next_draw(case.q_samp_model.row(ctx), drawn, sch.sampling)
                if not sib:
                    break
                row = [Fraction(0)] * case.vocab_size
                for x, px in sib:
                    row[x] = px
                x = inverse_cdf(row, Fraction(next(it)))
                nodes.append(Drawn(len(nodes), nid, depth + 1, x, parent.score * qr[x], parent.path + (x,)))
                drawn += (x,)
        if depth + 1 >= sch.D:
            break
        queue, depth = _frontier(nodes, depth + 1, sch.W), depth + 1
        if not queue:
            break
    law = verify_law(case, _kept_tree(nodes, sch.R), ctx0)
    seqs = sorted(law)
    u, cum = Fraction(next(it)), Fraction(0)
    for seq in seqs:
        cum += law[seq]
        if u < cum:
            return seq
    return seqs[-1]
