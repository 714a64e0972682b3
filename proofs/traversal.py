"""Claim 6 -- Traversal Verification against the token-level verifiers (docs/SCHEMES.md §2, §10).

6.1 Depth 1: on every depth-1 tree, `traversal` emits exactly the law `specinfer` emits (iid
    siblings) and `rrsw` emits (wor siblings). PROVED UP TO SIZE V <= 3, k <= 3 children.
    Argument: with the root as the only inner node, post-order visits the root's children in
    draw order; the root's rate stays 1, so a child's rate is min(1, Mb(x)/Ms(x)), Traversal's
    update is R = (Mb - Ms)+, Mb <- R/ΣR, Ms loses x (wor) or stays (iid): that is the token-level
    state (r, s) and step; an accepted leaf emits its token and y ~ p(.|c, x) in both; when every
    child is gone both draw the bonus from the residual. Machine check: rheo_ref's own code
    (`traversal_law`, `topdown_law`) run by symbolic execution (proofs/symbolic.py) on symbolic
    rows, every feasible branch of its comparisons (z3, nonlinear reals): for every tree of
    k <= 3 children (token tuples up to relabelling), V = 2 with every zero pattern of the root's
    p and of the root's q off the drawn tokens, V = 3 with positive rows (child rows generic), the
    two laws are equal as rational functions on every branch. The argument covers every size;
    the check is bounded.

6.2 Chain: `traversal` on a chain is Block Verification (Sun et al., arXiv 2403.10444, Alg. 2,
    written out below from the paper, independently of rheo_ref): the same law of the emitted
    sequence. PROVED UP TO SIZE V = 2, chains of length <= 3 (symbolic execution as in 6.1, a
    positive generic row per context, i.e. every such table; V = 3 passes at length 2 on an idle
    machine but z3's nonlinear checks then take minutes under load), and exactly equal on seeded
    first-order tables up to V = 4 and chains of length 4 (evidence, not proof). Argument: the
    leaf's rate is p_γ; rejecting it
    sets the parent's rate to S/(S + 1 - p_i) = h_i and Mb to the block residual, so Traversal
    accepts X^i with prob h_i ∏_{j>i}(1 - h_j), Block Verification's law of τ. Also the paper's
    motivating example: context-free V = 2, Mb = (1/3, 2/3), Ms = (2/3, 1/3), γ = 2: expected
    accepted draft tokens 10/9 (token level) and 11/9 (block).

6.3 Sampled chain, averaged over the draws: τ_traversal >= τ_specinfer. PROVED UP TO SIZE:
    symbolically (every context-free V = 2 table, chains of length <= 3), and exactly on every
    context-free V = 3 table with denominators <= 2, chains <= 3. In general this is the paper's
    optimality theorem for Block Verification (with 6.2).

6.4 For one fixed drawn chain: τ_traversal >= τ_specinfer. REFUTED. Smallest (V = 2,
    context-free, common denominator 3, chain of 2; length 1 is 6.1): q = (1/3, 2/3),
    p = (1/2, 1/2), chain 1 -> 1: traversal 35/16 < specinfer 37/16. Both accept the whole chain
    w.p. 9/16; after the leaf is rejected Traversal keeps the first token only w.p. 1/7 (rate
    S/(S + 1 - 3/4), S = 1/24), 1/16 in all, against specinfer's 3/16. The draws where the first
    token is 0 pay it back (6.3).

6.5 On every tree, averaged over the draws (fixed shape and tables): τ_traversal >= τ of the
    token-level verifier (specinfer or rrsw for iid, rrsw for wor). REFUTED (the paper proves it
    for chains only). Smallest found (V = 2, context-free, by common denominator, every shape
    with <= 4 nodes): shape parents (0, 1, 1, 3) (root -> a; a -> b, c; c -> d), wor:
    q = (1/3, 2/3), p = (1/2, 1/2): traversal 74/27 < rrsw 601/216; iid: q = (1/3, 2/3),
    p = (1/4, 3/4): traversal 923/324 < specinfer 7399/2592 (= rrsw). Per draw (wor case):
    traversal loses where a and its first child b both hold the over-proposed token 1
    (q = 2/3 > p = 1/2). Both verifiers accept a -> b with prob 9/16; but once the leaf b is
    rejected, traversal's rate at a falls to S/(S + 1 - 3/4) = 1/7 (S = 1/24), and the sibling
    chain c -> d is entered at that rate, while the token-level verifier had accepted a w.p. 3/4
    on its own and then accepts c (the residual at a is all on token 0) for sure. Where b holds
    token 0 traversal gains (3 against 5/2 tokens), on less likely draws. No counterexample has
    <= 3 nodes (checked: V = 2, context-free, denominators <= 4, all three pairings).
"""

from __future__ import annotations

import random
from collections import defaultdict
from fractions import Fraction
from itertools import combinations, permutations, product
from typing import Any

from rheo_ref.exact import Exact
from rheo_ref.families.static.exact import brute_round_law
from rheo_ref.families.static.scheme import StaticScheme, shape_of
from rheo_ref.models import Case, TableModel
from rheo_ref.verifier_laws import DraftTree, topdown_law, traversal_law, verify_tree_law

from ._claim import REFUTED, Claim, Outcome, proved_up_to, require
from .gen import random_pair
from .symbolic import Explorer, SymTable, value

ZERO, ONE = Fraction(0), Fraction(1)
TOKEN_LEVEL = {"iid": "specinfer", "wor": "rrsw"}
Law = dict[tuple[int, ...], Any]


def tau_of(law: Law) -> Any:
    return sum((len(s) * pr for s, pr in law.items()), ZERO)


# --- 6.1: depth 1 -------------------------------------------------------------------------------


def _subsets(xs) -> list[tuple[int, ...]]:
    xs = list(xs)
    return [c for k in range(len(xs) + 1) for c in combinations(xs, k)]


def depth1_instances(V: int, kmax: int) -> list[tuple[str, tuple[int, ...], tuple[int, ...], tuple[int, ...]]]:
    """(sampling, tokens, zeros of the root's p, zeros of the root's q), one per class of
    relabellings of the vocabulary (child rows are generic, so relabelling is a symmetry)."""
    out = []
    perms = list(permutations(range(V)))
    for sampling in ("iid", "wor"):
        for k in range(1, kmax + 1):
            for toks in product(range(V), repeat=k):
                if sampling == "wor" and len(set(toks)) < k:
                    continue
                for zp in _subsets(range(V)):
                    if len(zp) == V:
                        continue
                    for zq in _subsets(t for t in range(V) if t not in toks):
                        key = (toks, zp, zq)
                        canon = min(
                            (
                                tuple(pi[t] for t in toks),
                                tuple(sorted(pi[t] for t in zp)),
                                tuple(sorted(pi[t] for t in zq)),
                            )
                            for pi in perms
                        )
                        if canon == key:
                            out.append((sampling, toks, zp, zq))
    return out


def symbolic_depth1(
    V: int,
    sampling: str,
    toks: tuple[int, ...],
    zp: tuple[int, ...],
    zq: tuple[int, ...],
    *,
    traversal_update: str | None = None,
) -> int:
    """Every branch of traversal and the token-level verifier on one depth-1 tree: equal laws.
    Returns the number of branches. `traversal_update` (default: `sampling`) is the Ms update
    traversal uses: the other mode's is a known lossy variant, the negative control."""
    kids = sorted(set(toks))
    names = Explorer.simplex_names("p", V, zp) + Explorer.simplex_names("q", V, zq)
    for x in kids:
        names += Explorer.simplex_names(f"c{x}", V)
    ex = Explorer(names)
    p, q = ex.simplex("p", V, zp), ex.simplex("q", V, zq)
    P = SymTable({(): p, **{(x,): ex.simplex(f"c{x}", V) for x in kids}}, 1, V, "target")
    Q = SymTable({(): q, **{(x,): q for x in kids}}, 1, V, "draft")  # a leaf's q row is never read
    tree = DraftTree((0,) * len(toks), toks)
    token_level = TOKEN_LEVEL[sampling]
    n = 0
    update = traversal_update or sampling
    both = lambda: (traversal_law(tree, P, Q, (), update), topdown_law(tree, P, Q, (), token_level))
    for (lt, ls), path in ex.paths(both):
        n += 1
        for seq in set(lt) | set(ls):
            d = value(lt.get(seq, ZERO), ex) - value(ls.get(seq, ZERO), ex)
            require(
                ex.holds(path, d, "=="),
                f"depth 1, V={V} {sampling} tokens {toks} zeros p{zp} q{zq}: "
                f"traversal and {token_level} differ at {seq} on a branch",
            )
    return n


MAX_V1, MAX_K1 = 3, 3


def check_61() -> Outcome:
    trees = branches = 0
    for V in range(2, MAX_V1 + 1):  # V = 1: one token, nothing to decide
        for sampling, toks, zp, zq in depth1_instances(V, MAX_K1):
            if V > 2 and (zp or zq):
                continue  # zero patterns at V = 2 only (V = 3: 5 s more)
            branches += symbolic_depth1(V, sampling, toks, zp, zq)
            trees += 1
    return Outcome(
        proved_up_to(f"V={MAX_V1}, k={MAX_K1}"),
        f"bisimulation argument; symbolic execution of rheo_ref's traversal_law and topdown_law on {trees} "
        f"depth-1 trees (k<={MAX_K1}, up to relabelling; V=2 with every zero pattern, V=3 positive rows): "
        f"equal laws on all {branches} z3-feasible branches",
        numbers={"trees": trees, "branches": branches},
    )


# --- 6.2: chain = Block Verification ---------------------------------------------------------------


def block_verification_law(tokens: tuple[int, ...], p, q, context: tuple[int, ...] = ()) -> Law:
    """Block Verification (Sun et al. 2024, Alg. 2) on the draft block X^γ = tokens, as a law.

    p_0 = 1; p_i = min(1, p_{i-1} Mb(X_i|X^{i-1}) / Ms(X_i|X^{i-1}));
    h_i = ΣR_i / (ΣR_i + 1 - p_i) with R_i = (p_i Mb(.|X^i) - Ms(.|X^i))+ for i < γ, h_γ = p_γ;
    τ = the largest i with η_i <= h_i (η_i uniform, h_0 = 1), so P(τ = i) = h_i ∏_{j>i} (1 - h_j);
    then Y ~ R_τ / ΣR_τ (τ < γ) or Mb(.|X^γ) (τ = γ). Output X^τ, Y."""
    g = len(tokens)
    ctx = [tuple(context) + tuple(tokens[:i]) for i in range(g + 1)]
    pw = [ONE]
    for i in range(1, g + 1):
        x = tokens[i - 1]
        pw.append(min(ONE, pw[i - 1] * p.row(ctx[i - 1])[x] / q.row(ctx[i - 1])[x]))
    h, res = {}, {}
    for i in range(g):
        R = [max(ZERO, pw[i] * b - s) for b, s in zip(p.row(ctx[i]), q.row(ctx[i]))]
        S = sum(R, ZERO)
        h[i] = S / (S + 1 - pw[i]) if S else ZERO
        res[i] = [r / S for r in R] if S else None
    h[0] = ONE
    h[g] = pw[g]
    out: Law = defaultdict(lambda: ZERO)
    later = ONE  # ∏_{j>i} (1 - h_j)
    for i in range(g, -1, -1):
        stop = h[i] * later
        if stop:
            row = p.row(ctx[g]) if i == g else res[i]
            for y, ry in enumerate(row):
                if ry:
                    out[tuple(tokens[:i]) + (y,)] += stop * ry
        later = later * (1 - h[i])
        if not later:
            break
    return dict(out)


def symbolic_chain_equivalence(V: int, g: int) -> int:
    """Every branch of traversal and Block Verification on a chain of length g, a generic row
    per context (tokens all 0: each context's rows are relabelled independently). Branch count."""
    ctxs = [(0,) * i for i in range(g + 1)]
    names = [n for i in range(g + 1) for n in Explorer.simplex_names(f"p{i}", V)]
    names += [n for i in range(g) for n in Explorer.simplex_names(f"q{i}", V)]
    ex = Explorer(names)
    P = SymTable({c: ex.simplex(f"p{i}", V) for i, c in enumerate(ctxs)}, g, V, "target")
    uniform = tuple(Fraction(1, V) for _ in range(V))  # the leaf's q row: never read
    Q = SymTable({c: (ex.simplex(f"q{i}", V) if i < g else uniform) for i, c in enumerate(ctxs)}, g, V, "draft")
    tree = DraftTree(tuple(range(g)), (0,) * g)
    n = 0
    both = lambda: (traversal_law(tree, P, Q, (), "iid"), block_verification_law((0,) * g, P, Q))
    for (lt, lb), path in ex.paths(both):
        n += 1
        for seq in set(lt) | set(lb):
            d = value(lt.get(seq, ZERO), ex) - value(lb.get(seq, ZERO), ex)
            require(
                ex.holds(path, d, "=="), f"chain V={V} length {g}: traversal and Block Verification differ at {seq}"
            )
    return n


CHAIN_SIZES = ((2, 2), (2, 3))  # V = 3, length 2: 5 s on an idle machine, z3 times out under load
CHAIN_SIZE = "V=2, chain length 3"
BV_EXAMPLE = {
    "q": ["2/3", "1/3"],
    "p": ["1/3", "2/3"],
    "chain": 2,
    "accepted_token_level": "10/9",
    "accepted_block": "11/9",
}


def one_row(row, name: str) -> TableModel:
    return TableModel(len(row), 0, {"": tuple(Fraction(x) for x in row)}, name)


def sampled_chain_tau(q: TableModel, p: TableModel, g: int, verify: str) -> Fraction:
    return Exact(Case(q, p, StaticScheme("branching", (1,) * g, "iid", verify), (), 1), "classes").tau()


def random_chains_agree(n: int = 150, seed: int = 62) -> int:
    """traversal_law == block_verification_law exactly on seeded first-order tables (V <= 4,
    zeros allowed) and random drawable chains of length <= 4."""
    rng = random.Random(seed)
    done = 0
    while done < n:
        V = rng.randint(2, 4)
        q, p = random_pair(rng, V, 1, style=rng.choice(["uniform", "close", "zipf"]))
        toks: list[int] = []
        ctx = (rng.randrange(V),)
        for _ in range(rng.randint(1, 4)):
            row = q.row(ctx + tuple(toks))
            toks.append(rng.choice([x for x in range(V) if row[x]]))
        tree = DraftTree(tuple(range(len(toks))), tuple(toks))
        lt = verify_tree_law(tree, p, q, verify="traversal", sampling="iid", context=ctx)
        lb = block_verification_law(tuple(toks), p, q, ctx)
        require(
            lt == {k: v for k, v in lb.items() if v},
            f"chain {toks} from {ctx}: traversal != Block Verification on q={q.probs} p={p.probs}",
        )
        done += 1
    return done


def check_62() -> Outcome:
    branches = {f"V={V},len={g}": symbolic_chain_equivalence(V, g) for V, g in CHAIN_SIZES}
    n = random_chains_agree()
    e = BV_EXAMPLE
    q, p = one_row(e["q"], "draft"), one_row(e["p"], "target")
    got = (sampled_chain_tau(q, p, e["chain"], "specinfer") - 1, sampled_chain_tau(q, p, e["chain"], "traversal") - 1)
    require(
        tuple(map(str, got)) == (e["accepted_token_level"], e["accepted_block"]),
        f"the Block Verification paper's example gives {got}, not 10/9 and 11/9",
    )
    return Outcome(
        proved_up_to(CHAIN_SIZE),
        f"symbolic execution, traversal_law vs Block Verification (Alg. 2), a generic row per context: "
        f"equal laws on every branch ({', '.join(f'{k}: {v}' for k, v in branches.items())}); exactly equal "
        f"on {n} seeded first-order V<=4 tables x chains <= 4; the paper's example: accepted draft tokens "
        f"10/9 (token level), 11/9 (block = traversal)",
        numbers={"branches": branches, "random_chains": n},
    )


# --- 6.3: sampled chain, averaged -------------------------------------------------------------------


class _SymCase:
    """What `brute_round_law` reads of a static case: the scheme, q_samp and the target."""

    def __init__(self, p: SymTable, q: SymTable, scheme: StaticScheme) -> None:
        self.target, self.q_samp_model, self._scheme = p, q, scheme

    def static_scheme(self) -> StaticScheme:
        return self._scheme


def symbolic_chain_average(V: int, g: int) -> int:
    """Every branch: E τ(traversal) - E τ(specinfer) >= 0 over the draws of a sampled chain,
    context-free generic rows. Branch count."""
    ex = Explorer(Explorer.simplex_names("p", V) + Explorer.simplex_names("q", V))
    P = SymTable({(): ex.simplex("p", V)}, 0, V, "target")
    Q = SymTable({(): ex.simplex("q", V)}, 0, V, "draft")
    cases = [_SymCase(P, Q, StaticScheme("branching", (1,) * g, "iid", v)) for v in ("traversal", "specinfer")]
    n = 0
    for (lt, ls), path in ex.paths(lambda: tuple(brute_round_law(c, ())[0] for c in cases)):
        n += 1
        d = value(tau_of(lt), ex) - value(tau_of(ls), ex)
        require(ex.holds(path, d, ">="), f"sampled chain V={V} length {g}: E tau traversal < specinfer on a branch")
    return n


def grid_rows(V: int, d: int) -> list[tuple[Fraction, ...]]:
    """Every probability row over V tokens whose entries have denominators dividing some k <= d."""
    rows = set()
    for k in range(1, d + 1):
        for w in product(range(k + 1), repeat=V):
            if sum(w) == k:
                rows.add(tuple(Fraction(x, k) for x in w))
    return sorted(rows)


GRID_D = 2


def check_63() -> Outcome:
    sym = {f"V=2,len={g}": symbolic_chain_average(2, g) for g in (2, 3)}
    cases = 0
    worst = None
    for q_row, p_row in product(grid_rows(3, GRID_D), repeat=2):
        q, p = one_row(q_row, "draft"), one_row(p_row, "target")
        for g in (2, 3):
            a, b = sampled_chain_tau(q, p, g, "traversal"), sampled_chain_tau(q, p, g, "specinfer")
            require(a >= b, f"sampled chain: traversal {a} < specinfer {b} on q={q_row} p={p_row} length {g}")
            worst = a - b if worst is None else min(worst, a - b)
            cases += 1
    return Outcome(
        proved_up_to(f"V=2 symbolic, V=3 denominators {GRID_D}, chain length 3"),
        f"symbolic execution of brute_round_law (every context-free V=2 table, {sym}); exact on {cases} "
        f"context-free V=3 tables x lengths 2-3 (denominators <= {GRID_D}): min gap {worst}",
        numbers={"symbolic_branches": sym, "grid_cases": cases},
    )


# --- 6.4: one fixed chain ------------------------------------------------------------------------

CE_64 = {"q": ["1/3", "2/3"], "p": ["1/2", "1/2"], "chain": [1, 1], "tau_traversal": "35/16", "tau_specinfer": "37/16"}


def fixed_chain_taus(q_row, p_row, toks) -> tuple[Fraction, Fraction]:
    q, p = one_row(q_row, "draft"), one_row(p_row, "target")
    tree = DraftTree(tuple(range(len(toks))), tuple(toks))
    return tuple(tau_of(verify_tree_law(tree, p, q, verify=v, sampling="iid")) for v in ("traversal", "specinfer"))


def fixed_chain_counterexamples(d: int) -> list:
    """V = 2, context-free rows with denominators <= d, chains of 2: where traversal emits less."""
    out = []
    for q_row, p_row in product(grid_rows(2, d), repeat=2):
        for toks in product(range(2), repeat=2):
            if all(q_row[t] for t in toks):
                a, b = fixed_chain_taus(q_row, p_row, toks)
                if a < b:
                    out.append((q_row, p_row, toks))
    return out


def check_64() -> Outcome:
    a, b = fixed_chain_taus(CE_64["q"], CE_64["p"], CE_64["chain"])
    require((str(a), str(b)) == (CE_64["tau_traversal"], CE_64["tau_specinfer"]), f"recorded chain moved: {a}, {b}")
    require(not fixed_chain_counterexamples(2), "a fixed-chain counterexample with denominators <= 2 exists")
    return Outcome(
        REFUTED,
        f"q={CE_64['q']} p={CE_64['p']} (context-free), chain {CE_64['chain']}: traversal {a} < "
        f"specinfer {b}; none with denominators <= 2; in expectation over the draws 6.3 holds",
        counterexample=CE_64,
    )


# --- 6.5: every tree ------------------------------------------------------------------------------

CE_65 = {
    "wor": {
        "parents": [0, 1, 1, 3],
        "sampling": "wor",
        "token_level": "rrsw",
        "q": ["1/3", "2/3"],
        "p": ["1/2", "1/2"],
        "tau_traversal": "74/27",
        "tau_token_level": "601/216",
    },
    "iid": {
        "parents": [0, 1, 1, 3],
        "sampling": "iid",
        "token_level": "specinfer",
        "q": ["1/3", "2/3"],
        "p": ["1/4", "3/4"],
        "tau_traversal": "923/324",
        "tau_token_level": "7399/2592",
    },
}
PAIRINGS = (("iid", "specinfer"), ("iid", "rrsw"), ("wor", "rrsw"))


def shapes_with(n: int) -> list[tuple[int, ...]]:
    """One `parents` list per ordered tree shape with n draft nodes."""
    seen: dict = {}
    for ps in product(*[range(i + 1) for i in range(n)]):
        seen.setdefault(shape_of(ps), ps)
    return list(seen.values())


def tree_taus(parents, sampling: str, token_level: str, q_row, p_row) -> tuple[Fraction, Fraction]:
    q, p = one_row(q_row, "draft"), one_row(p_row, "target")
    run = lambda v: Exact(Case(q, p, StaticScheme("parents", tuple(parents), sampling, v), (), 1), "classes").tau()
    return run("traversal"), run(token_level)


def tree_counterexamples(n: int, d: int, pairings=PAIRINGS) -> list:
    out = []
    rows = grid_rows(2, d)
    for ps in shapes_with(n):
        for q_row, p_row in product(rows, repeat=2):
            for sampling, tl in pairings:
                a, b = tree_taus(ps, sampling, tl, q_row, p_row)
                if a < b:
                    out.append((ps, sampling, tl, q_row, p_row))
    return out


def check_65() -> Outcome:
    for ce in CE_65.values():
        a, b = tree_taus(ce["parents"], ce["sampling"], ce["token_level"], ce["q"], ce["p"])
        require(
            (str(a), str(b)) == (ce["tau_traversal"], ce["tau_token_level"]), f"recorded tree moved: {ce} -> {a}, {b}"
        )
    small = [c for n in (1, 2, 3) for c in tree_counterexamples(n, 4)]
    require(not small, f"a counterexample with <= 3 nodes exists: {small[:1]}")
    require(not tree_counterexamples(4, 2), "a 4-node counterexample with denominators <= 2 exists")
    require(
        not tree_counterexamples(4, 3, (("iid", "specinfer"), ("iid", "rrsw"))),
        "an iid 4-node counterexample with denominators <= 3 exists",
    )
    w, i = CE_65["wor"], CE_65["iid"]
    return Outcome(
        REFUTED,
        f"parents {w['parents']} (V=2, context-free): wor q={w['q']} p={w['p']}: traversal "
        f"{w['tau_traversal']} < rrsw {w['tau_token_level']}; iid q={i['q']} p={i['p']}: traversal "
        f"{i['tau_traversal']} < specinfer {i['tau_token_level']}; none with <= 3 nodes "
        f"(denominators <= 4), none smaller for 4 nodes",
        counterexample=CE_65,
    )


CLAIMS = [
    Claim(
        "6.1",
        "depth 1: traversal emits exactly the law of specinfer (iid) / rrsw (wor)",
        "bisimulation + symbolic execution of rheo_ref (sympy field, z3 branches)",
        proved_up_to(f"V={MAX_V1}, k={MAX_K1}"),
        check_61,
    ),
    Claim(
        "6.2",
        "chain: traversal is Block Verification (same law), the paper's 10/9 vs 11/9",
        "symbolic execution against Alg. 2 of Sun et al.",
        proved_up_to(CHAIN_SIZE),
        check_62,
    ),
    Claim(
        "6.3",
        "sampled chain, averaged over the draws: tau traversal >= specinfer",
        "symbolic execution (V=2) + exact grid (V=3)",
        proved_up_to(f"V=2 symbolic, V=3 denominators {GRID_D}, chain length 3"),
        check_63,
    ),
    Claim(
        "6.4",
        "one fixed drawn chain: tau traversal >= specinfer",
        "exhaustive search by denominator",
        REFUTED,
        check_64,
    ),
    Claim(
        "6.5",
        "every tree, averaged over the draws: tau traversal >= token-level verifier",
        "exhaustive search (V=2, context-free, by denominator and node count)",
        REFUTED,
        check_65,
    ),
]
