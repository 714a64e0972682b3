"""`rheo audit` (the `make run` job): a built-in matrix of schemes on one fixed table-model case.

For each scheme: exact TV of the 3-token law to the target, tau, how many trees brute force and
the class enumeration visit for the same exact answer (they must agree), seconds, and (when the
fast path and the statistics module are present) the fast path's statistical verdict. The rows
are each registered family's (`rheo.families.registry.SuiteFamily.audit_rows`, in `rheo/families/<name>/`),
in registry order (`--family NAME` keeps the named families' rows only); for the families other
than rheo `brute trees` counts joint draws and `class trees` what their class method visits
(sibling draws of the subtree recursion).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Sequence
from fractions import Fraction

from tqdm import tqdm

from rheo.families.registry import suite_families
from rheo_ref import strict_json
from rheo_ref.atomic import check_writable, open_atomic
from rheo_ref.exact import Exact, target_law, tv
from rheo_ref.models import Case, TableModel

ALPHA, DELTA = 1e-3, 0.02  # the statistical column: false-alarm rate, TV detected with power 0.99


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


def audit_cases(families: Sequence[str] | None = None) -> list[tuple[str, Case]]:
    """Every registered family's rows (`rheo.families.registry.SuiteFamily.audit_rows`), in registry order;
    with `families`, only theirs (names already checked: `rheo_ref.family.family_named`)."""
    q, p = audit_models()
    fams = [f for name, f in suite_families().items() if families is None or name in families]
    return [row for fam in fams for row in fam.audit_rows(q, p)]


def _statistical(case: Case, seed: int) -> dict:
    from rheo.selfgate.matrix import fast_verdict

    return fast_verdict(case, alpha=ALPHA, tv=DELTA, seed=seed)


def run_audit(
    *, json_path: str | None = None, statistical: bool = True, seed: int = 0, families: Sequence[str] | None = None
) -> int:
    if json_path is not None:
        check_writable(json_path)  # before the work, not after it
    rows = []
    cases = audit_cases(families)
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
            strict_json.dump(rows, fh, indent=1)
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
