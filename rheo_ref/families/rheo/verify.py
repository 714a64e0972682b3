"""Verification of one round, as an exact law (docs/ALGORITHM.md §5).

At each node the target row r = p(.|context) meets the kept children in the rule's order:
`rheo` (OT order): sampled child first, then top-m, then fills; `rrsw`: top-m, sampled, fills.
A sampled child t (drawn from q̃) is accepted w.p. min(1, r(t)/q̃(t)), else r <- norm((r - q̃)+);
a point mass t is accepted w.p. r(t), else r <- norm(r with t zeroed). On accept we move to the
child; if all are rejected a bonus token is drawn from r. No coin is enumerated: the law is
computed in closed form. A sampled child holding a class of tokens (a leaf, never expanded)
is summed out here: its identity is q̃ restricted to the class, and the residual after a
rejection does not depend on it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Sequence
from fractions import Fraction

from rheo_ref.families.rheo.tree import Node, children
from rheo_ref.laws import Law, normalise
from rheo_ref.models import Context, Row, TableModel

ZERO = Fraction(0)
ONE = Fraction(1)


def residual_sampled(r: Row, qtilde: Row) -> Row:
    """norm(max(0, r - q̃)): what is left of r once a sampled token is rejected."""
    return normalise([max(ZERO, a - b) for a, b in zip(r, qtilde)])


def residual_point(r: Row, t: int) -> Row:
    """norm(r with t zeroed): what is left of r once the point mass t is rejected."""
    return normalise([ZERO if i == t else x for i, x in enumerate(r)])


def verification_order(kids: list[Node], verify: str) -> list[Node]:
    """`rrsw`: slot order (top-m, sampled, fills). `rheo`: the sampled child first."""
    if verify == "rheo":
        return sorted(kids, key=lambda n: (n.kind != "sampled", n.slot))
    return sorted(kids, key=lambda n: n.slot)


class Rules:
    """The verification rules of docs/ALGORITHM.md §5. Deliberately broken variants (mutants, the negative
    controls of the lossless gate) subclass this and override one method; the default is the spec."""

    def accept_sampled(self, r: Row, qtilde: Row, y: int) -> Fraction:
        return min(ONE, r[y] / qtilde[y])

    def residual_sampled(self, r: Row, qtilde: Row) -> Row:
        return residual_sampled(r, qtilde)

    def residual_point(self, r: Row, t: int) -> Row:
        return residual_point(r, t)

    def bonus(self, r: Row, p: Row) -> Row:
        """The row the bonus token is drawn from once every child is rejected."""
        return r

    def next_row(self, r: Row, p_child: Row) -> Row:
        """The row verification restarts with after an accept: p at the child's context."""
        return p_child

    def verification_order(self, kids: list[Node], verify: str) -> list[Node]:
        return verification_order(kids, verify)


SPEC_RULES = Rules()  # the spec's verification rules (a mutant overrides one method)


def level_law(r: Row, tried: Sequence[Node], below: Callable[[Node, int, Row], Law], rules: Rules = SPEC_RULES) -> Law:
    """What verification emits from one node: its kept children `tried` in the rule's order meet
    the residual r (p at the node on arrival). `below(child, y, r)` is the law emitted once
    `child`, holding y, is accepted with residual r. A child holding a class of tokens (never
    expanded) is summed out: given the class its identity has law q̃ restricted to the class, and
    the residual after a rejection does not depend on it."""
    p = r
    out: Law = defaultdict(Fraction)
    stay = ONE  # probability that every child tried so far was rejected
    for ch in tried:
        if ch.kind == "sampled":
            qt = ch.qtilde_row()
            z_class = sum((qt[y] for y in ch.tokens), ZERO)
            accepted = ZERO
            for y in ch.tokens:
                a = qt[y] / z_class * rules.accept_sampled(r, qt, y)
                if a:
                    accepted += a
                    w = stay * a
                    for s, pr in below(ch, y, r).items():
                        out[(y,) + s] += w * pr
            reject = ONE - accepted
            if reject:
                r = rules.residual_sampled(r, qt)
        else:
            t = ch.token
            a = r[t]
            if a:
                w = stay * a
                for s, pr in below(ch, t, r).items():
                    out[(t,) + s] += w * pr
            reject = ONE - a
            if reject:
                r = rules.residual_point(r, t)
        stay *= reject
        if not stay:
            break
    if stay:
        for v, pv in enumerate(rules.bonus(r, p)):
            if pv:
                out[(v,)] += stay * pv
    return out


def verify_law(
    nodes: Sequence[Node],
    kept: frozenset[int],
    target: TableModel,
    context: Context,
    verify: str,
    rules: Rules = SPEC_RULES,
) -> Law:
    """Exact law of the emitted token sequence for one fixed (kept) tree."""
    kids = children(nodes, kept)

    def level(nid: int, ctx: Context, r: Row) -> Law:
        def below(ch: Node, y: int, r_now: Row) -> Law:
            return level(ch.id, ctx + (y,), rules.next_row(r_now, target.row(ctx + (y,))))

        return level_law(r, rules.verification_order(kids[nid], verify), below, rules)

    return dict(level(0, tuple(context), target.row(tuple(context))))
