"""Claim 8: the tsubame family (plan the topology with Top-K, then sample the tokens) at T = 1.

8.1 "Sampling the tokens on the planned topology reverses Top-K's disadvantage at T = 1": Tsubame's
    τ >= that of deterministic Top-K on the same K, W, D, R (the rheo family with m = K, its own
    verifier) on the same tables. REFUTED: Top-K wins where the target mostly agrees with the
    draft's top token (style `peaked`); the smallest such grid point is recorded.
8.2 The converse, "deterministic Top-K is never worse than Tsubame at T = 1": REFUTED (the paper's
    statement holds there: Tsubame wins on most of the grid, on every point of the styles
    uniform, close and zipf). The detail prints the counts per style.
8.3 "Tsubame is never worse than a sampled chain at equal node count" (static branching [1]*R,
    the same sampling and verifier): REFUTED; 8.4 the converse: REFUTED.

Method: exact τ (rheo_ref.exact, Fractions: the expected length of the round from context (0,))
on a fixed grid: V = 3 and 4; first-order tables (context_length 1) of four styles (`tables`)
for seeds 0..SEEDS-1; q_samp = q_rank (T = 1); plan K = 2, W = 1, D = 2, R = 3 (branches at the
root, continues the best child); Tsubame's sampling + verifier wor + traversal and iid +
specinfer. "Smallest": in the grid's order (V, then style, then seed, then pairing). A grid is a
finite search: each counterexample refutes exactly, and the counts are evidence, not a theorem.
"""

from __future__ import annotations

import random
from fractions import Fraction
from functools import cache

from rheo_ref.exact import Exact
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.static.scheme import StaticScheme
from rheo_ref.families.tsubame.scheme import TsubameScheme
from rheo_ref.generate import contexts, mix, random_pair, random_row, table
from rheo_ref.models import Case, TableModel

from ._claim import REFUTED, Claim, Outcome, require

SEEDS = 12
STYLES = ("uniform", "close", "zipf", "peaked")
VOCABS = (3, 4)
K, W, D, R = 2, 1, 2, 3
PAIRINGS = (("wor", "traversal"), ("iid", "specinfer"))


def tables(V: int, seed: int, style: str) -> tuple[TableModel, TableModel]:
    """(draft, target): first-order tables from random.Random: `rheo_ref.generate.random_pair`'s
    styles, or `peaked`: q of positive integer weights in 1..6 and p = (1 - λ) δ(argmax q) + λ r,
    r a random row, λ in {1/8, 1/4, 1/2} (a target that mostly agrees with the draft's top token)."""
    rng = random.Random(f"tsubame-claim8|{V}|{seed}|{style}")
    if style != "peaked":
        return random_pair(rng, V, 1, style=style)
    q_rows, p_rows = {}, {}
    for k in contexts(V, 1):
        q = random_row(rng, V, zeros=False)
        top = max(range(V), key=lambda t: (q[t], -t))
        point = tuple(Fraction(t == top) for t in range(V))
        q_rows[k], p_rows[k] = q, mix(point, random_row(rng, V), Fraction(1, rng.choice([8, 4, 2])))
    return table(q_rows, V, 1, "draft"), table(p_rows, V, 1, "target")


def _tau(q: TableModel, p: TableModel, scheme) -> Fraction:
    return Exact(Case(q, p, scheme, (0,), 1)).tau()


@cache
def taus(V: int, style: str, seed: int, sampling: str, verify: str) -> dict[str, Fraction]:
    """Exact τ of Tsubame, of Top-K (rheo, m = K) and of the sampled chain of R nodes on one table."""
    q, p = tables(V, seed, style)
    return {
        "tsubame": _tau(q, p, TsubameScheme(K, W, D, R, sampling, verify)),
        "topk": _tau(q, p, Scheme(K, K, W, D, R)),
        "chain": _tau(q, p, StaticScheme("branching", (1,) * R, sampling, verify)),
    }


def grid():
    for V in VOCABS:
        for style in STYLES:
            for seed in range(SEEDS):
                for sampling, verify in PAIRINGS:
                    yield V, style, seed, sampling, verify


def first_win(winner: str, loser: str) -> dict | None:
    """The smallest grid point where `winner`'s τ is larger than `loser`'s."""
    for V, style, seed, sampling, verify in grid():
        t = taus(V, style, seed, sampling, verify)
        if t[winner] > t[loser]:
            return {
                "V": V,
                "style": style,
                "seed": seed,
                "pairing": f"{sampling}+{verify}",
                winner: str(t[winner]),
                loser: str(t[loser]),
            }
    return None


def counts(a: str, b: str) -> dict[str, int]:
    out = {f"{a}>{b}": 0, f"{a}<{b}": 0, "equal": 0}
    for point in grid():
        t = taus(*point)
        out[f"{a}>{b}" if t[a] > t[b] else f"{a}<{b}" if t[a] < t[b] else "equal"] += 1
    return out


def counts_by_style(a: str, b: str) -> dict[str, str]:
    """Per style: (a wins)/(b wins)/(ties) over V, seeds and pairings."""
    out = {}
    for style in STYLES:
        c = [0, 0, 0]
        for V, st, seed, sampling, verify in grid():
            if st == style:
                t = taus(V, st, seed, sampling, verify)
                c[0 if t[a] > t[b] else 1 if t[a] < t[b] else 2] += 1
        out[style] = "/".join(map(str, c))
    return out


def _recheck(ce: dict, winner: str, loser: str) -> None:
    sampling, verify = ce["pairing"].split("+")
    t = taus(ce["V"], ce["style"], ce["seed"], sampling, verify)
    require((str(t[winner]), str(t[loser])) == (ce[winner], ce[loser]), f"recorded case moved: {ce}")
    require(first_win(winner, loser) == ce, f"the smallest grid point where {winner} beats {loser} is not {ce}")


def _refute(ce: dict, winner: str, loser: str) -> Outcome:
    _recheck(ce, winner, loser)
    c, by_style = counts(winner, loser), counts_by_style(winner, loser)
    return Outcome(
        REFUTED,
        f"smallest: V={ce['V']} {ce['style']} seed {ce['seed']} {ce['pairing']}: tau {winner} {ce[winner]} > "
        f"{loser} {ce[loser]}; grid of {sum(c.values())}: {c}; per style ({winner}/{loser}/tie): {by_style}",
        counterexample=ce,
        numbers={**c, "by_style": by_style},
    )


CE_81 = {"V": 3, "style": "peaked", "seed": 0, "pairing": "wor+traversal", "topk": "9301/3600", "tsubame": "4907/2160"}
CE_82 = {"V": 3, "style": "uniform", "seed": 0, "pairing": "wor+traversal", "tsubame": "29699/14553", "topk": "14/9"}
CE_83 = {
    "V": 3,
    "style": "uniform",
    "seed": 0,
    "pairing": "wor+traversal",
    "chain": "7215133/3361743",
    "tsubame": "29699/14553",
}
CE_84 = {
    "V": 3,
    "style": "uniform",
    "seed": 1,
    "pairing": "wor+traversal",
    "tsubame": "12887/5850",
    "chain": "30859/14625",
}

CLAIMS = [
    Claim(
        "8.1",
        "T=1: tsubame (Top-K plan, sampled tokens) tau >= deterministic Top-K tau, same K, W, D, R",
        "exact tau on a seeded grid (V=3,4; 4 styles), smallest counterexample",
        REFUTED,
        lambda: _refute(CE_81, "topk", "tsubame"),
    ),
    Claim(
        "8.2",
        "T=1: deterministic Top-K tau >= tsubame tau (the paper's reversal never happens)",
        "exact tau on a seeded grid (V=3,4; 4 styles), smallest counterexample",
        REFUTED,
        lambda: _refute(CE_82, "tsubame", "topk"),
    ),
    Claim(
        "8.3",
        "tsubame tau >= sampled chain tau at equal node count (chain of R, same sampling+verifier)",
        "exact tau on a seeded grid (V=3,4; 4 styles), smallest counterexample",
        REFUTED,
        lambda: _refute(CE_83, "chain", "tsubame"),
    ),
    Claim(
        "8.4",
        "sampled chain tau >= tsubame tau at equal node count",
        "exact tau on a seeded grid (V=3,4; 4 styles), smallest counterexample",
        REFUTED,
        lambda: _refute(CE_84, "tsubame", "chain"),
    ),
]
