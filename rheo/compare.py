"""`rheo compare`: every family x compatible verifier at the same number of draft nodes, exactly.

For one case's tables, context and `tokens` (its own scheme only sets the default node budget),
each *cell* is a scheme with N draft nodes; `compare` returns, per cell, the exact τ of the first
round, the exact TV of the `tokens`-token law to the target and the seconds it took
(docs/SCHEMES.md §9 explains the rows). The cells for a budget N (`cells_for`) are each
registered family's (`rheo.families.registry.SuiteFamily.compare_cells`, in `rheo/families/<name>/`), and
`rules()` joins the one-line rule of each that `--json` and the table print.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from rheo.families.registry import suite_families
from rheo_ref.atomic import savefig_atomic
from rheo_ref.errors import CaseError, TooLargeError
from rheo_ref.exact import DEFAULT_MAX_LAW_SIZE, DEFAULT_MAX_TREES, Exact, check_law_size, target_law, tv
from rheo_ref.family import MAX_NODES, family_of
from rheo_ref.models import AnyScheme, Case
from rheo_ref.sizes import Size
from rheo_ref.variants import SPEC


@dataclass(frozen=True)
class CompareCell:
    """One scheme of the comparison: `label` names it at this budget, `series` across budgets
    (the plot's line), `pairing` its sampling + verifier."""

    nodes: int
    family: str
    label: str
    series: str
    pairing: str
    scheme: AnyScheme
    panel: str = ""  # the --plot panel it is drawn in (default: its pairing)


@dataclass
class Row:
    """What the comparison measured for one cell (τ and TV exact)."""

    cell: CompareCell
    tau: Fraction
    tv: Fraction
    seconds: float
    enumerated: int

    def to_json(self) -> dict:
        c = self.cell
        return {
            "nodes": c.nodes,
            "family": c.family,
            "scheme": c.label,
            "series": c.series,
            "verifier": c.pairing,
            "params": c.scheme.to_json(),
            "tau": str(self.tau),
            "tau_float": float(self.tau),
            "tv": str(self.tv),
            "seconds": round(self.seconds, 4),
            "enumerated": self.enumerated,
        }


# --- the cells ----------------------------------------------------------------------------------


def rules() -> str:
    """How every registered family makes its cells (one line each, `rheo.families.registry`)."""
    return " ".join(fam.compare_rule for fam in suite_families().values() if fam.compare_rule)


def cells_for(N: int, vocab_size: int) -> list[CompareCell]:
    """Every cell with N draft nodes: each registered family's, in registry order."""
    if isinstance(N, bool) or not isinstance(N, int) or not 1 <= N <= MAX_NODES:
        raise CaseError(f"--nodes {N!r} must be an integer in 1..{MAX_NODES}")
    return [c for fam in suite_families().values() for c in fam.compare_cells(N, vocab_size)]


def default_nodes(case: Case) -> int:
    """The node budget of the case's own scheme: R (family rheo) or its draft nodes (static)."""
    s = case.scheme
    return s.nodes


# --- running them -------------------------------------------------------------------------------


def case_with(case: Case, scheme: AnyScheme, tokens: int | None = None) -> Case:
    return Case(
        case.draft, case.target, scheme, case.context, case.tokens if tokens is None else tokens, case.draft_sample
    )


def estimate(case: Case) -> Size:
    """Outcomes per round that the exact computation (classes) is bounded by (the family's estimate)."""
    est = family_of(case.scheme).estimate(case, "classes", SPEC)
    return est if isinstance(est, Size) else Size.of(est)


def compare(
    case: Case,
    nodes: Sequence[int],
    *,
    tokens: int | None = None,
    max_trees: int | None = DEFAULT_MAX_TREES,
    max_law_size: int | None = DEFAULT_MAX_LAW_SIZE,
    select: Callable[[CompareCell], bool] | None = None,
    progress: Callable[[list[tuple[CompareCell, Case]]], Iterable[tuple[CompareCell, Case]]] | None = None,
) -> list[Row]:
    """Every cell of every budget in `nodes` (those `select` keeps) on the case's tables and context.

    Every cell's size estimate is checked before any is run: one above `max_trees` refuses the
    whole comparison (`TooLargeError`, naming the cell; None: no limit), as does a law of more than
    `max_law_size` tokens in all. `progress` wraps the
    iteration over the cells (e.g. a tqdm bar)."""
    n = case.tokens if tokens is None else tokens
    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise CaseError(f"--tokens {n!r} must be an integer >= 1")
    check_law_size(case, n, max_law_size, name="tokens" if tokens is None else "--tokens")
    cells = [c for N in dict.fromkeys(nodes) for c in cells_for(N, case.vocab_size) if select is None or select(c)]
    cases = [case_with(case, c.scheme, n) for c in cells]
    if max_trees is not None:
        for c, cs in zip(cells, cases):
            est = estimate(cs)
            if est > max_trees:
                raise TooLargeError(
                    f"{c.label} {c.pairing} at {c.nodes} nodes would enumerate up to ~{est} outcomes "
                    f"per round (limit {max_trees:,}); use smaller --nodes, or --force to run anyway"
                )
    target = target_law(case, n)
    rows = []
    pairs = list(zip(cells, cases))
    for c, cs in progress(pairs) if progress is not None else pairs:
        t0 = time.perf_counter()
        ex = Exact(cs, "classes", max_trees=None)
        law = ex.token_law(n)
        rows.append(Row(c, ex.tau(), tv(law, target), time.perf_counter() - t0, ex.counter.enumerated))
    return rows


# --- output -------------------------------------------------------------------------------------


def _short(f: Fraction, width: int = 14) -> str:
    s = str(f)
    return s if len(s) <= width else "..."


def format_table(rows: Sequence[Row], *, tokens: int) -> str:
    """An aligned text table, one line per row, budgets separated; `*` marks the best τ per budget."""
    head = ["nodes", "family", "scheme", "verifier", "tau", "exact tau", "exact TV", "seconds"]
    best: dict[int, Fraction] = {}
    for r in rows:
        if r.tv == 0 and r.tau > best.get(r.cell.nodes, Fraction(-1)):
            best[r.cell.nodes] = r.tau
    lines = []
    for r in rows:
        c = r.cell
        tvs = "0" if r.tv == 0 else f"{_short(r.tv)} ({float(r.tv):.4f})"
        star = " *" if r.tv == 0 and r.tau == best.get(c.nodes) else ""
        lines.append(
            [
                str(c.nodes),
                c.family,
                c.label,
                c.pairing,
                f"{float(r.tau):.4f}{star}",
                _short(r.tau),
                tvs,
                f"{r.seconds:.3f}",
            ]
        )
    widths = [max([len(h)] + [len(ln[i]) for ln in lines]) for i, h in enumerate(head)]
    fmt = lambda cs: " | ".join(x.ljust(w) for x, w in zip(cs, widths)).rstrip()
    out = [fmt(head), "-+-".join("-" * w for w in widths)]
    for i, ln in enumerate(lines):
        if i and rows[i].cell.nodes != rows[i - 1].cell.nodes:
            out.append("-+-".join("-" * w for w in widths))
        out.append(fmt(ln))
    out.append(
        f"tau: expected tokens of the first round; exact TV: of the {tokens}-token law to the target; "
        f"*: best lossless tau at that budget; '...': exact value in --json."
    )
    return "\n".join(out)


def to_json(rows: Sequence[Row], *, case_path: str | None, case: Case, tokens: int, seconds: float) -> dict[str, Any]:
    return {
        "case": case_path,
        "context": list(case.context),
        "tokens": tokens,
        "nodes": list(dict.fromkeys(r.cell.nodes for r in rows)),
        "rules": rules(),
        "rows": [r.to_json() for r in rows],
        "seconds": round(seconds, 4),
    }


PLOT_SUFFIXES = (".png", ".svg", ".pdf")
REFERENCE = ("rheo family", "Rheo m=1")  # (panel, series) drawn dashed in every other panel


def check_plot_path(path: str) -> None:
    """Refuse a plot file that could not be written, before anything is computed."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise CaseError(f"--plot {path!r}: folder {folder!r} does not exist")
    if os.path.splitext(path)[1].lower() not in PLOT_SUFFIXES:
        raise CaseError(f"--plot {path!r}: allowed suffixes {', '.join(PLOT_SUFFIXES)}")


def plot(rows: Sequence[Row], path: str) -> None:
    """τ against the node budget, one line per scheme (series x verifier), one panel for the
    family or pairing (`CompareCell.panel`), the REFERENCE series dashed in the others; written atomically
    (a temporary file, then rename)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = list(dict.fromkeys(r.cell.panel or r.cell.pairing for r in rows))
    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5), sharey=True)
    lines: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for r in rows:
        panel = r.cell.panel or r.cell.pairing
        lines.setdefault((panel, r.cell.series), []).append((r.cell.nodes, float(r.tau)))
    reference = lines.get(REFERENCE, [])
    names = list(dict.fromkeys(series for _, series in lines))  # one colour and marker per series, every panel
    cmap = plt.get_cmap("tab20")
    style = {s: (cmap(i % 20), "os^vD<>p"[i // 20 % 8]) for i, s in enumerate(names)}
    for ax, panel in zip(axes.flat, panels):
        for (pn, series), pts in lines.items():
            if pn == panel:
                pts.sort()
                color, marker = style[series]
                ax.plot(
                    [x for x, _ in pts], [y for _, y in pts], marker=marker, ls="-", ms=4, color=color, label=series
                )
        if panel != REFERENCE[0] and reference:
            ax.plot([x for x, _ in reference], [y for _, y in reference], "k--", lw=1, label="Rheo m=1 (reference)")
        ax.set(title=panel, xlabel="draft nodes N", ylabel="exact τ")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    try:
        savefig_atomic(fig, path, dpi=100, format=os.path.splitext(path)[1].lower().lstrip("."))
    finally:
        plt.close(fig)
