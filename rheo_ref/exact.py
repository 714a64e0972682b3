"""Exact results of a decoding scheme (docs/ALGORITHM.md §6-§7), all as `Fraction`s.

- `round_law`: law of the tokens emitted by one round from a context;
- `token_law`: law of the first n tokens, composing rounds (each continues from the context
  extended by what the previous one emitted) by `rheo_ref.laws.compose`: forward over prefixes,
  not a recursion per round, so n is limited by the law's size (`rheo_ref.sizes.law_outcomes`),
  not the stack;
- `target_law`: p(s_1..s_n) = prod p(s_i | c, s_<i), the same way;
- `tv`, `tau`, `round_lengths`, `acceptance`.
Every family gets its round laws from its own folder, through the registry (`rheo_ref.family`:
`Family.rounds`, under a variant's settings, `variant=`: the spec by default, or one of the
family's mutants); the composition of rounds and everything computed from them is shared.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from fractions import Fraction
from typing import Any

from rheo_ref.choose import Choice, choose_method
from rheo_ref.errors import CaseError
from rheo_ref.family import RoundLaws, family_of
from rheo_ref.laws import Law, compose, one_token_rounds, tv
from rheo_ref.models import Case, Context, Row
from rheo_ref.parallel import SERIAL, Parallel
from rheo_ref.sizes import Size, law_outcomes
from rheo_ref.validate import check_context, index, within_limit
from rheo_ref.variants import SPEC, Variant, variant_named

ZERO = Fraction(0)
# what a family's `rounds` is asked for (a family may run one for another)
METHODS = ("dp", "classes", "brute", "walk", "chain")
DEFAULT_MAX_TREES = 2_000_000
DEFAULT_MAX_LAW_SIZE = 10_000_000  # tokens in all the sequences of an n-token law (b^n sequences x n)


@dataclass
class Counter:
    """How many trees the enumerator produced (over every round law it computed)."""

    enumerated: int = 0
    rounds: int = 0


def memo_key(case: Case, context: Context) -> Context:
    return case.visible(context)


class Exact:
    """Exact computations for one case, memoising round laws by the context the models can see
    (a round's law is a pure function of it: the per-context round-law cache). The round laws
    come from the case's family (`rheo_ref.family`): `rounds(case, method, ...)`, checked up
    front against its `estimate`; everything here composes them. `parallel` (rheo_ref.parallel)
    is handed to a family that can cut a round into parts (`Family.takes_parallel`)."""

    def __init__(
        self,
        case: Case,
        method: str = "classes",
        *,
        max_trees: int | None = DEFAULT_MAX_TREES,
        progress: Callable[[int], None] | None = None,
        rules: Any = None,
        variant: Variant = SPEC,
        parallel: Parallel = SERIAL,
    ) -> None:
        if method not in METHODS:
            raise CaseError(f"unknown method {method!r}; allowed: {', '.join(METHODS)}")
        if case.constraint is not None:
            raise CaseError(
                "this case carries a constraint; a scheme's exact law is unconstrained (the schemes do not mask "
                "their rows), so only the masked target law is defined for it (rheo.target_law, the gate)"
            )
        self.variant = variant
        self.case, self.method = case, method
        self.counter = Counter()
        self._rounds: dict[Context, Law] = {}
        self._cut: dict[tuple[Context, int], Law] = {}  # round laws up to a horizon (method walk)
        self._progress = progress
        family = family_of(case.scheme)
        variant.check_family(family.name)
        if rules is not None and not family.takes_rules:
            raise CaseError(
                f"verification rules (a family's mutants as functions) do not apply to the {family.name} family"
            )
        extra = {"parallel": parallel} if family.takes_parallel and parallel is not SERIAL else {}
        self._laws: RoundLaws = self._round_laws(
            family, method, rules=rules, max_trees=max_trees, progress=progress, **extra
        )
        within_limit(
            family.estimate_what(case, self._laws.method),
            family.estimate(case, self._laws.method, variant),
            max_trees,
            override=f"use {'--method classes, ' if method == 'brute' else ''}a smaller scheme, a larger "
            f"--max-trees, or --force to run anyway",
        )

    def _round_laws(self, family: Any, method: str, **kw: Any) -> RoundLaws:
        """The family's round laws (a mutant's exact counterpart may build its own)."""
        if kw.get("rules") is None:
            kw.pop("rules")
        out: RoundLaws = family.rounds(self.case, method, variant=self.variant, **kw)
        return out

    def round_law(self, context: Context | None = None) -> Law:
        ctx = self.case.context if context is None else tuple(context)
        key = memo_key(self.case, ctx)
        if key not in self._rounds:
            before = self._laws.enumerated
            self._rounds[key] = self._laws.round_law(ctx)
            self.counter.enumerated += self._laws.enumerated - before
            self.counter.rounds += 1
            if self._progress is not None and not getattr(self._laws, "reports_progress", False):
                self._progress(self._laws.enumerated - before)
        return self._rounds[key]

    @property
    def cuts(self) -> bool:
        """Whether the round laws come up to a horizon (`walk`): a law of n tokens then needs the
        rounds only up to n tokens, and a sequence that goes on past it ends with `MORE` (-1)."""
        return bool(getattr(self._laws, "takes_horizon", False))

    def round_law_to(self, context: Context | None, horizon: int) -> Law:
        """The round law from `context` cut at `horizon` tokens when the method can (`cuts`), else
        the whole round law (whose sequences past the horizon the caller cuts itself)."""
        if not self.cuts:
            return self.round_law(context)
        ctx = self.case.context if context is None else tuple(context)
        key = (memo_key(self.case, ctx), horizon)
        if key not in self._cut:
            before = self._laws.enumerated
            self._cut[key] = self._laws.round_law(ctx, horizon)  # type: ignore[call-arg]
            self.counter.enumerated += self._laws.enumerated - before
            self.counter.rounds += 1
        return self._cut[key]

    stop: int | None = (
        None  # a token that ends decoding when a round ends with it (compose's `stop`): the spec never stops
    )

    def token_law(self, n: int | None = None, context: Context | None = None) -> Law:
        """Law of the first n tokens produced by repeated rounds (`rheo_ref.laws.compose`)."""
        n = self.case.tokens if n is None else n
        ctx = self.case.context if context is None else tuple(context)
        return compose(self.round_law_to, ctx, n, stop=self.stop, sees=self.case.sees)

    def round_lengths(self, context: Context | None = None, horizon: int | None = None) -> dict[int, Fraction]:
        """Law of the tokens a round emits; with a `horizon` h and a method that `cuts`, the key
        h + 1 stands for "more than h" (the round law is then computed only up to h tokens)."""
        out: dict[int, Fraction] = defaultdict(Fraction)
        law = self.round_law(context) if horizon is None else self.round_law_to(context, horizon)
        for s, pr in law.items():
            out[len(s) if horizon is None else min(len(s), horizon + 1)] += pr
        return dict(sorted(out.items()))

    def tau(self, context: Context | None = None) -> Fraction:
        """Expected tokens emitted per round."""
        return sum((k * pr for k, pr in self.round_lengths(context).items()), ZERO)

    def acceptance(self, context: Context | None = None, horizon: int | None = None) -> Fraction:
        """One-level acceptance rate: probability that some child of the root is accepted (any
        horizon >= 1 gives it exactly)."""
        return sum((pr for k, pr in self.round_lengths(context, horizon).items() if k >= 2), ZERO)


class VariantExact(Exact):
    """`Exact` of one of a family's mutants given as a `Variant` that its round laws read, by brute
    force; a round ending in the invalid token V (a bonus from a massless row) stops decoding."""

    def __init__(self, case: Case, variant: Variant, *, max_trees: int | None = DEFAULT_MAX_TREES) -> None:
        super().__init__(case, "brute", max_trees=max_trees, variant=variant)
        self.stop = case.vocab_size


def mutant_exact(case: Case, mutant: str, *, max_trees: int | None = DEFAULT_MAX_TREES) -> Exact:
    """The exact counterpart of the mutant called `mutant` on `case`: its family's own
    (`Family.mutant_exact`, e.g. the rheo family's rules and tree rewrites), else `VariantExact`."""
    variant = variant_named(mutant)
    family = family_of(case.scheme)
    variant.check_family(family.name)
    if family.mutant_exact is not None:
        out: Exact = family.mutant_exact(case, mutant, max_trees=max_trees)
        return out
    return VariantExact(case, variant, max_trees=max_trees)


def target_law(case: Case, n: int | None = None, context: Sequence[int] | None = None) -> Law:
    """p(s_1..s_n | context), zero entries omitted (`compose` of one-token rounds: no recursion per token).
    `n` >= 1 tokens (default `case.tokens`); `context` a sequence of token ids (default the case's)."""
    if not isinstance(case, Case):
        raise CaseError(f"case must be a rheo_ref.models.Case, got {type(case).__name__}")
    n = case.tokens if n is None else index("n", n, min=1)
    ctx = case.context if context is None else check_context(context, case.vocab_size)
    if case.constraint is not None:
        return masked_target_law(case, n, ctx)
    return compose(one_token_rounds(case.target.row), ctx, n, sees=case.sees)


def masked_row(case: Case, context: Context, state: int) -> Row:
    """The target row after `context` masked by the constraint's `state` and renormalised
    (docs/PROCESSING.md, "Grammars"); a state whose allowed tokens all have target probability 0
    there is refused."""
    assert case.constraint is not None
    row = case.constraint.mask(case.target.row(context), state)
    z = sum(row)
    if z == 0:
        allowed = sorted(case.constraint.allowed[state])
        raise CaseError(
            f"constraint state {state} allows tokens {allowed}, all of target probability 0 after context "
            f"{list(context)}; the masked target has no mass there (allow a token the target can emit)"
        )
    return tuple(x / z for x in row)


def masked_target_law(case: Case, n: int, context: Context) -> Law:
    """The law of n tokens drawn one by one from the masked, renormalised target rows (the
    constraint's state starts at 0 after `context` and follows the drawn tokens): one-token rounds
    composed with the constraint's state as the round's state."""
    constraint = case.constraint
    assert constraint is not None

    def one_token(ctx: tuple[int, ...], m: int, state: int) -> dict[tuple[tuple[int, ...], int], Fraction]:
        row = masked_row(case, ctx, state)
        return {((v,), constraint.step(state, v)): pv for v, pv in enumerate(row) if pv}

    return compose(one_token, context, n, state=0)


def round_law(case: Case, method: str = "classes", context: Context | None = None) -> Law:
    return Exact(case, method).round_law(context)


def token_law(case: Case, n: int | None = None, method: str = "classes") -> Law:
    return Exact(case, method).token_law(n)


def tau(case: Case, method: str = "classes") -> Fraction:
    return Exact(case, method).tau()


def acceptance(case: Case, method: str = "classes") -> Fraction:
    return Exact(case, method).acceptance()


@dataclass
class ExactReport:
    """Everything `rheo exact` prints."""

    law: Law
    target: Law
    tv: Fraction
    tau: Fraction | None  # None: the method computed the rounds only up to the law's n tokens (walk)
    round_lengths: dict[int, Fraction]
    acceptance: Fraction
    method: str
    enumerated: int
    seconds: float
    extra: dict = field(default_factory=dict)
    horizon: int | None = None  # round_lengths' last key h + 1 stands for "more than h" when set
    choice: Choice | None = None  # how the method was chosen, when the caller named none

    def to_json(self) -> dict:
        key = lambda s: ",".join(map(str, s))
        length = lambda k: f">{self.horizon}" if self.horizon is not None and k > self.horizon else str(k)
        return {
            "law": {key(s): str(p) for s, p in sorted(self.law.items()) if p},
            "target": {key(s): str(p) for s, p in sorted(self.target.items()) if p},
            "tv": str(self.tv),
            "tau": None if self.tau is None else str(self.tau),
            "round_lengths": {length(k): str(v) for k, v in self.round_lengths.items() if v},
            "acceptance": str(self.acceptance),
            "method": self.method,
            "enumerated": self.enumerated,
            "seconds": round(self.seconds, 4),
        } | ({} if self.choice is None else {"choice": self.choice.to_json()})


def check_law_size(case: Case, n: int, limit: int | None, *, name: str = "tokens", override: str | None = None) -> Size:
    """Refuse up front an n-token law estimated at more than `limit` tokens in all (b^n sequences
    of n tokens, `rheo_ref.sizes.law_outcomes`); return the estimate. `override`: how to go past
    the limit (default: the CLI's flags)."""
    outcomes, b = law_outcomes(case, n)
    size = outcomes * Size.of(n)
    flag = f"{name} {Size.of(n)}" if name.startswith("-") else f"{name}={Size.of(n)}"
    within_limit(
        f"{flag}: the law's size in tokens ({b}^n = {outcomes} sequences of n tokens; {b}: the most tokens "
        f"a target row gives positive probability)",
        size,
        limit,
        override=override or "use fewer tokens, a larger --max-law-size, or --force to run anyway",
    )
    return size


def exact_report(
    case: Case,
    method: str | None = "classes",
    tokens: int | None = None,
    *,
    max_trees: int | None = DEFAULT_MAX_TREES,
    max_law_size: int | None = DEFAULT_MAX_LAW_SIZE,
    progress: Callable[[int], None] | None = None,
    parallel: Parallel = SERIAL,
) -> ExactReport:
    """Everything `rheo exact` prints; `method` None: the method `rheo_ref.choose` predicts to be
    the fastest (its choice and reason are in the report, and its time in `seconds`)."""
    t0 = time.perf_counter()
    n = case.tokens if tokens is None else tokens
    choice = None
    if method is None:
        choice = choose_method(case, n, max_trees=max_trees)
        method = choice.method
    sized = replace(case, tokens=n) if method == "walk" else case  # walk's size depends on n
    ex = Exact(sized, method, max_trees=max_trees, progress=progress, parallel=parallel)
    check_law_size(case, n, max_law_size, name="tokens" if tokens is None else "--tokens")
    law = ex.token_law(n)
    tgt = target_law(case, n)
    horizon = n if ex.cuts else None  # walk: the first round only up to n tokens, so no tau
    lengths = ex.round_lengths(horizon=horizon)
    return ExactReport(
        law,
        tgt,
        tv(law, tgt),
        None if ex.cuts else ex.tau(),
        lengths,
        ex.acceptance(horizon=horizon),
        method,
        ex.counter.enumerated,
        time.perf_counter() - t0,
        horizon=horizon,
        choice=choice,
    )
