"""Batches of different requests on the fast path: `rheo_ref.bugclasses.batch` with the fast
bug-class decoder (`rheo_fast.bugclasses.decoder`).

A batch is many requests, each with its own case and seed. N samples of the batch are drawn at
once: request i's N trials run as one vectorised `decode` on a generator seeded by its own seed, so
a seeded request reads the same uniforms whatever else is in the batch (batch invariance), and
sample s of the batch is trial s of every request. Mutants (`FAST_BATCH_MUTANTS`, the reference's
names) are `FastBatchSteps` subclasses; each one's law is checked against the reference mutant's
exact law (`tests/test_fast_bugclasses.py`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import torch

from rheo_ref.bugclasses.cases import BugCase
from rheo_ref.bugclasses.decoder import DEFAULT_REQUEST

from .decoder import CORRECT, FastSteps, decode
from .mutants import TargetOffByOne


class FastBatchSteps:
    """How the batch runs its requests, correct: each on its own seeded generator, its own settings."""

    def generator(self, seed: int, shared: torch.Generator) -> torch.Generator:
        """Request's generator: its own, seeded by its seed."""
        return torch.Generator().manual_seed(seed)

    def case_in_batch(self, case: BugCase, i: int, size: int) -> tuple[BugCase, FastSteps]:
        """The case and steps row i runs with: its own."""
        return case, CORRECT

    def tokens(self, outs: list[list[tuple[int, ...]]]) -> list[list[tuple[int, ...]]]:
        """What each request returns (outs[i][s]: request i's tokens in sample s): its own tokens."""
        return outs


class SharedStream(FastBatchSteps):
    """One generator for the whole batch: each request continues where the one before stopped."""

    def generator(self, seed: int, shared: torch.Generator) -> torch.Generator:
        return shared


class PaddingTemperature(FastBatchSteps):
    """The last row of an odd-sized batch takes the padding row's temperature (the default, 1)."""

    def case_in_batch(self, case: BugCase, i: int, size: int) -> tuple[BugCase, FastSteps]:
        if size % 2 == 1 and i == size - 1:
            return replace(case, request=replace(case.request, temperature=DEFAULT_REQUEST.temperature)), CORRECT
        return case, CORRECT


class ResampledTokenBroadcast(FastBatchSteps):
    """Row 0's token after prefill written into every row."""

    def tokens(self, outs: list[list[tuple[int, ...]]]) -> list[list[tuple[int, ...]]]:
        return [[o0[:1] + o[1:] for o0, o in zip(outs[0], rows)] for rows in outs]


class CorruptAboveTwo(FastBatchSteps):
    """With more than two requests in the batch, rows 2 and up read the target row one position late."""

    def case_in_batch(self, case: BugCase, i: int, size: int) -> tuple[BugCase, FastSteps]:
        return case, (TargetOffByOne() if size > 2 and i >= 2 else CORRECT)


FAST_BATCH_MUTANTS: dict[str, FastBatchSteps] = {
    "batch-shared-stream": SharedStream(),
    "batch-padding-temperature": PaddingTemperature(),
    "batch-token-broadcast": ResampledTokenBroadcast(),
    "batch-corrupt-above-two": CorruptAboveTwo(),
}
CORRECT_BATCH = FastBatchSteps()


def decode_batch(
    cases: Sequence[BugCase], seeds: Sequence[int], n: int, steps: FastBatchSteps = CORRECT_BATCH
) -> list[list[tuple[int, ...]]]:
    """n samples of the batch: out[i][s] is request i's first `case.tokens` tokens in sample s."""
    shared = torch.Generator().manual_seed(seeds[0] if seeds else 0)
    outs = []
    for i, (case, seed) in enumerate(zip(cases, seeds)):
        c, s = steps.case_in_batch(case, i, len(cases))
        outs.append(decode(c, n, steps.generator(seed, shared), s))
    return steps.tokens(outs)


def joint(outs: list[list[tuple[int, ...]]]) -> list[tuple[int, ...]]:
    """Each sample's tokens as the reference's batch key: the requests' tokens separated by -1."""
    return [tuple(t for o in sample for t in (*o, -1)) for sample in zip(*outs)]


__all__ = ["CORRECT_BATCH", "FAST_BATCH_MUTANTS", "FastBatchSteps", "decode_batch", "joint"]
