"""transformers' prompt lookup decoding: `target.generate(ids, prompt_lookup_num_tokens=k, do_sample=True)`
on the case's target `TableLM` (it drafts from n-grams of the context: no draft model). Its exact law
is the chain of `rheo.decoders.laws` with the lookup drafter and q the point mass on the drafted
token ("sample y ~ p, keep x while y = x")."""

from __future__ import annotations

from typing import Any

from rheo.decoders import Decoder, Law, Row, Table
from rheo.decoders.generate import (
    HF_DEFAULTS,
    PROCESSING,
    TRANSFORMERS_TIES,
    TRANSFORMERS_TIES_HELP,
    check_options,
    generate,
)
from rheo.decoders.laws import Chain, lookup_drafter, point_mass
from rheo_ref.models import Case

LOOKUP = ("prompt_lookup_num_tokens", "max_matching_ngram_size")
LOOKUP_TOKENS = 3  # prompt_lookup_num_tokens when not given (transformers has no default: it is the switch)


def defaults(run: Any) -> dict[str, Any]:
    return {
        "prompt_lookup_num_tokens": LOOKUP_TOKENS,
        "max_matching_ngram_size": HF_DEFAULTS["max_matching_ngram_size"],
    }


def exact_law(case: Case, n: int, run: Any) -> Law | None:
    proc, opts = run.processing(), run.options()
    drafter = lookup_drafter(opts["prompt_lookup_num_tokens"], opts["max_matching_ngram_size"])
    chain = Chain(proc.table(case.target), drafter, point_mass(case.vocab_size), cap=n, horizon=n + 1)
    return chain.token_law(case.context, n)


def decode(case: Case, context: list[int], n: int, seed: int, num_samples: int, run: Any) -> list[tuple[int, ...]]:
    return generate(case, context, n, seed, num_samples, run.options(), draft=False)


DECODER = Decoder(
    name="prompt-lookup",
    summary=f"target.generate(ids, prompt_lookup_num_tokens=k, do_sample=True) (k = {LOOKUP_TOKENS} unless --gen)",
    decode=decode,
    gen_keys=LOOKUP + PROCESSING,
    gen_help="prompt_lookup_num_tokens, max_matching_ngram_size, temperature, top_k, top_p,\n" + TRANSFORMERS_TIES_HELP,
    exact_law=exact_law,
    defaults=defaults,
    check=check_options,
    ties=TRANSFORMERS_TIES,
    order=20,
    path="transformers/generation/candidate_generator.py (PromptLookupCandidateGenerator)",
    table=Table(  # docs/THIRD_PARTY.md §2: the default profile, then the slow one (alpha 1e-4, delta 0.05, 3 tokens)
        case="tests/cases/hf.json",
        tokens=2,
        tv=0.25,
        rows=(
            Row("3 candidates", {"prompt_lookup_num_tokens": 3}, "3 candidates, n-grams <= 2"),
            Row(
                "3 candidates slow",
                {"prompt_lookup_num_tokens": 3},
                "3 candidates, n-grams <= 2",
                alpha=1e-4,
                tv=0.05,
                tokens=3,
                slow=True,
            ),
        ),
    ),
)
