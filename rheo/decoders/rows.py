"""A decoder's verdict table: the settings of its rows in docs/THIRD_PARTY.md, declared in its folder
(`Decoder.table`), and the run that reproduces them (`rheo gate --decoder NAME --rows all --seeds 1,2`).

A `Table` names the case, the tokens, α, δ and β its rows share; a `Row` names one setting (its `--gen`
options, the `NAME:ARG` argument where the decoder takes one) and may override the case, the tokens, δ or
ask for the horizon test. `run_row` gates the row on each seed through `rheo.decoders.gate.gate_hf`
(the decoder's own exact TV beside each verdict) and returns one record; a row that cannot run here
(`runs_here`: why not, the error and the line) is tried once on 4 samples and reports the error its
driver raises; with `--device cuda` (a served decoder's driver on the GPU) it is gated like any other row, and
the record says `"device": "cuda"`. `expected` is the verdict the exact TV promises: pass at 0, REJECT above δ (and for a
negative control); between the two, or where rheo does not know the decoder's law, either.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

from rheo_ref.errors import CaseError, DeviceUnavailable, RheoError, TooLargeError

REPO = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Row:
    """One setting of a decoder's verdict table (its fields left None take the table's)."""

    setting: str  # short name, e.g. "token T=1"
    gen: Mapping[str, Any] = field(default_factory=dict)
    note: str = ""  # what the setting is
    cause: str = ""  # where a lossy row's error is in their code (file and line)
    runs_here: str = ""  # empty: it runs on CPU; else why not (error, file, line)
    control: bool = False  # the negative control: must be rejected
    arg: str | None = None  # NAME:ARG's text for a decoder that takes one (`1/2`, `capped_hsd`)
    case: str | None = None  # a case file relative to the repository root
    tokens: int | None = None
    tv: float | None = None  # the δ this row is gated at
    alpha: float | None = None
    slow: bool = False  # a row of the slow profile (minutes): left out of `--rows quick`
    horizon: int | None = None  # test every window (x_{k-1}, x_k), k <= H, instead of the first tokens
    path: str | None = None  # the code under test where it is not the decoder's `path`
    # a row that is not one gate of one setting (vLLM's mixed batch): (decoder, row, table, seed) -> record
    judge: Callable[..., dict[str, Any]] | None = None


@dataclass(frozen=True)
class Table:
    """The rows of one decoder's verdict table and what they share."""

    rows: tuple[Row, ...]
    case: str = "tests/cases/hf.json"
    tokens: int = 2
    alpha: float = 1e-3
    tv: float = 0.25
    beta: float = 0.01

    def row(self, setting: str) -> Row:
        for r in self.rows:
            if r.setting == setting:
                return r
        raise CaseError(f"no row {setting!r}; allowed: {', '.join(r.setting for r in self.rows)}")

    def select(self, spec: str) -> list[Row]:
        """`all`, `quick` (the rows not marked slow), one setting (its name may hold commas), or comma-separated
        settings (each one must exist)."""
        if spec in ("all", "quick"):
            return [r for r in self.rows if spec == "all" or not r.slow]
        whole = [r for r in self.rows if r.setting == spec.strip()]  # a setting whose name has a comma
        if whole:
            return whole
        names = [s.strip() for s in spec.split(",")]
        if not all(names):
            raise CaseError(f"--rows {spec!r}; allowed: all, quick, or comma-separated settings of the table")
        return [self.row(s) for s in names]

    def resolved(self, row: Row, case: str | None = None) -> Row:
        """The row with every field the table supplies filled in (`case` overrides both)."""
        return replace(
            row,
            case=case or row.case or self.case,
            tokens=row.tokens if row.tokens is not None or row.horizon is not None else self.tokens,
            tv=self.tv if row.tv is None else row.tv,
            alpha=self.alpha if row.alpha is None else row.alpha,
        )


def expected(exact_tv: Fraction | None, tv: float, control: bool) -> str | None:
    """The verdict the exact TV promises (None: either is right)."""
    if control or (exact_tv is not None and exact_tv > Fraction(tv)):
        return "REJECT"
    if exact_tv == 0:
        return "pass"
    return None


def run_row(
    decoder: Any,
    row: Row,
    table: Table,
    *,
    seeds: tuple[int, ...],
    case: str | None = None,
    alpha: float | None = None,
    tv: float | None = None,
    beta: float | None = None,
    workers: int = 1,
    sampling: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """One row of `decoder`'s verdict table on each seed: one record (docs/THIRD_PARTY.md). `case`,
    `alpha`, `tv` and `beta` override the row's and the table's; `sampling` (`scheduler=`, `chunk=`) is
    handed to `gate_hf` (a row with its own judge draws one batch in this process, and its record says so)."""
    row = table.resolved(row, case)
    row = replace(row, alpha=alpha or row.alpha, tv=tv or row.tv)
    table = replace(table, beta=beta or table.beta)
    assert row.case is not None and row.tv is not None and row.alpha is not None
    name = decoder.name if row.arg is None else f"{decoder.name}:{row.arg}"
    package, version = decoder.distribution()
    out: dict[str, Any] = {
        "decoder": name,
        "package": package,
        "version": version,
        "path": row.path or decoder.path,
        "setting": row.setting,
        "gen": dict(row.gen),
        "case": row.case,
        "tokens": row.tokens,
        "horizon": row.horizon,
        "alpha": row.alpha,
        "beta": table.beta,
        "tv": row.tv,
        "note": row.note,
        "cause": row.cause,
        "control": row.control,
        "seeds": list(seeds),
    }
    gpu = _on_gpu(decoder)
    if gpu:  # (a CPU record stays as it was)
        out["device"] = gpu
    on = (sampling or {}).get("scheduler")
    if on is not None:  # where the samples were drawn (the address of a Client's scheduler)
        out["scheduler"] = on if isinstance(on, str) else str(on.scheduler.address)
        out["chunk"] = (sampling or {}).get("chunk")
    t0 = time.perf_counter()
    try:
        return _judged(decoder, row, table, seeds, name, out, workers, t0, sampling or {})
    except RheoError as e:  # (not a verdict: the row's one-line error; the table's other rows still run)
        if isinstance(e, CaseError) and not isinstance(e, TooLargeError):
            raise  # a row the table declares wrongly, or bad flags: the table itself is wrong
        if isinstance(e, DeviceUnavailable):
            raise  # no row runs on a device the environment does not have: one line, exit 2
        error = str(e).strip().splitlines()[-1] if str(e).strip() else type(e).__name__
        return {**out, "exact_tv": None, "exact_tv_float": None, "error": error, "as_expected": False,
                "seconds_row": round(time.perf_counter() - t0, 3)}  # fmt: skip


def _judged(
    decoder: Any, row: Row, table: Table, seeds: tuple[int, ...], name: str, out: dict[str, Any], workers: int,
    t0: float, sampling: dict[str, Any],
) -> dict[str, Any]:  # fmt: skip
    from rheo.decoders import DecoderRun
    from rheo.decoders.gate import gate_hf
    from rheo_ref.models import load_case

    assert row.case is not None and row.tv is not None and row.alpha is not None
    if row.judge is not None:
        if sampling.get("scheduler") is not None:
            out["sampled"] = "in this process (the row's own judge: one batch, one driver call)"
        runs = [row.judge(decoder, row, table, s) for s in seeds]
    else:
        run = DecoderRun.parse(name, dict(row.gen))
        path = Path(row.case)
        c = load_case(str(path if path.is_absolute() or path.exists() else REPO / path))
        if row.runs_here and not _on_gpu(decoder):
            return {**out, **_not_run(run, row, c, seeds[0]), "seconds_row": round(time.perf_counter() - t0, 3)}
        runs = [
            gate_hf(c, run, alpha=row.alpha, tv=row.tv, beta=table.beta, workers=workers, seed=s, tokens=row.tokens,
                    horizon=row.horizon, **sampling)
            for s in seeds
        ]  # fmt: skip
    first = runs[0]
    out["gen"] = first.get("gen", out["gen"]) if row.judge is not None else out["gen"]  # a judge's own settings
    out.update(
        exact_tv=first["exact_tv"],
        exact_tv_float=first["exact_tv_float"],
        verdicts=[r["verdict"] for r in runs],
        p_values=[r["p_value"] for r in runs],
        own_law_p=[r.get("own_law_p") for r in runs],
        N=first["N"],
        cells=first["cells"],
        detectable_tv=first["detectable_tv"],
        seconds=[r["seconds"] for r in runs],
        seconds_row=round(time.perf_counter() - t0, 3),
    )
    want = expected(None if first["exact_tv"] is None else _max_tv(first["exact_tv"]), row.tv, row.control)
    out["expected"] = want
    out["as_expected"] = want is None or all(v == want for v in out["verdicts"])
    return out


def _on_gpu(decoder: Any) -> str | None:
    """The device a served decoder's driver runs on where it is not the CPU (`rheo gate --device cuda`), else None."""
    if getattr(decoder, "served", None) is None:
        return None
    from rheo.decoders.served import device

    return None if device() == "cpu" else device()


def _max_tv(exact: str | list[str]) -> Fraction:
    return max(Fraction(e) for e in exact) if isinstance(exact, list) else Fraction(exact)


def _not_run(run: Any, row: Row, case: Any, seed: int) -> dict[str, Any]:
    """A row that cannot run here: its exact TV, and the error its own code raises on 4 samples."""
    from rheo.decoders.gate import decode_batch, exact_tv_of
    from rheo.decoders.served import DriverError
    from rheo_ref.errors import RheoError

    etv = exact_tv_of(run, case, row.tokens or case.tokens)
    out: dict[str, Any] = {"exact_tv": None if etv is None else str(etv)}
    out.update(exact_tv_float=None if etv is None else float(etv), not_run=row.runs_here, as_expected=True)
    try:
        decode_batch(case.to_json(), run, list(case.context), row.tokens or case.tokens, seed, 4)
    except DriverError as e:  # (an absent environment is not this row's reason: it propagates)
        out["error"] = str(e).strip().splitlines()[-1]
    except RheoError:  # a missing package or environment, a refused case: not the row's reason
        raise
    except Exception as e:  # a decoder run in this interpreter: its own code's exception
        out["error"] = f"{type(e).__name__}: {e}"
    else:  # it ran after all: the row's reason is stale
        out.update(error=None, as_expected=False)
    return out


def markdown_row(r: dict[str, Any]) -> str:
    """| decoder | package | setting | exact TV | verdict | N | detectable TV | seconds | cause |"""
    etv = "—" if r["exact_tv_float"] is None else ("0" if r["exact_tv_float"] == 0 else f"{r['exact_tv_float']:.4g}")
    package = f"{r['package'] or '-'} {r['version'] or ''}".strip()  # (-: a decoder of no package)
    if "error" in r and "verdicts" not in r and "not_run" not in r:  # the row failed to run: its error line
        verdict, n, dtv, secs, cause = "error", "-", "-", "-", r["error"].replace("|", "/")
    elif "not_run" in r:
        verdict, n, dtv, secs = "not run on CPU", "-", "-", "-"
        cause = r["cause"] or r["not_run"]
    else:
        verdict = ", ".join(f"**{v}**" if v == "REJECT" else v for v in r["verdicts"])
        n = str(r["N"])
        dtv = f"{r['detectable_tv']:.4g}" if isinstance(r["detectable_tv"], float) else str(r["detectable_tv"])
        secs = ", ".join(f"{s:.3g}" for s in r["seconds"])
        cause = r["cause"] or "-"
    return f"| {r['decoder']} | {package} | {r['setting']} | {etv} | {verdict} | {n} | {dtv} | {secs} | {cause} |"


MARKDOWN_HEAD = (
    "| decoder | package | setting | exact TV | verdict (per seed) | N | detectable TV | seconds | cause |\n"
    "|---|---|---|---|---|---|---|---|---|"
)
