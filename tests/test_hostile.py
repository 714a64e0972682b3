"""Hostile inputs found outside the project's own fuzzing harness, one regression test
per class, each refused up front with exit 2 and one line (or run correctly):

1. the one number grammar (rheo_ref.numbers): ASCII digits, bounded length, in every user number;
2. `rheo sweep`'s up-front refusals (cells, law sizes, seeds, temperatures, grid and table files);
3. `rheo gate-hf` and `rheo mutants` sample counts and case sizes;
4. deep structures (a grid nested 3,000 deep);
5. outputs: devices and symbolic links written through, FIFOs refused, the probe as long as the
   temporary name, an empty path, an output that is the input;
6. the environment: a non-UTF-8 seed salt, an ASCII-only terminal, an argument list of 10^5 options;
8. every cell failing, --retry-failed, duplicate names.

Class 7 (Ctrl-C with workers) and the Dask faults are in tests/test_sweep_faults.py.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from fractions import Fraction
from pathlib import Path

import pytest
from helpers import load_json, run_main

from rheo_ref import numbers
from rheo_ref.atomic import check_writable, write_text_atomic
from rheo_ref.errors import CaseError, OutputError
from rheo_ref.generate import temper_row

ROOT = Path(__file__).resolve().parents[1]
SMALL = load_json("small.json")
GRID = {
    "tables": [{"generator": "random", "vocab_size": 3, "seeds": [0]}],
    "schemes": [{"K": 2, "m": 1, "W": 1, "D": 2, "R": 2}],
    "temperatures": ["1"],
    "context": [0],
    "tokens": 1,
}


def refused(argv: list[str], needle: str = "") -> str:
    """`rheo ARGV` exits 2 with one line (containing `needle`), and returns that line."""
    rc, out, err = run_main(argv)
    lines = err.strip().splitlines()
    assert rc == 2 and len(lines) == 1 and "internal error" not in err, (argv[:4], rc, err[-500:])
    assert needle in lines[0], lines[0]
    return lines[0]


def write(tmp_path: Path, obj, name: str) -> str:
    path = tmp_path / name
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj))
    return str(path)


# --- 1. one number grammar ------------------------------------------------------------------------

ACCEPTED = ["0", "7", "-1", "1/3", "-2/4", "0.25", "2e-3", "1E5", "1.5e+2", "9" * 40]
REFUSED = [
    "\u0661/\u0664",  # Arabic-Indic digits
    "\uff11",  # a full-width 1
    "1_0",
    "1 0",
    " 1",
    "1\u00a0",
    "+1/4",
    "1/0",
    "1e\u0661\u0660",
    "1e1001",
    "1e999999999",
    "9" * 41,
    "1/" + "9" * 4000,
    "nan",
    "inf",
    "0x10",
    ".5",
    "1.",
    "",
]


@pytest.mark.parametrize("text", ACCEPTED)
def test_the_grammar_reads_plain_numbers_exactly(text):
    assert numbers.rational(text, "x") == Fraction(text)


@pytest.mark.parametrize("text", REFUSED, ids=lambda t: ascii(t)[:20])
def test_the_grammar_refuses_everything_else_in_one_line(text):
    with pytest.raises(CaseError) as e:
        numbers.rational(text, "x")
    assert "\n" not in str(e.value) and "allowed" in str(e.value)


@pytest.mark.parametrize("key", ["01", "+1", "\u00a01", " 1", "1 ,2", "\u0661", "1,", "-1"])
def test_row_keys_are_read_strictly(tmp_path, key):
    case = {**SMALL, "draft": {**SMALL["draft"], "probs": {key: SMALL["draft"]["probs"]["0"]}}}
    refused(["exact", write(tmp_path, case, "case.json")], "key")


@pytest.mark.parametrize(
    "where",
    ["row", "proxy", "theta", "ensemble", "calibration"],
)
def test_a_unicode_exponent_is_refused_wherever_a_case_has_a_number(tmp_path, where):
    bad = "1e-\u0661\u0660\u0660\u0660\u0660\u0660\u0660\u0660"
    case = json.loads(json.dumps(SMALL))
    if where == "row":
        first = next(iter(case["target"]["probs"]))
        case["target"]["probs"][first][0] = bad
    elif where == "proxy":
        case["scheme"]["proxy"] = f"const:{bad}"
    elif where == "theta":
        case["scheme"] = {"family": "treespark", "N": 3, "k": 2, "D": 2, "theta": bad, "verify": "traversal"}
    elif where == "ensemble":
        case["scheme"] = {"family": "static", "branching": [2], "sampling": "wor", "verify": "specinfer",
                          "ensemble_weight": bad}  # fmt: skip
    else:
        case["scheme"] = {"family": "treespark", "N": 3, "k": 2, "D": 2, "theta": "1/10",
                          "calibration": f"sigmoid:{bad},0", "verify": "traversal"}  # fmt: skip
    refused(["exact", write(tmp_path, case, "case.json")])


@pytest.mark.parametrize(
    "argv",
    [
        ["--tokens", "1_0"],
        ["--tokens", "\u0661"],
        ["--tokens", "9" * 310],
        ["--max-trees", " 5"],
    ],
    ids=ascii,
)
def test_flags_read_the_same_grammar(argv):
    refused(["exact", str(ROOT / "tests" / "cases" / "small.json"), *argv], "argument")


def test_json_integers_past_the_float_range_are_refused(tmp_path):
    text = json.dumps(SMALL).replace('"tokens": 3', '"tokens": ' + "9" * 310)
    refused(["exact", write(tmp_path, text, "case.json")], "JSON integer")


# --- 2. sweep: the same up-front refusals as exact --------------------------------------------------


@pytest.mark.parametrize(
    "change, needle",
    [
        ({"temperatures": ["1e999999999"]}, "exponent"),
        ({"temperatures": ["1/" + "9" * 4000]}, "characters"),
        ({"temperatures": ["1/1000"]}, "temperature"),
        ({"tokens": 20}, "law's size"),
        ({"tables": [{"generator": "random", "vocab_size": 3, "seeds": [2**63]}]}, "seeds"),
        (
            {
                "tables": [{"generator": "random", "vocab_size": 3, "seeds": list(range(1001))}],
                "temperatures": [str(Fraction(1, k)) for k in range(1, 101)],
            },
            "grid cells",
        ),
    ],
    ids=["exponent", "long", "tiny T", "tokens", "seed", "cells"],
)
def test_a_sweep_refuses_up_front_and_writes_nothing(tmp_path, change, needle):
    out = tmp_path / "out"
    refused(["sweep", write(tmp_path, {**GRID, **change}, "grid.json"), "--out", str(out), "--workers", "1"], needle)
    assert not out.exists()


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["--scheduler", "tls://127.0.0.1:1"], "tcp://HOST:PORT"),
        (["--scheduler", "tcp://127.0.0.1:99999"], "port"),
        (["--workers", "1000000"], "--workers"),
    ],
)
def test_a_sweep_refuses_bad_engines_before_reading_the_grid(tmp_path, argv, needle):
    refused(["sweep", str(tmp_path / "missing.json"), "--out", str(tmp_path / "out"), *argv], needle)


def test_grid_files_must_be_small_regular_utf8_files(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    (tmp_path / "latin1.json").write_bytes(b'{"tables": "\xe9"}')
    for path, needle in ((fifo, "not a regular file"), ("/dev/zero", "not a regular file"),
                         (tmp_path / "latin1.json", "UTF-8")):  # fmt: skip
        refused(["sweep", str(path), "--out", str(tmp_path / "out"), "--workers", "1"], needle)


def test_a_small_temperature_whose_powers_underflow_is_tempered_not_divided_by_zero():
    row = (Fraction(1, 3),) * 3
    assert temper_row(row, Fraction(3, 200)) == row  # (1/3)^66.7 rounds to 0 on denominators <= 10^4


@pytest.mark.parametrize(
    "content",
    [
        b"\xff\xfe garbage",
        b"a,b,c\n1,2,3\n",
        None,  # the right header, a damaged row
    ],
    ids=["bytes", "foreign", "damaged"],
)
def test_a_damaged_table_on_resume_is_refused_in_one_line(tmp_path, content):
    from rheo_ref.grid import COLUMN_NAMES

    out = tmp_path / "out"
    out.mkdir()
    if content is None:
        content = (",".join(COLUMN_NAMES) + "\n" + "zz,1\n").encode()
    (out / "sweep.csv").write_bytes(content)
    refused(["sweep", write(tmp_path, GRID, "grid.json"), "--out", str(out), "--workers", "1"], "sweep")
    assert (out / "sweep.csv").read_bytes() == content  # left as it was


# --- 3. gate-hf and mutants: what the test would need, refused up front -------------------------------


@pytest.fixture
def no_sampling(monkeypatch):
    pytest.importorskip("transformers")
    import rheo.decoders.gate

    def reached(*args, **kwargs):
        raise AssertionError("reached the sampling")

    monkeypatch.setattr(rheo.decoders.gate, "decode_batch", reached)  # the library's own checks still run


@pytest.mark.parametrize(
    "case, argv, needle",
    [
        (SMALL, ["--tv", "1e-6"], "samples the test needs"),
        (SMALL, ["--gen", "temperature=1e-300"], "temperature"),
        (SMALL, ["--gen", "temperature=" + "9" * 5000], "--gen"),
        ({**SMALL, "tokens": 1_000_000}, [], "tokens"),
        ({**SMALL, "context": [0] * 20_000}, [], "context"),
        (load_json("table1.json"), ["--tv", "0.5"], "context of at least 1 token"),
    ],
    ids=["tv", "temperature", "digits", "tokens", "context", "empty context"],
)
def test_gate_hf_refuses_what_it_cannot_pay_for(tmp_path, no_sampling, case, argv, needle):
    refused(["gate-hf", write(tmp_path, case, "case.json"), "--decoder", "assisted", *argv], needle)


def test_mutants_refuses_a_tv_no_gate_test_can_pay_for():
    refused(["mutants", "--tv", "1e-4", "--seeds", "0"], "samples per gate test")


# --- 4. deep structures ----------------------------------------------------------------------------


def test_a_grid_nested_3000_deep_is_refused_with_its_depth(tmp_path):
    refused(["sweep", write(tmp_path, "[" * 3000 + "]" * 3000, "grid.json"), "--out", str(tmp_path / "o")], "3,000")


@pytest.mark.parametrize(
    "scheme",
    [
        {"family": "tsubame", "K": 1, "W": 1, "D": 400, "R": 256, "sampling": "wor", "verify": "traversal"},
        {"family": "static", "branching": [1] * 200, "sampling": "wor", "verify": "traversal"},
        {"family": "treespark", "N": 256, "k": 1, "D": 256, "theta": "0", "verify": "traversal"},
    ],
    ids=["tsubame", "static", "treespark"],
)
def test_trees_deeper_than_the_recursion_allows_are_refused_up_front(tmp_path, scheme):
    refused(["exact", write(tmp_path, {**SMALL, "tokens": 1, "scheme": scheme}, "case.json"), "--force"], "levels")


# --- 5. outputs ----------------------------------------------------------------------------------


def test_a_device_is_written_through_and_a_symlink_keeps_pointing(tmp_path):
    write_text_atomic(os.devnull, "x")
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)  # not replaced by a regular file
    target = tmp_path / "real.json"
    target.write_text("old")
    link = tmp_path / "link.json"
    link.symlink_to(target)
    write_text_atomic(link, "new")
    assert link.is_symlink() and target.read_text() == "new"


def test_a_fifo_output_is_refused_up_front(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(OutputError, match="FIFO"):
        check_writable(fifo)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_the_write_probe_is_as_long_as_the_temporary_name(tmp_path):
    name = "x" * 245  # the name fits (<= 255 bytes); `.NAME.<8 hex>.tmp` does not
    with pytest.raises(OutputError, match="too long"):
        check_writable(tmp_path / name)


def test_an_empty_output_path_is_refused(tmp_path):
    refused(["audit", "--no-stats", "--json", ""], "empty path")
    refused(["compare", str(ROOT / "tests" / "cases" / "small.json"), "--plot", ""])


def test_compare_does_not_overwrite_its_input(tmp_path):
    case = tmp_path / "case.png"  # a case file whose name has a plot suffix
    case.write_text(json.dumps(SMALL))
    refused(["compare", str(case), "--plot", str(case)], "is the input")
    assert json.loads(case.read_text()) == SMALL


# --- 6. the environment ---------------------------------------------------------------------------


def test_a_seed_salt_of_non_utf8_bytes_is_a_salt(monkeypatch):
    from rheo.lossless.stats import seed_for

    assert seed_for("t", salt="\udcff") != seed_for("t", salt="")  # surrogate-escaped bytes, as os.environ has them


def test_an_ascii_only_terminal_gets_escapes_not_an_internal_error(tmp_path):
    env = dict(os.environ, PYTHONIOENCODING="ascii", PYTHONPATH=str(ROOT))
    missing = str(tmp_path / "\u03b1.json")
    r = subprocess.run([sys.executable, "-m", "rheo", "exact", missing], capture_output=True, text=True, env=env)
    assert r.returncode == 2 and "\\u03b1" in r.stderr and len(r.stderr.strip().splitlines()) == 1, r.stderr


def test_a_hundred_thousand_options_are_refused_before_parsing():
    refused(["exact", "x", *(["--force"] * 100_000)], "arguments")


# --- 8. quieter edges ------------------------------------------------------------------------------


def test_a_sweep_whose_every_cell_fails_exits_1_and_retry_failed_runs_them_again(tmp_path):
    grid = {**GRID, "method": "brute", "max_trees": 1}  # every enumeration refused: an error row
    path, out = write(tmp_path, grid, "grid.json"), tmp_path / "out"
    rc, stdout, err = run_main(["sweep", path, "--out", str(out), "--workers", "1", "--no-progress"])
    assert rc == 1 and len(err.strip().splitlines()) == 1 and "every cell failed" in err, err
    assert not (out / "sweep.png").exists() and json.loads(stdout)["errors"] == 1
    grid["max_trees"] = None
    write(tmp_path, grid, "grid.json")
    rc, stdout, err = run_main(["sweep", path, "--out", str(out), "--workers", "1", "--no-progress"])
    assert json.loads(stdout)["computed"] == 0  # a failed row is kept by default ...
    rc, stdout, err = run_main(["sweep", path, "--out", str(out), "--workers", "1", "--no-progress", "--retry-failed"])
    assert rc == 0 and json.loads(stdout)["computed"] == 1 and json.loads(stdout)["errors"] == 0, err


def test_duplicate_names_run_once():
    from rheo.cli.lm import methods

    assert methods("--methods", "ar,ar, ar") == ["ar"]
