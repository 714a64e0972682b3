"""Claim 10: the bfloat16 draft (bug class 9, `draft-bfloat16`) is float-level on every case.

10.1 On any bug-class case whose positive processed draft probabilities are ≥ 2^-126, the mutant's
     exact TV on a check is ≤ D·ε/(2 − ε²), D = the draft draws the check reads (γ·(n − 1) for the
     first n tokens, γ for the first round) and ε = (1 + 2^-8)(1 + 2^-24)(1 + 2^-53) − 1; on the
     hunt's space (γ ≤ 2, ≤ 3 tokens) ≤ 0.0079. PROVED: the argument of
     `rheo_ref.bugclasses.float_level` (rounding, one row, coupling), with its steps checked:
     - one row: sympy verifies the monotonicity of x/(x + y), the bound 2εa(1 − a)/(1 + ε(2a − 1))
       it gives, the identity t − f(a) = (s − c)²/(2εs) ≥ 0 (t = (1 − c)/ε, c = √(1 − ε²),
       s = 1 − ε + 2εa) and t ≤ ε/(2 − ε²);
     - rounding: the bit-level rounding of `bfloat16` from float32 is to nearest within 2^-8
       relative, checked on every float32 of the binade [1, 2) whose top 7 mantissa bits are 0, 1,
       126 or 127 (all 2^16 low halves: the rounding reads only the low 17 bits; other binades
       scale by a power of 2, and 127 carries into the next binade); every processed draft entry
       met on the cases below is 0 or ≥ 2^-126 and within ε of its bfloat16;
     - coupling: the draft draws of every enumerated run are counted (≤ D), and the exact TV of
       every check is ≤ its bound on seeded random cases.
10.2 The bound is nearly attained: on a case with p = q (every draft accepted, so the emitted
     tokens are the draft's) and a row whose entries sit just past bfloat16's rounding midpoints,
     the exact TV is ≥ 0.99 of the bound for D = 1 (γ = 1, 2 tokens). PROVED (exact TV, recorded).
"""

from __future__ import annotations

import random
import struct
from fractions import Fraction

import sympy as sp

from rheo_ref.bugclasses.cases import BugCase, mutant_tvs
from rheo_ref.bugclasses.decoder import Request, Steps
from rheo_ref.bugclasses.exact import decoder_law
from rheo_ref.bugclasses.float_level import EPSILON, MIN_NORMAL, ROW_TV_BOUND, case_bounds, draft_draws
from rheo_ref.bugclasses.mutants import bfloat16
from rheo_ref.models import TableModel

from ._claim import PROVED, Claim, Outcome, require

F = Fraction
RANDOM_CASES = 6


def row_lemmas() -> None:
    """The one-row bound, step by step (sympy)."""
    a, e, x, y = sp.symbols("a epsilon x y", positive=True)
    g = x / (x + y)
    require(sp.simplify(sp.diff(g, x) - y / (x + y) ** 2) == 0, "d/dx x/(x+y) = y/(x+y)^2 >= 0")
    require(sp.simplify(sp.diff(g, y) + x / (x + y) ** 2) == 0, "d/dy x/(x+y) = -x/(x+y)^2 <= 0")
    f = a * (1 + e) / (a * (1 + e) + (1 - a) * (1 - e)) - a
    f_closed = 2 * e * a * (1 - a) / (1 + e * (2 * a - 1))
    require(sp.simplify(f - f_closed) == 0, "TV <= 2 eps a (1 - a)/(1 + eps (2a - 1))")
    c, s = sp.sqrt(1 - e**2), 1 - e + 2 * e * a
    t = (1 - c) / e
    require(sp.simplify(t - f_closed - (s - c) ** 2 / (2 * e * s)) == 0, "t - f(a) = (s - c)^2/(2 eps s)")
    require(sp.simplify(t - e / (1 + c)) == 0, "t = eps/(1 + c)")
    # ε/(2 − ε²) − ε/(1 + c) has the sign of (1 + c) − (2 − ε²) = c − c² = c(1 − c) ≥ 0
    require(sp.simplify((1 + c) - (2 - e**2) - c * (1 - c)) == 0, "(1 + c) - (2 - eps^2) = c (1 - c)")
    require(ROW_TV_BOUND == EPSILON / (2 - EPSILON**2), "ROW_TV_BOUND = eps/(2 - eps^2)")


def rounding_lemma() -> int:
    """bfloat16's bit rounding of every float32 of [1, 2) with top mantissa bits 0, 1, 126, 127 is
    within 2^-8 relative (exact integer arithmetic); returns the number checked."""
    n = 0
    for top in (0, 1, 126, 127):
        for low in range(1 << 16):
            m = (top << 16) | low
            x = struct.unpack("<f", struct.pack("<I", (127 << 23) | m))[0]  # x = (2^23 + m)/2^23
            r = bfloat16(x)
            num = F(r) * 2**23  # r·2^23, an integer
            require(num.denominator == 1, f"bfloat16({x!r}) = {r!r} is not on the float32 grid")
            require(abs(num - ((1 << 23) + m)) * 2**8 <= (1 << 23) + m, f"bfloat16({x!r}) = {r!r}: error > 2^-8")
            require(F(r).denominator <= 2**7, f"bfloat16({x!r}) = {r!r} has more than 8 significant bits")
            n += 1
    return n


class Counting(Steps):
    """The baseline's steps, counting the draft draws of each run (a run starts at its first token)
    and checking every processed draft entry against the rounding lemma's range."""

    def __init__(self) -> None:
        self.draws = 0
        self.most = 0
        self.entries = 0

    def first_token(self, rand, stream, p):
        self.draws = 0
        return super().first_token(rand, stream, p)

    def draft_sampling_row(self, q):
        self.draws += 1
        self.most = max(self.most, self.draws)
        for v in q:
            require(v == 0 or v >= MIN_NORMAL, f"draft probability {v} below 2^-126")
            require(abs(bfloat16(v) - v) <= EPSILON * v, f"bfloat16({v}) further than eps")
            self.entries += 1
        return q


def random_case(rng: random.Random) -> BugCase:
    """A small case: V 2–4, context length 0 or 1, weights 0–9, any request the hunt draws, γ 1–3."""
    V, L = rng.randint(2, 4), rng.choice((0, 1))
    keys = [()] + ([(t,) for t in range(V)] if L else [])

    def table(name: str) -> TableModel:
        rows = {}
        for k in keys:
            w = [rng.randint(0, 9) for _ in range(V)]
            w[rng.randrange(V)] += 1
            rows[k] = w
        return TableModel.from_weights(rows, context_length=L, name=name)

    gamma = rng.choice((1, 2, 3))
    req = Request(
        temperature=rng.choice((F(1), F(1, 2))),
        top_k=rng.choice((0, 2)) if V > 2 else 0,
        top_p=rng.choice((F(1), F(9, 10), F(4, 5))),
        penalty=rng.choice((F(1), F(1, 2))),
        gamma=gamma,
        verify=rng.choice(("token", "block")),
    )
    return BugCase(table("draft"), table("target"), (0,) if L else (), 3 if gamma < 3 else 2, req)


def near_case(gamma: int = 1, tokens: int = 2) -> BugCase:
    """p = q = one row (context length 0): 1/2 + 2^-9 + d (rounds up by ~2^-8 relative), 2^-k·(1 +
    2^-8 − d) for k = 2..8 (round down by ~2^-8), and the remainder; T = 1, no processors."""
    d = F(1, 2**20)
    row = [F(1, 2) + F(1, 2**9) + d] + [F(1, 2**k) * (1 + F(1, 2**8) - d) for k in range(2, 9)]
    row.append(1 - sum(row))
    m = TableModel.from_json({"vocab_size": len(row), "context_length": 0, "probs": {"": [str(x) for x in row]}})
    return BugCase(m, m, (), tokens, Request(gamma=gamma))


def check_bound() -> Outcome:
    row_lemmas()
    n_round = rounding_lemma()
    rng = random.Random("proofs|bfloat16|10.1")
    worst = F(0)
    entries = 0
    for _ in range(RANDOM_CASES):
        case = random_case(rng)
        counting = Counting()
        for first_round in (False, True):
            c = (case.draft, case.target, case.context, case.tokens, case.request)
            decoder_law(*c, counting, first_round=first_round)
            need = draft_draws(case.request.gamma, "round" if first_round else f"joint{case.tokens}")
            require(counting.most <= need, f"{counting.most} draft draws > {need} on {case.to_json()}")
            counting.most = 0
        entries += counting.entries
        tvs, bounds = mutant_tvs(case, "draft-bfloat16"), case_bounds(case)
        for ch, v in tvs.items():
            require(v <= bounds[ch], f"exact TV {v} > bound {bounds[ch]} on {ch} of {case.to_json()}")
            if bounds[ch]:
                worst = max(worst, v / bounds[ch])
    space = 4 * ROW_TV_BOUND
    return Outcome(
        PROVED,
        f"row bound eps/(2-eps^2) = {float(ROW_TV_BOUND):.6g} (sympy); {n_round} float32 roundings; "
        f"{RANDOM_CASES} random cases, {entries} draft entries: exact TV <= bound (largest ratio "
        f"{float(worst):.3g}); hunt space (gamma <= 2, 3 tokens): TV <= {float(space):.6g}",
        numbers={"epsilon": str(EPSILON), "row_tv_bound": str(ROW_TV_BOUND), "hunt_space_bound": float(space)},
    )


def check_attained() -> Outcome:
    case = near_case()
    v, b = mutant_tvs(case, "draft-bfloat16")["joint2"], case_bounds(case)["joint2"]
    require(v <= b, f"exact TV {v} above the bound {b}")
    require(v >= F(99, 100) * b, f"exact TV {float(v):.6g} < 0.99 of the bound {float(b):.6g}")
    return Outcome(
        PROVED,
        f"p = q, V = 9, gamma = 1: exact TV {float(v):.6g} = {float(v / b):.4f} of the bound {float(b):.6g}",
        numbers={"exact_tv": str(v), "bound": str(b)},
    )


CLAIMS = [
    Claim(
        "10.1",
        "draft-bfloat16: exact TV of every check <= D eps/(2-eps^2) (D draft draws; <= 0.0079 on the hunt space)",
        "coupling argument; sympy row lemma, exhaustive float32 rounding check, counted draws + exact TV on cases",
        PROVED,
        check_bound,
    ),
    Claim(
        "10.2",
        "the bfloat16 bound is nearly attained (>= 0.99 of it) for one draft draw",
        "exact TV on a constructed case (p = q, entries past bfloat16's rounding midpoints)",
        PROVED,
        check_attained,
    ),
]
