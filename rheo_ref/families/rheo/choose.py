"""What the rheo family predicts of its exact methods on a case, cheaply, for `rheo_ref.choose`
(docs/EXACT_AT_SCALE.md §11).

- `brute`: (V − m)^E trees per round, exactly; `classes`: its bound (`exact.estimate`);
- `dp`: a probe, the best-first construction of the first round's kept trees (no verification),
  stopped past PROBE_TREES: when it ends, dp's count is exact; when it does not, dp is past what
  a cheap estimate reaches (its kept trees grow like (V − m)^(expanded sampled nodes kept));
- `chain`: not predicted up front (its frontiers are what it discovers), but its cost is set by
  the chain and the cut's band, not by R: the method to take when dp's probe does not end;
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
from rheo_ref.families.rheo.exact import estimate
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.models import Case
from rheo_ref.sizes import Size, law_outcomes

PROBE_TREES = 2_000  # dp's probe: about 0.1-0.5 s of best-first construction
# seconds per outcome (tests/bench/test_choose_bench.py measures them)
BRUTE_PER_NODE = 1e-4  # a brute-force tree, per node of the round
CLASSES_PER_NODE = 1e-4
DP_PER_TREE = 2.5e-4  # a kept tree, built and verified
WALK_PER_OUTCOME = 1e-3
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
    out.append(
        Cost(
            "chain",
            None,
            True,
            f"whole rounds over the frontier chain, its cost set by the chain and the cut, not by R "
            f"(not predicted up front), {times} round(s)",
        )
    )
    if any(c.fits for c in out):  # walk's bound is not worked out: it would give less (no τ)
        return [*out, Cost("walk", None, True, "not estimated: it gives the first N tokens only (no τ)", whole=False)]
    return [*out, walk_cost(case, n, max_trees)]


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
