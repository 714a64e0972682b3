"""`rheo audit` (the `make run` job): a built-in matrix of schemes on one fixed table-model case.

For each scheme: exact TV of the 3-token law to the target, tau, how many trees brute force and
the class enumeration visit for the same exact answer (they must agree), seconds, and (when the
fast path and the statistics module are present) the fast path's statistical verdict. The rheo
family's rows come first, then the static family's (docs/SCHEMES.md: a fixed shape of 5 or 4
draft nodes, the four lossless pairings and the lossy wor + specinfer; for them `brute trees`
counts joint draws and `class trees` the sibling draws of the subtree recursion), then tsubame's
(the five pairings and the lossy one) and treespark's (SPARK_SCHEMES: N = 4, k = 2, D = 3, each
verifier at θ = 0 with the identity calibration and at θ = 1/10 with the paper's sigmoid, the
gate's treespark schemes; both methods enumerate the same trees, so the tree counts agree).
"""

from __future__ import annotations

import json
import sys
import time
from fractions import Fraction

from tqdm import tqdm

from rheo_ref.atomic import check_writable, open_atomic
from rheo_ref.exact import Exact, target_law, tv
from rheo_ref.models import Case, Proxy, Scheme, TableModel
from rheo_ref.static import StaticScheme
from rheo_ref.treespark import PAPER_SIGMOID, Calibration, TreeSparkScheme
from rheo_ref.tsubame import TsubameScheme

ALPHA, DELTA = 1e-3, 0.02  # the statistical column: false-alarm rate, TV detected with power 0.99

# (label, K, m, W, D, R, proxy, verify)
MATRIX = [
    ("Top-K (m=K)", 3, 3, 2, 3, 4, "rheo", "rheo"),
    ("Rheo m=0", 3, 0, 2, 3, 4, "rheo", "rheo"),
    ("Rheo m=1", 3, 1, 2, 3, 4, "rheo", "rheo"),
    ("Rheo m=2", 3, 2, 2, 3, 4, "rheo", "rheo"),
    ("Rheo m=1 + RRSw", 3, 1, 2, 3, 4, "rheo", "rrsw"),
    ("chain (K=1,m=0)", 1, 0, 1, 3, 3, "rheo", "rheo"),
    ("ad hoc: true proxy", 3, 1, 2, 3, 4, "true", "rheo"),
    ("ad hoc: const 1/8", 3, 1, 2, 3, 4, "const:1/8", "rheo"),
]

# The static family on the same tables: (shape kind, sizes, label) x (sampling, verify)
STATIC_SHAPES = [("delayed", (2, 1, 2), "delayed [2,1,2]"), ("branching", (2, 1), "branching [2,1]")]
STATIC_PAIRINGS = [
    ("iid", "specinfer"),
    ("wor", "rrsw"),
    ("iid", "traversal"),
    ("wor", "traversal"),
    ("wor", "specinfer"),
]  # the last one lossy

# The treespark family: (label, scheme), N = 4, k = 2, D = 3, each verifier at θ = 0 and at θ = 1/10
SPARK_SCHEMES = [
    (f"TreeSpark N=4 k=2 D=3 theta={theta} {name} wor+{verify}", TreeSparkScheme(4, 2, 3, theta, cal, verify))
    for theta, name, cal in (
        (Fraction(0), "identity", Calibration("identity")),
        (Fraction(1, 10), "sigmoid (paper)", Calibration("sigmoid", *PAPER_SIGMOID)),
    )
    for verify in ("rrsw", "traversal")
]


def audit_models() -> tuple[TableModel, TableModel]:
    """A fixed first-order table pair over V = 5 with distinct scores (no near-ties)."""
    q = {
        "": ["2/5", "1/4", "3/20", "1/10", "1/10"],
        "0": ["1/2", "1/5", "3/20", "1/10", "1/20"],
        "1": ["1/10", "9/20", "1/4", "1/10", "1/10"],
        "2": ["1/5", "1/5", "7/20", "3/20", "1/10"],
        "3": ["3/10", "1/20", "1/10", "9/20", "1/10"],
        "4": ["1/4", "1/4", "1/4", "1/8", "1/8"],
    }
    p = {
        "": ["1/4", "1/4", "1/4", "1/8", "1/8"],
        "0": ["3/10", "3/10", "1/5", "1/10", "1/10"],
        "1": ["1/5", "3/10", "3/10", "0", "1/5"],
        "2": ["1/10", "1/10", "1/2", "1/5", "1/10"],
        "3": ["2/5", "1/10", "1/10", "3/10", "1/10"],
        "4": ["1/5", "1/5", "1/5", "1/5", "1/5"],
    }
    return TableModel.from_rows(q, context_length=1, name="draft"), TableModel.from_rows(
        p, context_length=1, name="target"
    )


def audit_cases() -> list[tuple[str, Case]]:
    q, p = audit_models()
    rheo = [
        (label, Case(q, p, Scheme(K, m, W, D, R, Proxy.parse(proxy), verify), (0,), 3))
        for label, K, m, W, D, R, proxy, verify in MATRIX
    ]
    static = []
    for kind, sizes, name in STATIC_SHAPES:
        for sampling, verify in STATIC_PAIRINGS:
            sch = StaticScheme(kind, sizes, sampling, verify)
            static.append(
                (f"{name} {sampling}+{verify}" + ("" if sch.lossless else " (lossy)"), Case(q, p, sch, (0,), 3))
            )
    tsubame = [
        (
            f"Tsubame K=3 W=2 D=3 R=4 {sampling}+{verify}" + ("" if sch.lossless else " (lossy)"),
            Case(q, p, sch, (0,), 3),
        )
        for sampling, verify in STATIC_PAIRINGS
        for sch in [TsubameScheme(3, 2, 3, 4, sampling, verify)]
    ]
    treespark = [(label, Case(q, p, sch, (0,), 3)) for label, sch in SPARK_SCHEMES]
    return rheo + static + tsubame + treespark


def _statistical(case: Case, seed: int) -> dict:
    from .gate import fast_verdict

    return fast_verdict(case, alpha=ALPHA, tv=DELTA, seed=seed)


def run_audit(*, json_path: str | None = None, statistical: bool = True, seed: int = 0) -> int:
    if json_path is not None:
        check_writable(json_path)  # before the work, not after it
    rows = []
    cases = audit_cases()
    for label, case in tqdm(cases, desc="audit", unit="scheme", file=sys.stderr, disable=None):  # hidden off a terminal
        t0 = time.perf_counter()
        cls = Exact(case, "classes")
        law = cls.token_law()
        t_cls = time.perf_counter() - t0
        t0 = time.perf_counter()
        brute = Exact(case, "brute")
        law_b = brute.token_law()
        t_brute = time.perf_counter() - t0
        assert law == law_b, f"{label}: brute and classes disagree"
        row = {
            "scheme": label,
            "params": case.scheme.to_json(),
            "tv": str(tv(law, target_law(case))),
            "tau": str(cls.tau()),
            "tau_float": float(cls.tau()),
            "brute": brute.counter.enumerated,
            "classes": cls.counter.enumerated,
            "seconds_brute": t_brute,
            "seconds_classes": t_cls,
        }
        if statistical:
            row["fast"] = _statistical(case, seed)
        rows.append(row)
    print(format_table(rows))
    if json_path is not None:
        with open_atomic(json_path) as fh:
            json.dump(rows, fh, indent=1)
    return 0


def format_table(rows: list[dict]) -> str:
    head = ["scheme", "exact TV", "tau", "brute trees", "class trees", "s brute", "s classes"]
    has_fast = any("fast" in r for r in rows)
    if has_fast:
        head += ["fast path (chi2)"]
    lines = []
    for r in rows:
        tvs = r["tv"] if r["tv"] == "0" else f"{r['tv']} ({float(Fraction(r['tv'])):.4f})"
        cells = [
            r["scheme"],
            tvs,
            f"{r['tau_float']:.4f}",
            str(r["brute"]),
            str(r["classes"]),
            f"{r['seconds_brute']:.2f}",
            f"{r['seconds_classes']:.2f}",
        ]
        if has_fast:
            f = r.get("fast", {})
            if "N" in f:
                cells.append(f"{f['verdict']} N={f['N']} alpha={f['alpha']:g} detects TV>={f['detectable_tv']:.3f}")
            else:
                cells.append(str(f.get("verdict", "")))
        lines.append(cells)
    widths = [max(len(h), *(len(c[i]) for c in lines)) for i, h in enumerate(head)]
    fmt = lambda cs: " | ".join(c.ljust(w) for c, w in zip(cs, widths))
    out = [fmt(head), "-+-".join("-" * w for w in widths)] + [fmt(c) for c in lines]
    out.append("exact TV: of the 3-token law from context [0] to the target law; tau: tokens per round, first round.")
    return "\n".join(out)
