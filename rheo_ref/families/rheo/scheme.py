"""The rheo family's scheme: the parameters of docs/ALGORITHM.md §2 (K, m, W, D, R, proxy, verify).

S and T live in the fast path; the case's tables already apply them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar

from rheo_ref.errors import CaseError
from rheo_ref.models import Proxy
from rheo_ref.validate import check_fields, is_int, show

VERIFY_ORDERS = ("rheo", "rrsw")


@dataclass(frozen=True)
class Scheme:
    """Parameters of docs/ALGORITHM.md §2 (S and T live in the fast path; tables already apply them)."""

    K: int
    m: int
    W: int
    D: int
    R: int
    proxy: Proxy = field(default_factory=lambda: Proxy("rheo"))
    verify: str = "rheo"
    family: ClassVar[str] = "rheo"

    def __post_init__(self) -> None:
        for name in ("K", "m", "W", "D", "R"):
            v = getattr(self, name)
            if not is_int(v):
                raise CaseError(f"scheme {name}={show(v)} must be an integer")
        if self.K < 1:
            raise CaseError(f"scheme K={self.K} must be >= 1")
        if not 0 <= self.m <= self.K:
            raise CaseError(f"scheme m={self.m} must satisfy 0 <= m <= K={self.K}")
        if self.W < 1:
            raise CaseError(f"scheme W={self.W} must be >= 1")
        if self.D < 1:
            raise CaseError(f"scheme D={self.D} must be >= 1")
        if self.R < 1:
            raise CaseError(f"scheme R={self.R} must be >= 1")
        if not isinstance(self.proxy, Proxy):
            object.__setattr__(self, "proxy", Proxy.parse(self.proxy))
        if self.verify not in VERIFY_ORDERS:
            raise CaseError(f"unknown verification order {show(self.verify)}; allowed: {', '.join(VERIFY_ORDERS)}")

    @classmethod
    def from_json(cls, obj: Any) -> Scheme:
        check_fields(obj, "scheme", ("K", "m", "W", "D", "R"), ("proxy", "verify", "family"))
        if obj.get("family", "rheo") != "rheo":
            raise CaseError(
                f"scheme family {obj['family']!r} has no K, m, W, D, R; use rheo_ref.family.scheme_from_json"
            )
        return cls(
            obj["K"],
            obj["m"],
            obj["W"],
            obj["D"],
            obj["R"],
            Proxy.parse(obj.get("proxy", "rheo")),
            obj.get("verify", "rheo"),
        )

    def to_json(self) -> dict:
        return {
            "K": self.K,
            "m": self.m,
            "W": self.W,
            "D": self.D,
            "R": self.R,
            "proxy": str(self.proxy),
            "verify": self.verify,
        }

    def check_vocab(self, vocab_size: int) -> None:
        if self.K > vocab_size:
            raise CaseError(f"scheme K={self.K} must be <= vocab_size {vocab_size}")

    @property
    def nodes(self) -> int:
        """Draft nodes kept per round: R (the node budget every family is compared at)."""
        return self.R

    def describe(self) -> str:
        """One line naming the scheme's sizes."""
        return f"K={self.K} m={self.m} W={self.W} D={self.D} R={self.R} verify={self.verify}"
