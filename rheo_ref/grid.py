"""Sweep grids, the pure part (docs/EXACT_AT_SCALE.md §5): a grid of table generators × schemes ×
temperatures becomes a list of cells; `run_cell` computes one cell's row of the tidy table
(case hash, scheme, exact τ, exact TV, seconds, ...). `run_cells` runs them with any map: the
builtin one (the proofs), or an engine's in `rheo.sweep` (local processes, Dask).

A grid is a JSON object:

    {"tables": [{"generator": "random", "vocab_size": 8, "seeds": [0, 1]},
                {"generator": "zipf", "vocab_size": 6, "context_length": 1, "seeds": [0]},
                {"generator": "given", "name": "mine", "draft": {...}, "target": {...}}],
     "schemes": [{"K": 3, "m": 1, "W": 2, "D": 3, "R": 8}, {"family": "static", ...}],
     "temperatures": ["1", "1/2", 0],
     "context": [0], "tokens": 1, "method": "dp", "max_trees": 2000000}

Generators: `random` (first-order, positive integer weights up to `max_weight`, default 20: the
benchmarks' `random_table`, draft then target from Random(seed)); `uniform`, `close`, `zipf`
(`rheo_ref.generate.random_pair`'s styles, any `context_length`, default 1); `given` (the tables
themselves, section-10 JSON, optional `draft_sample`). A temperature T applies to the sampling
rows, q_samp (the draft's, or `draft_sample`'s) and p, never to q_rank (docs/ALGORITHM.md §1).
"""

from __future__ import annotations

import hashlib
import json
import random
import time
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

from . import numbers
from .errors import CaseError, RheoError
from .exact import DEFAULT_MAX_LAW_SIZE, DEFAULT_MAX_TREES, Exact, check_law_size, target_law, tv
from .generate import STYLES, random_pair, random_table, temper
from .models import Case, TableModel, scheme_from_json
from .parallel import SERIAL, Parallel
from .sizes import Size
from .validate import check_fields, is_int, show, within_limit

GENERATORS = ("random", *STYLES, "given")
MAX_TABLE_ENTRIES = 10**6  # probabilities per generated table: V^(context_length + 1)
METHODS = ("dp", "classes", "brute", "walk", "chain")  # walk: rows without τ (rounds only up to n tokens)
MIN_TEMPERATURE, MAX_TEMPERATURE = Fraction(1, 100), Fraction(100)  # rows^(1/T) stay a few hundred digits
MAX_SEED = 2**63 - 1  # the table's int64 column
MAX_CELLS = 100_000  # cells of one grid (tables x schemes x temperatures); --force lifts it

# The tidy table: one row per cell, these columns in this order (name, type).
COLUMNS: list[tuple[str, type]] = [
    ("case_hash", str),
    ("table", str),
    ("generator", str),
    ("vocab_size", int),
    ("seed", int),
    ("family", str),
    ("scheme", str),
    ("temperature", str),
    ("tokens", int),
    ("method", str),
    ("tau", str),
    ("tau_float", float),
    ("tv", str),
    ("tv_float", float),
    ("acceptance", str),
    ("enumerated", int),
    ("seconds", float),
    ("error", str),
]
COLUMN_NAMES = [name for name, _ in COLUMNS]


@dataclass(frozen=True)
class GridCell:
    """One cell: the case, how to compute it, and the labels its row carries."""

    case: Case
    labels: dict = field(default_factory=dict)  # table, generator, vocab_size, seed, temperature
    method: str = "dp"
    max_trees: int | None = DEFAULT_MAX_TREES

    @property
    def case_hash(self) -> str:
        return case_hash(self.case)

    @property
    def key(self) -> tuple[str, str]:
        """What identifies a finished cell in a table: (case hash, method)."""
        return self.case_hash, self.method


def case_hash(case: Case) -> str:
    """16 hex digits of the SHA-256 of the case's canonical JSON (tables, scheme, context, tokens)."""
    text = json.dumps(case.to_json(), sort_keys=True, separators=(",", ":"), allow_nan=False)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def parse_temperature(value: Any) -> Fraction:
    """A grid temperature: 0 (greedy) or a rational in [MIN_TEMPERATURE, MAX_TEMPERATURE], written
    in the number grammar of `rheo_ref.numbers` (a string such as "1/2", or an integer)."""
    if isinstance(value, bool) or not isinstance(value, (str, int)):
        raise CaseError(f'grid: temperature {show(value)} must be a string such as "1/2" or an integer')
    T = numbers.rational(value, "grid: temperature") if isinstance(value, str) else Fraction(value)
    if T != 0 and not MIN_TEMPERATURE <= T <= MAX_TEMPERATURE:
        raise CaseError(
            f"grid: temperature {show(value)} is outside the allowed range; allowed: 0 (greedy) or "
            f"{MIN_TEMPERATURE} <= T <= {MAX_TEMPERATURE}"
        )
    return T


Tables = list[tuple[dict, TableModel, TableModel, TableModel | None]]


def _table_count(spec: Any) -> int:
    """How many tables one `tables` entry makes (its seeds), before any is generated."""
    if isinstance(spec, dict) and spec.get("generator") != "given" and isinstance(spec.get("seeds"), list):
        return max(len(spec["seeds"]), 1)
    return 1


def _tables(spec: Any, where: str) -> Tables:
    """(labels, draft, target, draft_sample) for each seed of one `tables` entry."""
    gen = spec.get("generator") if isinstance(spec, dict) else None
    if gen not in GENERATORS:
        raise CaseError(f"{where}: generator {gen!r} unknown; allowed: {', '.join(GENERATORS)}")
    if gen == "given":
        check_fields(spec, where, ("generator", "draft", "target"), ("name", "draft_sample"))
        ds = spec.get("draft_sample")
        draft = TableModel.from_json(spec["draft"], "draft")
        labels = {
            "table": str(spec.get("name", "given")),
            "generator": gen,
            "vocab_size": draft.vocab_size,
            "seed": None,
        }
        return [
            (
                labels,
                draft,
                TableModel.from_json(spec["target"], "target"),
                None if ds is None else TableModel.from_json(ds, "draft_sample"),
            )
        ]
    check_fields(spec, where, ("generator", "vocab_size"), ("seeds", "context_length", "max_weight"))
    V, seeds = spec["vocab_size"], spec.get("seeds", [0])
    if not is_int(V) or V < 1:
        raise CaseError(f"{where}: vocab_size {V!r} must be an integer >= 1")
    if not isinstance(seeds, list) or not seeds or not all(is_int(s) and 0 <= s <= MAX_SEED for s in seeds):
        raise CaseError(f"{where}: seeds {show(seeds)} must be a non-empty list of integers in [0, 2^63-1]")
    L = spec.get("context_length", 1)
    if gen == "random" and L != 1:
        raise CaseError(f"{where}: generator random makes first-order tables; context_length {L!r} must be 1")
    if not is_int(L) or L < 0:
        raise CaseError(f"{where}: context_length {L!r} must be an integer >= 0")
    w = spec.get("max_weight", 20 if gen == "random" else 6)
    if not is_int(w) or w < 1:
        raise CaseError(f"{where}: max_weight {w!r} must be an integer >= 1")
    entries = Size.power(V, L + 1) if gen != "random" else Size.power(V, 2)
    if entries > MAX_TABLE_ENTRIES:
        raise CaseError(
            f"{where}: vocab_size {show(V)} with context_length {show(L)} makes tables of {entries} probabilities each; "
            f"at most {MAX_TABLE_ENTRIES:,} are generated (an exact sweep is hopeless long before that)"
        )
    out: Tables = []
    for seed in seeds:
        rng = random.Random(seed)
        if gen == "random":
            draft, target = random_table(rng, V, "draft", max_weight=w), random_table(rng, V, "target", max_weight=w)
        else:
            draft, target = random_pair(rng, V, L, style=gen, max_weight=w)
        out.append(
            (
                {"table": f"{gen} V={V} seed={seed}", "generator": gen, "vocab_size": V, "seed": seed},
                draft,
                target,
                None,
            )
        )
    return out


def grid_cells(grid: Any, *, force: bool = False) -> list[GridCell]:
    """The cells of a grid (module docstring), in grid order: tables × schemes × temperatures.
    Refused up front, before any table is generated: more than MAX_CELLS cells, or a cell whose
    `tokens`-token law is estimated over `max_law_size` (as `rheo exact`); `force` lifts both."""
    check_fields(
        grid,
        "grid",
        ("tables", "schemes"),
        ("temperatures", "context", "tokens", "method", "max_trees", "max_law_size"),
    )
    for name in ("tables", "schemes"):
        if not isinstance(grid[name], list) or not grid[name]:
            raise CaseError(f"grid: {name} must be a non-empty list")
    temps = grid.get("temperatures", ["1"])
    if not isinstance(temps, list) or not temps:
        raise CaseError(f'grid: temperatures {temps!r} must be a non-empty list such as ["1", "1/2"]')
    method = grid.get("method", "dp")
    if method not in METHODS:
        raise CaseError(f"grid: method {method!r} unknown; allowed: {', '.join(METHODS)}")
    max_trees = grid.get("max_trees", DEFAULT_MAX_TREES)
    if max_trees is not None and (not is_int(max_trees) or max_trees < 1):
        raise CaseError(f"grid: max_trees {max_trees!r} must be an integer >= 1 or null (no limit)")
    max_law = grid.get("max_law_size", DEFAULT_MAX_LAW_SIZE)
    if max_law is not None and (not is_int(max_law) or max_law < 1):
        raise CaseError(f"grid: max_law_size {show(max_law)} must be an integer >= 1 or null (no limit)")
    context, tokens = grid.get("context", []), grid.get("tokens", 1)
    if not isinstance(context, list):
        raise CaseError(f"grid: context {show(context)} must be a list of token ids")
    if not is_int(tokens) or tokens < 1:
        raise CaseError(f"grid: tokens {show(tokens)} must be an integer >= 1")
    Ts = [parse_temperature(value) for value in temps]
    schemes = [scheme_from_json(s) for s in grid["schemes"]]
    n_tables = sum(_table_count(spec) for spec in grid["tables"])
    within_limit(
        f"grid cells ({n_tables} tables x {len(schemes)} schemes x {len(Ts)} temperatures)",
        n_tables * len(schemes) * len(Ts),
        None if force else MAX_CELLS,
        override="split the grid, or --force to run anyway",
    )
    tables = [t for i, spec in enumerate(grid["tables"]) for t in _tables(spec, f"grid tables[{i}]")]
    for _, draft, target, _ in tables:  # tempering never widens a row's support: the untempered b bounds every T
        check_law_size(Case(draft, target, schemes[0], (), tokens), tokens, None if force else max_law, name="tokens")
    cells = []
    for labels, draft, target, sample in tables:
        for scheme in schemes:
            for T in Ts:
                hot = T != 1
                case = Case(
                    draft,
                    temper(target, T, "target") if hot else target,
                    scheme,
                    tuple(context),
                    tokens,
                    temper(sample or draft, T, "draft_sample") if hot else sample,
                )
                cells.append(GridCell(case, {**labels, "temperature": str(T)}, method, max_trees))
    return cells


def scheme_label(case: Case) -> str:
    """The scheme as compact JSON (its `family` included when static)."""
    return json.dumps(case.scheme.to_json(), separators=(",", ":"), allow_nan=False)


def run_cell(cell: GridCell, parallel: Parallel = SERIAL) -> dict:
    """One row of the tidy table. A bad cell (a refused enumeration, a scaled proxy above 1, a
    missing row) gives a row with `error` set and no numbers, so a sweep never stops on it.
    `parallel`: where a method that cuts its rounds into parts (chain) runs them (rheo_ref.parallel)."""
    case = cell.case
    row: dict[str, Any] = dict.fromkeys(COLUMN_NAMES)
    row.update(cell.labels)
    row.update(
        case_hash=cell.case_hash,
        family=case.scheme.family,
        scheme=scheme_label(case),
        tokens=case.tokens,
        method=cell.method,
        error="",
    )
    t0 = time.perf_counter()
    try:
        ex = Exact(case, cell.method, max_trees=cell.max_trees, parallel=parallel)
        d = tv(ex.token_law(case.tokens), target_law(case, case.tokens))
        horizon = case.tokens if ex.cuts else None  # walk: rounds only up to n tokens, so no τ
        tau = None if ex.cuts else ex.tau()
        row.update(
            tau=None if tau is None else str(tau),
            tau_float=None if tau is None else float(tau),
            tv=str(d),
            tv_float=float(d),
            acceptance=str(ex.acceptance(horizon=horizon)),
            enumerated=ex.counter.enumerated,
        )
    except RheoError as e:
        row["error"] = str(e)
    row["seconds"] = time.perf_counter() - t0
    return row


def run_cells(cells: Iterable[GridCell], mapper: Callable[..., Iterable[dict]] = map) -> Iterator[dict]:
    """The rows of `cells`, in the order `mapper` yields them (the builtin map: in order)."""
    yield from mapper(run_cell, cells)


def same_rows(a: dict, b: dict) -> bool:
    """Two rows of the same cell agree on everything but the time it took."""
    return {k: v for k, v in a.items() if k != "seconds"} == {k: v for k, v in b.items() if k != "seconds"}
