"""The lossless gate's matrix: table cases × schemes × checks, with α, β and δ stated.

A *gate case* pairs the exact case (the tables the fast path effectively samples from) with the
case and temperature handed to the fast path: T = 0 runs the fast path's greedy mode against an
exact case whose q_samp and p rows are point masses on the argmax; the temperature-0.5 cases
give q_samp as a separate table (q_rank² renormalised), as docs/ALGORITHM.md §1 says, and
`fastT0.5` runs the fast path at T = 0.5 against exact tables q² and p² renormalised.
Every registered family brings its rows (`rheo.families.registry`: `gate_schemes`, `gate_rows`, and the
rows its mutants run on, `mutant_cases`); the rows live in `rheo/families/<name>/`.

Checks, each a χ² test (rheo.lossless.stats) at level `alpha_per_test()` with power `1 - BETA` at TV = `DELTA`. `alpha_per_test()`
is derived, never set by hand: the family-wise total `FAMILY_ALPHA` split evenly (Bonferroni) over
the matrix's tests, one per (row, check), and the case library's (`library_tests`), so a family
or a library case that adds tests lowers every test's α (`alpha_per_test()`):
- `joint2`, `joint3`: the first 2 / 3 tokens of repeated rounds against the exact target law;
- `round`: the first round's emitted sequence against the exact round law of the same scheme;
- `lengths`: the first round's length (so τ) against its exact law.
The round checks compare with the spec, so they also catch lossless deviations from it.
`fast_sampler` drives the fast path (rheo_fast, imported lazily) as a sampler of a case of any
family, running the spec or a mutant of that family. A mutant's negative control runs on the
case of its family where its exact TV is largest (`mutant_case`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import cache, lru_cache
from typing import Any

from rheo.families.registry import mutant_cases_of, suite_families
from rheo.lossless import validate
from rheo.lossless.gate import check_lossless
from rheo.lossless.stats import (
    DEFAULT_BETA,
    LawTest,
    StatsError,
    law_samples,
    law_test,
    seed_for,
)
from rheo_ref.exact import Exact, Law, mutant_exact, target_law
from rheo_ref.exact import tv as total_variation
from rheo_ref.generate import greedy_case
from rheo_ref.models import AnyScheme, Case, TableModel
from rheo_ref.variants import MUTANTS, variant_named

FAMILY_ALPHA = 1e-4  # the family-wise false-alarm probability: what the whole matrix may cost a correct decoder
BETA = 0.01  # miss probability at TV = DELTA
DELTA = 0.025  # the TV every gate test detects with power 1 - BETA
CHECKS = ("joint2", "joint3", "round", "lengths")

# Integer weights per context (context_length 1; key () is the start row), V = 4. Rows of
# different contexts use different weights so that scores of distinct nodes rarely tie.
DRAFT = {(): [11, 7, 5, 3], (0,): [9, 6, 4, 2], (1,): [3, 10, 6, 2], (2,): [4, 3, 12, 5], (3,): [8, 3, 2, 13]}
TARGET = {(): [6, 10, 3, 4], (0,): [3, 9, 5, 7], (1,): [7, 4, 9, 3], (2,): [5, 8, 2, 9], (3,): [9, 4, 7, 2]}
DRAFT_Z = {(): [11, 7, 0, 3], (0,): [9, 0, 4, 2], (1,): [0, 10, 6, 2], (2,): [4, 3, 12, 0], (3,): [8, 3, 0, 13]}
TARGET_Z = {(): [6, 10, 3, 0], (0,): [0, 9, 5, 7], (1,): [7, 0, 9, 3], (2,): [5, 8, 0, 9], (3,): [9, 4, 7, 0]}


def table(weights: dict, name: str, power: int = 1) -> TableModel:
    """A table from integer weights; `power` 2 gives the temperature-0.5 rows (w² renormalised)."""
    return TableModel.from_weights(weights, context_length=1, name=name, power=power)


@dataclass(frozen=True)
class GateCase:
    """One row of the matrix: `case` is exact; the fast path runs `fast_case` at temperature `T`."""

    name: str
    case: Case
    fast_case: Case
    T: float = 1.0


def all_schemes() -> dict[str, AnyScheme]:
    """The gate's schemes of every registered family, by name (`rheo.families.registry`); a name two families
    give is refused, as `_gate_cases` refuses a row name (a row would run the other's scheme)."""
    out: dict[str, AnyScheme] = {}
    for fam in suite_families().values():
        clash = sorted(set(fam.gate_schemes) & set(out))
        if clash:
            raise StatsError(f"family {fam.name!r}: gate schemes {clash} are already another family's")
        out.update(fam.gate_schemes)
    return out


def gate_case(name: str, scheme: str, *, zeros: bool = False, temp: str = "1") -> GateCase:
    """The row `name`: the gate scheme `scheme` on the tables (with zeros or not) at temperature
    `temp` ("1", "0.5": a separate q_samp table q², "0": greedy, "fast0.5": the fast path's own)."""
    dw, tw = (DRAFT_Z, TARGET_Z) if zeros else (DRAFT, TARGET)
    draft, target = table(dw, "draft"), table(tw, "target")
    sch = all_schemes()[scheme]
    if temp == "0":  # fast path in greedy mode; exact q_samp and p are the point masses
        fast = Case(draft, target, sch, (0,), 3)
        exact = greedy_case(fast)
        return GateCase(name, exact, fast, 0.0)
    if temp == "fast0.5":  # the fast path's own temperature: q_samp and p to the power 1/T = 2
        fast = Case(draft, target, sch, (0,), 3)
        exact = Case(draft, table(tw, "target", power=2), sch, (0,), 3, table(dw, "draft_sample", power=2))
        return GateCase(name, exact, fast, 0.5)
    sample = table(dw, "draft_sample", power=2 if temp == "0.5" else 1)  # a separate q_samp table
    case = Case(draft, target, sch, (0,), 3, sample)
    return GateCase(name, case, case, 1.0)


def gate_cases() -> dict[str, GateCase]:
    """The matrix: every registered family's rows (`rheo.families.registry.SuiteFamily.gate_rows`), in
    registry order."""
    return _gate_cases(tuple(suite_families()))


@lru_cache(maxsize=4)
def _gate_cases(names: tuple[str, ...]) -> dict[str, GateCase]:
    out: dict[str, GateCase] = {}
    fams = suite_families()
    for name in names:
        rows = fams[name].gate_rows()
        clash = sorted(set(rows) & set(out))
        if clash:
            raise StatsError(f"family {name!r}: gate rows {clash} are already another family's")
        out.update(rows)
    return out


@lru_cache(maxsize=1)
def library_tests() -> int:
    """The case library's gate tests: every check of every library case (`rheo cases`), run by
    tests/test_bugclasses.py (bug-class cases) and tests/test_case_library.py (the algorithmic
    families' shared cases, the gate's four checks) at the same per-test α as the matrix."""
    from rheo.selfgate.bugclasses import checks
    from rheo.selfgate.case_library import LIBRARY
    from rheo_ref.bugclasses.cases import BugCase

    return sum(
        len(checks(BugCase.from_json(e["case"]))) if e["family"] == "bugclasses" else len(CHECKS)
        for e in LIBRARY.values()
    )


def gate_tests() -> int:
    """Every test the lossless gate runs at `alpha_per_test()`: the matrix's rows x checks and the library's."""
    return len(gate_cases()) * len(CHECKS) + library_tests()


def alpha_per_test() -> float:
    """The false-alarm probability of each gate test: FAMILY_ALPHA / gate_tests()."""
    return FAMILY_ALPHA / gate_tests()


def __getattr__(name: str) -> object:
    """The deprecated `ALPHA` (PEP 562; a constant that changed when a family registered): `rheo.deprecated`."""
    from rheo import deprecated

    return deprecated.attribute(__name__, name, {"ALPHA": alpha_per_test})


def family_alpha(alpha: float | None = None) -> float:
    """Bonferroni bound on the probability that a correct fast path fails some test of the matrix
    when each test runs at `alpha` (default: `alpha_per_test()`, which makes it FAMILY_ALPHA)."""
    return (alpha_per_test() if alpha is None else alpha) * gate_tests()


MUTANT_CASE = "rheo-m1/T0.5"  # the case of the false-alarm measurement (`rheo mutants`)


def mutant_cases(name: str) -> tuple[str, ...]:
    """The gate cases a mutant's negative control may run on: its family's mutant cases whose
    verifier reads the setting it changes (`rheo.families.registry.SuiteFamily.mutant_cases`)."""
    if name not in MUTANTS:
        raise StatsError(f"unknown mutant {name!r}; allowed: {', '.join(MUTANTS)}")
    family = MUTANTS[name].family
    fams = suite_families()
    if family is None or family not in fams:
        raise StatsError(f"mutant {name!r}: its family {family!r} has no gate rows")
    return mutant_cases_of(fams[family], name)


@cache
def mutant_case(name: str) -> str:
    """The gate case of a mutant's negative control: among `mutant_cases` (its family's), the one
    where its exact TV on the first 3 tokens (then on the first round) is largest. Chosen from
    exact values only."""
    cases = gate_cases()
    return max(mutant_cases(name), key=lambda c: tuple(exact_tvs(cases[c], name, ("joint3", "round")).values()))


def _exact(gc: GateCase, mutant: str | None) -> Exact:
    """The exact computations of a gate case: the spec's, or `mutant`'s exact counterpart's
    (memoised for the matrix's own cases: each check of a case reuses the round laws)."""
    if gate_cases().get(gc.name) is gc:
        return _matrix_exact(gc.name, mutant)
    return _new_exact(gc.case, mutant)


@lru_cache(maxsize=64)
def _matrix_exact(name: str, mutant: str | None) -> Exact:
    return _new_exact(gate_cases()[name].case, mutant)


def _new_exact(case: Case, mutant: str | None) -> Exact:
    return Exact(case) if mutant is None else mutant_exact(case, mutant)


def gate_samples_to_convict(gc: GateCase, mutant: str, alpha: float, beta: float) -> tuple[int | None, str | None]:
    """The fewest samples with which one of the gate's checks convicts `mutant` on `gc`, and that
    check (`rheo.selfgate.bugclasses.samples_to_convict` over `CHECKS`)."""
    from rheo.selfgate.bugclasses import samples_to_convict

    laws = {ch: check_law_of(gc, ch) for ch in CHECKS}
    return samples_to_convict(laws, {ch: check_law_of(gc, ch, mutant) for ch in CHECKS}, alpha, beta)


def check_law_of(gc: GateCase, check: str, mutant: str | None = None) -> Law:
    """The exact law a check compares with (of `mutant`'s exact counterpart if given)."""
    if check.startswith("joint") and mutant is None:
        return target_law(gc.case, int(check[5:]))
    ex = _exact(gc, mutant)
    if check.startswith("joint"):
        return ex.token_law(int(check[5:]))
    if check == "round":
        return ex.round_law()
    if check == "lengths":
        return {(k,): p for k, p in ex.round_lengths().items()}
    raise StatsError(f"unknown check {check!r}; allowed: {', '.join(CHECKS)}")


def exact_tvs(gc: GateCase, mutant: str, checks: tuple[str, ...] = CHECKS) -> dict[str, Fraction]:
    """Exact TV, per check, between the law the mutant's exact counterpart gives the check and
    the law the check tests against (the target law, or the spec's round / length law)."""
    return {ch: total_variation(check_law_of(gc, ch, mutant), check_law_of(gc, ch)) for ch in checks}


def check_sampler(
    gc: GateCase, check: str, mutant: str | None = None, factory: Callable | None = None
) -> Callable[[int, int], list[tuple[int, ...]]]:
    """(seed, n) -> n outcomes of the fast path (or `factory(mutant, first_round=, T=)`) for a check."""
    factory = fast_sampler if factory is None else factory
    if check.startswith("joint"):
        case = Case(
            gc.fast_case.draft,
            gc.fast_case.target,
            gc.fast_case.scheme,
            gc.fast_case.context,
            int(check[5:]),
            gc.fast_case.draft_sample,
        )
        s = factory(mutant, T=gc.T)
        return lambda seed, n: s(case, seed, n)
    s = factory(mutant, first_round=True, T=gc.T)
    if check == "round":
        return lambda seed, n: s(gc.fast_case, seed, n)
    return lambda seed, n: [(len(x),) for x in s(gc.fast_case, seed, n)]


def run_check(
    gc: GateCase,
    check: str,
    *,
    seed: int | None = None,
    mutant: str | None = None,
    alpha: float | None = None,
    beta: float = BETA,
    tv: float = DELTA,
    factory: Callable | None = None,
    law: Law | None = None,
) -> LawTest:
    """One gate test at level `alpha` (default `alpha_per_test()`); the seed defaults to one fixed
    by (case, check, mutant)."""
    alpha = alpha_per_test() if alpha is None else alpha
    alpha, beta, tv = validate.gate_rates(alpha, beta, tv, tv_one=True)  # once: the helpers below take floats
    law = check_law_of(gc, check) if law is None else law
    n = law_samples(law, tv, alpha, beta)
    seed = seed_for(f"gate|{gc.name}|{check}|{mutant}") if seed is None else seed
    samples = check_sampler(gc, check, mutant, factory)(seed, n)
    names, condition = (("the first round's length",), "") if check == "lengths" else (None, "")
    if check == "round":
        condition = "in the first round"
    return law_test(
        samples,
        law,
        alpha=alpha,
        beta=beta,
        tv=tv,
        label=f"{gc.name} {check}" + (f" [{mutant}]" if mutant else ""),
        names=names,
        condition=condition,
    )


# --- driving the fast path ------------------------------------------------------------------


def canonical(seq, vocab_size: int) -> tuple[int, ...]:
    """A fast-path sequence with every token from the first invalid one (-1 or >= V) on set to V."""
    out, bad = [], False
    for t in seq:
        bad = bad or not 0 <= t < vocab_size
        out.append(vocab_size if bad else int(t))
    return tuple(out)


def fast_sampler(
    mutant: str | None = None, *, first_round: bool = False, T: float = 1.0, device: str = "cpu", rounds: bool = False
):
    """A sampler (case, seed, num_samples) -> sequences running `rheo_fast` on a table case.

    `first_round`: the tokens of the first round only (variable length), else the first
    `case.tokens` tokens; `rounds`: those as `rheo.lossless.horizon.Rounds`, with each first round's length
    (for `assert_lossless(..., horizon=H, rounds=True)`). A token the fast path emits outside the vocabulary (-1) and every
    token after it read as V (see `canonical`). T: the fast path's temperature (applied to q_samp
    and p; T = 0 is greedy). Runs torch on one thread (the machine is shared).
    """
    import torch

    from rheo_fast.decode import decode
    from rheo_fast.models import TableTreeModel

    variant = variant_named(mutant)  # an unknown name is refused here, before any sampling

    def sampler(case: Case, seed: int, num_samples: int) -> Any:  # rows, or Rounds with `rounds`
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            g = torch.Generator(device=device).manual_seed(int(seed) % 2**63)
            model = TableTreeModel(case, T=T, device=device)
            out = decode(
                model,
                [list(case.context)] * num_samples,
                case.scheme,
                1 if first_round else case.tokens,
                generator=g,
                variant=variant,
                keep_rounds=first_round,
            )
        finally:
            torch.set_num_threads(threads)
        V = case.vocab_size
        if first_round:
            rows, lengths = out.per_round[0].tolist(), out.first_lengths.tolist()
            return [canonical(r[:k], V) for r, k in zip(rows, lengths)]
        rows = [canonical(r, V) for r in out.tokens.tolist()]
        if rounds:
            from rheo.lossless.horizon import Rounds

            return Rounds(rows, out.first_lengths.tolist())
        return rows

    sampler.__name__ = f"fast_sampler[{mutant or 'spec'}{', first round' if first_round else ''}]"
    return sampler


def fast_verdict(
    case: Case, *, alpha: float, tv: float, seed: int, beta: float = DEFAULT_BETA, mutant: str | None = None
) -> dict:
    """The `rheo audit` column: the fast path's first `case.tokens` tokens against the target law.

    Returns {verdict: "pass"/"REJECT", N, alpha, detectable_tv, p_value} (plus beta, tv, cells,
    pooled_mass); detectable_tv is of the full law (`rheo.lossless.stats.law_detectable_tv`).
    """
    res = check_lossless(fast_sampler(mutant), case, alpha=alpha, tv=tv, beta=beta, seed=seed)
    return {
        "verdict": "REJECT" if res.rejected else "pass",
        "N": res.n,
        "alpha": res.alpha,
        "detectable_tv": res.detectable_tv,
        "p_value": res.p_value,
        "beta": res.beta,
        "tv": res.tv,
        "cells": res.cells,
        "pooled_mass": res.pooled_mass,
    }
