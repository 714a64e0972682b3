"""A table row's key is written one way (docs/ALGORITHM.md §10): the reader refuses spaces, signs
and leading zeros rather than guessing, and the document says so."""

from __future__ import annotations

from fractions import Fraction
from pathlib import Path

import pytest

from rheo_ref.errors import CaseError
from rheo_ref.models import TableModel

ALGORITHM = Path(__file__).resolve().parents[2] / "docs" / "ALGORITHM.md"


def table(key: str) -> dict:
    return {"vocab_size": 3, "context_length": 2, "probs": {key: ["1/2", "1/4", "1/4"]}}


@pytest.mark.parametrize("key", [" 1", "1 ", "0, 2", "01", "+1", "0,,2"])
def test_a_key_spelled_another_way_is_refused(key):
    with pytest.raises(CaseError, match=r"must be comma-joined token ids .*no sign, spaces or leading zeros"):
        TableModel.from_json(table(key), "target")


def test_the_canonical_keys_are_read():
    t = TableModel.from_json(table("0,2"), "target")
    assert t.row([1, 0, 2]) == (Fraction(1, 2), Fraction(1, 4), Fraction(1, 4))


def test_the_document_states_the_reader_s_rule():
    section = ALGORITHM.read_text(encoding="utf-8").split("## 10.")[1].split("\n## ")[0]
    assert "ignored" not in section
    assert 'Any other spelling (`" 1"`, `"0, 2"`, `"01"`) is refused' in section
