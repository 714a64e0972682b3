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
- Greedy (T = 0, token and block verification): every fast run is the argmax path, exactly; a
  mutant that leaves the verified rows unprocessed is not.
- Batches (`rheo_fast.bugclasses.batch`): the correct batch and each batch mutant, at the check
  (`request<i>` or `batch`, the joint law against the product of the request laws) where the
  reference twin's exact TV is largest, fit the twin's exact law and are rejected against the
  correct one where that TV is > 0 (same α, δ = min(0.1, TV), N as above); batch invariance (each
  seeded request's tokens in the batch against its tokens alone) is an identity for the correct
  batch and broken by the shared stream.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest

torch = pytest.importorskip("torch")

from rheo.lossless.stats import check_law, samples_for, seed_for  # noqa: E402
from rheo.selfgate.bugclasses import bug_laws, check_law_of, checks  # noqa: E402
from rheo.selfgate.case_library import LIBRARY  # noqa: E402
from rheo_fast.bugclasses.batch import CORRECT_BATCH, FAST_BATCH_MUTANTS, decode_batch, joint  # noqa: E402
from rheo_fast.bugclasses.decoder import CORRECT, decode  # noqa: E402
from rheo_fast.bugclasses.mutants import FAST_BUG_MUTANTS  # noqa: E402
from rheo_ref.bugclasses.batch import BATCH_MUTANTS, batch_laws  # noqa: E402
from rheo_ref.bugclasses.batch import CORRECT_BATCH as REF_CORRECT_BATCH  # noqa: E402
from rheo_ref.bugclasses.cases import GRID, BugCase, request_law  # noqa: E402
from rheo_ref.bugclasses.mutants import BUG_MUTANTS  # noqa: E402
from rheo_ref.bugclasses.report_cases import CASE_OF, REPORT_CASE, report_batch, report_cases  # noqa: E402
from rheo_ref.laws import tv  # noqa: E402

ALPHA, BETA, DELTA = 1e-4, 0.01, 0.1
REPORT = report_cases()
CASES = {
    **{f"report-{k}": c for k, c in REPORT.items()},
    **{n: BugCase.from_json(e["case"]) for n, e in LIBRARY.items() if e["family"] == "bugclasses"},
}


def draws(case: BugCase, check: str, n: int, seed: int, steps=CORRECT) -> list[tuple[int, ...]]:
    grid = GRID if check == "grid" else None
    out = decode(
        case,
        n,
        torch.Generator().manual_seed(seed),
        steps,
        first_round=check == "round",
        logprobs=check == "logprobs",
        grid=grid,
    )
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
    assert delta > 0.015, (name, tvs)  # every class moves its report case's law (the least: 28, 0.018)
    n = max(samples_for(bad[ch], delta, ALPHA, BETA), samples_for(laws[ch], delta, ALPHA, BETA))
    got = draws(case, ch, n, seed_for(f"fast-bugclasses|{name}"), FAST_BUG_MUTANTS[name])
    fits = check_law(got, bad[ch], alpha=ALPHA, tv=delta, beta=BETA, label=f"{ch} [{name}] vs its exact law")
    caught = check_law(got, laws[ch], alpha=ALPHA, tv=delta, beta=BETA, label=f"{ch} [{name}] vs the correct law")
    assert not fits.rejected and fits.detectable_tv <= delta, fits.summary()
    assert caught.rejected, caught.summary()


def test_every_served_class_has_a_fast_twin():
    served = {n for n, m in BUG_MUTANTS.items() if m.klass >= 15}
    assert served == set(FAST_BUG_MUTANTS)
    assert set(BATCH_MUTANTS) == set(FAST_BATCH_MUTANTS)


@pytest.mark.parametrize("verify", ["token", "block", "tree"])
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


# --- batches of different requests (rheo_fast.bugclasses.batch against rheo_ref.bugclasses.batch) ---


BATCH, SEEDS = report_batch()  # three requests, each with its own tables and temperature
# the batch each mutant runs on (default: the first two requests): padding reaches a real row only
# in an odd batch (here: one request); the corruption only with more than two requests
BATCH_OF = {"batch-padding-temperature": 1, "batch-corrupt-above-two": 3}


def _outcome(outs, check: str):
    return joint(outs) if check == "batch" else outs[int(check[7:])]


@pytest.mark.parametrize("name", ["correct", *sorted(FAST_BATCH_MUTANTS)])
def test_each_fast_batch_has_its_reference_twins_law(name):
    size = BATCH_OF.get(name, 2)
    cases, seeds = BATCH[:size], SEEDS[:size]
    fast_steps = CORRECT_BATCH if name == "correct" else FAST_BATCH_MUTANTS[name]
    ref_steps = REF_CORRECT_BATCH if name == "correct" else BATCH_MUTANTS[name][1]
    laws, bad, _ = batch_laws(cases, seeds, ref_steps)
    tvs = {c: tv(bad[c], laws[c]) for c in laws}
    ch = max(tvs, key=lambda c: tvs[c])
    delta = min(DELTA, float(tvs[ch])) or DELTA
    n = max(samples_for(bad[ch], delta, ALPHA, BETA), samples_for(laws[ch], delta, ALPHA, BETA))
    seeds = [s + seed_for(f"fast-bugclasses|batch|{name}") % 1000 for s in seeds]
    outs = decode_batch(cases, seeds, n, fast_steps)
    fits = check_law(_outcome(outs, ch), bad[ch], alpha=ALPHA, tv=delta, beta=BETA, label=f"{ch} [{name}]")
    assert not fits.rejected and fits.detectable_tv <= delta, fits.summary()
    if tvs[ch] > 0:
        caught = check_law(_outcome(outs, ch), laws[ch], alpha=ALPHA, tv=delta, beta=BETA, label=f"{ch} [{name}]")
        assert caught.rejected, caught.summary()
    # batch invariance: each seeded request's tokens in the batch against its tokens run alone
    moved = [
        sum(a != b for a, b in zip(outs[i], decode_batch([c], [s], n, fast_steps)[0])) / n
        for i, (c, s) in enumerate(zip(cases, seeds))
    ]
    if name in ("correct", "batch-padding-temperature"):
        assert moved == [0.0] * size  # a coupled identity: no statistics
    elif name == "batch-corrupt-above-two":  # rows 0 and 1 untouched, row 2 read one row late
        assert moved[:2] == [0.0, 0.0] and moved[2] > 0.1, moved
    elif name == "batch-shared-stream":
        assert moved[0] == 0 and moved[1] > 0.5, moved
