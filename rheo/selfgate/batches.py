"""Batches of different requests in the gate (docs/GATE_REFERENCE.md, "Bug classes", batches): the batch
sampler, its checks and the samples a check needs to convict a batch mutant
(`rheo_ref.bugclasses.batch`).

- Checks: `request<i>` (request i's tokens against its request's exact law) and `batch` (the
  joint law against the product of the request laws), χ² tests at α / (requests + 1) each, so the
  batch's tests together stay at α family-wise; `invariance`: each request run alone with its seed
  on the same coupled stream must give the tokens it gave in the batch. A correct decoder never
  fails it (its false alarm is 0), so it is rejected on one mismatch and convicts a mutant whose
  mismatch probability is m with N = ⌈ln β / ln(1 − m)⌉ samples (power 1 − β).
- The sampler: the batch decoder on float64 rows, with a counter-based stream: the uniform at
  stream position (key, position) of sample s is a function of (s, key, position) alone, as a
  seeded request's stream must be (whatever else is in the batch).
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from rheo.lossless import validate
from rheo.lossless.stats import LawTest, law_samples, law_test
from rheo.selfgate.bugclasses import CLASS_OF, FloatStream, _floats, convict_n
from rheo_ref.bugclasses.batch import (
    BATCH_MUTANTS,
    CORRECT_BATCH,
    BatchSteps,
    batch_laws,
    decode_batch,
    product_law,
    split,
)
from rheo_ref.bugclasses.cases import BugCase, request_law
from rheo_ref.bugclasses.decoder import Models
from rheo_ref.laws import tv


class CounterStream(FloatStream):
    """A float64 `Random` whose uniform at a position is a function of (sample seed, position) only."""

    def __init__(self, seed: int) -> None:
        super().__init__(random.Random(0))
        self.seed = seed

    def uniform(self, position: Any) -> float:
        if position not in self.drawn:
            self.drawn[position] = random.Random(f"{self.seed}|{position!r}").random()
        return self.drawn[position]


def sample_batch(
    cases: Sequence[BugCase], seeds: Sequence[int], sample_seed: int, steps: BatchSteps = CORRECT_BATCH
) -> tuple[list[tuple[int, ...]], list[tuple[int, ...]]]:
    """One sample: (each request's tokens in the batch, each request's tokens run alone on the same stream)."""
    rand = CounterStream(sample_seed)
    outs = decode_batch(cases, seeds, rand, steps, models=_float_models)
    alone = [decode_batch([c], [s], rand, steps, models=_float_models)[0] for c, s in zip(cases, seeds)]
    return outs, alone


def _float_models(case: BugCase) -> Models:
    return Models(case.draft, case.target, number=_floats)


def batch_checks(n_requests: int) -> tuple[str, ...]:
    return (*(f"request{i}" for i in range(n_requests)), "batch", "invariance")


def invariance_n(m: Fraction, beta: float) -> int | None:
    """Coupled samples that show a mismatch of probability m with probability ≥ 1 − β (None: m = 0)."""
    if m <= 0:
        return None
    if m >= 1:
        return 1
    return max(1, math.ceil(math.log(beta) / math.log1p(-float(m))))


def batch_row(
    cases: Sequence[BugCase], seeds: Sequence[int], mutant: str, *, alpha: float, beta: float
) -> dict[str, Any]:
    """Exact TV per check (invariance: the largest mismatch probability over the requests) and the
    fewest samples that convict `mutant` on the batch (module docstring)."""
    laws, bad, moved = batch_laws(cases, seeds, BATCH_MUTANTS[mutant][1])
    each = alpha / len(laws)  # request<i> and batch share α
    tvs: dict[str, Fraction] = {c: tv(bad[c], laws[c]) for c in laws}
    ns = {c: convict_n(laws[c], bad[c], each, beta) for c in laws}
    tvs["invariance"] = max(moved.values())
    ns["invariance"] = invariance_n(tvs["invariance"], beta)
    found = [(n, c) for c, n in ns.items() if n is not None]
    n, ch = min(found) if found else (None, None)
    return {
        "mutant": mutant,
        "class": CLASS_OF[mutant],
        "reference": BATCH_MUTANTS[mutant][0],
        "exact_tv": {c: str(v) for c, v in tvs.items()},
        "exact_tv_float": {c: float(v) for c, v in tvs.items()},
        "samples_per_check": ns,
        "samples_to_convict": n,
        "convicting_check": ch,
        "alpha_each": each,
    }


def run_batch_check(
    cases: Sequence[BugCase],
    seeds: Sequence[int],
    check: str,
    *,
    alpha: float,
    beta: float,
    tv: float,
    seed: int,
    mutant: str | None = None,
    n: int | None = None,
) -> dict[str, Any]:
    """One check of the batch decoder (or `mutant`) at α / (requests + 1) for the χ² checks; N is the
    gate's rule for `tv` unless given. Returns {check, n, rejected, p_value} (invariance: p_value 0 on
    a mismatch, else 1)."""
    steps = CORRECT_BATCH if mutant is None else BATCH_MUTANTS[mutant][1]
    laws = {f"request{i}": request_law(c) for i, c in enumerate(cases)} | {"batch": product_law(cases)}
    alpha, beta, tv = validate.gate_rates(alpha, beta, tv, tv_one=True)  # once: the helpers below take floats
    each = alpha / len(laws)
    if n is None:
        n = 1 if check == "invariance" else law_samples(laws[check], tv, each, beta)
    draws = [sample_batch(cases, seeds, seed * 1_000_003 + k, steps) for k in range(n)]
    if check == "invariance":
        mismatch = sum(outs != alone for outs, alone in draws)
        return {"check": check, "n": n, "rejected": mismatch > 0, "p_value": 0.0 if mismatch else 1.0}
    if check == "batch":
        rows = [tuple(t for o in outs for t in (*o, -1)) for outs, _ in draws]
    else:
        i = int(check[7:])
        rows = [outs[i] for outs, _ in draws]
    res: LawTest = law_test(rows, laws[check], alpha=each, beta=beta, tv=tv, label=f"{check} [{mutant or 'baseline'}]")
    return {"check": check, "n": n, "rejected": res.rejected, "p_value": res.p_value}


__all__ = ["batch_checks", "batch_row", "invariance_n", "run_batch_check", "sample_batch", "split"]
