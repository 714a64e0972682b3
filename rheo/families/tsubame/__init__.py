"""The tsubame family in the suite: its gate schemes and rows, its mutant's gate case, its
`rheo compare` cells and its `rheo audit` rows. `SUITE` is its entry in `rheo.families.registry`."""

from __future__ import annotations

from typing import Any

from rheo.compare import CompareCell
from rheo.families.registry import SuiteFamily
from rheo.families.static import AUDIT_PAIRINGS
from rheo.selfgate.matrix import GateCase, gate_case
from rheo_ref.families.static.scheme import LOSSLESS_PAIRINGS
from rheo_ref.families.tsubame.scheme import TsubameScheme
from rheo_ref.models import Case

# The plan of K = 3, W = 2, D = 2, R = 4 (Top-K on q_rank), tokens sampled
SCHEMES = {
    f"tsubame-{sampling}-{verify}": TsubameScheme(3, 2, 2, 4, sampling, verify)
    for sampling, verify in LOSSLESS_PAIRINGS
}
ROWS = ("iid-specinfer/T1", "wor-rrsw/T0.5/zeros", "iid-rrsw/T1", "iid-traversal/T0", "wor-traversal/T1")
# A smaller plan (K = 2, W = 1, D = 2, R = 3) for the mutant tsubame-plan-after-sampling, whose exact
# law is a brute enumeration of every draw during the build (K = 3, W = 2 iid: 4^9 builds per context)
SCHEMES.update(
    {
        f"tsubame-w1-{sampling}-{verify}": TsubameScheme(2, 1, 2, 3, sampling, verify)
        for sampling, verify in LOSSLESS_PAIRINGS
    }
)
MUTANT_ROWS = ("w1-wor-traversal/T1",)  # one row (the α budget)
# The small plan at T = 1 (wor, traversal; the larger of its exact TVs, 0.107 on joint3, vs 0.100 for
# iid-rrsw at T = 0.5 with zeros). Its mutant's sampler reads the exact tables at T = 1, so a T = 0.5
# row must give q_samp as a table (as every gate row does), never T = 0
MUTANT_CASES = tuple(f"tsubame-{row}" for row in MUTANT_ROWS)


def gate_rows() -> dict[str, GateCase]:
    out = {}
    for row in ROWS + MUTANT_ROWS:
        pairing, temp, *z = row.split("/")
        name = f"tsubame-{row}"
        out[name] = gate_case(name, f"tsubame-{pairing}", zeros=bool(z), temp=temp[1:])
    return out


def compare_cells(N: int, vocab_size: int) -> list[CompareCell]:
    """Tsubame with the rheo family's tree (K = min(3, V), W = min(2, K), D = ceil(N / W), R = N)
    planned by Top-K, tokens sampled, x every compatible pairing."""
    K = min(3, vocab_size)
    W = min(2, K)
    D = -(-N // W)
    label = f"Tsubame K={K} W={W} D={D} R={N}"
    return [
        CompareCell(N, "tsubame", label, "Tsubame", f"{s}+{v}", TsubameScheme(K, W, D, N, s, v), f"{s}+{v}")
        for s, v in LOSSLESS_PAIRINGS
    ]


def audit_rows(q: Any, p: Any) -> list[tuple[str, Case]]:
    return [
        (
            f"Tsubame K=3 W=2 D=3 R=4 {sampling}+{verify}" + ("" if sch.lossless else " (lossy)"),
            Case(q, p, sch, (0,), 3),
        )
        for sampling, verify in AUDIT_PAIRINGS
        for sch in [TsubameScheme(3, 2, 3, 4, sampling, verify)]
    ]


SUITE = SuiteFamily(
    name="tsubame",
    gate_schemes=SCHEMES,
    gate_rows=gate_rows,
    mutant_rows=MUTANT_CASES,
    compare_cells=compare_cells,
    compare_rule="tsubame: the rheo family's tree (K, W, D, R = N) x the five pairings.",
    audit_rows=audit_rows,
)
