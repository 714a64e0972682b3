"""`rheo compare`: every family x compatible verifier at the same number of draft nodes, exactly.

For one case's tables, context and `tokens` (its own scheme only sets the default node budget),
each *cell* is a scheme with N draft nodes; `compare` returns, per cell, the exact τ of the first
round, the exact TV of the `tokens`-token law to the target and the seconds it took
(docs/SCHEMES.md §9 explains the rows). The cells for a budget N (`cells_for`):

- family `rheo` (docs/ALGORITHM.md §2), budget R = N, K = min(3, V), W = min(2, K),
  D = ceil(N / W) (so the budget could be spent on W paths of full depth): Top-K (m = K),
  Rheo m = 1 with the OT order and with RRSw, and the chain (K = 1, m = 0, W = 1, D = R = N);
- family `static` (docs/SCHEMES.md): the sampled chain `branching [1]*N`, root rollouts
  `branching [K, 1, ..., 1]` for every divisor K >= 2 of N (K = N: the depth-1 fan), balanced
  `branching [k]*d` (k, d >= 2, k + ... + k^d = N), and delayed `[K, L1, L2]` for every K >= 2,
  L1 >= 1, L2 >= 1 with L1 + K·L2 = N; each with the five compatible pairings;
- family `tsubame`: the rheo family's tree (K, W, D, R = N) planned by Top-K, x the five pairings;
- family `treespark`: N nodes, k = min(3, V) children per node, depth D = N (the best-first heap
  alone decides the shape), identity calibration, θ in THETAS (0, and 1/5, which binds once a
  slot bound below 1/5 is the best one within N nodes), x rrsw and traversal (wor siblings).
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

from rheo_ref.atomic import savefig_atomic
from rheo_ref.errors import CaseError, TooLargeError
from rheo_ref.exact import DEFAULT_MAX_LAW_SIZE, DEFAULT_MAX_TREES, Exact, check_law_size, target_law, tv
from rheo_ref.families.rheo.enumerate import estimate_trees_per_round
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.static.exact import estimate_static
from rheo_ref.families.static.scheme import MAX_NODES, StaticScheme
from rheo_ref.families.treespark.exact import estimate_treespark
from rheo_ref.families.treespark.scheme import Calibration, TreeSparkScheme
from rheo_ref.families.tsubame.exact import estimate_tsubame
from rheo_ref.families.tsubame.scheme import TsubameScheme
from rheo_ref.models import AnyScheme, Case, Proxy

# The compatible (lossless) pairings of the static family, in table order (docs/SCHEMES.md §3).
PAIRINGS = (("iid", "specinfer"), ("wor", "rrsw"), ("iid", "rrsw"), ("iid", "traversal"), ("wor", "traversal"))
RULES = (
    "rheo family: R = N, K = min(3, V), W = min(2, K), D = ceil(N / W); chain K = 1, m = 0, W = 1, D = R = N. "
    "static family: chain [1]*N, rollouts [K, 1, ...] (K | N), balanced [k]*d, delayed [K, L1, L2] "
    "(K >= 2, L1 >= 1, L2 >= 1, L1 + K*L2 = N), each with iid+specinfer, wor+rrsw, iid+rrsw, iid+traversal, "
    "wor+traversal. tsubame: the rheo family's tree (K, W, D, R = N) x the five pairings. "
    "treespark: N, k = min(3, V), D = N, identity calibration, theta 0 and 1/5, x wor+rrsw, wor+traversal."
)
# The treespark cells' stop thresholds: 0 (never stops early) and 1/5 (binds on tests/cases/small.json from N = 5).
THETAS = (Fraction(0), Fraction(1, 5))


@dataclass(frozen=True)
class Cell:
    """One scheme of the comparison: `label` names it at this budget, `series` across budgets
    (the plot's line), `pairing` its sampling + verifier."""

    nodes: int
    family: str
    label: str
    series: str
    pairing: str
    scheme: AnyScheme


@dataclass
class Row:
    """What the comparison measured for one cell (τ and TV exact)."""

    cell: Cell
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


def rheo_cells(N: int, vocab_size: int) -> list[Cell]:
    K = min(3, vocab_size)
    W = min(2, K)
    D = -(-N // W)
    tree = f"K={K} W={W} D={D} R={N}"
    rheo = lambda m, verify: Scheme(K, m, W, D, N, Proxy("rheo"), verify)
    return [
        Cell(N, "rheo", f"Top-K {tree}", "Top-K", "OT", rheo(K, "rheo")),
        Cell(N, "rheo", f"Rheo m=1 {tree}", "Rheo m=1", "OT", rheo(min(1, K), "rheo")),
        Cell(N, "rheo", f"Rheo m=1 {tree}", "Rheo m=1 + RRSw", "RRSw", rheo(min(1, K), "rrsw")),
        Cell(N, "rheo", f"chain K=1 D={N}", "chain (rheo)", "OT", Scheme(1, 0, 1, N, N, Proxy("rheo"), "rheo")),
    ]


def static_shapes(N: int) -> list[tuple[str, tuple[int, ...], str]]:
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


def static_cells(N: int) -> list[Cell]:
    cells = []
    for kind, sizes, series in static_shapes(N):
        for sampling, verify in PAIRINGS:
            scheme = StaticScheme(kind, sizes, sampling, verify)
            label = f"{kind} [{', '.join(map(str, sizes))}]"
            cells.append(Cell(N, "static", label, series, f"{sampling}+{verify}", scheme))
    return cells


def tsubame_cells(N: int, vocab_size: int) -> list[Cell]:
    """Tsubame with the rheo family's tree (K = min(3, V), W = min(2, K), D = ceil(N / W), R = N)
    planned by Top-K, tokens sampled, x every compatible pairing."""
    K = min(3, vocab_size)
    W = min(2, K)
    D = -(-N // W)
    label = f"Tsubame K={K} W={W} D={D} R={N}"
    return [Cell(N, "tsubame", label, "Tsubame", f"{s}+{v}", TsubameScheme(K, W, D, N, s, v)) for s, v in PAIRINGS]


def treespark_cells(N: int, vocab_size: int) -> list[Cell]:
    """TreeSpark with N nodes, k = min(3, V), D = N, identity calibration, x θ in THETAS x its two
    verifiers (both with the wor update: its siblings are drawn without replacement)."""
    k = min(3, vocab_size)
    return [
        Cell(
            N,
            "treespark",
            f"TreeSpark N={N} k={k} D={N} theta={theta}",
            f"TreeSpark theta={theta}",
            f"wor+{verify}",
            TreeSparkScheme(N, k, N, theta, Calibration("identity"), verify),
        )
        for theta in THETAS
        for verify in ("rrsw", "traversal")
    ]


def cells_for(N: int, vocab_size: int) -> list[Cell]:
    """Every cell with N draft nodes: the rheo family, the static family, tsubame, then treespark."""
    if isinstance(N, bool) or not isinstance(N, int) or not 1 <= N <= MAX_NODES:
        raise CaseError(f"--nodes {N!r} must be an integer in 1..{MAX_NODES}")
    return rheo_cells(N, vocab_size) + static_cells(N) + tsubame_cells(N, vocab_size) + treespark_cells(N, vocab_size)


def default_nodes(case: Case) -> int:
    """The node budget of the case's own scheme: R (family rheo) or its draft nodes (static)."""
    s = case.scheme
    return s.nodes


# --- running them -------------------------------------------------------------------------------


def case_with(case: Case, scheme: AnyScheme, tokens: int | None = None) -> Case:
    return Case(
        case.draft, case.target, scheme, case.context, case.tokens if tokens is None else tokens, case.draft_sample
    )


def estimate(case: Case) -> int:
    """Outcomes per round that the exact computation (classes) is bounded by."""
    if isinstance(case.scheme, StaticScheme):
        return estimate_static(case, "classes")
    if isinstance(case.scheme, TsubameScheme):
        return estimate_tsubame(case, "classes")
    if isinstance(case.scheme, TreeSparkScheme):
        return estimate_treespark(case)
    return estimate_trees_per_round(case, "classes")


def compare(
    case: Case,
    nodes: Sequence[int],
    *,
    tokens: int | None = None,
    max_trees: int | None = DEFAULT_MAX_TREES,
    max_law_size: int | None = DEFAULT_MAX_LAW_SIZE,
    select: Callable[[Cell], bool] | None = None,
    progress: Callable[[list[tuple[Cell, Case]]], Iterable[tuple[Cell, Case]]] | None = None,
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
                    f"{c.label} {c.pairing} at {c.nodes} nodes would enumerate up to ~{est:,} outcomes "
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
        "rules": RULES,
        "rows": [r.to_json() for r in rows],
        "seconds": round(seconds, 4),
    }


PLOT_SUFFIXES = (".png", ".svg", ".pdf")


def check_plot_path(path: str) -> None:
    """Refuse a plot file that could not be written, before anything is computed."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise CaseError(f"--plot {path!r}: folder {folder!r} does not exist")
    if os.path.splitext(path)[1].lower() not in PLOT_SUFFIXES:
        raise CaseError(f"--plot {path!r}: allowed suffixes {', '.join(PLOT_SUFFIXES)}")


def plot(rows: Sequence[Row], path: str) -> None:
    """τ against the node budget, one line per scheme (series x verifier), one panel for the
    rheo family and one per static pairing; written atomically (a temporary file, then rename)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = ["rheo family"] + [f"{s}+{v}" for s, v in PAIRINGS]
    fig, axes = plt.subplots(2, 3, figsize=(15, 8.5), sharey=True)
    lines: dict[tuple[str, str], list[tuple[int, float]]] = {}
    for r in rows:
        panel = "rheo family" if r.cell.family == "rheo" else r.cell.pairing
        lines.setdefault((panel, r.cell.series), []).append((r.cell.nodes, float(r.tau)))
    reference = lines.get(("rheo family", "Rheo m=1"), [])
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
        if panel != "rheo family" and reference:
            ax.plot([x for x, _ in reference], [y for _, y in reference], "k--", lw=1, label="Rheo m=1 (reference)")
        ax.set(title=panel, xlabel="draft nodes N", ylabel="exact τ")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    try:
        savefig_atomic(fig, path, dpi=100, format=os.path.splitext(path)[1].lower().lstrip("."))
    finally:
        plt.close(fig)
