"""economize 0.3.2 (PyPI) under the gate: its verifiers (economize/decoding/verifiers.py), unmodified, driven
through the `Verifier` protocol as its `CycleDecoder` calls it for a chain (`commit.verify_chain`:
`verifier.verify_batch(logits, Draft, selector, seq, ends)`), with its own `TopPSampler` selector (temperature,
top-p, its seeded generator) and drafts made by the verifier's own `draft_many` on the draft table's logits.
`CycleDecoder` itself runs a transformers architecture's decoder layers through economize's `LayerRunner`
(`economize.apply`), which a table model does not have; the drafting loop (k drafts, one exact pass, commit)
is the adapter's. Exact laws in `law.py`; docs/ECOSYSTEM.md.

Options: `verifier` (rejection, the default lossless one; typical: Medusa's typical acceptance, documented
lossy, the negative control), `drafts` (sampled: the verifier's `draft_many`, which for `rejection` draws
from the selector's q and hands it over as `Draft.probs`; argmax: a deterministic drafter, `Draft.probs`
None, the case of its n-gram lookup), `k` (drafts a cycle: `DecodeConfig.cycle_length` − 1), `batch`."""

from __future__ import annotations

from typing import Any

from rheo.decoders import Decoder, Law, Row, Table
from rheo.decoders.generate import check_options
from rheo_ref.errors import CaseError
from rheo_ref.models import Case

VERSION = "0.3.2"
VERIFIERS = ("rejection", "typical")
DRAFTS = ("sampled", "argmax")
MAX_K = 6  # the exact law enumerates V^k drafts a cycle
THRESHOLD, ALPHA = 0.09, 0.3  # TypicalVerifier.default_options


def defaults(run: Any) -> dict[str, Any]:
    # k = 3: DecodeConfig's default cycle_length 4
    return {"verifier": "rejection", "drafts": "sampled", "temperature": 1, "k": 3, "batch": 1}


def check(run: Any) -> None:
    check_options(run)
    o = run.options()
    if o["verifier"] not in VERIFIERS:
        raise CaseError(f"verifier={o['verifier']!r}; allowed: {', '.join(VERIFIERS)}")
    if o["drafts"] not in DRAFTS:
        raise CaseError(f"drafts={o['drafts']!r}; allowed: {', '.join(DRAFTS)}")
    if o["verifier"] == "typical" and o["drafts"] != "argmax":
        raise CaseError("verifier=typical drafts the argmax itself (TypicalVerifier.draft_many): give drafts=argmax")
    if run.processing().top_k is not None:
        raise CaseError("top_k: economize's TopPSampler has temperature and top_p only")
    for key, top in (("k", MAX_K), ("batch", 64)):
        v = o[key]
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= top:
            raise CaseError(f"{key}={v!r} must be an integer in [1, {top}]")


def exact_law(case: Case, n: int, run: Any) -> Law | None:
    from rheo.decoders.economize.law import argmax_drafter, one_hot_row, typical_token_law
    from rheo.decoders.laws import Chain, table_drafter, table_row

    o, proc = run.options(), run.processing()
    p, q = proc.table(case.target), proc.for_draft().table(case.q_samp_model)  # TopPSampler processes q too
    if o["verifier"] == "typical":
        return typical_token_law(p, case.q_samp_model, case.context, n, o["k"], THRESHOLD, ALPHA)
    if o["drafts"] == "argmax":
        return Chain(p, argmax_drafter(case.q_samp_model), one_hot_row(p.vocab_size), cap=o["k"]).token_law(
            case.context, n
        )
    return Chain(p, table_drafter(q), table_row(q), cap=o["k"]).token_law(case.context, n)


def decode(case: Case, context: list[int], n: int, seed: int, num_samples: int, run: Any) -> list[tuple[int, ...]]:
    import torch
    from economize.decoding import VERIFIERS as REGISTERED
    from economize.decoding import DecodeConfig, Draft, TopPSampler

    from rheo.testing import decode_batches, processing_args, table_module

    o, a = run.options(), processing_args(run)
    k, L = o["k"], len(context)
    verifier: Any = REGISTERED.get(o["verifier"])(DecodeConfig(cycle_length=k + 1, verifier=o["verifier"]))
    selector = TopPSampler(temperature=a["temperature"], top_p=a["top_p"] or 1.0, seed=seed)
    target, small = table_module(case.target), table_module(case.q_samp_model)

    def cycles(prompt: torch.Tensor) -> list[list[int]]:
        rows = prompt.tolist()
        while min(len(r) for r in rows) < L + n:
            drafts, probs = [list[int]() for _ in rows], list[Any]()
            for _ in range(k):
                last = torch.stack([small(torch.tensor(r + d))[-1] for r, d in zip(rows, drafts, strict=True)])
                made: Any = (last.argmax(-1), None) if o["drafts"] == "argmax" else verifier.draft_many(last, selector)
                if made is None:
                    raise CaseError(f"economize's {o['verifier']} verifier drafted nothing (draft_many returned None)")
                tok, dist = made
                probs.append(dist)
                for d, t in zip(drafts, tok.tolist(), strict=True):
                    d.append(t)
            full = [r + d for r, d in zip(rows, drafts, strict=True)]
            logits = torch.stack([target(torch.tensor(f))[len(r) - 1 :] for r, f in zip(rows, full, strict=True)])
            draft = Draft(
                torch.tensor(drafts), [k] * len(rows), probs=None if probs[0] is None else torch.stack(probs, 1)
            )
            width = max(len(f) for f in full)
            seq = torch.tensor([f + [0] * (width - len(f)) for f in full])
            accepted, following = verifier.verify_batch(logits, draft, selector, seq, [len(r) for r in rows])
            for r, d, acc, nxt in zip(rows, drafts, accepted.tolist(), following.tolist(), strict=True):
                r += d[:acc] + [nxt]
        return [r[L:] for r in rows]

    return decode_batches(cycles, context, n, seed, num_samples, batch=o["batch"])


CAUSE = (
    "economize/decoding/verifiers.py:369 `p[:, :width].gather(2, tokens)[..., 0] > cut[:, :width]`: the documented lossy typical "
    "acceptance keeps a draft whenever p(x) > min(threshold, alpha·exp(−H(p))) (no coin), and line 410 draws "
    "the next token from p cut to {p ≥ cut}"
)

DECODER = Decoder(
    name="economize",
    summary=f"economize {VERSION}'s verifiers (rejection, typical) through the Verifier protocol, unmodified;\n"
    f"pip install --no-deps economize=={VERSION}",
    decode=decode,
    gen_keys=("verifier", "drafts", "temperature", "top_p", "k", "batch"),
    gen_help="verifier (rejection: default; typical: lossy), drafts (sampled: from q, default; argmax:\n"
    "deterministic, Draft.probs None), k (drafts a cycle, 1..6, default 3), temperature (1/k), top_p, batch",
    exact_law=exact_law,
    defaults=defaults,
    check=check,
    requires=("economize",),
    install=f"pip install --no-deps economize=={VERSION}",
    package="economize",
    order=150,
    path="economize/decoding/verifiers.py (RejectionVerifier, TypicalVerifier)",
    table=Table(
        case="tests/cases/hf.json",
        tokens=4,
        tv=0.25,
        rows=(
            Row("rejection T=1 k=3", {}),
            Row("rejection T=1/2 k=3", {"temperature": 0.5}, slow=True),
            Row("rejection top-p 0.9 k=3", {"top_p": 0.9}, slow=True),
            Row("rejection T=1 k=1", {"k": 1}, slow=True),
            Row("rejection argmax drafts k=3", {"drafts": "argmax"}, note="Draft.probs None: one-hot q", slow=True),
            Row("rejection batch 4 T=1/2", {"batch": 4, "temperature": 0.5}, slow=True),
            Row("typical k=3", {"verifier": "typical", "drafts": "argmax"}, control=True, cause=CAUSE, slow=True),
        ),
    ),
)
