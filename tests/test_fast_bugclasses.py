"""The bug-class decoder and the served-decoder classes 15–27 on the fast path
(`rheo_fast.bugclasses`), gated against the exact laws of `rheo_ref.bugclasses`.

- The fast baseline passes every check (`joint<n>`, `round`, `logprobs`) of the report cases and of
  the library's two bug-class cases (token and block verification), each a χ² test at α = 1e-4,
  power 0.99 at δ = 0.1 on the full law (N by the gate's rule, `samples_for`); 26 tests, so the
  family-wise false-alarm rate is ≤ 2.6e-3.
- Each fast mutant, on its report case and at the check where its reference twin's exact TV is
  largest (a check of the tokens' law: `joint<n>`, `round`, `grid`; for the logprob classes, `logprobs`): its samples fit the reference mutant's exact law (not rejected; α = 1e-4, δ below) and
  the same samples are rejected against the correct law, δ = min(0.1, the mutant's exact TV), N the
  gate's rule for δ on both laws (power ≥ 0.99 at that TV). The seeds are fixed by the test id.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest

torch = pytest.importorskip("torch")

from rheo.lossless.stats import check_law, samples_for, seed_for  # noqa: E402
from rheo.selfgate.bugclasses import bug_laws, check_law_of, checks  # noqa: E402
from rheo.selfgate.case_library import LIBRARY  # noqa: E402
from rheo_fast.bugclasses.decoder import CORRECT, decode  # noqa: E402
from rheo_fast.bugclasses.mutants import FAST_BUG_MUTANTS  # noqa: E402
from rheo_ref.bugclasses.cases import GRID, BugCase, request_law  # noqa: E402
from rheo_ref.bugclasses.mutants import BUG_MUTANTS  # noqa: E402
from rheo_ref.bugclasses.report_cases import CASE_OF, REPORT_CASE, report_cases  # noqa: E402
from rheo_ref.laws import tv  # noqa: E402

ALPHA, BETA, DELTA = 1e-4, 0.01, 0.1
REPORT = report_cases()
CASES = {
    **{f"report-{k}": c for k, c in REPORT.items()},
    **{n: BugCase.from_json(e["case"]) for n, e in LIBRARY.items() if e["family"] == "bugclasses"},
}


def draws(case: BugCase, check: str, n: int, seed: int, steps=CORRECT) -> list[tuple[int, ...]]:
    kw = {"first_round": check == "round", "logprobs": check == "logprobs", "grid": GRID if check == "grid" else None}
    out = decode(case, n, torch.Generator().manual_seed(seed), steps, **kw)
    return [s[: int(check[5:])] for s in out] if check.startswith("joint") else out


@pytest.mark.parametrize("check", ["joint", "round", "logprobs"])
@pytest.mark.parametrize("name", sorted(CASES))
def test_the_fast_baseline_passes_every_check(name, check):
    case = CASES[name]
    names = [c for c in checks(case) if c.startswith(check)] if check == "joint" else [check]
    for ch in names[-1:]:  # joint: the longest (the first n tokens' whole law)
        law = check_law_of(case, ch)
        n = samples_for(law, DELTA, ALPHA, BETA)
        res = check_law(
            draws(case, ch, n, seed_for(f"fast-bugclasses|{name}|{ch}")), law, alpha=ALPHA, tv=DELTA, beta=BETA
        )
        assert not res.rejected and res.detectable_tv <= DELTA, res.summary()


@pytest.mark.parametrize("name", sorted(FAST_BUG_MUTANTS))
def test_each_fast_mutant_has_its_reference_twins_law(name):
    m = BUG_MUTANTS[name]
    case = REPORT[CASE_OF.get(name, REPORT_CASE[m.kind])]
    laws, bad = bug_laws(case, name)
    tvs = {c: tv(bad[c], laws[c]) for c in laws}
    tokens = [c for c in tvs if (c == "logprobs") == (m.kind == "logprobs")]  # the tokens' law, or the reports'
    ch = max(tokens, key=lambda c: tvs[c])
    delta = min(DELTA, float(tvs[ch]))
    assert delta > 0.03, (name, tvs)  # every class moves its report case's law
    n = max(samples_for(bad[ch], delta, ALPHA, BETA), samples_for(laws[ch], delta, ALPHA, BETA))
    got = draws(case, ch, n, seed_for(f"fast-bugclasses|{name}"), FAST_BUG_MUTANTS[name])
    fits = check_law(got, bad[ch], alpha=ALPHA, tv=delta, beta=BETA, label=f"{ch} [{name}] vs its exact law")
    caught = check_law(got, laws[ch], alpha=ALPHA, tv=delta, beta=BETA, label=f"{ch} [{name}] vs the correct law")
    assert not fits.rejected and fits.detectable_tv <= delta, fits.summary()
    assert caught.rejected, caught.summary()


def test_every_served_class_has_a_fast_twin():
    served = {n for n, m in BUG_MUTANTS.items() if m.klass >= 15}
    assert served == set(FAST_BUG_MUTANTS)


@pytest.mark.parametrize("verify", ["token", "block"])
def test_fast_greedy_is_the_argmax_path_exactly(verify):
    """At T = 0 the request's law is one sequence (the argmax path, ties to the lower id): every
    fast run must emit it, token for token (an exact check, no statistics)."""
    case = REPORT["settings"]
    greedy = BugCase(
        case.draft, case.target, case.context, 4, replace(case.request, temperature=Fraction(0), verify=verify)
    )
    (path,) = request_law(greedy)
    out = decode(greedy, 500, torch.Generator().manual_seed(seed_for(f"fast-bugclasses|greedy|{verify}")))
    assert set(out) == {path}
    # the check convicts: verified rows left unprocessed (not greedy) let other sequences through
    bad = decode(greedy, 500, torch.Generator().manual_seed(1), FAST_BUG_MUTANTS["processors-skipped-at-verified"])
    assert set(bad) != {path}
