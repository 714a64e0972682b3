"""Ties at a top-k / top-p cut are the caller's to name (`rheo_ref.processing.keep_largest`, the one
rule both cuts use): without a rule a cut between tied tokens is refused in one line that names the
row, the tokens, their probability and the options; each rule gives its own law; a cut that splits no
tie (or ties at probability 0, or min-p's threshold) needs none."""

from __future__ import annotations

import random
from fractions import Fraction

import pytest
import torch

from rheo_fast import processing as fast
from rheo_ref import processing
from rheo_ref.errors import CaseError, TieError

F = Fraction
ROW = (F(3, 10), F(3, 10), F(2, 10), F(2, 10))  # top_k=1 and top_k=3 both cut a tie


def test_a_cut_between_tied_tokens_is_refused_with_the_options():
    with pytest.raises(TieError) as e:
        processing.top_k(ROW, 1)
    assert str(e.value) == (
        "row: top_k=1 cuts between tied tokens [0, 1] (probability 3/10 each, 1 of 2 kept); name the tie rule: "
        'ties="all" (keep every tied token, as transformers\' top-k), "low" (the lowest ids first) or "high" '
        "(the highest ids first)"
    )
    assert isinstance(e.value, CaseError)
    with pytest.raises(TieError, match=r"^target row '3': top_k=3 cuts between tied tokens \[2, 3\] \(probability 1/5"):
        processing.top_k(ROW, 3, where="target row '3'")


@pytest.mark.parametrize(
    ("k", "ties", "want"),
    [
        (1, "all", (F(3, 10), F(3, 10), 0, 0)),
        (1, "low", (F(3, 10), 0, 0, 0)),
        (1, "high", (0, F(3, 10), 0, 0)),
        (3, "all", ROW),
        (3, "low", (F(3, 10), F(3, 10), F(2, 10), 0)),
        (3, "high", (F(3, 10), F(3, 10), 0, F(2, 10))),
        (2, None, (F(3, 10), F(3, 10), 0, 0)),  # the cut falls between the two values: no rule needed
    ],
)
def test_each_top_k_rule_keeps_its_tokens(k, ties, want):
    assert processing.top_k(ROW, k, ties) == want
    got = fast.top_k(torch.tensor([[float(x) for x in ROW]], dtype=torch.float64), k, ties)
    assert got[0].tolist() == [float(x) for x in want]  # the fast path, rule for rule


def test_top_p_counts_by_value_and_cuts_by_the_rule():
    # ascending 2/10, 2/10, 3/10, 3/10: cumulative 0.2 <= 0.4, 0.4 <= 0.4, 0.7 > 0.4: two dropped, two kept
    # (both 3/10: no tie split); at top_p = 0.7 the cumulative 0.2 <= 0.3, 0.4 > 0.3: one dropped, a 2/10 kept
    assert processing.top_p(ROW, F(6, 10)) == (F(3, 10), F(3, 10), 0, 0)
    with pytest.raises(TieError, match=r"top_p=7/10 cuts between tied tokens \[2, 3\] \(probability 1/5 each, 1 of 2"):
        processing.top_p(ROW, F(7, 10))
    assert processing.top_p(ROW, F(7, 10), "low") == (F(3, 10), F(3, 10), F(2, 10), 0)
    assert processing.top_p(ROW, F(7, 10), "high") == (F(3, 10), F(3, 10), 0, F(2, 10))
    assert processing.top_p(ROW, F(7, 10), "all") == ROW
    both = {"top_k": "all", "top_p": "high"}  # a rule per cut
    assert processing.top_p(ROW, F(7, 10), both) == processing.top_p(ROW, F(7, 10), "high")
    assert processing.top_k(ROW, 1, both) == processing.top_k(ROW, 1, "all")
    with pytest.raises(TieError):
        processing.top_k(ROW, 1, {"top_p": "high"})  # no rule for top-k named


def test_ties_at_zero_and_min_p_need_no_rule():
    assert processing.top_k((F(1), F(0), F(0)), 2) == (F(1), F(0), F(0))
    assert processing.min_p(ROW, F(2, 3)) == ROW  # 2/10 = (2/3)·(3/10): both kept
    assert processing.min_p(ROW, F(1)) == (F(3, 10), F(3, 10), 0, 0)  # a threshold keeps a tie whole


@pytest.mark.parametrize("bad", ["ALL", "first", 1, {"top_x": "all"}, {"top_k": "none"}, {}])
def test_an_unknown_rule_is_refused(bad):
    with pytest.raises(CaseError, match=r"ties=.*; allowed: all, low, high, a rule per cut"):
        processing.top_k(ROW, 1, bad)


def _fast(rows, cut, value, ties):
    w = torch.tensor([[float(x) for x in r] for r in rows], dtype=torch.float64)  # [B, V]
    return (fast.top_k if cut == "top_k" else fast.top_p)(w, value, ties)


@pytest.mark.parametrize("ties", [None, "all", "low", "high", {"top_k": "low", "top_p": "high"}])
def test_the_fast_path_is_the_reference_rule_for_rule(ties):
    """Random rows of small integer weights (ties everywhere), top-k and top-p: the float path keeps the
    exact path's tokens with its weights, rule for rule, and refuses the same first row, naming the same
    tied tokens and cut."""
    rng = random.Random(f"tie-rules|{ties!r}")
    kept = refused = 0
    for _ in range(400):
        V, B = rng.randint(2, 7), rng.randint(1, 3)
        rows = []
        while len(rows) < B:
            r = [rng.choice([0, 1, 1, 2, 2, 3]) for _ in range(V)]
            if sum(r):
                rows.append(tuple(F(x, sum(r)) for x in r))
        cut = rng.choice(["top_k", "top_p"])
        value = rng.randint(1, V) if cut == "top_k" else F(rng.randint(1, 9), 10)
        step = processing.top_k if cut == "top_k" else processing.top_p
        want, error = [], None
        for b, r in enumerate(rows):
            try:
                want.append(step(r, value, ties, where=f"row {b}"))
            except TieError as e:
                error = str(e).split(" (probability")[0]
                break
        if error is not None:
            with pytest.raises(TieError) as e:
                _fast(rows, cut, value, ties)
            assert str(e.value).split(" (probability")[0] == error, (rows, cut, value)
            refused += 1
            continue
        got = _fast(rows, cut, value, ties)
        for b, w in enumerate(want):
            assert got[b].tolist() == [float(x) for x in w], (rows[b], cut, value, ties)
        kept += 1
    assert kept > 100 and (refused > 50) == (ties is None), (kept, refused)


def test_an_engine_s_rule_and_the_caller_s_merge_cut_by_cut():
    engine = (("top_k", "all"),)  # transformers' and vLLM's declared rule
    assert processing.merge_ties(engine, None) == engine
    assert processing.merge_ties(engine, {"top_p": "high"}) == (("top_k", "all"), ("top_p", "high"))
    assert processing.merge_ties(engine, "low") == "low"  # a rule for every cut: the caller's
    assert processing.merge_ties("all", {"top_k": "all", "top_p": "all"}) == "all"
    assert processing.merge_ties(None, None) is None
    with pytest.raises(CaseError, match="ties='first'"):
        processing.merge_ties(engine, "first")
