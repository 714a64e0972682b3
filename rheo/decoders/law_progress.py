"""Progress bars and stop reports for exact laws built one token at a time.

The exact laws of third-party decoders (`rheo.decoders.eagle.law`, `rheo.decoders.seqspec.law`, the
served decoders' laws) compose rounds forward (`rheo_ref.laws.compose`): every prefix shorter than n,
with the decoder's state after it, is played once. `LawProgress` follows that work: a tqdm bar over
the law's probability mass (the share of it whose sequences are all computed), and where it is (the
prefix being worked on and the decoder's state after it). A run stopped by Ctrl-C, or by SIGTERM (which the `rheo` command
turns into Ctrl-C), raises `LawStopped`, whose message says where it was and how much of the law's
mass was done.
"""

from __future__ import annotations

import contextlib
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from types import TracebackType
from typing import Any


class LawStopped(KeyboardInterrupt):
    """An exact law's computation stopped by Ctrl-C or SIGTERM; the message says where it was.
    A `KeyboardInterrupt`, so that whoever stops a run on Ctrl-C still does."""


class LawProgress:
    """Where an exact law of n tokens after `context` is. A context manager: a KeyboardInterrupt inside
    becomes `LawStopped` naming the prefix being worked on (the deepest entered and not yet left), its
    decoder state, and the share of the law's mass done.

    - `enter(ctx, state)` / `leave()`: work on the tokens after ctx (context + a prefix) from a decoder
      state (`state_name` says what it is: "tree node", "at"; None: the decoder has none;
      `describe` writes a state as the message shows it);
    - `part(mass)`: what is done inside counts as `mass` times its own share (the first token's
      probability around the law of the rest);
    - `done(share)`: that share of the current part is done (the bar moves);
    - `detail`: what the innermost work is doing, when the state says too little (a draft being verified).
    `show`: None hides the bar off a terminal (tqdm's rule), False always."""

    def __init__(
        self,
        what: str,
        n: int,
        context: Sequence[int],
        *,
        state_name: str | None = None,
        describe: Callable[[Any], object] = lambda state: state,
        show: bool | None = None,
    ) -> None:
        self.what, self.n, self.start, self.state_name, self.show = what, n, len(context), state_name, show
        self.describe = describe
        self.stack: list[tuple[tuple[int, ...], object]] = []
        self.mass, self.scale = 0.0, 1.0
        self.detail = ""  # what the innermost work is doing, where a state says too little (the draft verified)
        self.t0 = time.perf_counter()
        self.bar: Any = None

    def __enter__(self) -> LawProgress:
        from tqdm import tqdm

        self.t0 = time.perf_counter()
        self.bar = tqdm(
            total=1.0,
            desc=f"{self.what} ({self.n} tokens)",
            bar_format="{desc}: {percentage:3.0f}% of the law's mass|{bar}| [{elapsed}<{remaining}]",
            disable=None if self.show is None else not self.show,
            leave=False,
            file=sys.stderr,
        )
        return self

    def enter(self, ctx: Sequence[int], state: object) -> None:
        self.stack.append((tuple(ctx[self.start :]), self.describe(state)))

    def leave(self) -> None:
        self.stack.pop()

    @contextlib.contextmanager
    def part(self, mass: float) -> Iterator[None]:
        outer, before = self.scale, self.mass
        self.scale = outer * mass
        yield
        self.scale = outer
        self.done(before + outer * mass - self.mass, scaled=True)  # the whole part, whatever was reported inside

    def done(self, share: float, *, scaled: bool = False) -> None:
        mass = share if scaled else self.scale * share
        self.mass += mass
        if self.bar is not None:
            self.bar.update(mass)

    def where(self) -> str:
        seconds = time.perf_counter() - self.t0
        if self.stack:
            prefix, state = self.stack[-1]
            named = "" if self.state_name is None else f"{self.state_name} {state}, "
            at = (
                f"the {self.n - len(prefix)} tokens after prefix {list(prefix)} (token {len(prefix) + 1} of "
                f"{self.n}, {named}{len(self.stack)} deep)"
            )
        else:
            at = "the first token"
        if self.detail:
            at += f", {self.detail}"
        return (
            f"{self.what} of {self.n} tokens stopped after {seconds:.1f} s at {at}; "
            f"{min(self.mass, 1.0):.1%} of the law's mass done"
        )

    def __exit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        if self.bar is not None:
            self.bar.close()
        if kind is not None and issubclass(kind, KeyboardInterrupt) and not isinstance(exc, LawStopped):
            raise LawStopped(self.where()) from None
