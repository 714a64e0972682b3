"""transformers' assisted generation: `target.generate(ids, assistant_model=draft, do_sample=True, ...)`
(chain speculative sampling, `_speculative_sampling`), gated on the case's `TableLM`s.

Its exact law is `rheo.decoders.laws.Chain` with the draft processed *twice*, as transformers 5.24
does (its `generate` gets the target's warpers as a custom list and adds its own from the copied
config: temperature T acts as T², top-p is applied twice; docs/THIRD_PARTY.md, finding 2), in
sampling and in the ratio alike, so the decoder stays lossless and only its acceptance changes.
The heuristic schedules carry state across rounds and calls: their law is unknown here (None).
"""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from rheo.decoders import Decoder, Law, Row, Table
from rheo.decoders.generate import (
    HF_DEFAULTS,
    ON_DRAFT,
    PROCESSING,
    TRANSFORMERS_TIES,
    TRANSFORMERS_TIES_HELP,
    check_options,
    generate,
)
from rheo.decoders.laws import Chain, check_exact_float, table_drafter, table_row
from rheo_ref.models import Case

GEN_HELP = (
    "num_assistant_tokens, num_assistant_tokens_schedule, assistant_confidence_threshold (set on the draft's\n"
    "generation_config, where transformers reads them), temperature, top_k, top_p,\n" + TRANSFORMERS_TIES_HELP
)


def defaults(run: Any) -> dict[str, Any]:
    return {k: HF_DEFAULTS[k] for k in ON_DRAFT}


def chain_law(case: Case, n: int, run: Any, weight: Fraction) -> Law | None:
    """The exact law of the first n tokens of assisted generation with ensemble weight `weight`."""
    proc, opts = run.processing(), run.options()
    if opts["num_assistant_tokens_schedule"] != "constant":
        return None
    p = proc.table(case.target)
    q = proc.table(proc.table(case.q_samp_model))  # processed twice, as transformers does (finding 2)
    thr = check_exact_float(opts["assistant_confidence_threshold"], "assistant_confidence_threshold")
    chain = Chain(p, table_drafter(q, thr), table_row(q), weight, opts["num_assistant_tokens"], horizon=n + 1)
    return chain.token_law(case.context, n)


def exact_law(case: Case, n: int, run: Any) -> Law | None:
    return chain_law(case, n, run, Fraction(1))


def decode(case: Case, context: list[int], n: int, seed: int, num_samples: int, run: Any) -> list[tuple[int, ...]]:
    return generate(case, context, n, seed, num_samples, run.options(), draft=True)


# The slow profile of docs/THIRD_PARTY.md §2: alpha = 1e-4, delta = 0.05, the first 3 tokens (64 cells).
SLOW: dict[str, Any] = {"alpha": 1e-4, "tv": 0.05, "tokens": 3, "slow": True}
NO_STOP = {"assistant_confidence_threshold": 0.0}  # no confidence stop: the draft length is fixed

DECODER = Decoder(
    name="assisted",
    summary="target.generate(ids, assistant_model=draft, do_sample=True)",
    decode=decode,
    gen_keys=ON_DRAFT + PROCESSING,
    gen_help=GEN_HELP,
    exact_law=exact_law,
    defaults=defaults,
    check=check_options,
    ties=TRANSFORMERS_TIES,
    order=10,
    path="transformers/generation/utils.py (_speculative_sampling; AssistedCandidateGenerator)",
    table=Table(  # docs/THIRD_PARTY.md §2: the default profile (alpha = 1e-3, delta = 0.25, 2 tokens), then the slow one
        case="tests/cases/hf.json",
        tokens=2,
        tv=0.25,
        rows=(
            Row("k2", {"num_assistant_tokens": 2, **NO_STOP}, "k = 2, constant, no confidence stop"),
            Row(
                "heuristic",
                {"num_assistant_tokens": 2, "num_assistant_tokens_schedule": "heuristic", **NO_STOP},
                "k = 2 to start, heuristic schedule (its law is unknown here)",
            ),
            Row(
                "processed",
                {"num_assistant_tokens": 3, "temperature": 0.5, "top_k": 3, "top_p": 0.9},
                "k = 3, T = 1/2, top-k 3, top-p 0.9, default stop 0.4",
            ),
            *(Row(f"k{k} slow", {"num_assistant_tokens": k, **NO_STOP}, f"k = {k}", **SLOW) for k in (1, 2, 3)),
            Row(
                "heuristic slow",
                {"num_assistant_tokens": 2, "num_assistant_tokens_schedule": "heuristic", **NO_STOP},
                "heuristic schedule (state kept across calls)",
                **SLOW,
            ),
            Row(
                "threshold slow",
                {"num_assistant_tokens": 4, "assistant_confidence_threshold": 0.4},
                "k = 4, assistant_confidence_threshold 0.4",
                **SLOW,
            ),
            Row(
                "processed slow",
                {"num_assistant_tokens": 3, "temperature": 0.5, "top_k": 3, "top_p": 0.9},
                "k = 3, T = 1/2, top-k 3, top-p 0.9, stop 0.4",
                **SLOW,
            ),
        ),
    ),
)
