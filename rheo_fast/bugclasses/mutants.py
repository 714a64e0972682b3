"""The served-decoder bug classes (15–28, docs/GATE_REFERENCE.md "Bug classes") on the fast path: each a
`FastSteps` subclass that gets one step wrong as its reference twin in
`rheo_ref.bugclasses.mutants` does (same class, same name in `FAST_BUG_MUTANTS`). Each one's law is
checked against the reference mutant's exact law (`tests/test_fast_bugclasses.py`). Class 13's
off-by-one target row (`TargetOffByOne`) is here too, for the batch class that corrupts rows 2 and
up with it (`rheo_fast.bugclasses.batch`); the seam classes 1–14 have no fast twins of their own.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import torch
from torch import Tensor

from rheo_fast import processing
from rheo_fast.processing import PENALTIES, STEPS, TIE, normalise, skipped
from rheo_ref.bugclasses.decoder import Request
from rheo_ref.bugclasses.mutants import THRESHOLD_SINGLE, TYPICAL_EPSILON

from .decoder import FastSteps


class ProcessorsSkippedAtVerified(FastSteps):
    """15: the target rows at verified positions are left unprocessed; the bonus row (and the row
    after the prompt) is processed."""

    def target_steps(self, j: int | None, gamma: int) -> tuple:
        return tuple((s, skipped) for s in STEPS) if j is not None and j < gamma else ()


class PenaltyBonusOnly(FastSteps):
    """16: the penalties are applied at the bonus row only, not at the verified positions."""

    def target_steps(self, j: int | None, gamma: int) -> tuple:
        return tuple((s, skipped) for s in PENALTIES) if j is not None and j < gamma else ()


class TopKBeforeTopP(FastSteps):
    """17: the request reads top-p from the row before top-k (SGLang's order); the verifier applies
    top-k, renormalises, then top-p."""

    def target_request(self, req: Request) -> Request:
        return replace(req, order="transformers")


class PenaltyNotExpanded(FastSteps):
    """18: the target rows after x_1..x_j count the emitted tokens only, not the drafts before them."""

    def target_counted(self, out_counts: Tensor, draft_counts: Tensor) -> Tensor:
        return out_counts


def top_p_ties_kept(w: Tensor, s: Any, counts: Tensor, seen: Tensor) -> Tensor:
    """Top-p that also keeps every token tied with the smallest kept one (over-accepts a tie)."""
    kept = processing.top_p(w, s.top_p, s.ties)  # [B, V]
    smallest = torch.where(kept > 0, kept, torch.inf).amin(-1, keepdim=True)  # [B, 1]
    tied = (w - smallest).abs() <= TIE * w.amax(-1, keepdim=True)  # [B, V]
    return normalise(torch.where((kept > 0) | tied, w, kept))


class CutoffTieOverAccepted(FastSteps):
    """19: the target's top-p keeps a token tied with its cut-off that the rule drops."""

    def target_steps(self, j: int | None, gamma: int) -> tuple:
        return (("top_p", top_p_ties_kept),)


class GrammarBonusUnconstrained(FastSteps):
    """20: the bonus row is left unconstrained."""

    def mask_state(self, j: int, gamma: int, states: Tensor) -> Tensor | None:
        return None if j == gamma else states[:, j]


class GrammarInvalidDraftAccepted(FastSteps):
    """21: verification and the residual read the unmasked target rows (the bonus row is masked)."""

    def mask_state(self, j: int, gamma: int, states: Tensor) -> Tensor | None:
        return None if j < gamma else states[:, j]


class GrammarMaskFlat(FastSteps):
    """22: every row masked by the state at the round's start, not by the state along its path."""

    def mask_state(self, j: int, gamma: int, states: Tensor) -> Tensor | None:
        return states[:, 0]


class LogprobsZero(FastSteps):
    """23: every emitted token's logprob reported as 0.0 (probability 1)."""

    def reported_prob(self, p: Tensor, p_raw: Tensor, t: Tensor) -> Tensor:
        return torch.ones(t.shape, dtype=p.dtype)


class LogprobsUnprocessed(FastSteps):
    """24: logprobs reported from the raw target row, not the processed one."""

    def reported_prob(self, p: Tensor, p_raw: Tensor, t: Tensor) -> Tensor:
        return p_raw.gather(-1, t[:, None])[:, 0]


class CumsumLeqCoin(FastSteps):
    """25: inverse CDF by u ≤ the cumulative sum: a coin on a boundary takes the token below it."""

    def closed(self) -> bool:
        return True


class TreeNodeWrongRow(FastSteps):
    """28: node j of every tree branch (and its residual and bonus draws) reads the first branch's
    row j, not the row after the node's own path."""

    def tree_row(self, branch: int, j: int) -> tuple[int, int]:
        return 0, j


class TargetOffByOne(FastSteps):
    """13 (a seam class, here for `batch-corrupt-above-two`): draft position j is verified against
    the target row one position later (after x_j)."""

    def target_position(self, j: int, gamma: int) -> int:
        return min(j + 1, gamma)


class ThresholdAcceptance(FastSteps):
    """26 (negative control): x also accepted whenever p(x) ≥ threshold_single."""

    def accept(self, u: Tensor, px: Tensor, qx: Tensor) -> Tensor:
        return super().accept(u, px, qx) | (px >= float(THRESHOLD_SINGLE))


class TypicalAcceptance(FastSteps):
    """27 (negative control): x accepted iff p(x) ≥ ε, no coin; a rejection draws from p."""

    def accept(self, u: Tensor, px: Tensor, qx: Tensor) -> Tensor:
        return px >= float(TYPICAL_EPSILON)

    def residual_row(self, p: Tensor, q: Tensor) -> Tensor:
        return p


FAST_BUG_MUTANTS: dict[str, FastSteps] = {
    "processors-skipped-at-verified": ProcessorsSkippedAtVerified(),
    "penalty-bonus-only": PenaltyBonusOnly(),
    "topk-renormalised-before-topp": TopKBeforeTopP(),
    "penalty-not-expanded": PenaltyNotExpanded(),
    "cutoff-tie-over-accepted": CutoffTieOverAccepted(),
    "grammar-bonus-unconstrained": GrammarBonusUnconstrained(),
    "grammar-invalid-draft-accepted": GrammarInvalidDraftAccepted(),
    "grammar-mask-flat": GrammarMaskFlat(),
    "logprobs-zero": LogprobsZero(),
    "logprobs-unprocessed": LogprobsUnprocessed(),
    "cumsum-leq-coin": CumsumLeqCoin(),
    "threshold-acceptance": ThresholdAcceptance(),
    "typical-acceptance": TypicalAcceptance(),
    "tree-node-wrong-row": TreeNodeWrongRow(),
}

__all__ = ["FAST_BUG_MUTANTS"]
