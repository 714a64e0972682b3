"""Where a goodness-of-fit test breaks: the cells and the conditional law that deviate most.

A χ² test that rejects says *that* a sampler's law is wrong; this says *where*, from the same
counts and exact law:
- `top_cells`: the tested cells with the largest standardised (Pearson) residuals
  r = (O − E)/√E, each with its sequence (None for the pooled cell), observed and expected
  counts; a sample on an outcome of exact probability 0 has r = +inf and comes first;
- `worst_conditional`: among the conditional laws of one component of the outcome given the
  ones before it (token j given tokens 1..j−1 = prefix; for variable-length outcomes such as a
  round's sequence, "end" is one more symbol), the one whose own χ² test is most significant
  (smallest p-value, after pooling cells with expected count below 10 as `rheo.lossless.stats` does).
  Its text names the place: "token 6 given token 5 = 2, first round of length 6".
The p-value of a conditional law is a pointer, not a second verdict: it is chosen as the
smallest of many, so it carries no α of its own. Floats throughout (a diagnosis, not a proof).
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rheo.lossless.cells import pool_cells

END = -1  # the symbol "the sequence ends here" of a variable-length outcome
TOP = 5  # cells kept in a record (summaries print 3)


@dataclass(frozen=True)
class Cell:
    """One tested cell: an outcome (None: the pooled cell of `outcomes` rare outcomes)."""

    sequence: tuple[int, ...] | None
    outcomes: int
    observed: int
    expected: float
    residual: float  # (observed − expected) / √expected; +inf on an outcome of probability 0

    def text(self) -> str:
        what = "pooled cell" + (f" ({self.outcomes} outcomes)" if self.outcomes > 1 else "")
        seq = what if self.sequence is None else str(self.sequence)
        return f"{seq}: seen {self.observed}, expected {self.expected:.1f} (residual {self.residual:+.1f})"


@dataclass(frozen=True)
class Conditional:
    """The law of one component given the ones before it, observed against expected."""

    where: str  # e.g. "token 6 given token 5 = 2, first round of length 6"
    component: int  # 1-based index in the tested outcome
    prefix: tuple[int, ...]  # the values of the components before it
    condition: str  # what the whole test conditions on ("" if nothing)
    n: int  # samples with this prefix
    chi2: float
    p_value: float
    tv: float  # between the observed and the expected conditional law
    observed: tuple[tuple[int, int], ...]  # (symbol, count); symbol END = -1 is "end"
    expected: tuple[tuple[int, float], ...]  # (symbol, expected count)

    def text(self) -> str:
        exp = dict(self.expected)
        obs = dict(self.observed)
        syms = sorted(set(obs) | set(exp), key=lambda s: -abs(obs.get(s, 0) - exp.get(s, 0.0)))
        parts = [f"{_sym(s)} seen {obs.get(s, 0)}, expected {exp.get(s, 0.0):.1f}" for s in syms]
        return f"{self.where} (N={self.n}, TV {self.tv:.3f}, p={self.p_value:.3g}): {'; '.join(parts[:4])}"

    def to_json(self) -> dict:
        return {
            "where": self.where,
            "n": self.n,
            "p_value": self.p_value,
            "tv": self.tv,
            "observed": {_sym(s): c for s, c in self.observed},
            "expected": {_sym(s): e for s, e in self.expected},
        }


def plot_worst(report: Mapping, path: str) -> str:
    """Draw observed vs expected counts of a report's `worst_conditional_law` into `path` (PNG)."""
    from rheo_ref.errors import OutputError

    law = report.get("worst_conditional_law")
    if not law:
        raise OutputError(f"--plot {path}: no conditional law to draw (every conditional law had one testable cell)")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    syms = sorted(set(law["observed"]) | set(law["expected"]), key=lambda s: (s == "end", len(s), s))
    x = range(len(syms))
    fig, ax = plt.subplots(figsize=(max(4.0, 0.6 * len(syms) + 2), 3.2))
    ax.bar([i - 0.2 for i in x], [law["observed"].get(s, 0) for s in syms], 0.4, label="observed")
    ax.bar([i + 0.2 for i in x], [law["expected"].get(s, 0.0) for s in syms], 0.4, label="expected")
    ax.set_xticks(list(x), syms)
    ax.set_xlabel("next symbol")
    ax.set_ylabel("samples")
    ax.set_title(f"{law['where']}\nN={law['n']}, TV {law['tv']:.3f}, p={law['p_value']:.3g}", fontsize=9)
    ax.legend()
    fig.tight_layout()
    try:
        fig.savefig(path)
    except OSError as e:
        raise OutputError(f"--plot {path}: cannot write it ({e.strerror})") from None
    finally:
        plt.close(fig)
    return path


def _sym(s: int) -> str:
    return "end" if s == END else str(s)


def component_name(names: Sequence[str] | None, j: int) -> str:
    """Name of component j (0-based): names[j], else 'token j+1'."""
    return names[j] if names is not None and j < len(names) else f"token {j + 1}"


def describe(j: int, prefix: tuple[int, ...], names: Sequence[str] | None, condition: str = "") -> str:
    given = ", ".join(f"{component_name(names, i)} = {v}" for i, v in enumerate(prefix))
    text = component_name(names, j) + (f" given {given}" if given else "")
    return text + (f", {condition}" if condition else "")


def residual(observed: int, expected: float) -> float:
    if expected <= 0:
        return math.inf if observed else 0.0
    return (observed - expected) / math.sqrt(expected)


def top_cells(
    counts: Mapping[tuple[int, ...], int],
    law: Mapping[tuple[int, ...], float],
    groups: Sequence[tuple[tuple[int, ...], ...]],
    n: int,
    top: int = TOP,
) -> tuple[Cell, ...]:
    """The `top` cells (tested groups, and outcomes of probability 0 that were seen) with the largest |residual|."""
    cells = []
    for g in groups:
        e = n * sum(law[o] for o in g)
        o = sum(counts.get(x, 0) for x in g)
        cells.append(Cell(g[0] if len(g) == 1 else None, len(g), o, e, residual(o, e)))
    for seq, c in counts.items():
        if c and not law.get(seq, 0):
            cells.append(Cell(seq, 1, c, 0.0, math.inf))
    cells.sort(key=lambda c: (-abs(c.residual), -c.observed))
    return tuple(cells[:top])


def _prefix_laws(law: Mapping[tuple[int, ...], float], variable: bool) -> dict[tuple[int, tuple], dict[int, float]]:
    """(component j, prefix) -> {next symbol: mass}; END is a symbol when lengths vary."""
    out: dict[tuple[int, tuple], dict[int, float]] = defaultdict(lambda: defaultdict(float))
    for s, p in law.items():
        for j in range(len(s) + variable):
            out[(j, s[:j])][s[j] if j < len(s) else END] += p
    return out


def worst_conditional(
    counts: Mapping[tuple[int, ...], int],
    law: Mapping[tuple[int, ...], float],
    *,
    names: Sequence[str] | None = None,
    condition: str = "",
    min_expected: float = 10.0,
) -> Conditional | None:
    """The conditional law (component j given the components before it) whose χ² test is most
    significant; None when no conditional law has two testable cells or a sample off its support."""
    from scipy.stats import chi2 as chi2_dist

    lengths = {len(s) for s in law} | {len(s) for s in counts}
    variable = len(lengths) > 1
    exp_laws = _prefix_laws(law, variable)
    obs_laws = _prefix_laws({s: float(c) for s, c in counts.items() if c}, variable)
    best: tuple | None = None
    for key, obs in obs_laws.items():
        exp = exp_laws.get(key, {})
        mass = sum(exp.values())
        n_pref = round(sum(obs.values()))
        if mass <= 0 or n_pref < 1:
            continue  # a prefix of probability 0: an earlier component already shows it
        e_cond = {s: m / mass for s, m in exp.items() if m > 0}
        impossible = sum(c for s, c in obs.items() if s not in e_cond)
        stat, df = _pooled_chi2(obs, e_cond, n_pref, min_expected)
        if df < 1 and not impossible:
            continue
        logp = -math.inf if impossible else float(chi2_dist.logsf(stat, df))
        rank = (logp, -impossible, -stat)
        if best is None or rank < best[0]:
            best = (rank, key, obs, e_cond, n_pref, math.inf if impossible else stat, logp)
    if best is None:
        return None
    _, (j, prefix), obs, e_cond, n_pref, stat, logp = best
    tv = 0.5 * sum(abs(obs.get(s, 0) / n_pref - e_cond.get(s, 0.0)) for s in set(obs) | set(e_cond))
    return Conditional(
        describe(j, prefix, names, condition),
        j + 1,
        tuple(prefix),
        condition,
        n_pref,
        stat,
        math.exp(logp),
        tv,
        tuple(sorted((s, round(c)) for s, c in obs.items())),
        tuple(sorted((s, n_pref * e) for s, e in e_cond.items())),
    )


def _pooled_chi2(
    obs: Mapping[int, float], e_cond: Mapping[int, float], n: int, min_expected: float
) -> tuple[float, int]:
    """Pearson statistic and degrees of freedom of n samples against a conditional law, rare cells
    pooled as the gate pools them (`rheo.lossless.cells.pool_cells`)."""
    big = pool_cells(e_cond, n, min_expected)
    stat = 0.0
    for g in big:
        e = n * sum(e_cond[s] for s in g)
        o = sum(obs.get(s, 0) for s in g)
        stat += (o - e) ** 2 / e
    return stat, len(big) - 1
