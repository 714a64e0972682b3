"""Family `treespark`: best-first slot admission, stopping, wor siblings (docs/SCHEMES.md §5).

Scores use a calibration g of q_rank: `identity` (g(q) = q, exact Fractions) or `sigmoid:a,b`
(g(q) = σ(a·logit(q) + b), float64 on both sides; the paper's fit is a = 0.6684, b = -0.4587).
surv(root) = 1, surv(child) = surv(parent)·g(q_rank(x|parent)). A *slot* of node v is "v's next
child"; its bound is surv(v)·g(max q_rank(x|v) over the x not yet drawn at v with q_samp(x|v) > 0).
Slots are admitted best bound first (ties: earlier insertion first); a round stops at N nodes, an
empty heap, or (θ > 0) a best bound < θ; a token is drawn (without replacement at that node) only
once its slot is admitted. Verification: `rrsw`, or `traversal` with the wor update.
This module holds the scheme and the calibration; the round is `rheo_ref.families.treespark.exact`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any, ClassVar

from rheo_ref import numbers
from rheo_ref.errors import CaseError
from rheo_ref.family import MAX_NODES
from rheo_ref.validate import check_fields, is_int, show

VERIFIERS = ("rrsw", "traversal")  # both with the wor update: TreeSpark's siblings are drawn wor
PAPER_SIGMOID = (0.6684, -0.4587)  # the paper's fit of the calibration
_SIGMOID = re.compile(r"sigmoid:([^,]+),([^,]+)")

Score = Fraction | float


@dataclass(frozen=True)
class Calibration:
    """g: q_rank -> a calibrated survival factor in [0, 1]."""

    kind: str  # identity | sigmoid
    a: float = 1.0
    b: float = 0.0

    @classmethod
    def parse(cls, text: Any) -> Calibration:
        if text == "identity":
            return cls("identity")
        m = _SIGMOID.fullmatch(text) if isinstance(text, str) else None
        if m is None:
            raise CaseError(
                f"treespark calibration {show(text)} unknown; allowed: identity, or sigmoid:a,b with finite "
                f"numbers a > 0 and b (the paper's: sigmoid:{PAPER_SIGMOID[0]},{PAPER_SIGMOID[1]})"
            )
        try:
            a, b = (float(numbers.rational(g, f"treespark calibration {show(text)}")) for g in m.groups())
        except (CaseError, OverflowError):
            raise CaseError(f"treespark calibration {show(text)}: a and b must be numbers") from None
        if not (math.isfinite(a) and math.isfinite(b) and a > 0):
            raise CaseError(f"treespark calibration {show(text)}: a must be finite and > 0, b finite")
        return cls("sigmoid", a, b)

    def __str__(self) -> str:
        return "identity" if self.kind == "identity" else f"sigmoid:{self.a!r},{self.b!r}"

    def __call__(self, q: Fraction) -> Score:
        """g(q): exact for identity; float64 σ(a·logit(q) + b) for sigmoid (g(0) = 0, g(1) = 1)."""
        if self.kind == "identity":
            return q
        if q <= 0:
            return 0.0
        if q >= 1:
            return 1.0
        z = self.a * (math.log(q) - math.log1p(-float(q))) + self.b
        return 1.0 / (1.0 + math.exp(-z)) if z >= 0 else math.exp(z) / (1.0 + math.exp(z))


def parse_theta(value: Any) -> Fraction:
    """θ in [0, 1], exact: a string such as "1/20" or "0.05", or an integer (0 or 1)."""
    if isinstance(value, str) or is_int(value):
        try:
            t = numbers.rational(value, "treespark theta") if isinstance(value, str) else Fraction(value)
        except CaseError:
            t = None
        if t is not None and 0 <= t <= 1:
            return t
    raise CaseError(f'treespark theta {show(value)} must be a number in [0, 1] given as a string such as "1/20"')


@dataclass(frozen=True)
class TreeSparkScheme:
    """N nodes at most, k children per node at most, depth D, stop threshold θ, calibration, verifier."""

    N: int
    k: int
    D: int
    theta: Fraction
    calibration: Calibration
    verify: str
    family: ClassVar[str] = "treespark"
    sampling: ClassVar[str] = "wor"

    def __post_init__(self) -> None:
        for name in ("N", "k", "D"):
            v = getattr(self, name)
            if not is_int(v) or v < 1:
                raise CaseError(f"treespark scheme {name}={show(v)} must be an integer >= 1")
        if self.N > MAX_NODES:
            raise CaseError(f"treespark scheme N={self.N} drafts more than {MAX_NODES} nodes (the limit)")
        if not isinstance(self.theta, Fraction):
            object.__setattr__(self, "theta", parse_theta(self.theta))
        if not isinstance(self.calibration, Calibration):
            object.__setattr__(self, "calibration", Calibration.parse(self.calibration))
        if self.verify not in VERIFIERS:
            raise CaseError(f"unknown treespark verifier {show(self.verify)}; allowed: {', '.join(VERIFIERS)}")

    @classmethod
    def from_json(cls, obj: Any) -> TreeSparkScheme:
        check_fields(obj, "treespark scheme", ("family", "N", "k", "D"), ("theta", "calibration", "verify"))
        if obj["family"] != "treespark":
            raise CaseError(f"treespark scheme has family {show(obj['family'])}, must be 'treespark'")
        return cls(
            obj["N"],
            obj["k"],
            obj["D"],
            parse_theta(obj.get("theta", "0")),
            Calibration.parse(obj.get("calibration", "identity")),
            obj.get("verify", "rrsw"),
        )

    def to_json(self) -> dict:
        return {"family": "treespark", "N": self.N, "k": self.k, "D": self.D, "theta": str(self.theta),
                "calibration": str(self.calibration), "verify": self.verify}  # fmt: skip

    def describe(self) -> str:
        """One line naming the scheme's sizes."""
        return f"N={self.N} k={self.k} D={self.D} theta={self.theta} {self.calibration} verify={self.verify}"

    def check_vocab(self, vocab_size: int) -> None:
        """Any N, k, D fit any vocabulary (a node's children stop at its q_samp support)."""

    @property
    def nodes(self) -> int:
        """Draft nodes of a round (at most)."""
        return self.N

    @property
    def lossless(self) -> bool:
        return True
