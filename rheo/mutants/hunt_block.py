"""The structured draw of block-verification cases for `rheo mutants --hunt --hunt-draw block`
(docs/GATE_REFERENCE.md, "The fewest samples").

Class 12 (`block-token-residual`) changes the law only where block verification keeps a partial
block: after τ = 1 with w_1 < 1 it draws from max(p − q, 0) instead of max(w_1·p − q, 0). Given
x_1, the event τ = 1 followed by the token y has probability max(w_1·p(y|x_1) − q(y|x_1), 0)
(proofs/blockres.py), so the mutant's TV is an average of D(w_1) = ½·Σ_y |max(w_1·p − q, 0) −
s·max(p − q, 0)/S| over the over-drafted x_1 (s, S: the two residuals' masses). Random tables
almost never make D large; its supremum over every pair of rows, (5√5 − 11)/2 ≈ 0.0902, is
reached at p(·|x_1) = (a, 1 − a, 0), q(·|x_1) = (0, c, 1 − c), w_1 = c/(1 − a),
a = c = (3 − √5)/2. The draw plants that skeleton, rounded to small integer weights, and draws
everything else at random:

- V = 6, context length 1, prompt (0,), γ = 2, 3 tokens, block verification;
- the prefill token is 1 or 5 (the target's prompt row, weights 0–9 on them, not both 0);
- after 1 and after 5 the draft puts weight 9 on the over-drafted x_1 = 2 (and 0 or 1 on token 1
  or 4, which top-p may remove), the target (2: w, 0: r);
- after 2 the target is (3: a, 4: b) and the draft (4: c, 0: d): the skeleton's y_1 = 3,
  y_2 = 4, y_3 = 0; at T = 1 (w, r) = (5, 3) and (a, b) = (c, d) = (5, 8) (w_1 = 5/8,
  a = c = 5/13: D = 75/832 ≈ 0.0901); at T = 1/2, squared by the temperature, (4, 3) and (4, 5)
  (w_1 = 16/25, a = c = 16/41: D = 2304/25625 ≈ 0.0899);
- both models' rows of 3 and 4, the draft's row of 0 (the target's is the prompt row above) and
  the context-free rows: integer weights 0–9, one entry raised by 1;
- the request: T ∈ {1, 1/2} with its skeleton, top-k ∈ {0, 3}, top-p ∈ {1, 9/10}, penalty
  ρ ∈ {1, 1/2}: none of them touches the skeleton's rows (the prefill tokens and x_1 are not in
  their support, so the penalty leaves them alone; their entries stay above top-p's tail).

A cell of this draw is keyed by (`block`, seed, i) in hunt.jsonl, beside the random draw's.
"""

from __future__ import annotations

import random
from fractions import Fraction

from rheo_ref.bugclasses.cases import BugCase
from rheo_ref.bugclasses.decoder import Request
from rheo_ref.models import TableModel

V = 6
# per temperature: target after the prefill (2: w, 0: r), target after x_1 (3: a, 4: b), draft after x_1 (4: c, 0: d)
SKELETON = {
    Fraction(1): ((5, 3), (5, 8), (5, 8)),
    Fraction(1, 2): ((4, 3), (4, 5), (4, 5)),
}


def block_case(seed: int, i: int) -> BugCase:
    """The i-th case of the block draw of hunt seed `seed` (module docstring)."""
    rng = random.Random(f"hunt-block|{seed}|{i}")
    T = rng.choice(tuple(SKELETON))
    (w, r), (a, b), (c, d) = SKELETON[T]

    def free() -> list[int]:
        row = [rng.randint(0, 9) for _ in range(V)]
        row[rng.randrange(V)] += 1
        return row

    t1, t5 = rng.randint(0, 9), rng.randint(0, 9)
    target = {(): free(), (0,): [0, t1 if t1 or t5 else 1, 0, 0, 0, t5], (2,): [0, 0, 0, a, b, 0]}
    draft = {(): free(), (0,): free(), (2,): [d, 0, 0, 0, c, 0]}
    for t in (1, 5):
        target[(t,)] = [r, 0, w, 0, 0, 0]
        q = [0, 0, 9, 0, 0, 0]
        q[rng.choice((1, 4))] += rng.randint(0, 1)
        draft[(t,)] = q
    for t in (3, 4):
        target[(t,)], draft[(t,)] = free(), free()
    req = Request(
        temperature=T,
        top_k=rng.choice((0, 3)),
        top_p=rng.choice((Fraction(1), Fraction(9, 10))),
        penalty=rng.choice((Fraction(1), Fraction(1, 2))),
        gamma=2,
        verify="block",
    )
    return BugCase(
        TableModel.from_weights(draft, context_length=1, name="draft"),
        TableModel.from_weights(target, context_length=1, name="target"),
        (0,),
        3,
        req,
    )
