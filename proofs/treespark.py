"""Claim 9: the treespark family (best-first slot admission, θ stop, wor siblings; SCHEMES.md §5-§6).

9.1 "TreeSpark is lossless for every θ" (both calibrations, both verifiers). The argument
    (slot before token): a round's i-th created node is decided (whether it exists, its parent,
    its rank among its siblings, hence where the verifier meets it) by the builder's state before
    its token is drawn: the context and the nodes created before it (its ancestors and earlier
    siblings among them), never its own token; and its token is then drawn from exactly the law
    its verifier assumes (q_samp(.|parent) without the earlier siblings' tokens, renormalised:
    the wor proposal of rrsw and of traversal's wor update). Given the tree built so far, each
    verifier is lossless child by child whatever the later shape, so the round's law is the
    target's. Machine-checked here: (i) the structural lemma on every enumerated tree of every
    case of the family (`lemma_violation`: trees grouped by the nodes created before node i; in
    each group node i exists with one parent in all trees or in none, and its token's
    conditional law equals `next_draw(q_samp row, earlier siblings, "wor")`), and (ii) exact TV
    = 0 (Fractions) of the 2-token law from context (0,), on FAMILY: V = 2, 3, two table styles
    and seeds, N = 1..4, k = 2, D = 3, θ in THETAS (0 and three thresholds that bind: the family
    checks that each calibration has cases where θ changes τ), identity and the paper's sigmoid,
    rrsw and traversal. PROVED up to that size: the argument is general, the checks are exact on
    the family only.
9.2 "The mutant treespark-own-survival (admit a drawn child only if its own survival >= θ) is
    lossless at θ = 0": PROVED up to the same size (its round laws equal the spec's at every
    context the 2-token law visits; θ = 0 never tests anything).
9.3 "... and for θ > 0": REFUTED, with the smallest exact counterexample: fewest nodes N, then
    smallest V, then the order of SEARCH (style, seed, θ, calibration, verifier); its exact TV
    and the first tree group where the lemma fails (node 1 exists for some of its own tokens
    only) are recorded.
9.4 "TreeSpark (θ = 0, identity) is never worse than the sampled chain of N nodes with the same
    verifier": REFUTED; 9.5 the converse: REFUTED. Exact τ of the first round from (0,) on
    `chain_grid` (V = 3, 4; styles uniform, close, zipf and `second`; 6 seeds; N = 3, k = 2,
    D = 3), the smallest point each way in the grid's order, counts per style. A grid is a finite
    search: each counterexample refutes exactly, the counts are evidence only.
"""

from __future__ import annotations

import random
from collections import defaultdict
from collections.abc import Iterator
from fractions import Fraction
from functools import cache

from rheo_ref.exact import Exact, target_law, tv
from rheo_ref.families.static.scheme import StaticScheme, next_draw
from rheo_ref.families.treespark.exact import draws_of_round
from rheo_ref.families.treespark.scheme import PAPER_SIGMOID, Calibration, TreeSparkScheme
from rheo_ref.generate import contexts, mix, random_pair, random_row, table
from rheo_ref.models import Case, TableModel
from rheo_ref.variants import MUTANTS, SPEC, Variant

from ._claim import REFUTED, Claim, Outcome, proved_up_to, require

OWN = MUTANTS["treespark-own-survival"]
CALIBRATIONS = {"identity": Calibration("identity"), "sigmoid": Calibration("sigmoid", *PAPER_SIGMOID)}
THETAS = tuple(Fraction(t) for t in ("0", "1/8", "1/4", "2/5"))
VOCABS, STYLES, SEEDS, NODES = (2, 3), ("uniform", "zipf"), 2, (1, 2, 3, 4)
VERIFIERS = ("rrsw", "traversal")
TOKENS = 2  # the law of the first 2 tokens from context (0,): a second round from every first one
SIZE = "V<=3, N<=4 (k=2, D=3), 2 styles x 2 seeds, 4 thetas x 2 calibrations x 2 verifiers"


@cache
def tables(V: int, style: str, seed: int) -> tuple[TableModel, TableModel]:
    """(draft, target): first-order tables from a seeded Random: `rheo_ref.generate.random_pair`'s
    styles, or `second`: q of positive integer weights and p = (1 - λ) δ(q's second most likely
    token, ties by id) + λ r, r a random row, λ in {1/8, 1/4, 1/2} (width pays: the target mostly
    wants the token a chain drafts second at best)."""
    rng = random.Random(f"treespark-claim9|{V}|{style}|{seed}")
    if style != "second":
        return random_pair(rng, V, 1, style=style)
    q_rows, p_rows = {}, {}
    for k in contexts(V, 1):
        q = random_row(rng, V, zeros=False)
        second = sorted(range(V), key=lambda t: (-q[t], t))[1]
        point = tuple(Fraction(t == second) for t in range(V))
        q_rows[k], p_rows[k] = q, mix(point, random_row(rng, V), Fraction(1, rng.choice([8, 4, 2])))
    return table(q_rows, V, 1, "draft"), table(p_rows, V, 1, "target")


def case(V: int, style: str, seed: int, N: int, theta: Fraction, cal: str, verify: str) -> Case:
    q, p = tables(V, style, seed)
    return Case(q, p, TreeSparkScheme(N, 2, 3, theta, CALIBRATIONS[cal], verify), (0,), TOKENS)


def family() -> Iterator[tuple]:
    """The points of 9.1 / 9.2 / 9.3's search, smallest first: N, V, style, seed, θ, calibration, verifier."""
    for N in NODES:
        for V in VOCABS:
            for style in STYLES:
                for seed in range(SEEDS):
                    for theta in THETAS:
                        for cal in CALIBRATIONS:
                            for verify in VERIFIERS:
                                yield V, style, seed, N, theta, cal, verify


@cache
def exact(point: tuple, variant: Variant = SPEC) -> Exact:
    ex = Exact(case(*point), "classes", variant=variant)
    ex.token_law(TOKENS)
    return ex


def tv_of(point: tuple, variant: Variant = SPEC) -> Fraction:
    c = case(*point)
    return tv(exact(point, variant).token_law(TOKENS), target_law(c, TOKENS))


def node_context(context: tuple[int, ...], parents: tuple[int, ...], tokens: tuple[int, ...], v: int) -> tuple:
    """The context after node v of a tree given by its first nodes' parents and tokens (root 0)."""
    path: list[int] = []
    while v > 0:
        path.append(tokens[v - 1])
        v = parents[v - 1]
    return tuple(context) + tuple(reversed(path))


def lemma_violation(c: Case, context: tuple[int, ...], variant: Variant = SPEC) -> str | None:
    """The structural lemma on every tree of one round (None: holds; else where it fails).

    Trees are grouped, for each creation index i, by the nodes created before node i (parents and
    tokens); within a group node i must exist with the same parent in every tree or in none, and
    the probability of each token at node i, divided by the group's, must be the wor draw law
    next_draw(q_samp(.|parent), tokens of its earlier siblings)."""
    trees = list(draws_of_round(c, context, variant))
    require(sum(p for p, _ in trees) == 1, "the round's tree probabilities do not sum to 1")
    N = c.scheme.nodes
    for i in range(1, N + 1):
        groups: dict[tuple, list] = defaultdict(list)
        for prob, t in trees:
            groups[(t.parents[: i - 1], t.tokens[: i - 1])].append((prob, t))
        for (parents, tokens), members in groups.items():
            where = {t.parents[i - 1] if len(t.tokens) >= i else None for _, t in members}
            if len(where) != 1:
                return (
                    f"node {i} after tokens {list(tokens)} (parents {list(parents)}): exists for some of its own "
                    f"tokens only (parent in {sorted(where, key=str)})"
                )
            v = where.pop()
            if v is None:
                continue
            total = sum(p for p, _ in members)
            law: dict[int, Fraction] = defaultdict(Fraction)
            for p, t in members:
                law[t.tokens[i - 1]] += p / total
            earlier = [tokens[j] for j in range(i - 1) if parents[j] == v]
            want = dict(next_draw(c.q_samp_model.row(node_context(context, parents, tokens, v)), earlier, "wor"))
            if dict(law) != want:
                return f"node {i} (parent {v}, earlier siblings {earlier}): token law {dict(law)} != draw law {want}"
    return None


def _contexts(point: tuple) -> list[tuple[int, ...]]:
    """The contexts the 2-token law's rounds start from: (0,) and (0, y) for every first token y."""
    return [(0,)] + [(0, y) for y in range(point[0])]


def check_lossless() -> Outcome:
    n, trees, binds = 0, 0, {cal: 0 for cal in CALIBRATIONS}
    for point in family():
        c = case(*point)
        for ctx in _contexts(point):
            bad = lemma_violation(c, ctx)
            require(bad is None, f"structural lemma fails at {point} context {ctx}: {bad}")
        ex = exact(point)
        require(tv_of(point) == 0, f"TV {tv_of(point)} != 0 at {point}")
        trees += ex.counter.enumerated
        V, style, seed, N, theta, cal, verify = point
        if theta and ex.tau() != exact((V, style, seed, N, Fraction(0), cal, verify)).tau():
            binds[cal] += 1
        n += 1
    require(all(binds.values()), f"a calibration where no theta binds on the family: {binds}")
    return Outcome(
        proved_up_to(SIZE),
        f"{n} cases: exact TV = 0 of the {TOKENS}-token law and the lemma on every tree of {trees} enumerated; "
        f"theta changes tau on {binds} cases (per calibration)",
        numbers={"cases": n, "trees": trees, "theta_binds": binds},
    )


def check_own_survival_theta0() -> Outcome:
    n = 0
    for point in family():
        if point[4] == 0:
            for ctx in _contexts(point):
                require(
                    exact(point, OWN).round_law(ctx) == exact(point).round_law(ctx),
                    f"own-survival's round law differs from the spec's at theta = 0: {point} context {ctx}",
                )
            n += 1
    return Outcome(proved_up_to(SIZE), f"{n} cases at theta = 0: round laws equal to the spec's at every context")


def smallest_own_survival() -> dict | None:
    for point in family():
        if point[4] > 0:
            d = tv_of(point, OWN)
            if d > 0:
                V, style, seed, N, theta, cal, verify = point
                q, p = tables(V, style, seed)
                return {
                    "V": V,
                    "style": style,
                    "seed": seed,
                    "N": N,
                    "theta": str(theta),
                    "calibration": cal,
                    "verify": verify,
                    "tv": str(d),
                    "lemma": lemma_violation(case(*point), (0,), OWN),
                    "q": {k: [str(x) for x in r] for k, r in sorted(q.probs.items())},
                    "p": {k: [str(x) for x in r] for k, r in sorted(p.probs.items())},
                }
    return None


CE_93 = {"V": 2, "style": "uniform", "seed": 0, "N": 1, "theta": "2/5", "calibration": "identity",
         "verify": "rrsw", "tv": "11/75"}  # fmt: skip


def refute_own_survival() -> Outcome:
    ce = smallest_own_survival()
    require(ce is not None, "no counterexample to own-survival's losslessness on the family")
    assert ce is not None
    short = {k: ce[k] for k in CE_93}
    require(short == CE_93, f"the smallest own-survival counterexample moved: {short} (recorded {CE_93})")
    require(ce["lemma"] is not None, "the lemma holds on the counterexample's first round")
    return Outcome(
        REFUTED,
        f"smallest: N={ce['N']} V={ce['V']} {ce['style']} seed {ce['seed']} theta={ce['theta']} "
        f"{ce['calibration']} {ce['verify']}: exact TV {ce['tv']} ({float(Fraction(ce['tv'])):.4f}); lemma: "
        f"{ce['lemma']}",
        counterexample=ce,
    )


# --- 9.4 / 9.5: TreeSpark against the sampled chain at equal nodes --------------------------------

CHAIN_VOCABS, CHAIN_STYLES, CHAIN_SEEDS, CHAIN_N = (3, 4), ("uniform", "close", "zipf", "second"), 6, 3


def chain_grid() -> Iterator[tuple[int, str, int, str]]:
    for V in CHAIN_VOCABS:
        for style in CHAIN_STYLES:
            for seed in range(CHAIN_SEEDS):
                for verify in VERIFIERS:
                    yield V, style, seed, verify


@cache
def chain_taus(V: int, style: str, seed: int, verify: str) -> dict[str, Fraction]:
    q, p = tables(V, style, seed)
    spark = TreeSparkScheme(CHAIN_N, 2, 3, Fraction(0), CALIBRATIONS["identity"], verify)
    chain = StaticScheme("branching", (1,) * CHAIN_N, "wor", verify)
    return {k: Exact(Case(q, p, s, (0,), 1)).tau() for k, s in (("treespark", spark), ("chain", chain))}


def first_win(winner: str, loser: str) -> dict | None:
    for V, style, seed, verify in chain_grid():
        t = chain_taus(V, style, seed, verify)
        if t[winner] > t[loser]:
            return {
                "V": V,
                "style": style,
                "seed": seed,
                "verify": verify,
                winner: str(t[winner]),
                loser: str(t[loser]),
            }
    return None


CE_94 = {"V": 3, "style": "uniform", "seed": 0, "verify": "rrsw", "chain": "7954052/3262545",
         "treespark": "12395/6084"}  # fmt: skip
CE_95 = {"V": 3, "style": "second", "seed": 0, "verify": "rrsw", "treespark": "84083/47320",
         "chain": "1862600479/1136815680"}  # fmt: skip


def refute_chain(ce: dict, winner: str, loser: str) -> Outcome:
    found = first_win(winner, loser)
    require(found == ce, f"the smallest grid point where {winner} beats {loser} is {found}, recorded {ce}")
    counts: dict[str, list[int]] = {s: [0, 0, 0] for s in CHAIN_STYLES}
    for V, style, seed, verify in chain_grid():
        t = chain_taus(V, style, seed, verify)
        a, b = t["treespark"], t["chain"]
        counts[style][0 if a > b else 1 if a < b else 2] += 1
    by = {s: "/".join(map(str, c)) for s, c in counts.items()}
    return Outcome(
        REFUTED,
        f"smallest: V={ce['V']} {ce['style']} seed {ce['seed']} wor+{ce['verify']}: tau {winner} {ce[winner]} > "
        f"{loser} {ce[loser]}; grid (treespark/chain/tie) per style: {by}",
        counterexample=ce,
        numbers={"by_style": by},
    )


CLAIMS = [
    Claim(
        "9.1",
        "treespark is lossless for every theta (identity and sigmoid calibrations, rrsw and traversal)",
        "slot-before-token lemma on every enumerated tree + exact TV = 0 on a seeded family",
        proved_up_to(SIZE),
        check_lossless,
    ),
    Claim(
        "9.2",
        "treespark-own-survival (admission by the child's own survival) is lossless at theta = 0",
        "exact round laws equal to the spec's on the same family",
        proved_up_to(SIZE),
        check_own_survival_theta0,
    ),
    Claim(
        "9.3",
        "treespark-own-survival is lossless for theta > 0",
        "exact TV on the family, smallest counterexample (fewest nodes, then smallest V)",
        REFUTED,
        refute_own_survival,
    ),
    Claim(
        "9.4",
        "treespark (theta 0) tau >= sampled chain tau at equal nodes, same verifier",
        "exact tau on a seeded grid (V=3,4; 4 styles; N=3), smallest counterexample",
        REFUTED,
        lambda: refute_chain(CE_94, "chain", "treespark"),
    ),
    Claim(
        "9.5",
        "sampled chain tau >= treespark (theta 0) tau at equal nodes, same verifier",
        "exact tau on a seeded grid (V=3,4; 4 styles; N=3), smallest counterexample",
        REFUTED,
        lambda: refute_chain(CE_95, "treespark", "chain"),
    ),
]
