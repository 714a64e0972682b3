"""Claim 7 -- delayed tree expansion against root rollouts at the same number of draft nodes.

Shapes (docs/SCHEMES.md §1): root rollouts `delayed [K, 0, L]` (K sampled chains of L tokens
from the root, N = K·L) against delayed expansion `delayed [K, L1, L2]` (a trunk of L1 tokens,
then K rollouts of L2, N = L1 + K·L2), same K, same N, same verifier.

7.1 Context-free tables (the same p and q_samp at every context) and a top-down verifier
    (iid+specinfer, wor+rrsw, iid+rrsw): with β = P(a single draft is accepted) and β_K =
    P(one of the K children of a node is accepted) (the depth-1 fans [1] and [K]),
        τ(delayed [K, L1, L2]) = 1 + β + ... + β^{L1} + β^{L1} β_K (1 + β + ... + β^{L2-1}).
    PROVED. A top-down verifier restarts at an accepted child from r = p of the child's context,
    so what it emits below that child depends only on the child's subtree shape and rows; with
    context-free rows all subtrees of one shape have the same law of accepted length, and the K
    rollouts have one shape, so the node with K children adds β_K times what one rollout adds,
    whichever child is accepted. Checked exactly against rheo_ref on generated cases (every
    pairing above, V <= 4, K <= 3, L1, L2 <= 2).

7.2 Where each wins, N = 4, K = 2, context-free: τ(delayed [2, 2, 1]) - τ(rollouts [2, 0, 2])
    = β(1 + β) - β_2(1 + β - β²). PROVED (sympy, from 7.1). Delayed wins when the draft is good
    (β, β_2 -> 1: the difference -> 1, the trunk's extra depth is accepted); rollouts win when
    it is poor (β_2 close to 2β for small β: the difference ≈ -β). The run also counts, on seeded
    first-order tables (where 7.1 does not apply), how often each wins and at what root
    acceptance.

7.3 "Delayed expansion is never worse than root rollouts at equal node count": REFUTED.
7.4 "Root rollouts are never worse than delayed expansion": REFUTED.
    Smallest cases (V = 2, context-free, positive entries, p != q, first by common denominator,
    then q, then p; N = 4, K = 2, iid+specinfer), re-checked with their minimality:
    7.3: q = (1/4, 3/4), p = (3/4, 1/4): β = 1/2, β_2 = 5/8, delayed [2, 2, 1] 61/32 < rollouts
    [2, 0, 2] 31/16 (difference 3/4 - 25/32 = -1/32): a poor draft, two tries at the root pay.
    7.4: q = (1/3, 2/3), p = (2/3, 1/3): β = 2/3, β_2 = 7/9, rollouts 62/27 < delayed 199/81
    (difference 10/9 - 77/81 = 13/81): a better draft, the trunk's depth pays.
"""

from __future__ import annotations

import random
from fractions import Fraction
from itertools import product

import sympy as sp

from rheo_ref.exact import Exact
from rheo_ref.families.static.scheme import StaticScheme
from rheo_ref.models import Case, TableModel

from ._claim import PROVED, REFUTED, Claim, Outcome, require
from .gen import random_pair, random_row

ZERO, ONE = Fraction(0), Fraction(1)
TOP_DOWN = (("iid", "specinfer"), ("wor", "rrsw"), ("iid", "rrsw"))


def one_row(row, name: str) -> TableModel:
    return TableModel(len(row), 0, {"": tuple(Fraction(x) for x in row)}, name)


def tau(
    q: TableModel, p: TableModel, spec: tuple[int, int, int], sampling: str, verify: str, context: tuple[int, ...] = ()
) -> Fraction:
    return Exact(Case(q, p, StaticScheme("delayed", spec, sampling, verify), context, 1), "classes").tau()


def fan_acceptance(q: TableModel, p: TableModel, K: int, sampling: str, verify: str) -> Fraction:
    """P(one of a node's K children is accepted): the depth-1 fan's τ - 1."""
    return tau(q, p, (K, 0, 1), sampling, verify) - 1


def closed_form(beta, beta_K, L1: int, L2: int):
    """7.1: 1 + β + ... + β^{L1} + β^{L1} β_K (1 + β + ... + β^{L2-1})."""
    trunk = sum((beta**i for i in range(1, L1 + 1)), 0)
    return 1 + trunk + beta**L1 * beta_K * sum((beta**j for j in range(L2)), 0)


def check_71(n: int = 30, seed: int = 71) -> Outcome:
    rng = random.Random(seed)
    checked = 0
    for _ in range(n):
        V = rng.randint(2, 4)
        q, p = one_row(random_row(rng, V, zeros=False), "draft"), one_row(random_row(rng, V), "target")
        K, L1, L2 = rng.randint(1, 3), rng.randint(0, 2), rng.randint(1, 2)
        for sampling, verify in TOP_DOWN:
            beta, beta_K = fan_acceptance(q, p, 1, sampling, verify), fan_acceptance(q, p, K, sampling, verify)
            want = closed_form(beta, beta_K, L1, L2)
            got = tau(q, p, (K, L1, L2), sampling, verify)
            require(
                got == want,
                f"7.1: delayed {[K, L1, L2]} {sampling}+{verify} q={q.probs} p={p.probs}: "
                f"rheo_ref {got} != closed form {want}",
            )
            checked += 1
    return Outcome(
        PROVED,
        f"restart argument; closed form == rheo_ref tau on {checked} generated context-free cases "
        f"(V<=4, K<=3, L1<=2, L2<=2, three top-down pairings)",
        numbers={"cases": checked},
    )


# --- 7.2 ---------------------------------------------------------------------------------------------


def n4_difference():
    """τ(delayed [2, 2, 1]) - τ(rollouts [2, 0, 2]) from 7.1, simplified by sympy."""
    b, b2 = sp.symbols("beta beta_2", positive=True)
    diff = sp.expand(closed_form(b, b2, 2, 1) - closed_form(b, b2, 0, 2))
    return b, b2, diff


def family_counts(per_style: int = 12, seed: int = 72) -> dict:
    """On seeded first-order tables (V = 3, 4): who wins at N = 4, K = 2 under iid+specinfer and
    wor+rrsw, and the root's one-draft acceptance where each wins."""
    rng = random.Random(seed)
    out: dict = {}
    for style in ("close", "zipf", "uniform"):
        for _ in range(per_style):
            V = rng.choice([3, 4])
            q, p = random_pair(rng, V, 1, style=style)
            beta0 = sum((min(a, b) for a, b in zip(p.row((0,)), q.row((0,)))), ZERO)
            for sampling, verify in TOP_DOWN[:2]:
                d = tau(q, p, (2, 2, 1), sampling, verify, (0,)) - tau(q, p, (2, 0, 2), sampling, verify, (0,))
                who = "delayed" if d > 0 else ("rollouts" if d < 0 else "tie")
                rec = out.setdefault(
                    f"{style}|{sampling}+{verify}",
                    {"delayed": 0, "rollouts": 0, "tie": 0, "beta_rollouts_max": None, "beta_delayed_min": None},
                )
                rec[who] += 1
                key, pick = ("beta_rollouts_max", max) if who == "rollouts" else ("beta_delayed_min", min)
                if who != "tie":
                    rec[key] = beta0 if rec[key] is None else pick(rec[key], beta0)
    return out


def check_72() -> Outcome:
    b, b2, diff = n4_difference()
    require(sp.simplify(diff - (b * (1 + b) - b2 * (1 + b - b**2))) == 0, f"N=4 difference is {diff}")
    require(diff.subs({b: 1, b2: 1}) == 1, "at beta = beta_2 = 1 delayed should win by one token")
    small = sp.series(diff.subs(b2, 2 * b), b, 0, 2).removeO()
    require(sp.simplify(small + b) == 0, f"for small beta with beta_2 = 2 beta the difference is {small}, not -beta")
    fam = family_counts()
    summary = "; ".join(f"{k}: delayed {v['delayed']}, rollouts {v['rollouts']}" for k, v in fam.items())
    lows = [v["beta_rollouts_max"] for v in fam.values() if v["beta_rollouts_max"] is not None]
    highs = [v["beta_delayed_min"] for v in fam.values() if v["beta_delayed_min"] is not None]
    return Outcome(
        PROVED,
        f"sympy from 7.1: delayed - rollouts = beta(1+beta) - beta_2(1+beta-beta^2) (-> 1 as "
        f"beta -> 1, ~ -beta for a poor draft). First-order tables, N=4, K=2 (wins per style): "
        f"{summary}; rollouts won only at root acceptance <= "
        f"{float(max(lows)) if lows else float('nan'):.3f}, delayed won down to "
        f"{float(min(highs)) if highs else float('nan'):.3f}",
        numbers={"difference": str(diff), "family": {k: {kk: str(vv) for kk, vv in v.items()} for k, v in fam.items()}},
    )


# --- 7.3 / 7.4 ---------------------------------------------------------------------------------------


def smallest_win(winner: str, max_d: int = 8) -> dict:
    """The first (V = 2, context-free, positive, p != q) table by common denominator, then q, then p,
    where `winner` has the larger τ at N = 4, K = 2 under iid+specinfer."""
    for d in range(2, max_d + 1):
        vals = [Fraction(a, d) for a in range(1, d)]
        for a, b in product(vals, repeat=2):
            if a == b or (a.denominator != d and b.denominator != d):
                continue
            q, p = one_row((a, 1 - a), "draft"), one_row((b, 1 - b), "target")
            t_d, t_r = tau(q, p, (2, 2, 1), "iid", "specinfer"), tau(q, p, (2, 0, 2), "iid", "specinfer")
            if (t_d > t_r) == (winner == "delayed") and t_d != t_r:
                return {
                    "q": [str(a), str(1 - a)],
                    "p": [str(b), str(1 - b)],
                    "denominator": d,
                    "tau_delayed_2_2_1": str(t_d),
                    "tau_rollouts_2_0_2": str(t_r),
                }
    raise AssertionError(f"no table up to denominator {max_d} where {winner} wins")


CE_73 = {
    "q": ["1/4", "3/4"],
    "p": ["3/4", "1/4"],
    "denominator": 4,
    "tau_delayed_2_2_1": "61/32",
    "tau_rollouts_2_0_2": "31/16",
}
CE_74 = {
    "q": ["1/3", "2/3"],
    "p": ["2/3", "1/3"],
    "denominator": 3,
    "tau_delayed_2_2_1": "199/81",
    "tau_rollouts_2_0_2": "62/27",
}


def _recheck(ce: dict, winner: str) -> None:
    q, p = one_row(ce["q"], "draft"), one_row(ce["p"], "target")
    t_d, t_r = tau(q, p, (2, 2, 1), "iid", "specinfer"), tau(q, p, (2, 0, 2), "iid", "specinfer")
    require((str(t_d), str(t_r)) == (ce["tau_delayed_2_2_1"], ce["tau_rollouts_2_0_2"]), f"recorded case moved: {ce}")
    require((t_d > t_r) if winner == "delayed" else (t_r > t_d), f"{winner} no longer wins on {ce}")
    require(smallest_win(winner, ce["denominator"]) == ce, f"a smaller case than {ce} exists for {winner}")


def check_73() -> Outcome:
    _recheck(CE_73, "rollouts")
    return Outcome(
        REFUTED,
        f"q={CE_73['q']} p={CE_73['p']} (context-free, iid+specinfer): delayed [2, 2, 1] tau "
        f"{CE_73['tau_delayed_2_2_1']} < rollouts [2, 0, 2] {CE_73['tau_rollouts_2_0_2']}",
        counterexample=CE_73,
    )


def check_74() -> Outcome:
    _recheck(CE_74, "delayed")
    return Outcome(
        REFUTED,
        f"q={CE_74['q']} p={CE_74['p']} (context-free, iid+specinfer): rollouts [2, 0, 2] tau "
        f"{CE_74['tau_rollouts_2_0_2']} < delayed [2, 2, 1] {CE_74['tau_delayed_2_2_1']}",
        counterexample=CE_74,
    )


CLAIMS = [
    Claim(
        "7.1",
        "context-free tables, top-down verifiers: tau(delayed [K, L1, L2]) closed form in beta, beta_K",
        "restart argument + rheo_ref on generated cases",
        PROVED,
        check_71,
    ),
    Claim(
        "7.2",
        "N=4, K=2: delayed - rollouts = beta(1+beta) - beta_2(1+beta-beta^2); family of tables",
        "sympy from 7.1; exact counts on seeded first-order tables",
        PROVED,
        check_72,
    ),
    Claim(
        "7.3",
        "delayed expansion >= root rollouts at equal nodes (tau)",
        "search by denominator, exact",
        REFUTED,
        check_73,
    ),
    Claim(
        "7.4",
        "root rollouts >= delayed expansion at equal nodes (tau)",
        "search by denominator, exact",
        REFUTED,
        check_74,
    ),
]
