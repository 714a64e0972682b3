"""Logits processing written once (rheo_ref.processing; docs/PROCESSING.md), the served-decoder
classes on the bug-class decoder (grammars, logprobs, coins on a grid), and their negative controls.

- Each processor on exact rows: ties at every cut-off as documented; the three orders differ where
  they should (min-p before or after top-k/top-p; SGLang's top-p read before top-k).
- Rows to a power agree with transformers' warpers through `rheo.decoders.laws` (tests/test_hf_gate.py)
  and with `rheo_ref.generate.temper_row`, which now call this module.
- A grammar constraint round-trips through JSON; the baseline decoder's law is exactly the masked,
  renormalised target; the grammar mutants move it.
- The `logprobs` check: the baseline reports exactly the processed target's probabilities (its law
  puts all mass on "every report exact"); the logprob mutants put mass on a wrong report.
- Greedy (T = 0): the decoder's law is the point mass on the argmax path.
- The `<=` coin is invisible under continuous coins (TV 0) and visible on grid coins.
"""

from __future__ import annotations

from fractions import Fraction

import pytest

from rheo.selfgate.bugclasses import bug_row, run_check, sampler
from rheo.selfgate.matrix import BETA, alpha_per_test
from rheo_ref import processing
from rheo_ref.bugclasses.cases import BugCase, case_law, logprobs_law, mutant_tvs, request_law
from rheo_ref.bugclasses.decoder import Request
from rheo_ref.bugclasses.report_cases import GRAMMAR, report_cases
from rheo_ref.constraint import Constraint
from rheo_ref.errors import CaseError
from rheo_ref.generate import temper_row
from rheo_ref.laws import tv

ALPHA = alpha_per_test()  # the gate's per-test α, derived from the registered rows

F = Fraction
CASES = report_cases()


def row(*w: int) -> tuple:
    return tuple(F(x, sum(w)) for x in w)


def test_each_processor_and_its_ties():
    w = row(1, 2, 2, 5)
    assert processing.top_k(w, 2, "all") == (0, F(2, 10), F(2, 10), F(5, 10))  # ties with the k-th kept
    assert processing.min_p(w, F(2, 5)) == (0, F(2, 10), F(2, 10), F(5, 10))  # 0.2 = 0.4 * 0.5: kept
    assert processing.min_p(w, F(1, 2)) == (0, 0, 0, F(5, 10))
    # top-p: ascending, drop while cumulative <= 1 - p: two tokens kept, the higher id of the tie ("high")
    assert processing.top_p(w, F(7, 10), "high") == (0, 0, F(2, 10), F(5, 10))
    assert processing.temperature(w, F(1, 2)) == tuple(x * x for x in w)
    assert processing.temperature(w, F(0)) == (0, 0, 0, 1)
    assert processing.temperature(row(3, 3, 1), F(0)) == (1, 0, 0)  # argmax ties: lower id
    assert processing.frequency(w, [0, 2, 0, 1], F(1, 2)) == (F(1, 10), F(2, 40), F(2, 10), F(5, 20))
    assert processing.presence(w, [0, 2, 0, 1], F(1, 2)) == (F(1, 10), F(1, 10), F(2, 10), F(5, 20))
    assert processing.repetition(w, [3], 2) == (F(1, 10), F(2, 10), F(2, 10), F(25, 100))
    assert processing.logit_bias(w, [(0, F(0)), (1, F(3))]) == (0, F(6, 10), F(2, 10), F(5, 10))
    with pytest.raises(CaseError, match="a root"):
        processing.repetition((F(2), F(1)), [0], 2)
    with pytest.raises(CaseError, match="zero mass"):
        processing.normalise((F(0), F(0)))


@pytest.mark.parametrize("T", [F(0), F(1), F(1, 2), F(1, 3)])
def test_temper_row_is_the_processing_temperature(T):
    w = row(1, 4, 4, 2)
    want = processing.normalise(processing.temperature(w, T))
    assert temper_row(w, T) == want and sum(want) == 1


def test_the_orders_differ_where_they_should():
    w = row(1, 1, 3, 5)
    s = Request(top_k=3, top_p=F(1, 2), min_p=F(1, 4))
    by = {
        o: processing.process(w, Request(top_k=3, top_p=F(1, 2), min_p=F(1, 4), order=o), [0] * 4)
        for o in processing.ORDERS
    }
    assert by["transformers"] == by["vllm"] == (0, 0, 0, 1)  # top-k keeps 1,1,3,5 (ties): top-p keeps 5 only
    assert s.order == "transformers"
    # SGLang reads top-p from the row before top-k; here top-k after top-p changes nothing, and
    # top-p before top-k differs from top-p on the top-k-renormalised row:
    w2 = row(35, 25, 20, 5, 3, 3, 3, 3, 3)
    sg = Request(top_k=4, top_p=F(82, 100), order="sglang")
    tr = Request(top_k=4, top_p=F(82, 100))
    assert processing.process(w2, sg, [0] * 9) != processing.process(w2, tr, [0] * 9)


def test_a_constraint_round_trips_and_is_checked():
    assert Constraint.from_json(GRAMMAR.to_json()) == GRAMMAR
    case = CASES["grammar"]
    assert BugCase.from_json(case.to_json()) == case
    with pytest.raises(CaseError, match="allows no token"):
        Constraint.from_json({"allowed": [[]], "next": [{}]})
    with pytest.raises(CaseError, match="outside the vocabulary"):
        GRAMMAR.check_vocab(2)


def test_the_baseline_under_a_grammar_is_the_masked_renormalised_target():
    case = CASES["grammar"]
    law = request_law(case)
    assert tv(case_law(case), law) == 0
    # every sequence the law gives mass to follows the grammar
    for seq in law:
        s = 0
        for t in seq:
            assert t in GRAMMAR.allowed[s]
            s = GRAMMAR.step(s, t)
    for name in ("grammar-bonus-unconstrained", "grammar-invalid-draft-accepted", "grammar-mask-flat"):
        assert max(mutant_tvs(case, name).values()) > 0, name


def test_the_baseline_reports_exact_logprobs_and_the_mutants_do_not():
    case = CASES["settings"]
    assert tv(case_law(case, logprobs=True), logprobs_law(case)) == 0
    for name in ("logprobs-zero", "logprobs-unprocessed"):
        assert mutant_tvs(case, name)["logprobs"] > 0, name
    # sampled: the float64 decoder's reports are the exact ones held as floats
    draws = sampler(logprobs=True)(case, 7, 50)
    assert all(d[-1] == 1 for d in draws)


def test_greedy_is_the_argmax_path_exactly():
    case = CASES["settings"]
    greedy = BugCase(case.draft, case.target, case.context, 3, Request(temperature=F(0), gamma=2))
    law = case_law(greedy)
    assert len(law) == 1 and law == request_law(greedy)


def test_the_leq_coin_shows_only_on_grid_coins():
    case = CASES["boundary"]
    tvs = mutant_tvs(case, "cumsum-leq-coin")
    assert all(v == 0 for c, v in tvs.items() if c != "grid") and tvs["grid"] > 0


@pytest.mark.parametrize("name", ["threshold-acceptance", "typical-acceptance"])
def test_the_documented_lossy_acceptance_rules_are_rejected(name):
    case = CASES["settings"]
    r = bug_row(case, name, alpha=ALPHA, beta=BETA)
    n, ch = r["samples_to_convict"], r["convicting_check"]
    assert n is not None and n < 2_000, r
    res = run_check(case, ch, alpha=ALPHA, beta=BETA, tv=min(1.0, r["exact_tv_float"][ch]), seed=11, mutant=name, n=n)
    assert res.rejected, res.summary()
