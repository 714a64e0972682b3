"""Which exact method to run when the user names none (`rheo exact CASE`, docs/EXACT_AT_SCALE.md §11).

Every method gives the same law; they differ in what they cost. Each family says what it can
predict of its methods, cheaply (well under a second), as `Cost`s: the outcomes a method visits
when they are known up front (a closed form, a bound, or a small capped probe), the seconds that
makes at a measured rate, whether it fits the case's limit (`--max-trees`), and whether it gives
the whole round (τ) or only the first N tokens (walk). `choose` then applies one rule:

1. only methods that fit the limit, and among them those that give the whole round, unless none does;
2. brute force where it is tiny (predicted under TINY_SECONDS): it is the specification itself;
3. else the fastest method predicted to finish (in under NEVER_SECONDS);
4. else (nothing predicted to finish: every count is past what a cheap estimate reaches) the first
   of the family's methods whose cost does not grow with what stopped the estimates (its
   `fallback`), even one not predicted, before a method predicted not to finish;
5. else the fastest predicted, saying that it is not predicted to finish.

The choice and its reason (naming the method and the estimates it rests on) are printed with the
result; `--method` still forces one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from .errors import CaseError
from .family import family_of
from .sizes import Size
from .variants import SPEC

TINY_SECONDS = 0.05  # below this every method answers at once: run the specification itself
NEVER_SECONDS = 86_400.0  # a method predicted to take longer (a day) will not finish: never chosen over another
GENERIC_SECONDS = 1e-3  # per outcome of a family that predicts nothing finer (its `estimate`)


@dataclass(frozen=True)
class Cost:
    """What a family predicts of one method on one case.

    - `seconds`: predicted wall time of the whole computation; None when its size is not known up
      front (then `estimate` says how far the estimate got);
    - `fits`: within the case's limit (False: it would be refused or stopped);
    - `whole`: it gives the whole round (τ), not only the first N tokens;
    - `estimate`: the estimate in words (a count and what is counted)."""

    method: str
    seconds: float | None
    fits: bool
    estimate: str
    whole: bool = True

    def describe(self) -> str:
        time = "" if self.seconds is None else f", ~{self.seconds:.2g} s"
        over = "" if self.fits else ", over the limit"
        return f"{self.estimate}{time}{over}"


@dataclass(frozen=True)
class Choice:
    """The method chosen, why, and every estimate looked at."""

    method: str
    reason: str
    costs: tuple[Cost, ...] = field(default_factory=tuple)

    def to_json(self) -> dict:
        return {
            "method": self.method,
            "reason": self.reason,
            "estimates": {c.method: c.describe() for c in self.costs},
        }


def choose(costs: list[Cost], fallback: tuple[str, ...] = ()) -> Choice:
    """The rule of the module docstring over a family's `costs`; `fallback`: the methods to take,
    in order, when no cost is predicted."""
    if not costs:
        raise CaseError("no exact method applies to this case")
    fitting = [c for c in costs if c.fits]
    whole = [c for c in fitting if c.whole]
    pool = whole or fitting
    known = sorted((c for c in pool if c.seconds is not None), key=lambda c: c.seconds or 0.0)
    brute = next((c for c in known if c.method == "brute"), None)
    if brute is not None and (brute.seconds or 0.0) <= TINY_SECONDS:
        return Choice("brute", f"brute: {brute.describe()}: tiny, so the specification itself", tuple(costs))
    finishing = [c for c in known if (c.seconds or 0.0) <= NEVER_SECONDS]
    if finishing:
        best = finishing[0]
        why = f"{best.method}: {best.describe()}, the fastest predicted"
        if not whole:
            why += " (no method gives the whole round within the limit: τ is not computed)"
        return Choice(best.method, why, tuple(costs))
    for name in fallback:
        pick = next((c for c in pool if c.method == name and c not in known), None)
        if pick is not None:
            others = "; ".join(f"{c.method}: {c.describe()}" for c in costs if c.method != name)
            return Choice(name, f"{name}: {pick.describe()}; no other is predicted to finish ({others})", tuple(costs))
    if known:
        best = known[0]
        why = f"{best.method}: {best.describe()}, the fastest predicted, though not predicted to finish in a day"
        return Choice(best.method, why, tuple(costs))
    pick = pool[0] if pool else costs[0]
    return Choice(pick.method, f"{pick.method}: {pick.describe()} (nothing fits the limit)", tuple(costs))


def choose_method(case: Any, tokens: int | None = None, *, max_trees: int | None = None) -> Choice:
    """The method `rheo exact` runs on `case`'s law of `tokens` tokens when none is named: the
    family's `costs` (or, for a family without them, brute and dp from its `estimate`), by `choose`."""
    family = family_of(case.scheme)
    n = case.tokens if tokens is None else tokens
    if family.costs is not None:
        costs = list(family.costs(case, n, max_trees))
    else:
        costs = []
        for method in ("brute", "dp"):
            size = family.estimate(case, method, SPEC)
            size = size if isinstance(size, Size) else Size.of(int(size))
            lg = size.log10 + math.log10(GENERIC_SECONDS)
            fits = max_trees is None or size <= max_trees
            costs.append(Cost(method, math.inf if lg > 300 else 10**lg, fits, f"{size} outcomes a round"))
    return choose(costs, family.fallback)
