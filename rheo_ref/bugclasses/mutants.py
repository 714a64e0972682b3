"""The bug classes that broke real speculative decoders, each a mutant of the baseline decoder
(`rheo_ref.bugclasses.decoder`): a `Steps` subclass that gets one step wrong the way the cited
decoder did. The decoder never names them; `BUG_MUTANTS` is the registry (`rheo mutants`).

Each entry: the mutant's name, its `klass` (the bug class, docs/GATE_REFERENCE.md's table),
the public reference where the bug was found and fixed, and its `Steps`. Its exact law is the
decoder's under those steps (`rheo_ref.bugclasses.exact.decoder_law`).
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any

from ..errors import CaseError
from ..processing import PENALTIES, STEPS, argmax, like, normalise, one_hot, skipped, top_p
from .decoder import DEFAULT_REQUEST, Random, Request, Steps, Stream, Weights


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


# --- every setting honoured (rheo_ref.processing) ----------------------------------------------


class ProcessorsSkippedAtVerified(Steps):
    """15: the target rows at verified positions are left unprocessed; only the bonus row (and the
    row after the prompt) is processed."""

    def target_steps(self, j: int | None, gamma: int) -> tuple:
        return tuple((s, skipped) for s in STEPS) if j is not None and j < gamma else ()


class PenaltyBonusOnly(Steps):
    """16: the penalties are applied at the bonus row only, not at the verified positions."""

    def target_steps(self, j: int | None, gamma: int) -> tuple:
        return tuple((s, skipped) for s in PENALTIES) if j is not None and j < gamma else ()


class TopKBeforeTopP(Steps):
    """17: the request's top-p cut-off is read from the row before top-k (SGLang's rule), but the
    verifier applies top-k, renormalises, then top-p."""

    def target_request(self, req: Request) -> Request:
        return replace(req, order="transformers")


class PenaltyNotExpanded(Steps):
    """18: the penalty state is not expanded to the draft rows: the target rows after x_1..x_j
    count the emitted tokens only, not the drafts before them."""

    def target_counted(self, out: Sequence[int], drafted: Sequence[int]) -> list[int]:
        return list(out)


def top_p_ties_kept(w: Weights, s: Any, counts: Sequence[int], seen: Sequence[int]) -> Weights:
    """Top-p that also keeps every token tied with the smallest kept one (over-accepts a tie)."""
    kept = top_p(w, like(w, s.top_p), s.ties)
    smallest = min(x for x in kept if x > 0)
    return normalise(tuple(w[i] if kept[i] > 0 or w[i] == smallest else kept[i] for i in range(len(w))))


class CutoffTieOverAccepted(Steps):
    """19: the target's top-p keeps a token tied with its cut-off that the rule drops."""

    def target_steps(self, j: int | None, gamma: int) -> tuple:
        return (("top_p", top_p_ties_kept),)


# --- grammars (rheo_ref.constraint) -------------------------------------------------------------


class GrammarBonusUnconstrained(Steps):
    """20: the bonus row is left unconstrained (its mask missing after padded drafts)."""

    def mask_state(self, j: int, gamma: int, states: Sequence[int]) -> int | None:
        return None if j == gamma else states[j]


class GrammarInvalidDraftAccepted(Steps):
    """21: grammar-invalid drafts are not forced to reject: verification and the residual read the
    unmasked target rows (the bonus row is masked)."""

    def mask_state(self, j: int, gamma: int, states: Sequence[int]) -> int | None:
        return None if j < gamma else states[j]


class GrammarMaskFlat(Steps):
    """22: one mask for the whole block: every row masked by the state at the round's start, not
    by the state along its own path."""

    def mask_state(self, j: int, gamma: int, states: Sequence[int]) -> int | None:
        return states[0]


# --- logprobs -----------------------------------------------------------------------------------


class LogprobsZero(Steps):
    """23: every emitted token's logprob reported as 0.0 (probability 1)."""

    def reported_prob(self, p: Weights, p_raw: Weights, t: int) -> Any:
        return p[t] * 0 + 1


class LogprobsUnprocessed(Steps):
    """24: logprobs reported from the raw target row, not the processed one."""

    def reported_prob(self, p: Weights, p_raw: Weights, t: int) -> Any:
        return p_raw[t]


# --- boundaries ---------------------------------------------------------------------------------


class CumsumLeqCoin(Steps):
    """25: inverse CDF by `u <= cumulative sum`: a coin on a boundary picks the token below it,
    even one of probability 0."""

    def pick(self, rand: Random, u: Any, row: Weights) -> int:
        return rand.pick(u, row, closed=True)


# --- trees ---------------------------------------------------------------------------------------


class TreeNodeWrongRow(Steps):
    """28: a tree node verified against the wrong target row: node j of every branch (and its
    residual and bonus draws) reads the first branch's row j, as if the rows were indexed by depth
    in a chain, not by the node's own path."""

    def tree_row(self, branch: int, j: int) -> tuple[int, int]:
        return 0, j


# --- documented-lossy acceptance rules (negative controls) --------------------------------------

THRESHOLD_SINGLE = Fraction(1, 3)  # SGLang's threshold_single, set below its lossless default 1
TYPICAL_EPSILON = Fraction(1, 4)  # Medusa's posterior threshold ε (its entropy term off)


class ThresholdAcceptance(Steps):
    """26 (negative control): SGLang's threshold acceptance: x also accepted whenever p(x) ≥
    threshold_single."""

    def accept(self, rand: Random, stream: Stream, p: Weights, q: Weights, x: int) -> tuple[bool, Any]:
        ok, u = super().accept(rand, stream, p, q, x)
        return ok or p[x] >= like(p, THRESHOLD_SINGLE), u


class TypicalAcceptance(Steps):
    """27 (negative control): Medusa's typical acceptance: x accepted iff p(x) ≥ ε, no coin; a
    rejection draws from p (not the residual)."""

    def accept(self, rand: Random, stream: Stream, p: Weights, q: Weights, x: int) -> tuple[bool, Any]:
        return p[x] >= like(p, TYPICAL_EPSILON), self.accept_uniform(rand, stream)

    def residual_row(self, p: Weights, q: Weights) -> Weights:
        return p


def _needs(case: Any, what: str) -> str | None:
    """Why a case cannot show a mutant that needs `what` (None: it can)."""
    r = case.request
    tests = {
        "block": (r.verify == "block", f"verify='block'; got verify={r.verify!r}"),
        "token": (r.verify == "token", f"verify='token'; got verify={r.verify!r}"),
        "tree": (r.verify == "tree", f"verify='tree'; got verify={r.verify!r}"),
        "penalty": (r.penalty != 1, f"a frequency penalty ρ < 1; got penalty={r.penalty}"),
        "penalties": (
            r.penalty != 1 or r.presence != 1 or r.repetition != 1,
            "a frequency, presence or repetition penalty; the request has none",
        ),
        "processing": (r != Request(gamma=r.gamma, verify=r.verify), "a processed target; the request sets nothing"),
        "top_p": (r.top_p != 1, f"top_p < 1; got top_p={r.top_p}"),
        "sglang": (
            r.order == "sglang" and r.top_k > 0 and r.top_p != 1,
            f"order='sglang' with top-k and top-p; got order={r.order!r}, top_k={r.top_k}, top_p={r.top_p}",
        ),
        "constraint": (getattr(case, "constraint", None) is not None, "a grammar constraint; the case has none"),
    }
    ok, msg = tests[what]
    return None if ok else msg


@dataclass(frozen=True)
class BugMutant:
    """One bug class as a mutant of the baseline decoder."""

    name: str
    klass: int
    description: str
    reference: str
    steps: Steps
    needs: str = ""  # what a case must have for the mutant to change the law (`_needs`)
    kind: str = "seam"  # seam (1–14: the case library's floors), setting, grammar, logprobs, boundary, control, tree

    def check(self, case: Any) -> None:
        """Refuse a case on which this mutant cannot change the law (see `needs`)."""
        for what in filter(None, self.needs.split(",")):
            why = _needs(case, what)
            if why:
                raise CaseError(f"mutant {self.name!r} needs {why}")


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
            "transformers (docs/GATE_REFERENCE.md's bug-class table)",
            RawDraftQ(),
        ),
        BugMutant(
            "draft-argmax-softmax-q",
            3,
            "the draft picks by argmax but acceptance uses its softmax as q",
            "transformers (docs/GATE_REFERENCE.md's bug-class table)",
            ArgmaxDraft(),
        ),
        BugMutant(
            "target-default-params",
            4,
            "the target is scored with default sampling parameters, the draft with the request's",
            "vLLM (docs/GATE_REFERENCE.md's bug-class table)",
            DefaultTargetParams(),
        ),
        BugMutant(
            "uniform-reused-for-residual",
            5,
            "one uniform for the acceptance test and the residual draw",
            "vllm-ascend (docs/GATE_REFERENCE.md's bug-class table)",
            ReusedAcceptUniform(),
        ),
        BugMutant(
            "stream-positions-shared",
            6,
            "the residual draw reads the random-stream position of the draft's noise",
            "vLLM (docs/GATE_REFERENCE.md's bug-class table)",
            SharedStreamPosition(),
        ),
        BugMutant(
            "accept-uniform-zero",
            7,
            "the acceptance uniform fixed at 0: every draft with p > 0 accepted",
            "vllm-ascend (docs/GATE_REFERENCE.md's bug-class table)",
            ZeroAcceptUniform(),
        ),
        BugMutant(
            "draft-as-point-mass",
            8,
            "a stochastic draft treated as a point mass (its probabilities dropped)",
            "vLLM (docs/GATE_REFERENCE.md's bug-class table)",
            PointMassDraft(),
        ),
        BugMutant(
            "draft-bfloat16",
            9,
            "the draft samples from bfloat16 probabilities, acceptance uses the exact ones",
            "DeepSpec (docs/GATE_REFERENCE.md's bug-class table)",
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
            "SGLang (docs/GATE_REFERENCE.md's bug-class table)",
            PenaltyPerStep(),
            needs="penalty",
        ),
        BugMutant(
            "block-token-residual",
            12,
            "block verification with the token-level residual max(p − q, 0)",
            "vllm-ascend (docs/GATE_REFERENCE.md's bug-class table)",
            TokenResidualInBlock(),
            needs="block",
        ),
        BugMutant(
            "target-off-by-one",
            13,
            "the target's row read one position off (after the draft token it verifies)",
            "TensorRT-LLM (docs/GATE_REFERENCE.md's bug-class table)",
            TargetOffByOne(),
        ),
        BugMutant(
            "first-token-argmax",
            14,
            "the first token after prefill by argmax, later ones sampled",
            "bug class 14 (no single public report cited)",
            ArgmaxFirstToken(),
        ),
        BugMutant(
            "processors-skipped-at-verified",
            15,
            "the processors applied on the bonus path, skipped at the verified positions",
            "vLLM (docs/GATE_REFERENCE.md's bug-class table)",
            ProcessorsSkippedAtVerified(),
            needs="processing",
            kind="setting",
        ),
        BugMutant(
            "penalty-bonus-only",
            16,
            "the penalties applied at the bonus row only",
            "SGLang, a proposal (docs/GATE_REFERENCE.md's bug-class table)",
            PenaltyBonusOnly(),
            needs="penalties",
            kind="setting",
        ),
        BugMutant(
            "topk-renormalised-before-topp",
            17,
            "top-k applied and renormalised before top-p where the request reads top-p from the row before top-k",
            "SGLang (docs/GATE_REFERENCE.md's bug-class table)",
            TopKBeforeTopP(),
            needs="sglang",
            kind="setting",
        ),
        BugMutant(
            "penalty-not-expanded",
            18,
            "penalty state not expanded to the draft rows (drafts before a row not counted)",
            "vLLM (docs/GATE_REFERENCE.md's bug-class table)",
            PenaltyNotExpanded(),
            needs="penalties",
            kind="setting",
        ),
        BugMutant(
            "cutoff-tie-over-accepted",
            19,
            "top-p keeps a token tied with its cut-off that the rule drops",
            "FlashInfer (docs/GATE_REFERENCE.md's bug-class table)",
            CutoffTieOverAccepted(),
            needs="top_p",
            kind="setting",
        ),
        BugMutant(
            "grammar-bonus-unconstrained",
            20,
            "the bonus row left unconstrained",
            "vLLM (docs/GATE_REFERENCE.md's bug-class table)",
            GrammarBonusUnconstrained(),
            needs="constraint",
            kind="grammar",
        ),
        BugMutant(
            "grammar-invalid-draft-accepted",
            21,
            "grammar-invalid drafts not forced to reject, the residual not masked",
            "a vLLM fork (docs/GATE_REFERENCE.md's bug-class table)",
            GrammarInvalidDraftAccepted(),
            needs="constraint",
            kind="grammar",
        ),
        BugMutant(
            "grammar-mask-flat",
            22,
            "the mask of the round's start applied to every row, not per path",
            "TensorRT-LLM (docs/GATE_REFERENCE.md's bug-class table)",
            GrammarMaskFlat(),
            needs="constraint",
            kind="grammar",
        ),
        BugMutant(
            "logprobs-zero",
            23,
            "logprob 0.0 reported for every token",
            "llama.cpp (docs/GATE_REFERENCE.md's bug-class table)",
            LogprobsZero(),
            kind="logprobs",
        ),
        BugMutant(
            "logprobs-unprocessed",
            24,
            "logprobs reported from the raw target row, not the processed one",
            "vLLM (docs/GATE_REFERENCE.md's bug-class table)",
            LogprobsUnprocessed(),
            needs="processing",
            kind="logprobs",
        ),
        BugMutant(
            "cumsum-leq-coin",
            25,
            "inverse CDF by u <= cumulative sum: a coin on a boundary takes the token below it",
            "SGLang (docs/GATE_REFERENCE.md's bug-class table)",
            CumsumLeqCoin(),
            kind="boundary",
        ),
        BugMutant(
            "threshold-acceptance",
            26,
            "negative control: SGLang's threshold acceptance (threshold_single = 1/3)",
            "SGLang (threshold_single, documented lossy)",
            ThresholdAcceptance(),
            needs="token",
            kind="control",
        ),
        BugMutant(
            "typical-acceptance",
            27,
            "negative control: Medusa's typical acceptance (ε = 1/4, no entropy term)",
            "Medusa (typical acceptance, documented lossy)",
            TypicalAcceptance(),
            needs="token",
            kind="control",
        ),
        BugMutant(
            "tree-node-wrong-row",
            28,
            "a tree node verified against the wrong target row (another branch's, at its depth)",
            "TensorRT-LLM (docs/GATE_REFERENCE.md's bug-class table)",
            TreeNodeWrongRow(),
            needs="tree",
            kind="tree",
        ),
    ]
}

__all__ = ["BUG_MUTANTS", "DEFAULT_REQUEST", "BugMutant"]
