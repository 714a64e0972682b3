"""The batch draw of `rheo mutants --hunt --hunt-draw batch` (docs/GATE_REFERENCE.md, "The fewest samples"):
batches of three different requests for the batch classes (`rheo_ref.bugclasses.batch`).

Batch i of seed s is drawn from `random.Random(f"hunt-batch|{s}|{i}")`: three requests, each with
V ∈ {2, 3}, context length 0 or 1, weights 1–9, 2 tokens, γ = 1, token verification, T ∈ {1, 1/2}
(a padding row's temperature can show only on a request at T ≠ 1), and a seed in 0..999 each
(distinct). A mutant whose requests share one stream (`batch-shared-stream`: `couples_streams`) runs on
the first two requests: its exact law enumerates every path of the whole batch (three requests:
minutes; two: a second).
"""

from __future__ import annotations

import random
from fractions import Fraction

from rheo_ref.bugclasses.batch import BATCH_MUTANTS, BatchSteps
from rheo_ref.bugclasses.cases import BugCase
from rheo_ref.bugclasses.decoder import Request
from rheo_ref.models import TableModel

SHARED_STREAM_REQUESTS = 2  # requests `batch-shared-stream` runs on (module docstring)


def batch_case(seed: int, i: int) -> tuple[list[BugCase], list[int]]:
    """The i-th batch of the batch draw of hunt seed `seed`: (requests, their seeds)."""
    rng = random.Random(f"hunt-batch|{seed}|{i}")
    cases = []
    for _ in range(3):
        V, L = rng.choice((2, 3)), rng.choice((0, 1))
        keys = [(), *((t,) for t in range(V))] if L else [()]
        draft, target = ({k: [rng.randint(1, 9) for _ in range(V)] for k in keys} for _ in "qp")
        req = Request(temperature=rng.choice((Fraction(1), Fraction(1, 2))), gamma=1)
        cases.append(
            BugCase(
                TableModel.from_weights(draft, context_length=L, name="draft"),
                TableModel.from_weights(target, context_length=L, name="target"),
                (0,) if L else (),
                2,
                req,
            )
        )
    return cases, rng.sample(range(1000), 3)


def couples_streams(steps: BatchSteps) -> bool:
    """Whether a batch's steps change how its requests' streams are drawn (`BatchSteps.stream`): then the
    requests are not independent and `rheo_ref.bugclasses.batch.batch_law` enumerates every path of the
    whole batch (the shared stream)."""
    return type(steps).stream is not BatchSteps.stream


def for_mutant(mutant: str, cases: list[BugCase], seeds: list[int]) -> tuple[list[BugCase], list[int]]:
    """The requests a batch mutant runs on: the first `SHARED_STREAM_REQUESTS` where its steps couple the
    requests' streams (its exact law is the whole batch's), else all of them."""
    if couples_streams(BATCH_MUTANTS[mutant][1]):
        return cases[:SHARED_STREAM_REQUESTS], seeds[:SHARED_STREAM_REQUESTS]
    return cases, seeds


def batch_json(cases: list[BugCase], seeds: list[int]) -> dict:
    return {"requests": [c.to_json() for c in cases], "seeds": list(seeds)}


def batch_from_json(obj: dict) -> tuple[list[BugCase], list[int]]:
    return [BugCase.from_json(c) for c in obj["requests"]], [int(s) for s in obj["seeds"]]


def batch_cell(seed: int, i: int, alpha: float, beta: float) -> dict:
    """One drawn batch: every batch mutant's row on it (`rheo.selfgate.batches.batch_row`)."""
    from rheo.selfgate.batches import batch_row

    cases, seeds = batch_case(seed, i)
    rows = {m: batch_row(*for_mutant(m, cases, seeds), m, alpha=alpha, beta=beta) for m in BATCH_MUTANTS}
    return {"draw": "batch", "seed": seed, "i": i, "batch": batch_json(cases, seeds), "floor": 0.0, "rows": rows}
