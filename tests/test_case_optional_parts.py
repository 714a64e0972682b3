"""A case's `scheme` and `draft` are optional (rheo_ref.models.Missing): tests that do not use them run,
code that needs them stops with one CaseError naming the part."""

from __future__ import annotations

import copy
import json
import pickle
from pathlib import Path

import pytest

from rheo_ref.errors import CaseError
from rheo_ref.exact import Exact, target_law
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.models import Case, load_case

FULL = json.loads(Path("tests/cases/hf.json").read_text())


def without(*parts: str) -> dict:
    return {k: v for k, v in FULL.items() if k not in parts}


def test_a_case_without_scheme_or_draft_has_its_target_law():
    case = Case.from_json(without("scheme", "draft"))
    assert target_law(case, 2) == target_law(load_case("tests/cases/hf.json"), 2)
    assert (
        Case.from_json(case.to_json()).to_json()
        == case.to_json()
        == without("scheme", "draft") | {"target": case.target.to_json()}
    )
    copy.deepcopy(case), pickle.loads(pickle.dumps(case))


@pytest.mark.parametrize(
    "parts, use, match",
    [
        (("scheme",), lambda c: Exact(c).token_law(2), "no 'scheme'; add a scheme object"),
        (("scheme",), lambda c: c.scheme_as(Scheme), "no 'scheme'"),
        (("scheme",), lambda c: c.with_scheme(K=2), "no 'scheme'"),
        (("draft",), lambda c: c.q_samp_model.row(c.context), "no 'draft'; add a draft table"),
    ],
)
def test_code_that_needs_the_part_says_so(parts, use, match):
    case = Case.from_json(without(*parts))
    with pytest.raises(CaseError, match=match):
        use(case)


def test_the_target_stays_required():
    with pytest.raises(CaseError, match="missing 'target'"):
        Case.from_json(without("target"))


@pytest.mark.parametrize(
    "parts, argv, msg",
    [
        (("scheme",), ["exact"], "this case has no 'scheme'"),
        (("draft",), ["gate-hf", "--decoder", "assisted"], "this case has no 'draft'"),
    ],
)
def test_cli_on_a_case_without_the_part_is_one_line(tmp_path, capsys, parts, argv, msg):
    from rheo.cli import main

    path = tmp_path / "case.json"
    path.write_text(json.dumps(without(*parts)))
    code = main([argv[0], str(path), *argv[1:]])
    out, err = capsys.readouterr()
    assert code == 2 and out == "" and err.count("\n") == 1 and msg in err, err
