"""The package index's speculative samplers under the gate (docs/ECOSYSTEM.md): the verdict table matches
the registry, the shared chain law is the algorithm's, the adapter helpers of `rheo.testing` give the table's
logits, and one quick row per package (skipped, naming the install line, where the package is absent); the
full tables are `slow`. Each row's α is Bonferroni over its table and both seeds (tests/helpers.verdict_row),
δ the table's (0.25 on tests/cases/hf.json, 4 tokens; rotalabs-accel's k = 3 rows 0.1)."""

from __future__ import annotations

import re
from fractions import Fraction
from pathlib import Path

import pytest
from helpers import verdict_row

from rheo.decoders import DecoderRun, decoders
from rheo.decoders import ecosystem as eco
from rheo.decoders.rows import expected
from rheo_ref.models import load_case

ROOT = Path(__file__).resolve().parents[2]

# (decoder, module it needs, its quick row)
PACKAGES = (
    ("speculative-decoding", "speculative_decoding", "T=1"),
    ("specdec", "specdec", "gamma 3"),
    ("mini-infer", "mini_infer", "T=1 k=3"),
    ("rotalabs-accel", "rotalabs_accel", "verify_tokens T=1 k=1"),
    ("economize", "economize", "rejection T=1 k=3"),
    ("srep-moe", "srep_moe", "T=1 gamma 3"),
    ("dflash", "dflash", "T=1 block 4"),
    ("csaq-quant", "csaq", "T=1 lookahead 4"),
)


def _pins() -> dict[str, str]:
    out = {}
    for ln in (ROOT / "constraints.txt").read_text().splitlines():
        m = re.fullmatch(r"([A-Za-z0-9._-]+)==(\S+)", ln.split("#")[0].strip())
        if m:
            out[m.group(1).lower()] = m.group(2)
    return out


def test_the_doc_table_matches_the_registry():
    """Every package of the table is a registered decoder's, at its pinned version, with exactly its table's
    settings in order; each line's cause is the row's, its exact TV the one the registry computes now, and
    its verdicts the ones that exact TV promises (pass at 0, REJECT above δ or for a control)."""
    lines = eco.rows_of((ROOT / "docs" / "ECOSYSTEM.md").read_text(encoding="utf-8"))
    by_package = {d.package: d for d in decoders().values() if d.package}
    pins = _pins()
    seen: dict[str, list[str]] = {}
    for cell in lines:
        dec = by_package[cell["package"]]
        assert cell["version"] == pins[cell["package"]], cell
        seen.setdefault(cell["package"], []).append(cell["setting"])
        assert dec.table is not None
        row = dec.table.resolved(dec.table.row(cell["setting"]))
        run = DecoderRun.parse(dec.name if row.arg is None else f"{dec.name}:{row.arg}", dict(row.gen))
        case = load_case(str(ROOT / str(row.case)))
        from rheo.decoders.gate import exact_tv_of

        etv = exact_tv_of(run, case, row.tokens or case.tokens)
        assert cell["exact TV"] == eco.exact_cell(None if etv is None else float(etv)), cell
        if row.runs_here:
            assert cell["verdict"] == "cannot run" and cell["N"] == "-", cell
            continue
        assert cell["cause"] == (row.cause or "-"), cell
        verdicts = [v.strip("*") for v in cell["verdict"].split(", ")]
        assert len(verdicts) == 2 and int(cell["N"]) > 0, cell
        want = expected(etv, float(row.tv or 0), row.control)
        assert want is None or verdicts == [want, want], cell
    for package, settings in seen.items():
        table = by_package[package].table
        assert table is not None and settings == [r.setting for r in table.rows], package
    assert {name for name, _, _ in PACKAGES} <= {by_package[p].name for p in seen}


def test_rewrite_replaces_one_packages_lines_only():
    text = (ROOT / "docs" / "ECOSYSTEM.md").read_text(encoding="utf-8")
    before = eco.rows_of(text)
    new = "| specdec | 0.2.0 | gamma 3 | pass, pass | 0 | 1 | - |"
    after = eco.rows_of(eco.rewrite(text, "specdec", [new]))
    assert [c for c in after if c["package"] != "specdec"] == [c for c in before if c["package"] != "specdec"]
    assert [c for c in after if c["package"] == "specdec"] == [eco.cells(new)]


@pytest.mark.parametrize("temperature", [1, 0.5])
def test_the_shared_chain_law_is_the_algorithms(temperature):
    """`rheo.decoders.chain_law` at lenience 1 with the algorithm's residual is `laws.Chain` (the law that
    transformers' assisted decoding is gated with), exactly, for every draft length."""
    from rheo.decoders import chain_law
    from rheo.decoders.laws import Chain, Processing, table_drafter, table_row

    case = load_case(str(ROOT / "tests" / "cases" / "hf.json"))
    proc = Processing.from_gen({"temperature": temperature})
    p, q = proc.table(case.target), proc.table(case.q_samp_model)
    for gamma in (1, 2, 3):
        mine = chain_law.token_law(p, q, case.context, 3, gamma)
        theirs = Chain(p, table_drafter(q), table_row(q), cap=gamma, horizon=4).token_law(case.context, 3)
        assert {k: v for k, v in mine.items() if v} == {k: v for k, v in theirs.items() if v}
        assert sum(mine.values()) == 1


def test_the_one_token_residual_differs_from_the_algorithms():
    from rheo.decoders.chain_law import algorithm_residual, one_token_residual

    p, q = (Fraction(1, 2), Fraction(1, 4), Fraction(1, 4)), (Fraction(1, 10), Fraction(7, 10), Fraction(1, 5))
    assert algorithm_residual(p, q, 1) == (Fraction(8, 9), Fraction(0), Fraction(1, 9))
    assert one_token_residual(p, q, 1) == (Fraction(2, 3), Fraction(0), Fraction(1, 3))


def test_srep_moe_law_puts_p_x_times_2_minus_p_x_on_the_draft():
    """srep-moe's rule on one token, written out: the argmax draft x kept with p(x), else a token from p itself,
    so x has p(x)(2 − p(x)) and y ≠ x has (1 − p(x))·p(y); the registered exact law must say so."""
    case = load_case(str(ROOT / "tests" / "cases" / "hf.json"))
    run = DecoderRun.parse("srep-moe", {"gamma": 3, "temperature": 1})
    law = decoders()["srep-moe"].exact_law(case, 1, run)
    p, q = case.target.row(tuple(case.context)), case.q_samp_model.row(tuple(case.context))
    x = q.index(max(q))
    assert law == {(y,): p[x] * (2 - p[x]) if y == x else (1 - p[x]) * p[y] for y in range(len(p))}


def test_csaq_quant_refuses_a_case_its_law_does_not_cover():
    from dataclasses import replace

    from rheo_ref.errors import CaseError
    from rheo_ref.models import TableModel

    case = load_case(str(ROOT / "tests" / "cases" / "hf.json"))
    two = TableModel(4, 2, dict(case.target.probs), "target")
    with pytest.raises(CaseError, match="context_length 2"):
        decoders()["csaq-quant"].check_case(replace(case, target=two), None)


def test_table_module_gives_the_table_lms_logits():
    torch = pytest.importorskip("torch")
    pytest.importorskip("transformers")
    from rheo.testing import table_lm, table_module

    case = load_case(str(ROOT / "tests" / "cases" / "hf.json"))
    ids = torch.tensor([[0, 3, 1, 2, 2], [1, 1, 0, 3, 2]])
    want = table_lm(case.target)(input_ids=ids).logits
    got = table_module(case.target, dtype=torch.float64)(ids)
    assert torch.equal(got, want)
    logits, (kv, rest) = table_module(case.target, cache=True)(ids[0], cache="ignored", seq_start_pos=0)
    assert logits.shape == (5, 4) and kv.shape == (1, 1, 5, 1) and rest is None


def test_decode_batches_keeps_n_tokens_a_row_and_refuses_short_or_missing_rows():
    torch = pytest.importorskip("torch")
    from rheo.testing import decode_batches
    from rheo_ref.errors import CaseError

    def fn(prompt):
        return torch.randint(0, 4, (prompt.shape[0], 5))

    a = decode_batches(fn, [1, 2], 3, 7, 10, batch=4)
    assert len(a) == 10 and all(len(s) == 3 for s in a)
    assert a == decode_batches(fn, [1, 2], 3, 7, 10, batch=4)  # seeded
    with pytest.raises(CaseError, match="fewer than 6"):
        decode_batches(fn, [1], 6, 0, 1)
    with pytest.raises(CaseError, match="2 rows for a batch of 3"):
        decode_batches(lambda p: [[0] * 3] * 2, [1], 3, 0, 3, batch=3)
    with pytest.raises(CaseError, match="batch=0"):
        decode_batches(fn, [1], 3, 0, 3, batch=0)


@pytest.mark.parametrize(("name", "module", "setting"), PACKAGES)
def test_quick_row(name, module, setting, request):
    pytest.importorskip(module, reason=f"{name}: {decoders()[name].install}")
    verdict_row(name, setting, request.node.nodeid)


def test_rotalabs_accel_speculative_decode_crashes_in_its_own_code(request):
    pytest.importorskip("rotalabs_accel", reason=decoders()["rotalabs-accel"].install)
    r = verdict_row(
        "rotalabs-accel", "speculative_decode (SAMPLING)", request.node.nodeid, error="unexpected keyword argument"
    )
    assert "use_sampling" in r["error"]


SLOW = [(n, m, r.setting) for n, m, quick in PACKAGES for r in decoders()[n].table.rows if r.setting != quick]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "module", "setting"), [s for s in SLOW if "speculative_decode (" not in s[2]])
def test_slow_row(name, module, setting, request):
    pytest.importorskip(module, reason=f"{name}: {decoders()[name].install}")
    verdict_row(name, setting, request.node.nodeid)


def test_the_gate_docs_package_index_example_runs_as_written(monkeypatch):
    """docs/GATE.md's example: speculative-decoding at batch 4 passes, its lenience 3 (exact TV 0.339 > δ) is
    rejected; α = 1e-3, δ = 0.25."""
    pytest.importorskip("speculative_decoding", reason=decoders()["speculative-decoding"].install)
    from helpers import doc_example

    monkeypatch.chdir(ROOT)
    exec(compile(doc_example("decode_batches(batch"), "docs/GATE.md", "exec"), {})
