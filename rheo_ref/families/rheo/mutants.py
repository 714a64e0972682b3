"""Exact counterparts of the mutants (`rheo_ref.variants.MUTANTS`): the exact law of a
deliberately broken variant, the negative controls of the lossless gate.

Each mutant changes one setting of the rheo family's `SlotSteps` (`rheo_ref.slot_steps`). Its exact law is computed by the same enumeration
as the reference (`rheo_ref.exact.Exact`), altered only through public seams, chosen by the
setting that differs from the spec (`counterpart`):
- `case`: a modified case (the scheme's proxy);
- `chooser`: what the sampled slot holds (a `rheo_ref.families.rheo.tree.Chooser`);
- `nodes`: a rewrite of each grown tree before rerank and verification (e.g. the q̃ that
  verification sees);
- `rules`: a `rheo_ref.families.rheo.verify.Rules` subclass (acceptance, residuals, bonus, order).
No hook was added to the reference core. A mutant of the static family (docs/SCHEMES.md §8) needs
no seam: the static family's exact methods read the variant's settings themselves
(`rheo_ref.families.static.exact`, brute force, which models every setting), so its counterpart carries
the variant only. A variant of one family on a case of the other is refused
(`Variant.check_family`). `mutant_law`/`mutant_tv` give the exact token law of
the mutant and its TV to the target law. tests/test_mutants.py checks, statistically, that each
fast mutant's law fits its exact counterpart's. `rheo.selfgate.matrix.fast_sampler` drives the fast path.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from rheo_ref.errors import CaseError
from rheo_ref.exact import DEFAULT_MAX_TREES, Exact, Law, target_law, tv
from rheo_ref.families.rheo.enumerate import BruteChooser
from rheo_ref.families.rheo.exact import RheoRounds
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.rheo.slots import Expansion, expand
from rheo_ref.families.rheo.tree import Chooser, Node, Nodes, build_tree, path_tokens, rerank
from rheo_ref.families.rheo.verify import SPEC_RULES, Rules, normalise
from rheo_ref.family import RoundLaws
from rheo_ref.models import Case, Context, Row, TableModel
from rheo_ref.slot_steps import SlotSteps
from rheo_ref.variants import MUTANTS, Variant, variant_named

ZERO, ONE = Fraction(0), Fraction(1)
COIN = Fraction(1, 2**53)  # resolution of a float64 uniform coin


# --- seams -------------------------------------------------------------------------------


@dataclass(frozen=True)
class MarkedNode(Node):
    """A node whose kind was rewritten for verification; `was` is its kind in the tree (order)."""

    was: str = ""


def _kind(n: Node) -> str:
    return getattr(n, "was", "") or n.kind


class OrderByTreeKind(Rules):
    """Spec order computed from the kinds nodes had in the tree (before a rewrite)."""

    def verification_order(self, kids: list[Node], verify: str) -> list[Node]:
        if verify == "rheo":
            return sorted(kids, key=lambda n: (_kind(n) != "sampled", n.slot))
        return sorted(kids, key=lambda n: n.slot)


def _parent_context(case_ctx: Context, nodes: Nodes, n: Node) -> Context:
    return tuple(case_ctx) + path_tokens(nodes, n.parent)


def _rewrite_sampled(fn: Callable[[Case, Context, Node], Node]) -> Callable[[Case, Context, Nodes], Nodes]:
    """Apply `fn(case, parent context, node)` to every sampled node of a tree."""

    def rewrite(case: Case, ctx: Context, nodes: Nodes) -> Nodes:
        return tuple(fn(case, _parent_context(ctx, nodes, n), n) if n.kind == "sampled" else n for n in nodes)

    return rewrite


class Tagged(tuple):
    """A row (a tuple, so verification reads it as one) carrying extra facts for a mutant's rules."""

    def __new__(cls, values, **tags):
        obj = super().__new__(cls, values)
        obj.__dict__.update(tags)
        return obj


class _RecordingModel:
    """Wraps a table model and remembers the last row asked for. `build_tree` asks for the node's
    q_samp row right before calling the chooser, so a chooser can see the whole q_samp row;
    the chooser checks that the row matches the plan it was given."""

    def __init__(self, model: TableModel) -> None:
        self.model = model
        self.last_row: Row | None = None
        self.vocab_size, self.name = model.vocab_size, model.name

    @property
    def last(self) -> Row:
        if self.last_row is None:
            raise CaseError("no q_samp row was asked for yet")
        return self.last_row

    def row(self, context: Context) -> Row:
        self.last_row = self.model.row(context)
        return self.last_row


# --- the mutants ---------------------------------------------------------------------------


def _q_instead_of_qtilde(case: Case, ctx: Context, n: Node) -> Node:
    return replace(n, qtilde=case.q_samp_model.row(ctx))


def _qrank_tilde(case: Case, ctx: Context, n: Node) -> Node:
    s = case.scheme_as(Scheme)
    plan = expand(case.draft.row(ctx), case.draft.row(ctx), s.K, s.m, s.proxy)
    if plan.qtilde is None or any(plan.qtilde[y] == 0 for y in n.tokens):
        raise CaseError("temp-sample-only: the tail of q_rank has no mass where q_samp does; pick another case")
    return replace(n, qtilde=plan.qtilde)


def _sampled_as_point(case: Case, ctx: Context, n: Node) -> Node:
    return MarkedNode(n.id, n.parent, n.depth, "det", n.slot, n.tokens, n.score, None, was="sampled")


def _all_as_sampled(case: Case, ctx: Context, nodes: Nodes) -> Nodes:
    """Every point mass t becomes a sampled node with q̃ = δ_t: same law under the spec rules,
    but its coin now goes through `Rules.accept_sampled` (used by `leq-coin`)."""
    V = case.vocab_size
    out = []
    for n in nodes:
        if n.kind in ("det", "fill"):
            onehot = tuple(ONE if i == n.token else ZERO for i in range(V))
            n = MarkedNode(n.id, n.parent, n.depth, "sampled", n.slot, n.tokens, n.score, onehot, was=n.kind)
        out.append(n)
    return tuple(out)


def _outside_tail(case: Case, ctx: Context, n: Node) -> Node:
    """`sample-whole-q`: a y outside the tail keeps q̃ for verification, where q̃(y) = 0; the fast
    path's coin u * q̃(y) < r(y) then accepts iff r(y) > 0. The row is tagged so that the rules
    know (verification's class weight q̃(y)/q̃(y) needs a non-zero entry)."""
    y = n.token
    qt = n.qtilde_row()
    if qt[y] > 0:
        return n
    row = Tagged([ONE if i == y else x for i, x in enumerate(qt)], outside=y, base=qt)
    return replace(n, qtilde=row)


class WholeQRules(Rules):
    def accept_sampled(self, r: Row, qtilde: Row, y: int) -> Fraction:
        if getattr(qtilde, "outside", None) == y:
            return ONE if r[y] > 0 else ZERO
        return super().accept_sampled(r, qtilde, y)

    def residual_sampled(self, r: Row, qtilde: Row) -> Row:
        return super().residual_sampled(r, getattr(qtilde, "base", qtilde))


class WholeQChooser:
    """`sample-whole-q`: y ~ q_samp over the whole vocabulary (it may repeat a top-m token)."""

    def __init__(self, recorder: _RecordingModel, m: int) -> None:
        self.recorder, self.m = recorder, m

    def sample_groups(self, plan: Expansion, parent: Node) -> list[tuple[Fraction, tuple[int, ...]]]:
        q = self.recorder.last
        z = sum((q[t] for t in plan.tail), ZERO)
        assert z > 0 and all(plan.qtilde_row()[t] == q[t] / z for t in plan.tail), (
            "recorded q_samp row does not match the plan"
        )
        return [(q[y], (y,)) for y in range(len(q)) if q[y] > 0]

    def resolve(self, node: Node) -> list[tuple[Fraction, int]]:
        raise AssertionError("no class nodes")


class Unnormalised(Rules):
    """`residual-unnormalised`: after a rejection r is not renormalised (the bonus draw is)."""

    def residual_sampled(self, r: Row, qtilde: Row) -> Row:
        return tuple(max(ZERO, a - b) for a, b in zip(r, qtilde))

    def residual_point(self, r: Row, t: int) -> Row:
        return tuple(ZERO if i == t else x for i, x in enumerate(r))

    def bonus(self, r: Row, p: Row) -> Row:
        """A residual of zero mass (reachable now: its rejection no longer has probability 0)
        makes the fast path's inverse CDF return -1; here that is token V ("invalid")."""
        if sum(r, ZERO) == 0:
            return tuple(ZERO for _ in r) + (ONE,)
        return normalise(r)


class BonusFromP(Rules):
    """`bonus-full-p`: the bonus token is drawn from p at the node, not from the residual."""

    def bonus(self, r: Row, p: Row) -> Row:
        return p


class StaleBonus(Rules):
    """`stale-bonus` (our reading of a fix proposed to EAGLE's code): at a leaf reached by an accept (no kept child to try), the
    bonus is drawn from the parent's residual at the time of the accept instead of p at the leaf."""

    def next_row(self, r: Row, p_child: Row) -> Row:
        return Tagged(p_child, stale=r)

    def bonus(self, r: Row, p: Row) -> Row:
        if r is p and hasattr(p, "stale"):  # nothing tried at this node: a leaf
            return p.stale
        return r


def _half(x: Fraction) -> Fraction:
    import struct

    return Fraction(struct.unpack("<e", struct.pack("<e", float(x)))[0])


def _half_neighbours(c: Fraction) -> tuple[Fraction, Fraction]:
    """(largest float16 v < c, the float16 right after v), for 0 < c ≤ 1.

    Non-negative float16 values are ordered like their 16-bit patterns, so the neighbours of a
    value are the patterns one below and one above."""
    import struct

    def value(bits: int) -> Fraction:
        return Fraction(struct.unpack("<e", struct.pack("<H", bits))[0])

    bits = struct.unpack("<H", struct.pack("<e", float(c)))[0]  # float16 nearest to c (≥ 0)
    while value(bits) >= c:
        bits -= 1
    return value(bits), value(bits + 1)


def half_coin_below(c: Fraction) -> Fraction:
    """P(half(u) < c) for u uniform on [0, 1): u rounds to float16 v* < c iff u < (v* + next(v*))/2."""
    if c <= 0:
        return ZERO
    lo, hi = _half_neighbours(c)
    return min(ONE, (lo + hi) / 2)


class Float16(OrderByTreeKind):
    """`float16` (a model): every coin u, r and q̃ rounded to float16 at each try, residuals
    formed from the rounded rows, the bonus drawn by a rounded coin from the rounded residual.
    Every point mass comes here as a sampled node with q̃ = δ_t. Exact for the coins; the bonus
    row is rounded once more than the fast path rounds it in some branches (relative 2^-11)."""

    def accept_sampled(self, r: Row, qtilde: Row, y: int) -> Fraction:
        R, Q = _half(r[y]), _half(qtilde[y])
        if Q == 0:
            return ONE if R > 0 else ZERO
        return half_coin_below(R / Q)

    def residual_sampled(self, r: Row, qtilde: Row) -> Row:
        hr = [_half(x) for x in r]
        d = [max(ZERO, a - _half(b)) for a, b in zip(hr, qtilde)]
        return tuple(hr) if sum(d, ZERO) == 0 else normalise(d)

    def bonus(self, r: Row, p: Row) -> Row:
        h = [_half(x) for x in r]
        z = sum(h, ZERO)
        last = max(i for i, x in enumerate(h) if x > 0)
        out, below = [], ZERO
        acc = ZERO
        for i, x in enumerate(h):
            acc += x
            g = ONE if i == last else half_coin_below(acc / z) if i < last else below
            out.append(g - below)
            below = g
        return tuple(out)


class LeqCoin(OrderByTreeKind):
    """`leq-coin`: accept when u <= a instead of u < a, u a float64 uniform on the 2^-53 grid:
    P(u <= a) = (floor(a 2^53) + 1) / 2^53, capped at 1 (vs. a). Every coin goes through here."""

    def accept_sampled(self, r: Row, qtilde: Row, y: int) -> Fraction:
        a = min(ONE, r[y] / qtilde[y])
        return min(ONE, Fraction(int(a / COIN) + 1) * COIN)


class FillsFirst(Rules):
    """`fills-first`: the top-m, then the fills, then the sampled child (whatever the rule), so q̃
    is not conditioned on the fills' rejection."""

    def verification_order(self, kids: list[Node], verify: str) -> list[Node]:
        rank = {"det": 0, "fill": 1, "sampled": 2}
        return sorted(kids, key=lambda n: (rank[_kind(n)], n.slot))


@dataclass(frozen=True)
class ExactMutant:
    """One mutant's exact counterpart (see the module docstring for the seams)."""

    variant: Variant
    case: Callable[[Case], Case] | None = None
    chooser: Callable[[_RecordingModel, Case], Chooser] | None = None
    nodes: Callable[[Case, Context, Nodes], Nodes] | None = None
    rules: Rules = SPEC_RULES

    @property
    def name(self) -> str:
        return self.variant.name

    @property
    def description(self) -> str:
        return self.variant.description

    @property
    def note(self) -> str:
        return self.variant.note


def counterpart(v: Variant) -> ExactMutant:
    """The exact counterpart of a variant that changes one setting of the spec."""
    changed = v.changed()
    if len(changed) != 1:
        raise CaseError(
            f"variant {v.name!r} changes {sorted(changed) or 'no setting'}; the exact reference "
            f"models a variant that changes exactly one setting"
        )
    if v.family != "rheo":  # read by static_exact's / tsubame_exact's / treespark_exact's methods themselves
        return ExactMutant(v)
    st: SlotSteps = v.steps
    if st.proxy is not None:
        proxy = str(st.proxy)
        return ExactMutant(v, case=lambda c: c.with_scheme(proxy=proxy))
    if st.sample_from == "whole":
        return ExactMutant(
            v,
            chooser=lambda rec, c: WholeQChooser(rec, c.scheme_as(Scheme).m),
            nodes=_rewrite_sampled(_outside_tail),
            rules=WholeQRules(),
        )
    if st.verify_row == "q_samp":
        return ExactMutant(v, nodes=_rewrite_sampled(_q_instead_of_qtilde))
    if st.verify_row == "q_rank_tail":
        return ExactMutant(v, nodes=_rewrite_sampled(_qrank_tilde))
    if st.sampled_as_point:
        return ExactMutant(v, nodes=_rewrite_sampled(_sampled_as_point), rules=OrderByTreeKind())
    if not st.normalise_residual:
        return ExactMutant(v, rules=Unnormalised())
    if st.accept_on_equal:
        return ExactMutant(v, nodes=_all_as_sampled, rules=LeqCoin())
    if st.rounding == "float16":
        return ExactMutant(v, nodes=_all_as_sampled, rules=Float16())
    if st.try_order == "fills_first":
        return ExactMutant(v, rules=FillsFirst())
    if st.bonus_row == "target":
        return ExactMutant(v, rules=BonusFromP())
    if st.bonus_row == "stale":
        return ExactMutant(v, rules=StaleBonus())
    raise CaseError(f"variant {v.name!r}: no exact counterpart for the setting {changed}")


EXACT_MUTANTS: dict[str, ExactMutant] = {name: counterpart(v) for name, v in MUTANTS.items()}


class MutantExact(Exact):
    """`Exact` for a mutant: brute enumeration (every sampled identity separately), then the
    mutant's tree rewrite, the spec rerank and the mutant's verification rules (rheo family);
    the static family's brute force under the variant's settings (static family). As in
    `VariantExact`, a round ending in the invalid token V stops decoding (`compose`'s `stop`: the
    rest of the tokens are V, as `rheo.selfgate.matrix.canonical` reads the fast path's)."""

    def __init__(self, case: Case, mutant: str | ExactMutant, *, max_trees: int | None = DEFAULT_MAX_TREES) -> None:
        if isinstance(mutant, str):
            mutant = counterpart(variant_named(mutant))
        self.mutant = mutant
        mutant.variant.check_family(case.scheme.family)
        if case.scheme.family != "rheo":
            super().__init__(case, "brute", max_trees=max_trees, variant=mutant.variant)
        else:
            super().__init__(
                mutant.case(case) if mutant.case else case, "brute", max_trees=max_trees, rules=mutant.rules
            )
        self.stop = self.case.vocab_size  # a round ending in the invalid token V stops decoding

    def _round_laws(self, family: Any, method: str, **kw: Any) -> RoundLaws:
        if family.name != "rheo":
            return super()._round_laws(family, method, **kw)
        return RheoRounds(self.case, method, rules=kw["rules"], progress=kw.get("progress"), trees=self._trees)

    def _trees(self, context: Context):
        case, mut = self.case, self.mutant
        rec = _RecordingModel(case.q_samp_model)
        chooser = mut.chooser(rec, case) if mut.chooser else BruteChooser()
        for prob, nodes in build_tree(case.draft, rec, context, case.scheme_as(Scheme), chooser):
            if mut.nodes is not None:
                nodes = mut.nodes(case, context, nodes)
            yield prob, nodes, rerank(nodes, case.scheme_as(Scheme).R)


def mutant_law(case: Case, mutant: str, n: int | None = None) -> Law:
    """Exact law of the first n tokens (default `case.tokens`) that the mutant emits."""
    return MutantExact(case, mutant).token_law(case.tokens if n is None else n)


def mutant_tv(case: Case, mutant: str, n: int | None = None) -> Fraction:
    """Exact TV between the mutant's first n tokens and the target law of the (original) case."""
    n = case.tokens if n is None else n
    return tv(mutant_law(case, mutant, n), target_law(case, n))
