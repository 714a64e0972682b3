"""SGLang 0.5.23's EAGLE verify sampler on CPU: `chain_speculative_sampling_triton` (token-level and block
verification, the ROCm default path) in Triton's interpreter, with its top-k / top-p renormalisation
(docs/THIRD_PARTY.md, "SGLang"), and a request's own processors around it (min-p, logit bias, SGLang's
penalizers: docs/THIRD_PARTY.md, "SGLang 0.5.23's own processors"). `driver` runs in .venv-sglang; `law` is the
exact law as written.
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any

from rheo_ref.errors import CaseError
from rheo_ref.models import Case

from ..rows import Row, Table
from ..served import Served, table_request
from .law import (
    OWN_KEYS,
    ChainLaw,
    OwnLaw,
    Processing,
    check_stated,
    own_params,
    own_sampling,
    own_target_law,
    plain_target_law,
)

SUPPORTED = "==0.5.23"  # the releases this driver is known to drive (one: the pinned)
VERSION = "0.5.23"
RENORM_ON_CPU = (
    "renorm_triton.py line 57-58: _prepare_probs raises ValueError('renorm kernels require a CUDA/HIP "
    "tensor') for a CPU tensor, before any Triton kernel; on CPU renorm.py (lines 33-35) binds "
    "top_k_renorm_prob = top_p_renorm_prob = None. Runs on a GPU (CUDA: FlashInfer's; ROCm: these)"
)


def processing(gen: Mapping[str, Any]) -> Processing:
    k = gen.get("top_k")
    p = gen.get("top_p")
    return Processing(
        temperature=Fraction(str(gen.get("temperature", 1))),
        top_k=None if k is None else int(k),
        top_p=None if p is None else Fraction(str(p)),
    )


def exact_law(case: Case, gen: Mapping[str, Any], n: int) -> dict:
    own = own_sampling(case.target.vocab_size, dict(gen))
    if own is not None:
        return OwnLaw(case.target, case.draft, own, num_steps=int(gen.get("num_steps", 3))).token_law(case.context, n)
    td = gen.get("draft_temperature")
    law = ChainLaw(
        case.target,
        case.draft,
        processing(gen),
        num_steps=int(gen.get("num_steps", 3)),
        block=bool(gen.get("block_verification", False)),
        draft_temperature=None if td is None else Fraction(str(td)),
        **stated(gen),
    )
    return law.token_law(case.context, n)


def target_law(case: Case, gen: Mapping[str, Any], n: int) -> dict:
    """What SGLang's plain sampler draws: the joint top-k / top-p row at T, or with the request's own processors
    (`law.own_target_law`) every output token counted."""
    own = own_sampling(case.target.vocab_size, dict(gen))
    if own is not None:
        return own_target_law(case.target, own, case.context, n)
    return plain_target_law(case.target, processing(gen), case.context, n)


STATED_KEYS = ("zero_token", "q_row")  # the stated q rows an engine's degenerate drafter hands over


def stated(gen: Mapping[str, Any]) -> dict[str, Any]:
    """zero_token (a token id whose stated q is 0) and q_row (zero, nan) of --gen, checked (`law.check_stated`)."""
    out = {k: gen[k] for k in STATED_KEYS if gen.get(k) is not None}
    if out and (gen.get("draft_temperature") is not None or any(gen.get(k) is not None for k in OWN_KEYS)):
        raise CaseError(f"{sorted(out)[0]} is modelled without draft_temperature and SGLang's own processors")
    check_stated(out.get("zero_token"), out.get("q_row"), block=bool(gen.get("block_verification")))
    return out


def check(gen: Mapping[str, Any]) -> None:
    """Every setting parses (a bad value raises before the driver starts)."""
    processing(gen)
    int(gen.get("num_steps", 3))
    for key in ("draft_temperature", "threshold_single", "threshold_acc"):
        if gen.get(key) is not None:
            Fraction(str(gen[key]))
    stated(gen)
    own_sampling(2**31, dict(gen))  # (the token ids of logit_bias are checked against the case's V in the law)


def request(case: Case, context: list[int], n: int, seed: int, num_samples: int, gen: dict) -> dict:
    """The driver's request: the tables, and SGLang `SamplingParams` keywords where --gen sets its own processors."""
    req = table_request(case, context, n, seed, num_samples, gen)
    own = own_sampling(case.target.vocab_size, dict(gen))
    if own is not None:
        req["sampling_params"] = own_params(own)
    return req


GEN_HELP = (
    "temperature (1/k), num_steps (drafts a round, default 3), block_verification (true: Sun et al.),\n"
    "top_k, top_p (renorm kernels: CUDA/HIP only), threshold_single, threshold_acc, draft_temperature\n"
    "(the negative control: candidates drawn from q at this temperature, the kernel told q at T = 1);\n"
    "SGLang's own processors (a request's SamplingParams, token-level, T only): min_p, logit_bias t:f,...\n"
    "(bias ln f), frequency ρ (frequency_penalty -ln ρ), presence π (presence_penalty -ln π), repetition θ;\n"
    "the stated q rows of a degenerate drafter: zero_token (q(t) stated 0, not renormalised), q_row (zero, nan)"
)

OWN_PATH = (
    "sglang/srt/speculative/eagle_utils.py (eagle_sample, eagle_prepare_for_decode), "
    "sglang/srt/sampling/penaltylib and reject_sampling.py"
)
COUNTED = (
    "eagle_prepare_for_decode (eagle_utils.py lines 857-863) feeds the penalizers once a round with each request's "
    "last output token only (schedule_batch.py lines 3715-3734), and eagle_sample adds the same accumulated penalty "
    "at every draft position (lines 562-578): a token accepted inside a round is never counted"
)


def _counted_row(setting: str, gen: dict[str, Any], note: str) -> Row:
    """A penalty row: 3 drafts a round, the penalizers fed once a round (`COUNTED`)."""
    return Row(setting, {"num_steps": 3, **gen}, note, cause=COUNTED, path=OWN_PATH)


SERVED = Served("sglang", "rheo.decoders.sglang.driver", request=request, check=check, pin=VERSION, supported=SUPPORTED)
DECODER = SERVED.decoder(
    name="sglang",
    summary="SGLang 0.5.23 chain_speculative_sampling_triton (TRITON_INTERPRET=1), unmodified, in .venv-sglang",
    package="sglang",
    path="sglang/kernels/ops/speculative/reject_sampling.py",
    gen_help=GEN_HELP,
    order=80,
    gen_keys=(
        "temperature",
        "num_steps",
        "block_verification",
        "threshold_single",
        "threshold_acc",
        "draft_temperature",
        "top_k",
        "top_p",
        *OWN_KEYS,
        *STATED_KEYS,
    ),
    exact_law=exact_law,
    target_law=target_law,
    # renorm_triton's top-k and top-p keep every entry >= a pivot (law.top_k_keep, law.top_p_keep): a cut never
    # splits tied entries, by the kernels' construction (its own laws apply it; `--gen ties` is no key here)
    ties="all",
    table=Table(
        case="tests/cases/served.json",
        tokens=3,
        tv=0.2,
        rows=(
            Row("token T=1", {"num_steps": 3}, "token-level verification"),
            Row("token T=1/2", {"num_steps": 3, "temperature": 0.5}, "token-level, temperature 1/2"),
            Row("block T=1", {"num_steps": 3, "block_verification": True}, "block verification (Sun et al. 2024)"),
            Row("block T=1/2", {"num_steps": 3, "block_verification": True, "temperature": 0.5}, "block, T = 1/2"),
            Row(
                "thresholds 0.5",
                {"num_steps": 3, "threshold_single": 0.5, "threshold_acc": 0.5},
                "speculative_accept_threshold_single/acc = 0.5 (documented lossy): never reach the kernel "
                "(reject_sampling.py lines 254-255 are not passed on, lines 266-295), so the run is lossless",
            ),
            Row("top-k 2", {"num_steps": 3, "top_k": 2}, "top-k renorm, then verify", runs_here=RENORM_ON_CPU),
            Row(
                "top-p 0.7",
                {"num_steps": 3, "top_p": 0.7},
                "top-p renorm (>= rule), then verify",
                runs_here=RENORM_ON_CPU,
            ),
            Row(
                "top-k 3 + top-p 0.7",
                {"num_steps": 3, "top_k": 3, "top_p": 0.7},
                "both: the speculative path applies top-p to the top-k-renormalised row; the plain sampler keeps "
                "the joint top-k and top-p sets of the same row",
                cause="eagle_utils.py lines 728-743 (top_p_renorm_prob on the output of top_k_renorm_prob) vs "
                "sampler.py lines 435-439 (top_k_top_p_sampling_from_probs, filter_apply_order='joint')",
                runs_here=RENORM_ON_CPU,
            ),
            Row(
                "control: draft probs at T=1, drawn at T=1/4",
                {"num_steps": 3, "draft_temperature": 0.25},
                "negative control: the kernel is told q at T = 1 while the candidates come from q at T = 1/4 "
                "(eagle_utils.py requires draft_probs to be the proposal distribution)",
                cause="reject_sampling.py line 149: the ratio p/q uses the stated q, not the proposal's",
                control=True,
            ),
            Row(
                "q-zero",
                {"num_steps": 3, "zero_token": 1},
                "the drafter draws token 1 (q = 2/5 after 0) and states q(1) = 0, as an underflowed probability: "
                "rejected (line 148), and the residual reads the stated row",
            ),
            Row(
                "q-row-zero",
                {"num_steps": 3, "q_row": "zero"},
                "every stated q row all 0: every draft rejected, the residual is p",
            ),
            Row(
                "q-row-nan",
                {"num_steps": 3, "q_row": "nan"},
                "every stated q row all NaN: rejected (line 148: NaN > 0 is false), and the residual clamps NaN to 0 "
                "(lines 192-194, 220-222): a draw from p",
            ),
            Row(
                "block q-zero",
                {"num_steps": 3, "zero_token": 1, "block_verification": True},
                "block verification with q(1) stated 0: r_i = 0 at a draft of token 1 (line 72)",
            ),
            Row(
                "min-p 0.35",
                {"num_steps": 3, "min_p": 0.35},
                "a request's min_p = 0.35: the plain sampler keeps p >= min_p·max, the speculative verify never applies it",
                cause="eagle_utils.py lines 720-743: eagle_sample hands the kernel softmax(logits/T) with only top-k / "
                "top-p renorm and never reads sampling_info.min_ps (the plain sampler applies it, layers/sampler.py "
                "lines 407-411)",
                path=OWN_PATH,
            ),
            Row(
                "logit bias 3:4 0:1/2",
                {"num_steps": 3, "logit_bias": "3:4,0:1/2"},
                "a request's logit_bias {3: ln 4, 0: -ln 2}, added at every draft position (eagle_utils.py lines "
                "579-584) as the plain sampler adds it",
                path=OWN_PATH,
            ),
            _counted_row(
                "frequency 1/7",
                {"frequency": "1/7"},
                "frequency_penalty = ln 7 through SGLang's BatchedFrequencyPenalizer",
            ),
            _counted_row(
                "presence 1/7", {"presence": "1/7"}, "presence_penalty = ln 7 through SGLang's BatchedPresencePenalizer"
            ),
            _counted_row(
                "repetition 2 T=1/2",
                {"repetition": 2, "temperature": 0.5},
                "repetition_penalty = 2 (SGLang's "
                "largest) through SGLang's BatchedRepetitionPenalizer and apply_scaling_penalties, at T = 1/2",
            ),
        ),
    ),
)
