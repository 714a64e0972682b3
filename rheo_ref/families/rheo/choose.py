"""What the rheo family predicts of its exact methods on a case, cheaply, for `rheo_ref.choose`
(docs/EXACT_AT_SCALE.md §11).

- `brute`: (V − m)^E trees per round, exactly; `classes`: its bound (`exact.estimate`);
- `dp`: a probe, the best-first construction of the first round's kept trees (no verification),
  stopped past PROBE_TREES: when it ends, dp's count is exact; when it does not, dp is past what
  a cheap estimate reaches (its kept trees grow like (V − m)^(expanded sampled nodes kept));
- `chain`: a probe, the chain's first depths built (`ChainRounds.probe`) up to CHAIN_PROBE_BRANCHES
  frontier splits: when it builds the whole chain, its size is counted; when it does not, the
  rest is extrapolated from the growth of the last depth it saw (a chain whose sampled children
  enter every frontier, each split into its V − m identities, grows like (V − m)^W per depth and
  is predicted not to finish). Its cost is set by the chain and the cut's band, not by R;
- `walk`: its bound, looked at only when no whole-round method applies (it gives the first N
  tokens, without τ).
Seconds are outcomes × a per-outcome rate measured on this project's 2-core machine, times the
rounds an N-token law needs (one per context as the models see it, at most).
"""

from __future__ import annotations

import math
from dataclasses import replace
from itertools import islice

from rheo_ref.choose import Cost
from rheo_ref.errors import CaseError
from rheo_ref.families.rheo.bestfirst import Plans, check_factors_at_most_one, kept_trees
from rheo_ref.families.rheo.chain import ChainRounds
from rheo_ref.families.rheo.exact import estimate
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.models import Case
from rheo_ref.sizes import Size, law_outcomes

PROBE_TREES = 2_000  # dp's probe: about 0.1-0.5 s of best-first construction
# seconds per outcome, measured on this project's 2-core machine (docs/EXACT_AT_SCALE.md §11)
BRUTE_PER_NODE = 1e-4  # a brute-force tree, per node of the round
CLASSES_PER_NODE = 1e-4
DP_PER_TREE = 2.5e-4  # a kept tree, built and verified
WALK_PER_OUTCOME = 1e-3
CHAIN_PER_BRANCH = 2.5e-4  # a frontier split of the chain, built, searched for the band and walked
CHAIN_PROBE_BRANCHES = 50_000  # chain's probe: about 0.1-1.3 s of building the chain's first depths
FALLBACK = ("chain", "dp", "classes", "brute", "walk")  # when nothing is predicted


def rounds(case: Case, n: int) -> int:
    """Round laws an n-token law needs at most: one per context it reaches, as the models see it."""
    reached = law_outcomes(case, n - 1)[0] if n > 1 else Size.of(1)
    prefixes = 1 + (reached.exact if reached.exact is not None else 10**15) * (n - 1)  # every proper prefix
    contexts = sum(case.vocab_size**k for k in range(min(case.sees, 12) + 1))
    return max(1, min(prefixes, contexts))


def seconds(size: Size, rate: float, times: int) -> float:
    lg = size.log10 + math.log10(rate * times)
    return math.inf if lg > 300 else 10**lg


def costs(case: Case, n: int, max_trees: int | None) -> list[Cost]:
    """The family's `Cost`s of `case`'s n-token law (module docstring)."""
    s = case.scheme_as(Scheme)
    limit = math.inf if max_trees is None else max_trees
    times = rounds(case, n)
    out = []
    for method, rate in (("brute", BRUTE_PER_NODE * s.nodes), ("classes", CLASSES_PER_NODE * s.nodes)):
        size = estimate(case, method)
        out.append(Cost(method, seconds(size, rate, times), size <= limit, f"{size} trees a round, {times} round(s)"))
    try:
        check_factors_at_most_one(case)
    except CaseError as e:
        return [*out, Cost("dp", None, False, f"refused: {e}"), Cost("chain", None, False, f"refused: {e}")]
    probe = sum(1 for _ in islice(kept_trees(case, case.context, Plans(case)), PROBE_TREES + 1))
    if probe <= PROBE_TREES:
        out.append(
            Cost(
                "dp",
                seconds(Size.of(probe), DP_PER_TREE, times),
                probe <= limit,
                f"{probe:,} kept trees in the first round (probe), {times} round(s)",
            )
        )
    else:
        out.append(
            Cost(
                "dp",
                None,
                PROBE_TREES < limit,
                f"more than {PROBE_TREES:,} kept trees in the first round (probe stopped)",
            )
        )
    out.append(chain_cost(case, times, limit))
    if any(c.fits for c in out):  # walk's bound is not worked out: it would give less (no τ)
        return [*out, Cost("walk", None, True, "not estimated: it gives the first N tokens only (no τ)", whole=False)]
    return [*out, walk_cost(case, n, max_trees)]


def chain_cost(case: Case, times: int, limit: float) -> Cost:
    """chain's cost from its probe (`ChainRounds.probe`, stopped past CHAIN_PROBE_BRANCHES): the
    chain's branches (the frontier splits it builds, its work and memory) and distinct frontiers,
    counted when the probe builds the whole chain, else extrapolated from the depths it built; the
    seconds at CHAIN_PER_BRANCH. It fits when its frontiers are within the limit."""
    probe = ChainRounds(case).probe(case.context, CHAIN_PROBE_BRANCHES)
    branches, frontiers = probe.predicted()
    built = len(probe.branches) - (0 if probe.complete else 1)
    how = (
        "the whole chain built (probe)"
        if probe.complete
        else f"extrapolated from the first {built} of {probe.splits} depths' splits (probe stopped)"
    )
    return Cost(
        "chain",
        branches * CHAIN_PER_BRANCH * times,
        frontiers <= limit,
        f"{branches:.3g} frontier splits and {frontiers:.3g} frontiers in the first round, {how}, {times} round(s)",
    )


def walk_cost(case: Case, n: int, max_trees: int | None) -> Cost:
    """walk's bound (only the first n tokens; no τ)."""
    size = estimate(replace(case, tokens=n), "walk")
    limit = math.inf if max_trees is None else max_trees
    return Cost(
        "walk",
        seconds(size, WALK_PER_OUTCOME, 1),
        size <= limit,
        f"at most {size} shallow trees and deep frontiers (the first {n} token(s) only, no τ)",
        whole=False,
    )
