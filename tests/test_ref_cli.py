"""`rheo exact`: the JSON contract and bad-input behaviour (exit 2, one line, no traceback)."""

from __future__ import annotations

import copy
import json
from fractions import Fraction

import pytest
from helpers import load_json, run_rheo, write_case

SMALL = load_json("small.json")


def test_exact_prints_the_documented_json(tmp_path):
    res = run_rheo("exact", write_case(tmp_path, SMALL), "--method", "brute")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert set(out) == {"law", "target", "tv", "tau", "round_lengths", "acceptance", "method", "enumerated", "seconds"}
    assert out["method"] == "brute" and out["enumerated"] > 0
    assert out["tv"] == "0" and out["law"] == out["target"]
    assert sum(Fraction(v) for v in out["law"].values()) == 1
    assert all(len(k.split(",")) == 3 for k in out["law"])
    lengths = {int(k): Fraction(v) for k, v in out["round_lengths"].items()}
    assert sum(lengths.values()) == 1 and Fraction(out["tau"]) == sum(k * v for k, v in lengths.items())
    assert Fraction(out["acceptance"]) == sum(v for k, v in lengths.items() if k >= 2)
    assert all(Fraction(v) > 0 for v in out["law"].values()), "zero entries must be omitted"


def test_tokens_flag_overrides_the_case(tmp_path):
    res = run_rheo("exact", write_case(tmp_path, SMALL), "--tokens", "1")
    assert res.returncode == 0, res.stderr
    assert all(len(k.split(",")) == 1 for k in json.loads(res.stdout)["law"])


def test_help_explains_every_field():
    res = run_rheo("exact", "--help")
    assert res.returncode == 0
    for field in ("law", "target", "tv", "tau", "round_lengths", "acceptance", "method", "enumerated", "seconds"):
        assert f"\n  {field}" in res.stdout, field


def _mutate(path, value):
    case = copy.deepcopy(SMALL)
    obj = case
    for k in path[:-1]:
        obj = obj[k]
    if value is KeyError:
        del obj[path[-1]]
    else:
        obj[path[-1]] = value
    return case


BAD = [
    ("not json", "{not json", "not JSON"),
    ("row sum", _mutate(["target", "probs", "0"], ["1/6", "1/2", "1/4"]), "sums to"),
    ("negative", _mutate(["target", "probs", "0"], ["-1/6", "1/2", "2/3"]), "negative"),
    ("non-numeric", _mutate(["draft", "probs", "1"], ["a", "1/2", "1/2"]), "not a number"),
    ("float entry", _mutate(["draft", "probs", "1"], [0.5, "1/4", "1/4"]), "floats are not exact"),
    ("row length", _mutate(["draft", "probs", "1"], ["1/2", "1/2"]), "has 2 entries"),
    ("missing row", _mutate(["target", "probs", "2"], KeyError), "has no row"),
    ("vocab differs", _mutate(["draft", "vocab_size"], 4), "entries, vocab_size is 4"),
    ("context token", _mutate(["context"], [7]), "outside the vocabulary"),
    ("m > K", _mutate(["scheme", "m"], 4), "0 <= m <= K"),
    ("R < 1", _mutate(["scheme", "R"], 0), "R=0 must be >= 1"),
    ("D < 1", _mutate(["scheme", "D"], 0), "D=0 must be >= 1"),
    ("proxy", _mutate(["scheme", "proxy"], "magic"), "unknown proxy"),
    ("verify", _mutate(["scheme", "verify"], "traversal"), "unknown verification order"),
    ("K > V", _mutate(["scheme", "K"], 5), "K=5 must be <= vocab_size"),
    ("missing field", _mutate(["scheme", "W"], KeyError), "scheme is missing 'W'; required: K, m, W, D, R"),
    ("unknown field", _mutate(["temperature"], 1), "case has unknown field(s) ['temperature']"),
    ("bool as int", _mutate(["tokens"], True), "tokens=True must be an integer >= 1"),
]


@pytest.mark.parametrize("name,case,needle", BAD, ids=[b[0] for b in BAD])
def test_bad_input_exits_2_with_one_line(tmp_path, name, case, needle):
    res = run_rheo("exact", write_case(tmp_path, case))
    assert res.returncode == 2, (res.returncode, res.stdout, res.stderr)
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in res.stderr, res.stderr
    assert needle in lines[0], lines[0]
    assert res.stdout == ""


def test_vocab_sizes_that_differ_between_models(tmp_path):
    case = copy.deepcopy(SMALL)
    case["draft"] = {"vocab_size": 2, "context_length": 0, "probs": {"": ["1/2", "1/2"]}}
    res = run_rheo("exact", write_case(tmp_path, case))
    assert res.returncode == 2 and "vocabulary sizes differ" in res.stderr


def test_missing_file_exits_2(tmp_path):
    res = run_rheo("exact", str(tmp_path / "nope.json"))
    assert res.returncode == 2 and "cannot read case file" in res.stderr


def test_too_large_enumeration_refuses_up_front_and_force_overrides(tmp_path):
    case = copy.deepcopy(SMALL)
    case["scheme"] = {"K": 3, "m": 0, "W": 3, "D": 3, "R": 4}
    path = write_case(tmp_path, case)
    res = run_rheo("exact", path, "--method", "brute", "--max-trees", "100")
    assert res.returncode == 2 and "trees per round" in res.stderr and "--force" in res.stderr
    res = run_rheo("exact", path, "--method", "brute", "--max-trees", "100", "--force", "--tokens", "1")
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["enumerated"] > 100
