"""Horizon tests (rheo.lossless.horizon, rheo.lossless.windows) and the diagnosis of a rejection (rheo.lossless.diagnosis).

- The exact windows (x_{k−1}, x_k) by forward composition equal the marginals of the exact joint
  law, unconditionally and given the first round's length (exact `Fraction`s).
- The family-wise α is one stated total split by Bonferroni over a family fixed in advance.
- (lossless) A chain decoder of depth 5 wrong only from token 6 on (the bonus after a fully
  accepted chain drawn from the rejection residual norm((p − q)+) instead of p): exact TV 0 on the
  first 5 tokens, so the old test (the first `case.tokens` = 3 tokens) passes it; the horizon test
  at the default H = 8 convicts it (family α = 1e-3, every window detects TV ≥ 0.05 with power
  0.99; its window (x_5, x_6) is at exact TV ≥ 0.05) and says where: token 6, first round of
  length 6. The exact decoder, and rheo's fast path on the same chain, pass at H = 8.
- A rejection names the conditional law that deviates most and the worst cells.
"""

from __future__ import annotations

import random
from bisect import bisect_right
from collections import Counter
from fractions import Fraction
from itertools import accumulate

import pytest

from rheo import LosslessError, assert_lossless
from rheo.lossless.horizon import Rounds, default_horizon, plan
from rheo.lossless.stats import StatsError, check_law
from rheo.lossless.windows import round_windows, target_windows, windows_given_first_length
from rheo.selfgate.matrix import DRAFT, TARGET, fast_sampler, gate_cases, table
from rheo_ref.errors import CaseError
from rheo_ref.exact import Exact, target_law
from rheo_ref.exact import tv as total_variation
from rheo_ref.families.static.scheme import StaticScheme
from rheo_ref.models import Case

ALPHA, DELTA, H = 1e-3, 0.05, 8  # family-wise α of one horizon test; δ every window detects at power 0.99
# A chain of depth 5 (iid, specinfer) sampling from a draft halfway to p (weights TARGET + DRAFT):
# every level is accepted often (the first round has length 6 with probability 0.395)
CHAIN = Case(
    table(DRAFT, "draft"),
    table(TARGET, "target"),
    StaticScheme("branching", (1, 1, 1, 1, 1), "iid", "specinfer"),
    (0,),
    3,
    table({k: [a + b for a, b in zip(TARGET[k], DRAFT[k])] for k in TARGET}, "draft_sample"),
)


def marginal(law: dict, k: int) -> dict:
    out: dict = Counter()
    for s, p in law.items():
        out[s[k - 2 : k]] += p
    return dict(out)


@pytest.mark.parametrize("name", ["rheo-m1/T0.5", "delayed-iid-rrsw/T0.5/zeros"])
def test_windows_are_the_marginals_of_the_exact_laws(name):
    case = gate_cases()[name].case
    joint = target_law(case, 6)
    wins = target_windows(case, 6)
    assert sorted(wins) == [2, 3, 4, 5, 6]
    for k in range(2, 7):
        assert wins[k] == marginal(joint, k)
    first = Exact(case).round_law()
    given = windows_given_first_length(case, first, 6)
    lengths = Counter()
    for s, p in first.items():
        lengths[len(s)] += p
    for ell, ws in given.items():  # given ℓ: the first round restricted to length ℓ, then the target
        brute: Counter = Counter()
        for s, p in first.items():
            if len(s) == ell:
                rest = target_law(case, 6 - ell, case.context + s) if ell < 6 else {(): Fraction(1)}
                for r, pr in rest.items():
                    brute[(s + r)[:6]] += p / lengths[ell] * pr
        for k in range(2, 7):
            assert ws[k] == marginal(brute, k)
    for k in range(2, 7):  # and the strata mix back to the windows
        mix: Counter = Counter()
        for ell, ws in given.items():
            for c, p in ws[k].items():
                mix[c] += lengths[ell] * p
        assert dict(mix) == wins[k]


def test_family_alpha_is_one_total_split_by_bonferroni():
    case = gate_cases()["rheo-m1/T0.5"].case
    lengths = {len(s) for s in Exact(case).round_law()}
    p = plan(case, H, alpha=ALPHA, tv=DELTA, beta=0.01, rounds=True)
    assert p.tests == (H - 1) * (1 + len(lengths)) + 1  # windows, length law, windows given each length
    assert p.alpha_each * p.tests == pytest.approx(ALPHA) and p.alpha_each * p.tests <= ALPHA * (1 + 1e-12)
    assert plan(case, H, alpha=ALPHA, tv=DELTA, beta=0.01, rounds=False).tests == H - 1
    assert default_horizon(case) == 8 == default_horizon(CHAIN)


def test_bad_horizon_arguments_are_refused():
    s = fast_sampler()
    with pytest.raises(CaseError, match="horizon=1"):
        assert_lossless(s, CHAIN, alpha=ALPHA, tv=DELTA, horizon=1)
    with pytest.raises(StatsError, match="rounds=True needs a horizon"):
        assert_lossless(s, CHAIN, alpha=ALPHA, tv=DELTA, rounds=True)
    with pytest.raises(StatsError, match="must return an object with `tokens` and `first_lengths`"):
        assert_lossless(s, CHAIN, alpha=ALPHA, tv=DELTA, horizon=3, rounds=True, seed=0)


# --- a decoder wrong only at depth -------------------------------------------------------------


def residual_bonus(case: Case, law: dict) -> dict:
    """The chain's round law with the bug: after all D drafts are accepted, the bonus comes from
    norm((p − q)+) of its row instead of p (where p = q it stays p)."""
    D = case.scheme.D
    out = {}
    for s, pr in law.items():
        if len(s) == D + 1:
            p, q = case.target.row(s[-2:-1]), case.q_samp_model.row(s[-2:-1])
            r = [max(a - b, Fraction(0)) for a, b in zip(p, q)]
            z = sum(r)
            if z:
                pr = pr / p[s[-1]] * r[s[-1]] / z
        if pr:
            out[s] = pr
    return out


class Decoder:
    """Round by round from exact round laws (the spec's, or with the residual-bonus bug): a
    sampler returning `Rounds`, so the horizon test can condition on the first round."""

    def __init__(self, case: Case, buggy: bool):
        self.ex, self.buggy, self.laws, self.memo = Exact(case), buggy, {}, {}

    def round_law(self, ctx) -> dict:
        ctx = self.ex.case.visible(tuple(ctx))
        if ctx not in self.laws:
            law = self.ex.round_law(ctx)
            self.laws[ctx] = residual_bonus(self.ex.case, law) if self.buggy else law
        return self.laws[ctx]

    def draw(self, ctx, rng: random.Random):
        if ctx not in self.memo:
            law = self.round_law(ctx)
            keys = sorted(law)
            self.memo[ctx] = keys, list(accumulate(float(law[k]) for k in keys))
        keys, cum = self.memo[ctx]
        return keys[min(bisect_right(cum, rng.random() * cum[-1]), len(keys) - 1)]

    def __call__(self, case: Case, seed: int, num_samples: int):
        rng, rows, firsts = random.Random(seed), [], []
        for _ in range(num_samples):
            out: tuple = ()
            while len(out) < case.tokens:
                s = self.draw(case.visible(case.context + out), rng)
                firsts += [len(s)] * (not out)
                out += s
            rows.append(out[: case.tokens])
        return Rounds(rows, firsts)


@pytest.fixture(scope="module")
def exact_tvs() -> dict[int, Fraction]:
    """Exact TV of the buggy decoder's windows k = 2..H to the target's."""
    bug = Decoder(CHAIN, buggy=True)
    wins = round_windows(CHAIN, lambda ctx, m: bug.round_law(ctx), H)
    return {k: total_variation(w, t) for (k, w), t in zip(wins.items(), target_windows(CHAIN, H).values())}


def test_the_bug_first_bites_at_token_6(exact_tvs):
    assert all(exact_tvs[k] == 0 for k in range(2, 6))  # tokens 1..5 are exact
    assert exact_tvs[6] >= 2 * DELTA  # 0.1036; the horizon's every window detects DELTA with power 0.99

    class BuggyExact(Exact):
        def round_law(self, context=None):
            return bug.round_law(self.case.context if context is None else context)

    bug = Decoder(CHAIN, buggy=True)
    assert total_variation(BuggyExact(CHAIN).token_law(3), target_law(CHAIN, 3)) == 0  # what the old test sees


@pytest.mark.lossless
def test_a_deep_bug_is_convicted_at_the_horizon_and_missed_by_the_old_test(exact_tvs):
    bug = Decoder(CHAIN, buggy=True)
    old = assert_lossless(bug, CHAIN, alpha=ALPHA, tv=DELTA, seed=1)  # the first 3 tokens: exact TV 0
    assert not old.rejected and old.detectable_tv <= DELTA
    assert default_horizon(CHAIN) == H
    with pytest.raises(LosslessError) as err:
        assert_lossless(bug, CHAIN, alpha=ALPHA, tv=DELTA, horizon=H, rounds=True, seed=1)
    res = err.value.result
    assert res.rejected and res.alpha == ALPHA and res.detectable_tv <= DELTA
    where = res.worst_conditional.where
    assert where.startswith("token 6 given token 5 =") and where.endswith("first round of length 6"), where
    assert err.value.conditional is res.worst_conditional and err.value.top_cells == res.top_cells
    assert not [t for t in res.tests if t.rejected and t.label.startswith(("window 1,", "window 2,", "window 3,"))]
    good = assert_lossless(Decoder(CHAIN, buggy=False), CHAIN, alpha=ALPHA, tv=DELTA, horizon=H, rounds=True, seed=1)
    assert not good.rejected and good.n == res.n


@pytest.mark.lossless
def test_rheo_fast_path_passes_at_the_horizon(rheo_lossless):
    """The fast path on the depth-5 chain and on a tree (m = 1, R = 5), through the plugin fixture."""
    for case in (CHAIN, gate_cases()["rheo-m1/T0.5"].case):
        res = rheo_lossless(fast_sampler(rounds=True), case, alpha=ALPHA, tv=DELTA, horizon=H, rounds=True)
        assert res.detectable_tv <= DELTA and len(res.tests) <= res.planned


# --- diagnosis ---------------------------------------------------------------------------------


def test_a_rejection_names_the_conditional_law_and_the_cells_that_deviate():
    """Counts exactly proportional to a law that differs from the target only in token 3 given
    tokens 1, 2 = (1, 2): that conditional law is named, and its cells lead."""
    case = gate_cases()["rheo-m1/T1"].case
    law = target_law(case, 3)
    bent = dict(law)
    a, b = (1, 2, 0), (1, 2, 3)
    bent[a], bent[b] = law[a] + law[b], Fraction(0)  # token 3 = 3 moved to 0 after (1, 2)
    n = 200_000
    counts = {s: round(n * p) for s, p in bent.items() if p}
    res = check_law(counts, law, alpha=1e-6, tv=0.05)
    assert res.rejected
    assert res.worst_conditional.where == "token 3 given token 1 = 1, token 2 = 2"
    assert {c.sequence for c in res.top_cells[:2]} == {a, b}
    assert res.worst_conditional.text() in res.summary()
    same = check_law({s: round(n * p) for s, p in law.items()}, law, alpha=1e-6, tv=0.05)
    assert not same.rejected and "\n" not in same.summary()
