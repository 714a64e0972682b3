"""`rheo gate --sampler MODULE:FUNCTION` (rheo.cli.user_sampler): a user's sampler found by its import path
from the current directory, gated by the library's check (a correct one passes, its broken twin is
rejected), and every way the text can be wrong refused in one line naming it."""

from __future__ import annotations

import argparse
import json
import sys
import textwrap

import pytest
from helpers import CASES

from rheo.cli import user_sampler
from rheo.cli.user_sampler import add_flag, gate, resolve
from rheo_ref.errors import CaseError, MissingDependencyError

SAMPLERS = '''
import random

def exact(case, seed, num_samples):
    """Each token drawn from the target row: lossless."""
    rng = random.Random(seed)
    out = []
    for _ in range(num_samples):
        seq = list(case.context)
        for _ in range(case.tokens):
            seq.append(rng.choices(range(case.target.vocab_size), [float(w) for w in case.target.row(seq)])[0])
        out.append(seq[len(case.context):])
    return out

def uniform(case, seed, num_samples):
    """The broken twin: every token uniform."""
    rng = random.Random(seed)
    return [[rng.randrange(case.target.vocab_size) for _ in range(case.tokens)] for _ in range(num_samples)]

def crashes(case, seed, num_samples):
    raise ValueError("out of cheese")

class Kit:
    @staticmethod
    def exact(case, seed, num_samples):
        return exact(case, seed, num_samples)

NOT_A_FUNCTION = 3

def two_args(case, seed):
    return []
'''


@pytest.fixture
def here(tmp_path, monkeypatch):
    """A folder holding mysamplers.py (and one that fails at import), as the current directory."""
    (tmp_path / "mysamplers.py").write_text(SAMPLERS)
    (tmp_path / "broken_import.py").write_text("raise RuntimeError('no config file')\n")
    (tmp_path / "needs_pkg.py").write_text("import rheo_no_such_package_xyz.sub\n")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(sys, "path", [p for p in sys.path if p not in ("", str(tmp_path))])
    yield tmp_path
    for name in ("mysamplers", "broken_import", "needs_pkg"):
        sys.modules.pop(name, None)


def parse(*argv: str) -> argparse.Namespace:
    """The flags `rheo gate` has, with `--sampler` (what gate.py's parser gives once it calls add_flag)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("case", nargs="?")
    ap.add_argument("--decoder", default=None)
    add_flag(ap)
    for flag in ("--alpha", "--tv", "--beta"):
        ap.add_argument(flag, type=float, default=None)
    ap.add_argument("--gen", action="append", default=[])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workers", type=int, default=1)
    for flag in ("--tokens", "--horizon"):
        ap.add_argument(flag, type=int, default=None)
    ap.add_argument("--plot", default=None)
    ap.add_argument("--rows", default=None)
    ap.add_argument("--sequential", action="store_true")
    return ap.parse_args(list(argv))


def test_resolve_finds_functions_in_the_current_directory(here):
    assert resolve("mysamplers:exact").__name__ == "exact"
    assert resolve("mysamplers:Kit.exact").__qualname__ == "Kit.exact"
    assert str(here) in sys.path


@pytest.mark.parametrize(
    "spec, match",
    [
        ("mysamplers", "allowed: MODULE:FUNCTION"),
        ("mysamplers:", "allowed: MODULE:FUNCTION"),
        (":exact", "allowed: MODULE:FUNCTION"),
        ("my-samplers:exact", "allowed: MODULE:FUNCTION"),
        ("mysamplers:exact:x", "allowed: MODULE:FUNCTION"),
        ("nosuchmodule_xyz:f", "no module 'nosuchmodule_xyz' in .* or on the Python path"),
        ("mysamplers:nope", "mysamplers has no 'nope'; allowed: .*crashes, exact, .*uniform"),
        ("mysamplers:Kit.nope", "mysamplers:Kit has no 'nope'; allowed: exact"),
        ("mysamplers:NOT_A_FUNCTION", "is a int, not a function"),
        ("mysamplers:two_args", r"takes \(case, seed\); a sampler takes \(case, seed, num_samples\)"),
        ("broken_import:f", "importing broken_import raised RuntimeError: no config file"),
    ],
)
def test_a_bad_sampler_is_refused_naming_it(here, spec, match):
    with pytest.raises(CaseError, match=match) as e:
        resolve(spec)
    assert "\n" not in str(e.value) and e.value.exit_status == 2


def test_a_package_the_module_needs_is_named_with_its_install_line(here):
    with pytest.raises(MissingDependencyError, match=r"imports 'rheo_no_such_package_xyz.*pip install rheo_no_such"):
        resolve("needs_pkg:f")


def test_a_correct_sampler_passes_and_its_broken_twin_is_rejected(here, capsys):
    case = str(CASES / "small.json")
    assert gate(parse(case, "--sampler", "mysamplers:exact", "--tokens", "2"), alpha=1e-3, tv=0.1, beta=0.01) == 0
    good = json.loads(capsys.readouterr().out)
    assert good["verdict"] == "pass" and good["sampler"] == "mysamplers:exact" and good["detectable_tv"] <= 0.1
    args = parse(case, "--sampler", "mysamplers:uniform", "--tokens", "2", "--alpha", "0.01")
    assert gate(args, alpha=1e-3, tv=0.1, beta=0.01) == 1
    bad = json.loads(capsys.readouterr().out)
    assert bad["verdict"] == "REJECT" and bad["alpha"] == 0.01 and bad["worst_conditional"], bad


@pytest.mark.parametrize(
    "argv, match",
    [
        (["--sampler", "mysamplers:exact"], "needs a CASE file"),
        (["CASE"], "needs --decoder NAME .* or --sampler MODULE:FUNCTION"),
        (["CASE", "--sampler", "mysamplers:exact", "--decoder", "assisted"], "give one"),
        (["CASE", "--sampler", "mysamplers:exact", "--gen", "top_k=2"], "--sampler with --gen"),
        (["CASE", "--sampler", "mysamplers:exact", "--workers", "2"], "--sampler with --workers 2"),
        (["CASE", "--sampler", "mysamplers:crashes"], "'mysamplers:crashes' raised ValueError: out of cheese"),
    ],
)
def test_what_does_not_fit_is_refused(here, argv, match):
    argv = [str(CASES / "small.json") if a == "CASE" else a for a in argv]
    with pytest.raises(CaseError, match=match):
        gate(parse(*argv), alpha=1e-3, tv=0.1, beta=0.01)


def test_the_library_checks_the_rates(here):
    """The flags go to `check_lossless` as they are: its one check of each argument refuses them."""
    from rheo_ref.errors import StatsError

    with pytest.raises(StatsError, match="alpha"):
        gate(parse(str(CASES / "small.json"), "--sampler", "mysamplers:exact", "--alpha", "2"), alpha=1e-3, tv=0.1,
             beta=0.01)  # fmt: skip


def test_the_module_docstring_names_the_flags_it_allows():
    doc = textwrap.dedent(user_sampler.__doc__ or "")
    assert "--sampler" in doc and all(f"--{k}" in doc for k in user_sampler.NOT_WITH_SAMPLER)


def test_rheo_gate_on_the_command_line_takes_a_sampler(here, capsys):
    """`rheo gate CASE --sampler mysamplers:exact` through the real parser: 0 and a pass; the broken
    twin 1 and a REJECT; neither --decoder nor --sampler exits 2 naming both."""
    from rheo.cli import main

    case = str(CASES / "small.json")
    assert main(["gate", case, "--sampler", "mysamplers:exact", "--tokens", "2"]) == 0
    assert json.loads(capsys.readouterr().out)["verdict"] == "pass"
    assert main(["gate", case, "--sampler", "mysamplers:uniform", "--tokens", "2"]) == 1
    assert json.loads(capsys.readouterr().out)["verdict"] == "REJECT"
    assert main(["gate", case]) == 2
    assert "--decoder NAME" in capsys.readouterr().err


def test_sequential_stops_the_broken_twin_at_the_first_look(here, capsys):
    """--sequential: the broken twin is rejected at look 1 with a sixteenth of the samples; the
    correct sampler passes at the last look with N planned at its level (0.9α)."""
    import rheo
    from rheo_ref.models import load_case

    case = str(CASES / "small.json")
    args = ("--tokens", "2", "--sequential")
    assert gate(parse(case, "--sampler", "mysamplers:uniform", *args), alpha=1e-3, tv=0.1, beta=0.01) == 1
    bad = json.loads(capsys.readouterr().out)
    assert bad["verdict"] == "REJECT" and bad["decided_at_look"] == 1 and bad["N"] == bad["looks"][0]
    assert gate(parse(case, "--sampler", "mysamplers:exact", *args), alpha=1e-3, tv=0.1, beta=0.01) == 0
    good = json.loads(capsys.readouterr().out)
    n = rheo.plan_samples(load_case(case), alpha=1e-3, tv=0.1, tokens=2, sequential=True)
    assert good["N"] == good["looks"][-1] == n and good["decided_at_look"] == len(good["looks"])
    assert good["family_alpha"] == 1e-3 and good["alpha"] == pytest.approx(0.9e-3)
