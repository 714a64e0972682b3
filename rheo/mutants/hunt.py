"""`rheo mutants --hunt`: search small cases for the one on which the gate convicts a mutant with
the fewest samples (docs/GATE_REFERENCE.md, "The fewest samples").

Bug-class cases are drawn from a seed (`random.Random(f"hunt|{seed}|{i}")`): V ≤ 6, context length ≤ 1,
temperature 1 or 1/2, integer weights 0–9 (zeros allowed), the request's top-k, top-p, penalty,
γ ∈ {1, 2} and verification (token or block) within the gate's sizes, 2 or 3 tokens. Each drawn
case is one cell: every bug-class mutant's exact TV per check and `samples_to_convict`
(`rheo.selfgate.bugclasses`), and the case's floor (the smallest, over the mutants its verification
reads, of each one's largest exact TV). Cells run on `rheo sweep`'s engine (local processes or
Dask); every finished cell is appended to OUT/hunt.jsonl, and a cell already there is not run
again (resume by running the same command). `draw="block"` (`--hunt-draw block`) draws the
bug-class cases from `rheo.mutants.hunt_block.block_case` instead: block verification with the skeleton
on which class 12 (`block-token-residual`) is largest planted, the rest at random; `draw="served"`
from `rheo.mutants.hunt_served.served_case`: every setting, grammars, trees and dyadic rows, for
the served-decoder classes (15–28) only; `draw="batch"` batches of three requests from
`rheo.mutants.hunt_batch.batch_case`, for the batch classes only.

Each algorithmic mutant (`rheo_ref.variants.MUTANTS`) gets cases of its own: its gate case's
scheme on new tables (`variant_case`: V = 3 or 4, context length 1, q_samp at T = 1 or 1/2), and
its samples_to_convict over the gate's four checks from its exact counterpart. Each family's
pairing (`shared_bases`) gets shared cases: its base gate case's scheme on new tables
(`shared_case`), with the floor the smallest, over the pairing's mutants, of each one's largest
exact TV (the case library's other rows).
"""

from __future__ import annotations

import json
import random
from fractions import Fraction
from pathlib import Path

from rheo.mutants.hunt_batch import batch_cell
from rheo.mutants.hunt_block import block_case
from rheo.mutants.hunt_served import served_case
from rheo.selfgate.bugclasses import bug_laws, bug_row
from rheo_ref import strict_json
from rheo_ref.bugclasses.cases import BugCase
from rheo_ref.bugclasses.decoder import Request
from rheo_ref.bugclasses.mutants import BUG_MUTANTS
from rheo_ref.errors import CaseError
from rheo_ref.laws import tv
from rheo_ref.models import TableModel

# Mutants whose effect no case of a verification mode can show (their step is not read there),
# and the float-level one (TV ≤ `float_level_bound()` ≈ 0.0078 on any hunted case): left out of the floor
NOT_READ = {
    "token": {"block-token-residual"},
    "block": {"uniform-reused-for-residual", "stream-positions-shared"},
    "tree": {"block-token-residual"},
}
FLOAT_LEVEL = {"draft-bfloat16"}
# how bug-class cases are drawn: `random_case`, `rheo.mutants.hunt_block.block_case`,
# `rheo.mutants.hunt_served.served_case` (the served-decoder classes 15–28 only),
# `rheo.mutants.hunt_batch.batch_case` (batches of three requests: the batch classes only)
DRAWS = ("random", "block", "served", "batch")


# The hunt's space (`random_case`): γ ∈ {1, 2}, 2 or 3 tokens; a check there reads at most
# γ·(tokens − 1) = 4 draft draws, which bounds the float-level class (`float_level_bound`)
GAMMAS = (1, 2)
# the classes the served draw is for: every kind but the seams (1–14)
SERVED_KINDS = frozenset(m.kind for m in BUG_MUTANTS.values()) - {"seam"}
MAX_TOKENS = 3


def float_level_bound() -> float:
    """The proved bound on `draft-bfloat16`'s exact TV on any check of any case of the hunt's space
    (rheo_ref.bugclasses.float_level; proofs claim 10.1)."""
    from rheo_ref.bugclasses.float_level import bfloat16_tv_bound

    return float(bfloat16_tv_bound(max(GAMMAS), f"joint{MAX_TOKENS}"))


def floor_mutants(verify: str) -> list[str]:
    """The mutants a case's floor is over: the seam classes (1–14) its verification reads."""
    return [
        m for m, b in BUG_MUTANTS.items() if b.kind == "seam" and m not in NOT_READ[verify] and m not in FLOAT_LEVEL
    ]


def random_case(seed: int, i: int, *, verify: str | None = None) -> BugCase:
    """The i-th case of a hunt (module docstring)."""
    rng = random.Random(f"hunt|{seed}|{i}")
    V = rng.randint(2, 6)
    L = rng.choice((0, 1))
    keys = [()] + ([(t,) for t in range(V)] if L else [])

    def weights() -> dict:
        out = {}
        for k in keys:
            w = [rng.choice((0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9)) for _ in range(V)]
            if not any(w):
                w[rng.randrange(V)] = 1
            out[k] = w
        return out

    draft = TableModel.from_weights(weights(), context_length=L, name="draft")
    target = TableModel.from_weights(weights(), context_length=L, name="target")
    req = Request(
        temperature=rng.choice((Fraction(1), Fraction(1, 2))),
        top_k=rng.choice((0, 0, 2, 3)) if V > 3 else 0,
        top_p=rng.choice((Fraction(1), Fraction(9, 10), Fraction(4, 5))),
        penalty=rng.choice((Fraction(1), Fraction(1, 2), Fraction(1, 2), Fraction(1, 2))),
        gamma=rng.choice(GAMMAS),
        verify=verify or rng.choice(("token", "block")),
    )
    tokens = MAX_TOKENS if V <= 4 else MAX_TOKENS - 1
    return BugCase(draft, target, (0,) if L else (), tokens, req)


def hunt_cell(cell: tuple) -> dict:
    """One drawn case (seed, i, verify, α, β, draw): every applicable bug-class mutant's row, and
    the case's floor (`hunt_cell_of`)."""
    seed, i, verify, alpha, beta, draw = cell
    if draw == "batch":
        return batch_cell(seed, i, alpha, beta)
    kinds = None
    if draw == "served":
        case, kinds = served_case(seed, i), SERVED_KINDS
    else:
        case = block_case(seed, i) if draw == "block" else random_case(seed, i, verify=verify)
    out = {"seed": seed, "i": i, "case": case.to_json(), **hunt_cell_of(case, alpha, beta, kinds=kinds)}
    return out if draw == "random" else {"draw": draw, **out}


def _key(row: dict) -> tuple:
    return (row.get("mutant") or row.get("base") or row.get("draw", ""), row["seed"], row["i"])


def run_cell(cell: tuple) -> dict:
    """A bug-class cell (seed, i, verify, α, β, draw), an algorithmic mutant's (name, seed, i, α, β)
    or a shared case's (base gate case, seed, i)."""
    if not isinstance(cell[0], str):
        return hunt_cell(cell)
    return shared_cell(cell) if len(cell) == 3 else variant_cell(cell)


def hunt(
    out: Path,
    *,
    seed: int,
    cases: int,
    alpha: float,
    beta: float,
    workers: int = 1,
    scheduler: str | None = None,
    verify: str | None = None,
    variants: list[str] | None = None,
    shared: list[str] | None = None,
    draw: str = "random",
) -> list[dict]:
    """Run the cells not yet in OUT/hunt.jsonl; return every cell of this hunt (module docstring):
    `cases` bug-class cases of `draw` (`DRAWS`), for each algorithmic mutant in `variants` `cases`
    of its own, and for each base gate case in `shared` `cases` shared cases (`shared_case`)."""
    from rheo.sweep import engine

    out.mkdir(parents=True, exist_ok=True)
    path = out / "hunt.jsonl"
    done: dict[tuple, dict] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                done[_key(r)] = r
    if draw not in DRAWS:
        raise CaseError(f"draw={draw!r}; allowed: {', '.join(DRAWS)}")
    cells: list[tuple] = [(seed, i, verify, alpha, beta, draw) for i in range(cases)]
    cells += [(m, seed, i, alpha, beta) for m in variants or () for i in range(cases)]
    cells += [(b, seed, i) for b in shared or () for i in range(cases)]
    label = "" if draw == "random" else draw
    keys = [(c[0], c[1], c[2]) if isinstance(c[0], str) else (label, c[0], c[1]) for c in cells]
    todo = [c for c, k in zip(cells, keys) if k not in done]
    with engine(scheduler, workers, fn=run_cell) as runner, path.open("a", encoding="utf-8") as f:
        for row in runner(todo):  # type: ignore[arg-type]  # (the runner takes any cells fn takes)
            f.write(strict_json.dumps(row) + "\n")
            f.flush()
            done[_key(row)] = row
    return [done[k] for k in keys]


def best(cells: list[dict]) -> dict:
    """Per mutant, the hunted case with the fewest samples to convict; per verification mode, the
    shared case with the largest floor."""
    per: dict[str, dict] = {}
    shared: dict[str, dict] = {}
    for c in cells:
        if "base" in c:  # a shared case of an algorithmic family's pairing
            if c["floor"] > shared.get(c["base"], {}).get("floor", 0.0):
                shared[c["base"]] = c
            continue
        if "mutant" in c:  # an algorithmic mutant's cell
            n, name = c["samples_to_convict"], c["mutant"]
            if n is not None and (name not in per or n < per[name]["samples_to_convict"]):
                per[name] = c
            continue
        for name, r in c["rows"].items():
            n = r["samples_to_convict"]
            if n is not None and (name not in per or n < per[name]["samples_to_convict"]):
                where = {"batch": c["batch"]} if "batch" in c else {"case": c["case"]}
                per[name] = {**r, **where, "seed": c["seed"], "i": c["i"], "draw": c.get("draw", "random")}
        if "batch" in c:  # a batch has no shared case
            continue
        mode = c["case"]["request"]["verify"]
        if c["floor"] > shared.get(mode, {}).get("floor", 0.0):
            shared[mode] = c
    return {"per_mutant": per, "shared": shared}


# --- the twenty algorithmic mutants (rheo_ref.variants.MUTANTS) ------------------------------------


def variant_case(mutant: str, seed: int, i: int):
    """The i-th hunted case of an algorithmic mutant: its gate case's scheme on new tables (V = 3
    or 4, context length 1, integer weights 0–9, q_samp at temperature 1 or 1/2 as a table)."""
    from rheo.selfgate.matrix import gate_cases, mutant_case

    base = gate_cases()[mutant_case(mutant)].case
    rng = random.Random(f"hunt|{mutant}|{seed}|{i}")
    return _random_gate_case(rng, base.scheme, f"hunt-{mutant}-{seed}-{i}")


def variant_cell(cell: tuple[str, int, int, float, float]) -> dict:
    """One hunted case of an algorithmic mutant: its samples_to_convict over the gate's checks."""
    from rheo.selfgate.matrix import gate_samples_to_convict

    mutant, seed, i, alpha, beta = cell
    gc = variant_case(mutant, seed, i)
    try:
        n, ch = gate_samples_to_convict(gc, mutant, alpha, beta)
    except CaseError as e:  # a case the mutant's exact counterpart refuses (e.g. an empty tail)
        return {"mutant": mutant, "seed": seed, "i": i, "samples_to_convict": None, "error": str(e)}
    return {
        "mutant": mutant,
        "seed": seed,
        "i": i,
        "samples_to_convict": n,
        "convicting_check": ch,
        "case": gc.case.to_json(),
    }


def _floor(case: BugCase, largest_tv) -> float:
    """The case's floor: the smallest, over the mutants its verification reads (and its request
    admits: `largest_tv(m)` is not None), of each one's largest exact TV over the checks; 0 without
    a penalty, where the penalty class cannot show (not a shared case)."""
    if case.request.penalty >= 1:
        return 0.0
    tvs = (largest_tv(m) for m in floor_mutants(case.request.verify))
    return min((t for t in tvs if t is not None), default=0.0)


def floor_of(case: BugCase) -> float:
    """The case's floor (`_floor`) from the floor mutants' exact TVs alone (no samples_to_convict)."""

    def largest_tv(name: str) -> float | None:
        try:
            BUG_MUTANTS[name].check(case)
        except CaseError:
            return None
        laws, bad = bug_laws(case, name)
        return max(float(tv(bad[c], laws[c])) for c in laws)

    return _floor(case, largest_tv)


def hunt_cell_of(case: BugCase, alpha: float, beta: float, *, kinds: frozenset[str] | None = None) -> dict:
    """Every bug-class mutant's row that the case's request admits (of `kinds` only, if given), and
    the case's floor (`_floor`)."""
    rows = {}
    for name, m in BUG_MUTANTS.items():
        if kinds is not None and m.kind not in kinds:
            continue
        try:
            m.check(case)
        except CaseError:
            continue
        rows[name] = bug_row(case, name, alpha=alpha, beta=beta)
    floor = _floor(case, lambda m: max(rows[m]["exact_tv_float"].values()) if m in rows else None)
    return {"floor": floor, "rows": rows}


def refine(
    case: BugCase, *, seed: int, steps: int, alpha: float, beta: float, mutant: str | None = None
) -> tuple[BugCase, float]:
    """Local search from a hunted case: change one integer weight (±1..3, kept ≥ 0) per step, keep
    the change when the score grows. The score is the case's floor, or with `mutant` the reciprocal
    of that mutant's samples_to_convict (0 where it is lossless), so the search lowers its N.
    Seeded, so the result is reproducible."""
    rng = random.Random(f"refine|{seed}" if mutant is None else f"refine|{mutant}|{seed}")
    V, L = case.vocab_size, case.target.context_length
    keys = [()] + [(t,) for t in range(V)] if L else [()]

    def ints(m: TableModel) -> dict:
        out = {}
        for k in keys:
            row = m.row(k)
            den = max(x.denominator for x in row)
            out[k] = [int(x * den) for x in row]
        return out

    w = {"draft": ints(case.draft), "target": ints(case.target)}

    def build() -> BugCase:
        d, t = (TableModel.from_weights(w[n], context_length=L, name=n) for n in ("draft", "target"))
        return BugCase(d, t, case.context, case.tokens, case.request, case.constraint)

    def score(c: BugCase) -> float:
        if mutant is None:
            return floor_of(c)
        n = bug_row(c, mutant, alpha=alpha, beta=beta)["samples_to_convict"]
        return 0.0 if n is None else 1 / n

    best = score(case)
    for _ in range(steps):
        name, k, t = rng.choice(("draft", "target")), rng.choice(keys), rng.randrange(V)
        old = w[name][k][t]
        w[name][k][t] = max(0, old + rng.choice((-3, -2, -1, 1, 2, 3)))
        f = score(build()) if any(w[name][k]) else -1.0
        if f > best:
            best = f
        else:
            w[name][k][t] = old
    return build(), best


# --- shared cases of the algorithmic families (the case library's other rows) ---------------------


def shared_bases() -> tuple[str, ...]:
    """The base gate case of each algorithmic family's pairing (its scheme is the shared case's):
    rheo-m1 for the rheo family, the static family's rrsw and traversal (the parents shape, where
    every traversal mutant can show), tsubame's, and treespark's two."""
    return (
        "rheo-m1/T0.5",
        "branching-wor-rrsw/T0.5/zeros",
        "parents-wor-traversal/T0.5/zeros",
        "tsubame-w1-wor-traversal/T1",
        "treespark-rrsw-theta/T1",
        "treespark-traversal-theta/T1",
    )


def shared_mutants(base: str) -> list[str]:
    """The algorithmic mutants whose negative control may run on gate case `base` (its family and
    verifier pairing: `rheo.selfgate.matrix.mutant_cases`), detectable ones only (not the float-level two)."""
    from rheo.selfgate.matrix import mutant_cases
    from rheo_ref.variants import MUTANTS

    return [m for m in MUTANTS if base in mutant_cases(m) and m not in ("leq-coin", "float16")]


def shared_case(base: str, seed: int, i: int, *, label: str | None = None):
    """The i-th hunted shared case of gate case `base`: its scheme on new tables, drawn as in
    `variant_case` (V = 3 or 4, context length 1, weights 0–9, q_samp at T = 1 or 1/2) from
    `label` (default `base`; a library case hunted under a row's former name records it)."""
    from rheo.selfgate.matrix import gate_cases

    sch = gate_cases()[base].case.scheme
    rng = random.Random(f"shared|{label or base}|{seed}|{i}")
    return _random_gate_case(rng, sch, f"shared-{base}-{seed}-{i}")


def shared_floor(gc, mutants: list[str]) -> dict[str, float]:
    """Per mutant, its largest exact TV over the gate's checks on `gc` (the spec's laws computed once)."""
    from rheo.selfgate.matrix import CHECKS, check_law_of
    from rheo_ref.exact import tv as total_variation

    laws = {ch: check_law_of(gc, ch) for ch in CHECKS}
    out = {}
    for m in mutants:
        try:
            out[m] = max(float(total_variation(check_law_of(gc, ch, m), laws[ch])) for ch in CHECKS)
        except (CaseError, AssertionError):  # a case the mutant's exact counterpart refuses (e.g. a
            out[m] = 0.0  #                     residual with no mass left): no shared case
    return out


def shared_cell(cell: tuple[str, int, int]) -> dict:
    """One hunted shared case of gate case `base`: each of its mutants' largest exact TV, and the floor."""
    base, seed, i = cell
    gc = shared_case(base, seed, i)
    try:
        tvs = shared_floor(gc, shared_mutants(base))
    except (CaseError, AssertionError) as e:
        return {"base": base, "seed": seed, "i": i, "floor": 0.0, "error": str(e)}
    return {"base": base, "seed": seed, "i": i, "floor": min(tvs.values()), "tvs": tvs, "case": gc.case.to_json()}


def _random_gate_case(rng: random.Random, scheme, name: str):
    """One hunted gate case drawn from `rng`: V = 3 or 4, context length 1, integer weights 0–9
    (one entry of each row raised by 1), q_samp = q_rank at power 1 or 2, 3 tokens from context (0,)."""
    from rheo.selfgate.matrix import GateCase
    from rheo_ref.models import Case

    V = rng.choice((3, 4))

    def weights() -> dict:
        rows = {}
        for k in [(), *((t,) for t in range(V))]:
            w = [rng.choice((0, 1, 2, 3, 4, 5, 6, 7, 8, 9)) for _ in range(V)]
            w[rng.randrange(V)] += 1
            rows[k] = w
        return rows

    dw, tw = weights(), weights()
    power = rng.choice((1, 2))
    draft = TableModel.from_weights(dw, context_length=1, name="draft")
    sample = TableModel.from_weights(dw, context_length=1, name="draft_sample", power=power)
    target = TableModel.from_weights(tw, context_length=1, name="target")
    case = Case(draft, target, scheme, (0,), 3, sample)
    return GateCase(name, case, case, 1.0)
