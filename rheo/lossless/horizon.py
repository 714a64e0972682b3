"""Horizon tests: every level of a tree decoder reached without V^H cells (`assert_lossless(...,
horizon=H)`).

A tree of depth D first matters at token 1 + D, and the joint law of the first H tokens has up to
V^H cells. Instead, one batch of N samples of H tokens is tested on:
- the window (x_{k−1}, x_k) for every k = 2..H against its exact law (`rheo.lossless.windows`: forward
  composition from the tables, at most V² cells each);
- with `rounds=True` (a sampler that returns the length of each sample's first round): the first
  round's length law against the scheme's exact one, and, for every possible length ℓ, the
  windows k = 2..H of the samples whose first round had length ℓ against their exact law given ℓ
  (the scheme's exact first round restricted to length ℓ, then the target: what every lossless
  decoder running the case's scheme emits). These compare with the spec, as the gate's round
  checks do, and they say at which depth a round goes wrong.

Family-wise α: `alpha` is the total for the whole family; the m tests (m = H − 1, or with rounds
1 + (H − 1)(1 + number of possible first-round lengths), fixed from exact laws before sampling)
each run at α/m (Bonferroni; Holm's step-down gives the same verdict "some test rejects", since its
first step is α/m too). N is the least that lets every unconditional window detect TV ≥ δ with
power 1 − β at α/m (and the length law too); a conditional test has the N_ℓ samples its stratum
got, and states the TV it detects at that N_ℓ.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from fractions import Fraction
from typing import Any

from rheo.lossless import validate
from rheo.lossless.diagnosis import Cell, Conditional
from rheo.lossless.stats import (
    LawTest,
    Sampler,
    hide_lossless,
    law_samples,
    law_test,
    read_batch,
    with_tokens,
)
from rheo.lossless.windows import Law, first_lengths, target_windows, windows_given_first_length
from rheo_ref.errors import CaseError, SamplerOutputError
from rheo_ref.models import Case

CORRECTION = "bonferroni"
MIN_HORIZON = 8  # the default horizon is max(MIN_HORIZON, 1 + the scheme's depth)


def default_horizon(case: Case) -> int:
    """max(8, 1 + D): the deepest level of a round first matters at token 1 + D."""
    validate.case(case)
    return max(MIN_HORIZON, 1 + int(getattr(case.scheme, "D", 0)))


@dataclass(frozen=True)
class Rounds:
    """What a sampler with `rounds=True` returns: the token rows and each row's first-round length."""

    tokens: Sequence[Sequence[int]]
    first_lengths: Sequence[int]


@dataclass(frozen=True)
class HorizonPlan:
    """The laws and sizes of a horizon test, fixed from exact laws before any sampling."""

    horizon: int
    windows: dict[int, Law]
    lengths: dict[int, Fraction] | None  # the first round's length law (rounds=True)
    given: dict[int, dict[int, Law]]  # ℓ -> k -> window law given a first round of length ℓ
    tests: int  # m: the family
    alpha: float  # family-wise total
    alpha_each: float  # α / m
    n: int


def plan(
    case: Case, horizon: int, *, alpha: float, tv: float, beta: float, rounds: bool, limit: int | None = None
) -> HorizonPlan:
    """Exact laws, the number of tests m, the per-test α = alpha / m and N (the largest law's;
    `MoreThan(limit + 1)` past a `limit`, `samples_for`). The rates are checked by the caller
    (`rheo.lossless.validate.gate_rates`, once at the public entry: the gate, `plan_samples`), and so is
    the horizon (`rheo.lossless.windows.check_horizon`)."""
    if case.constraint is not None:  # the windows compose rounds by the visible context; a grammar's state is not in it
        raise CaseError(
            f"horizon={horizon}: the horizon test does not take a case with a constraint (its windows follow the "
            "visible context, the grammar's state follows the whole output); test the first tokens instead (horizon=None)"
        )
    windows = target_windows(case, horizon)
    lengths, given = None, {}
    if rounds:
        from rheo_ref.exact import Exact

        first = Exact(case).round_law()
        lengths = first_lengths(first)
        given = windows_given_first_length(case, first, horizon)
    m = (horizon - 1) * (1 + len(given)) + (lengths is not None)
    each = alpha / m
    laws: list[Law] = list(windows.values()) + ([{(k,): p for k, p in lengths.items()}] if lengths else [])
    from rheo.lossless import promise

    n = 0
    for law in laws:  # N is the largest law's: a law certified at the N so far needs no search
        if n and promise.planner(law, each, beta).holds(n, tv):
            continue
        n = max(n, law_samples(law, tv, each, beta, limit=limit))
        if limit is not None and n > limit:
            break
    return HorizonPlan(horizon, windows, lengths, given, m, alpha, each, n)


@dataclass(frozen=True)
class HorizonTest:
    """The record of a horizon test: every window's (and stratum's) `LawTest`, α stated per test
    and for the family."""

    label: str
    horizon: int
    correction: str
    alpha: float  # family-wise total
    alpha_each: float  # per test: alpha / len(planned tests)
    planned: int  # m, the tests the family was split over
    beta: float
    tv: float
    n: int
    tests: tuple[LawTest, ...]
    rejected: bool
    statistic: str = "pearson"

    @property
    def p_value(self) -> float:
        """Bonferroni-adjusted: min(1, m · smallest p-value); rejected iff below `alpha`."""
        return min(1.0, self.planned * min(t.p_value for t in self.tests))

    @property
    def detectable_tv(self) -> float:
        """TV of each unconditional window's full law (its every outcome, none pooled away) that its
        test detects with power 1 − β at α/m: the horizon's guarantee (`LawTest.guarantee`)."""
        return max(t.detectable_tv for t in self.tests if " | " not in t.label)

    @property
    def pooled_mass(self) -> float:
        """The largest exact mass an unconditional window pools into one cell (counted in `detectable_tv`)."""
        return max(t.pooled_mass for t in self.tests if " | " not in t.label)

    @property
    def cells(self) -> int:
        return sum(t.cells for t in self.tests)

    @property
    def impossible(self) -> int:
        return max(t.impossible for t in self.tests)

    @property
    def worst(self) -> LawTest:
        """The test that rejects most clearly: impossible samples first, then the statistic furthest past its
        critical value (S / c; the p-value bounds share a floor where the evidence is overwhelming)."""
        return min(self.tests, key=lambda t: (not t.rejected, -t.impossible, -t.margin, t.p_value))

    @property
    def top_cells(self) -> tuple[Cell, ...]:
        return self.worst.top_cells

    @property
    def worst_conditional(self) -> Conditional | None:
        return self.worst.worst_conditional

    def summary(self, top: int = 3) -> str:
        verdict = "REJECT" if self.rejected else "pass"
        w = self.worst
        line = (
            f"{self.label}: {verdict} (H={self.horizon}, {self.planned} tests at α={self.alpha_each:.3g} each, "
            f"family α={self.alpha:g} ({self.correction}), N={self.n}, adjusted p={self.p_value:.3g}; every "
            f"window detects TV≥{self.detectable_tv:.4f} of its full law with power {1 - self.beta:g}, "
            f"stated δ={self.tv:g})"
        )
        if not self.rejected:
            return line
        return f"{line}\n  worst test: {w.label} (p={w.p_value:.3g}, N={w.n})\n{w.diagnosis(top)}"

    def table(self) -> str:
        """One line per test: label, α, N, detectable TV at power 1 − β, p-value, verdict."""
        return "\n".join(
            f"{t.label:44} α={t.alpha:.3g} N={t.n:7d} detects TV≥{t.detectable_tv:.4f} p={t.p_value:.3g}"
            f"{'  REJECT' if t.rejected else ''}"
            for t in self.tests
        )

    def to_json(self) -> dict:
        out = asdict(self)
        out["p_value"], out["detectable_tv"] = self.p_value, self.detectable_tv
        out["pooled_mass"] = self.pooled_mass
        return out


def _window(k: int) -> str:
    return f"window {k - 1},{k}"


def check_horizon_samples(
    rows: list[tuple[int, ...]],
    lengths: list[int] | None,
    p: HorizonPlan,
    *,
    tv: float,
    beta: float,
    statistic: str = "pearson",
    label: str = "horizon",
) -> HorizonTest:
    """Every test of the plan on the sampled rows (H tokens each) and first-round lengths; no raise. The
    rates and the statistic are the checked call's (`gate_call`): each window's test checks them no more."""
    a = p.alpha_each

    def test(samples: list, law: Law, what: str, names: tuple[str, ...], condition: str = "") -> LawTest:
        return law_test(
            samples, law, alpha=a, tv=tv, beta=beta, statistic=statistic, label=what, names=names, condition=condition
        )

    def windows(rs: list[tuple[int, ...]], laws: dict[int, Law], suffix: str = "", condition: str = "") -> list:
        return [
            test([r[k - 2 : k] for r in rs], laws[k], _window(k) + suffix, (f"token {k - 1}", f"token {k}"), condition)
            for k in sorted(laws)
        ]

    tests = windows(rows, p.windows)
    if p.lengths is not None:
        if lengths is None:
            raise SamplerOutputError("rounds=True: the sampler must return Rounds(tokens, first_lengths)")
        tests.append(
            test([(x,) for x in lengths], {(k,): q for k, q in p.lengths.items()}, "first round's length", ("length",))
        )
        strata: dict[int, list[tuple[int, ...]]] = defaultdict(list)
        for r, ell in zip(rows, lengths):
            strata[ell].append(r)
        for ell, laws in p.given.items():
            if strata.get(ell):
                tests += windows(strata[ell], laws, f" | first round {ell}", f"first round of length {ell}")
    return HorizonTest(
        f"{label} (windows k=2..{p.horizon}{', given the first round' if p.lengths is not None else ''})",
        p.horizon,
        CORRECTION,
        p.alpha,
        a,
        p.tests,
        beta,
        tv,
        p.n,
        tuple(tests),
        any(t.rejected for t in tests),
        statistic,
    )


def read_rounds(batch: Any, horizon: int, n: int, rounds: bool) -> tuple[list[tuple[int, ...]], list[int] | None]:
    """Rows of H tokens and, with rounds, the first-round lengths, from what a sampler returned."""
    if not rounds:
        return read_batch(batch, horizon, n), None
    if not hasattr(batch, "tokens") or not hasattr(batch, "first_lengths"):
        raise SamplerOutputError(
            f"rounds=True: the sampler returned {type(batch).__name__}; it must return an object with "
            "`tokens` and `first_lengths` (rheo.lossless.horizon.Rounds, or rheo_fast's Decoded)"
        )
    lengths = validate.first_lengths(batch.first_lengths, n)
    return read_batch(batch.tokens, horizon, n), lengths


def horizon_test(
    sampler: Sampler,
    case: Case,
    horizon: int,
    *,
    alpha: float,
    tv: float,
    beta: float,
    seed: int,
    statistic: str = "pearson",
    rounds: bool = False,
    force: bool = False,
) -> HorizonTest:
    """The horizon test of a decoder (`rheo.check_lossless(..., horizon=H)`) on arguments the gate has
    checked (`rheo.lossless.gate.gate_arguments`); no raise."""
    __tracebackhide__ = hide_lossless
    p = plan(case, horizon, alpha=alpha, tv=tv, beta=beta, rounds=rounds, limit=validate.sample_limit(force))
    validate.planned_samples(p.n, alpha=p.alpha_each, tv=tv, beta=beta, force=force)
    rows, lengths = read_rounds(sampler(with_tokens(case, p.horizon), seed, p.n), p.horizon, p.n, rounds)
    return check_horizon_samples(rows, lengths, p, tv=tv, beta=beta, statistic=statistic, label="horizon vs target law")
