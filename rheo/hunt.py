"""`rheo mutants --hunt`: search small cases for the one on which the gate convicts a mutant with
the fewest samples (docs/GATE.md, "The fewest samples").

Cases are drawn from a seed (`random.Random(f"hunt|{seed}|{i}")`): V ≤ 6, context length ≤ 1,
temperature 1 or 1/2, integer weights 0–9 (zeros allowed), the request's top-k, top-p, penalty,
γ ∈ {1, 2} and verification (token or block) within the gate's sizes, 2 or 3 tokens. Each drawn
case is one cell: every bug-class mutant's exact TV per check and `samples_to_convict`
(`rheo.bugclasses`), and the case's floor (the smallest, over the mutants its verification
reads, of each one's largest exact TV). Cells run on `rheo sweep`'s engine (local processes or
Dask); every finished cell is appended to OUT/hunt.jsonl, and a cell already there is not run
again (resume by running the same command).
"""

from __future__ import annotations

import json
import random
from fractions import Fraction
from pathlib import Path

from rheo_ref.bugclasses.cases import BugCase
from rheo_ref.bugclasses.decoder import Request
from rheo_ref.bugclasses.mutants import BUG_MUTANTS
from rheo_ref.errors import CaseError
from rheo_ref.models import TableModel

from .bugclasses import bug_row

# Mutants whose effect no case of a verification mode can show (their step is not read there),
# and the float-level one (TV ≤ ~2^-9 on any case): left out of that mode's floor
NOT_READ = {"token": {"block-token-residual"}, "block": {"uniform-reused-for-residual", "stream-positions-shared"}}
FLOAT_LEVEL = {"draft-bfloat16"}


def floor_mutants(verify: str) -> list[str]:
    return [m for m in BUG_MUTANTS if m not in NOT_READ[verify] and m not in FLOAT_LEVEL]


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
        penalty=rng.choice((Fraction(1), Fraction(1, 2))),
        gamma=rng.choice((1, 2)),
        verify=verify or rng.choice(("token", "block")),
    )
    tokens = 3 if V <= 4 else 2
    return BugCase(draft, target, (0,) if L else (), tokens, req)


def hunt_cell(cell: tuple[int, int, str | None, float, float]) -> dict:
    """One drawn case: every applicable bug-class mutant's row, and the case's floor."""
    seed, i, verify, alpha, beta = cell
    case = random_case(seed, i, verify=verify)
    rows = {}
    for name, m in BUG_MUTANTS.items():
        try:
            m.check(case.request)
        except CaseError:
            continue
        rows[name] = bug_row(case, name, alpha=alpha, beta=beta)
    need = [m for m in floor_mutants(case.request.verify) if m in rows] if case.request.penalty < 1 else []
    floor = min((max(rows[m]["exact_tv_float"].values()) for m in need), default=0.0)
    if case.request.penalty == 1:
        floor = 0.0  # the penalty class cannot show: not a shared case
    return {"seed": seed, "i": i, "case": case.to_json(), "floor": floor, "rows": rows}


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
) -> list[dict]:
    """Run the cells not yet in OUT/hunt.jsonl; return every cell of this hunt (module docstring)."""
    from .sweep import engine

    out.mkdir(parents=True, exist_ok=True)
    path = out / "hunt.jsonl"
    done: dict[tuple[int, int], dict] = {}
    if path.exists():
        for line in path.read_text(encoding="utf-8").splitlines():
            if line.strip():
                r = json.loads(line)
                done[(r["seed"], r["i"])] = r
    todo = [(seed, i, verify, alpha, beta) for i in range(cases) if (seed, i) not in done]
    with engine(scheduler, workers, fn=hunt_cell) as runner, path.open("a", encoding="utf-8") as f:
        for row in runner(todo):
            f.write(json.dumps(row) + "\n")
            f.flush()
            done[(row["seed"], row["i"])] = row
    return [done[(seed, i)] for i in range(cases)]


def best(cells: list[dict]) -> dict:
    """Per mutant, the hunted case with the fewest samples to convict; per verification mode, the
    shared case with the largest floor."""
    per: dict[str, dict] = {}
    shared: dict[str, dict] = {}
    for c in cells:
        for name, r in c["rows"].items():
            n = r["samples_to_convict"]
            if n is not None and (name not in per or n < per[name]["samples_to_convict"]):
                per[name] = {**r, "case": c["case"], "seed": c["seed"], "i": c["i"]}
        mode = c["case"]["request"]["verify"]
        if c["floor"] > shared.get(mode, {}).get("floor", 0.0):
            shared[mode] = c
    return {"per_mutant": per, "shared": shared}
