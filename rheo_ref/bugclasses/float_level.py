"""How far the bfloat16 draft (bug class 9, `draft-bfloat16`) can move a check's law: a proved upper
bound on its exact TV, on any case (docs/GATE_REFERENCE.md, "Bug classes"; proved in proofs/bfloat16.py).

The mutant draws each draft token from q̂ = b/Σb, b = the processed draft row q rounded to
bfloat16 (`rheo_ref.bugclasses.mutants.bfloat16`), and verifies with the exact q.

1. Rounding: `bfloat16(x)` rounds x to float64, then float32, then bfloat16, each to nearest, with
   relative errors ≤ 2^-53, 2^-24, 2^-8 (8 significant bits) while x is a normal number
   (x ≥ 2^-126). So b_i = q_i·(1 + e_i) with |e_i| ≤ ε = (1 + 2^-8)(1 + 2^-24)(1 + 2^-53) − 1,
   and b_i = 0 exactly where q_i = 0.
2. One row: let B = {i : q̂_i > q_i} and a = q(B). TV(q̂, q) = Σ_B b_i/Σb − a; x/(x + y) grows in x
   and falls in y, so with Σ_B b_i ≤ a(1 + ε) and Σ_{not B} b_i ≥ (1 − a)(1 − ε)
   TV(q̂, q) ≤ 2εa(1 − a)/(1 + ε(2a − 1)) ≤ (1 − √(1 − ε²))/ε = ε/(1 + √(1 − ε²)) ≤ ε/(2 − ε²)
   (`ROW_TV_BOUND`, ≈ 2^-9; the maximum over a is at 1 − ε + 2εa = √(1 − ε²)).
3. Coupling: the draft's row enters only the draft draws, and a draft draw's uniform is used by
   nothing else. Run the mutant and the baseline on one random stream, each draft draw through a
   maximal coupling of q̂ and q: the two runs differ only after a draw where the coupling fails,
   which happens with probability ≤ `ROW_TV_BOUND` per draw. So a check's exact TV is at most
   (the draft draws it reads) · `ROW_TV_BOUND`: `joint<n>` reads γ·(n − 1) (every round emits at
   least one token after the prefill token), `round` reads γ.

In the hunt's space (rheo.mutants.hunt: γ ≤ 2, at most 3 tokens, integer weights 0–9, T ∈ {1, 1/2},
penalty ρ ∈ {1, 1/2}, so every positive processed draft probability is far above 2^-126) that is
≤ 4·`ROW_TV_BOUND` ≈ 0.0078 on every check.
"""

from __future__ import annotations

from fractions import Fraction

from .cases import BugCase

EPSILON = (1 + Fraction(1, 2**8)) * (1 + Fraction(1, 2**24)) * (1 + Fraction(1, 2**53)) - 1
ROW_TV_BOUND = EPSILON / (2 - EPSILON**2)  # ≥ (1 − √(1 − ε²))/ε, the exact supremum for one row
MIN_NORMAL = Fraction(1, 2**126)  # below it float32 and bfloat16 are subnormal: 1. does not hold


def draft_draws(gamma: int, check: str) -> int:
    """The draft draws a check's outcome can depend on: γ·(n − 1) for `joint<n>`, γ for `round`."""
    return gamma if check == "round" else gamma * max(int(check[5:]) - 1, 0)


def bfloat16_tv_bound(gamma: int, check: str) -> Fraction:
    """Upper bound on the exact TV of `draft-bfloat16` on a check (module docstring), for any case
    with γ = `gamma` whose positive processed draft probabilities are ≥ 2^-126."""
    return min(Fraction(1), draft_draws(gamma, check) * ROW_TV_BOUND)


def case_bounds(case: BugCase) -> dict[str, Fraction]:
    """The bound per check of a bug-class case (`joint1` … `joint<tokens>`, `round`, and `logprobs`,
    whose outcome is a function of the tokens `joint<tokens>` reads)."""
    names = [f"joint{n}" for n in range(1, case.tokens + 1)] + ["round"]
    out = {c: bfloat16_tv_bound(case.request.gamma, c) for c in names}
    out["logprobs"] = out[f"joint{case.tokens}"]
    return out
