"""vLLM 0.33.0's `RejectionSampler` (vllm/v1/sample/rejection_sampler.py), judged unmodified.

It runs in `.venv-vllm` (`make .venv-vllm/.installed`) through `driver.py`, in Triton's CPU
interpreter; its exact law as written is `law.VLLMLaw` (`law(case, gen, n)`), `sampler(gen)` a rheo gate
sampler `(case, seed, num_samples) -> sequences`. `DECODER` is its registry entry: `rheo gate --decoder vllm`
gates it, `--rows all` reproduces its verdict table (docs/THIRD_PARTY.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction
from typing import Any

from rheo_ref.errors import CaseError
from rheo_ref.models import Case
from rheo_ref.processing import merge_ties

from ..rows import Row, Table
from ..served import Served, device, ran_on
from .law import PENALTY_KEYS, AdaptiveLaw, BlockLaw, FlyLaw, Law, Setting, VLLMLaw, bad_words_row, min_p_table
from .mixed import judge_mixed

ENV, MODULE, VERSION = "vllm", "rheo.decoders.vllm.driver", "0.33.0"  # VERSION: the release rheo's CI pins
# The releases the driver drives: 0.33.x (vllm/v1/sample/rejection_sampler.py, and the V2 runner's block
# verification) and 0.34.x (only the V2 runner's sampler, vllm/v1/worker/gpu/spec_decode/; see driver.py).
SUPPORTED = ">=0.33.0,<0.35"
# vLLM's own rule at a cut between tied tokens (docs/PROCESSING.md, "Ties"): in vllm/v1/sample/ops/
# topk_topp_sampler.py, apply_top_k_top_p_pytorch (lines 524-565) masks `logits_sort < logits_sort.gather(1,
# V - k)` (apply_top_k_only, line 568, `logits <` the k-th topk value): every token tied with the k-th is kept.
# Its top-p cuts `logits.sort(dim=-1, descending=False)`, whose order of tied logits is unspecified: no rule.
VLLM_TIES = (("top_k", "all"),)
SECONDS_PER_SAMPLE = 0.5  # the driver's timeout: generous against ~0.05-0.1 s a sample in the interpreter
GEN_KEYS = {
    "temperature": "1/k for an integer k, or 0 (greedy)",
    "top_k": "keep the tokens >= the k-th largest (vLLM's PyTorch path, HAS_TRITON=False)",
    "top_p": "drop tokens whose ascending cumulative mass is <= 1 - top_p (PyTorch path)",
    "topk_topp": "pytorch (default: HAS_TRITON=False, vLLM's PyTorch top-k/top-p) or triton (vLLM's Triton\n"
    "top-k/top-p kernel, topk_topp_triton.py: compiled on CUDA only, --device cuda; the same law)",
    "ties": 'all, low or high (or {"top_p": ...}): who is kept of tokens tied at a cut; top-k: vLLM\'s own rule,\n'
    "all, unless given; a top-p cut between tied tokens is refused without it",
    "k": "drafts per round (num_speculative_tokens), 0..128; default 2",
    "draft_probs": "1: hand vLLM the q rows; 0: none (one-hot drafts, as n-gram drafting); default 1",
    "min_p": "vLLM's own MinPLogitsProcessor (unmodified, 0.33's V1 path), a number in [0, 1]; 0: off",
    "seed": "a per-request seed (vLLM draws this request's randomness from its own torch.Generator)",
    "method": "token (default: 0.33's vllm.v1.sample.rejection_sampler, 0.34's V2 rejection_sample), block (the\n"
    "V2 runner's block verification, T = 1), fly (0.34's lossy FLy, T = 1: a negative control) or adaptive\n"
    "(0.34's adaptive verification: assign_draft_token_budget admits a prefix of the drafts, T = 1)",
    "adaptive_budget": "method=adaptive: the draft budget of the batch (the judged request and a companion, 2k slots)",
    "adaptive_companion": "method=adaptive: the companion's k per-step confidences, e.g. 15/32,7/16,1/2",
    "adaptive_confidence": "method=adaptive: state (default: c_i = max q at the step's context, as DSpark's head sees\n"
    "the state before x_i) or draft (c_i = q(x_i): a confidence that sees its own draft)",
    "bad_words": "token ids joined by '-', words by ',' (3: ban 3; 1-3: ban 3 right after 1 in the output): vLLM's bad\n"
    "words (0.33: SamplingMetadata.bad_words_token_ids; runner=v2: the V2 runner's apply_bad_words), T = 1",
    "runner": "v2: drive the V2 runner's rejection_sample with its own logit bias / penalties / bad words / min-p\n"
    "(apply_logit_bias, apply_penalties, apply_bad_words, apply_min_p: applied at every position, in that order, as\n"
    "Sampler.apply_sampling_params does)",
    "fly_window": "method=fly: FLy's window W, 1..k-1; default min(6, k - 1) (vLLM's SpeculativeConfig)",
    "fly_threshold": "method=fly: the top-k entropy threshold; default 0.3 (vLLM's)",
    "fly_top_k": "method=fly: the tokens of the entropy; default 3 (vLLM's)",
    "synthetic": "comma-separated unconditional acceptance rates: vLLM's lossy synthetic method (negative control)",
    "logit_bias": "token:factor pairs, e.g. 3:4: vLLM's own LogitBiasLogitsProcessor with logit_bias {token: ln factor}\n"
    "(0.33's V1 path; runner=v2: the V2 runner's apply_logit_bias), T = 1",
    "repetition": "repetition_penalty θ, an integer >= 1 (prompt and output tokens: w^θ); 0.33's V1 path or runner=v2, T = 1",
    "frequency": "ρ in (0, 1]: frequency_penalty = -ln ρ (w·ρ^count in the output); 0.33's V1 path or runner=v2, T = 1",
    "presence": "π in (0, 1]: presence_penalty = -ln π (w·π once in the output); 0.33's V1 path or runner=v2, T = 1",
    "pad": "the last `pad` of the k draft slots hold the padded id -1 (their q rows handed as zeros), as an engine\n"
    "pads a ragged batch; 0.33's V1 path",
    "zero_token": "the q rows handed to vLLM state q(token) = 0 (not renormalised: an underflowed probability) while\n"
    "the drafter still draws it; 0.33's V1 path, draft_probs=1",
    "q_row": "zero or nan: every q row handed to vLLM all zero / all NaN (a degenerate drafter); 0.33's V1 path",
}
VERIFIER_KEYS = ("pad", "zero_token", "q_row")  # the verifier inputs the harness hands vLLM, not the settings


def _method(gen: dict[str, Any]) -> str:
    m = gen.get("method", "token")
    if m not in ("token", "block", "fly", "adaptive"):
        raise CaseError(f"method={m!r}; allowed: token, block, fly, adaptive")
    if m != "adaptive" and any(k.startswith("adaptive_") for k in gen):
        raise CaseError(f"{sorted(k for k in gen if k.startswith('adaptive_'))[0]} without method=adaptive")
    if gen.get("runner") not in (None, "v2"):
        raise CaseError(f"runner={gen['runner']!r}; allowed: v2")
    if gen.get("runner") and (m != "token" or gen.get("synthetic") is not None):
        raise CaseError("runner=v2 is token-level verification; block, fly, adaptive and synthetic are V2 already")
    if gen.get("runner") and any(gen.get(x) is not None for x in VERIFIER_KEYS):
        bad = next(x for x in VERIFIER_KEYS if gen.get(x) is not None)
        raise CaseError(
            f"{bad} with runner=v2: runner=v2 drives min_p, bad_words, logit_bias and penalties; the verifier inputs "
            "(pad, zero_token, q_row): 0.33's V1 path"
        )
    if m != "token" and gen.get("synthetic") is not None:
        raise CaseError(f"method={m} with synthetic: vLLM refuses the pair (synthetic is a method of its own)")
    if m != "token" and any(gen.get(k) is not None for k in (*PENALTY_KEYS, *VERIFIER_KEYS)):
        bad = next(k for k in (*PENALTY_KEYS, *VERIFIER_KEYS) if gen.get(k) is not None)
        raise CaseError(f"{bad} with method={m}: modelled for token-level verification only; allowed: method=token")
    if m != "fly" and any(k.startswith("fly_") for k in gen):
        raise CaseError(f"{sorted(k for k in gen if k.startswith('fly_'))[0]} without method=fly; allowed: method=fly")
    return str(m)


def _fly(gen: dict[str, Any], k: int) -> dict[str, Any]:
    """FLy's window, entropy threshold and top-k (vLLM's SpeculativeConfig defaults where not given)."""
    w, thr, top = gen.get("fly_window", min(6, k - 1)), gen.get("fly_threshold", 0.3), gen.get("fly_top_k", 3)
    for name, v in (("fly_window", w), ("fly_top_k", top)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise CaseError(f"{name}={v!r} must be an integer >= 1")
    if isinstance(thr, bool) or not isinstance(thr, (int, float)) or not thr >= 0:
        raise CaseError(f"fly_threshold={thr!r} must be a number >= 0")
    if not w < k:
        raise CaseError(f"fly_window={w} with k={k}; allowed: 1..k-1 (vLLM's SpeculativeConfig)")
    return {"window": w, "threshold": float(thr), "top_k": top}


def _adaptive(gen: dict[str, Any], k: int) -> dict[str, Any]:
    """Adaptive verification's budget, companion confidences and confidence rule."""
    b = gen.get("adaptive_budget", k)
    if isinstance(b, bool) or not isinstance(b, int):
        raise CaseError(f"adaptive_budget={b!r} must be an integer")
    comp = gen.get("adaptive_companion", ",".join(["1/2"] * k))
    try:
        cs = [Fraction(x.strip()) for x in str(comp).split(",")]
    except (ValueError, ZeroDivisionError):
        raise CaseError(f"adaptive_companion={comp!r}: k rational confidences, e.g. 15/32,7/16,1/2") from None
    return {"budget": b, "companion": cs, "confidence": gen.get("adaptive_confidence", "state")}


def _parse(gen: dict[str, Any]) -> tuple[Setting, bool, list[Fraction] | None]:
    bad = sorted(set(gen) - set(GEN_KEYS))
    if bad:
        raise CaseError(f"--gen {bad[0]!r} is not a vLLM option here; allowed: {', '.join(GEN_KEYS)}")
    dp = gen.get("draft_probs", 1)
    if dp not in (0, 1, True, False):
        raise CaseError(f"draft_probs={dp!r} must be 0 or 1")
    syn = gen.get("synthetic")
    rates = None
    if syn is not None:
        rates = [Fraction(x) for x in str(syn).split(",")]
        if any(not 0 <= r <= 1 for r in rates) or any(b > a for a, b in zip(rates, rates[1:])):
            raise CaseError(f"synthetic={syn!r}: rates must lie in [0, 1] and not increase")
    if gen.get("topk_topp", "pytorch") not in ("pytorch", "triton"):
        raise CaseError(f"topk_topp={gen['topk_topp']!r}; allowed: pytorch, triton")
    settings = {k: v for k, v in gen.items() if k in ("temperature", "top_k", "top_p", "k", "min_p", *PENALTY_KEYS)}
    settings["ties"] = merge_ties(VLLM_TIES, gen.get("ties"))
    return Setting.from_gen(settings), bool(dp), rates


def request(case: Case, gen: dict[str, Any], seed: int, num_samples: int, *, tokens: int | None = None) -> dict:
    """The driver's request for one setting (the gate's sampler; a mixed batch lists several)."""
    s, dp, rates = _parse(gen)
    spec: dict[str, Any] = {"temperature": 0.0 if s.greedy else 1.0 / s.power, "k": s.k, "num_samples": num_samples}
    spec.update(top_k=s.top_k, top_p=None if s.top_p is None else float(s.top_p), seed=gen.get("seed"))
    if gen.get("min_p") is not None:  # (0: vLLM's processor is built, and off)
        spec["min_p"] = float(Fraction(str(gen["min_p"])))
    if s.bias:  # vLLM's logit_bias: ln(factor) added to the logit
        spec["logit_bias"] = {str(t): math.log(f) for t, f in s.bias}
    if s.repetition != 1 or s.frequency != 1 or s.presence != 1:
        spec.update(repetition_penalty=float(s.repetition), frequency_penalty=-math.log(s.frequency),
                    presence_penalty=-math.log(s.presence))  # fmt: skip
    if s.bad_words:
        spec["bad_words"] = [list(w) for w in s.bad_words]
    spec.update(_verifier(gen, s))
    extra: dict[str, Any] = {"runner": "v2"} if gen.get("runner") else {}
    if gen.get("topk_topp") is not None:  # (the driver's default: pytorch)
        extra["topk_topp"] = gen["topk_topp"]
    if _method(gen) == "adaptive":
        a = _adaptive(gen, s.k)
        AdaptiveLaw.validate(s, **a)
        extra["adaptive"] = {"budget": a["budget"], "companion": [float(c) for c in a["companion"]],
                             "confidence": a["confidence"]}  # fmt: skip
    return {
        **extra,
        "target": case.target.to_json(),
        "draft": case.q_samp_model.to_json(),
        "context": list(case.context),
        "tokens": case.tokens if tokens is None else tokens,
        "draft_probs": dp,
        "seed": seed % 2**62,
        "requests": [spec],
        "synthetic_rates": None if rates is None else [float(r) for r in rates],
        "method": _method(gen),
        **({"fly": _fly(gen, s.k)} if _method(gen) == "fly" else {}),
    }


def _verifier(gen: dict[str, Any], s: Setting) -> dict[str, Any]:
    """The verifier inputs of --gen (pad, zero_token, q_row), checked as the law checks them."""
    out = {k: gen[k] for k in VERIFIER_KEYS if gen.get(k) is not None}
    pad = out.get("pad", 0)
    if isinstance(pad, bool) or not isinstance(pad, int) or not 0 <= pad <= s.k:
        raise CaseError(f"pad={pad!r} must be an integer in 0..k={s.k}")
    z = out.get("zero_token")
    if z is not None and (isinstance(z, bool) or not isinstance(z, int) or z < 0):
        raise CaseError(f"zero_token={z!r} must be a token id")
    if out.get("q_row") not in (None, "zero", "nan"):
        raise CaseError(f"q_row={out['q_row']!r}; allowed: zero, nan")
    if (z is not None or "q_row" in out) and gen.get("draft_probs", 1) in (0, False):
        raise CaseError("zero_token / q_row state the q rows handed to vLLM: they need draft_probs=1")
    if out and (s.history or s.min_p or s.greedy):
        raise CaseError(f"{sorted(out)[0]} with penalties, logit_bias, min_p or temperature 0: modelled without them")
    return out


def sampler(gen: dict[str, Any]) -> Callable[[Case, int, int], list[tuple[int, ...]]]:
    """A rheo gate sampler running vLLM's RejectionSampler with these --gen settings."""
    _parse(gen)

    def sample(case: Case, seed: int, num_samples: int) -> list[tuple[int, ...]]:
        req = request(case, gen, seed, num_samples)
        reply = SERVED.run(req, timeout=60 + SECONDS_PER_SAMPLE * num_samples * case.tokens)
        ran_on(reply, device(), MODULE)
        return [tuple(s) for s in reply["samples"][0]]

    return sample


def law(case: Case, gen: dict[str, Any], n: int, *, progress: bool = False) -> Law:
    """The exact law of the first n tokens vLLM's RejectionSampler emits with these settings."""
    s, dp, rates = _parse(gen)
    if _method(gen) == "fly":
        return FlyLaw(case.target, case.q_samp_model, s, draft_probs=dp, **_fly(gen, s.k)).token_law(
            case.context, n, progress=progress
        )
    if _method(gen) == "adaptive":
        return AdaptiveLaw(case.target, case.q_samp_model, s, draft_probs=dp, **_adaptive(gen, s.k)).token_law(
            case.context, n, progress=progress
        )
    if _method(gen) == "block":
        return BlockLaw(case.target, case.q_samp_model, s, draft_probs=dp).token_law(case.context, n, progress=progress)
    v = _verifier(gen, s)
    return VLLMLaw(
        case.target, case.q_samp_model, s, draft_probs=dp, synthetic_rates=rates, pad=v.get("pad", 0),
        zero_token=v.get("zero_token"), q_row=v.get("q_row"), v2=bool(gen.get("runner")),
    ).token_law(case.context, n, progress=progress)  # fmt: skip


def target(case: Case, gen: dict[str, Any], n: int) -> Law:
    """The target law the settings claim: the processed p (the argmax chain at temperature 0)."""
    from rheo_ref.exact import target_law

    s, _, _ = _parse(gen)
    if s.greedy:
        ctx, out = list(case.context), []
        for _ in range(n):
            row = case.target.row(ctx)
            out.append(row.index(max(row)))
            ctx.append(out[-1])
        return {tuple(out): Fraction(1)}
    if s.history:  # bias and penalties at every position, on the output so far (rheo_ref.processing, vLLM's order)
        from rheo.decoders.rounds import single_token_law
        from rheo_ref.processing import process

        lead = len(case.context)
        proc = s.penalised()

        def row_of(c: tuple[int, ...]) -> tuple:
            out = c[lead:]
            row = process(case.target.row(list(c)), proc, [out.count(t) for t in range(case.target.vocab_size)], c)
            return bad_words_row(row, s.bad_words, out, repr(list(c))) if s.bad_words else row

        return single_token_law(row_of, case.context, n)
    c = s.processing.case(case)
    if s.min_p:  # min-p claims its processed p at every position
        c = replace(c, target=min_p_table(c.target, s.min_p))
    return target_law(c, n)


def driver_request(case: Case, context: list[int], n: int, seed: int, num_samples: int, gen: dict) -> dict:
    """The driver's request of the gate (`Served.request`): one request of these settings."""
    return request(replace(case, context=tuple(context)), gen, seed, num_samples, tokens=n)


def check(gen: dict[str, Any]) -> None:
    s, _, _ = _parse(gen)
    _verifier(gen, s)
    if _method(gen) == "fly":
        _fly(gen, s.k)
    if _method(gen) == "adaptive":
        AdaptiveLaw.validate(s, **_adaptive(gen, s.k))


def claimed(case: Case, gen: dict[str, Any], n: int) -> Law | None:
    """The law a setting claims where it is not the processed p: the argmax chain at temperature 0."""
    special = gen.get("temperature") == 0 or gen.get("min_p") or any(gen.get(k) is not None for k in PENALTY_KEYS)
    return target(case, gen, n) if special else None


BLOCK_PATH = "vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py (rejection_sample, block)"
V2_PATH = "vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py (rejection_sample)"
ADAPTIVE_PATH = (
    "vllm/v1/worker/gpu/spec_decode/adaptive_verification.py (assign_draft_token_budget; 0.33: "
    "_assign_draft_token_budget) and rejection_sampler_utils.py (rejection_sample)"
)
V2_SAMPLE_PATH = "vllm/v1/worker/gpu/sample/{bad_words.py (apply_bad_words), min_p.py (apply_min_p)} and " + V2_PATH
V2_BIAS_PATH = "vllm/v1/worker/gpu/sample/logit_bias.py (apply_logit_bias) and " + V2_PATH
V2_PENALTIES_PATH = "vllm/v1/worker/gpu/sample/penalties.py (bincount, apply_penalties) and " + V2_PATH
ADAPTIVE_ROW = {"k": 3, "method": "adaptive", "adaptive_budget": 3, "adaptive_companion": "15/32,7/16,1/2"}
# Block verification with draft logits resamples through `tldevice.log1p` (_resample_kernel: 0.33.0 line 946,
# 0.34.0 line 986), CUDA libdevice, which Triton's interpreter lacks: the driver gives the interpreter a log1p
# (numpy's, on Triton's libdevice module; driver.interpreter_libdevice), never an edit of vLLM's files.
LOG1P_NOTE = "Triton's interpreter has no libdevice log1p: the driver's interpreter-side log1p (numpy) runs it"
SERVED = Served(ENV, MODULE, request=driver_request, samples=lambda reply: reply["samples"][0],
                seconds_per_sample=SECONDS_PER_SAMPLE, check=check, pin=VERSION, supported=SUPPORTED)  # fmt: skip

# The joint law of the first 2 tokens of tests/cases/hf.json (16 cells): at N of a few hundred a joint law
# of 4 tokens (256 cells) is pooled into 2 cells, whose TV can be far below the decoder's (the synthetic
# control at 4 tokens, exact TV 0.478, passed twice that way). Depth (rounds 1 and 2, the bonus after 3
# accepted at token 4) is the horizon row's: every window (x_{k-1}, x_k), k <= 8.
DECODER = SERVED.decoder(
    name="vllm",
    summary=f"vLLM {SUPPORTED} rejection sampler as installed (0.33: RejectionSampler, token-level, top-k/top-p\n"
    "on its PyTorch path; method=block: the V2 runner's block verification; 0.34: the V2 runner's\n"
    "rejection_sample), unmodified, in Triton's interpreter",
    package="vllm",
    path="vllm/v1/sample/rejection_sampler.py (RejectionSampler; 0.34: vllm/v1/worker/gpu/spec_decode/"
    "rejection_sampler_utils.py, rejection_sample)",
    gen_keys=tuple(GEN_KEYS),
    gen_help="\n".join(f"{k}: {v}" for k, v in GEN_KEYS.items()),
    exact_law=law,
    target_law=claimed,
    order=70,
    ties=VLLM_TIES,
    table=Table(
        case="tests/cases/hf.json",
        tokens=2,
        tv=0.2,
        rows=(
            Row("draft-probs", {"k": 3}, "token-level, q rows handed to vLLM"),
            Row("one-hot", {"k": 3, "draft_probs": 0}, "no draft probs (one-hot drafts, as n-gram drafting)"),
            Row(
                "processed",
                {"k": 3, "temperature": 0.5, "top_k": 3, "top_p": 0.9},
                "T = 1/2, top-k 3, top-p 0.9 at the verified positions and the bonus (PyTorch top-k/top-p path)",
            ),
            Row("bonus", {"k": 1, "temperature": 0.5, "top_k": 2, "draft_probs": 0}, "k = 1: the bonus at token 2"),
            Row(
                "horizon", {"k": 3}, "every window (x_{k-1}, x_k), k <= 8: rounds 1 and 2 and their bonuses", horizon=8
            ),
            Row(
                "mixed-batch",
                {},
                "one batch whose requests differ in settings and seeds; alpha/4 each",
                judge=judge_mixed,
            ),
            Row(
                "block-one-hot",
                {"k": 3, "method": "block", "draft_probs": 0},
                "block verification (V2 runner), one-hot drafts, T = 1",
                path=BLOCK_PATH,
            ),
            Row(
                "block-draft-probs",
                {"k": 3, "method": "block"},
                f"block verification with draft logits ({LOG1P_NOTE})",
                path=BLOCK_PATH,
            ),
            Row(
                "min-p-0.5",
                {"k": 3, "min_p": 0.5},
                "vLLM's own MinPLogitsProcessor at min_p = 0.5 handed to 0.33's RejectionSampler (the sampler's own "
                "path; vLLM's engine refuses min_p with speculative decoding, sampling_params.py lines 1193-1197, and "
                "build_logitsprocs loads no MinPLogitsProcessor then, logits_processor/__init__.py lines 207-215)",
                cause="min-p reaches the bonus token only: apply_logits_processors runs only "
                "`logitsprocs.non_argmax_invariant` at verified positions (0.33.0 vllm/v1/sample/rejection_sampler.py "
                "line 372), and MinPLogitsProcessor.is_argmax_invariant returns True (logits_processor/builtin.py "
                "line 49); the bonus goes through Sampler (sampler.py line 346)",
            ),
            Row("min-p-0", {"k": 3, "min_p": 0}, "MinPLogitsProcessor at min_p = 0 (off): the lossless setting"),
            Row(
                "logit-bias",
                {"k": 3, "logit_bias": "3:4"},
                "vLLM's own LogitBiasLogitsProcessor, logit_bias {3: ln 4}, through 0.33's RejectionSampler (vLLM's "
                "engine refuses logit_bias with speculative decoding, sampling_params.py lines 1193-1197)",
                cause="logit bias reaches the bonus token only: of the non-argmax-invariant processors "
                "RejectionSampler.apply_logits_processors applies only MinTokensLogitsProcessor at verified positions "
                "(0.33.0 vllm/v1/sample/rejection_sampler.py lines 372-373); the bonus's Sampler applies every one "
                "(sampler.py line 464)",
            ),
            Row(
                "penalties",
                {"k": 3, "repetition": 2, "frequency": "1/2", "presence": "1/2"},
                "repetition_penalty 2, frequency_penalty = presence_penalty = ln 2 (SamplingMetadata as the input "
                "batch builds it), at the verified positions on the output and the drafts before them",
            ),
            Row("padded", {"k": 3, "pad": 1}, "the last draft slot padded with id -1 (a zero q row handed)"),
            Row("padded-one-hot", {"k": 3, "pad": 1, "draft_probs": 0}, "a padded draft id -1, no draft probs"),
            Row("q-zero", {"k": 3, "zero_token": 1}, "the q rows handed state q(1) = 0; the drafter still draws 1"),
            Row("q-row-zero", {"k": 3, "q_row": "zero"}, "every q row handed is all zero (a degenerate drafter)"),
            Row(
                "q-row-nan",
                {"k": 3, "q_row": "nan"},
                "every q row handed is all NaN (a degenerate drafter): vLLM emits token 0, one a round",
                cause="a NaN draft row fails `draft_prob > 0` (rejection_sampler.py line 951: rejected), "
                "`tl.maximum(target_prob - draft_prob, 0.0)` turns NaN into 0 (line 1128, a maxnum), every score is 0 "
                "and `tl.max(score, axis=0, return_indices=True)` (line 1144) returns the first id: token 0, silently",
            ),
            Row(
                "fly",
                {"k": 2, "method": "fly"},
                "negative control: FLy (the V2 runner; k = 2, W = 1, entropy >= 0.3 over the top 3: documented "
                "lossy; exact TV 0.213 at 2 tokens, gated at δ = 0.15)",
                cause="a rejection in a high-entropy step is deferred and kept when the next W drafts are accepted "
                "(rejection_sampler_utils.py 0.34.0 lines 728-747: `entropy >= fly_entropy_threshold`, line 741)",
                control=True,
                tv=0.15,
                path=V2_PATH,
            ),
            Row(
                "adaptive",
                ADAPTIVE_ROW,
                "adaptive verification (the V2 runner, DSpark): a batch of the judged request and a companion "
                "(confidences 15/32, 7/16, 1/2), budget 3 of 6 draft slots; the drafter's confidence for step i is max "
                "q at the state before x_i, as DSpark's confidence head; 1 or 2 drafts admitted in the first round",
                path=ADAPTIVE_PATH,
                slow=True,
            ),
            Row(
                "bad-words",
                {"k": 3, "bad_words": "0-1,2"},
                "vLLM's bad words [[0, 1], [2]] through 0.33's RejectionSampler (SamplingMetadata.bad_words_token_ids: "
                "apply_bad_words_with_drafts at the verified positions, apply_bad_words at the bonus)",
                slow=True,
            ),
            Row(
                "bad-words-v2",
                {"k": 3, "bad_words": "0-1,2", "runner": "v2"},
                "vLLM's bad words [[0, 1], [2]] through the V2 runner's apply_bad_words (its Triton kernel reads the "
                "output, then the drafts from the input ids), then rejection_sample",
                path=V2_SAMPLE_PATH,
                slow=True,
            ),
            Row(
                "min-p-v2",
                {"k": 3, "min_p": 0.5, "runner": "v2"},
                "min_p = 0.5 through the V2 runner's apply_min_p at every position (Sampler.apply_sampling_params), "
                "then rejection_sample: the V1 min-p-0.5 row's defect is not in the V2 runner",
                path=V2_SAMPLE_PATH,
                slow=True,
            ),
            Row(
                "logit-bias-v2",
                {"k": 3, "logit_bias": "3:4", "runner": "v2"},
                "logit_bias {3: ln 4} through the V2 runner's apply_logit_bias at every position "
                "(Sampler.apply_sampling_params), then rejection_sample: the V1 logit-bias row's defect is not in the V2 "
                "runner",
                path=V2_BIAS_PATH,
                slow=True,
            ),
            Row(
                "penalties-v2",
                {"k": 3, "repetition": 2, "frequency": "1/2", "presence": "1/2", "runner": "v2"},
                "repetition_penalty 2, frequency_penalty = presence_penalty = ln 2 through the V2 runner's bincount "
                "(prompt mask, output counts) and apply_penalties (the drafts before each position from the input ids), "
                "then rejection_sample",
                path=V2_PENALTIES_PATH,
                slow=True,
            ),
            Row(
                "synthetic",
                {"k": 3, "synthetic": "9/10,4/5,7/10"},
                "negative control: synthetic acceptance (documented lossy)",
                cause="`accepted = uniform_prob < rate` (0.33.0 vllm/v1/sample/rejection_sampler.py line 936; 0.34.0 "
                "vllm/v1/worker/gpu/spec_decode/rejection_sampler_utils.py line 712, `accepted = u < rate`)",
                control=True,
            ),
        ),
    ),
)
