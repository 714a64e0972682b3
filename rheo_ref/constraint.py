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


@dataclass(frozen=True)
class Constraint:
    allowed: tuple[frozenset[int], ...]
    next: tuple[tuple[tuple[int, int], ...], ...]  # per state: (token, state) pairs

    def __post_init__(self) -> None:
        S = len(self.allowed)
        if S == 0 or len(self.next) != S:
            raise CaseError(f"a constraint needs >= 1 state and one `next` map per state; got {S} and {len(self.next)}")
        for s, (ok, nxt) in enumerate(zip(self.allowed, self.next)):
            if not ok:
                raise CaseError(f"constraint state {s} allows no token; every state must allow one")
            if {t for t, _ in nxt} != set(ok):
                raise CaseError(
                    f"constraint state {s}: `next` covers {sorted(t for t, _ in nxt)}, allowed {sorted(ok)}"
                )
            if any(not 0 <= u < S for _, u in nxt):
                raise CaseError(f"constraint state {s}: a next state is outside 0..{S - 1}")

    def check_vocab(self, V: int) -> None:
        bad = sorted(t for ok in self.allowed for t in ok if not 0 <= t < V)
        if bad:
            raise CaseError(f"constraint tokens {bad} are outside the vocabulary 0..{V - 1}")

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
        if not isinstance(obj, dict) or set(obj) != {"allowed", "next"}:
            raise CaseError(f"a constraint is an object with `allowed` and `next`; got {obj!r}")
        try:
            allowed = tuple(frozenset(int(t) for t in ok) for ok in obj["allowed"])
            nxt = tuple(tuple(sorted((int(t), int(u)) for t, u in m.items())) for m in obj["next"])
        except (TypeError, ValueError, AttributeError) as e:
            raise CaseError(f"constraint {obj!r}: {e}") from None
        return cls(allowed, nxt)
