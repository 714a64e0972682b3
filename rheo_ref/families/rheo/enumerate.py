"""Two exact enumerators of one round's trees (docs/ALGORITHM.md §7).

`brute`: every sampled identity is its own outcome, so a round with E expansions has up to
(V - m)^E trees. `classes`: sampled identities are grouped into equivalence classes that give
the same fills and the same factor; a class stays one outcome as long as its node is never
expanded (its identity is then summed out inside verification, `rheo_ref.families.rheo.verify`), and is split
into single tokens only when the node enters a frontier. Both report how many trees they
enumerated; their round laws must agree exactly.
"""

from __future__ import annotations

from collections.abc import Iterator
from fractions import Fraction

from rheo_ref.errors import CaseError
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.rheo.slots import Expansion
from rheo_ref.families.rheo.tree import Node, Nodes, build_tree, rerank
from rheo_ref.models import Case, Context

METHODS = ("dp", "classes", "brute")  # dp: rheo_ref.families.rheo.bestfirst (built on the classes below)
ZERO = Fraction(0)


class BruteChooser:
    """Every sampled identity separately."""

    def sample_groups(self, plan: Expansion, parent: Node) -> list[tuple[Fraction, tuple[int, ...]]]:
        qt = plan.qtilde_row()
        return [(qt[y], (y,)) for y in plan.support()]

    def resolve(self, node: Node) -> list[tuple[Fraction, int]]:  # brute never makes classes
        raise AssertionError("brute enumeration holds no class nodes")


class ClassChooser:
    """Sampled identities grouped by (fills, factor): equal topology, summed out unless expanded."""

    def sample_groups(self, plan: Expansion, parent: Node) -> list[tuple[Fraction, tuple[int, ...]]]:
        return plan.classes  # computed once per expansion plan

    def resolve(self, node: Node) -> list[tuple[Fraction, int]]:
        qt = node.qtilde_row()
        z = sum((qt[y] for y in node.tokens), ZERO)
        return [(qt[y] / z, y) for y in node.tokens]


def chooser_for(method: str):
    if method == "brute":
        return BruteChooser()
    if method == "classes":
        return ClassChooser()
    raise CaseError(f"unknown tree enumerator {method!r}; allowed: classes, brute (dp builds no whole trees)")


def enumerate_trees(
    case: Case, context: Context, method: str = "classes"
) -> Iterator[tuple[Fraction, Nodes, frozenset[int]]]:
    """(probability, all nodes, kept node ids) for every enumerated tree of a round from `context`."""
    for prob, nodes in build_tree(
        case.draft, case.q_samp_model, tuple(context), case.scheme_as(Scheme), chooser_for(method)
    ):
        yield prob, nodes, rerank(nodes, case.scheme_as(Scheme).R)


def expansions_per_round(scheme: Scheme) -> int:
    """Expansions in one round: the root, then min(W, K x previous width) per depth up to D-1
    (every expansion creates exactly K children, so this does not depend on the outcome)."""
    width, total = 1, 1
    for _ in range(1, scheme.D):
        width = min(scheme.W, width * scheme.K)
        total += width
    return total
