"""The treespark family in the suite: its gate schemes and rows, its mutant's gate cases, its
`rheo compare` cells and its `rheo audit` rows. `SUITE` is its entry in `rheo.families.registry`."""

from __future__ import annotations

from fractions import Fraction
from typing import Any

from rheo.compare import CompareCell
from rheo.families.registry import SuiteFamily
from rheo.selfgate.matrix import GateCase, gate_case
from rheo_ref.families.treespark.scheme import PAPER_SIGMOID, Calibration, TreeSparkScheme
from rheo_ref.models import Case

PAPER_CALIBRATION = Calibration("sigmoid", *PAPER_SIGMOID)
# N = 4 nodes, k = 2, D = 3, each verifier at θ = 0 (identity calibration) and at a binding θ (the
# paper's sigmoid calibration, θ = 1/10)
SCHEMES = {
    f"treespark-{verify}-{tag}": TreeSparkScheme(4, 2, 3, theta, cal, verify)
    for verify in ("rrsw", "traversal")
    for tag, theta, cal in (
        ("theta0", Fraction(0), Calibration("identity")),
        ("theta", Fraction(1, 10), PAPER_CALIBRATION),
    )
}
# Eight rows (the family-wise α allows no more): each verifier at T = 1, 0.5 (with zeros) and 0,
# each θ at every temperature across the two verifiers
ROWS = (
    "treespark-rrsw-theta0/T1",
    "treespark-rrsw-theta/T1",
    "treespark-rrsw-theta/T0.5/zeros",
    "treespark-rrsw-theta0/T0",
    "treespark-traversal-theta0/T1",
    "treespark-traversal-theta/T1",
    "treespark-traversal-theta0/T0.5/zeros",
    "treespark-traversal-theta/T0",
)
# Its mutant's rows: the binding-θ rows at T = 1 (own survival differs from the spec only where θ binds)
MUTANT_CASES = ("treespark-rrsw-theta/T1", "treespark-traversal-theta/T1")
# The compare cells' stop thresholds: 0 (never stops early) and 1/5 (binds on tests/cases/small.json from N = 5).
THETAS = (Fraction(0), Fraction(1, 5))


def gate_rows() -> dict[str, GateCase]:
    out = {}
    for name in ROWS:
        s, temp = name.split("/")[0], name.split("/")[1][1:]
        out[name] = gate_case(name, s, zeros=name.endswith("zeros"), temp=temp)
    return out


def compare_cells(N: int, vocab_size: int) -> list[CompareCell]:
    """TreeSpark with N nodes, k = min(3, V), D = N, identity calibration, x θ in THETAS x its two
    verifiers (both with the wor update: its siblings are drawn without replacement)."""
    k = min(3, vocab_size)
    return [
        CompareCell(
            N,
            "treespark",
            f"TreeSpark N={N} k={k} D={N} theta={theta}",
            f"TreeSpark theta={theta}",
            f"wor+{verify}",
            TreeSparkScheme(N, k, N, theta, Calibration("identity"), verify),
            f"wor+{verify}",
        )
        for theta in THETAS
        for verify in ("rrsw", "traversal")
    ]


# N = 4, k = 2, D = 3, each verifier at θ = 0 with the identity calibration and at θ = 1/10 with
# the paper's sigmoid (the gate's schemes); both methods enumerate the same trees
AUDIT_SCHEMES = [
    (f"TreeSpark N=4 k=2 D=3 theta={theta} {name} wor+{verify}", TreeSparkScheme(4, 2, 3, theta, cal, verify))
    for theta, name, cal in (
        (Fraction(0), "identity", Calibration("identity")),
        (Fraction(1, 10), "sigmoid (paper)", PAPER_CALIBRATION),
    )
    for verify in ("rrsw", "traversal")
]


def audit_rows(q: Any, p: Any) -> list[tuple[str, Case]]:
    return [(label, Case(q, p, sch, (0,), 3)) for label, sch in AUDIT_SCHEMES]


SUITE = SuiteFamily(
    name="treespark",
    gate_schemes=SCHEMES,
    gate_rows=gate_rows,
    mutant_rows=MUTANT_CASES,
    compare_cells=compare_cells,
    compare_rule="treespark: N, k = min(3, V), D = N, identity calibration, theta 0 and 1/5, x wor+rrsw, wor+traversal.",
    audit_rows=audit_rows,
)
