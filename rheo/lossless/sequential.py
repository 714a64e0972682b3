"""The sequential gate: a lossy decoder is stopped at the first look that convicts it (docs/STATISTICS.md,
"Early rejection").

A group-sequential test with Bonferroni α spending, over `LOOKS` looks at N/2^(J−1), ..., N/2, N
samples (N the planned N of the last look):

- *Level.* Look j tests the samples drawn so far with the gate's own test (`check_law`, the set
  test or the weighted χ² the planner picks at that n) at level α_j. The interim looks share
  `INTERIM_SHARE`·α equally and the last look gets the rest, so Σ_j α_j = α and, by the union bound,
  a correct decoder is rejected at some look with probability ≤ α. Each look's test is valid at
  its n whatever happened at the others (its samples are i.i.d. from the decoder's law).
- *Power.* The gate rejects whenever the last look would: its power is at least the last look's,
  ≥ 1 − β at TV ≥ `detectable_tv(N)` at level α_J, which is what N is planned for (`samples_for`
  at α_J = (1 − INTERIM_SHARE)·α).
- *Cost.* A pass costs N (the last look's), a few percent above the fixed gate's N at α (α_J is
  smaller); a decoder at TV t is convicted, with probability ≥ 1 − β, by the first look whose
  certified δ at α_j is ≤ t: at a sixteenth of N when t is large.

Interim looks only reject; a pass is decided at the last look. Samples are drawn per look, the
chunk of look j with the seed `chunk_seed(seed, j)` (look 1 uses the call's seed itself), so a
sampler is called once per look, never for samples the verdict does not read.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from rheo_ref.errors import StatsError

LOOKS = 5  # looks at N/16, N/8, N/4, N/2, N
INTERIM_SHARE = 0.1  # share of α spent on the interim looks (equally); the last look gets the rest


@dataclass(frozen=True)
class Looks:
    """The looks of one sequential test: cumulative samples and the level of each."""

    sizes: tuple[int, ...]  # [J] samples drawn by look j (increasing; the last is N)
    alphas: tuple[float, ...]  # [J] α_j, summing to the call's α

    @property
    def n(self) -> int:
        return self.sizes[-1]


def final_alpha(alpha: float) -> float:
    """α_J: the last look's level, at which N is planned."""
    return (1 - INTERIM_SHARE) * alpha


def plan_looks(n: int, alpha: float, looks: int = LOOKS) -> Looks:
    """The looks for a last-look N: sizes ⌈N/2^k⌉ (k = J−1..0, repeats dropped), the interim looks
    at INTERIM_SHARE·α/(J − 1) each and the last at (1 − INTERIM_SHARE)·α. One look when N is too
    small for two distinct sizes (then α_J = α would be allowed, but the planned N already used α_J)."""
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise StatsError(f"n={n!r}: the last look's samples must be an integer >= 1")
    sizes = tuple(sorted({max(1, math.ceil(n / 2**k)) for k in range(looks)}))
    if len(sizes) == 1:
        return Looks(sizes, (final_alpha(alpha),))
    interim = INTERIM_SHARE * alpha / (len(sizes) - 1)
    return Looks(sizes, (interim,) * (len(sizes) - 1) + (final_alpha(alpha),))


def chunk_seed(seed: int, look: int) -> int:
    """The seed the sampler gets for look `look`'s chunk (0-based): the call's seed for the first, a
    63-bit hash of (seed, look) for the others."""
    if look == 0:
        return seed
    digest = hashlib.blake2b(f"{seed}:{look}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "big") >> 1


def check_sequential(
    draw: Callable[[int, int, int], Sequence[Any]],
    law: Any,
    *,
    n: int,
    alpha: float,
    tv: float,
    beta: float,
    seed: int,
    statistic: str = "pearson",
    label: str = "law",
    names: Sequence[str] | None = None,
    check: Callable[..., Any],
) -> Any:
    """Run the looks: `draw(look, seed, m)` returns the look's `m` new samples, and each look is
    judged by `check` (the gate's `rheo.lossless.stats.check_law`, passed in: the gate imports this
    module, not the other way round) on every sample so far. Returns the
    deciding look's `LawTest` (the first that rejects, else the last), with `looks` (the planned
    sizes), `look` (1-based) and `family_alpha` (α over every look) filled in; `n` is the samples
    drawn, `alpha` that look's level."""
    from rheo.lossless import validate

    plan = plan_looks(n, alpha)
    counts: Counter[tuple[int, ...]] = Counter()  # every sample drawn so far, each read once
    drawn = 0
    res = None
    for j, (size, a) in enumerate(zip(plan.sizes, plan.alphas, strict=True)):
        rows = draw(j, chunk_seed(seed, j), size - drawn)
        counts.update(validate.sample_counts(rows))
        drawn = sum(counts.values())
        res = check(
            counts,
            law,
            alpha=a,
            tv=tv,
            beta=beta,
            statistic=statistic,
            label=label,
            names=names,
            seed=chunk_seed(seed, j),
        )
        if res.rejected:
            break
    assert res is not None, "a sequential test has at least one look"
    return replace(res, looks=plan.sizes, look=j + 1, family_alpha=alpha)


def convicting_look(law: Any, n: int, alpha: float, beta: float, tv: float) -> int | None:
    """Samples by which the sequential gate over `plan_looks(n, alpha)` rejects, with probability
    ≥ 1 − β, every decoder whose law is at TV ≥ `tv` from `law`: the size of the first look whose
    certified TV at its own level α_j is ≤ `tv` (its test alone rejects with probability ≥ 1 − β,
    and the gate stops at that look or before). None when no look certifies `tv` (a decoder that
    close is not promised a rejection by these looks). A bound from the certificates, drawing no
    sample: the measured stopping look is often earlier."""
    from rheo.lossless import promise

    plan = plan_looks(n, alpha)
    for size, a in zip(plan.sizes, plan.alphas, strict=True):
        if promise.planner(law, a, beta).detectable(size) <= tv:
            return size
    return None
