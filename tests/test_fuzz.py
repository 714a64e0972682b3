"""No input gets a traceback: a fuzzing harness over every `rheo` subcommand (docs/CLI.md).

Hypothesis draws hostile inputs (case files with deep nesting, huge numbers, NaN/Infinity,
duplicate keys, wrong types, booleans where integers go, truncated or binary text, absurd
sizes; argument vectors with hostile values for every flag, unknown flags, bad and unwritable
paths) and drives each subcommand's `main(argv)` in this process, asserting the CLI contract:

- the exit status is 0, 1, 2 or 130; no traceback on stderr; at most two stderr lines (argparse
  prints usage + error); never the last-resort "internal error" line of `rheo.cli.main.main` (a bug);
- an output file is afterwards absent, the previous file, or complete (parses);
- generated *valid* cases exit 0, so the harness cannot pass by refusing everything.

What is real and what is stubbed, so that the default profile stays under a minute:
- `exact` runs for real (with --max-trees/--max-law-size small enough for milliseconds);
- `sample` runs for real with its work limits lowered (an accepted run is tiny; refusals are
  what the limits are for);
- `audit` and `mutants` run their argument checks and outputs for real, over a stubbed
  computation (one tiny case; no gate tests);
- the real-model commands run up to the model load, where a sentinel stands in for the loaders:
  an argument vector either exits before it (status 2, one line) or reaches it with every
  value checked ("validate first, then load").

Counts: `COUNTS` holds how many inputs each subcommand got (printed at the end of a `-n 0`
run by tests/conftest.py). Profiles: the default tries `N` examples per test; nightly
(RHEO_HYPOTHESIS_PROFILE=nightly) 10x as many. Inputs that once failed are `@example`s.
"""

from __future__ import annotations

import copy
import io
import json
import os
import re
import resource
import subprocess
import sys
from collections import Counter
from contextlib import contextmanager, redirect_stderr, redirect_stdout
from dataclasses import dataclass
from pathlib import Path

import pytest
from helpers import load_json
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from rheo.cli.main import build_parser, main
from rheo.decoders import decoders
from rheo.decoders import examples as decoder_examples
from rheo_ref import strategies as rs

SCALE = 10 if os.environ.get("RHEO_HYPOTHESIS_PROFILE") == "nightly" else 1
COUNTS: Counter = Counter()  # inputs tried per subcommand
OUTCOMES: Counter = Counter()  # (subcommand, exit status or "reached the model load")
SMALL = load_json("small.json")
# the same tables under the tsubame family (plan K = 2, W = 1, D = 2, R = 3; tokens drawn wor, traversal)
SMALL_TSUBAME = {
    **SMALL,
    "scheme": {"family": "tsubame", "K": 2, "W": 1, "D": 2, "R": 3, "sampling": "wor", "verify": "traversal"},
}
# and under the treespark family (N = 3, k = 2, D = 2, a binding θ with the paper's sigmoid, traversal)
SMALL_TREESPARK = {
    **SMALL,
    "scheme": {"family": "treespark", "N": 3, "k": 2, "D": 2, "theta": "1/10",
               "calibration": "sigmoid:0.6684,-0.4587", "verify": "traversal"},
}  # fmt: skip
ROOT = Path(__file__).resolve().parents[1]
SUBCOMMANDS = (
    "exact",
    "audit",
    "sample",
    "mutants",
    "generate",
    "bench-model",
    "draft-ceiling",
    "train-draft",
    "compare",
    "gate",
    "gate-hf",
    "gate-served",
    "sweep",
    "paper-tables",
    "cases",
    "greedy",
    "releases",
)


def fuzz(n: int):
    """`n` examples per test in the default profile, 10n nightly."""
    return settings(
        max_examples=n * SCALE,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )


class ReachedModel(BaseException):
    """The stand-in model loader was called: every argument passed its checks (a BaseException,
    so that no handler of rheo's can mistake it for one of its own failures)."""


def _reached(*args, **kwargs):
    raise ReachedModel()


@dataclass
class Result:
    rc: int
    out: str
    err: str
    reached: bool = False


def invoke(argv: list[str], *, tally: str | None = None) -> Result:
    """`rheo ARGV` in this process, checked against the CLI contract."""
    name = tally or next((a for a in argv if a in SUBCOMMANDS), "(top level)")
    COUNTS[name] += 1
    out, err = io.StringIO(), io.StringIO()
    threads = _torch_threads()
    reached = False
    with redirect_stdout(out), redirect_stderr(err), memory_cap():
        try:
            rc = main(list(argv))
        except SystemExit as e:  # argparse: --help, usage errors
            rc = 0 if e.code is None else e.code if isinstance(e.code, int) else 1
        except ReachedModel:
            rc, reached = 0, True
        finally:
            _torch_threads(threads)
    res = Result(rc, out.getvalue(), err.getvalue(), reached)
    OUTCOMES[(name, "model load" if reached else str(rc))] += 1
    assert_contract(res, argv)
    return res


MEMORY_HEADROOM = 3 << 30  # bytes of address space one input may add to the process


@contextmanager
def memory_cap():
    """Cap this process's address space at its size now + MEMORY_HEADROOM while one input runs, so
    that an input a size check missed ends as MemoryError (and fails the contract: "out of memory")
    within seconds, instead of growing until the machine's OOM killer takes the test worker."""
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    with open("/proc/self/statm") as fh:
        now = int(fh.read().split()[0]) * resource.getpagesize()
    cap = now + MEMORY_HEADROOM
    if hard != resource.RLIM_INFINITY:
        cap = min(cap, hard)
    resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _torch_threads(n: int | None = None) -> int | None:
    """Torch's intra-op threads (a fuzzed --threads must not slow the rest of the suite)."""
    torch = sys.modules.get("torch")
    if torch is None:
        return None
    if n is not None:
        torch.set_num_threads(n)
    return torch.get_num_threads()


def assert_contract(res: Result, argv: list[str]) -> None:
    shown = [a if len(a) < 80 else a[:77] + "..." for a in argv]
    lines = res.err.strip().splitlines()
    assert res.rc in (0, 1, 2, 130), (shown, res.rc, res.err[-2000:])
    assert "Traceback" not in res.err, (shown, res.err[-3000:])
    assert "internal error" not in res.err, (shown, res.err)
    assert "out of memory" not in res.err, (shown, "a size check missed this input", res.err)
    assert len(lines) <= 2, (shown, res.err[-2000:])
    if res.rc != 0:
        assert lines and lines[-1].strip(), (shown, "a failure must say why", res.rc)


def _as_int(text: str) -> int | None:
    """`text` as argparse's int() reads it, or None (valid thread counts above 2 only cost time)."""
    try:
        return int(text)
    except ValueError:
        return None


# --- hostile values --------------------------------------------------------------------------

HOSTILE = st.one_of(
    st.sampled_from(
        [
            None,
            True,
            False,
            0,
            -1,
            1,
            2,
            3,
            10**6,
            10**18,
            2**63,
            10**300,
            10**4000,
            -(10**18),
            1.5,
            -0.0,
            1e308,
            float("nan"),
            float("inf"),
            float("-inf"),
            "",
            "0",
            "1",
            "1/0",
            "1/3",
            "-1/3",
            "1e999999999",
            "1e-999999999",
            "1" * 2000,
            "nan",
            "inf",
            "x" * 3000,
            "0,1",
            " 0 ",
            "\u0663",
            "\x00",
            [],
            {},
            [[]],
            [None],
            {"": []},
            [1, 2, 3],
            ["1/2", "1/2"],
            ["1/3"] * 3,
            [True] * 3,
        ]
    ),
    st.integers(),
    st.floats(),
    st.text(max_size=8),
    st.lists(st.integers(-2, 5), max_size=4),
)
INTS = st.one_of(st.integers(-3, 8), st.sampled_from([2**31, 2**63, 2**64, 10**9, 10**18, 10**40]), st.integers()).map(
    str
)
INT_TEXT = st.one_of(INTS, st.sampled_from(["", "x", "1.5", "1e3", "nan", "0x10", "1_000", "\u0663", "9" * 5000, "-0"]))
THREADS = st.one_of(
    st.sampled_from(["1", "2"]), INT_TEXT.filter(lambda s: _as_int(s) is None or not 2 < _as_int(s) <= 1024)
)
FLOAT_TEXT = st.one_of(
    st.sampled_from(["0", "1", "0.5", "-1", "nan", "inf", "-inf", "1e-320", "1e308", "1e400", "", "x", "0.6"]),
    st.floats().map(repr),
)


@st.composite
def mutated_case(draw) -> object:
    """The small case (rheo, tsubame or treespark family) with one to three parts replaced by hostile values,
    deleted or added to."""
    obj = copy.deepcopy(draw(st.sampled_from([SMALL, SMALL_TSUBAME, SMALL_TREESPARK])))
    for _ in range(draw(st.integers(1, 3))):
        parent, key = None, None
        node = obj
        while isinstance(node, (dict, list)) and node and draw(st.booleans()):
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            parent, key = node, draw(st.sampled_from(keys))
            node = node[key]
        action = draw(st.sampled_from(["replace", "replace", "replace", "delete", "add", "wrap"]))
        if parent is None:
            if action == "add" and isinstance(obj, dict):
                obj[draw(st.text(max_size=6))] = draw(HOSTILE)
            elif action == "replace":
                obj = draw(HOSTILE)
            continue
        if action == "delete":
            del parent[key]
        elif action == "add" and isinstance(node, dict):
            node[draw(st.text(max_size=6))] = draw(HOSTILE)
        elif action == "wrap":
            parent[key] = [node]
        else:
            parent[key] = draw(HOSTILE)
    return obj


def _dumps(obj: object) -> str:
    return json.dumps(obj)  # NaN/Infinity come out as the non-JSON tokens NaN, Infinity


@st.composite
def hostile_case_text(draw) -> str | bytes:
    """A case file's content: a mutated case, or text-level damage to one."""
    base = (
        _dumps(draw(mutated_case()))
        if draw(st.booleans())
        else _dumps(draw(st.sampled_from([SMALL, SMALL_TSUBAME, SMALL_TREESPARK])))
    )
    op = draw(st.sampled_from(["as is", "truncate", "duplicate", "nest", "huge number", "bytes", "tokens"]))
    if op == "truncate":
        return base[: draw(st.integers(0, len(base)))]
    if op == "duplicate":
        return base.replace('"tokens": 3', '"tokens": 3, "tokens": 2', 1).replace('"K": 3', '"K": 3, "K": 3', 1)
    if op == "nest":
        d = draw(st.sampled_from([3, 50, 900, 1100, 5000, 100_000]))
        return "[" * d + base + "]" * d
    if op == "huge number":
        return base.replace("3", draw(st.sampled_from(["9" * 5000, "1e400", "-1e400", "1E999999999", "0.0e-99999"])), 1)
    if op == "bytes":
        return draw(st.binary(max_size=64))
    if op == "tokens":
        return base.replace('"tokens": 3', f'"tokens": {draw(INTS)}', 1)
    return base


def valid_case_text():
    return rs.family_cases(max_trees=60, max_tokens=3).map(lambda c: json.dumps(c.to_json()))


# --- files and paths ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """Fixed inputs: the small case, a missing file, a folder, an empty file, binary, an unwritable folder."""
    d = tmp_path_factory.mktemp("fuzz")
    (d / "small.json").write_text(json.dumps(SMALL))
    (d / "tsubame.json").write_text(json.dumps(SMALL_TSUBAME))
    (d / "treespark.json").write_text(json.dumps(SMALL_TREESPARK))
    (d / "empty.json").write_text("")
    (d / "binary.json").write_bytes(b"\xff\xfe\x00{")
    (d / "folder").mkdir()
    (d / "afile").write_text("x")
    os.mkfifo(d / "fifo")
    (d / "link").symlink_to(d / "linked")
    return d


@pytest.fixture(scope="module", autouse=True)
def in_a_scratch_folder(files):
    """Relative paths a fuzzed vector names (`--out stray`, `--json -`) land in a scratch folder."""
    mp = pytest.MonkeyPatch()
    scratch = files / "cwd"
    scratch.mkdir()
    mp.chdir(scratch)
    yield
    mp.undo()


def readonly_folder(base: Path) -> Path | None:
    """A folder in which nothing can be created (chmod 555; as root, /sys/kernel), or None."""
    if os.geteuid() != 0:
        ro = base / "readonly"
        ro.mkdir(exist_ok=True)
        ro.chmod(0o555)
        return ro
    ro = Path("/sys/kernel")
    try:
        os.close(os.open(ro / "rheo-probe", os.O_CREAT | os.O_WRONLY))
    except OSError:
        return ro
    return None


def case_path(files: Path, name: str) -> str:
    return {
        "small": str(files / "small.json"),
        "tsubame": str(files / "tsubame.json"),
        "treespark": str(files / "treespark.json"),
        "missing": str(files / "nope.json"),
        "folder": str(files / "folder"),
        "empty": str(files / "empty.json"),
        "binary": str(files / "binary.json"),
        "nul": "a\x00b",
        "long": "x" * 5000,
        "devnull": os.devnull,
        "under a file": str(files / "afile" / "c.json"),
    }[name]


CASE_PATHS = st.sampled_from(
    [
        "small",
        "small",
        "small",
        "tsubame",
        "treespark",
        "missing",
        "folder",
        "empty",
        "binary",
        "nul",
        "long",
        "devnull",
        "under a file",
    ]
)


def out_path(files: Path, name: str, leaf: str) -> str:
    ro = readonly_folder(files)
    return {
        "fresh": str(files / "out" / leaf),
        "existing": str(files / leaf),
        "folder": str(files / "folder"),
        "under a file": str(files / "afile" / leaf),
        "missing parent": str(files / "no" / "such" / leaf),
        "readonly": str((ro or files) / leaf),
        "nul": "o\x00ut",
        "empty": "",
        "devnull": os.devnull,
        "fifo": str(files / "fifo"),
        "symlink": str(files / "link"),
        "long name": str(files / ("n" * 245)),  # fits; its temporary name does not
    }.get(name, name)


OUT_PATHS = st.sampled_from(
    ["fresh", "existing", "existing", "folder", "under a file", "missing parent", "readonly", "nul", "empty"]
    + ["devnull", "fifo", "symlink", "long name"]
)


def flags(options: dict[str, st.SearchStrategy | None]) -> st.SearchStrategy[list[str]]:
    """Argument vectors: a random subset of `options` in random order (None: a switch), plus now
    and then an unknown flag or a stray word."""

    @st.composite
    def build(draw) -> list[str]:
        names = draw(st.lists(st.sampled_from(sorted(options)), unique=True, max_size=len(options)))
        argv: list[str] = []
        for name in names:
            argv.append(name)
            if options[name] is not None:
                argv.append(draw(options[name]))
        if draw(st.integers(0, 9)) == 0:
            argv.insert(draw(st.integers(0, len(argv))), draw(st.sampled_from(["--nope", "-Z", "stray", "--", "-"])))
        return argv

    return build()


# --- exact ---------------------------------------------------------------------------------------

CHEAP = ["--max-trees", "3000", "--max-law-size", "3000"]  # milliseconds per accepted case


@fuzz(150)
@given(text=st.one_of(hostile_case_text(), valid_case_text()))
@example(text=_dumps({**SMALL, "tokens": 1_000_000}))  # RecursionError in the multi-round composition (issue)
@example(text="[" * 100_000 + "]" * 100_000)  # RecursionError in the JSON decoder (issue)
@example(text=_dumps(SMALL).replace('"tokens": 3', '"tokens": ' + "9" * 5000))  # ValueError: int digit limit
@example(text=b"\xff\xfe{")  # UnicodeDecodeError: not UTF-8
@example(text=_dumps({**SMALL, "draft": {**SMALL["draft"], "context_length": 10**4000}}))
@example(text=_dumps({**SMALL, "scheme": {**SMALL["scheme"], "D": 10**18}}))  # hung: estimate looped over D
@example(text=_dumps(SMALL).replace('"1/4", "1/4", "1/2"', '"1e999999999", "0", "0"'))  # hung: a billion-digit int
@example(text=_dumps(SMALL).replace('"tokens": 3', '"tokens": 3, "tokens": 2'))  # duplicate key taken silently
def test_exact_on_hostile_case_files(files, text):
    path = files / "case.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    res = invoke(["exact", str(path), *CHEAP])
    if res.rc == 0:
        out = json.loads(res.out)
        assert set(out) >= {"law", "target", "tv"}


@fuzz(40)
@given(text=valid_case_text())
def test_exact_accepts_every_valid_generated_case(files, text):
    """The control: valid cases are not refused (so the test above is not passing by refusing)."""
    path = files / "valid.json"
    path.write_text(text)
    res = invoke(["exact", str(path), "--max-trees", "100000", "--max-law-size", "100000"])
    assert res.rc == 0, res.err


EXACT_FLAGS = {
    "--method": st.sampled_from(["classes", "brute", "brute", "nope", ""]),
    "--tokens": INT_TEXT,
    "--max-trees": INT_TEXT,
    "--max-law-size": INT_TEXT,
    "--force": None,
}


@fuzz(100)
@given(path=CASE_PATHS, argv=flags(EXACT_FLAGS))
@example(path="nul", argv=[])  # ValueError: embedded null byte
@example(path="small", argv=["--tokens", "1000000"])
def test_exact_argument_vectors(files, path, argv):
    if "--force" in argv and "--tokens" in argv:  # --force runs what it is told: keep it to sizes that end
        i = argv.index("--tokens")
        argv[i + 1] = argv[i + 1] if _small_int(argv[i + 1], 6) else "2"
    invoke(["exact", case_path(files, path), *argv])


# --- compare -------------------------------------------------------------------------------------

COMPARE_FLAGS = {
    "--nodes": st.one_of(st.integers(1, 4).map(str), INT_TEXT),
    "--tokens": INT_TEXT,
    "--json": None,
    "--plot": OUT_PATHS,
    "--max-trees": INT_TEXT,
    "--max-law-size": INT_TEXT,
    "--force": None,
}


@fuzz(60)
@given(path=CASE_PATHS, argv=flags(COMPARE_FLAGS))
@example(path="small", argv=["--nodes", "0"])
@example(path="small", argv=["--plot", "folder"])
@example(path="small", argv=["--tokens", str(2**63)])  # ran out of memory: the law's size was not estimated
def test_compare_argument_vectors(files, path, argv):
    for flag, small in (("--nodes", 4), ("--tokens", 2)):  # keep accepted runs to milliseconds: a mid-sized
        if flag in argv:  # value becomes small, a huge one must be refused
            i = argv.index(flag)
            if not _small_int(argv[i + 1], small) and (_small_int(argv[i + 1], 10**6) or "--force" in argv):
                argv[i + 1] = str(small)
    target = None
    if "--plot" in argv:
        i = argv.index("--plot")
        argv[i + 1] = target = out_path(files, argv[i + 1], "compare.png")
    res = invoke(
        ["compare", case_path(files, path), *argv, *(["--max-trees", "3000"] if "--force" not in argv else [])]
    )
    if res.rc == 0 and target and target != os.devnull:
        assert Path(target).is_file() and Path(target).stat().st_size > 0


# --- gate-hf -------------------------------------------------------------------------------------

GATE_HF_FLAGS = {
    # every registered decoder's valid names (the registry's: a decoder added later joins), and broken ones
    "--decoder": st.deferred(
        lambda: st.sampled_from(
            [*decoder_examples(), "ensemble:x", "ensemble:2", "eagle:1", "seqspec", "seqspec:x", "nope", ""]
        )
    ),
    "--alpha": FLOAT_TEXT,
    "--tv": FLOAT_TEXT,
    "--beta": FLOAT_TEXT,
    "--tokens": INT_TEXT,
    "--seed": INT_TEXT,
    "--workers": INT_TEXT,
    "--rows": st.sampled_from(["all", "quick", "nope", "", ","]),
    "--seeds": st.sampled_from(["1,2", "", "x", "-1", str(2**70)]),
    "--device": st.sampled_from(["cpu", "cuda", "cuda:0", "tpu", ""]),
    "--gen": st.sampled_from(
        [
            "num_assistant_tokens=2",
            "x",
            "a=b=c",
            "=1",
            "temperature=nan",
            "top_k=-1",
            "top_k=2",
            "top_p=0.9",
            "top_p=2",
            "gamma=3",
            "gamma=0",
            "gamma=99",
            "gamma=true",
            "gamma=x",
        ]
    ),
}


@pytest.fixture(scope="module")
def stub_gate_hf():
    """The gate past `gate_hf`'s one check of its arguments, the decoder's environment and context
    (`rheo.decoders.gate.gate_checked`: the sampling, transformers generate or a served decoder's own
    environment, seconds to minutes) stands in: every argument that reaches it passed its checks."""
    mp = pytest.MonkeyPatch()
    import rheo.decoders.gate

    mp.setattr(rheo.decoders.gate, "gate_checked", _reached)
    yield
    mp.undo()


@fuzz(40)
@given(path=CASE_PATHS, argv=flags(GATE_HF_FLAGS))
@example(path="small", argv=["--decoder", "assisted", "--workers", "0"])
@example(path="small", argv=["--decoder", "assisted", "--tokens", str(2**63)])
@example(path="small", argv=["--decoder", "eagle", "--gen", "top_k=2", "--gen", "top_p=0.9"])
@example(path="small", argv=["--decoder", "eagle", "--gen", "temperature=0"])
@example(path="small", argv=["--decoder", "seqspec:capped_hsd", "--gen", "gamma=99"])
@example(path="small", argv=["--decoder", "seqspec:x"])
@example(path="small", argv=["--decoder", "assisted", "--device", "cuda"])  # an in-process decoder: refused, exit 2
def test_gate_hf_argument_vectors(files, stub_gate_hf, path, argv):
    invoke(["gate-hf", case_path(files, path), *argv])


# --- gate-served ---------------------------------------------------------------------------------

GATE_SERVED_FLAGS = {
    "--decoder": st.sampled_from(["sglang", "eagle-harness", "flashspec", "vllm", "nope", ""]),
    "--setting": st.sampled_from(["token T=1", "nope", ""]),
    "--gen": st.sampled_from(["temperature=0.5", "x", "a=b=c", "top_k=2", "temperature=nan"]),
    "--table": None,
    "--tokens": INT_TEXT,
    "--alpha": FLOAT_TEXT,
    "--tv": FLOAT_TEXT,
    "--beta": FLOAT_TEXT,
    "--seeds": st.sampled_from(["0,1", "1", "", ",", "x", "-1", "0,,1", "1e3", str(2**70)]),
    "--device": st.sampled_from(["cpu", "cuda", "tpu", ""]),
}


@fuzz(40)
@given(path=CASE_PATHS, argv=flags(GATE_SERVED_FLAGS))
@example(path="small", argv=["--decoder", "sglang", "--seeds", ""])
@example(path="small", argv=["--decoder", "sglang", "--seeds", "x"])
@example(path="small", argv=["--decoder", "nope"])
@example(path="small", argv=["--decoder", "vllm", "--device", "cuda"])  # reaches the (stubbed) run: the driver decides
def test_gate_served_argument_vectors(files, stub_gate_hf, path, argv):  # gate-served is an alias of rheo gate
    invoke(["gate-served", case_path(files, path), *argv])


def runnable_examples(case: str) -> list[str]:
    """The registry's `--decoder` values whose decoder can run here (a served one: an interpreter with its
    package; one run in this interpreter: the modules it requires are installed, as `make` installs them)
    on `case` (a decoder that declares a constraint on the case, `check_context` / `check_case`, accepts it)."""
    import importlib.util

    from rheo.decoders import DecoderRun
    from rheo_ref.errors import CaseError, PackageUnavailable
    from rheo_ref.models import load_case

    c = load_case(case)

    def built(name: str) -> bool:
        run = DecoderRun.parse(name)
        entry = run.entry
        try:
            entry.check_context(c, name)
            entry.check_case(c, run)
        except CaseError:
            return False
        served = entry.served
        if served is not None:
            try:
                return bool(served.python())
            except PackageUnavailable:
                return False
        return all(importlib.util.find_spec(m) is not None for m in entry.requires)

    return [e for e in decoder_examples() if built(e)]


def decoders_reach_the_sampling(case: str) -> list[str]:
    """Every registered decoder's valid names on `case`, through `rheo gate`: those that reach the sampling."""
    reached = []
    for decoder in decoder_examples():
        if invoke(["gate", case, "--decoder", decoder, "--workers", "2"]).reached:
            reached.append(decoder)
    return reached


def test_gate_hf_valid_arguments_reach_the_sampling(files, stub_gate_hf):
    """The control: valid arguments are not refused (so the test above is not passing by refusing); a served
    decoder whose package is installed nowhere here is refused with the install line (tests/decoders/test_served_where.py)."""
    small = case_path(files, "small")
    assert decoders_reach_the_sampling(small) == runnable_examples(small)
    assert "assisted" in runnable_examples(small)  # (the filter leaves the built-in transformers decoders)
    assert {"assisted", "prompt-lookup", "ensemble:1/2", "rheo-lm", "eagle", "seqspec:capped_hsd"} <= {
        *decoder_examples()
    }  # (the built-in ones are registered)
    assert {"vllm", "sglang", "eagle-harness", "flashspec"} <= {*decoder_examples()}  # (and the served ones)


@pytest.mark.parametrize("name", [d.name for d in decoders().values() if d.env is not None])
def test_served_decoders_reach_the_sampling(files, stub_gate_hf, name):
    """Each served decoder, through `rheo gate` and its alias `rheo gate-served`, reaches its (stubbed) run."""
    from rheo.decoders.served import env_missing_reason

    reason = env_missing_reason(decoders()[name].env)
    if reason is not None:
        pytest.skip(reason)
    case = case_path(files, "small")
    assert invoke(["gate", case, "--decoder", name, "--gen", "temperature=0.5"]).reached
    assert invoke(["gate", "--decoder", name, "--rows", "quick", "--seeds", "1"]).reached
    assert invoke(["gate-served", case, "--decoder", name]).reached


# --- sweep ---------------------------------------------------------------------------------------

GRID = {
    "tables": [{"generator": "random", "vocab_size": 3, "seeds": [0]}],
    "schemes": [
        {"K": 2, "m": 1, "W": 1, "D": 2, "R": 2},
        {"family": "static", "branching": [2], "sampling": "wor", "verify": "rrsw"},
    ],
    "temperatures": ["1", 0],
    "context": [0],
    "tokens": 1,
}


@st.composite
def hostile_grid_text(draw) -> str:
    """A small valid grid with one field replaced by a hostile value (or the whole text hostile)."""
    if draw(st.integers(0, 4)) == 0:
        return draw(st.sampled_from(["", "{", "[]", "null", "[" * 100_000 + "]" * 100_000, '{"tables": 1}']))
    grid = json.loads(json.dumps(GRID))
    where = draw(
        st.sampled_from(
            [
                "tables",
                "schemes",
                "temperatures",
                "context",
                "tokens",
                "vocab_size",
                "seeds",
                "K",
                "extra",
                "method",
                "max_trees",
            ]
        )
    )
    value = draw(HOSTILE)
    if where in ("vocab_size", "seeds"):
        grid["tables"][0][where] = value
    elif where == "K":
        grid["schemes"][0]["K"] = value
    else:
        grid[where] = value
    return _dumps(grid)


SWEEP_FLAGS = {
    "--out": OUT_PATHS,
    "--workers": st.one_of(st.just("1"), INT_TEXT),
    "--scheduler": st.sampled_from(["nope", "", "tcp://", "http://x:1", "tcp://host:port"]),
    "--no-progress": None,
    "--no-plot": None,
}


@fuzz(40)
@given(text=hostile_grid_text(), argv=flags(SWEEP_FLAGS))
@example(text=_dumps(GRID), argv=["--workers", "1", "--no-plot"])
def test_sweep_on_hostile_grids_and_arguments(files, text, argv):
    grid = files / "grid.json"
    grid.write_text(text)
    if "--workers" in argv:  # a process pool per example would take seconds: one process, or refused
        i = argv.index("--workers")
        argv[i + 1] = argv[i + 1] if not _small_int(argv[i + 1], 10**6) else "1"
    if "--out" in argv:
        i = argv.index("--out")
        argv[i + 1] = out_path(files, argv[i + 1], "sweep")
    else:
        argv += ["--out", str(files / "sweep-out")]
    if "--scheduler" not in argv and "--workers" not in argv:
        argv += ["--workers", "1"]
    invoke(["sweep", str(grid), *argv])


# --- sample --------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def small_limits():
    """`rheo sample`'s work limits lowered so that every accepted run takes milliseconds."""
    mp = pytest.MonkeyPatch()
    import rheo.cli.sample as cs

    mp.setattr(cs, "MAX_DRAWS", 300, raising=False)
    mp.setattr(cs, "MAX_WORK", 200_000, raising=False)
    mp.setattr(cs, "MAX_LEVELS", 200, raising=False)
    yield
    mp.undo()


@fuzz(60)
@given(text=st.one_of(hostile_case_text(), valid_case_text()))
@example(text=_dumps({**SMALL, "scheme": {**SMALL["scheme"], "D": 10**6}}))  # hung building a 10^6-level tree
@example(text=_dumps({**SMALL, "target": {**SMALL["target"], "context_length": 10**4000}}))  # OverflowError
def test_sample_on_hostile_case_files(files, small_limits, text):
    path = files / "sample_case.json"
    path.write_bytes(text if isinstance(text, bytes) else text.encode("utf-8", "surrogatepass"))
    invoke(["sample", str(path), "--samples", "5", "--seed", "1"])


SAMPLE_FLAGS = {
    "--samples": st.one_of(st.integers(1, 20).map(str), INT_TEXT),
    "--seed": INT_TEXT,
    "--device": st.sampled_from(["cpu", "cuda", "cuda:0", "cuda:abc", "tpu", "", "cpu:0"]),
    "--batch": INT_TEXT,
    "--tokens": INT_TEXT,
    "--temperature": FLOAT_TEXT,
    "--threads": THREADS,
    "--mutant": st.sampled_from(
        ["fills-first", "bonus-full-p", "tsubame-plan-after-sampling", "treespark-own-survival", "nope"]
    ),
    "--force": None,
}


@fuzz(100)
@given(path=CASE_PATHS, argv=flags(SAMPLE_FLAGS))
@example(path="small", argv=["--samples", "5", "--seed", "1", "--device", "cuda:abc"])  # RuntimeError: device string
@example(path="small", argv=["--samples", "5", "--seed", str(2**64)])  # ValueError: manual_seed overflow
@example(path="small", argv=["--samples", "5", "--seed", "1", "--threads", str(2**31)])  # set_num_threads overflow
@example(path="small", argv=["--samples", "5", "--seed", "1", "--temperature", "1e-5"])  # rows underflowed to NaN
@example(path="small", argv=["--samples", "5", "--seed", "1", "--batch", str(10**12)])
def test_sample_argument_vectors(files, small_limits, path, argv):
    if "--force" in argv:  # --force lifts the limits: keep what it runs small
        argv = [a for a in argv if a != "--force"] if not _small_run(argv) else argv
    res = invoke(["sample", case_path(files, path), *argv])
    if res.rc == 0 and "--samples" in argv and "--seed" in argv:
        assert sum(json.loads(res.out)["counts"].values()) == int(argv[argv.index("--samples") + 1])
    if "--temperature" in argv and argv[argv.index("--temperature") + 1] == "1e-5" and path == "small":
        assert res.rc == 0, res.err  # a tiny T is (nearly) greedy, not "no row (NaN)"


def _small_int(text: str, limit: int) -> bool:
    """`text` is an int (as argparse reads it) of at most `limit` (anything else is refused anyway)."""
    try:
        return int(text) <= limit
    except ValueError:
        return True


def _small_run(argv: list[str]) -> bool:
    def small(flag: str, limit: int) -> bool:
        return flag not in argv or _small_int(argv[argv.index(flag) + 1], limit)

    return small("--samples", 20) and small("--tokens", 4)


# --- audit and mutants (computation stubbed) --------------------------------------------------


@pytest.fixture(scope="module")
def stub_audit():
    """`rheo audit` over one tiny case without the statistical column's sampling."""
    import rheo.selfgate.audit as audit
    from rheo_ref.models import Case

    mp = pytest.MonkeyPatch()
    mp.setattr(audit, "audit_cases", lambda families=None: [("tiny", Case.from_json({**SMALL, "tokens": 1}))])
    mp.setattr(audit, "_statistical", lambda case, seed: {"verdict": "stub"})
    yield
    mp.undo()


@fuzz(40)
@given(
    argv=flags(
        {
            "--json": OUT_PATHS,
            "--no-stats": None,
            "--seed": INT_TEXT,
            "--family": st.sampled_from(["rheo", "treespark", "nope", "", "RHEO", "rheo "]),
        }
    )
)
@example(argv=["--json", "folder"])  # IsADirectoryError after the whole audit had run
@example(argv=["--json", "readonly"])
@example(argv=["--json", "nul"])  # (a NUL in the path: once broke this test itself, found by the nightly profile)
def test_audit_argument_vectors(files, stub_audit, argv):
    target = None
    if "--json" in argv:
        i = argv.index("--json")
        argv[i + 1] = target = out_path(files, argv[i + 1], "audit.json")
        regular = target and "\x00" not in target and (os.path.isfile(target) or not os.path.lexists(target))
        if regular and Path(target).parent.is_dir():  # (never into a FIFO: that would block)
            try:
                Path(target).write_text("PREVIOUS")
            except OSError:
                pass
    res = invoke(["audit", *argv])
    if target and res.rc == 0 and os.path.isfile(target):
        assert isinstance(json.loads(Path(target).read_text()), list)
    elif target and "\x00" not in target and os.path.isfile(target):
        assert Path(target).read_text() == "PREVIOUS"  # a failed run leaves the previous file


@pytest.fixture(scope="module")
def stub_mutants():
    import rheo.cli.mutants as cm

    mp = pytest.MonkeyPatch()
    mp.setattr(cm, "mutant_rows", lambda case, names, **kw: [])
    fa = {
        "seeds": 1,
        "alpha": 0.1,
        "ks_uniform_p": 0.5,
        **{k: {"level": 0.1, "rejections": 0, "expected": 0.1, "binomial_p": 1.0} for k in ("at_alpha", "at_0.05")},
    }
    mp.setattr(cm, "false_alarms", lambda case, seeds, **kw: fa)
    yield
    mp.undo()


MUTANT_FLAGS = {
    "--json": None,
    "--alpha": FLOAT_TEXT,
    "--beta": FLOAT_TEXT,
    "--tv": FLOAT_TEXT,
    "--case": st.sampled_from(
        ["auto", "rheo-m1/T0.5", "tsubame-w1-wor-traversal/T1", "treespark-traversal-theta/T1", "nope", ""]
    ),
    "--fa-case": st.sampled_from(["rheo-m1/T0.5", "auto", "nope"]),
    "--only": st.sampled_from(
        ["fills-first", "nope", "leq-coin", "tsubame-plan-after-sampling", "treespark-own-survival"]
    ),
    "--seeds": INT_TEXT,
}


@fuzz(60)
@given(argv=flags(MUTANT_FLAGS))
@example(argv=["--seeds", str(10**12)])  # accepted: a trillion gate tests
def test_mutants_argument_vectors(stub_mutants, argv):
    invoke(["mutants", *argv])


# --- real-model commands: up to the model load -----------------------------------------------


@pytest.fixture(scope="module")
def no_models():
    """Every model loader replaced by the ReachedModel sentinel."""
    pytest.importorskip("torch")
    import rheo_fast.lm.bench as bench
    import rheo_fast.lm.draft_head as dh
    import rheo_fast.lm.target as tg
    import rheo_fast.lm.train_draft as td

    mp = pytest.MonkeyPatch()
    for mod in (tg, bench, td):
        mp.setattr(mod, "load_target", _reached)
    for mod in (dh, bench):
        mp.setattr(mod, "load_head", _reached)
    yield
    mp.undo()


TREE_FLAGS = {
    "-K": INT_TEXT,
    "-W": INT_TEXT,
    "-D": INT_TEXT,
    "-R": INT_TEXT,
    "-S": INT_TEXT,
    "--draft": st.sampled_from(["missing", "folder", "empty"]),
    "--force": None,
}
RUN_FLAGS = {"--seed": INT_TEXT, "--max-new-tokens": INT_TEXT}
METHOD_LISTS = st.lists(
    st.sampled_from(
        ["ar", "chain", "topk", "rheo", "rheo-rrsw", "static-traversal", "delayed-traversal", "tsubame", "treespark"]
        + ["nope", ""]
    ),
    min_size=1,
    max_size=3,
).map(",".join)
FLOAT_LISTS = st.lists(FLOAT_TEXT, min_size=1, max_size=3).map(",".join)
GEN_FLAGS = {
    **TREE_FLAGS,
    **RUN_FLAGS,
    "--prompt": st.text(max_size=12),
    "--raw": None,
    "--method": st.sampled_from(["rheo", "ar", "topk", "static-traversal", "delayed-traversal", "tsubame", "nope"]),
    "--temperature": FLOAT_TEXT,
    "--threads": THREADS,
}
REPORT_FLAGS = {**TREE_FLAGS, **RUN_FLAGS, "--json": OUT_PATHS, "--prompts": INT_TEXT, "--out": OUT_PATHS}
TRAIN_FLAGS = {
    "--tiny": None,
    "--seed": INT_TEXT,
    "--epochs": INT_TEXT,
    "--windows": INT_TEXT,
    "--out": OUT_PATHS,
    "--threads": THREADS,
    "--quiet": None,
    "--force": None,
}


def _paths(files: Path, argv: list[str], leaf: str) -> list[str]:
    """Resolve symbolic path values (OUT_PATHS, --draft) to real ones."""
    argv = list(argv)
    for i, a in enumerate(argv[:-1]):
        if a in ("--json", "--out"):
            argv[i + 1] = out_path(files, argv[i + 1], leaf if a == "--json" or "train" in leaf else "")
        if a == "--draft":
            argv[i + 1] = {
                "missing": str(files / "nope.safetensors"),
                "folder": str(files / "folder"),
                "empty": str(files / "empty.json"),
            }.get(argv[i + 1], argv[i + 1])
    return argv


def _lm(files: Path, command: str, argv: list[str], leaf: str) -> Result:
    argv = _paths(files, argv, leaf)
    res = invoke([command, *argv])
    if res.reached:  # validate first, then load: only valid values may reach a model
        assert res.err.strip() == "", res.err
        bad = invalid_values(command, argv)
        assert not bad, (command, argv, "reached the model load with", bad)
    return res


def invalid_values(command: str, argv: list[str]) -> list[str]:
    """The values of `argv` outside what docs/CLI.md allows (an oracle independent of rheo's checks)."""
    a = vars(build_parser().parse_args([command, *argv]))
    bad = []

    def within(name: str, lo: float, hi: float) -> None:
        v = a.get(name)
        if v is not None and not (lo <= v <= hi):
            bad.append(f"{name}={v}")

    for f in "KS":
        within(f, 1, 49152)
    for f in "WDR":
        within(f, 1, 8192)
    within("seed", 0, 2**64 - 1)
    within("max_new_tokens", 1, 8192)
    within("threads", 1, 1024)
    within("prompts", 1, 1000)
    within("epochs", 1, 1000)
    within("windows", 1, 10**9)
    within("temperature", 0, 1e308)
    if command == "greedy":
        within("prompts", 1, 80)
        within("block", 1, 64)
        within("tokens", 1, 8192)
        if a.get("case") is not None and a.get("prompts") is not None:
            bad.append("prompts with a case")
        bad += [
            f"decoder={a['decoder']}"
            for d in a["decoder"].split(",")
            if d.strip() not in ("chain", "tree", "off-by-one")
        ]
    for name, lo, hi in (("temperatures", 0, 1e308), ("alphas", 0, 1)):
        if a.get(name) is not None:
            try:
                xs = [float(x) for x in a[name].split(",")]
                bad += [f"{name}={a[name]}" for x in xs if not lo <= x <= hi]
            except ValueError:
                bad.append(f"{name}={a[name]}")
    rheo_family = {"chain", "topk", "rheo-m0", "rheo", "rheo-m2", "rheo-rrsw"}
    static = {"static-traversal", "delayed-traversal"}
    runnable = {"ar"} | rheo_family | static | {"tsubame", "treespark"}
    if a.get("methods") is not None:
        allowed = rheo_family if command == "draft-ceiling" else runnable
        bad += [f"methods={a['methods']}" for m in a["methods"].split(",") if m.strip() not in allowed]
    if a.get("method") is not None and a["method"] not in runnable:
        bad.append(f"method={a['method']}")
    if a.get("draft") is not None and not os.path.isfile(a["draft"]):
        bad.append(f"draft={a['draft']}")
    return bad


@fuzz(60)
@given(argv=flags(GEN_FLAGS))
@example(argv=["--prompt", "x", "-D", str(10**6)])  # would have built a 10^6-level tree
@example(argv=["--prompt", "x", "--threads", "-1"])  # RuntimeError from torch.set_num_threads
@example(argv=["--prompt", "x", "--seed", str(2**64)])  # ValueError: manual_seed overflow
@example(argv=["--prompt", "x", "--temperature", "nan"])
def test_generate_argument_vectors(files, no_models, argv):
    if "--prompt" not in argv:
        argv = ["--prompt", "hi", *argv]
    _lm(files, "generate", argv, "")


@fuzz(50)
@given(argv=flags({**REPORT_FLAGS, "--temperatures": FLOAT_LISTS, "--methods": METHOD_LISTS}))
@example(argv=["--out", "under a file"])  # FileExistsError after the whole benchmark
@example(argv=["--prompts", "0"])
@example(argv=["--temperatures", "x"])  # ValueError from float()
def test_bench_model_argument_vectors(files, no_models, argv):
    _lm(files, "bench-model", argv, "bench.json")


@fuzz(50)
@given(argv=flags({**REPORT_FLAGS, "--alphas": FLOAT_LISTS, "--methods": METHOD_LISTS}))
@example(argv=["--alphas", "nan"])
@example(argv=["--methods", "ar"])
def test_draft_ceiling_argument_vectors(files, no_models, argv):
    _lm(files, "draft-ceiling", argv, "ceiling.json")


@fuzz(50)
@given(argv=flags(TRAIN_FLAGS))
@example(argv=["--epochs", "0"])  # silently trained the default 6 epochs
@example(argv=["--epochs", "-1"])  # trained nothing and saved an untrained head
@example(argv=["--windows", str(10**9)])
def test_train_draft_argument_vectors(files, no_models, argv):
    _lm(files, "train-draft", argv, "train/head.safetensors")


PAPER_FLAGS = {
    "--quick": None,
    "--out": OUT_PATHS,
    "--seed": INT_TEXT,
    "--draft": st.sampled_from(["missing", "folder", "empty"]),
    "--threads": THREADS,
    "--quiet": None,
}


@fuzz(40)
@given(argv=flags(PAPER_FLAGS))
@example(argv=["--seed", "-1"])
@example(argv=["--out", "under a file"])
def test_paper_tables_argument_vectors(files, no_models, argv):
    _lm(files, "paper-tables", argv, "")


@pytest.fixture(scope="module")
def stub_false_alarms():
    """`rheo cases --false-alarms N` runs N gate checks of the baseline decoder: replaced by the
    ReachedModel sentinel, so only argument checking is fuzzed here (its run is tested in
    tests/test_bugclasses.py)."""
    import rheo.cli.cases as cc

    mp = pytest.MonkeyPatch()
    mp.setattr(cc, "false_alarms", _reached)
    yield
    mp.undo()


CASES_FLAGS = {
    "--json": None,
    "--show": st.one_of(st.sampled_from(["bugclasses-token", "nope", ""]), st.text(max_size=8)),
    "--alpha": FLOAT_TEXT,
    "--beta": FLOAT_TEXT,
    "--false-alarms": INT_TEXT,
    "--fa-case": st.sampled_from(["bugclasses-token", "rheo-shared", "nope"]),
}


@fuzz(40)
@given(argv=flags(CASES_FLAGS))
@example(argv=["--show", "nope"])
@example(argv=["--alpha", "0"])
@example(argv=["--false-alarms", str(10**9)])
def test_cases_argument_vectors(stub_false_alarms, argv):
    invoke(["cases", *argv])


# --- greedy ----------------------------------------------------------------------------------------

GREEDY_FLAGS = {
    "--decoder": st.one_of(
        st.sampled_from(["chain", "tree", "off-by-one", "chain,off-by-one", "tree,tree", "", "x", "chain,"]),
        st.text(max_size=8),
    ),
    "--prompts": INT_TEXT,
    "--tokens": INT_TEXT,
    "--block": INT_TEXT,
    "--threads": THREADS,
    "--json": None,
    "--quiet": None,
}


@fuzz(40)
@given(path=st.sampled_from([None, "greedy", "small", "tsubame", "missing", "folder", "empty", "binary", "nul"]),
       argv=flags(GREEDY_FLAGS))  # fmt: skip
@example(path=None, argv=["--prompts", "81"])
@example(path="greedy", argv=["--prompts", "1"])
@example(path="greedy", argv=["--decoder", "chain,"])
@example(path="small", argv=["--decoder", "tree"])  # a one-token context: refused for the tree
@example(path="greedy", argv=["--block", "0"])
def test_greedy_argument_vectors(files, no_models, path, argv):
    """On a case the check runs (a table model, exact): keep --tokens and --block small so it ends;
    without one, valid arguments reach the model load and only they may (`--quiet`: stderr holds
    only the error line, not the progress bar's updates)."""
    if path is not None:
        for flag, most in (("--tokens", 6), ("--block", 4)):
            if flag in argv and argv.index(flag) + 1 < len(argv):
                i = argv.index(flag)
                argv[i + 1] = argv[i + 1] if _small_int(argv[i + 1], most) else "2"
        where = str(ROOT / "tests" / "cases" / "greedy.json") if path == "greedy" else case_path(files, path)
        argv = [where, *argv]
    res = invoke(["greedy", "--quiet", *argv])  # no progress bar on stderr; --json is a switch here
    if res.reached:  # validate first, then load: only valid values may reach a model
        assert res.err.strip() == "", res.err
        bad = invalid_values("greedy", argv)
        assert not bad, (argv, "reached the model load with", bad)


# --- the top level, --help, and the console script -------------------------------------------


@fuzz(30)
@given(
    argv=st.lists(
        st.one_of(st.sampled_from([*SUBCOMMANDS, "--help", "-h", "nope", "", "--version"]), st.text(max_size=6)),
        max_size=3,
    )
)
def test_top_level_argument_vectors(no_models, argv):
    if len(argv) >= 1 and argv[0] in SUBCOMMANDS and argv[0] not in ("audit", "mutants", "paper-tables"):
        invoke(argv)
    elif not argv or argv[0] not in ("audit", "mutants", "paper-tables"):
        invoke(argv, tally="(top level)")


# --- releases ---------------------------------------------------------------------------------------


@contextmanager
def no_index():
    """The package index and environment builds stubbed: a fixed list of releases, and a build that
    fails as a missing environment would (nothing is downloaded, nothing cached outside a temp folder)."""
    import tempfile

    from rheo.cli import releases as R
    from rheo_ref.errors import EnvironmentFailure

    def no_build(*args, **kwargs):
        raise EnvironmentFailure("no environment is built under fuzzing")

    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as cache:
        mp.setenv("RHEO_CACHE", cache)
        mp.setattr(R, "index_versions", lambda package: ["0.1.0", "0.1.1", "0.2.0"])
        for name in ("ensure_release", "ensure_base", "_pip"):
            mp.setattr(R, name, no_build)
        yield


@fuzz(30)
@given(
    argv=st.lists(
        st.one_of(
            st.sampled_from(["--decoder", "flashspec", "vllm", "nope", "--versions", "0.1.0,0.2.0", ">=0.1,<0.2", "--rows",
                             "quick", "all", "--seeds", "1,2", "--bisect", "0.1.0..0.2.0", "0.2.0..0.1.0", "--list"]),
            st.text(max_size=6),
        ),
        max_size=6,
    )
)  # fmt: skip
def test_releases_argument_vectors(argv):
    with no_index():
        invoke(["releases", *argv])


@pytest.mark.parametrize("command", SUBCOMMANDS)
def test_every_subcommand_is_fuzzed_and_documents_its_exit_status(command):
    """A new subcommand must get a strategy here (and --help works for each)."""
    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    assert set(sub.choices) == set(SUBCOMMANDS)
    res = invoke([command, "--help"])
    assert res.rc == 0 and "usage:" in res.out


CONSOLE = [
    ["exact", "{nested}"],
    ["exact", "{small}", "--tokens", "1000000"],
    ["sample", "{small}", "--samples", "0", "--seed", "1"],
    ["generate", "--prompt", "x", "-K", "0"],
    ["nope"],
]


@pytest.mark.parametrize("argv", CONSOLE, ids=lambda a: " ".join(a)[:40])
def test_the_console_script_exits_cleanly(files, argv):
    """The installed `rheo` script (falls back to `python -m rheo`) on a few inputs, in a real process."""
    nested = files / "nested.json"
    nested.write_text("[" * 100_000 + "]" * 100_000)
    argv = [a.format(nested=nested, small=files / "small.json") for a in argv]
    script = Path(sys.executable).parent / "rheo"
    cmd = [str(script)] if script.exists() else [sys.executable, "-m", "rheo"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    r = subprocess.run(cmd + argv, capture_output=True, text=True, timeout=120, env=env)
    COUNTS["(console script)"] += 1
    assert_contract(Result(r.returncode, r.stdout, r.stderr), argv)
    assert r.returncode == 2, r.stderr


# --- one generator per class of hostile input found outside this harness ---------------

# 1. numbers: texts a reader would not read as a number, in every place a user writes one
NUMBER_TEXT = st.one_of(
    st.sampled_from(["\u0661/\u0664", "\uff11", "1_0", "1 0", " 1", "+1/4", "1/0", "1e\u0661\u0660", "1e1001",
                     "1e999999999", "9" * 41, "1/" + "9" * 4000, "nan", "-inf", ".5", "1.", "0x10", "1/3", "0.25"]),
    st.text(alphabet=st.sampled_from("0123456789/.eE+-_ \u0660\u0661\u06f1\uff11\u00a0"), min_size=1, max_size=12),
)  # fmt: skip
GRAMMAR = re.compile(r"-?[0-9]{1,40}(/[0-9]{1,40}|(\.[0-9]+)?([eE][+-]?[0-9]+)?)")  # the oracle: docs/CLI.md


def in_grammar(text: str) -> bool:
    if len(text) > 1000 or not GRAMMAR.fullmatch(text):
        return False
    exp = re.search(r"[eE]([+-]?[0-9]+)$", text)
    return not (exp and abs(int(exp.group(1))) > 1000) and not re.search(r"/0+$", text)


@fuzz(40)
@given(text=NUMBER_TEXT, where=st.sampled_from(["row", "proxy", "theta", "flag", "temperature", "ensemble"]))
def test_every_user_number_reads_one_grammar(files, stub_gate_hf, text, where):
    case = copy.deepcopy(SMALL)
    argv = ["exact", str(files / "num.json"), *CHEAP]
    if where == "row":
        key = next(iter(case["target"]["probs"]))
        case["target"]["probs"][key][0] = text
    elif where == "proxy":
        case["scheme"]["proxy"] = f"const:{text}"
    elif where == "theta":
        case = {**SMALL_TREESPARK, "scheme": {**SMALL_TREESPARK["scheme"], "theta": text}}
    elif where == "flag":
        argv += ["--tokens", text]
    elif where == "temperature":
        argv = ["sample", str(files / "num.json"), "--samples", "2", "--seed", "1", "--temperature", text]
    else:
        argv = ["gate-hf", str(files / "num.json"), "--decoder", f"ensemble:{text}"]
    (files / "num.json").write_text(json.dumps(case))
    res = invoke(argv)
    if not in_grammar(text):
        assert res.rc == 2, (where, text, res.err)


# 2. sweeps: every input refused up front, before any file is written
SWEEP_CHANGES = st.one_of(
    st.fixed_dictionaries({"temperatures": st.lists(NUMBER_TEXT, min_size=1, max_size=2)}),
    st.fixed_dictionaries({"tokens": st.sampled_from([20, 10**6, 10**39, 0, -1, True])}),
    st.fixed_dictionaries({"tables": st.sampled_from([
        [{"generator": "random", "vocab_size": 3, "seeds": [2**63]}],
        [{"generator": "random", "vocab_size": 3, "seeds": list(range(60_000))}],
        [{"generator": "zipf", "vocab_size": 10**6, "seeds": [0]}],
    ])}),
    st.fixed_dictionaries({"max_law_size": st.sampled_from([0, 1, None, "x", 10**40])}),
)  # fmt: skip
ENGINE_FLAGS = {
    "--workers": st.sampled_from(["0", "1025", "10000000", "\u0662"]),
    "--scheduler": st.sampled_from(["tls://127.0.0.1:1", "ws://h:1", "tcp://h:0", "tcp://h:99999"]),
}


@fuzz(30)
@given(change=SWEEP_CHANGES, argv=flags(ENGINE_FLAGS))
def test_sweep_refuses_before_any_work(files, change, argv):
    grid = files / "grid25.json"
    grid.write_text(json.dumps({**GRID, "temperatures": ["1"], **change}))
    out = files / "sweep25"
    if (out / "sweep.csv").exists():
        (out / "sweep.csv").unlink()
    res = invoke(["sweep", str(grid), "--out", str(out), "--workers", "1", *argv, "--no-plot", "--no-progress"])
    if res.rc == 2:
        assert not (out / "sweep.csv").exists(), res.err


@fuzz(15)
@given(table=st.one_of(st.binary(max_size=80), st.sampled_from([b"", b"case_hash,method\n" * 3, b"\xff" * 10])))
def test_sweep_resumes_only_from_its_own_tables(files, table):
    from rheo_ref.grid import COLUMN_NAMES

    out = files / "resume25"
    out.mkdir(exist_ok=True)
    header = ",".join(COLUMN_NAMES).encode() + b"\n"
    (out / "sweep.csv").write_bytes(table if table[:1] == b"\xff" else header + table)
    grid = files / "grid25r.json"
    grid.write_text(json.dumps({**GRID, "temperatures": ["1"], "schemes": GRID["schemes"][:1]}))
    invoke(["sweep", str(grid), "--out", str(out), "--workers", "1", "--no-plot", "--no-progress"])


# 3. gate-hf and mutants: sizes nobody can pay for
@fuzz(20)
@given(
    tv=st.sampled_from(["1e-6", "1e-4", "0.001", "0.1"]),
    gen=st.sampled_from(["temperature=1e-300", "temperature=1e-320", "temperature=0.01", "temperature=" + "9" * 50]),
    case=st.sampled_from([{"tokens": 10**6}, {"tokens": 65}, {"context": [0] * 20_000}, {"context": []}, {}]),
)
def test_gate_hf_and_mutants_refuse_what_they_cannot_pay_for(files, stub_gate_hf, stub_mutants, tv, gen, case):
    path = files / "gate25.json"
    path.write_text(json.dumps({**SMALL, **case}))
    invoke(["gate-hf", str(path), "--decoder", "assisted", "--tv", tv, "--gen", gen])
    invoke(["mutants", "--tv", tv, "--seeds", "0", "--only", "fills-first", "fills-first"])


# 4. deep structures: nesting in grids and cases, deep tsubame plans
@fuzz(15)
@given(depth=st.sampled_from([65, 500, 3000, 100_000]), kind=st.sampled_from(["grid", "case"]), D=st.integers(1, 600))
def test_deep_structures_are_refused_or_run(files, depth, kind, D):
    path = files / "deep25.json"
    path.write_text("[" * depth + "]" * depth)
    if kind == "grid":
        invoke(["sweep", str(path), "--out", str(files / "deep-out"), "--workers", "1"])
    else:
        invoke(["exact", str(path)])
    tsubame = {**SMALL, "tokens": 1, "scheme": {"family": "tsubame", "K": 1, "W": 1, "D": D, "R": min(D, 256),
                                                "sampling": "wor", "verify": "traversal"}}  # fmt: skip
    path.write_text(json.dumps(tsubame))
    invoke(["exact", str(path), *CHEAP])


# 6. the environment: long argument lists
@fuzz(10)
@given(n=st.sampled_from([1001, 5000, 100_000]), word=st.sampled_from(["--force", "-x", "\u0661", "a" * 100]))
def test_long_argument_lists_are_refused_before_parsing(files, n, word):
    res = invoke(["exact", str(files / "small.json"), *([word] * n)])
    assert res.rc == 2, res.err


# 7. signals: Ctrl-C at any cell keeps the cells finished before it
@fuzz(8)
@given(at=st.integers(0, 3))
def test_ctrl_c_at_any_cell_keeps_the_finished_ones(files, at):
    import rheo.sweep as sw
    from rheo.sweep import read_table

    out = files / f"ctrl-c-{at}"
    grid = files / "grid25c.json"
    grid.write_text(json.dumps({**GRID, "temperatures": ["1", "1/2"]}))
    real, calls = sw.run_cell, []

    def interrupt(cell):
        if len(calls) == at:
            raise KeyboardInterrupt
        calls.append(cell)
        return real(cell)

    mp = pytest.MonkeyPatch()
    mp.setattr(sw, "run_cell", interrupt)
    try:
        res = invoke(["sweep", str(grid), "--out", str(out), "--workers", "1", "--no-plot", "--no-progress"])
    finally:
        mp.undo()
    assert res.rc == 130
    assert len(read_table(out / "sweep.csv")) == at


# 8. quieter edges: a name given twice runs once; failed cells, --retry-failed
@fuzz(10)
@given(names=st.lists(st.sampled_from(["fills-first", "leq-coin", "bonus-full-p"]), min_size=1, max_size=4))
def test_a_mutant_named_twice_runs_once(stub_mutants, names):
    import rheo.cli.mutants as cm

    ran: list[str] = []
    mp = pytest.MonkeyPatch()
    mp.setattr(cm, "mutant_rows", lambda case, names, **kw: ran.extend(names) or [])
    try:
        res = invoke(["mutants", "--seeds", "0", "--only", *names])
    finally:
        mp.undo()
    if res.rc == 0:
        assert sorted(ran) == sorted(set(names)), (names, ran)


@fuzz(8)
@given(retry=st.booleans(), workers=st.sampled_from(["1", "2"]))
def test_failed_cells_exit_1_and_retry_failed_runs_them_again(files, retry, workers):
    grid, out = files / "grid25f.json", files / f"failed25-{COUNTS['sweep']}"
    argv = ["sweep", str(grid), "--out", str(out), "--workers", workers, "--no-progress"]
    for max_trees in (1, None):  # every cell refused, then none: kept as failed, or run again with --retry-failed
        cells = {"schemes": GRID["schemes"][:1], "temperatures": ["1"], "method": "brute", "max_trees": max_trees}
        grid.write_text(json.dumps({**GRID, **cells}))
        res = invoke(argv + (["--retry-failed"] if retry and max_trees is None else []))
        failed = max_trees == 1 or not retry
        assert res.rc == (1 if failed else 0) and all(bool(r["error"]) == failed for r in read_rows(out)), res.err


def read_rows(out: Path) -> list[dict]:
    from rheo.sweep import read_table

    return read_table(out / "sweep.csv")
