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

from rheo.decoders import Decoder, Law
from rheo.decoders.generate import HF_DEFAULTS, ON_DRAFT, PROCESSING, check_options, generate
from rheo.decoders.laws import Chain, check_exact_float, table_drafter, table_row
from rheo_ref.models import Case

GEN_HELP = (
    "num_assistant_tokens, num_assistant_tokens_schedule, assistant_confidence_threshold (set on the draft's\n"
    "generation_config, where transformers reads them), temperature, top_k, top_p"
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


DECODER = Decoder(
    name="assisted",
    summary="target.generate(ids, assistant_model=draft, do_sample=True)",
    decode=decode,
    gen_keys=ON_DRAFT + PROCESSING,
    gen_help=GEN_HELP,
    exact_law=exact_law,
    defaults=defaults,
    check=check_options,
)
