"""Deliberately broken variants of the fast path: the negative controls of the lossless gate.

Each name selects one wrong step (ALGORITHM.md sections 3 and 5 say what the right step is).
Pass it as `mutant=` to `rheo_fast.decode.run_round` / `decode`; the default `None` is the spec.
A statistical lossless test that cannot tell a mutant from the spec has no power.
"""
from __future__ import annotations

from rheo_ref.errors import CaseError

MUTANTS: dict[str, str] = {
    "proxy-true": "sampled slot ranked by its own q_rank(y) (the 'true' proxy, survival bias)",
    "proxy-const": "sampled slot ranked by the constant 1/4 instead of the rheo proxy",
    "verify-q-not-qtilde": "sampled token verified (and residual taken) against q_samp instead of the tail q̃",
    "sample-whole-q": "sampled token drawn from the whole q_samp instead of the tail q̃",
    "residual-unnormalised": "residual after a rejection is not renormalised",
    "stale-bonus": "bonus at a leaf reached by an accept drawn from the parent's stale residual, not p (EAGLE PR #47)",
    "one-hot-sampled": "sampled token treated as a point mass (accept w.p. r(y), zero y on reject)",
    "bonus-full-p": "bonus drawn from the full p at the node instead of the residual",
    "leq-coin": "accept when coin <= threshold, so a coin of 0 accepts a token of probability 0",
    "float16": "coins and residuals rounded to float16 during verification",
    "temp-sample-only": "y sampled from q_samp but verified against the tail of q_rank (temperature ignored in verification)",
    "fills-first": "fills tried before the sampled token, q̃ not conditioned on their rejection",
}


def check_mutant(mutant: str | None) -> None:
    """Reject unknown names up front (a typo must not silently run the spec)."""
    if mutant is not None and mutant not in MUTANTS:
        raise CaseError(f"unknown mutant {mutant!r}; allowed: None or one of {', '.join(MUTANTS)}")
