"""rotalabs-accel 1.1.1 (PyPI) under the gate: its draft-model speculative decoding
(rotalabs_accel/speculative/core.py), unmodified, on the case's tables (docs/ECOSYSTEM.md).

- `api=speculative_decode`: the package's loop, `speculative_decode(draft, target, tokenizer, prompt,
  SpeculativeConfig(mode=SAMPLING, ...))`. It cannot run: `draft_tokens` (core.py:147) calls
  `sample_from_logits(next_logits, temperature, top_p, use_sampling=use_sampling)`, and sampling.py:16's
  `sample_from_logits(logits, temperature, top_k, top_p, min_tokens_to_keep)` has no `use_sampling`: a
  TypeError on the first draft, in greedy mode too.
- `api=verify_tokens` (default): its exported verifier, `verify_tokens(target, last_token, draft_tokens,
  draft_probs, cache, temperature, top_p, use_sampling=True)`, on drafts that the adapter draws from the
  table q at temperature T (the package's own drafter is the crashing `draft_tokens`), round after round.
  Its exact law is `rheo.decoders.chain_law` with its two departures from the algorithm: on a rejection
  (core.py:233-236) it subtracts only the drafted token's draft probability, `draft_dist[draft_token] =
  p_draft`, so the token comes from norm((p − q(x)·e_x)+) instead of norm((p − q)+); after k acceptances
  the bonus (core.py:258) is `sample_from_logits(logits, temperature, top_p, use_sampling)`, whose third
  positional parameter is top_k: top_k = max(0.9, 1) = 1, the target's argmax (ties all kept,
  sampling.py:115-126)."""

from __future__ import annotations

from typing import Any

from rheo.decoders import Decoder, Law, Row, Table
from rheo.decoders.generate import check_options
from rheo_ref.errors import CaseError
from rheo_ref.models import Case

VERSION = "1.1.1"
APIS = ("verify_tokens", "speculative_decode")
MAX_K = 6  # the exact law enumerates V^k drafts a round
TOP_P = 0.9  # SpeculativeConfig's default top_p, handed to verify_tokens as the package's loop does


def defaults(run: Any) -> dict[str, Any]:
    return {"api": "verify_tokens", "temperature": 1, "k": 4}  # k: SpeculativeConfig.lookahead_k


def check(run: Any) -> None:
    check_options(run)
    o = run.options()
    if o["api"] not in APIS:
        raise CaseError(f"api={o['api']!r}; allowed: {', '.join(APIS)}")
    if isinstance(o["k"], bool) or not isinstance(o["k"], int) or not 1 <= o["k"] <= MAX_K:
        raise CaseError(f"k={o['k']!r} must be an integer in [1, {MAX_K}]")


def _top1(r: Any) -> Any:
    from rheo_ref.laws import normalise

    top = max(r)
    return normalise(tuple(x if x == top else 0 * x for x in r))


def exact_law(case: Case, n: int, run: Any) -> Law | None:
    from rheo.decoders.chain_law import one_token_residual, token_law

    o, proc = run.options(), run.processing()
    if o["api"] != "verify_tokens":
        return None  # it crashes before a token
    p, q = proc.table(case.target), proc.table(case.q_samp_model)
    return token_law(p, q, case.context, n, o["k"], residual=one_token_residual, bonus=_top1)


class _Model:
    """A model as core.py calls it: `model(ids, past_key_values=..., use_cache=True)` with `.logits` and
    `.past_key_values` (None: no cache to trim); `prefix` is the sequence before the ids it is given."""

    def __init__(self, module: Any) -> None:
        self.module = module
        self.prefix: list[int] = []

    def __call__(self, ids: Any, past_key_values: Any = None, use_cache: bool = True) -> Any:
        from types import SimpleNamespace

        import torch

        full = torch.cat([torch.tensor([self.prefix], dtype=torch.long).reshape(1, -1), ids], dim=1)
        return SimpleNamespace(logits=self.module(full)[:, -ids.shape[1] :], past_key_values=None)


def decode(case: Case, context: list[int], n: int, seed: int, num_samples: int, run: Any) -> list[tuple[int, ...]]:
    import torch
    from rotalabs_accel.speculative import DecodingMode, SpeculativeConfig, speculative_decode, verify_tokens

    from rheo.testing import decode_batches, processing_args, table_module

    o, T = run.options(), processing_args(run)["temperature"]
    target, draft = _Model(table_module(case.target)), _Model(table_module(case.q_samp_model))
    q = run.processing().table(case.q_samp_model)

    def loop(prompt: torch.Tensor) -> list[list[int]]:
        cfg = SpeculativeConfig(lookahead_k=o["k"], max_new_tokens=n, temperature=T, mode=DecodingMode.SAMPLING)
        tok = _Tokenizer(prompt[0].tolist())
        text, _ = speculative_decode(draft, target, tok, "", cfg, torch.device("cpu"))
        return [[int(t) for t in text.split()][len(context) :]]

    def verify(prompt: torch.Tensor) -> list[list[int]]:
        seq = prompt[0].tolist()
        while len(seq) < len(context) + n:
            drafts, probs = list[int](), list[float]()
            for _ in range(o["k"]):
                row = torch.tensor([float(x) for x in q.row(tuple(seq + drafts))], dtype=torch.float64)
                x = int(torch.multinomial(row, 1))
                drafts.append(x)
                probs.append(float(row[x]))
            target.prefix = seq[:-1]
            got, _, _ = verify_tokens(
                target, torch.tensor([seq[-1:]]), torch.tensor(drafts), torch.tensor(probs), None,
                T, TOP_P, True,
            )  # fmt: skip
            seq += [int(t) for t in got]
        return [seq[len(context) :]]

    return decode_batches(verify if o["api"] == "verify_tokens" else loop, context, n, seed, num_samples)


class _Tokenizer:
    """What `speculative_decode` asks of a tokenizer, on ids."""

    eos_token_id = -1

    def __init__(self, ids: list[int]) -> None:
        self.ids = ids

    def encode(self, prompt: str, return_tensors: str = "pt") -> Any:
        import torch

        return torch.tensor([self.ids])

    def decode(self, ids: Any, skip_special_tokens: bool = True) -> str:
        return " ".join(str(int(i)) for i in ids)


CAUSE = (
    "rotalabs_accel/speculative/core.py:235 `draft_dist[draft_token] = p_draft`: the rejection's residual "
    "subtracts q(x) from p(x) alone, not q from p; core.py:258 passes top_p where sample_from_logits takes "
    "top_k, so the bonus is the target's argmax"
)
CRASH = (
    "TypeError: sample_from_logits() got an unexpected keyword argument 'use_sampling' "
    "(rotalabs_accel/speculative/core.py:147, draft_tokens; sampling.py:16 has no such parameter)"
)

DECODER = Decoder(
    name="rotalabs-accel",
    summary=f"rotalabs-accel {VERSION}'s speculative_decode / verify_tokens (draft-model chain), unmodified;\n"
    f"pip install --no-deps rotalabs-accel=={VERSION}",
    decode=decode,
    gen_keys=("api", "temperature", "k"),
    gen_help="api (verify_tokens: its verifier on drafts from q, default; speculative_decode: its loop),\n"
    "k (drafts a round, 1..6, default 4), temperature (1/k, default 1); top_p is its default 0.9",
    exact_law=exact_law,
    defaults=defaults,
    check=check,
    requires=("rotalabs_accel", "transformers"),
    install=f"pip install --no-deps rotalabs-accel=={VERSION}",
    package="rotalabs-accel",
    order=140,
    path="rotalabs_accel/speculative/core.py (verify_tokens, speculative_decode)",
    table=Table(
        case="tests/cases/hf.json",
        tokens=4,
        tv=0.25,
        rows=(
            Row("verify_tokens T=1 k=1", {"k": 1}, cause=CAUSE),
            Row("verify_tokens T=1 k=3", {"k": 3}, cause=CAUSE, tv=0.1, slow=True),
            Row("verify_tokens T=1/2 k=3", {"k": 3, "temperature": 0.5}, cause=CAUSE, tv=0.1, slow=True),
            Row("speculative_decode (SAMPLING)", {"api": "speculative_decode", "k": 3}, runs_here=CRASH),
        ),
    ),
)
