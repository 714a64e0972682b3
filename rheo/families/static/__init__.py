"""The static family in the suite: its gate schemes and rows, its mutants' gate cases, its
`rheo compare` cells and its `rheo audit` rows. `SUITE` is its entry in `rheo.families.registry`."""

from __future__ import annotations

from typing import Any

from rheo.compare import CompareCell
from rheo.families.registry import SuiteFamily
from rheo.selfgate.matrix import GateCase, gate_case, gate_cases
from rheo_ref.families.static.scheme import LOSSLESS_PAIRINGS, StaticScheme
from rheo_ref.models import Case
from rheo_ref.variants import MUTANTS
from rheo_ref.verifier_laws import READ_BY

# Every lossless pairing on a branching shape (two root children, one child each) and a delayed
# one (a trunk of 1, then two rollouts of 2), and a `parents` shape where the leaf 2 is created
# before the deeper node 3 (root -> 1, 2; 1 -> 3): there alone the traversal's post-order and
# creation order of leaves differ.
SHAPES = {"branching": (2, 1), "delayed": (2, 1, 2), "parents": (0, 0, 1)}
SCHEMES = {
    **{
        f"{kind}-{sampling}-{verify}": StaticScheme(kind, SHAPES[kind], sampling, verify)
        for kind in ("branching", "delayed")
        for sampling, verify in LOSSLESS_PAIRINGS
    },
    **{
        f"parents-{sampling}-traversal": StaticScheme("parents", SHAPES["parents"], sampling, "traversal")
        for sampling in ("iid", "wor")
    },
}
# Its mutants' rows: wor siblings on the tables with zeros at T = 0.5 (where the exact TVs are
# largest), the branching shape under rrsw and under traversal, and the parents shape under
# traversal (the only shape where its two leaf orders differ)
MUTANT_CASES = (
    "branching-wor-rrsw/T0.5/zeros",
    "branching-wor-traversal/T0.5/zeros",
    "parents-wor-traversal/T0.5/zeros",
)


def gate_rows() -> dict[str, GateCase]:
    """Every scheme of a branching or delayed shape at T = 1, T = 0.5 with zeros and greedy T = 0
    (the delayed ones on the tables with zeros), two at the fast path's own T = 0.5, and the
    parents shape's two."""
    out = {}
    for s in SCHEMES:
        if s.startswith("parents"):
            continue
        zeros = s.startswith("delayed")
        out[f"{s}/T1"] = gate_case(f"{s}/T1", s)
        out[f"{s}/T0.5/zeros"] = gate_case(f"{s}/T0.5/zeros", s, zeros=True, temp="0.5")
        out[f"{s}/T0" + "/zeros" * zeros] = gate_case(f"{s}/T0" + "/zeros" * zeros, s, zeros=zeros, temp="0")
    for name in ("branching-wor-traversal/fastT0.5", "delayed-iid-rrsw/fastT0.5"):
        out[name] = gate_case(name, name.split("/")[0], temp="fast0.5")
    out["parents-wor-traversal/T0.5/zeros"] = gate_case(
        "parents-wor-traversal/T0.5/zeros", "parents-wor-traversal", zeros=True, temp="0.5"
    )
    out["parents-iid-traversal/T1"] = gate_case("parents-iid-traversal/T1", "parents-iid-traversal")
    return out


def mutant_cases(mutant: str) -> tuple[str, ...]:
    """Its mutant cases whose verifier reads the setting the mutant changes (READ_BY)."""
    (setting,) = MUTANTS[mutant].changed()
    cases = gate_cases()
    return tuple(c for c in MUTANT_CASES if cases[c].case.scheme_as(StaticScheme).verify in READ_BY[setting])


def shapes(N: int) -> list[tuple[str, tuple[int, ...], str]]:
    """(kind, sizes, series) of every static shape with N draft nodes, in table order."""
    out = [("branching", (1,) * N, "chain")]
    for K in range(2, N + 1):
        if N % K == 0:
            out.append(("branching", (K,) + (1,) * (N // K - 1), "fan [N]" if K == N else f"rollouts K={K}"))
    for k in range(2, N):
        total, d = k + k * k, 2
        while total <= N:
            if total == N:
                out.append(("branching", (k,) * d, f"balanced k={k}"))
            d += 1
            total += k**d
    for K in range(2, N):
        for L2 in range(1, N):
            L1 = N - K * L2
            if L1 >= 1:
                out.append(("delayed", (K, L1, L2), f"delayed K={K} L2={L2}"))
    return out


def compare_cells(N: int, vocab_size: int) -> list[CompareCell]:
    cells = []
    for kind, sizes, series in shapes(N):
        for sampling, verify in LOSSLESS_PAIRINGS:
            scheme = StaticScheme(kind, sizes, sampling, verify)
            label = f"{kind} [{', '.join(map(str, sizes))}]"
            pairing = f"{sampling}+{verify}"
            cells.append(CompareCell(N, "static", label, series, pairing, scheme, pairing))
    return cells


# The audit's shapes (kind, sizes, label) x the lossless pairings and the lossy wor + specinfer
AUDIT_SHAPES = [("delayed", (2, 1, 2), "delayed [2,1,2]"), ("branching", (2, 1), "branching [2,1]")]
AUDIT_PAIRINGS = (
    ("iid", "specinfer"),
    ("wor", "rrsw"),
    ("iid", "traversal"),
    ("wor", "traversal"),
    ("wor", "specinfer"),
)


def audit_rows(q: Any, p: Any) -> list[tuple[str, Case]]:
    out = []
    for kind, sizes, name in AUDIT_SHAPES:
        for sampling, verify in AUDIT_PAIRINGS:
            sch = StaticScheme(kind, sizes, sampling, verify)
            out.append((f"{name} {sampling}+{verify}" + ("" if sch.lossless else " (lossy)"), Case(q, p, sch, (0,), 3)))
    return out


SUITE = SuiteFamily(
    name="static",
    gate_schemes=SCHEMES,
    gate_rows=gate_rows,
    mutant_rows=MUTANT_CASES,
    mutant_cases=mutant_cases,
    compare_cells=compare_cells,
    compare_rule="static family: chain [1]*N, rollouts [K, 1, ...] (K | N), balanced [k]*d, delayed [K, L1, L2] "
    "(K >= 2, L1 >= 1, L2 >= 1, L1 + K*L2 = N), each with iid+specinfer, wor+rrsw, iid+rrsw, iid+traversal, "
    "wor+traversal.",
    audit_rows=audit_rows,
)
