"""One public namespace: `rheo.__all__` and `rheo.testing.__all__` are exactly what docs/GATE.md's
"What you import" lists, and the non-raising check and the assertion agree (the deprecated spellings:
tests/test_deprecated.py)."""

from __future__ import annotations

import random
import re
from pathlib import Path

import pytest

import rheo
import rheo.testing

DOC = Path(__file__).resolve().parents[1] / "docs" / "GATE.md"


def _documented() -> set[str]:
    text = DOC.read_text(encoding="utf-8")
    section = text[text.index("## What you import") : text.index("## Every level of a tree")]
    table = "\n".join(line for line in section.splitlines() if line.startswith("| `"))
    return set(re.findall(r"`(rheo(?:\.testing)?\.[A-Za-z_]+)", table))


def test_the_documented_names_are_exactly_all():
    public = {f"rheo.{n}" for n in rheo.__all__} | {f"rheo.testing.{n}" for n in rheo.testing.__all__}
    assert _documented() == public


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
