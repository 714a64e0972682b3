"""A decoder under test is one registry entry (`rheo.decoders`; docs/DECODERS.md): a toy decoder added from
inside this test, through `rheo.decoders.register` alone, shows in `rheo gate --help` (its line and its
`--gen` keys), is gated end to end by `rheo gate --decoder toy` (the correct toy passes with exact TV 0,
a broken twin is rejected with its exact TV), has its `--gen` keys and arguments checked, and joins the
fuzz harness's list of decoders. A toy decoder *folder* on the package's path (a temporary directory
added to `rheo.decoders.__path__`) is discovered with no edit to any shared file and runs the same way,
its verdict table included (`rheo gate --rows`). A decoder that needs an edit outside its folder fails here.

The toy is pure Python (no transformers): each sample draws its tokens one by one from the processed
target rows with a seeded `random.Random`, so its law is the target law exactly. Its broken twin,
`toy-broken:W`, mixes the first token's row with the uniform row at weight W: exact TV > 0.
"""

from __future__ import annotations

import importlib.util
import json
import random
import re
import sys
from fractions import Fraction
from pathlib import Path
from typing import Any

import pytest
from helpers import CASES, run_cli

import rheo.decoders
from rheo.decoders import Decoder, DecoderRun, decoders, discover, examples, register, unregister
from rheo_ref.errors import CaseError
from rheo_ref.exact import target_law
from rheo_ref.models import Case
from rheo_ref.numbers import rational

CASE = str(CASES / "small.json")


def _draw(row: list[float], rng: random.Random) -> int:
    u, acc = rng.random(), 0.0
    for y, w in enumerate(row):
        acc += w
        if u < acc:
            return y
    return max(y for y, w in enumerate(row) if w > 0)


def toy_decode(case: Case, context: list[int], n: int, seed: int, num_samples: int, run: Any) -> list[tuple[int, ...]]:
    p = run.processing().table(case.target)
    w = run.arg or Fraction(0)
    rng = random.Random(seed)
    out = []
    for _ in range(num_samples):
        ctx = tuple(context)
        for k in range(n):
            row = [float(x) for x in p.row(ctx)]
            if k == 0 and w:  # the broken twin: the first token's row mixed with the uniform row
                row = [(1 - float(w)) * x + float(w) / len(row) for x in row]
            ctx += (_draw(row, rng),)
        out.append(ctx[len(context) :])
    return out


def toy_law(case: Case, n: int, run: Any) -> dict:
    p = run.processing().table(case.target)
    law: dict = {(): Fraction(1)}
    w = run.arg or Fraction(0)
    for k in range(n):
        nxt: dict = {}
        for seq, pr in law.items():
            row = p.row(tuple(case.context) + seq)
            for y, x in enumerate(row):
                x = (1 - w) * x + w / len(row) if k == 0 else x
                if x:
                    nxt[seq + (y,)] = nxt.get(seq + (y,), 0) + pr * x
        law = nxt
    return law


def weight(text: str) -> Fraction:
    w = rational(text, "toy-broken:W")
    if not 0 < w <= 1:
        raise CaseError(f"decoder 'toy-broken:{text}': W must be in (0, 1]")
    return w


TOY = Decoder(
    name="toy",
    summary="a pure-Python toy: tokens drawn from the processed target rows",
    decode=toy_decode,
    gen_keys=("temperature",),
    gen_help="temperature (1/k)",
    exact_law=toy_law,
    min_context=0,
    requires=(),
)
BROKEN = Decoder(
    name="toy-broken",
    summary="the toy with its first token mixed with the uniform row at weight W (lossy)",
    decode=toy_decode,
    gen_keys=("temperature",),
    exact_law=toy_law,
    arg="W",
    parse_arg=weight,
    min_context=0,
    requires=(),
    examples=("toy-broken:1/2",),
)


@pytest.fixture
def toys():
    register(TOY)
    register(BROKEN)
    yield
    unregister("toy")
    unregister("toy-broken")


REPO_DECODERS = Path(rheo.decoders.__file__).parent


def test_the_built_in_decoders_are_discovered():
    """Every folder of rheo/decoders whose __init__.py defines DECODER is registered, none else, in `(order,
    name)`; each declares its verdict table; a served one (its own environment) requires nothing here and
    installs with make. Properties, not a list: a new folder passes with no edit here."""
    folders = {d.name for d in REPO_DECODERS.iterdir() if re.search(r"^DECODER = ", _init(d), re.M)}
    known = decoders()
    assert list(known) == [d.name for d in discover()]
    assert {d.name.replace("-", "_").partition(":")[0] for d in known.values()} >= folders
    assert len(known) == len(folders) >= 2
    assert [(d.order, d.name) for d in known.values()] == sorted((d.order, d.name) for d in known.values())
    assert all(d.table is not None and d.table.rows for d in known.values())
    for d in known.values():
        if d.env is not None:
            assert d.requires == () and d.install.startswith(f"pip install {d.package or d.env}"), d.name
        package, _ = d.distribution()  # a third party's package, transformers' own, or rheo's
        expected = d.package or ("transformers" if "transformers" in d.requires else None)
        assert package == expected, d.name
    built_in = next(iter(known))
    with pytest.raises(CaseError, match="built in"):
        unregister(built_in)
    for d in known.values():  # the folder's spelling (_ for -) is accepted
        assert DecoderRun.head(d.name.replace("-", "_")) == d.name


def _init(folder: Path) -> str:
    init = folder / "__init__.py"
    return init.read_text(encoding="utf-8") if folder.is_dir() and init.exists() else ""


def test_an_absent_served_package_names_its_install_line(tmp_path, monkeypatch, capsys):
    """`rheo gate --decoder vllm` where vLLM is importable nowhere (not here, not in rheo's own
    .venv-vllm: the repository root moved to an empty folder): exit 2 with one line naming the
    package and its install line, before any work."""
    import rheo.decoders.served

    (tmp_path / "envs").mkdir()
    (tmp_path / "envs" / "vllm.txt").write_text("vllm==0.33.0\n")
    monkeypatch.setattr(rheo.decoders.served, "REPO", tmp_path)
    monkeypatch.delenv("RHEO_SERVED_PYTHON", raising=False)
    if importlib.util.find_spec("vllm") is not None:
        pytest.skip("vllm is importable in this interpreter: the absent case cannot be made here")
    for argv in (["gate", CASE], ["gate"], ["gate-served", CASE]):
        code, out, err = run_cli(capsys, *argv, "--decoder", "vllm", *(["--rows", "all"] if argv == ["gate"] else []))
        assert code == 2 and "vllm is not installed" in err and "pip install vllm==" in err and out == "", (argv, err)
        assert len(err.strip().splitlines()) == 1, err


def _help(capsys) -> str:
    with pytest.raises(SystemExit):
        run_cli(capsys, "gate", "--help")
    return capsys.readouterr().out


def _summary_columns(out: str) -> dict[str, int]:
    """Each decoder's line in `rheo gate --help` (`  NAME[:ARG]  summary`): where its summary starts."""
    block = out[out.index("\ndecoders:\n") :]
    block = block[: block.index("\n--gen KEY=VALUE")]
    return {
        m["name"]: m.start("summary") - m.start() for m in re.finditer(r"(?m)^  (?P<name>\S+) +(?P<summary>\S)", block)
    }


def test_toy_decoder_help_and_checks(toys, capsys):
    out = _help(capsys)
    cols = _summary_columns(out)
    assert {"toy", "toy-broken:W"} <= set(cols) and len(set(cols.values())) == 1, cols  # one summary column
    assert "a pure-Python toy" in out and "temperature (1/k)" in out
    assert DecoderRun.parse("toy-broken:1/4").arg == Fraction(1, 4)
    for name, gen, msg in [
        ("toy", {"top_k": 2}, "allowed: temperature"),
        ("toy:1", {}, "allowed: assisted"),
        ("toy-broken", {}, "toy-broken:W"),
        ("toy-broken:2", {}, "W must be in"),
    ]:
        with pytest.raises(CaseError, match=msg):
            DecoderRun.parse(name, gen)


def test_a_long_name_keeps_the_help_in_columns(capsys):
    """The summary column is as wide as the longest `NAME[:ARG]`, whatever it is."""
    long = Decoder(name="a-decoder-name-of-forty-characters-long", summary="long\nsecond line", decode=toy_decode,
                   arg="WEIGHT", parse_arg=weight, min_context=0, requires=())  # fmt: skip
    register(long)
    try:
        out = _help(capsys)
    finally:
        unregister(long.name)
    cols = _summary_columns(out)
    assert cols[long.spelling] == 2 + len(long.spelling) + 1 and len(set(cols.values())) == 1, cols
    assert "\n" + " " * cols[long.spelling] + "second line\n" in out  # later lines under the first


def test_a_decoders_min_context_is_the_librarys_check(capsys):
    """`min_context` is refused by the gate's sampler (the library), before any decoding: the same line
    through `rheo gate` and through `gate_hf` / `DecoderRun.sampler`; a decoder of no package is reported
    as none (`-`), not as transformers."""
    from rheo.decoders.gate import gate_hf

    needy = Decoder(name="toy-needy", summary="needs two tokens of context", decode=toy_decode, min_context=2,
                    requires=())  # fmt: skip
    register(needy)
    try:
        case = Case.from_json(json.loads((CASES / "small.json").read_text()))  # context [0]: one token
        run = DecoderRun.parse("toy-needy")
        msg = r"decoder toy-needy needs a case context of at least 2 tokens; the case's is \[0\]"
        with pytest.raises(CaseError, match=msg):
            run.sampler(case)
        with pytest.raises(CaseError, match=msg):
            gate_hf(case, run, alpha=1e-3, tv=0.2, seed=1, tokens=1)
        code, out, err = run_cli(capsys, "gate", CASE, "--decoder", "toy-needy", "--tokens", "1")
        assert code == 2 and re.search(msg, err) and out == "", err
        assert needy.distribution() == (None, None)
    finally:
        unregister("toy-needy")


def test_toy_decoder_is_gated_end_to_end(toys, capsys):
    """α = 1e-3, δ = 0.15 with power 0.99 on the first 2 tokens of small.json: the toy passes (its exact TV
    is 0), the broken twin at W = 1 (first token uniform; exact TV 1/6 > δ) is rejected."""
    code, out, err = run_cli(capsys, "gate", CASE, "--decoder", "toy", "--tokens", "2", "--tv", "0.15")
    res = json.loads(out)
    assert code == 0 and res["verdict"] == "pass" and res["exact_tv"] == "0", out + err
    assert res["decoder"] == "toy" and res["tv"] == 0.15 and res["detectable_tv"] <= 0.15
    code, out, err = run_cli(capsys, "gate-hf", CASE, "--decoder", "toy-broken:1", "--tokens", "2", "--tv", "0.15")
    res = json.loads(out)
    case = Case.from_json(json.loads((CASES / "small.json").read_text()))
    exact = toy_law(case, 2, DecoderRun.parse("toy-broken:1"))
    assert Fraction(res["exact_tv"]) == sum(abs(exact.get(s, 0) - t) for s, t in target_law(case, 2).items()) / 2
    assert Fraction(res["exact_tv"]) > Fraction(15, 100)  # detectable by design
    assert code == 1 and res["verdict"] == "REJECT", out + err


def test_toy_decoder_joins_the_fuzz_harness(toys, monkeypatch):
    """The fuzz harness's list of decoders is the registry's: the toys are in it, and valid names of every
    decoder reach the sampling (stubbed) through `rheo gate`."""
    import test_fuzz

    import rheo.decoders.gate

    assert {"toy", "toy-broken:1/2"} <= set(examples())
    monkeypatch.setattr(rheo.decoders.gate, "gate_checked", test_fuzz._reached)
    assert test_fuzz.decoders_reach_the_sampling(CASE) == test_fuzz.runnable_examples(CASE)
    assert {"toy", "toy-broken:1/2"} <= set(test_fuzz.runnable_examples(CASE))


FOLDER = """
from rheo.decoders import Decoder, Row, Table
from test_decoder_registry import CASE, toy_decode, toy_law, weight

DECODER = Decoder(
    name="folder-toy",
    summary="a toy decoder in a folder of its own",
    decode=toy_decode,
    gen_keys=("temperature",),
    gen_help="temperature (1/k), in its folder",
    exact_law=toy_law,
    arg="W",
    parse_arg=weight,
    min_context=0,
    requires=(),
    examples=("folder-toy:1/100",),
    order=5,
    table=Table(
        case=CASE,
        tokens=2,
        tv=0.15,
        rows=(Row("W=1/100", {}, arg="1/100"), Row("W=1 control", {}, arg="1", control=True)),
    ),
)
"""


@pytest.fixture
def toy_folder(tmp_path, monkeypatch):
    """A folder `toy_folder/` holding a decoder, on `rheo.decoders.__path__` (as if it were in the repository)."""
    (tmp_path / "toy_folder").mkdir()
    (tmp_path / "toy_folder" / "__init__.py").write_text(FOLDER)
    monkeypatch.setattr(rheo.decoders, "__path__", [*rheo.decoders.__path__, str(tmp_path)])
    yield
    sys.modules.pop("rheo.decoders.toy_folder", None)


def test_a_decoder_folder_is_discovered_and_runs_end_to_end(toy_folder, capsys, tmp_path, monkeypatch):
    """Discovered first (order 5), in the help with its --gen keys, gated (W = 1/100: exact TV 1/600 < δ =
    0.15, pass at α = 1e-3; W = 1, the control: TV 1/6 > δ, REJECT), its table reproduced by `--rows`, and in
    the fuzz harness's list."""
    import test_fuzz

    import rheo.decoders.gate

    names = list(decoders())
    assert names[0] == "folder-toy" and all(decoders()[n].order > 5 for n in names[1:])
    out = _help(capsys)
    assert re.search(r"\n  folder-toy:W +a toy decoder in a folder of its own\n", out), out
    assert "temperature (1/k), in its folder" in out
    code, out, err = run_cli(capsys, "gate", CASE, "--decoder", "folder-toy:1/100", "--tokens", "2", "--tv", "0.15")
    res = json.loads(out)
    assert code == 0 and res["verdict"] == "pass" and res["exact_tv"] == "1/600", out + err
    report = tmp_path / "rows.json"
    code, out, err = run_cli(
        capsys, "gate", "--decoder", "folder-toy", "--rows", "all", "--seeds", "1,2", "--json", str(report)
    )
    rows = json.loads(report.read_text())
    assert code == 0 and [r["setting"] for r in rows] == ["W=1/100", "W=1 control"], out + err
    assert rows[0]["verdicts"] == ["pass", "pass"] and rows[1]["verdicts"] == ["REJECT", "REJECT"], rows
    assert rows[1]["exact_tv"] == "1/6" and rows[1]["expected"] == "REJECT" and rows[0]["N"] > 0
    assert {"decoder", "package", "version", "path", "setting", "exact_tv", "verdicts", "N", "detectable_tv",
            "seconds"} <= set(rows[0])  # fmt: skip
    assert "| folder-toy:1 | - | W=1 control |" in out  # the markdown rows (no package: not transformers')
    assert rows[0]["package"] is None and rows[0]["version"] is None
    monkeypatch.setattr(rheo.decoders.gate, "gate_checked", test_fuzz._reached)
    assert "folder-toy:1/100" in examples() and "folder-toy:1/100" in test_fuzz.decoders_reach_the_sampling(CASE)
