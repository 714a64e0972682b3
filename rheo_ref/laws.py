"""Exact laws, written once: the `Law` type (token tuples to `Fraction`s), the total-variation
distance `tv`, `normalise` (a row over its mass, with the zero-mass case said out loud) and
`compose` (the law of the next n tokens from the law of one round, rounds composed;
`one_token_rounds`: a sampler drawing one token a round, e.g. the target's own).

Every layer uses these: the reference's round and token laws, the decoders' exact laws
(`rheo.decoders`), the gate's checks and windows (`rheo.lossless`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Hashable, Mapping, Sequence
from fractions import Fraction
from typing import Any, Literal, Protocol, TypeVar, overload

from rheo_ref.errors import CaseError

ZERO, ONE = Fraction(0), Fraction(1)

Law = dict[tuple[int, ...], Fraction]  # an exact law of token sequences (zero entries omitted)
Row = tuple[Fraction, ...]  # one next-token law (rheo_ref.models.Row)
S = TypeVar("S")  # a decoder's state between rounds (compose)
_NO_STATE: Any = object()  # compose without a state


def tv(a: Mapping, b: Mapping) -> Fraction:
    """Exact total-variation distance between two laws given as dicts: Σ|a − b| / 2."""
    return sum((abs(a.get(k, ZERO) - b.get(k, ZERO)) for k in set(a) | set(b)), ZERO) / 2


@overload
def normalise(r: Sequence[Fraction], *, on_zero: Literal["raise", "zeros"] = ...) -> Row: ...
@overload
def normalise(r: Sequence[Fraction], *, on_zero: Literal["none"]) -> Row | None: ...
def normalise(r: Sequence[Fraction], *, on_zero: str = "raise") -> Row | None:
    """r / Σr (Fractions for exact laws, floats for samplers: the code is the same); the one
    normalisation of rows. A row of zero mass, as each caller says: `raise` (CaseError: a row with
    nothing to draw on a branch of positive probability, e.g. processing that keeps no token), `zeros`
    (it stays zero: a sibling law with nothing left to draw) or `none` (None: a decoder whose code
    crashes there, e.g. torch.multinomial on a zero row, or falls back to another row)."""
    z = sum(r, ZERO)
    if z:
        return tuple(x / z for x in r)
    if on_zero == "zeros":
        return tuple(ZERO for _ in r)
    if on_zero == "none":
        return None
    raise CaseError(f"row {tuple(r)} has zero mass; nothing can be drawn from it")


class Progress(Protocol):
    """What `compose` reports to (rheo.decoders.law_progress.LawProgress is one): `enter(ctx, state)`
    before a round from ctx (context + a prefix) and `leave()` after it; `done(mass)` for the law's mass
    whose n tokens that round completed."""

    def enter(self, ctx: tuple[int, ...], state: Any) -> None: ...
    def leave(self) -> None: ...
    def done(self, share: float) -> None: ...


@overload
def compose(
    round_law: Callable[[tuple[int, ...], int], Mapping[tuple[int, ...], Fraction]],
    context: Sequence[int],
    n: int,
    *,
    stop: int | None = ...,
    key: Callable[[tuple[int, ...]], Hashable] | None = ...,
    sees: int | None = ...,
    progress: Progress | None = ...,
) -> Law: ...
@overload
def compose(
    round_law: Callable[[tuple[int, ...], int, S], Mapping[tuple[tuple[int, ...], S], Fraction]],
    context: Sequence[int],
    n: int,
    *,
    state: S,
    stop: int | None = ...,
    key: Callable[[tuple[int, ...]], Hashable] | None = ...,
    sees: int | None = ...,
    progress: Progress | None = ...,
) -> Law: ...
def compose(
    round_law: Callable,
    context: Sequence[int],
    n: int,
    *,
    state: Any = _NO_STATE,
    stop: int | None = None,
    key: Callable[[tuple[int, ...]], Hashable] | None = None,
    sees: int | None = None,
    progress: Progress | None = None,
) -> Law:
    """Law of the next n tokens after `context`, rounds composed: the one composition of rounds that
    every exact law uses (the reference's `Exact.token_law`, the decoders' laws in `rheo.decoders`).

    `round_law(ctx, m)`: the law of what one round emits after ctx (context + the tokens emitted so
    far) when m more tokens are wanted (a round law may stop enumerating past m: only the first m of
    what it emits are kept). With `state` (the decoder's state at the start: a tree node, a draft
    position), `round_law(ctx, m, state)` gives the law of (tokens emitted, the state after them).
    `stop`: a token that ends the decode when a round's emitted tokens end with it (a crash, or the
    invalid token of a bonus from a massless row): the rest of the n tokens are `stop`. `key`: what a
    round law depends on (e.g. the tokens the models see): round laws are then memoised by
    (key(ctx), m, state); without it the caller memoises (each prefix is played once anyway). `sees`:
    how many of the context's last tokens a round law reads (the models' context length: the round
    law is handed only those); None: all of it (e.g. prompt lookup).

    Forward, one number of tokens at a time: every prefix shorter than n (with its state) is played
    once, whatever split into rounds reached it (their probabilities summed first), so the work is the
    number of such prefixes, no prefix is copied per round and no recursion bounds n. Every round must
    emit at least one token."""
    if n == 0:
        return {(): ONE}
    context = tuple(context)
    trie = _Trie(context, sees)
    out: dict[tuple[int, ...], Fraction] = defaultdict(Fraction)
    # pending[k]: (prefix of k tokens as a trie node, the state after it) -> probability; played in order of k
    pending: dict[int, dict[tuple[int, Any], Fraction]] = {0: {(0, state): ONE}}
    memo: dict[tuple[Hashable, int, Any], Any] = {}
    for k in range(n):
        for (node, st), pr in pending.pop(k, {}).items():
            ctx, m = trie.context(node), n - k
            if progress is not None:
                progress.enter(ctx, st)
            finished = ZERO
            for move, ps in _round(round_law, ctx, m, st, key, memo):
                if not ps:
                    continue
                s, nxt = (move, st) if st is _NO_STATE else move
                w = pr * ps
                if not s:
                    raise CaseError(f"compose: a round after {list(ctx)} emits no token (probability {ps})")
                if len(s) >= m:
                    out[trie.tokens(node) + tuple(s[:m])] += w
                    finished += w
                elif stop is not None and s[-1] == stop:
                    out[trie.tokens(node) + tuple(s) + (stop,) * (m - len(s))] += w
                    finished += w
                else:
                    level = pending.setdefault(k + len(s), defaultdict(Fraction))
                    level[(trie.extend(node, s), nxt)] += w
            if progress is not None:
                progress.done(float(finished))
                progress.leave()
    return dict(out)


class _Trie:
    """The prefixes `compose` has reached, each token sequence one node (an int), so that every split
    into rounds of the same tokens meets at the same node and no prefix is copied per round:
    `context(node)` is what a round law sees (the last `sees` tokens of context + prefix, or all)."""

    def __init__(self, context: tuple[int, ...], sees: int | None) -> None:
        self.start, self.sees = context, sees
        self.parent, self.token, self.depth = [-1], [-1], [0]  # node 0: the empty prefix
        self.kids: dict[tuple[int, int], int] = {}

    def extend(self, node: int, s: Sequence[int]) -> int:
        for t in s:
            child = self.kids.get((node, t))
            if child is None:
                child = self.kids[(node, t)] = len(self.parent)
                self.parent.append(node)
                self.token.append(t)
                self.depth.append(self.depth[node] + 1)
            node = child
        return node

    def tokens(self, node: int, most: int | None = None) -> tuple[int, ...]:
        """The prefix's tokens (its last `most` only, when given)."""
        out: list[int] = []
        while node > 0 and (most is None or len(out) < most):
            out.append(self.token[node])
            node = self.parent[node]
        return tuple(reversed(out))

    def context(self, node: int) -> tuple[int, ...]:
        if self.sees is None:
            return self.start + self.tokens(node)
        if self.sees == 0:
            return ()
        tail = self.tokens(node, self.sees)
        return (self.start + tail)[-self.sees :] if len(tail) < self.sees else tail


def _round(round_law: Callable, ctx: tuple[int, ...], m: int, st: Any, key: Callable | None, memo: dict) -> Any:
    """The items of one round's law after ctx (memoised by (key(ctx), m, state) when `key` is given)."""
    if key is not None and (k := (key(ctx), m, st)) in memo:
        return memo[k]
    items = (round_law(ctx, m) if st is _NO_STATE else round_law(ctx, m, st)).items()
    if key is not None:
        memo[k] = items
    return items


def one_token_rounds(row_of: Callable[[tuple[int, ...]], Sequence[Fraction]]) -> Callable[[tuple[int, ...], int], Law]:
    """The round law of a sampler that draws one token a round from row_of(ctx) (a target's own)."""
    return lambda ctx, m: {(v,): pv for v, pv in enumerate(row_of(ctx)) if pv}
