"""The checks a batched decoder's own test suite runs beside the law test (docs/GATE.md, "A batched
decoder's suite"): batch invariance, reported logprobs, greedy identity. Public as `rheo.testing`.

A *batch sampler* runs a batch of requests on one case: `sampler(case, requests, seed, num_samples)`
returns `num_samples` independent batches, each one token sequence per request (an array-like
[num_samples, len(requests), >= case.tokens]). A request is a dict of `rheo.processed`'s keywords
(temperature=, top_k=, top_p=, min_p=, repetition=, frequency=, presence=, logit_bias=, order=, ties=):
the sampler reads it as its own settings, and rheo reads it for the exact law it asks for.

- `check_batch` / `assert_batch`: a request's law must not depend on the batch. Each request is run
  alone and inside the batch, and each output's first `case.tokens` tokens are tested against the
  request's exact processed law; each pair of rows of the batch is tested against the product of the
  two laws of their first token (independent rows: "every row shares one random stream" couples them).
  α is the total over every test (Bonferroni: α / tests each); each test detects TV ≥ δ of its law
  with power ≥ 1 − β (`rheo.check_law`).
- `check_logprobs`: the logprob a decoder reports for each emitted token equals log p̃(token | prefix)
  of the exact processed target, within `tolerance` (no statistics: α = 0).
- `check_greedy`: at T = 0 every output is the processed target's argmax path (a tie broken by the
  rule `ties` names; no statistics: α = 0).

Each raises a `LosslessError` (`BatchError`, `LogprobError`, `GreedyError`) whose message names the
request, the row or position, and the likely cause.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from rheo.lossless import validate
from rheo.lossless.stats import DEFAULT_BETA, LawTest, current_test_seed, law_samples, law_test
from rheo_ref.errors import CaseError, LosslessError, SamplerOutputError, StatsError
from rheo_ref.models import Case

Request = Mapping[str, Any]
BatchSampler = Callable[[Case, Sequence[Request], int, int], Any]


class BatchError(LosslessError):
    """A request's output law depends on the batch it runs in, or two rows of a batch are dependent."""


class LogprobError(LosslessError):
    """A reported logprob is not the exact processed target's."""


class GreedyError(LosslessError):
    """At T = 0 an output left the processed target's argmax path."""


def _name(i: int, req: Request) -> str:
    return f"request {i} {dict(req)!r}"


def request_case(case: Case, request: Request, tokens: int | None = None) -> Case:
    """The case with the request's processed target (`rheo.processed(case, **request)`)."""
    from rheo.decoders.settings import processed

    return processed(case, **dict(request), tokens=tokens)


def _run(sampler: BatchSampler, case: Case, requests: Sequence[Request], seed: int, n: int) -> list[list[tuple]]:
    """[n][len(requests)] token tuples, each cut to case.tokens; a malformed output is named."""
    out = sampler(case, list(requests), seed, n)
    batches = [[tuple(int(t) for t in row) for row in batch] for batch in out]
    if len(batches) != n or any(len(b) != len(requests) for b in batches):
        raise SamplerOutputError(
            f"the batch sampler returned {len(batches)} batches of sizes {sorted({len(b) for b in batches})}; "
            f"allowed: {n} batches of {len(requests)} rows (one per request)"
        )
    short = [len(r) for b in batches for r in b if len(r) < case.tokens]
    if short:
        raise SamplerOutputError(f"a row has {short[0]} tokens; allowed: at least case.tokens={case.tokens}")
    return [[r[: case.tokens] for r in b] for b in batches]


@dataclass(frozen=True)
class BatchTest:
    """The tests `check_batch` ran (each a `LawTest`, level α / len(tests)) and the total α."""

    tests: tuple[LawTest, ...]
    alpha: float

    @property
    def rejected(self) -> bool:
        return any(t.rejected for t in self.tests)

    @property
    def worst(self) -> LawTest:
        return min(self.tests, key=lambda t: (not t.rejected, t.p_value))

    def summary(self) -> str:
        head = f"batch invariance: {'REJECT' if self.rejected else 'pass'} ({len(self.tests)} tests, total α={self.alpha:g})"
        return "\n".join([head] + [f"  {t.summary()}" for t in self.tests if t.rejected or t is self.worst])


def check_batch(
    sampler: BatchSampler,
    case: Case,
    requests: Sequence[Request],
    *,
    alpha: float,
    tv: float,
    beta: float = DEFAULT_BETA,
    seed: int | None = None,
) -> BatchTest:
    """Run `requests` alone and as one batch; test each row's law and each pair's independence (module
    docstring). N is planned so that every test detects TV ≥ `tv` of its law with power ≥ 1 − β."""
    from rheo.lossless.planning import target_law

    alpha, beta, tv = validate.gate_rates(alpha, beta, tv, tv_one=True)  # once: the tests below take the floats
    if len(requests) < 2:
        raise StatsError(f"{len(requests)} request(s); allowed: at least 2 (a batch, and a pair to test)")
    seed = current_test_seed("batch") if seed is None else validate.whole("seed", seed, min=0, max=2**63 - 1)
    laws = [target_law(request_case(case, r)) for r in requests]
    firsts = [_first(law) for law in laws]
    pairs = [(i, j) for i in range(len(requests)) for j in range(i + 1, len(requests))]
    pair_laws: dict[tuple[int, int], dict[tuple[int, ...], Fraction]] = {
        (i, j): {(a, b): pa * pb for (a,), pa in firsts[i].items() for (b,), pb in firsts[j].items()} for i, j in pairs
    }
    a_each = alpha / (2 * len(requests) + len(pairs))
    every: list[Mapping[tuple[int, ...], Fraction]] = [*laws, *pair_laws.values()]
    n = max(law_samples(law, tv, a_each, beta) for law in every)
    tests = []
    for i, (req, law) in enumerate(zip(requests, laws)):
        alone = [b[0] for b in _run(sampler, case, [req], seed + 1 + i, n)]
        tests.append(law_test(alone, law, alpha=a_each, tv=tv, beta=beta, label=f"{_name(i, req)} alone", seed=seed))
    batch = _run(sampler, case, requests, seed, n)
    for i, (req, law) in enumerate(zip(requests, laws)):
        rows = [b[i] for b in batch]
        tests.append(
            law_test(
                rows, law, alpha=a_each, tv=tv, beta=beta, label=f"{_name(i, req)} as row {i} of the batch", seed=seed
            )
        )
    for i, j in pairs:
        both = [(b[i][0], b[j][0]) for b in batch]
        label = f"rows {i} and {j} of the batch: first tokens independent (a shared random stream couples them)"
        names = (f"row {i} token 1", f"row {j} token 1")
        tests.append(
            law_test(both, pair_laws[i, j], alpha=a_each, tv=tv, beta=beta, label=label, names=names, seed=seed)
        )
    return BatchTest(tuple(tests), alpha)


def _first(law: Mapping[tuple[int, ...], Fraction]) -> dict[tuple[int, ...], Fraction]:
    out: dict[tuple[int, ...], Fraction] = {}
    for seq, p in law.items():
        out[seq[:1]] = out.get(seq[:1], Fraction(0)) + p
    return out


def assert_batch(sampler: BatchSampler, case: Case, requests: Sequence[Request], **kwargs: Any) -> BatchTest:
    """`check_batch`, raising `BatchError` (carrying the record) on a rejection."""
    from rheo.lossless.stats import hide_lossless

    __tracebackhide__ = hide_lossless
    res = check_batch(sampler, case, requests, **kwargs)
    if res.rejected:
        raise BatchError(res.summary(), res.worst)
    return res


def check_logprobs(
    case: Case,
    requests: Sequence[Request],
    tokens: Sequence[Sequence[Sequence[int]]],
    logprobs: Sequence[Sequence[Sequence[float]]],
    *,
    tolerance: float = 1e-6,
) -> int:
    """Every reported logprob (logprobs[b][r][i], for tokens[b][r][i] of request r in batch b) equals
    log p̃(token | context + earlier tokens) of the request's exact processed target within `tolerance`;
    returns how many were checked, or raises `LogprobError` naming the first that is not, and what it
    equals instead where rheo recognises it (the unprocessed target's logprob)."""
    tolerance = validate.rate("tolerance", tolerance)
    longest = max((len(row) for batch in tokens for row in batch), default=1)
    cases = [request_case(case, r, max(longest, 1)) for r in requests]
    checked = 0
    for b, (batch, reports) in enumerate(zip(tokens, logprobs)):
        for i, (row, rep) in enumerate(zip(batch, reports)):
            row = [int(t) for t in row]
            for k, (t, lp) in enumerate(zip(row, rep)):
                ctx = case.context + tuple(row[:k])
                try:
                    p = cases[i].target.row(ctx)[t]
                except CaseError:  # a history-keyed table has no row after an impossible prefix
                    p = Fraction(0)
                want = math.log(p) if p > 0 else -math.inf
                if not (abs(float(lp) - want) <= tolerance or (want == -math.inf and float(lp) == -math.inf)):
                    raw = case.target.row(ctx)[t]
                    hint = (
                        " (it is the unprocessed target's logprob: report the processed row's)"
                        if raw > 0 and abs(float(lp) - math.log(raw)) <= tolerance and raw != p
                        else ""
                    )
                    raise LogprobError(
                        f"{_name(i, requests[i])}, batch {b}, position {k + 1}: token {t} reported logprob {float(lp):.6g}, "
                        f"the processed target's is log({p}) = {want:.6g}{hint}",
                        None,
                    )
                checked += 1
    return checked


def check_greedy(
    sampler: BatchSampler,
    case: Case,
    request: Request,
    *,
    ties: str = "low",
    num_samples: int = 16,
    seeds: Sequence[int] = (0, 1),
) -> tuple[int, ...]:
    """At T = 0 (forced into `request`) every output of `num_samples` batches of one request on each
    seed equals the processed target's argmax path (`ties`: "low" the lowest id as numpy and torch
    argmax, "high" the highest); returns the path, or raises `GreedyError` at the first output that
    leaves it, naming the position, the token emitted and the argmax."""
    from rheo.lossless.planning import target_law

    req = {**dict(request), "temperature": 0}
    given = req.get("ties")
    req["ties"] = (
        {"greedy": ties} if given is None else ({**given, "greedy": ties} if isinstance(given, Mapping) else given)
    )
    (path,) = target_law(request_case(case, req))
    for seed in seeds:
        for out in _run(sampler, case, [req], seed, num_samples):
            if out[0] != path:
                k = next(k for k, (a, b) in enumerate(zip(out[0], path)) if a != b)
                raise GreedyError(
                    f"{_name(0, req)}, seed {seed}: at T = 0 position {k + 1} emitted {out[0][k]} where the processed "
                    f"target's argmax (ties {ties!r}) is {path[k]}: output {list(out[0])}, argmax path {list(path)}",
                    None,
                )
    return path


__all__ = [
    "BatchError",
    "BatchSampler",
    "BatchTest",
    "GreedyError",
    "LogprobError",
    "assert_batch",
    "check_batch",
    "check_greedy",
    "check_logprobs",
    "request_case",
]

for _error in (BatchError, LogprobError, GreedyError):
    _error.__module__ = "rheo.testing"  # public there (printed `rheo.testing.BatchError: ...`)
