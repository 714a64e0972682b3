"""The dynamic tree: EAGLE-2/3 expand-then-rerank (docs/ALGORITHM.md §4).

The builder is written once and driven by a *chooser* that decides what the sampled slot of each
expansion holds. Enumerators (`rheo_ref.families.rheo.enumerate`) branch over every choice and carry its
probability; a sampler (`rheo_ref.families.rheo.replay`) follows one choice per coin. A node may hold a *class*
of sampled tokens (several ids that lead to the same fills and factor); the builder splits such a
node into single tokens only when it is about to be expanded, because only then does its identity
reach beyond its own level (docs/ALGORITHM.md §7).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from math import log
from typing import Protocol

from rheo_ref.errors import CaseError, TooLargeError
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.rheo.slots import Expansion, expand
from rheo_ref.models import Context, Row
from rheo_ref.sizes import expansions

ONE = Fraction(1)


@dataclass(frozen=True)
class Node:
    """A node of the draft tree; `id` is its creation index (the root is 0)."""

    id: int
    parent: int  # -1 for the root
    depth: int
    kind: str  # "root", "det", "sampled" or "fill"
    slot: int  # slot index among its siblings (-1 for the root)
    tokens: tuple[int, ...]  # () for the root; (t,) once known; several for a class of sampled ids
    score: Fraction  # product of factors along the path (root: 1)
    qtilde: Row | None = None  # q̃ of a sampled node

    def qtilde_row(self) -> Row:
        """q̃ of this sampled node (a point mass has none)."""
        if self.qtilde is None:
            raise CaseError(f"node {self.id} ({self.kind}) has no q̃: only a sampled node has one")
        return self.qtilde

    @property
    def token(self) -> int:
        if len(self.tokens) != 1:
            raise CaseError(f"node {self.id} holds {len(self.tokens)} candidate tokens, not one")
        return self.tokens[0]


Nodes = tuple[Node, ...]


class Ranked(Protocol):
    """What the frontier and the global rerank read of a node (a `Node`, or another builder's)."""

    @property
    def id(self) -> int: ...
    @property
    def parent(self) -> int: ...
    @property
    def depth(self) -> int: ...
    @property
    def score(self) -> Fraction: ...


class RowModel(Protocol):
    """Anything with rows by context, like a `TableModel`."""

    def row(self, context: Context) -> Row: ...


class Chooser(Protocol):
    """Decides the sampled slots: each call returns weighted alternatives (weights sum to 1)."""

    def sample_groups(self, plan: Expansion, parent: Node) -> list[tuple[Fraction, tuple[int, ...]]]:
        """Alternatives for the sampled token: (conditional probability, token class)."""

    def resolve(self, node: Node) -> list[tuple[Fraction, int]]:
        """Alternatives for one token of a class node about to be expanded."""


def path_tokens(nodes: Sequence[Node], nid: int) -> Context:
    """Tokens from the root (exclusive) to node `nid` (inclusive)."""
    out = []
    while nid > 0:
        out.append(nodes[nid].token)
        nid = nodes[nid].parent
    return tuple(reversed(out))


def frontier(nodes: Sequence[Ranked], depth: int, W: int) -> list[int]:
    """The W depth-`depth` nodes of highest score; ties: earlier creation first."""
    cands = [n for n in nodes if n.depth == depth]
    cands.sort(key=lambda n: (-n.score, n.id))
    return [n.id for n in cands[:W]]


def rerank_key(n: Ranked) -> tuple:
    """Global rerank order: higher score first; ties by smaller depth, then earlier creation."""
    return (-n.score, n.depth, n.id)


def rerank(nodes: Sequence[Ranked], R: int) -> frozenset[int]:
    """Keep the R non-root nodes first in `rerank_key` order."""
    cands = sorted(nodes[1:], key=rerank_key)
    kept = frozenset(n.id for n in cands[:R])
    for i in kept:
        assert nodes[i].parent == 0 or nodes[i].parent in kept, f"kept set not closed under parents at node {i}"
    return kept


def children(nodes: Sequence[Node], kept: frozenset[int] | None = None) -> dict[int, list[Node]]:
    """Kept children of every node, in creation (= slot) order."""
    out: dict[int, list[Node]] = {n.id: [] for n in nodes}
    for n in nodes[1:]:
        if kept is None or n.id in kept:
            out[n.parent].append(n)
    return out


# `build_tree` recurses once per expansion and once more per level: at most 2E + D + 32 frames for E
# expansions of D levels (measured by tests/test_files_kept.py), so 200 expansions stay within ~630
# of Python's default 1,000 frames, leaving the rest to its caller (the CLI, a test runner).
MAX_BUILD_EXPANSIONS = 200
BUILD_FRAMES = 3 * MAX_BUILD_EXPANSIONS + 32  # 2E + D + 32 with D <= E


def check_build(scheme: Scheme, what: str) -> None:
    """Refuse, before any work, a scheme whose tree building would recurse past Python's stack."""
    E = expansions(scheme.K, scheme.W, scheme.D)
    if E > MAX_BUILD_EXPANSIONS:
        raise TooLargeError(
            f"{what}: building its tree recurses once per expansion, {E:,} expansions a round "
            f"(K={scheme.K}, W={scheme.W}, D={scheme.D}); allowed: at most {MAX_BUILD_EXPANSIONS} (Python's stack)"
        )


def build_tree(
    draft: RowModel, draft_sample: RowModel, context: Context, scheme: Scheme, chooser: Chooser
) -> Iterator[tuple[Fraction, Nodes]]:
    """Every tree the chooser allows, with its probability (before the global rerank)."""
    check_build(scheme, "scheme")
    root = Node(0, -1, 0, "root", -1, (), ONE)

    def expand_queue(
        nodes: list[Node], queue: list[int], depth: int, prob: Fraction
    ) -> Iterator[tuple[Fraction, Nodes]]:
        if not queue:
            if depth + 1 < scheme.D:
                nxt = frontier(nodes, depth + 1, scheme.W)
                if nxt:
                    yield from expand_queue(nodes, nxt, depth + 1, prob)
                    return
            yield prob, tuple(nodes)
            return
        nid, rest = queue[0], queue[1:]
        node = nodes[nid]
        if len(node.tokens) > 1:  # a class about to be expanded: its identity now matters
            for w, y in chooser.resolve(node):
                split = list(nodes)
                split[nid] = replace(node, tokens=(y,))
                yield from expand_one(split, nid, rest, depth, prob * w)
        else:
            yield from expand_one(nodes, nid, rest, depth, prob)

    def expand_one(
        nodes: list[Node], nid: int, rest: list[int], depth: int, prob: Fraction
    ) -> Iterator[tuple[Fraction, Nodes]]:
        ctx = context + path_tokens(nodes, nid)
        parent = nodes[nid]
        plan = expand(draft.row(ctx), draft_sample.row(ctx), scheme.K, scheme.m, scheme.proxy)

        def child(slot: int, tokens: tuple[int, ...], kind: str, factor: Fraction, qt: Row | None, offset: int) -> Node:
            return Node(len(nodes) + offset, nid, depth + 1, kind, slot, tokens, parent.score * factor, qt)

        dets = [child(i, (t,), "det", f, None, i) for i, (t, f) in enumerate(plan.det)]
        if plan.qtilde is None:
            yield from expand_queue(nodes + dets, rest, depth, prob)
            return
        m = scheme.m
        for w, ys in chooser.sample_groups(plan, parent):
            y = ys[0]
            sampled = child(m, ys, "sampled", plan.factor_for(y), plan.qtilde, m)
            fills = [child(m + 1 + i, (t,), "fill", f, None, m + 1 + i) for i, (t, f) in enumerate(plan.fills_for(y))]
            yield from expand_queue(nodes + dets + [sampled] + fills, rest, depth, prob * w)

    yield from expand_queue([root], [0], 0, ONE)


def min_score_gap(nodes: Sequence[Node]) -> float:
    """Smallest |log s_a - log s_b| over node pairs whose exact scores differ (docs/ALGORITHM.md §8).

    Float implementations may break near-ties differently from the exact order; cases whose gap
    is below 1e-9 are not comparable outcome for outcome. Returns inf when there is no pair.
    """
    logs = sorted({n.score for n in nodes[1:] if n.score > 0})
    gaps = [log(b) - log(a) for a, b in zip(logs, logs[1:])]
    return min(gaps, default=float("inf"))
