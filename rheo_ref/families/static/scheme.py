"""Family `static`: a draft tree whose shape is fixed before any token is drawn (docs/SCHEMES.md).

The shape is given in one of three ways and always becomes `parents`, node i+1's parent (the
root is node 0), nodes in creation order, each parent before its children:
- `branching [k1, ..., kD]`: every node at depth d-1 gets k_d children ([1]*D: the sampled
  chain; [K, 1, ..., 1]: K rollouts from the root);
- `delayed [K, L1, L2]`: delayed tree expansion, a trunk of L1 sampled tokens, then K rollouts of
  L2 tokens each from the trunk's tip;
- `parents [...]` directly.
A node's children, in index order, are its *draw order*. Sibling sampling (`iid` or `wor`) gives
the law of each child's token given the tokens already drawn at its parent (`next_draw`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from math import prod
from typing import Any, ClassVar

from rheo_ref import numbers
from rheo_ref.errors import CaseError
from rheo_ref.family import MAX_NODES
from rheo_ref.validate import check_fields, is_int
from rheo_ref.verifier_laws import children_lists

Row = tuple[Fraction, ...]
Shape = tuple["Shape", ...]  # a node's children's shapes, in draw order; a leaf is ()

SHAPE_KINDS = ("branching", "delayed", "parents")
SAMPLINGS = ("iid", "wor")
VERIFIERS = ("specinfer", "rrsw", "traversal")
# The pairings whose output law is the target's (docs/SCHEMES.md); the others are accepted and lossy.
LOSSLESS_PAIRINGS = (("iid", "specinfer"), ("wor", "rrsw"), ("iid", "rrsw"), ("iid", "traversal"), ("wor", "traversal"))
ZERO, ONE = Fraction(0), Fraction(1)


def _int_list(value: Any, kind: str) -> tuple[int, ...]:
    if not isinstance(value, (list, tuple)) or not all(is_int(v) for v in value):
        raise CaseError(f"static shape {kind} {value!r} must be a list of integers")
    return tuple(value)


def parse_weight(value: Any) -> Fraction:
    """An ensemble weight w in (0, 1], read exactly ("1/2", "0.25", 1); floats are refused (not exact)."""
    if isinstance(value, Fraction):
        w = value
    elif isinstance(value, str) or is_int(value):
        try:
            w = numbers.rational(value, "ensemble_weight") if isinstance(value, str) else Fraction(value)
        except CaseError:
            raise CaseError(
                f'ensemble_weight {value!r} is not a number; allowed: a rational in (0, 1] such as "1/2"'
            ) from None
    else:
        raise CaseError(f'ensemble_weight {value!r} must be a string such as "1/2" (floats are not exact)')
    if not 0 < w <= 1:
        raise CaseError(f"ensemble_weight {value!r} must be in (0, 1] (1: plain specinfer)")
    return w


def branching_parents(ks: Sequence[int]) -> tuple[int, ...]:
    """Level by level: every node at depth d-1, in creation order, gets ks[d-1] children."""
    if not ks:
        raise CaseError("static shape branching [] must list at least one depth, e.g. [2, 2]")
    bad = [k for k in ks if k < 1]
    if bad:
        raise CaseError(f"static shape branching {list(ks)}: branch {bad[0]} must be >= 1")
    parents: list[int] = []
    level = [0]
    for k in ks:
        if len(parents) + len(level) * k > MAX_NODES:
            raise CaseError(f"static shape branching {list(ks)} has more than {MAX_NODES} draft nodes (the limit)")
        nxt = []
        for u in level:
            for _ in range(k):
                parents.append(u)
                nxt.append(len(parents))
        level = nxt
    return tuple(parents)


def delayed_parents(spec: Sequence[int]) -> tuple[int, ...]:
    """A trunk of L1 nodes, then K rollouts of L2 nodes each from the trunk's tip (rollout by rollout)."""
    if len(spec) != 3:
        raise CaseError(f"static shape delayed {list(spec)} must be [K, L1, L2] (three integers)")
    K, L1, L2 = spec
    if K < 1 or L1 < 0 or L2 < 0:
        raise CaseError(
            f"static shape delayed {list(spec)}: allowed K >= 1 rollouts, trunk L1 >= 0, rollout length L2 >= 0"
        )
    n = L1 + K * L2
    if n < 1:
        raise CaseError(f"static shape delayed {list(spec)} drafts no node; L1 + K*L2 must be >= 1")
    if n > MAX_NODES:
        raise CaseError(f"static shape delayed {list(spec)} has {n} draft nodes, more than the limit {MAX_NODES}")
    parents = list(range(L1))  # the trunk: node i+1's parent is node i
    tip = L1
    for _ in range(K):
        prev = tip
        for _ in range(L2):
            parents.append(prev)
            prev = len(parents)
    return tuple(parents)


def check_parents(parents: Sequence[int]) -> tuple[int, ...]:
    """Node i+1's parent must be a node created before it (0..i)."""
    if not parents:
        raise CaseError("static shape parents [] must list at least one node")
    if len(parents) > MAX_NODES:
        raise CaseError(f"static shape parents has {len(parents)} draft nodes, more than the limit {MAX_NODES}")
    for i, u in enumerate(parents):
        if not 0 <= u <= i:
            raise CaseError(
                f"static shape parents: node {i + 1}'s parent {u} is out of order; allowed 0..{i} "
                f"(0 = root, each parent before its children)"
            )
    return tuple(parents)


def shape_of(parents: Sequence[int], node: int = 0) -> Shape:
    """The nested shape of `node`'s subtree: its children's shapes in draw order."""
    kids = children_lists(parents)

    def sub(v: int) -> Shape:
        return tuple(sub(c) for c in kids[v])

    return sub(node)


def depths(parents: Sequence[int]) -> list[int]:
    d = [0]
    for u in parents:
        d.append(d[u] + 1)
    return d


@dataclass(frozen=True)
class StaticScheme:
    """A fixed shape, sibling sampling (`iid`/`wor`) and a verifier (`specinfer`/`rrsw`/`traversal`)."""

    kind: str  # how the shape was given: branching, delayed or parents
    sizes: tuple[int, ...]  # the list given with it
    sampling: str
    verify: str
    parents: tuple[int, ...] = field(init=False)
    family: ClassVar[str] = "static"
    ensemble_weight: Fraction | None = None  # specinfer with static ensemble verification (docs/SCHEMES.md §2)

    def __post_init__(self) -> None:
        sizes = _int_list(self.sizes, self.kind)
        object.__setattr__(self, "sizes", sizes)
        if self.kind == "branching":
            parents = branching_parents(sizes)
        elif self.kind == "delayed":
            parents = delayed_parents(sizes)
        elif self.kind == "parents":
            parents = check_parents(sizes)
        else:
            raise CaseError(f"unknown static shape {self.kind!r}; allowed: {', '.join(SHAPE_KINDS)}")
        object.__setattr__(self, "parents", parents)
        if self.sampling not in SAMPLINGS:
            raise CaseError(f"unknown sibling sampling {self.sampling!r}; allowed: {', '.join(SAMPLINGS)}")
        if self.verify not in VERIFIERS:
            raise CaseError(f"unknown static verifier {self.verify!r}; allowed: {', '.join(VERIFIERS)}")
        if self.ensemble_weight is not None:
            object.__setattr__(self, "ensemble_weight", parse_weight(self.ensemble_weight))
            if self.verify != "specinfer":
                raise CaseError(f"ensemble_weight needs verify 'specinfer', not {self.verify!r}")

    @classmethod
    def from_json(cls, obj: Any) -> StaticScheme:
        check_fields(obj, "static scheme", ("family", "sampling", "verify"), SHAPE_KINDS + ("ensemble_weight",))
        given = [k for k in SHAPE_KINDS if k in obj]
        if len(given) != 1:
            raise CaseError(
                f"static scheme gives {len(given)} shapes {given}; give exactly one of {', '.join(SHAPE_KINDS)}"
            )
        if obj["family"] != "static":
            raise CaseError(f"static scheme has family {obj['family']!r}, must be 'static'")
        w = obj.get("ensemble_weight")
        return cls(given[0], obj[given[0]], obj["sampling"], obj["verify"], None if w is None else parse_weight(w))

    def to_json(self) -> dict:
        out = {"family": "static", self.kind: list(self.sizes), "sampling": self.sampling, "verify": self.verify}
        if self.ensemble_weight is not None:
            out["ensemble_weight"] = str(self.ensemble_weight)
        return out

    def describe(self) -> str:
        """One line naming the scheme's sizes."""
        return f"{self.kind} {list(self.sizes)} ({self.nodes} nodes) {self.sampling}+{self.verify}"

    def check_vocab(self, vocab_size: int) -> None:
        """Any shape fits any vocabulary (`wor` caps a node's children at its support)."""

    @property
    def nodes(self) -> int:
        """Draft nodes of the shape (`wor` may drop some past a node's support)."""
        return len(self.parents)

    @property
    def D(self) -> int:
        """Depth of the shape: a round emits 1..D+1 tokens."""
        return max(depths(self.parents))

    @property
    def shape(self) -> Shape:
        return shape_of(self.parents)

    @property
    def weight(self) -> Fraction:
        """The ensemble weight w of specinfer's acceptance min(1, 1 - w + w·r/q); 1 when not given."""
        return ONE if self.ensemble_weight is None else self.ensemble_weight

    @property
    def lossless(self) -> bool:
        return (self.sampling, self.verify) in LOSSLESS_PAIRINGS and self.weight == 1


def next_draw(q: Row, drawn: Sequence[int], sampling: str) -> list[tuple[int, Fraction]]:
    """Law of a node's next child's token, given the tokens already drawn at that node.

    `iid`: q_samp itself. `wor`: q_samp without the drawn tokens, renormalised; empty once the
    support is used up (the node's remaining children are not drafted, with their subtrees).
    """
    if sampling == "iid":
        return [(x, qx) for x, qx in enumerate(q) if qx]
    left = [(x, qx) for x, qx in enumerate(q) if qx and x not in drawn]
    z = sum((qx for _, qx in left), ZERO)
    return [(x, qx / z) for x, qx in left]


# --- size estimates (upper bounds, used to refuse hopeless enumerations up front) ---------------


def ordered_draws(support: int, k: int, sampling: str) -> int:
    """Outcomes of k sibling draws from a support of the given size (wor: capped, falling factorial)."""
    if sampling == "iid":
        return support**k
    return prod(range(support - min(k, support) + 1, support + 1))


def prefix_draws(support: int, k: int, sampling: str) -> int:
    """Sibling states a sequential recursion visits: every ordered prefix of 1..k draws."""
    return sum(ordered_draws(support, i, sampling) for i in range(1, k + 1))


def estimate_brute(scheme: StaticScheme, support: int) -> int:
    """Joint draws of every node: the product over parents of their children's ordered draws."""
    return prod(ordered_draws(support, len(kids), scheme.sampling) for kids in children_lists(scheme.parents))


def estimate_subtrees(scheme: StaticScheme, support: int, contexts: int) -> int:
    """Sibling steps of the subtree recursion: every ordered prefix of a node's sibling draws, once
    per call of that node's law. Top-down verifiers compute a node's law once per context the
    models can tell apart (at most `contexts`, and at most support^depth paths); `traversal` once
    per (context, incoming rate), bounded here by the draw histories that reach the node (its
    ancestors' tokens and every earlier sibling's, at each level)."""
    kids = children_lists(scheme.parents)
    paths = [1] + [0] * scheme.nodes  # distinct token paths reaching each node
    histories = [1] + [0] * scheme.nodes  # distinct (path, earlier siblings) histories
    steps = 0
    for u, ks in enumerate(kids):
        calls = histories[u] if scheme.verify == "traversal" else min(paths[u], contexts)
        steps += calls * prefix_draws(support, len(ks), scheme.sampling)
        for i, c in enumerate(ks, start=1):
            paths[c] = paths[u] * support
            histories[c] = histories[u] * ordered_draws(support, i, scheme.sampling)
    return steps
