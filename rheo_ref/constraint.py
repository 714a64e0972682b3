"""A grammar constraint as a small automaton over token ids (docs/PROCESSING.md, "Grammars").

States 0..S−1, start state 0; `allowed[s]` the tokens allowed next in state s, `next[s][t]` the
state after an allowed token t. The target law under a constraint is the masked, renormalised
target: every disallowed token's weight is set to 0 before any other processing (as vLLM applies
its grammar bitmask to the logits before the sampler), exactly. A disallowed token (only a broken
decoder emits one) leaves the state where it was.

JSON: `{"allowed": [[tokens of state 0], ...], "next": [{"token": state, ...}, ...]}`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .errors import CaseError
from .numbers import TOKEN_KEY
from .validate import is_int, show


@dataclass(frozen=True)
class Constraint:
    allowed: tuple[frozenset[int], ...]
    next: tuple[tuple[tuple[int, int], ...], ...]  # per state: (token, state) pairs

    def __post_init__(self) -> None:
        S = len(self.allowed)
        if S == 0 or len(self.next) != S:
            raise CaseError(
                f"a constraint needs >= 1 state and one `next` map per state; got {S} `allowed` and {len(self.next)} `next`"
            )
        for s, (ok, nxt) in enumerate(zip(self.allowed, self.next)):
            if {t for t, _ in nxt} != set(ok):
                raise CaseError(
                    f"constraint state {s}: `next` covers tokens {sorted(t for t, _ in nxt)}, `allowed` is {sorted(ok)}; "
                    "they must be the same tokens"
                )
            for t, u in nxt:
                if not 0 <= u < S:
                    raise CaseError(
                        f"constraint state {s}: token {t} leads to unknown state {u}; states are 0..{S - 1}"
                    )
        parents = self.reachable()
        for s in parents:
            if not self.allowed[s]:
                raise CaseError(
                    f"constraint state {s} allows no token and is reached from state 0 by tokens "
                    f"{list(self.path(parents, s))}; every reachable state must allow >= 1 token"
                )

    def reachable(self) -> dict[int, tuple[int, int] | None]:
        """Every state reachable from state 0, with the (state, token) it is first reached from by a
        breadth-first walk in token order (None for state 0): one pass over the transitions, so a
        chain of S states is read in time S, not S^2 (`path` gives the token path)."""
        parents: dict[int, tuple[int, int] | None] = {0: None}
        frontier = [0]
        while frontier:
            nxt_frontier = []
            for s in frontier:
                for t, u in self.next[s]:
                    if u not in parents:
                        parents[u] = (s, t)
                        nxt_frontier.append(u)
            frontier = nxt_frontier
        return parents

    @staticmethod
    def path(parents: dict[int, tuple[int, int] | None], state: int) -> tuple[int, ...]:
        """The shortest (then smallest) token path from state 0 to a reachable `state`."""
        out = []
        link = parents[state]
        while link is not None:
            out.append(link[1])
            link = parents[link[0]]
        return tuple(reversed(out))

    def check_vocab(self, V: int) -> None:
        bad = sorted({t for ok in self.allowed for t in ok if not 0 <= t < V})
        if bad:
            raise CaseError(f"constraint token ids {bad} are outside the vocabulary 0..{V - 1}")

    def step(self, state: int, token: int) -> int:
        return dict(self.next[state]).get(token, state)

    def state(self, tokens: Sequence[int], start: int = 0) -> int:
        """The state after `tokens` from `start`."""
        s = start
        for t in tokens:
            s = self.step(s, t)
        return s

    def mask(self, row: tuple, state: int) -> tuple:
        """The row with every token the state disallows set to 0."""
        ok = self.allowed[state]
        return tuple(x if t in ok else 0 * x for t, x in enumerate(row))

    def to_json(self) -> dict:
        return {
            "allowed": [sorted(ok) for ok in self.allowed],
            "next": [{str(t): u for t, u in sorted(nxt)} for nxt in self.next],
        }

    @classmethod
    def from_json(cls, obj: Any) -> Constraint:
        form = 'an object {"allowed": [[token, ...] per state], "next": [{"token": state, ...} per state]}'
        if not isinstance(obj, dict) or set(obj) != {"allowed", "next"}:
            raise CaseError(f"a constraint is {form}; got {show(obj)}")
        allowed, nxt = obj["allowed"], obj["next"]
        if not isinstance(allowed, list) or not all(isinstance(ok, list) and all(map(is_int, ok)) for ok in allowed):
            raise CaseError(
                f"constraint `allowed` must be a list of lists of token ids (integers); got {show(allowed)}"
            )
        if not isinstance(nxt, list) or not all(isinstance(m, dict) for m in nxt):
            raise CaseError(f"constraint `next` must be a list of objects {{token: state}}; got {show(nxt)}")
        pairs = []
        for s, m in enumerate(nxt):
            row = []
            for t, u in m.items():
                if not (isinstance(t, str) and TOKEN_KEY.fullmatch(t)) or not is_int(u):
                    raise CaseError(
                        f'constraint state {s}: `next` entry {show(t)}: {show(u)}; allowed: "token": state, integers '
                        '>= 0, the token written in ASCII digits without sign, spaces or leading zeros ("1", not "01")'
                    )
                row.append((int(t), u))
            pairs.append(tuple(sorted(row)))
        for s, ok in enumerate(allowed):
            if len(set(ok)) != len(ok) or any(t < 0 for t in ok):
                raise CaseError(f"constraint state {s}: `allowed` {show(ok)} must hold distinct token ids >= 0")
        return cls(tuple(frozenset(ok) for ok in allowed), tuple(pairs))
