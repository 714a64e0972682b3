"""The case library behind `rheo cases` — per decoder family and pairing, one shared hunted case on which
every known mutant of that kind has exact TV ≥ the case's floor (docs/GATE_REFERENCE.md, "Pick a case").

Gating a decoder of that kind at δ = the floor needs the N the case states (a few thousand
samples at the gate's α) instead of the ~50,000–70,000 the gate's δ = 0.025 needs, and still
catches every known class. The cases come from `rheo mutants --hunt` (seed and index recorded)
and are gate rows (tests/test_bugclasses.py). Also here: the bug-class rows of `rheo mutants`
and the refinement of its `--hunt`'s best cases.
"""

from __future__ import annotations

import sys


def library_rows(alpha: float, beta: float) -> list[dict]:
    from rheo.lossless import validate
    from rheo.lossless.stats import law_samples
    from rheo.selfgate.case_library import LIBRARY
    from rheo_ref.bugclasses.cases import BugCase, request_law

    alpha, beta = validate.rates(alpha, beta)  # before any case's law is built
    rows = []
    for name, entry in LIBRARY.items():
        if entry["family"] == "bugclasses":
            case = BugCase.from_json(entry["case"])
            laws = [request_law(case, k) for k in range(1, case.tokens + 1)]
        else:  # an algorithmic family's shared case: the gate's four checks
            from rheo.selfgate.matrix import CHECKS, check_law_of

            gc = library_gate_case(name)
            laws = [check_law_of(gc, ch) for ch in CHECKS]
        n = max(law_samples(law, entry["floor"], alpha, beta) for law in laws)  # (the floors are the library's)
        rows.append(
            {
                "name": name,
                "family": entry["family"],
                "pairing": entry["pairing"],
                "floor": entry["floor"],
                "N": n,
                "alpha": alpha,
                "beta": beta,
                "mutants": entry["mutants"],
                "hunt": entry["hunt"],
            }
        )
    return rows


def library_gate_case(name: str):
    """An algorithmic family's library case as a gate row (the fast path runs its tables at T = 1:
    q_samp is a table)."""
    from rheo.selfgate.case_library import LIBRARY
    from rheo.selfgate.matrix import GateCase
    from rheo_ref.models import Case

    case = Case.from_json(LIBRARY[name]["case"])
    return GateCase(f"library/{name}", case, case, 1.0)


def false_alarms(name: str, seeds: int, *, alpha: float, beta: float) -> dict:
    """The baseline decoder on library case `name` under `seeds` seeds (seed i runs check i mod the
    case's checks, at δ = its floor): rejections at α and at 0.05, binomial p-values."""
    from scipy.stats import binomtest
    from tqdm import tqdm

    from rheo.selfgate.bugclasses import checks, run_check, seed
    from rheo.selfgate.case_library import LIBRARY
    from rheo_ref.bugclasses.cases import BugCase

    case = BugCase.from_json(LIBRARY[name]["case"])
    cs = checks(case)
    bar = tqdm(
        range(seeds), desc=f"false alarms {name}", unit="seed", file=sys.stderr, disable=None
    )  # hidden off a terminal
    pvals = [
        run_check(
            case, cs[i % len(cs)], alpha=alpha, beta=beta, tv=LIBRARY[name]["floor"], seed=seed(f"fa|{name}|{i}")
        ).p_value
        for i in bar
    ]
    out: dict = {"seeds": seeds}
    for a, key in ((alpha, "at_alpha"), (0.05, "at_0.05")):
        k = sum(p < a for p in pvals)
        out[key] = {"level": a, "rejections": k, "expected": seeds * a, "binomial_p": binomtest(k, seeds, a).pvalue}
    return out


# --- for `rheo mutants` --------------------------------------------------------------------------


def library_case_of(mutant: str) -> str:
    """The library case a bug-class mutant runs on: the case of its verification mode that covers it."""
    from rheo.selfgate.case_library import LIBRARY

    for name, entry in LIBRARY.items():
        if mutant in entry["mutants"] or mutant in entry.get("below_floor", {}):
            return name
    return next(iter(LIBRARY))


def before_case(mutant: str):
    """(label, case) a bug-class mutant runs on before any hunt: its library case for the seam
    classes (1–14), else the report case of its kind (`rheo_ref.bugclasses.report_cases`)."""
    from rheo.selfgate.case_library import LIBRARY
    from rheo_ref.bugclasses.cases import BugCase
    from rheo_ref.bugclasses.mutants import BUG_MUTANTS
    from rheo_ref.bugclasses.report_cases import CASE_OF, REPORT_CASE, report_cases

    kind = BUG_MUTANTS[mutant].kind
    if kind == "seam":
        lib = library_case_of(mutant)
        return lib, BugCase.from_json(LIBRARY[lib]["case"])
    name = CASE_OF.get(mutant, REPORT_CASE[kind])
    return f"report case {name}", report_cases()[name]


def bug_mutant_rows(only: list[str] | None, *, alpha: float, beta: float, max_n: int = 200_000) -> list[dict]:
    """The bug-class mutants (all, or those named in `only`), each on its best case (rheo.mutants.best_cases;
    else its library case): exact TVs, samples_to_convict, and the convicting check run at that N
    (power ≥ 1 − β at its exact TV); and its samples_to_convict on its library case."""
    from rheo.mutants.best_cases import BEST_CASES
    from rheo.mutants.hunt import FLOAT_LEVEL
    from rheo.selfgate.bugclasses import bug_row, run_check, seed
    from rheo_ref.bugclasses.cases import BugCase
    from rheo_ref.bugclasses.mutants import BUG_MUTANTS

    out = []
    for name in BUG_MUTANTS:
        if only and name not in only:
            continue
        lib, case = before_case(name)
        row = bug_row(case, name, alpha=alpha, beta=beta)
        on_library = {"library_case": lib, "library_samples_to_convict": row["samples_to_convict"]}
        if name in BEST_CASES:
            lib, case = f"best/{name}", BugCase.from_json(BEST_CASES[name]["case"])
            row = {**bug_row(case, name, alpha=alpha, beta=beta), "hunt": BEST_CASES[name]["hunt"]}
        row.update(on_library)
        n, ch = row["samples_to_convict"], row["convicting_check"]
        tvs = row["exact_tv_float"]
        if n is None or n > max_n:  # lossless here, or float-level (or above max_n): not run
            res = None
        else:
            res = run_check(
                case, ch, alpha=alpha, beta=beta, tv=min(1.0, tvs[ch]), seed=seed(f"{lib}|{name}"), mutant=name, n=n
            )
        expected = res is not None
        rejected = bool(res and res.rejected)
        note = "" if expected else f"samples_to_convict {n} (float-level)" if n else "lossless on this case"
        if name in FLOAT_LEVEL:
            row.update(float_level_fields(case, alpha=alpha, beta=beta))
            note = (
                f"float-level: exact TV <= {row['tv_bound_hunt_space']:.4g} on every hunted case (proofs 10.1), "
                f"so no case convicts it with fewer than {row['min_possible_samples']:,} samples"
            )
        out.append(
            {
                **row,
                "case": lib,
                "description": BUG_MUTANTS[name].description,
                "N": {ch: res.n} if res else {},
                "p_value": {ch: res.p_value} if res else {"-": 1.0},
                "detectable_tv": {ch: res.detectable_tv} if res else {},
                "rejected": rejected,
                "expected": expected,
                "verdict": ("caught" if rejected else "MISSED") if expected else "below δ",
                "note": note,
            }
        )
    return out


def before_batch(mutant: str):
    """(label, requests, seeds) a batch mutant runs on before any hunt: the report batch
    (`rheo_ref.bugclasses.report_cases.report_batch`), cut as `rheo.mutants.hunt_batch.for_mutant` says."""
    from rheo.mutants.hunt_batch import for_mutant
    from rheo_ref.bugclasses.report_cases import report_batch

    cases, seeds = for_mutant(mutant, *report_batch())
    return "report batch", cases, seeds


def batch_mutant_rows(only: list[str] | None, *, alpha: float, beta: float, max_n: int = 200_000) -> list[dict]:
    """The batch mutants (all, or those named in `only`), each on its best hunted batch
    (rheo.mutants.best_cases.BEST_BATCHES) where that needs no more samples than its report batch,
    else on the report batch: exact TVs per check,
    samples_to_convict, and the convicting check run at that N; its samples_to_convict on the report batch."""
    from rheo.mutants.best_cases import BEST_BATCHES
    from rheo.mutants.hunt_batch import batch_from_json
    from rheo.selfgate.batches import batch_row, run_batch_check
    from rheo.selfgate.bugclasses import seed
    from rheo_ref.bugclasses.batch import BATCH_MUTANTS

    out = []
    for name in BATCH_MUTANTS:
        if only and name not in only:
            continue
        lib, cases, seeds = before_batch(name)
        row = batch_row(cases, seeds, name, alpha=alpha, beta=beta)
        on_library = {"library_case": lib, "library_samples_to_convict": row["samples_to_convict"]}
        if name in BEST_BATCHES:  # where it convicts with no more samples than the report batch
            best_cases, best_seeds = batch_from_json(BEST_BATCHES[name]["batch"])
            best = batch_row(best_cases, best_seeds, name, alpha=alpha, beta=beta)
            n0 = row["samples_to_convict"]
            if best["samples_to_convict"] is not None and (n0 is None or best["samples_to_convict"] <= n0):
                lib, cases, seeds = f"best/{name}", best_cases, best_seeds
                row = {**best, "hunt": BEST_BATCHES[name]["hunt"]}
        row.update(on_library)
        n, ch = row["samples_to_convict"], row["convicting_check"]
        res = None
        if n is not None and n <= max_n:
            tv = min(1.0, row["exact_tv_float"][ch])
            res = run_batch_check(
                cases, seeds, ch, alpha=alpha, beta=beta, tv=tv, seed=seed(f"{lib}|{name}"), mutant=name, n=n
            )
        rejected = bool(res and res["rejected"])
        out.append(
            {
                **row,
                "case": lib,
                "description": BATCH_MUTANTS[name][2],
                "N": {ch: res["n"]} if res else {},
                "p_value": {ch: res["p_value"]} if res else {"-": 1.0},
                "rejected": rejected,
                "expected": res is not None,
                "verdict": ("caught" if rejected else "MISSED") if res else "below δ",
                "note": "" if res else "lossless on this batch",
            }
        )
    return out


def float_level_fields(case, *, alpha: float, beta: float) -> dict:
    """The proved bound of the float-level class (rheo_ref.bugclasses.float_level): per check on this
    case, and on the whole hunt space with the fewest samples it allows there."""
    from rheo.mutants.hunt import float_level_bound
    from rheo.selfgate.bugclasses import min_possible_samples
    from rheo_ref.bugclasses.float_level import case_bounds

    space = float_level_bound()
    return {
        "float_level": True,
        "tv_bound": {c: float(b) for c, b in case_bounds(case).items()},
        "tv_bound_hunt_space": space,
        "min_possible_samples": min_possible_samples(space, alpha, beta),
        "bound_proof": "proofs claim 10.1 (python -m proofs --only 10)",
    }


def refined(per_mutant: dict, *, seed: int, steps: int, alpha: float, beta: float) -> dict:
    """Each bug-class mutant's best hunted case after `steps` steps of `rheo.mutants.hunt.refine` aimed at its
    samples_to_convict (seeded by `seed`), where that lowers it; the float-level class is left as it is."""
    from rheo.mutants.hunt import FLOAT_LEVEL, refine
    from rheo.selfgate.bugclasses import bug_row
    from rheo_ref.bugclasses.cases import BugCase
    from rheo_ref.bugclasses.mutants import BUG_MUTANTS

    out = {}
    for name, r in per_mutant.items():
        if name not in BUG_MUTANTS or name in FLOAT_LEVEL:
            continue
        case, _ = refine(BugCase.from_json(r["case"]), seed=seed, steps=steps, alpha=alpha, beta=beta, mutant=name)
        row = bug_row(case, name, alpha=alpha, beta=beta)
        if row["samples_to_convict"] is not None and row["samples_to_convict"] < r["samples_to_convict"]:
            out[name] = {
                **row,
                "case": case.to_json(),
                "seed": r["seed"],
                "i": r["i"],
                "draw": r.get("draw", "random"),
                "refine": {"seed": seed, "steps": steps, "from": r["samples_to_convict"]},
            }
    return out
