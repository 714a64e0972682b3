"""`rheo sample`: the documented JSON, agreement with `rheo exact` within sampling noise, and the
same bad-input behaviour as `rheo exact` (exit 2, one line, no traceback)."""

from __future__ import annotations

import json

import pytest
from helpers import load_json, run_rheo, write_case

from rheo.cli import main
from rheo.lossless.stats import assert_law, check_law
from rheo_ref.exact import Exact
from rheo_ref.models import Case


class Result:
    def __init__(self, returncode: int, stdout: str, stderr: str) -> None:
        self.returncode, self.stdout, self.stderr = returncode, stdout, stderr


@pytest.fixture
def sample(tmp_path, capsys):
    """`rheo sample CASE ARGS...` in this process (a subprocess costs a torch import each)."""

    def run(obj, *args: str) -> Result:
        path = obj if isinstance(obj, str) and obj.endswith(".json") else write_case(tmp_path, obj)
        try:
            rc = main(["sample", path, *args])
        except SystemExit as e:  # argparse
            rc = e.code
        out, err = capsys.readouterr()
        return Result(rc, out, err)

    return run


def test_sample_prints_the_documented_json_and_matches_the_exact_law(sample):
    obj = load_json("small.json")
    res = sample(obj, "--samples", "20000", "--seed", "1", "--batch", "5000")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert set(out) == {"counts", "first_round", "rounds_per_second"}
    assert sum(out["counts"].values()) == 20000
    assert all(len(k.split(",")) == obj["tokens"] for k in out["counts"])
    lengths = out["first_round"]["emitted_length_counts"]
    assert sum(lengths.values()) == 20000 and set(lengths) <= {"1", "2", "3"}
    assert out["rounds_per_second"] > 0
    ex = Exact(Case.from_json(obj))
    law = ex.token_law()
    assert set(out["counts"]) <= {",".join(map(str, s)) for s in law}  # never a sequence of probability 0
    # chi2 at alpha = 1e-4 (false alarm); N = 20000 detects TV >= 0.06 with power 0.99 (asserted by assert_law)
    assert_law(_tuples(out["counts"]), law, alpha=1e-4, tv=0.06, label="rheo sample counts")
    rl = {(k,): v for k, v in ex.round_lengths().items()}
    assert_law({(int(k),): v for k, v in lengths.items()}, rl, alpha=1e-4, tv=0.06, label="first-round lengths")
    assert out["first_round"]["tau"] == sum(int(k) * v for k, v in lengths.items()) / 20000


def _tuples(counts: dict[str, int]) -> dict[tuple[int, ...], int]:
    return {tuple(map(int, k.split(","))): v for k, v in counts.items()}


def test_mutant_flag_selects_a_broken_variant_that_the_same_test_rejects(sample):
    obj = load_json("small.json")
    res = sample(obj, "--samples", "20000", "--seed", "1", "--mutant", "fills-first")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["mutant"] == "fills-first"
    res = check_law(_tuples(out["counts"]), Exact(Case.from_json(obj)).token_law(), alpha=1e-4, tv=0.06)
    assert res.rejected, res.summary()
    bad = sample(obj, "--samples", "5", "--seed", "1", "--mutant", "nope")
    assert bad.returncode == 2 and "invalid choice" in bad.stderr


def test_same_seed_same_output_different_seed_different(sample):
    obj = load_json("small.json")
    a, b, c = (json.loads(sample(obj, "--samples", "300", "--seed", s).stdout)["counts"] for s in ("4", "4", "5"))
    assert a == b and a != c


@pytest.mark.parametrize(
    "args,needle",
    [
        (("--samples", "0", "--seed", "1"), "--samples 0"),
        (("--samples", "5", "--seed", "1", "--batch", "0"), "--batch 0"),
        (("--samples", "5", "--seed", "1", "--device", "tpu"), "tpu"),
        (("--samples", "5", "--seed", "1", "--temperature", "-1"), "--temperature"),
    ],
)
def test_bad_flags_exit_2_with_one_line(sample, args, needle):
    res = sample(load_json("small.json"), *args)
    assert res.returncode == 2 and res.stdout == ""
    assert len(res.stderr.strip().splitlines()) == 1 and needle in res.stderr and "Traceback" not in res.stderr


def test_bad_cases_exit_2_like_exact(sample, tmp_path):
    obj = load_json("small.json")
    obj["scheme"]["m"] = 9
    for case in (obj, "{not json", {"draft": {}}):
        res = sample(case, "--samples", "5", "--seed", "1")
        assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    res = sample(str(tmp_path / "missing.json"), "--samples", "5", "--seed", "1")
    assert res.returncode == 2 and "missing.json" in res.stderr


def test_a_real_process_exits_2_without_a_traceback(tmp_path):
    obj = load_json("small.json")
    obj["scheme"]["m"] = 9
    res = run_rheo("sample", write_case(tmp_path, obj), "--samples", "5", "--seed", "1")
    assert res.returncode == 2 and res.stdout == "" and "Traceback" not in res.stderr
    assert len(res.stderr.strip().splitlines()) == 1 and "m=9" in res.stderr


def test_missing_row_exits_2(sample):
    obj = load_json("small.json")
    del obj["target"]["probs"]["2"]
    res = sample(obj, "--samples", "2000", "--seed", "1")
    assert res.returncode == 2 and "no row" in res.stderr and "Traceback" not in res.stderr


def test_help_documents_the_output(capsys):
    with pytest.raises(SystemExit) as e:
        main(["sample", "--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0
    for word in ("counts", "first_round", "rounds_per_second", "--batch", "--device", "--seed"):
        assert word in out
