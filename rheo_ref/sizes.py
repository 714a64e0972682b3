"""Size estimates, made before any long or memory-hungry work so that a hopeless run is refused
up front with its estimate and the flag that overrides it (docs/CLI.md, "size limits").

Estimates are `Size`s: an exact integer when it is small, else its base-10 logarithm, so that
an absurd input (D = 10^18, tokens = 10^6) is measured in microseconds instead of computing
3^(10^18). Nothing here enumerates anything.

- `expansions(K, W, D)`, `nodes(K, W, D)`: expansions and nodes of one round (closed form);
- `law_outcomes(case, n)`: an upper bound on the sequences of an n-token law;
- `batch_bytes(B, nodes, V)`: float64 bytes of a batch's [B, nodes, V] tensors;
- `available_memory()`: bytes of memory available to this process (None: unknown).
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass
from typing import Any

EXACT_BELOW = 10**15  # sizes up to this are kept as exact integers


@dataclass(frozen=True)
class Size:
    """A non-negative size: `exact` when it is below EXACT_BELOW, else only `log10`."""

    log10: float
    exact: int | None = None

    @classmethod
    def of(cls, n: int) -> Size:
        return cls(math.log10(n) if n > 0 else -math.inf, n if n < EXACT_BELOW else None)

    @classmethod
    def power(cls, base: int, exp: int) -> Size:
        """base ** exp without computing it when it is large."""
        if exp == 0 or base == 1:
            return cls.of(1)
        if base == 0:
            return cls.of(0)
        lg = exp * math.log10(base)
        return cls.of(base**exp) if lg < 15 else cls(lg)

    def __mul__(self, other: Size) -> Size:
        if self.exact is not None and other.exact is not None:
            return Size.of(self.exact * other.exact)
        return Size(self.log10 + other.log10)

    def __gt__(self, limit: float) -> bool:
        if self.exact is not None:
            return self.exact > limit
        return limit <= 0 or self.log10 > math.log10(limit)

    def __le__(self, limit: float) -> bool:
        return not self > limit

    def __int__(self) -> int:
        if self.exact is None:
            raise OverflowError(f"{self} does not fit an exact integer")
        return self.exact

    def __str__(self) -> str:
        if self.exact is not None:
            return f"{self.exact:,}"
        e = math.floor(self.log10)
        if e >= 10**6:  # the mantissa is lost in the float's precision
            return f"~10^{self.log10:.3g}"
        return f"~{10 ** (self.log10 - e):.1f}e{e}"


def expansions(K: int, W: int, D: int) -> int:
    """Expansions of one round: the root, then min(W, K x previous width) per depth up to D-1
    (the widths stop changing once they reach W, so this takes O(log W) steps for any D)."""
    width, total, depth = 1, 1, 1
    while depth < D:
        nxt = min(W, width * K)
        if nxt == width:  # saturated: every remaining depth expands `width` nodes
            return total + width * (D - depth)
        width, total, depth = nxt, total + nxt, depth + 1
    return total


def nodes(K: int, W: int, D: int) -> int:
    """Nodes of one round's tree: the root and K children per expansion."""
    return 1 + K * expansions(K, W, D)


def law_outcomes(case: Any, n: int) -> tuple[Size, int]:
    """(upper bound on the sequences of positive probability in an n-token law, b): b^n with b
    the most tokens any target row gives positive probability (every scheme emits only tokens
    of positive target probability: an accepted draft token needs p > 0, a residual or bonus
    token is drawn from a law below p)."""
    b = max((sum(1 for x in row if x) for row in case.target.probs.values()), default=1)
    return Size.power(max(b, 1), n), b


def batch_bytes(batch: int, n_nodes: int, vocab: int, *, itemsize: int = 8) -> Size:
    """Bytes of one [batch, nodes, V] tensor of float64 (the rows of one batch of trees)."""
    return Size.of(batch) * Size.of(n_nodes) * Size.of(vocab) * Size.of(itemsize)


def available_memory() -> int | None:
    """Bytes of memory available now (Linux MemAvailable, else free physical pages), or None."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, AttributeError):
        return None


def count(n: int) -> str:
    """An integer for a message: 1,234,567 or, when huge, ~1.2e4000 (never thousands of digits)."""
    return str(Size.of(n))


def gib(n: float) -> str:
    return f"{n / 2**30:.3g} GiB"


def ordered_subsets(n: int, most: int) -> Size:
    """Ordered selections of at most `most` of n things: sum over k <= most of n!/(n-k)! (a bound
    on the frontiers a level of walk's deep chain can reach from n relevant nodes)."""
    total, term = 1, 1
    for k in range(1, min(n, most) + 1):
        term *= n - k + 1
        total += term
    return Size.of(total)


def walk_round(shallow: Size, members: list[int], W: int) -> Size:
    """Outcomes one `walk` round visits at most: its shallow trees, and for each (each has its own
    memo of deep counts) the deep frontiers of every depth below the horizon, at most the ordered
    selections of <= W of that depth's relevant nodes (`members`, one count per depth)."""
    deep = 0
    for n in members:
        d = ordered_subsets(n, W)
        if d.exact is None:
            return Size(shallow.log10 + d.log10)
        deep += d.exact
    return shallow * Size.of(1 + deep)
