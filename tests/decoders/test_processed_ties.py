"""Ties at a cut are the caller's to name, through `rheo.processed`, `--gen ties=...` and the decoders'
laws (`rheo.decoders.laws.Processing`, the reference's `keep_largest`): a top-k or top-p cut between
tied tokens is refused naming the row, the tokens and the options; each rule gives its own exact law;
a decoder that keeps exactly k tokens (a stable sort and a scatter, as `torch.topk` decoders do) passes
the gate under ties="low" and is rejected under transformers' rule "all", which transformers' own
sampling passes; an engine's decoder declares its engine's rule; a draft row's tie is never refused."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch

import rheo
from rheo.cli.main import main
from rheo.decoders import DecoderRun
from rheo.decoders.gate import gate_hf
from rheo.decoders.laws import Processing
from rheo_ref.errors import CaseError, TieError
from rheo_ref.models import Case, TableModel

F = Fraction
# first order, V = 4; top_k=2 splits a tie after 2 (4,2,2,2), 0 (3,3,3,1) and 3 (uniform), not after 1
TARGET = {(0,): [3, 3, 3, 1], (1,): [5, 3, 1, 1], (2,): [4, 2, 2, 2], (3,): [1, 1, 1, 1]}
DRAFT = {(0,): [1, 2, 3, 4], (1,): [4, 3, 2, 1], (2,): [1, 1, 2, 2], (3,): [2, 2, 1, 1]}
CASE = Case.from_json(
    {
        "draft": TableModel.from_weights(DRAFT, context_length=1, name="draft").to_json(),
        "target": TableModel.from_weights(TARGET, context_length=1, name="target").to_json(),
        "context": [2],
        "tokens": 2,
    }
)
OPTIONS = 'ties="all" (keep every tied token, as transformers\' top-k), "low" (the lowest ids first) or "high"'


def test_processed_refuses_a_cut_between_tied_tokens():
    with pytest.raises(TieError) as e:
        rheo.processed(CASE, top_k=2)
    assert str(e.value).startswith("target row '0': top_k=2 cuts between tied tokens [0, 1, 2] (probability 3/10 each")
    assert OPTIONS in str(e.value) and "\n" not in str(e.value)
    # the row: top_k=1 on (3/10, 3/10, 2/10, 2/10) no longer keeps both tied tokens silently
    row = TableModel.from_weights({(): [3, 3, 2, 2]}, context_length=0, name="target")
    with pytest.raises(TieError, match=r"^target row '': top_k=1 cuts between tied tokens \[0, 1\] \(probability 3/10"):
        rheo.processed(Case.from_json({"target": row.to_json()}), top_k=1)


def test_eagle_s_top_p_refusal_is_the_same_rule():
    """transformers' top-p on (4, 2, 2, 2)/10 at 0.7: drop while the ascending mass <= 0.3, one 2/10
    of three dropped; eagle's law (`Processing`) refuses it as top-k's cut is refused, and takes a rule."""
    with pytest.raises(TieError, match=r"^target row '2': top_p=7/10 cuts between tied tokens \[1, 2, 3\]"):
        Processing(top_p=F(7, 10)).table(CASE.target)
    kept = Processing(top_p=F(7, 10), ties="high").table(CASE.target).row([2])
    assert kept == (F(4, 8), 0, F(2, 8), F(2, 8))


@pytest.mark.parametrize(
    ("ties", "law"),
    [
        # first token, after 2 (4,2,2,2)/10: low keeps 0, 1; high 0, 3; all every token. Second token, after
        # 0 (3,3,3,1)/10: low 0, 1; high 1, 2; all 0, 1, 2; after 1 (5,3,1,1)/10: 0, 1 under every rule;
        # after 3 (1,1,1,1)/4: low 0, 1; high 2, 3; all every token; after 2: as the first token
        ("low", {(0, 0): F(1, 3), (0, 1): F(1, 3), (1, 0): F(5, 24), (1, 1): F(3, 24)}),
        ("high", {(0, 1): F(1, 3), (0, 2): F(1, 3), (3, 2): F(1, 6), (3, 3): F(1, 6)}),
        (
            "all",
            {
                **{(0, t): F(4, 10) * F(1, 3) for t in (0, 1, 2)},
                **{(1, 0): F(2, 10) * F(5, 8), (1, 1): F(2, 10) * F(3, 8)},
                **{(2, t): F(2, 10) * (F(4, 10) if t == 0 else F(2, 10)) for t in range(4)},
                **{(3, t): F(2, 10) * F(1, 4) for t in range(4)},
            },
        ),
    ],
)
def test_each_rule_is_its_own_exact_law(ties, law):
    got = rheo.target_law(rheo.processed(CASE, top_k=2, ties=ties), 2)
    assert got == law and sum(got.values()) == 1


def keep_exactly_k(k: int):
    """A decoder that keeps exactly k tokens per row: a stable descending sort (ties: lower id first),
    the first k scattered back, sampled with a seeded torch generator (no rejection, no draft)."""

    def sample(case: Case, seed: int, num: int) -> list[tuple[int, ...]]:
        g = torch.Generator().manual_seed(seed % 2**63)
        out = []
        for _ in range(num):
            ctx = list(CASE.context)
            for _ in range(case.tokens):
                p = torch.tensor([float(x) for x in CASE.target.row(ctx)], dtype=torch.float64)  # [V]
                idx = p.sort(descending=True, stable=True).indices[:k]  # [k]
                kept = torch.zeros_like(p).scatter(0, idx, p[idx])  # [V]
                ctx.append(int(torch.multinomial(kept / kept.sum(), 1, generator=g)))
            out.append(tuple(ctx[len(CASE.context) :]))
        return out

    return sample


def test_a_keep_exactly_k_decoder_passes_under_low_and_is_rejected_under_all():
    low = rheo.check_lossless(keep_exactly_k(2), rheo.processed(CASE, top_k=2, ties="low"), alpha=1e-3, tv=0.2)
    assert not low.rejected, low.summary()
    both = rheo.check_lossless(keep_exactly_k(2), rheo.processed(CASE, top_k=2, ties="all"), alpha=1e-3, tv=0.2)
    assert both.rejected, both.summary()


def test_a_tie_in_a_draft_row_is_not_refused():
    """The draft plays no part in the target law: `processed` leaves it alone unless asked, then cuts a
    draft tie keeping every tied token unless the rule is named; a target row without a tie needs no rule."""
    rows = {"target": {(): [4, 3, 2, 1]}, "draft": {(): [3, 3, 2, 2]}}
    case = Case.from_json({k: TableModel.from_weights(v, context_length=0, name=k).to_json() for k, v in rows.items()})
    assert rheo.processed(case, top_k=1).draft == case.draft  # the target only, unless asked
    got = rheo.processed(case, top_k=1, draft=True)
    assert got.target.row(()) == (1, 0, 0, 0) and got.draft.row(()) == (F(1, 2), F(1, 2), 0, 0)
    assert rheo.processed(case, top_k=1, ties="high", draft=True).draft.row(()) == (0, 1, 0, 0)
    with pytest.raises(TieError, match=r"^draft row '': top_k=1 cuts between tied tokens \[0, 1\]"):
        Processing(top_k=1).table(case.draft)  # a draft processed explicitly (a decoder's own law) is a row like any


def test_an_engine_declares_its_rule_and_the_caller_names_the_rest(capsys, tmp_path):
    """transformers' decoders declare transformers' top-k rule ("all": TopKLogitsWarper keeps every token
    tied with the k-th), so `--gen top_k=2` needs no `ties`; its top-p cut between tied tokens (a
    `torch.sort` whose order of ties is unspecified) is refused in one line (exit 2) until named. seqspec
    has no top-k of its own (rheo processes its tables): the caller names the rule."""
    assert DecoderRun.parse("assisted", {"top_k": 2}).processing().ties == (("top_k", "all"),)
    assert DecoderRun.parse("assisted", {"top_k": 2, "ties": {"top_p": "low"}}).processing().ties == (
        ("top_k", "all"),
        ("top_p", "low"),
    )
    assert DecoderRun.parse("eagle", {"top_k": 2, "ties": "high"}).processing().ties == "high"  # named: the caller's
    with pytest.raises(CaseError, match="ties='first'; allowed: all, low, high"):
        DecoderRun.parse("assisted", {"top_k": 2, "ties": "first"})
    with pytest.raises(TieError, match=r"^target row '0': top_k=2 cuts between tied tokens \[0, 1, 2\]"):
        DecoderRun.parse("seqspec:standard", {"top_k": 2}).target_case(CASE, 2)
    path = tmp_path / "case.json"
    path.write_text(__import__("json").dumps(CASE.to_json()))
    assert main(["gate", str(path), "--decoder", "assisted", "--gen", "top_p=0.72"]) == 2  # drops one 2/10 of three
    err = capsys.readouterr().err
    assert "target row '2': top_p=0.72 cuts between tied tokens [1, 2, 3]" in err and OPTIONS in err
    assert err.count("\n") == 1


def test_the_gen_option_reaches_the_law_and_not_transformers():
    """`ties` is a law option, never handed to transformers' generate; under transformers' own top-k rule
    (declared, so not given) its sampling passes on a case whose every row ties at the cut but one."""
    run = DecoderRun.parse("assisted", {"top_k": 2, "num_assistant_tokens": 2, "ties": {"top_p": "low"}})
    res = gate_hf(CASE, run, alpha=1e-3, tv=0.3, seed=3)
    assert res["verdict"] == "pass" and res["exact_tv"] == "0", res
