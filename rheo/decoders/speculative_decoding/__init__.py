"""speculative-decoding 0.2.0 (PyPI) under the gate: its batched `speculative_decoding(net, small_net,
prompt, seq_len, gamma, temperature, filter_thres, lenience)` (Leviathan et al.'s algorithm 1), unmodified,
on the case's tables behind `rheo.testing.table_module` (logits and a KV-cache tuple, which the package
crops and realigns per row); its exact law as coded (`law.py`); docs/ECOSYSTEM.md."""

from __future__ import annotations

from typing import Any

from rheo.decoders import Decoder, Law, Row, Table
from rheo.decoders.generate import check_options
from rheo.decoders.laws import check_exact_float
from rheo_ref.errors import CaseError
from rheo_ref.models import Case

VERSION = "0.2.0"
MAX_GAMMA = 6  # the exact law enumerates V^gamma drafts a round


def defaults(run: Any) -> dict[str, Any]:
    return {"temperature": 1, "gamma": 5, "lenience": 1, "batch": 1}  # the package's, filter_thres aside


def check(run: Any) -> None:
    check_options(run)
    o = run.options()
    for key, top in (("gamma", MAX_GAMMA), ("batch", 64)):
        v = o[key]
        if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= top:
            raise CaseError(f"{key}={v!r} must be an integer in [1, {top}]")
    if check_exact_float(o["lenience"], "lenience") < 1:
        raise CaseError(f"lenience={o['lenience']!r} must be >= 1 (the package's acceptance divides by it)")


def exact_law(case: Case, n: int, run: Any) -> Law | None:
    from rheo.decoders.speculative_decoding.law import token_law

    proc, o = run.processing(), run.options()
    p, q = proc.table(case.target), proc.table(case.q_samp_model)  # torch.topk picks among ties: refused
    return token_law(p, q, case.context, n, o["gamma"], check_exact_float(o["lenience"], "lenience"))


def decode(case: Case, context: list[int], n: int, seed: int, num_samples: int, run: Any) -> list[tuple[int, ...]]:
    from speculative_decoding import speculative_decoding

    from rheo.testing import decode_batches, processing_args, table_module

    o, a, V = run.options(), processing_args(run), case.target.vocab_size
    thres = 1 - ((a["top_k"] or V) - 0.5) / V  # its top_k keeps ceil((1 - thres) * V) logits
    net, small = table_module(case.target, cache=True), table_module(case.q_samp_model, cache=True)

    def batch(prompt: Any) -> Any:
        out, _ = speculative_decoding(
            net, small, prompt, prompt.shape[1] + n, gamma=o["gamma"], temperature=a["temperature"],
            filter_thres=thres, lenience=float(o["lenience"]),
        )  # fmt: skip
        return out

    return decode_batches(batch, context, n, seed, num_samples, batch=o["batch"])


CAUSE = (
    "speculative_decoding/speculative_decoding.py:179 `q = small_prob.gather(-1, q_sampled_out) * lenience` "
    "accepts with min(1, p/(l·q)) while line 195 still resamples from (p − q)+"
)

DECODER = Decoder(
    name="speculative-decoding",
    summary=f"speculative-decoding {VERSION}'s batched speculative_decoding(...), unmodified;\n"
    f"pip install --no-deps speculative-decoding=={VERSION} einops beartype",
    decode=decode,
    gen_keys=("temperature", "top_k", "gamma", "lenience", "batch"),
    gen_help="gamma (drafts a round, 1..6, default 5), temperature (1/k, default 1), top_k (its filter_thres\n"
    "as 1 - (k - 1/2)/V; off: every logit), lenience (default 1; > 1 is lossy), batch (prompt rows, default 1)",
    exact_law=exact_law,
    defaults=defaults,
    check=check,
    requires=("speculative_decoding", "einops", "beartype", "transformers"),
    install=f"pip install --no-deps speculative-decoding=={VERSION} einops==0.8.2 beartype==0.23.1",
    package="speculative-decoding",
    order=110,
    path="speculative_decoding/speculative_decoding.py (speculative_decoding)",
    table=Table(
        case="tests/cases/hf.json",
        tokens=4,
        tv=0.25,
        rows=(
            Row("T=1", {"gamma": 3}),
            Row("T=1/2", {"gamma": 3, "temperature": 0.5}, slow=True),
            Row("top-k 2", {"gamma": 3, "top_k": 2}, slow=True),
            Row("top-k 1 (as its default filter_thres 0.9 on V=4)", {"gamma": 3, "top_k": 1}, slow=True),
            Row("batch 4", {"gamma": 3, "batch": 4}, note="rows realigned after ragged acceptance", slow=True),
            Row("batch 4 T=1/2 top-k 3", {"gamma": 3, "batch": 4, "temperature": 0.5, "top_k": 3}, slow=True),
            Row("lenience 3", {"gamma": 3, "lenience": 3}, control=True, cause=CAUSE, slow=True),
        ),
    ),
)
