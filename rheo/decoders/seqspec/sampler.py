"""sequential-speculative-decoding 0.1.1 (`seqspecdecod`, PyPI) on a case's `TableLM`s (docs/THIRD_PARTY.md §7).

The package calls its models only as `model(input_ids).logits`, so rheo's `TableLM`s (rheo_fast.table_lm)
are its draft and target as they are. `sample_seqspec` runs the package's own generation loop,
`generation.speculative_generate`, unmodified, with one of its three round functions (`method`:
`standard`, `naive_hsd`, `capped_hsd`). That loop takes a tokenizer and a prompt; the stand-in
`IdTokenizer` hands it the case's context as the prompt's ids (no chat template, no end of sequence)
and writes the ids it decodes as text, which `sample_seqspec` reads back.

Processing: the package has a temperature of its own (`draft_temperature`, `target_temperature`: both
set to T, as its defaults are equal) and no top-k / top-p. With temperature only, the models are the
raw tables and the package applies T; with top-k or top-p the models are the processed tables
(`rheo.decoders.laws.Processing`: temperature, top-k, top-p, as transformers does) and its temperature is 1,
as a user wrapping the models would do it. Either way its law is its rule on the processed p and q.

seqspecdecod is imported on first use; install it with
`pip install --no-deps sequential-speculative-decoding==0.1.1`.
"""

from __future__ import annotations

from typing import Any

from rheo.decoders.laws import Processing
from rheo_ref.errors import CaseError, MissingDependencyError
from rheo_ref.models import Case

SEQSPEC_VERSION = "0.1.1"
METHODS = ("standard", "naive_hsd", "capped_hsd")  # speculative_generate's `method`
CRASH = -1  # the token written for a sample whose round crashed (torch.multinomial on a NaN row)


def _generation() -> Any:
    try:
        from seqspecdecod import generation
    except ImportError as e:
        raise MissingDependencyError(
            "the seqspec decoders need sequential-speculative-decoding: "
            f"pip install --no-deps sequential-speculative-decoding=={SEQSPEC_VERSION} ({e})"
        ) from None
    return generation


class IdTokenizer:
    """The tokenizer `speculative_generate` asks for, on token ids: the prompt is the context."""

    eos_token_id = None  # no end of sequence: the loop stops at max_new_tokens
    unk_token_id = None

    def __init__(self, context: list[int]) -> None:
        self.context = list(context)

    def apply_chat_template(self, messages: Any, **kwargs: Any) -> str:
        return ""

    def __call__(self, texts: Any, return_tensors: str = "pt") -> Any:
        from types import SimpleNamespace

        import torch

        return SimpleNamespace(input_ids=torch.tensor([self.context]))

    def convert_tokens_to_ids(self, token: str) -> None:
        return None  # no "</think>": equals unk_token_id, so the loop keeps every token as content

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return " ".join(str(i) for i in ids)


def seqspec_models(case: Case, proc: Processing) -> tuple[Any, Any, float]:
    """(draft, target, temperature) for the package: the raw tables and T, or the processed ones and 1."""
    from rheo_fast.table_lm import table_lm

    if proc.top_k is None and proc.top_p is None:
        return table_lm(case.q_samp_model), table_lm(case.target), 1 / proc.power
    return table_lm(proc.table(case.q_samp_model)), table_lm(proc.table(case.target)), 1.0


def sample_seqspec(
    case: Case, context: list[int], n: int, seed: int, num_samples: int, *, method: str, gamma: int, proc: Processing
) -> list[tuple[int, ...]]:
    """num_samples runs of `speculative_generate(method=…, gamma=…)` from `context`; the first n new
    tokens of each. A run that crashes in torch.multinomial (a round whose resampling row sums to 0:
    0/0 = NaN) gives n tokens `CRASH`, an outcome of target probability 0."""
    import torch

    if method not in METHODS:
        raise CaseError(f"seqspec method {method!r}; allowed: {', '.join(METHODS)}")
    gen = _generation()
    draft, target, T = seqspec_models(case, proc)
    tok = IdTokenizer(context)
    torch.manual_seed(seed % 2**63)  # the package draws its coins and tokens from torch's global generator
    out = []
    for _ in range(num_samples):
        try:
            res = gen.speculative_generate(
                draft, target, tok, "", max_new_tokens=n, gamma=gamma,
                draft_temperature=T, target_temperature=T, method=method,
            )  # fmt: skip
        except RuntimeError as e:
            if "probability tensor" not in str(e):
                raise
            out.append((CRASH,) * n)
            continue
        got = [int(t) for t in res["text"].split()]
        if len(got) < n:
            raise CaseError(f"speculative_generate returned {len(got)} new tokens, fewer than {n}")
        out.append(tuple(got[:n]))
    return out
