"""Batches of different requests on the baseline decoder (docs/GATE_REFERENCE.md, "Bug classes", batches).

A batch is many requests, each with its own case (tables, context, settings, constraint) and its
own seed; the decoder returns each request's tokens. Randomness: one stream per request, its
positions named by the request's seed (`Keyed`), so a seeded request reads the same uniforms
whatever else is in the batch, its position there, or the batch size.

Exact laws (`batch_law`, by the enumerating `Random` of `rheo_ref.bugclasses.exact`): the joint
law of every request's tokens. Checks (`batch_tvs`): `request<i>` (request i's tokens against its
request's law), `batch` (the joint law against the product of the request laws: requests are
independent) and `invariance` (the probability that request i's tokens in the batch differ from
its tokens run alone with the same seed: both runs read one coupled stream, so a correct decoder
gives 0 exactly).

Mutants (`BATCH_MUTANTS`) are `BatchSteps` subclasses, each modelled on a public report.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from ..laws import tv
from .cases import BugCase, request_law
from .decoder import CORRECT, DEFAULT_REQUEST, Models, Random, Steps, decode
from .exact import Enumerating, Law
from .mutants import TargetOffByOne


@dataclass
class Keyed:
    """A `Random` whose positions are named (key, position): one stream per key."""

    rand: Any
    key: Any
    offset: int = 0
    used: int = 0  # one past the largest position read

    def uniform(self, position: int) -> Any:
        self.used = max(self.used, position + 1)
        return self.rand.uniform((self.key, self.offset + position))

    def below(self, u: Any, a: Any) -> bool:
        return self.rand.below(u, a)

    def pick(self, u: Any, row: Any, closed: bool = False) -> int:
        return self.rand.pick(u, row, closed)


class BatchSteps:
    """How the batch runs its requests, correct: each on its own seeded stream, its own settings."""

    def stream(self, rand: Random, seed: int, before: Sequence[Keyed]) -> Keyed:
        """Request's stream: positions keyed by its seed."""
        return Keyed(rand, seed)

    def case_in_batch(self, case: BugCase, i: int, size: int) -> tuple[BugCase, Steps]:
        """The case and steps row i runs with: its own."""
        return case, CORRECT

    def tokens(self, outs: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
        """What each row returns: its own tokens."""
        return outs


class SharedStream(BatchSteps):
    """One random stream for the whole batch: each request continues where the one before stopped."""

    def stream(self, rand: Random, seed: int, before: Sequence[Keyed]) -> Keyed:
        return Keyed(rand, "shared", sum(k.used for k in before))


class PaddingTemperature(BatchSteps):
    """The last row of an odd-sized batch takes the padding row's temperature (the default, 1)."""

    def case_in_batch(self, case: BugCase, i: int, size: int) -> tuple[BugCase, Steps]:
        if size % 2 == 1 and i == size - 1:
            return replace(case, request=replace(case.request, temperature=DEFAULT_REQUEST.temperature)), CORRECT
        return case, CORRECT


class ResampledTokenBroadcast(BatchSteps):
    """Row 0's token after prefill written into every row."""

    def tokens(self, outs: list[tuple[int, ...]]) -> list[tuple[int, ...]]:
        return [outs[0][:1] + o[1:] for o in outs]


class CorruptAboveTwo(BatchSteps):
    """With more than two requests in the batch, rows 2 and up read the target row one position late."""

    def case_in_batch(self, case: BugCase, i: int, size: int) -> tuple[BugCase, Steps]:
        return case, (TargetOffByOne() if size > 2 and i >= 2 else CORRECT)


# name -> (public reference, steps, what is wrong)
BATCH_MUTANTS: dict[str, tuple[str, BatchSteps, str]] = {
    "batch-shared-stream": (
        "TensorRT-LLM (docs/GATE_REFERENCE.md's bug-class table)",
        SharedStream(),
        "one random stream shared across the batch's requests",
    ),
    "batch-padding-temperature": (
        "vLLM, tpu-inference (docs/GATE_REFERENCE.md's bug-class table)",
        PaddingTemperature(),
        "a padding row's temperature in a real row",
    ),
    "batch-token-broadcast": (
        "flash-attention (docs/GATE_REFERENCE.md's bug-class table)",
        ResampledTokenBroadcast(),
        "one row's resampled token written into every row",
    ),
    "batch-corrupt-above-two": (
        "a vLLM fork's MTP report",
        CorruptAboveTwo(),
        "corruption only with more than two requests",
    ),
}
CORRECT_BATCH = BatchSteps()


def decode_batch(
    cases: Sequence[BugCase],
    seeds: Sequence[int],
    rand: Random,
    steps: BatchSteps = CORRECT_BATCH,
    models: Callable[[BugCase], Models] = lambda c: Models(c.draft, c.target),
) -> list:
    """Each request's first `case.tokens` tokens (module docstring); `models`: the rows each case is
    read as (exact by default; float64 for samples)."""
    streams: list[Keyed] = []
    outs = []
    for i, (case, seed) in enumerate(zip(cases, seeds)):
        c, s = steps.case_in_batch(case, i, len(cases))
        k = steps.stream(rand, seed, streams)
        streams.append(k)
        outs.append(decode(models(c), c.context, c.tokens, c.request, k, s, constraint=c.constraint))
    return steps.tokens(outs)


def batch_law(
    cases: Sequence[BugCase], seeds: Sequence[int], steps: BatchSteps = CORRECT_BATCH
) -> tuple[Law, dict[int, Fraction]]:
    """(the joint law of the batch's tokens, per request the probability that its tokens differ
    from its tokens run alone with the same seed on the coupled stream). Where every request reads
    its own stream (the steps keep the keyed streams, the seeds are distinct) the requests' runs are
    independent, so the law is composed from each request's (in the batch, alone) law
    (`independent_batch_law`); otherwise every path of the whole batch is enumerated."""
    if type(steps).stream is BatchSteps.stream and len(set(seeds)) == len(seeds):
        return independent_batch_law(cases, seeds, steps)
    return enumerated_batch_law(cases, seeds, steps)


def pair_law(case: BugCase, seed: int, i: int, size: int, steps: BatchSteps) -> dict[tuple, Fraction]:
    """The joint law of request i's tokens in a batch of `size` and its tokens run alone, on its
    own keyed stream (before `steps.tokens`): outcomes (in the batch, alone)."""
    law: dict[tuple, Fraction] = {}
    trail: list[int] = []
    c, s = steps.case_in_batch(case, i, size)
    ca, sa = steps.case_in_batch(case, 0, 1)
    while True:
        rand = Enumerating(trail)
        out = decode(
            Models(c.draft, c.target), c.context, c.tokens, c.request, Keyed(rand, seed), s, constraint=c.constraint
        )
        alone = decode(
            Models(ca.draft, ca.target),
            ca.context,
            ca.tokens,
            ca.request,
            Keyed(rand, seed),
            sa,
            constraint=ca.constraint,
        )
        key = (out, alone)
        law[key] = law.get(key, Fraction(0)) + rand.prob
        next_trail = rand.next_trail()
        if next_trail is None:
            return law
        trail = next_trail


def independent_batch_law(
    cases: Sequence[BugCase], seeds: Sequence[int], steps: BatchSteps
) -> tuple[Law, dict[int, Fraction]]:
    """`batch_law` for requests on disjoint streams: the product of the requests' pair laws, then
    what each row returns (`steps.tokens`) on the joint outcome."""
    pairs = [pair_law(c, s, i, len(cases), steps) for i, (c, s) in enumerate(zip(cases, seeds))]
    joint: dict[tuple, Fraction] = {(): Fraction(1)}
    for pl in pairs:
        joint = {k + (o,): p * q for k, p in joint.items() for o, q in pl.items()}
    law: Law = {}
    moved = {i: Fraction(0) for i in range(len(cases))}
    for combo, pr in joint.items():
        outs = steps.tokens([o for o, _ in combo])
        for i, (_, alone) in enumerate(combo):
            if steps.tokens([alone])[0] != outs[i]:
                moved[i] += pr
        key = tuple(t for o in outs for t in (*o, -1))
        law[key] = law.get(key, Fraction(0)) + pr
    return law, moved


def enumerated_batch_law(
    cases: Sequence[BugCase], seeds: Sequence[int], steps: BatchSteps
) -> tuple[Law, dict[int, Fraction]]:
    """`batch_law` by enumerating every path of the whole batch (and each request run alone)."""
    law: Law = {}
    moved = {i: Fraction(0) for i in range(len(cases))}
    trail: list[int] = []
    while True:
        rand = Enumerating(trail)
        outs = decode_batch(cases, seeds, rand, steps)
        for i in range(len(cases)):
            alone = decode_batch([cases[i]], [seeds[i]], rand, steps)[0]
            if alone != outs[i]:
                moved[i] += rand.prob
        key = tuple(t for o in outs for t in (*o, -1))  # requests separated by -1
        law[key] = law.get(key, Fraction(0)) + rand.prob
        next_trail = rand.next_trail()
        if next_trail is None:
            return law, moved
        trail = next_trail


def split(key: tuple[int, ...]) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = []
    cur: list[int] = []
    for t in key:
        if t == -1:
            out.append(tuple(cur))
            cur = []
        else:
            cur.append(t)
    return out


def product_law(cases: Sequence[BugCase]) -> Law:
    """The law of independent requests, each with its request's law."""
    law: Law = {(): Fraction(1)}
    for c in cases:
        r = request_law(c)
        law = {k + s + (-1,): p * q for k, p in law.items() for s, q in r.items()}
    return law


def batch_laws(cases: Sequence[BugCase], seeds: Sequence[int], steps: BatchSteps) -> tuple[dict, dict, dict]:
    """(the law each check tests against, the batch's law of the same outcome, invariance per request)."""
    joint, moved = batch_law(cases, seeds, steps)
    laws: dict[str, Law] = {"batch": product_law(cases)}
    bad: dict[str, Law] = {"batch": joint}
    for i, c in enumerate(cases):
        laws[f"request{i}"] = request_law(c)
        m: Law = {}
        for k, p in joint.items():
            s = split(k)[i]
            m[s] = m.get(s, Fraction(0)) + p
        bad[f"request{i}"] = m
    return laws, bad, moved


def batch_tvs(cases: Sequence[BugCase], seeds: Sequence[int], steps: BatchSteps) -> dict[str, Fraction]:
    laws, bad, moved = batch_laws(cases, seeds, steps)
    out = {c: tv(bad[c], laws[c]) for c in laws}
    out["invariance"] = max(moved.values())
    return out
