"""`rheo gate`'s table flags: `--seeds` is at most MAX_SEEDS integers in ASCII digits, and `--seeds` /
`--json` without `--rows` (where nothing reads them) exit 2 with one line instead of being ignored."""

from __future__ import annotations

from pathlib import Path

import pytest

from rheo.cli.gate import MAX_SEEDS, parse_seeds
from rheo.cli.main import main
from rheo_ref.errors import CaseError

SMALL = str(Path(__file__).resolve().parents[1] / "cases" / "small.json")


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (["--seeds", "1,2"], "--seeds without --rows: it applies to the decoder's verdict table only"),
        (["--json", "out.json"], "--json without --rows: it applies"),
        (["--seeds", "3", "--json", "out.json"], "--seeds and --json without --rows: they apply"),
    ],
)
def test_table_flags_without_rows_exit_2(capsys, tmp_path, monkeypatch, flags, said):
    monkeypatch.chdir(tmp_path)
    assert main(["gate", SMALL, "--decoder", "assisted", *flags]) == 2
    err = capsys.readouterr().err
    assert said in err and "--seed S" in err and err.count("\n") == 1
    assert not (tmp_path / "out.json").exists()


@pytest.mark.parametrize(
    "text",
    ["１", "1,２", "٣", "1_0", " 1", "+1", "-1", "", ",", str(2**63), ",".join(["1"] * (MAX_SEEDS + 1))],
)
def test_seeds_outside_the_grammar_or_the_cap_are_refused(text):
    with pytest.raises(CaseError, match=rf"allowed: at most {MAX_SEEDS} comma-separated integers .* ASCII digits"):
        parse_seeds(text)


def test_seeds_within_the_rules_are_read():
    assert parse_seeds(None) == (1, 2)
    assert parse_seeds("0,7") == (0, 7) and parse_seeds(str(2**63 - 1)) == (2**63 - 1,)
    assert parse_seeds(",".join(map(str, range(MAX_SEEDS)))) == tuple(range(MAX_SEEDS))


def test_rows_with_a_full_width_seed_exit_2(capsys):
    assert main(["gate", "--decoder", "assisted", "--rows", "quick", "--seeds", "１"]) == 2
    assert "--seeds '１'; allowed" in capsys.readouterr().err
