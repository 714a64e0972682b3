"""Exact laws of the windows (x_{k−1}, x_k), k = 2..H, of a round-based decoder, by forward
composition: what the horizon tests of `rheo.lossless.horizon` compare with.

The joint law of the first H tokens has up to V^H outcomes; the law of one window has at most
V² (V^(L+1) work per step for models that see L tokens). A decoder is described by its *round
laws* (`RoundLaw`: (a context, the tokens still wanted) -> the law of what one round emits from it,
a pure function of the tokens the models see, `Case.visible`; the round law `rheo_ref.laws.compose`
takes). Unlike `compose`, which keeps whole prefixes for the joint law, this pass keeps only the
state a window needs, so its work is V² per step, not V^H. The composition carries a distribution over states
(tokens emitted so far m < H, visible context, last token) and, for each round from a state,
adds every emitted token at a position ≤ H to its window together with the token before it.

- `target_windows`: the windows of the target law p (the law of every lossless decoder): a
  round is one token drawn from p;
- `round_windows`: the windows of any decoder given its round laws (e.g. a mutant's exact
  counterpart, to state its exact TV per window);
- `windows_given_first_length`: for each length ℓ of the first round, the windows conditioned
  on it: the first round from the scheme's exact round law, restricted to length ℓ, then the
  rounds of `rest` (the target's for a lossless decoder).

All in exact `Fraction`s: the denominators grow with the horizon (one table row per step), which
at the gate's sizes (V = 4, H ≤ 16) costs milliseconds; `MAX_HORIZON` bounds it.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from fractions import Fraction

from rheo_ref.errors import CaseError
from rheo_ref.laws import Law, one_token_rounds
from rheo_ref.models import Case, Context

RoundLaw = Callable[[Context, int], Mapping[tuple[int, ...], Fraction]]  # (ctx, m tokens still wanted), as compose
Windows = dict[int, Law]  # k -> law of (x_{k-1}, x_k), k = 2..H
State = tuple[int, Context, int]  # (tokens emitted so far, visible context, last token)
MAX_HORIZON = 64
ONE = Fraction(1)


def check_horizon(horizon: object) -> int:
    """A horizon H: an integer with 2 <= H <= MAX_HORIZON (windows k = 2..H)."""
    if isinstance(horizon, bool) or not isinstance(horizon, int) or not 2 <= horizon <= MAX_HORIZON:
        raise CaseError(f"horizon={horizon!r} must be an integer with 2 <= horizon <= {MAX_HORIZON}")
    return horizon


def target_round(case: Case) -> RoundLaw:
    """The target as a decoder: one token from p(·|context) per round."""
    return one_token_rounds(case.target.row)


def _emit(
    windows: dict[int, dict], frontier: dict[int, dict], case: Case, state: State, s: tuple[int, ...], pr: Fraction
) -> None:
    """Add what one round emits (s, with probability pr) from `state` to the windows and the frontier."""
    m, ctx, last = state
    horizon = len(windows) + 1  # windows k = 2..H
    prev = last
    for i, x in enumerate(s, start=m + 1):
        if i > horizon:
            return
        if i >= 2:
            windows[i][(prev, x)] += pr
        prev = x
    if m + len(s) < horizon:
        nxt = (m + len(s), case.visible(ctx + s), s[-1])
        frontier[m + len(s)][nxt] += pr


def _compose(case: Case, rest: RoundLaw, horizon: int, windows: dict[int, dict], frontier: dict[int, dict]) -> Windows:
    """Play the rounds of `rest` from every state of the frontier, in order of tokens emitted."""
    for m in range(horizon):
        for state, pr in frontier.pop(m, {}).items():
            for s, ps in rest(state[1], horizon - m).items():
                if ps:
                    _emit(windows, frontier, case, state, s, pr * ps)
    return {k: dict(w) for k, w in windows.items()}


def _empty(horizon: int) -> tuple[dict[int, dict], dict[int, dict]]:
    return {k: defaultdict(Fraction) for k in range(2, horizon + 1)}, defaultdict(lambda: defaultdict(Fraction))


def round_windows(case: Case, rest: RoundLaw, horizon: int, first: RoundLaw | None = None) -> Windows:
    """Exact windows k = 2..H of the decoder whose rounds have laws `rest` (the first round `first`,
    default `rest`), starting from `case.context`."""
    horizon = check_horizon(horizon)
    windows, frontier = _empty(horizon)
    start = (0, case.visible(case.context), case.context[-1] if case.context else -1)
    for s, ps in (first or rest)(start[1], horizon).items():
        if ps:
            _emit(windows, frontier, case, start, s, ps)
    return _compose(case, rest, horizon, windows, frontier)


def target_windows(case: Case, horizon: int) -> Windows:
    """Exact windows k = 2..H of the target law p from `case.context`."""
    return round_windows(case, target_round(case), horizon)


def first_lengths(first_round: Mapping[tuple[int, ...], Fraction]) -> dict[int, Fraction]:
    """Law of the first round's length."""
    out: dict[int, Fraction] = defaultdict(Fraction)
    for s, pr in first_round.items():
        out[len(s)] += pr
    return dict(sorted(out.items()))


def windows_given_first_length(
    case: Case, first_round: Mapping[tuple[int, ...], Fraction], horizon: int, rest: RoundLaw | None = None
) -> dict[int, Windows]:
    """ℓ -> the exact windows k = 2..H conditioned on the first round emitting ℓ tokens: the first
    round drawn from `first_round` restricted to length ℓ, then rounds of `rest` (default: the
    target's, which every lossless decoder's continuation follows)."""
    rest = target_round(case) if rest is None else rest
    out = {}
    for ell, p_ell in first_lengths(first_round).items():
        if not p_ell:
            continue
        cond = {s: pr / p_ell for s, pr in first_round.items() if len(s) == ell}

        def given(ctx: Context, m: int, cond: Law = cond) -> Law:
            return cond

        out[ell] = round_windows(case, rest, horizon, first=given)
    return out
