"""The bug classes that broke real speculative decoders, each a mutant of the baseline decoder
(`rheo_ref.bugclasses.decoder`): a `Steps` subclass that gets one step wrong the way the cited
decoder did. The decoder never names them; `BUG_MUTANTS` is the registry (`rheo mutants`).

Each entry: the mutant's name, its `klass` (the bug class, 1–14 of docs/GATE.md's "Bug classes" table),
the public reference where the bug was found and fixed, and its `Steps`. Its exact law is the
decoder's under those steps (`rheo_ref.bugclasses.exact.decoder_law`).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from ..errors import CaseError
from .decoder import DEFAULT_REQUEST, Random, Request, Steps, Stream, Weights, argmax, one_hot


class UnprocessedRecovery(Steps):
    """1: the residual and bonus draws read the raw target row (no temperature, top-k, top-p)."""

    def recovery_row(self, p: Weights, p_raw: Weights) -> Weights:
        return p_raw


class RawDraftQ(Steps):
    """2: the draft samples from its processed row but reports its raw row as q."""

    def reported_q(self, q: Weights, q_raw: Weights, x: int) -> Weights:
        return q_raw


class ArgmaxDraft(Steps):
    """3: the draft picks its argmax, yet verification uses its softmax as q."""

    def draft_token(self, rand: Random, stream: Stream, q: Weights) -> tuple[int, Any]:
        return argmax(q), stream.next()


class DefaultTargetParams(Steps):
    """4: the target is processed with default parameters (T = 1, no top-k/top-p/penalty)."""

    def target_request(self, req: Request) -> Request:
        return Request(gamma=req.gamma, verify=req.verify)


class ReusedAcceptUniform(Steps):
    """5: the acceptance uniform is reused for the residual draw."""

    def recovery_uniform(self, rand: Random, stream: Stream, accept_u: Any, draft_u: Any) -> Any:
        return accept_u


class SharedStreamPosition(Steps):
    """6: the residual draw reads the stream position that drew the draft token."""

    def recovery_uniform(self, rand: Random, stream: Stream, accept_u: Any, draft_u: Any) -> Any:
        return draft_u


class ZeroAcceptUniform(Steps):
    """7: the acceptance uniform is 0: every draft the target does not forbid is accepted."""

    def accept_uniform(self, rand: Random, stream: Stream) -> Any:
        stream.next()
        return 0


class PointMassDraft(Steps):
    """8: the draft's probabilities are dropped: x verified as a point mass (q = δ_x)."""

    def reported_q(self, q: Weights, q_raw: Weights, x: int) -> Weights:
        return one_hot(q, x)


def bfloat16(x: Any) -> Any:
    """x rounded to bfloat16 (round to nearest even on the top 16 bits of its float32), exactly."""
    bits = struct.unpack("<I", struct.pack("<f", float(x)))[0]
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    value = struct.unpack("<f", struct.pack("<I", bits))[0]
    return Fraction(value) if isinstance(x, Fraction) else value


class Bfloat16Draft(Steps):
    """9: the draft samples from its row held in bfloat16; verification uses the exact q."""

    def draft_sampling_row(self, q: Weights) -> Weights:
        return tuple(bfloat16(x) for x in q)


class ArgmaxVerify(Steps):
    """10: the target verifies greedily (its row read as δ at its argmax) while the request samples."""

    def verify_row(self, p: Weights) -> Weights:
        return one_hot(p, argmax(p))


class PenaltyPerStep(Steps):
    """11: the frequency penalty counts one token per verification step (its last), not every
    emitted token; within a step the drafts are not counted."""

    def counts(self, generated: Sequence[int], step_tokens: Sequence[Sequence[int]], vocab: int) -> list[int]:
        c = [0] * vocab
        for t in ([generated[0]] if generated else []) + [s[-1] for s in step_tokens]:
            c[t] += 1
        return c


class TokenResidualInBlock(Steps):
    """12: block verification draws from the token-level residual max(p − q, 0)."""

    def block_weight(self, w: Any) -> Any:
        return w * 0 + 1


class TargetOffByOne(Steps):
    """13: draft position j is verified against the target row one position later (after x_j)."""

    def target_position(self, j: int, gamma: int) -> int:
        return min(j + 1, gamma)


class ArgmaxFirstToken(Steps):
    """14: the token after prefill is the target's argmax; later tokens are sampled."""

    def first_token(self, rand: Random, stream: Stream, p: Weights) -> int:
        stream.next()
        return argmax(p)


@dataclass(frozen=True)
class BugMutant:
    """One bug class as a mutant of the baseline decoder."""

    name: str
    klass: int
    description: str
    reference: str
    steps: Steps
    needs: str = ""  # what a case must have for the mutant to change the law

    def check(self, req: Request) -> None:
        """Refuse a request on which this mutant cannot change the law (see `needs`)."""
        if self.needs == "block" and req.verify != "block":
            raise CaseError(f"mutant {self.name!r} needs verify='block'; got verify={req.verify!r}")
        if self.needs == "penalty" and req.penalty == 1:
            raise CaseError(f"mutant {self.name!r} needs a frequency penalty ρ < 1; got penalty={req.penalty}")


BUG_MUTANTS: dict[str, BugMutant] = {
    m.name: m
    for m in [
        BugMutant(
            "recovery-skips-processors",
            1,
            "the residual/bonus draw reads the raw target row (processors on the main path only)",
            "bug class 1 (temperature or top-p applied on the main path only; no single public report cited)",
            UnprocessedRecovery(),
        ),
        BugMutant(
            "draft-reports-raw-q",
            2,
            "the draft samples from processed logits but reports its raw logits as q",
            "transformers #47932",
            RawDraftQ(),
        ),
        BugMutant(
            "draft-argmax-softmax-q",
            3,
            "the draft picks by argmax but acceptance uses its softmax as q",
            "transformers #32867",
            ArgmaxDraft(),
        ),
        BugMutant(
            "target-default-params",
            4,
            "the target is scored with default sampling parameters, the draft with the request's",
            "vLLM PR 10198",
            DefaultTargetParams(),
        ),
        BugMutant(
            "uniform-reused-for-residual",
            5,
            "one uniform for the acceptance test and the residual draw",
            "vllm-ascend PR 16370",
            ReusedAcceptUniform(),
        ),
        BugMutant(
            "stream-positions-shared",
            6,
            "the residual draw reads the random-stream position of the draft's noise",
            "vLLM PR 54282",
            SharedStreamPosition(),
        ),
        BugMutant(
            "accept-uniform-zero",
            7,
            "the acceptance uniform fixed at 0: every draft with p > 0 accepted",
            "vllm-ascend #13730",
            ZeroAcceptUniform(),
        ),
        BugMutant(
            "draft-as-point-mass",
            8,
            "a stochastic draft treated as a point mass (its probabilities dropped)",
            "vLLM #40149",
            PointMassDraft(),
        ),
        BugMutant(
            "draft-bfloat16",
            9,
            "the draft samples from bfloat16 probabilities, acceptance uses the exact ones",
            "DeepSpec #31",
            Bfloat16Draft(),
        ),
        BugMutant(
            "verify-argmax",
            10,
            "verification by the target's argmax while the request samples",
            "SGLang's ROCm fallback (greedy verification)",
            ArgmaxVerify(),
        ),
        BugMutant(
            "penalty-per-step",
            11,
            "the frequency penalty counted once per verification step, not per emitted token",
            "SGLang #33643",
            PenaltyPerStep(),
            needs="penalty",
        ),
        BugMutant(
            "block-token-residual",
            12,
            "block verification with the token-level residual max(p − q, 0)",
            "vllm-ascend #7807",
            TokenResidualInBlock(),
            needs="block",
        ),
        BugMutant(
            "target-off-by-one",
            13,
            "the target's row read one position off (after the draft token it verifies)",
            "TensorRT-LLM PR 15098",
            TargetOffByOne(),
        ),
        BugMutant(
            "first-token-argmax",
            14,
            "the first token after prefill by argmax, later ones sampled",
            "bug class 14 (no single public report cited)",
            ArgmaxFirstToken(),
        ),
    ]
}

__all__ = ["BUG_MUTANTS", "DEFAULT_REQUEST", "BugMutant"]
