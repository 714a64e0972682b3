"""transformers' `generate` on the `TableLM`s of a case: the run and the options shared by the decoders
that call it (assisted, ensemble, prompt lookup; docs/THIRD_PARTY.md).

transformers 5.24 reads `num_assistant_tokens`, `num_assistant_tokens_schedule` and
`assistant_confidence_threshold` from the *assistant's* `generation_config` and ignores them when
given to `generate` (docs/THIRD_PARTY.md, finding 1), so they are set there; unset ones keep
transformers' defaults (20, "constant", 0.4).
"""

from __future__ import annotations

from typing import Any

from rheo_ref.errors import CaseError
from rheo_ref.models import Case

ON_DRAFT = ("num_assistant_tokens", "num_assistant_tokens_schedule", "assistant_confidence_threshold")
PROCESSING = ("temperature", "top_k", "top_p", "ties")
PROCESSING_HELP = "temperature, top_k, top_p"
TIES_HELP = "ties (all | low | high: who is kept of tokens tied at a top-k/top-p cut; such a cut is refused without it)"
# transformers' own rule at a cut between tied tokens (docs/PROCESSING.md, "Ties"): TopKLogitsWarper masks
# `scores < torch.topk(scores, top_k)[0][..., -1, None]` (generation/logits_process.py, transformers 5.25.0
# line 622), so every token tied with the k-th value is kept; TopPLogitsWarper cuts a `torch.sort` (line 557),
# whose order of tied logits is unspecified: no rule, such a cut is refused unless `ties` names one.
TRANSFORMERS_TIES = (("top_k", "all"),)
TRANSFORMERS_TIES_HELP = (
    'ties (all | low | high, or {"top_p": ...}: who is kept of tokens tied at a cut; top-k: transformers\'\n'
    "own rule, all, unless given; a top-p cut between tied tokens is refused without it)"
)
LAW_ONLY = ("ties",)  # read by the exact law only, never handed to the decoder
# The settings of the processing rows of docs/THIRD_PARTY.md's tables (eagle-llm, seqspec): (name, --gen).
PROCESSING_ROWS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("T=1", {}),
    ("T=1/2", {"temperature": 0.5}),
    ("top-p 0.9", {"top_p": 0.9}),
    (
        "top-k 2",
        {"top_k": 2, "ties": "all"},
    ),  # transformers' rule (TRANSFORMERS_TIES), named for seqspec, which has none
    ("T=1/2 top-p 0.9", {"temperature": 0.5, "top_p": 0.9}),
)
HF_DEFAULTS = {
    "num_assistant_tokens": 20,
    "num_assistant_tokens_schedule": "constant",
    "assistant_confidence_threshold": 0.4,
    "max_matching_ngram_size": 2,
}  # transformers 5.24's
SCHEDULES = ("constant", "heuristic", "heuristic_transient")
POSITIVE_INTS = ("num_assistant_tokens", "prompt_lookup_num_tokens", "max_matching_ngram_size")


def check_options(run: Any) -> None:
    """The processing, then every option that must be an integer >= 1, the schedule and the threshold."""
    opts = run.options()
    run.processing()
    for k in POSITIVE_INTS:
        if k in opts and (isinstance(opts[k], bool) or not isinstance(opts[k], int) or opts[k] < 1):
            raise CaseError(f"{k}={opts[k]!r} must be an integer >= 1")
    if opts.get("num_assistant_tokens_schedule", "constant") not in SCHEDULES:
        raise CaseError(
            f"num_assistant_tokens_schedule={opts['num_assistant_tokens_schedule']!r}; allowed: {', '.join(SCHEDULES)}"
        )
    thr = opts.get("assistant_confidence_threshold", 0)
    if isinstance(thr, bool) or not isinstance(thr, (int, float)) or not 0 <= thr < 1:
        raise CaseError(f"assistant_confidence_threshold={thr!r} must be a number in [0, 1)")


def generate(
    case: Case, context: list[int], n: int, seed: int, num_samples: int, opts: dict[str, Any], *, draft: bool,
    weight: float | None = None,
) -> list[tuple[int, ...]]:  # fmt: skip
    """`num_samples` calls of `target.generate(ids, do_sample=True, ...)` from `context`, n tokens kept
    each; `draft`: the case's q_samp as `assistant_model` (its options on its generation_config)."""
    import torch

    from rheo_fast.table_lm import table_lm

    target = table_lm(case.target)  # prompt-lookup brings its own draft: the case's may be absent
    kwargs = {k: v for k, v in opts.items() if k not in ON_DRAFT and k not in LAW_ONLY}
    if draft:
        assistant = table_lm(case.q_samp_model)
        for k in ON_DRAFT:  # where transformers reads them (finding 1)
            setattr(assistant.generation_config, k, opts[k])
        kwargs["assistant_model"] = assistant
    if weight is not None:
        kwargs["assistant_ensemble_weight"] = weight
    ids = torch.tensor([context])
    mask = torch.ones_like(ids)
    torch.manual_seed(seed % 2**63)
    out = []
    for _ in range(num_samples):  # n + 1 new tokens: see rheo.decoders.laws on draft caps
        seq = target.generate(ids, attention_mask=mask, do_sample=True, max_new_tokens=n + 1, **kwargs)
        out.append(tuple(seq[0, len(context) : len(context) + n].tolist()))
    return out
