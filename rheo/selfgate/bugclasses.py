"""The bug classes in the gate: the baseline decoder as a sampler, its checks, and the samples a
gate check needs to convict a mutant (docs/GATE_REFERENCE.md, "Bug classes" and "The fewest samples").

- `sampler(mutant)`: the baseline decoder of `rheo_ref.bugclasses.decoder` run on float64 rows
  with a seeded `random.Random` stream (one stream per sample; the same code as the exact law);
- checks `joint1` … `joint<tokens>`: the first n tokens against the request's exact law; `round`:
  the prefill token and the first verification step's tokens against the baseline decoder's
  exact law of them (so a lossless change of the algorithm, or of τ, shows too); `logprobs`: the
  tokens and whether every probability the decoder reports is the processed target's (a wrong
  report is an outcome the checked law lacks: one sample convicts); `grid` (boundary mutants): the
  tokens with the stream's coins on the grid {k/16}, against the baseline's law on the same grid;
- `samples_to_convict(laws, tvs)`: the smallest N at which one check rejects the mutant with
  power ≥ 1 − β at level α, from its exact TV (`rheo.lossless.stats.samples_for_coarse`: the mutant's
  law is known exactly, so its TV is re-read on the cells the test pools at that N and the power
  claim holds for that mutant, without the full-law margin a gate against an unknown decoder needs);
- `CLASS_OF`: the class of every mutant, the twenty algorithmic ones included.
"""

from __future__ import annotations

import json
import random
from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from rheo.lossless import validate
from rheo.lossless.stats import (
    LawTest,
    law_samples,
    law_test,
    min_num_samples,
    pool_cells,
    samples_for_coarse,
    seed_for,
)
from rheo_ref.bugclasses.batch import BATCH_MUTANTS
from rheo_ref.bugclasses.cases import GRID, BugCase, case_law, grid_law, logprobs_law, request_law
from rheo_ref.bugclasses.decoder import Models, decode
from rheo_ref.bugclasses.exact import marginal, reported_ok
from rheo_ref.bugclasses.mutants import BUG_MUTANTS
from rheo_ref.laws import Law, tv

# The class of each of the twenty algorithmic mutants (rheo_ref.variants.MUTANTS); the bug classes'
# are their numbers (rheo_ref.bugclasses.mutants)
CLASS_OF = {
    "proxy-true": "ranking: survival bias",
    "proxy-const": "ranking: survival bias",
    "verify-q-not-qtilde": "q verified ≠ q sampled",
    "temp-sample-only": "q verified ≠ q sampled",
    "sample-whole-q": "draw outside the verified support",
    "residual-unnormalised": "residual",
    "stale-bonus": "bonus row",
    "bonus-full-p": "bonus row",
    "traversal-stale-bonus": "bonus row",
    "one-hot-sampled": "draft as point mass",
    "leq-coin": "numerics (dtype, coin)",
    "float16": "numerics (dtype, coin)",
    "fills-first": "verification order",
    "sorted-siblings": "verification order",
    "traversal-min-index-leaf": "verification order",
    "traversal-bad-rate": "verifier update rule",
    "traversal-wrong-update": "verifier update rule",
    "specinfer-on-wor": "verifier update rule",
    "treespark-own-survival": "tree shaped by the draws (selection bias)",
    "tsubame-plan-after-sampling": "tree shaped by the draws (selection bias)",
    **{name: f"{m.klass}: {m.description}" for name, m in BUG_MUTANTS.items()},
    **{name: f"batch: {what}" for name, (_, _, what) in BATCH_MUTANTS.items()},
}


# --- the sampler -------------------------------------------------------------------------------


class FloatStream:
    """A `Random` over float64 uniforms: a position's uniform is drawn once, when first asked for."""

    def __init__(self, rng: random.Random, grid: int | None = None) -> None:
        self.rng = rng
        self.grid = grid  # None: float64 uniforms; M: uniforms k/M, k uniform in 0..M − 1
        self.drawn: dict[int, float] = {}

    def uniform(self, position: int) -> float:
        if position not in self.drawn:
            self.drawn[position] = self.rng.random() if self.grid is None else self.rng.randrange(self.grid) / self.grid
        return self.drawn[position]

    def below(self, u: float, a: float) -> bool:
        return u < a

    def pick(self, u: float, row, closed: bool = False) -> int:
        if closed:  # the first t with u·Σ <= cumulative sum, zero-mass tokens included
            x = u * sum(row)
            return next((t for t in range(len(row)) if x <= sum(row[: t + 1])), len(row) - 1)
        x, last = u * sum(row), 0
        for t, w in enumerate(row):
            if w > 0:
                last = t
                x -= w
                if x < 0:
                    return t
        return last  # u·Σ rounded past the last cumulative sum


def _floats(row) -> tuple[float, ...]:
    return tuple(float(x) for x in row)


def sampler(mutant: str | None = None, *, first_round: bool = False, logprobs: bool = False, grid: int | None = None):
    """(case, seed, n) -> n first-`case.tokens` sequences of the baseline decoder (or of `mutant`);
    `first_round`: the prefill token and the first verification step's tokens; `logprobs`: each
    followed by 1 when every probability it reports is the processed target's, else 0; `grid`: the
    stream's uniforms on the grid {k/grid} (the `grid` check's coins)."""
    steps = BUG_MUTANTS[mutant].steps if mutant else None

    def run(case: BugCase, seed: int, n: int) -> list[tuple[int, ...]]:
        models = Models(case.draft, case.target, number=_floats)
        rng = random.Random(seed)
        kw: dict[str, Any] = {"first_round": first_round, "constraint": case.constraint}
        if steps is not None:
            kw["steps"] = steps
        out = []
        for _ in range(n):
            reported: list = []
            s = decode(models, case.context, case.tokens, case.request, FloatStream(rng, grid), logprobs=reported, **kw)
            if logprobs:
                s = (*s, int(reported_ok(case.target, case.context, case.request, case.constraint, s, reported)))
            out.append(s)
        return out

    return run


# --- checks and the samples that convict --------------------------------------------------------


def checks(case: BugCase) -> tuple[str, ...]:
    return (*(f"joint{n}" for n in range(1, case.tokens + 1)), "round")


_BASELINE: dict[str, Law] = {}  # the baseline's round law per case (JSON), computed once


def check_law_of(case: BugCase, check: str, mutant: str | None = None) -> Law:
    """The exact law a check tests against (`mutant` None), or the mutant's law of the same outcome."""
    if check == "logprobs":
        return logprobs_law(case, mutant)
    if check == "grid":
        return grid_law(case, mutant)
    if check == "round":
        if mutant is not None:
            return case_law(case, mutant, first_round=True)
        key = json.dumps(case.to_json(), sort_keys=True, allow_nan=False)
        if key not in _BASELINE:
            if len(_BASELINE) > 256:
                _BASELINE.clear()
            _BASELINE[key] = case_law(case, first_round=True)
        return _BASELINE[key]
    n = int(check[5:])
    return request_law(case, n) if mutant is None else marginal(case_law(case, mutant), n)


def run_check(
    case: BugCase,
    check: str,
    *,
    alpha: float,
    beta: float,
    tv: float,
    seed: int,
    mutant: str | None = None,
    n: int | None = None,
) -> LawTest:
    """One gate test of the baseline decoder (or `mutant`) on `case` (module docstring); N is the
    gate's rule for `tv` unless `n` is given."""
    alpha, beta, tv = validate.gate_rates(alpha, beta, tv, tv_one=True)  # once: the helpers below take floats
    law = check_law_of(case, check)
    N = law_samples(law, tv, alpha, beta) if n is None else n
    grid = GRID if check == "grid" else None
    draws = sampler(mutant, first_round=check == "round", logprobs=check == "logprobs", grid=grid)(case, seed, N)
    if check.startswith("joint"):
        draws = [s[: int(check[5:])] for s in draws]
    return law_test(draws, law, alpha=alpha, beta=beta, tv=tv, label=f"{check} [{mutant or 'baseline'}]")


def coarse_tv(a: Law, b: Law, cells: list[tuple]) -> Fraction:
    """TV between a and b read on the tested cells (outcomes of b pooled; the rest is one cell)."""
    inside = {k for g in cells for k in g}
    total = sum(
        (abs(sum((a.get(k, 0) for k in g), Fraction(0)) - sum((b[k] for k in g), Fraction(0))) for g in cells),
        Fraction(0),
    )
    total += sum((x for k, x in a.items() if k not in inside), Fraction(0))
    return total / 2


def convict_n(law: Law, bad: Law, alpha: float, beta: float) -> int | None:
    """Smallest N at which a test of `law` rejects samples of `bad` with power ≥ 1 − β at level α
    (None when the laws agree): the gate's N rule at the exact TV, lowered to the TV on the
    cells it pools at that N until it holds there."""
    d = tv(bad, law)
    if d == 0:
        return None
    for _ in range(20):
        N = samples_for_coarse(law, min(float(d), 1.0), alpha, beta)
        c = coarse_tv(bad, law, pool_cells(law, N))
        if c >= d or float(c) >= float(d) * (1 - 1e-12):
            return N
        if c == 0:
            return None
        d = c
    return N


def samples_to_convict(
    laws: Mapping[str, Law], bad: Mapping[str, Law], alpha: float, beta: float
) -> tuple[int | None, str | None]:
    """(fewest N over the checks, the check): `laws` and `bad` map each check to the law it tests
    against and to the mutant's law."""
    best: tuple[int | None, str | None] = (None, None)
    for ch in laws:
        n = convict_n(laws[ch], bad[ch], alpha, beta)
        if n is not None and (best[0] is None or n < best[0]):
            best = (n, ch)
    return best


def bug_laws(case: BugCase, mutant: str) -> tuple[dict[str, Law], dict[str, Law]]:
    """(the law each check tests against, the mutant's law of the same outcome) on a case."""
    m = case_law(case, mutant, logprobs=True)
    ref = request_law(case)
    laws: dict[str, Law] = {c: marginal(ref, int(c[5:])) for c in checks(case) if c != "round"}
    bad: dict[str, Law] = {c: marginal(m, int(c[5:])) for c in laws}
    laws["round"], bad["round"] = check_law_of(case, "round"), check_law_of(case, "round", mutant)
    laws["logprobs"], bad["logprobs"] = logprobs_law(case), m
    if BUG_MUTANTS[mutant].kind == "boundary":
        laws["grid"], bad["grid"] = grid_law(case), grid_law(case, mutant)
    return laws, bad


def bug_row(case: BugCase, mutant: str, *, alpha: float, beta: float) -> dict:
    """Exact TV per check and samples_to_convict of one bug-class mutant on a case."""
    laws, bad = bug_laws(case, mutant)
    n, ch = samples_to_convict(laws, bad, alpha, beta)
    tvs = {c: tv(bad[c], laws[c]) for c in laws}
    return {
        "mutant": mutant,
        "class": CLASS_OF[mutant],
        "reference": BUG_MUTANTS[mutant].reference,
        "exact_tv": {c: str(v) for c, v in tvs.items()},
        "exact_tv_float": {c: float(v) for c, v in tvs.items()},
        "samples_to_convict": n,
        "convicting_check": ch,
    }


def min_possible_samples(tv_bound: float, alpha: float, beta: float) -> int:
    """The fewest samples with which any gate check can convict a mutant whose exact TV is ≤ `tv_bound`
    and whose law has no outcome the checked law lacks: the two-cell χ² test's N at `tv_bound`
    (`samples_for_coarse` is ≥ it, since λ* grows with the cells and N falls as the TV grows; a one-cell
    law cannot be moved by such a mutant)."""
    return min_num_samples(tv_bound, alpha, beta, 2)


def seed(label: str) -> int:
    return seed_for(f"bugclasses|{label}")
