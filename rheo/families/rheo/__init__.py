"""The rheo family in the suite: its gate schemes and rows, its mutants' gate cases, its
`rheo compare` cells and its `rheo audit` rows. `SUITE` is its entry in `rheo.families.registry`."""

from __future__ import annotations

from typing import Any

from rheo.compare import CompareCell
from rheo.families.registry import SuiteFamily
from rheo.selfgate.matrix import GateCase, gate_case
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.models import Case, Proxy

SCHEMES = {
    "topk": Scheme(3, 3, 2, 2, 5),
    "rheo-m0": Scheme(2, 0, 2, 2, 4),
    "rheo-m1": Scheme(3, 1, 2, 2, 5),
    "rheo-m1-R2": Scheme(3, 1, 2, 2, 2),  # a budget that cuts depth-1 siblings: survival bias shows
    "rheo-m2": Scheme(3, 2, 2, 2, 5),
    "rrsw": Scheme(3, 1, 2, 2, 5, verify="rrsw"),
    "chain": Scheme(1, 0, 1, 3, 3),
}
# The tight budget R = 2 adds survival bias, so proxy-const (lossless at R = 5) moves the token law
# there; fills-first needs the fills R = 5 keeps
MUTANT_CASES = ("rheo-m1/T0.5", "rheo-m1-R2/T0.5")


def gate_rows() -> dict[str, GateCase]:
    """Every scheme at T = 1 and T = 0.5 with zeros; rheo-m1 also at T = 0.5, T = 1 with zeros and
    greedy T = 0; the tight budget at T = 0.5; rrsw at the fast path's own T = 0.5; greedy Top-K."""
    out = {}
    for s in SCHEMES:
        out[f"{s}/T1"] = gate_case(f"{s}/T1", s)
        out[f"{s}/T0.5/zeros"] = gate_case(f"{s}/T0.5/zeros", s, zeros=True, temp="0.5")
    out["rheo-m1/T0.5"] = gate_case("rheo-m1/T0.5", "rheo-m1", temp="0.5")
    out["rheo-m1/T1/zeros"] = gate_case("rheo-m1/T1/zeros", "rheo-m1", zeros=True)
    out["rheo-m1-R2/T0.5"] = gate_case("rheo-m1-R2/T0.5", "rheo-m1-R2", temp="0.5")
    out["rrsw/fastT0.5"] = gate_case("rrsw/fastT0.5", "rrsw", temp="fast0.5")
    out["rheo-m1/T0"] = gate_case("rheo-m1/T0", "rheo-m1", temp="0")
    out["topk/T0/zeros"] = gate_case("topk/T0/zeros", "topk", zeros=True, temp="0")
    return out


def compare_cells(N: int, vocab_size: int) -> list[CompareCell]:
    K = min(3, vocab_size)
    W = min(2, K)
    D = -(-N // W)
    tree = f"K={K} W={W} D={D} R={N}"
    rheo = lambda m, verify: Scheme(K, m, W, D, N, Proxy("rheo"), verify)
    return [
        CompareCell(N, "rheo", f"Top-K {tree}", "Top-K", "OT", rheo(K, "rheo"), "rheo family"),
        CompareCell(N, "rheo", f"Rheo m=1 {tree}", "Rheo m=1", "OT", rheo(min(1, K), "rheo"), "rheo family"),
        CompareCell(N, "rheo", f"Rheo m=1 {tree}", "Rheo m=1 + RRSw", "RRSw", rheo(min(1, K), "rrsw"), "rheo family"),
        CompareCell(
            N,
            "rheo",
            f"chain K=1 D={N}",
            "chain (rheo)",
            "OT",
            Scheme(1, 0, 1, N, N, Proxy("rheo"), "rheo"),
            "rheo family",
        ),
    ]


# (label, K, m, W, D, R, proxy, verify)
AUDIT_MATRIX = [
    ("Top-K (m=K)", 3, 3, 2, 3, 4, "rheo", "rheo"),
    ("Rheo m=0", 3, 0, 2, 3, 4, "rheo", "rheo"),
    ("Rheo m=1", 3, 1, 2, 3, 4, "rheo", "rheo"),
    ("Rheo m=2", 3, 2, 2, 3, 4, "rheo", "rheo"),
    ("Rheo m=1 + RRSw", 3, 1, 2, 3, 4, "rheo", "rrsw"),
    ("chain (K=1,m=0)", 1, 0, 1, 3, 3, "rheo", "rheo"),
    ("ad hoc: true proxy", 3, 1, 2, 3, 4, "true", "rheo"),
    ("ad hoc: const 1/8", 3, 1, 2, 3, 4, "const:1/8", "rheo"),
]


def audit_rows(q: Any, p: Any) -> list[tuple[str, Case]]:
    return [
        (label, Case(q, p, Scheme(K, m, W, D, R, Proxy.parse(proxy), verify), (0,), 3))
        for label, K, m, W, D, R, proxy, verify in AUDIT_MATRIX
    ]


SUITE = SuiteFamily(
    name="rheo",
    gate_schemes=SCHEMES,
    gate_rows=gate_rows,
    mutant_rows=MUTANT_CASES,
    compare_cells=compare_cells,
    compare_rule="rheo family: R = N, K = min(3, V), W = min(2, K), D = ceil(N / W); chain K = 1, m = 0, W = 1, D = R = N.",
    audit_rows=audit_rows,
)
