"""The lossless gate's matrix: table cases × schemes × checks, with α, β and δ stated.

A *gate case* pairs the exact case (the tables the fast path effectively samples from) with the
case and temperature handed to the fast path: T = 0 runs the fast path's greedy mode against an
exact case whose q_samp and p rows are point masses on the argmax; the temperature-0.5 cases
give q_samp as a separate table (q_rank² renormalised), as docs/ALGORITHM.md §1 says, and
`fastT0.5` runs the fast path at T = 0.5 against exact tables q² and p² renormalised.
Both families are in the matrix: the rheo family's schemes (`SCHEMES`) and the static family's
(`STATIC_SCHEMES`: the five lossless pairings on a branching and a delayed shape, and a
`parents` shape whose leaves are created out of post-order).

Checks, each a χ² test (rheo.stats) at level `ALPHA` with power `1 - BETA` at TV = `DELTA`:
- `joint2`, `joint3`: the first 2 / 3 tokens of repeated rounds against the exact target law;
- `round`: the first round's emitted sequence against the exact round law of the same scheme;
- `lengths`: the first round's length (so τ) against its exact law.
The round checks compare with the spec, so they also catch lossless deviations from it.
`fast_sampler` drives the fast path (rheo_fast, imported lazily) as a sampler of a case of either
family, running the spec or a mutant of that family. A mutant's negative control runs on the
case of its family where its exact TV is largest (`mutant_case`).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from fractions import Fraction
from functools import cache, lru_cache
from typing import Any

from rheo_ref.exact import Exact, Law, target_law
from rheo_ref.exact import tv as total_variation
from rheo_ref.models import AnyScheme, Case, Scheme, TableModel
from rheo_ref.replay import greedy_case
from rheo_ref.static import StaticScheme
from rheo_ref.treespark import Calibration, TreeSparkScheme
from rheo_ref.tsubame import TsubameScheme
from rheo_ref.variants import MUTANTS, READ_BY, variant_named

from .stats import DEFAULT_BETA, LawTest, LosslessError, StatsError, assert_lossless, check_law, samples_for, seed_for

ALPHA = 3e-7  # false-alarm probability of every gate test (the family's: `family_alpha`)
FAMILY_ALPHA_BOUND = 1e-4  # what the whole matrix may cost a correct decoder (asserted by the tests)
BETA = 0.01  # miss probability at TV = DELTA
DELTA = 0.025  # the TV every gate test detects with power 1 - BETA
CHECKS = ("joint2", "joint3", "round", "lengths")

# Integer weights per context (context_length 1; key () is the start row), V = 4. Rows of
# different contexts use different weights so that scores of distinct nodes rarely tie.
DRAFT = {(): [11, 7, 5, 3], (0,): [9, 6, 4, 2], (1,): [3, 10, 6, 2], (2,): [4, 3, 12, 5], (3,): [8, 3, 2, 13]}
TARGET = {(): [6, 10, 3, 4], (0,): [3, 9, 5, 7], (1,): [7, 4, 9, 3], (2,): [5, 8, 2, 9], (3,): [9, 4, 7, 2]}
DRAFT_Z = {(): [11, 7, 0, 3], (0,): [9, 0, 4, 2], (1,): [0, 10, 6, 2], (2,): [4, 3, 12, 0], (3,): [8, 3, 0, 13]}
TARGET_Z = {(): [6, 10, 3, 0], (0,): [0, 9, 5, 7], (1,): [7, 0, 9, 3], (2,): [5, 8, 0, 9], (3,): [9, 4, 7, 0]}

SCHEMES = {
    "topk": Scheme(3, 3, 2, 2, 5),
    "rheo-m0": Scheme(2, 0, 2, 2, 4),
    "rheo-m1": Scheme(3, 1, 2, 2, 5),
    "rheo-m1-R2": Scheme(3, 1, 2, 2, 2),  # a budget that cuts depth-1 siblings: survival bias shows
    "rheo-m2": Scheme(3, 2, 2, 2, 5),
    "rrsw": Scheme(3, 1, 2, 2, 5, verify="rrsw"),
    "chain": Scheme(1, 0, 1, 3, 3),
}

# The static family (docs/SCHEMES.md): every lossless pairing on a branching shape (two root
# children, one child each) and a delayed one (a trunk of 1, then two rollouts of 2), and a
# `parents` shape where the leaf 2 is created before the deeper node 3 (root -> 1, 2; 1 -> 3):
# there alone the traversal's post-order and creation order of leaves differ.
STATIC_SHAPES = {"branching": (2, 1), "delayed": (2, 1, 2), "parents": (0, 0, 1)}
STATIC_PAIRINGS = (("iid", "specinfer"), ("wor", "rrsw"), ("iid", "rrsw"), ("iid", "traversal"), ("wor", "traversal"))
STATIC_SCHEMES = {
    **{
        f"{kind}-{sampling}-{verify}": StaticScheme(kind, STATIC_SHAPES[kind], sampling, verify)
        for kind in ("branching", "delayed")
        for sampling, verify in STATIC_PAIRINGS
    },
    **{
        f"parents-{sampling}-traversal": StaticScheme("parents", STATIC_SHAPES["parents"], sampling, "traversal")
        for sampling in ("iid", "wor")
    },
}
# The tsubame family: the plan of K = 3, W = 2, D = 2, R = 4 (Top-K on q_rank), tokens sampled
TSUBAME_SCHEMES = {
    f"tsubame-{sampling}-{verify}": TsubameScheme(3, 2, 2, 4, sampling, verify) for sampling, verify in STATIC_PAIRINGS
}
TSUBAME_ROWS = ("iid-specinfer/T1", "wor-rrsw/T0.5/zeros", "iid-rrsw/T1", "iid-traversal/T0", "wor-traversal/T1")
# A smaller plan (K = 2, W = 1, D = 2, R = 3) for the mutant tsubame-plan-after-sampling, whose exact
# law is a brute enumeration of every draw during the build (K = 3, W = 2 iid: 4^9 builds per context)
TSUBAME_SCHEMES.update(
    {
        f"tsubame-w1-{sampling}-{verify}": TsubameScheme(2, 1, 2, 3, sampling, verify)
        for sampling, verify in STATIC_PAIRINGS
    }
)
TSUBAME_MUTANT_ROWS = ("w1-wor-traversal/T1",)  # one row (the α budget)
# The treespark family (docs/SCHEMES.md §12): N = 4 nodes, k = 2, D = 3, each verifier at θ = 0
# (identity calibration) and at a binding θ (the paper's sigmoid calibration, θ = 1/10)
TREESPARK_SCHEMES = {
    f"spark-{verify}-{tag}": TreeSparkScheme(4, 2, 3, Fraction(theta), Calibration.parse(cal), verify)
    for verify in ("rrsw", "traversal")
    for tag, theta, cal in (("theta0", "0", "identity"), ("theta", "1/10", "sigmoid:0.6684,-0.4587"))
}
# Eight rows (the family-wise α bound allows no more): each verifier at T = 1, 0.5 (with zeros)
# and 0, each θ at every temperature across the two verifiers
TREESPARK_ROWS = (
    "spark-rrsw-theta0/T1",
    "spark-rrsw-theta/T1",
    "spark-rrsw-theta/T0.5/zeros",
    "spark-rrsw-theta0/T0",
    "spark-traversal-theta0/T1",
    "spark-traversal-theta/T1",
    "spark-traversal-theta0/T0.5/zeros",
    "spark-traversal-theta/T0",
)
ALL_SCHEMES: dict[str, AnyScheme] = {**SCHEMES, **STATIC_SCHEMES, **TSUBAME_SCHEMES, **TREESPARK_SCHEMES}


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


def _gate_case(name: str, scheme: str, *, zeros: bool = False, temp: str = "1") -> GateCase:
    dw, tw = (DRAFT_Z, TARGET_Z) if zeros else (DRAFT, TARGET)
    draft, target = table(dw, "draft"), table(tw, "target")
    sch = ALL_SCHEMES[scheme]
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


@lru_cache(maxsize=1)
def gate_cases() -> dict[str, GateCase]:
    """The matrix: every scheme at T = 1 and T = 0.5 (separate q_samp tables), with and without
    zeros, plus greedy T = 0 for the tree schemes; every static scheme of a branching or delayed
    shape at T = 1, T = 0.5 with zeros and greedy T = 0 (the delayed ones on the tables with zeros),
    two at the fast path's own T = 0.5, and the parents shape's two."""
    out = {}
    for s in SCHEMES:
        out[f"{s}/T1"] = _gate_case(f"{s}/T1", s)
        out[f"{s}/T0.5/zeros"] = _gate_case(f"{s}/T0.5/zeros", s, zeros=True, temp="0.5")
    out["rheo-m1/T0.5"] = _gate_case("rheo-m1/T0.5", "rheo-m1", temp="0.5")
    out["rheo-m1/T1/zeros"] = _gate_case("rheo-m1/T1/zeros", "rheo-m1", zeros=True)
    out["rheo-m1-R2/T0.5"] = _gate_case("rheo-m1-R2/T0.5", "rheo-m1-R2", temp="0.5")
    out["rrsw/fastT0.5"] = _gate_case("rrsw/fastT0.5", "rrsw", temp="fast0.5")
    out["rheo-m1/T0"] = _gate_case("rheo-m1/T0", "rheo-m1", temp="0")
    out["topk/T0/zeros"] = _gate_case("topk/T0/zeros", "topk", zeros=True, temp="0")
    for s in STATIC_SCHEMES:
        if s.startswith("parents"):
            continue
        zeros = s.startswith("delayed")
        out[f"{s}/T1"] = _gate_case(f"{s}/T1", s)
        out[f"{s}/T0.5/zeros"] = _gate_case(f"{s}/T0.5/zeros", s, zeros=True, temp="0.5")
        out[f"{s}/T0" + "/zeros" * zeros] = _gate_case(f"{s}/T0" + "/zeros" * zeros, s, zeros=zeros, temp="0")
    for name in ("branching-wor-traversal/fastT0.5", "delayed-iid-rrsw/fastT0.5"):
        out[name] = _gate_case(name, name.split("/")[0], temp="fast0.5")
    out["parents-wor-traversal/T0.5/zeros"] = _gate_case(
        "parents-wor-traversal/T0.5/zeros", "parents-wor-traversal", zeros=True, temp="0.5"
    )
    out["parents-iid-traversal/T1"] = _gate_case("parents-iid-traversal/T1", "parents-iid-traversal")
    for row in TSUBAME_ROWS + TSUBAME_MUTANT_ROWS:
        pairing, temp, *z = row.split("/")
        name = f"tsubame-{row}"
        out[name] = _gate_case(name, f"tsubame-{pairing}", zeros=bool(z), temp=temp[1:])
    for name in TREESPARK_ROWS:
        s, temp = name.split("/")[0], name.split("/")[1][1:]
        out[name] = _gate_case(name, s, zeros=name.endswith("zeros"), temp=temp)
    return out


def family_alpha(alpha: float = ALPHA) -> float:
    """Bonferroni bound on the probability that a correct fast path fails some test of the matrix:
    one test per (gate case, check)."""
    return alpha * len(gate_cases()) * len(CHECKS)


MUTANT_CASES = ("rheo-m1/T0.5", "rheo-m1-R2/T0.5")
MUTANT_CASE = MUTANT_CASES[0]  # also the case of the false-alarm measurement. The tight budget
#                                R = 2 adds survival bias, so proxy-const (lossless at R = 5) moves
#                                the token law there; fills-first needs the fills R = 5 keeps
# The static family's: wor siblings on the tables with zeros at T = 0.5 (where the exact TVs are
# largest), the branching shape under rrsw and under traversal, and the parents shape under
# traversal (the only shape where its two leaf orders differ)
STATIC_MUTANT_CASES = (
    "branching-wor-rrsw/T0.5/zeros",
    "branching-wor-traversal/T0.5/zeros",
    "parents-wor-traversal/T0.5/zeros",
)
# The tsubame family's: the small plan at T = 1 (wor, traversal; the larger of its exact TVs, 0.107 on
# joint3, vs 0.100 for iid-rrsw at T = 0.5 with zeros). Its mutant's sampler reads the exact tables at
# T = 1, so a T = 0.5 row must give q_samp as a table (as every gate row does), never T = 0
TSUBAME_MUTANT_CASES = tuple(f"tsubame-{row}" for row in TSUBAME_MUTANT_ROWS)


# The treespark family's: the binding-θ rows at T = 1 (own survival differs from the spec only where θ binds)
TREESPARK_MUTANT_CASES = ("spark-rrsw-theta/T1", "spark-traversal-theta/T1")


def mutant_cases(name: str) -> tuple[str, ...]:
    """The gate cases a mutant's negative control may run on: its family's mutant cases whose
    verifier reads the setting it changes."""
    if name not in MUTANTS:
        raise StatsError(f"unknown mutant {name!r}; allowed: {', '.join(MUTANTS)}")
    v = MUTANTS[name]
    if v.family == "rheo":
        return MUTANT_CASES
    if v.family == "treespark":
        return TREESPARK_MUTANT_CASES
    if v.family == "tsubame":
        return TSUBAME_MUTANT_CASES
    (setting,) = v.changed()
    cases = gate_cases()
    return tuple(c for c in STATIC_MUTANT_CASES if cases[c].case.static_scheme().verify in READ_BY[setting])


@cache
def mutant_case(name: str) -> str:
    """The gate case of a mutant's negative control: among `mutant_cases` (MUTANT_CASES for the
    rheo family, STATIC_MUTANT_CASES for the static family, TSUBAME_MUTANT_CASES for tsubame), the one where its exact TV on the
    first 3 tokens (then on the first round) is largest. Chosen from exact values only."""
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
    if mutant is None:
        return Exact(case)
    from rheo_ref.mutants import MutantExact

    return MutantExact(case, mutant)


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
    alpha: float = ALPHA,
    beta: float = BETA,
    tv: float = DELTA,
    factory: Callable | None = None,
    law: Law | None = None,
) -> LawTest:
    """One gate test; the seed defaults to one fixed by (case, check, mutant)."""
    law = check_law_of(gc, check) if law is None else law
    n = samples_for(law, tv, alpha, beta)
    seed = seed_for(f"gate|{gc.name}|{check}|{mutant}") if seed is None else seed
    samples = check_sampler(gc, check, mutant, factory)(seed, n)
    names, condition = (("the first round's length",), "") if check == "lengths" else (None, "")
    if check == "round":
        condition = "in the first round"
    return check_law(
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
    `case.tokens` tokens; `rounds`: those as `rheo.horizon.Rounds`, with each first round's length
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
            from .horizon import Rounds

            return Rounds(rows, out.first_lengths.tolist())
        return rows

    sampler.__name__ = f"fast_sampler[{mutant or 'spec'}{', first round' if first_round else ''}]"
    return sampler


def fast_verdict(
    case: Case, *, alpha: float, tv: float, seed: int, beta: float = DEFAULT_BETA, mutant: str | None = None
) -> dict:
    """The `rheo audit` column: the fast path's first `case.tokens` tokens against the target law.

    Returns {verdict: "pass"/"FAIL", N, alpha, detectable_tv, p_value} (plus beta, tv, cells).
    """
    try:
        res = assert_lossless(fast_sampler(mutant), case, alpha=alpha, tv=tv, beta=beta, seed=seed)
    except LosslessError as e:
        res = e.result
    return {
        "verdict": "FAIL" if res.rejected else "pass",
        "N": res.n,
        "alpha": res.alpha,
        "detectable_tv": res.detectable_tv,
        "p_value": res.p_value,
        "beta": res.beta,
        "tv": res.tv,
        "cells": res.cells,
    }
