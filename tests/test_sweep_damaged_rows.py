"""A `sweep.csv` row of the wrong length is refused saying what is wrong with it: how many fields it
has against the table's columns, and whether it stops short or runs over (it once said "18 fields, the
table has 18" of a short row)."""

from __future__ import annotations

import pytest

from rheo.sweep import COLUMN_NAMES, read_table
from rheo_ref.errors import CaseError

K = len(COLUMN_NAMES)


def table(tmp_path, fields: int):
    path = tmp_path / "sweep.csv"
    path.write_text(",".join(COLUMN_NAMES) + "\n" + ",".join(["x"] * fields) + "\n", encoding="utf-8")
    return path


@pytest.mark.parametrize("fields", [1, K - 1])
def test_a_short_row_says_how_short(tmp_path, fields):
    missing = COLUMN_NAMES[fields]
    want = rf"line 2: {fields} fields \(the row stops before column '{missing}'\), the table has {K};"
    with pytest.raises(CaseError, match=want):
        read_table(table(tmp_path, fields))


@pytest.mark.parametrize("fields", [K + 1, K + 3])
def test_a_long_row_says_how_long(tmp_path, fields):
    want = rf"line 2: {fields} fields \({fields - K} more than the columns\), the table has {K};"
    with pytest.raises(CaseError, match=want):
        read_table(table(tmp_path, fields))
