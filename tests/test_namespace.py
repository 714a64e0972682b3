"""One public namespace: `rheo.__all__` and `rheo.testing.__all__` are exactly what docs/GATE_REFERENCE.md's
"What you import" lists, and the non-raising check and the assertion agree (the deprecated spellings:
tests/test_deprecated.py)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

import rheo
import rheo.testing

DOC = Path(__file__).resolve().parents[1] / "docs" / "GATE_REFERENCE.md"


def _documented() -> set[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## What you import") : text.index("## What the API refuses")]
    table = "\n".join(line for line in section.splitlines() if line.startswith("| `"))
    return set(re.findall(r"`(rheo(?:\.testing)?\.[A-Za-z_]+)", table))


# Error classes exported before docs/GATE_REFERENCE.md's table names them (its errors row is its owner's to extend):
# each must still be missing from the table, so this set empties as the table gains them.
NOT_YET_IN_THE_TABLE = {
    "rheo.CaseError",
    "rheo.TooLargeError",
    "rheo.OutputError",
    "rheo.MissingDependencyError",
}


def test_the_documented_names_are_exactly_all():
    public = {f"rheo.{n}" for n in rheo.__all__} | {f"rheo.testing.{n}" for n in rheo.testing.__all__}
    documented = _documented()
    assert not documented & NOT_YET_IN_THE_TABLE, (
        "docs/GATE_REFERENCE.md names them now: drop them from NOT_YET_IN_THE_TABLE"
    )
    assert documented | NOT_YET_IN_THE_TABLE == public


def test_every_public_error_is_a_rheo_error_and_prints_as_rheo():
    """Every RheoError subclass a user meets through the public API is exported, and tracebacks name it
    `rheo.CaseError` (where it is imported from), not the private module that defines it; it pickles back."""
    import pickle
    import traceback

    import rheo_ref.errors

    errors = {n for n in rheo.__all__ if isinstance(getattr(rheo, n), type) and issubclass(getattr(rheo, n), Exception)}
    assert errors == {
        "RheoError", "CaseError", "TooLargeError", "OutputError", "MissingDependencyError", "StatsError",
        "SamplerOutputError", "LosslessError", "TieError",
    }  # fmt: skip
    for name in errors:
        cls = getattr(rheo, name)
        assert issubclass(cls, rheo.RheoError) and cls is getattr(rheo_ref.errors, name)
        assert cls.__module__ == "rheo"
    err = rheo.CaseError("row 0 sums to 2/3; allowed: rows summing to exactly 1")
    assert traceback.format_exception_only(err) == [f"rheo.CaseError: {err}\n"]
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is rheo.CaseError and str(again) == str(err)
    with pytest.raises(rheo.CaseError, match="sums to"):
        rheo.Case.from_json({"target": {"vocab_size": 2, "context_length": 0, "probs": {"": ["1/3", "1/3"]}}})


def test_every_name_in_all_resolves():
    for name in rheo.__all__:
        assert getattr(rheo, name) is not None
    assert rheo.testing.table_lms is not None and rheo.testing.TableDraftLayer is not None


def test_lossless_error_is_a_verdict_with_top_cells():
    case = rheo.Case.from_json(
        {"target": {"vocab_size": 2, "context_length": 0, "probs": {"": ["1/2", "1/2"]}}, "tokens": 1}
    )

    def always_zero(c, s, n):
        return [(0,)] * n

    res = rheo.check_lossless(always_zero, case, alpha=1e-3, tv=0.2, seed=0)
    assert res.rejected
    with pytest.raises(rheo.LosslessError) as e:
        rheo.assert_lossless(always_zero, case, alpha=1e-3, tv=0.2, seed=0)
    assert e.value.exit_status == 1 and e.value.result == res and e.value.top_cells == res.top_cells
    assert isinstance(res.cells, int)


def test_check_lossless_passes_a_lossless_sampler_with_the_same_record_as_assert():
    case = rheo.Case.from_json(
        {"target": {"vocab_size": 3, "context_length": 0, "probs": {"": ["1/2", "1/3", "1/6"]}}, "tokens": 1}
    )

    def exact(c, s, n):
        rng = random.Random(s)
        return [(rng.choices([0, 1, 2], weights=[3, 2, 1])[0],) for _ in range(n)]

    res = rheo.check_lossless(exact, case, alpha=1e-3, tv=0.2, seed=1)
    assert res == rheo.assert_lossless(exact, case, alpha=1e-3, tv=0.2, seed=1)
    assert (
        res.n
        == rheo.plan_samples(case, alpha=1e-3, tv=0.2)
        == rheo.plan_samples(rheo.target_law(case, 1), alpha=1e-3, tv=0.2)
    )
    assert rheo.detectable_tv(rheo.target_law(case, 1), res.n, alpha=1e-3) == res.detectable_tv


def test_rates_are_keywords_only():
    case = rheo.Case.from_json({"target": {"vocab_size": 2, "context_length": 0, "probs": {"": ["1/2", "1/2"]}}})
    with pytest.raises(TypeError):
        rheo.plan_samples(case, 1e-3, 0.2)  # type: ignore[misc]
    with pytest.raises(rheo.StatsError, match="Case or an exact law"):
        rheo.plan_samples("case.json", alpha=1e-3, tv=0.2)  # type: ignore[arg-type]
