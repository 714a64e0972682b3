"""Each rate (α, β, δ) is checked in one place, `rheo.lossless.validate.rate`, and once per public call.

Two halves, each able to fail on its own:
- the source: no other module range-checks a rate (an `if` on alpha / beta / tv / delta against 0 or
  1 that raises), and no function calls the rate validators twice;
- the calls: every public entry that takes rates (the gate, the law test, the planners, the CLI's
  one gate) runs `validate.rate` exactly once per rate, however many laws, windows or looks it tests.
"""

from __future__ import annotations

import ast
import random
from collections import Counter
from pathlib import Path

import pytest

import rheo
from rheo.lossless import validate
from rheo.lossless.stats import law_sampler
from rheo_ref.errors import LosslessError, StatsError
from rheo_ref.exact import target_law
from rheo_ref.models import Case

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("rheo", "rheo_fast", "rheo_ref")
THE_CHECK = Path("rheo/lossless/validate.py")
RATES = {"alpha", "beta", "tv", "delta"}
VALIDATORS = {"rate", "rates", "gate_rates"}  # rheo.lossless.validate's: each check of a rate goes through `rate`
OTHER_ALPHAS = {  # an `alpha` that is not a test's false-alarm rate, with what it is
    Path("rheo_fast/lm/ceiling.py"): "the oracle's mixing weight between two drafts",
}


def _sources() -> list[tuple[Path, ast.Module]]:
    out = []
    for pkg in PACKAGES:
        for f in sorted((ROOT / pkg).rglob("*.py")):
            rel = f.relative_to(ROOT)
            out.append((rel, ast.parse(f.read_text(encoding="utf-8"), str(rel))))
    return out


SOURCES = _sources()


def _names(node: ast.AST) -> set[str]:
    """Every variable or attribute name read in `node` (`alpha`, `self.alpha`, `args.tv`)."""
    out = set()
    for n in ast.walk(node):
        if isinstance(n, ast.Name):
            out.add(n.id)
        elif isinstance(n, ast.Attribute):
            out.add(n.attr)
    return out


def _range_checks(tree: ast.Module) -> list[int]:
    """Lines of an `if` that compares a rate's name with 0 or 1 and raises: a range check of a rate."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.If) or not any(isinstance(n, ast.Raise) for b in node.body for n in ast.walk(b)):
            continue
        for cmp in (n for n in ast.walk(node.test) if isinstance(n, ast.Compare)):
            sides = [cmp.left, *cmp.comparators]
            bounds = any(isinstance(s, ast.Constant) and s.value in (0, 1) and s.value is not True for s in sides)
            if bounds and _names(cmp) & RATES:
                lines.append(node.lineno)
    return lines


def _validator_calls(fn: ast.AST) -> list[str]:
    """The calls of `rheo.lossless.validate`'s rate checks in the body of `fn` (not in nested functions)."""
    out = []
    todo = list(ast.iter_child_nodes(fn))
    while todo:
        n = todo.pop()
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in VALIDATORS:
            if isinstance(n.func.value, ast.Name) and n.func.value.id == "validate":
                out.append(n.func.attr)
        todo.extend(ast.iter_child_nodes(n))
    return out


def test_the_scan_sees_a_range_check_and_a_double_call():
    """The two source rules catch what they are written for (else the tests below would pass vacuously)."""
    planted = ast.parse(
        "def f(alpha, tv):\n"
        "    if not 0 < alpha < 1:\n"
        "        raise ValueError(alpha)\n"
        "    a, b = validate.rates(alpha, 0.01)\n"
        "    return validate.rate('tv', tv)\n"
    )
    assert _range_checks(planted) == [2]
    assert sorted(_validator_calls(planted.body[0])) == ["rate", "rates"]
    assert len(SOURCES) > 100 and any(rel == THE_CHECK for rel, _ in SOURCES)


def test_no_module_but_validate_range_checks_a_rate():
    found = {
        f"{rel}:{line}" for rel, tree in SOURCES if rel != THE_CHECK and rel not in OTHER_ALPHAS
        for line in _range_checks(tree)
    }  # fmt: skip
    assert not found, f"a rate is range-checked outside {THE_CHECK} (call validate.gate_rates once instead): {found}"


def test_only_validate_words_the_refusal_of_a_rate():
    """A second checker would word its own refusal: the rates' wording lives in validate.py alone."""
    words = ("strictly between 0 and 1", "alpha < 1 - beta")
    found = [
        str(rel) for pkg in PACKAGES for f in sorted((ROOT / pkg).rglob("*.py"))
        if (rel := f.relative_to(ROOT)) != THE_CHECK and any(w in f.read_text(encoding="utf-8") for w in words)
    ]  # fmt: skip
    assert not found, found
    assert all(w in (ROOT / THE_CHECK).read_text(encoding="utf-8") for w in words)


@pytest.mark.parametrize(
    "refusal", ["give one (a horizon test reads H tokens)", "needs a horizon (the first round", "must be True or False"]
)
def test_which_options_go_together_is_written_once(refusal):
    """tokens or horizon, rounds with a horizon, the switches: one check (rheo.lossless), which the CLI and the
    planner call rather than repeat."""
    where = [
        str(f.relative_to(ROOT)) for pkg in PACKAGES for f in sorted((ROOT / pkg).rglob("*.py"))
        if refusal in f.read_text(encoding="utf-8")
    ]  # fmt: skip
    assert len(where) == 1, where


def test_no_function_calls_the_rate_checks_twice():
    twice = {}
    for rel, tree in SOURCES:
        if rel == THE_CHECK:
            continue
        for fn in ast.walk(tree):
            if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                calls = _validator_calls(fn)
                if len(calls) > 1 and calls != ["rate"] * len(calls):  # a loop over distinct flags is one call
                    twice[f"{rel}:{fn.lineno} {fn.name}"] = calls
    assert not twice, f"rates checked more than once in one function: {twice}"


# --- the calls --------------------------------------------------------------------------------

CASE = Case.from_json({"target": {"vocab_size": 3, "context_length": 0, "probs": {"": ["1/2", "1/4", "1/4"]}}})
TWO = Case.from_json({**CASE.to_json(), "tokens": 2})
LAW = target_law(TWO, 2)
exact = law_sampler(lambda case, n: target_law(case, n))


def _draws(n: int, seed: int = 1) -> list[tuple[int, ...]]:
    r = random.Random(seed)
    return [tuple(r.choices(range(3), [2, 1, 1], k=2)) for _ in range(n)]


@pytest.fixture
def checks(monkeypatch):
    """A Counter of the rates `validate.rate` is called on (rates and gate_rates go through it)."""
    seen: Counter = Counter()
    real = validate.rate

    def counted(name, value, **kw):
        seen[name.lstrip("-")] += 1
        return real(name, value, **kw)

    monkeypatch.setattr(validate, "rate", counted)
    return seen


ONCE = {"alpha": 1, "beta": 1, "tv": 1}
CALLS = {  # each public entry, at level a
    "check_lossless": lambda a: rheo.check_lossless(exact, TWO, alpha=a, tv=0.3, seed=1),
    "check_lossless sequential": lambda a: rheo.check_lossless(exact, TWO, alpha=a, tv=0.3, seed=1, sequential=True),
    "check_lossless horizon": lambda a: rheo.check_lossless(exact, CASE, alpha=a, tv=0.3, seed=1, horizon=3),
    "assert_lossless": lambda a: rheo.assert_lossless(exact, TWO, alpha=a, tv=0.3, seed=1),
    "check_first_tokens": lambda a: rheo.lossless.stats.check_first_tokens(exact, TWO, alpha=a, tv=0.3, seed=1),
    "check_law": lambda a: rheo.check_law(_draws(400), LAW, alpha=a, tv=0.3, seed=1),
    "assert_law": lambda a: rheo.assert_law(_draws(400), LAW, alpha=a, tv=0.3),
    "samples_for": lambda a: rheo.lossless.stats.samples_for(LAW, 0.3, a, 0.01),
    "min_num_samples": lambda a: rheo.lossless.stats.min_num_samples(0.3, a, 0.01, 4),
    "plan_samples case": lambda a: rheo.plan_samples(TWO, alpha=a, tv=0.3),
    "plan_samples horizon": lambda a: rheo.plan_samples(CASE, alpha=a, tv=0.3, horizon=3),
    "plan_samples law": lambda a: rheo.plan_samples(LAW, alpha=a, tv=0.3),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_each_public_entry_checks_each_rate_once(checks, name):
    CALLS[name](1e-3)
    assert dict(checks) == ONCE, f"{name}: {dict(checks)}"


def test_a_refusal_for_too_few_samples_checks_once_too(checks):
    with pytest.raises(LosslessError, match="too few samples"):
        rheo.assert_law(_draws(20), LAW, alpha=1e-3, tv=0.3)
    assert dict(checks) == ONCE


def test_detectable_tv_checks_alpha_and_beta_once(checks):
    rheo.detectable_tv(LAW, 400, alpha=1e-3)
    rheo.lossless.stats.min_detectable_tv(400, 1e-3, 0.01, 4)
    assert dict(checks) == {"alpha": 2, "beta": 2}  # two calls, one check each


@pytest.mark.parametrize("name", list(CALLS))
def test_a_bad_rate_is_still_refused_at_every_entry(checks, name):
    """The one check is still made at each entry: moving it dropped it nowhere."""
    with pytest.raises(StatsError, match=r"alpha=2\.0 must be a number strictly between 0 and 1"):
        CALLS[name](2.0)
    assert checks["alpha"] == 1


# --- the CLI hands the flags to the library, which checks them once and words them as flags -----------

SAMPLER = """
import random

def exact(case, seed, num_samples):
    rng = random.Random(seed)
    return [tuple(rng.choices(range(3), [2, 1, 1], k=case.tokens)) for _ in range(num_samples)]
"""


@pytest.fixture
def cli_case(tmp_path, monkeypatch):
    import json
    import sys

    (tmp_path / "oncesamplers.py").write_text(SAMPLER)
    path = tmp_path / "case.json"
    path.write_text(json.dumps(TWO.to_json()))
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    yield str(path)
    sys.modules.pop("oncesamplers", None)


def test_the_cli_gate_checks_each_flag_once(checks, cli_case, capsys):
    from rheo.cli.main import main

    assert main(["gate", cli_case, "--sampler", "oncesamplers:exact", "--tv", "0.3"]) == 0
    assert dict(checks) == ONCE


@pytest.mark.parametrize(
    "argv, said",
    [
        (["--alpha", "2"], "--alpha 2.0 must be a number strictly between 0 and 1"),
        (["--tokens", "2", "--horizon", "3"], "--tokens 2 and --horizon 3: give one"),
        (["--tokens", "0"], "--tokens 0 must be an integer >= 1"),
        (["--horizon", "1"], "--horizon 1 must be an integer with 2 <= horizon"),
        (["--tv", "1e-5"], "at --tv 1e-05, --alpha 0.001, --beta 0.01 (at least)"),
    ],
)
def test_the_cli_words_the_librarys_refusal_as_its_flags(checks, cli_case, capsys, argv, said):
    from rheo.cli.main import main

    assert main(["gate", cli_case, "--sampler", "oncesamplers:exact", *argv]) == 2
    err = capsys.readouterr().err
    assert said in err and err.count("\n") == 1 and "force=True" not in err, err
