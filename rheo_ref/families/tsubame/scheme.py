"""Family `tsubame`: plan the topology, then replay it with sampled tokens (docs/SCHEMES.md §4).

Pass 1 (the plan) depends on the round's context only: the `rheo` family's builder with m = K
(deterministic Top-K, EAGLE expand-then-rerank with K, W, D, R on q_rank) keeps R nodes; only
their topology is kept (parents, and each node's children in slot order). Pass 2 gives every
planned node's children tokens drawn with `sampling` from q_samp given the *sampled* path to that
node, exactly as the `static` family does on a fixed shape, and verifies them with `verify`.
So a Tsubame round at context c is a `static` round on the shape `plan(c)`; the plan itself is
computed by `rheo_ref.families.tsubame.exact.plan_parents` (this module holds the scheme only, so that
`rheo_ref.models` can import it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rheo_ref.errors import CaseError
from rheo_ref.families.static.scheme import LOSSLESS_PAIRINGS, SAMPLINGS, VERIFIERS
from rheo_ref.family import MAX_NODES
from rheo_ref.validate import check_fields, is_int, show

FIELDS = ("K", "W", "D", "R")


@dataclass(frozen=True)
class TsubameScheme:
    """K, W, D, R of the planning pass (the rheo builder with m = K), sibling sampling and a verifier."""

    K: int
    W: int
    D: int
    R: int
    sampling: str
    verify: str
    family: ClassVar[str] = "tsubame"

    def __post_init__(self) -> None:
        for name in FIELDS:
            v = getattr(self, name)
            if not is_int(v) or v < 1:
                raise CaseError(f"tsubame scheme {name}={show(v)} must be an integer >= 1")
        if self.R > MAX_NODES:
            raise CaseError(f"tsubame scheme R={self.R} keeps more than {MAX_NODES} draft nodes (the limit)")
        if self.sampling not in SAMPLINGS:
            raise CaseError(f"unknown sibling sampling {show(self.sampling)}; allowed: {', '.join(SAMPLINGS)}")
        if self.verify not in VERIFIERS:
            raise CaseError(f"unknown tsubame verifier {show(self.verify)}; allowed: {', '.join(VERIFIERS)}")

    @classmethod
    def from_json(cls, obj: Any) -> TsubameScheme:
        check_fields(obj, "tsubame scheme", ("family", *FIELDS, "sampling", "verify"))
        if obj["family"] != "tsubame":
            raise CaseError(f"tsubame scheme has family {show(obj['family'])}, must be 'tsubame'")
        return cls(obj["K"], obj["W"], obj["D"], obj["R"], obj["sampling"], obj["verify"])

    def to_json(self) -> dict:
        return {"family": "tsubame", "K": self.K, "W": self.W, "D": self.D, "R": self.R,
                "sampling": self.sampling, "verify": self.verify}  # fmt: skip

    def describe(self) -> str:
        """One line naming the scheme's sizes."""
        return f"K={self.K} W={self.W} D={self.D} R={self.R} {self.sampling}+{self.verify}"

    def check_vocab(self, vocab_size: int) -> None:
        if self.K > vocab_size:
            raise CaseError(f"tsubame scheme K={self.K} must be <= vocab_size {vocab_size}")

    @property
    def nodes(self) -> int:
        """Draft nodes of a planned tree (at most; `wor` may drop some past a node's support)."""
        return self.R

    @property
    def lossless(self) -> bool:
        return (self.sampling, self.verify) in LOSSLESS_PAIRINGS
