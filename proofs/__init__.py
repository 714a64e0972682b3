"""proofs: the paper's claims, machine-checked or refuted with exact counterexamples.

One module per claim, each with the statement in its docstring, the method and the
check; `python -m proofs` runs them all and prints claim · method · verdict · seconds.

- `ranking`     claim 1: local ranking preservation (z3, general m)
- `one_level`   claim 2: one-level losslessness of the OT and RRSw orders (z3 + sympy)
- `survival`    claim 3: no survival bias with the rheo proxy; bias with ad-hoc proxies
- `dominance`   claim 4: when the OT order dominates RRSw (proved / refuted, exact cases)
- `seed_tables` claim 5: the seeds' Table 1 (exact) and Table 4's setting on table models
- `traversal`   claim 6: Traversal Verification against the token-level verifiers (depth 1, chains,
                trees; symbolic execution of rheo_ref with `symbolic`, exact counterexamples)
- `delayed`     claim 7: delayed tree expansion against root rollouts at equal node count
- `tsubame`     claim 8: Tsubame (Top-K plan, sampled tokens) against deterministic Top-K and a chain
- `treespark`   claim 9: TreeSpark lossless for every θ (slot before token), where own-survival
                admission breaks it, TreeSpark against a chain
- `bfloat16`    claim 10: the bfloat16 draft (bug class 9) moves any check's law by at most a proved,
                nearly attained float-level bound
- `blockres`    claim 11: bug class 12 (block verification with the token-level residual) moves
                the law by at most (5√5 − 11)/2 with γ <= 2
- `gate`        claim 12: the gate's level and power hold at the N it plans (the promise, proved)
"""

from __future__ import annotations

import importlib

MODULES = (
    "ranking",
    "one_level",
    "survival",
    "dominance",
    "seed_tables",
    "traversal",
    "delayed",
    "tsubame",
    "treespark",
    "bfloat16",
    "blockres",
    "gate",
)


def all_claims():
    """Every claim, in the order `python -m proofs` runs them."""
    out = []
    for name in MODULES:
        out += importlib.import_module(f"{__name__}.{name}").CLAIMS
    return out
