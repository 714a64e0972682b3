"""The gate: `rheo.check_lossless` and `rheo.assert_lossless`, a decoder against the exact target law.

Without `horizon`, the joint law of the first tokens (`rheo.lossless.stats.check_first_tokens`, or its
sequential form); with `horizon=H`, every window (`rheo.lossless.horizon`). docs/GATE.md is the tutorial,
docs/GATE_REFERENCE.md what the API refuses, docs/STATISTICS.md what the record's α and power promise.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, overload

from rheo.lossless import validate
from rheo.lossless.horizon import HorizonTest, horizon_test
from rheo.lossless.stats import DEFAULT_BETA, GateCall, LawTest, Sampler, first_tokens_test, gate_call, hide_lossless
from rheo.lossless.windows import check_horizon
from rheo_ref.errors import LosslessError, StatsError
from rheo_ref.models import Case
from rheo_ref.validate import show


@overload
def check_lossless(
    sampler: Sampler,
    case: Case,
    *,
    alpha: float,
    tv: float,
    beta: float = ...,
    tokens: int | None = ...,
    seed: int | None = ...,
    statistic: str = ...,
    horizon: None = ...,
    rounds: bool = ...,
    force: bool = ...,
    sequential: bool = ...,
) -> LawTest: ...


@overload
def check_lossless(
    sampler: Sampler,
    case: Case,
    *,
    alpha: float,
    tv: float,
    beta: float = ...,
    tokens: int | None = ...,
    seed: int | None = ...,
    statistic: str = ...,
    horizon: int,
    rounds: bool = ...,
    force: bool = ...,
    sequential: bool = ...,
) -> HorizonTest: ...


def check_lossless(
    sampler: Sampler,
    case: Case,
    *,
    alpha: float,
    tv: float,
    beta: float = DEFAULT_BETA,
    tokens: int | None = None,
    seed: int | None = None,
    statistic: str = "pearson",
    horizon: int | None = None,
    rounds: bool = False,
    force: bool = False,
    sequential: bool = False,
) -> LawTest | HorizonTest:
    """`rheo.check_lossless`: test a decoder against the exact target law and return the record
    (no raise; `assert_lossless` is this plus the raise).

    Without `horizon`: the joint law of its first n tokens (n = `tokens` or `case.tokens`;
    `rheo.lossless.stats.check_first_tokens`). With `horizon=H`: every window (x_{k−1}, x_k), k = 2..H, and
    with `rounds=True` (a sampler returning `Rounds`) the first round's length law and the windows
    given it, split by Bonferroni over the tests; the record is then a `HorizonTest`. `alpha` is
    always what the call may cost a correct decoder: the probability that it rejects one.
    `sampler(case, seed, num_samples)` returns the emitted token sequences; it receives `case` exactly as
    given (a `rheo.processed` case: its target already processed; `rheo.unprocessed(case)` gives the raw case
    and the settings a decoder applies itself, so that nothing is processed twice). N is the least at
    which TV ≥ `tv` of the full law (of each window) is detected with power 1−`beta`; the seed
    defaults to one derived from the running pytest test id. Every argument and the sizes
    `rheo gate-hf` caps are checked before the sampler runs (`rheo.lossless.validate`);
    `force=True` lifts the size limits. `sequential=True` (first tokens only): the samples are drawn in
    looks and the first look that rejects stops the test (`rheo.lossless.sequential`).
    """
    __tracebackhide__ = hide_lossless
    call = gate_arguments(
        sampler,
        case,
        alpha=alpha,
        tv=tv,
        beta=beta,
        tokens=tokens,
        seed=seed,
        statistic=statistic,
        horizon=horizon,
        rounds=rounds,
        force=force,
        sequential=sequential,
    )
    return run_gate(sampler, case, call)


def gate_arguments(
    sampler: Sampler,
    case: Case,
    *,
    alpha: Any,
    tv: Any,
    beta: Any = DEFAULT_BETA,
    tokens: Any = None,
    seed: Any = None,
    statistic: Any = "pearson",
    horizon: Any = None,
    rounds: Any = False,
    force: Any = False,
    sequential: Any = False,
) -> GateCall:
    """Every check `check_lossless` makes of its arguments, each made once, before any sampling: the
    switches, which of tokens / horizon / rounds / sequential go together, then `gate_call` (the sampler,
    the case, the rates, the tokens or horizon, the seed, the sizes). `run_gate` runs the checked call; a
    library entry that gates a decoder (`rheo.decoders.gate.gate_hf`) calls both and checks nothing again."""
    check_switches(horizon=horizon, rounds=rounds, force=force, sequential=sequential)
    if horizon is None:
        return gate_call(
            sampler,
            case,
            alpha=alpha,
            beta=beta,
            tv=tv,
            statistic=statistic,
            seed=seed,
            force=force,
            tokens=lambda: case.tokens if tokens is None else validate.whole("tokens", tokens, min=1),
            sequential=sequential,
        )
    checked: list[int] = []

    def window_tokens() -> int:  # a horizon test reads H tokens; the sizes are checked for the context
        tokens_or_horizon(tokens, horizon)
        checked.append(check_horizon(horizon))
        return 1

    call = gate_call(
        sampler,
        case,
        alpha=alpha,
        beta=beta,
        tv=tv,
        statistic=statistic,
        seed=seed,
        force=force,
        tokens=window_tokens,
        tokens_first=True,
        rounds=rounds,
    )
    return replace(call, horizon=checked[0])


def check_switches(*, horizon: Any, rounds: Any, force: Any, sequential: Any) -> None:
    """The one check of a gate call's switches and of which go together (`check_lossless`, `plan_samples`):
    rounds, force and sequential are True or False; rounds needs a horizon; the sequential gate tests the
    first tokens, not a horizon's windows."""
    for name, flag in (("rounds", rounds), ("force", force), ("sequential", sequential)):
        validate.boolean(name, flag)
    if horizon is None and rounds:
        raise StatsError("rounds=True needs a horizon (the first round's laws are tested with the windows)")
    if horizon is not None and sequential:
        raise StatsError(
            f"sequential={show(sequential)} with horizon={show(horizon)}: the sequential gate tests the first tokens; "
            "give one (sequential=False for the horizon test)"
        )


def tokens_or_horizon(tokens: Any, horizon: Any) -> None:
    """A gate reads the first `tokens` tokens or a horizon's H, not both (`check_lossless`, `plan_samples`)."""
    if tokens is not None and horizon is not None:
        raise StatsError(f"tokens={tokens!r} and horizon={horizon!r}: give one (a horizon test reads H tokens)")


def run_gate(sampler: Sampler, case: Case, call: GateCall) -> LawTest | HorizonTest:
    """The gate on a call `gate_arguments` has checked: the first tokens, or with `call.horizon` every window."""
    __tracebackhide__ = hide_lossless
    if call.horizon is None:
        return first_tokens_test(sampler, case, call)
    return horizon_test(
        sampler,
        case,
        call.horizon,
        alpha=call.alpha,
        tv=call.tv,
        beta=call.beta,
        seed=call.seed,
        statistic=call.statistic,
        rounds=call.rounds,
        force=call.force,
    )


@overload
def assert_lossless(
    sampler: Sampler,
    case: Case,
    *,
    alpha: float,
    tv: float,
    beta: float = ...,
    tokens: int | None = ...,
    seed: int | None = ...,
    statistic: str = ...,
    horizon: None = ...,
    rounds: bool = ...,
    force: bool = ...,
    sequential: bool = ...,
) -> LawTest: ...


@overload
def assert_lossless(
    sampler: Sampler,
    case: Case,
    *,
    alpha: float,
    tv: float,
    beta: float = ...,
    tokens: int | None = ...,
    seed: int | None = ...,
    statistic: str = ...,
    horizon: int,
    rounds: bool = ...,
    force: bool = ...,
    sequential: bool = ...,
) -> HorizonTest: ...


def assert_lossless(
    sampler: Sampler,
    case: Case,
    *,
    alpha: float,
    tv: float,
    beta: float = DEFAULT_BETA,
    tokens: int | None = None,
    seed: int | None = None,
    statistic: str = "pearson",
    horizon: int | None = None,
    rounds: bool = False,
    force: bool = False,
    sequential: bool = False,
) -> LawTest | HorizonTest:
    """`rheo.assert_lossless`: `check_lossless`, raising `LosslessError` (with where the law broke)
    when the test rejects. Returns the record (`LawTest`, or `HorizonTest` with `horizon=H`)."""
    __tracebackhide__ = hide_lossless  # pytest shows the caller's line and the verdict, not rheo's frames
    res = check_lossless(
        sampler,
        case,
        alpha=alpha,
        tv=tv,
        beta=beta,
        tokens=tokens,
        seed=seed,
        statistic=statistic,
        horizon=horizon,
        rounds=rounds,
        force=force,
        sequential=sequential,
    )
    if res.rejected:
        raise LosslessError(res.summary(), res)
    if res.detectable_tv > res.tv + 1e-12:  # the plan keeps this; a guard on the promise, not a path
        raise LosslessError(f"{res.summary()}: too few samples to detect TV {res.tv:g} of the full law", res)
    return res
