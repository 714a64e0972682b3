"""Small shared helpers for the tests (no fixtures with hidden state)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rheo_ref.generate import greedy_case
from rheo_ref.models import Case, TableModel

CASES = Path(__file__).parent / "cases"
GATE_DOC = Path(__file__).resolve().parents[1] / "docs" / "GATE.md"


def doc_example(marker: str) -> str:
    """The python example of docs/GATE.md that mentions `marker` (there is exactly one)."""
    blocks = re.findall(r"```python\n(.*?)```", GATE_DOC.read_text(encoding="utf-8"), re.S)
    found = [b for b in blocks if marker in b]
    assert len(found) == 1, f"docs/GATE.md must hold exactly one python example using {marker}"
    return found[0]


def dev_tool(name: str) -> str:
    """The dev extra's command `name` beside this Python (ruff, mypy, lint-imports); a test without it is
    skipped with the install line, or fails under RHEO_ALL_EXTRAS=1 (`make test`, which installs it)."""
    import pytest

    path = Path(sys.executable).parent / name
    if not path.exists():
        reason = f"needs {name} ({path} is missing): pip install -c constraints.txt -e '.[dev]'"
        if os.environ.get("RHEO_ALL_EXTRAS"):
            pytest.fail(reason)
        pytest.skip(reason)
    return str(path)


def run_rheo(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    """Run the `rheo` CLI in a subprocess exactly as a user would (python -m rheo)."""
    env = dict(os.environ, PYTHONWARNINGS="error::UserWarning")
    return subprocess.run(
        [sys.executable, "-m", "rheo", *args], capture_output=True, text=True, timeout=timeout, env=env
    )


def write_case(tmp_path: Path, obj, name: str = "case.json") -> str:
    path = tmp_path / name
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return str(path)


def load_json(name: str) -> dict:
    return json.loads((CASES / name).read_text())


def run_main(argv: list[str]) -> tuple[int, str, str]:
    """`rheo ARGV` in this process, its output captured here (no capsys): (exit status, stdout, stderr);
    an argparse exit reads as its status (a non-integer one as 1)."""
    import io
    from contextlib import redirect_stderr, redirect_stdout

    from rheo.cli import main

    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as e:
            rc = e.code if isinstance(e.code, int) else 1
    return rc, out.getvalue(), err.getvalue()


def run_cli(capsys, *argv: str) -> tuple[int, str, str]:
    """`rheo ARGV` in this process: (exit status, stdout, stderr), captured by pytest's `capsys`."""
    from rheo.cli import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


# --- the coupling harness of the fast-path tests (fast path and reference replay fed the same coins) --


class Stream:
    """Per round, one block [trials, C] of float64 coins, C the scheme's coins a round (its family's
    layout, `rheo_fast.family.layout_for`); a share `zeros` of them is exactly 0 (the boundary cases)."""

    def __init__(self, scheme: Any, seed: int, zeros: float, trials: int = 1) -> None:
        import torch

        from rheo_fast.family import layout_for

        self.n = layout_for(scheme).n_coins
        self.gen = torch.Generator().manual_seed(seed)
        self.zeros, self.trials, self.blocks = zeros, trials, []

    def __call__(self, i: int) -> Any:
        import torch

        while len(self.blocks) <= i:
            c = torch.rand((self.trials, self.n), generator=self.gen, dtype=torch.float64)  # [B, C]
            zero = torch.rand((self.trials, self.n), generator=self.gen, dtype=torch.float64) < self.zeros  # [B, C]
            self.blocks.append(torch.where(zero, 0.0, c))  # [B, C]
        return self.blocks[i]

    def trial(self, b: int) -> Callable[[int], list[float]]:
        return lambda i: self(i)[b].tolist()


def squared(t: TableModel) -> TableModel:
    """The rows at temperature 1/2, exactly: each row squared and renormalised."""
    rows = {}
    for k, row in t.probs.items():
        z = sum(x * x for x in row)
        rows[k] = tuple(x * x / z for x in row)
    return TableModel(t.vocab_size, t.context_length, rows, t.name)


def exact_case(case: Case, T: float) -> Case:
    """The tables the fast path samples from at temperature T (1, 1/2 or 0), exactly (q_rank stays)."""
    if T == 0:
        return greedy_case(case)
    if T == 0.5:
        return Case(
            case.draft, squared(case.target), case.scheme, case.context, case.tokens, squared(case.q_samp_model)
        )
    return case


# --- served decoders: their own code in their own environment (rheo.decoders.served) ----------------

SERVED_CASE = CASES / "served.json"


def needs_env(env: str) -> Callable[[Any], Any]:
    """Marks a test `served` and skips it, with the make command, where `.venv-<env>` is not built."""
    import pytest

    from rheo.decoders.served import env_missing_reason

    reason = env_missing_reason(env)

    def mark(test: Any) -> Any:
        return pytest.mark.served(pytest.mark.skipif(reason is not None, reason=str(reason))(test))

    return mark


def env_marks(env: str) -> list[Any]:
    """`needs_env`'s marks as a list, for a `pytest.param`: `served`, and skipped with the make command where
    `.venv-<env>` is not built."""
    import pytest

    from rheo.decoders.served import env_missing_reason

    reason = env_missing_reason(env)
    return [pytest.mark.served, pytest.mark.skipif(reason is not None, reason=str(reason))]


def gate_decoder(name: str, gen: dict, seed: int, *, tv: float, tokens: int = 3, case: Path = SERVED_CASE) -> dict:
    """`rheo gate CASE --decoder NAME --gen ...` at α = 1e-3, power 0.99: the verdict record."""
    from rheo.decoders import DecoderRun
    from rheo.decoders.gate import gate_hf
    from rheo_ref.models import load_case

    run = DecoderRun.parse(name, gen)
    return gate_hf(load_case(str(case)), run, alpha=1e-3, tv=tv, beta=0.01, seed=seed, tokens=tokens)


def row_gen(name: str, setting: str) -> dict:
    """The --gen settings of a row of the decoder's verdict table."""
    from rheo.decoders import decoders

    return dict(decoders()[name].table.row(setting).gen)


def decode_fails(name: str, gen: dict, *, case: Path = SERVED_CASE) -> str:
    """The error a setting that cannot run here raises from the decoder's own code (2 samples, 2 tokens)."""
    from rheo.decoders import DecoderRun
    from rheo.decoders.gate import decode_batch
    from rheo.decoders.served import DriverError
    from rheo_ref.models import load_case

    c = load_case(str(case))
    try:
        decode_batch(c.to_json(), DecoderRun.parse(name, gen), list(c.context), 2, 0, 2)
    except DriverError as e:
        return str(e)
    raise AssertionError(f"{name} with {gen} ran: the row's reason it cannot run here is stale")


TABLE_ALPHA = 1e-3  # family-wise false-alarm probability of one decoder's slow verdict table (all rows, both seeds)


def verdict_row(name: str, setting: str, nodeid: str, *, error: str = "") -> dict:
    """One row of the decoder's verdict table on two seeds derived from the test id: a row whose exact TV
    is 0 passes on both, one above δ (or a negative control) is rejected on both, and a row that cannot
    run here fails with `error` in its message.

    α per verdict is Bonferroni over the table: TABLE_ALPHA / (2 seeds × rows), so the whole slow table of
    a decoder raises a false alarm with probability ≤ 1e-3 (each verdict at α = 1e-3 would make a table of
    5 rows a 1 % coin flip: a lossless row rejected at p = 0.00095 was one). N is planned at that α, so
    power stays 0.99 at the row's δ."""
    from rheo.decoders import decoders
    from rheo.decoders.rows import run_row
    from rheo.lossless.stats import seed_for

    dec = decoders()[name]
    row = dec.table.row(setting)
    seeds = (seed_for(nodeid), seed_for(nodeid, "second"))
    alpha = TABLE_ALPHA / (len(seeds) * len(dec.table.rows))
    r = run_row(dec, row, dec.table, seeds=seeds, alpha=alpha)
    if row.runs_here:
        assert r["error"] is not None and error in r["error"], r
    else:
        assert r["expected"] is not None and r["as_expected"], r
    return r
