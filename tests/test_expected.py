"""rheo_fast.expected against rheo_ref's exact Fractions on table models.

- `one_level_acceptance` equals `rheo_ref.exact.acceptance` (depth 1, every m and both orders) to
  float64 rounding, on random rational rows (seeds fixed by the test id).
- The Rao–Blackwellised round length `expected_emitted` is unbiased: over B independently built
  and verified rounds its mean and the realised lengths' mean both match rheo_ref's exact τ
  (two-sided z test, α = 1e-3; the smallest bias it detects with power 0.99 is printed in the
  assertion message and must be below 0.03 tokens); on one fixed tree it is the mean of the realised
  length over the verification coins. Negative control: the same estimator
  forgetting the residual update after a rejected sampled child is rejected by the same test.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

import pytest
import torch

from rheo.lossless.stats import seed_for
from rheo_fast.expected import expected_emitted, one_level_acceptance
from rheo_fast.families.rheo.round import run_round
from rheo_fast.family import layout_for
from rheo_fast.models import TableTreeModel, as_rows
from rheo_ref.exact import acceptance, tau
from rheo_ref.models import Case

ALPHA = 1e-3
Z_ALPHA = 3.2905  # z_{1 - α/2}
Z_POWER = 2.3263  # z_{0.99}


def random_row(rng: random.Random, V: int, zeros: int = 0) -> list[str]:
    w = [rng.randint(1, 9) for _ in range(V)]
    for i in rng.sample(range(V), zeros):
        w[i] = 0
    s = sum(w)
    return [str(Fraction(x, s)) for x in w]


def case_of(
    q_rows: dict[str, list[str]], p_rows: dict[str, list[str]], V: int, scheme: dict, context=(0,), L: int = 1
) -> Case:
    return Case.from_json(
        {
            "draft": {"vocab_size": V, "context_length": L, "probs": q_rows},
            "target": {"vocab_size": V, "context_length": L, "probs": p_rows},
            "context": list(context),
            "tokens": 1,
            "scheme": scheme,
        }
    )


@pytest.mark.parametrize("verify", ["rheo", "rrsw"])
@pytest.mark.parametrize("m", [0, 1, 2, 3])
def test_one_level_acceptance_is_rheo_refs_exact_rate(m, verify, request):
    rng = random.Random(seed_for(request.node.nodeid))
    for trial in range(6):
        V = rng.randint(4, 7)
        q = random_row(rng, V, zeros=trial % 2)
        p = random_row(rng, V, zeros=(trial // 2) % 2)
        case = case_of({"": q}, {"": p}, V, {"K": 3, "m": m, "W": 1, "D": 1, "R": 3, "verify": verify}, context=(), L=0)
        exact = acceptance(case)
        row = lambda r: torch.tensor([[float(Fraction(x)) for x in r]], dtype=torch.float64)
        fast = one_level_acceptance(row(p), row(q), row(q), K=3, m=m, verify=verify)
        assert abs(float(fast[0]) - float(exact)) < 1e-12, (q, p, m, verify, float(fast[0]), exact)


def test_one_level_orders_differ_somewhere():
    """The two orders give different rates on some row pair (else the test above could not tell them apart)."""
    p = torch.tensor([[0.1, 0.6, 0.3, 0.0]], dtype=torch.float64)
    q = torch.tensor([[0.5, 0.1, 0.2, 0.2]], dtype=torch.float64)
    a = one_level_acceptance(p, q, q, K=3, m=1, verify="rheo")
    b = one_level_acceptance(p, q, q, K=3, m=1, verify="rrsw")
    assert abs(float(a - b)) > 1e-3


def table_case(seed: int, verify: str = "rheo", context: tuple[int, ...] = (0,)) -> Case:
    rng = random.Random(seed)
    V = 4
    keys = [""] + [str(t) for t in range(V)]
    q = {k: random_row(rng, V) for k in keys}
    p = {k: random_row(rng, V, zeros=1) for k in keys}
    return case_of(q, p, V, {"K": 3, "m": 1, "W": 2, "D": 2, "R": 4, "verify": verify}, context=context)


def rounds(case: Case, B: int, seed: int, *, fixed_tree: bool = False) -> tuple[torch.Tensor, torch.Tensor, object]:
    """Realised and expected emitted tokens [B] of B first rounds from the case's context."""
    model = TableTreeModel(case)
    s = case.scheme
    layout = layout_for(s)
    g = torch.Generator().manual_seed(seed)
    coins = torch.rand((B, layout.n_coins), generator=g, dtype=torch.float64)  # [B, n_coins]
    if fixed_tree:
        coins[:, : layout.N + 1] = coins[:1, : layout.N + 1]  # one set of sampling coins: one tree
    st = model.start([case.context] * B)
    res = run_round(model, st, s, coins, layout=layout)
    p = as_rows(model.target(st, res.tree))
    rb = expected_emitted(res.tree, p, s.K, s.m, s.verify)  # [B]
    return res.verdict.n_emitted.double(), rb, (res.tree, p)


def z_check(x: torch.Tensor, target: float) -> tuple[bool, float]:
    """(|mean - target| within z_{1-α/2} standard errors, smallest bias detected with power 0.99)."""
    se = float(x.std()) / math.sqrt(len(x))
    return abs(float(x.mean()) - target) <= Z_ALPHA * se, (Z_ALPHA + Z_POWER) * se


@pytest.mark.parametrize("verify", ["rheo", "rrsw"])
def test_rao_blackwellised_tau_is_unbiased_against_exact_tau(verify, request):
    seed = seed_for(request.node.nodeid)
    case = table_case(seed, verify)
    exact = float(tau(case))
    plain, rb, _ = rounds(case, 20_000, seed)
    ok_rb, delta_rb = z_check(rb, exact)
    ok_plain, delta_plain = z_check(plain, exact)
    assert ok_rb, f"RB mean {float(rb.mean()):.4f} vs exact τ {exact:.4f} (detects bias >= {delta_rb:.4f})"
    assert ok_plain, f"plain mean {float(plain.mean()):.4f} vs exact τ {exact:.4f} (detects >= {delta_plain:.4f})"
    assert float(rb.var()) < float(plain.var()), "conditioning on the tree cannot add variance"
    assert delta_rb < 0.03


def test_rao_blackwellised_tau_is_the_mean_over_verification_coins(request):
    seed = seed_for(request.node.nodeid)
    case = table_case(seed)
    plain, rb, _ = rounds(case, 20_000, seed, fixed_tree=True)
    assert float(rb.max() - rb.min()) < 1e-12, "one tree: one conditional expectation"
    ok, delta = z_check(plain, float(rb[0]))
    assert ok, f"realised mean {float(plain.mean()):.4f} vs RB {float(rb[0]):.4f} (detects >= {delta:.4f})"


def test_negative_control_stale_residual_is_rejected(request, monkeypatch):
    """RB that forgets the residual update after a sampled child is rejected (r stays p, a classic
    verifier bug) is biased, and the same z test says so."""
    import rheo_fast.expected as ex

    seed = seed_for(request.node.nodeid)
    case = table_case(seed, "rrsw")
    exact = float(tau(case))
    _, _, (tree, p) = rounds(case, 20_000, seed)
    monkeypatch.setattr(ex, "residual_sampled", lambda r, qt: r)
    wrong = ex.expected_emitted(tree, p, 3, 1, "rrsw")  # [B]
    ok, delta = z_check(wrong, exact)
    assert not ok, f"stale-residual RB mean {float(wrong.mean()):.4f} not told from τ {exact:.4f} (δ {delta:.4f})"


def test_lm_path_records_the_fast_paths_expectation_coin_for_coin(request):
    """`rheo paper-tables`' round loop (rheo_fast.lm.paper_tables.recorded_rounds, the real-model
    code path, here on a TableLM target and a table draft head) records, for the first round, the
    realised length and the exact expectation that the table fast path computes from the same coins."""
    from rheo_fast.decode import round_coins
    from rheo_fast.lm.paper_tables import RecordingLM, recorded_rounds
    from rheo_fast.lm.table_head import TableDraftHead
    from rheo_fast.table_lm import table_lm

    seed = seed_for(request.node.nodeid)
    case = table_case(seed, context=(0, 1))
    s = case.scheme
    layout = layout_for(s)
    for i in range(6):
        lm = RecordingLM(table_lm(case.target), TableDraftHead(case.draft), T=1.0)
        gen = lambda r, i=i: torch.Generator().manual_seed(seed + 1000 * i + r)
        rec = recorded_rounds(lm, list(case.context), s, max_new=1, eos=set(), coins=gen)
        model = TableTreeModel(case)
        st = model.start([case.context])
        res = run_round(model, st, s, round_coins(gen(0), 1, layout), layout=layout)
        want = expected_emitted(res.tree, as_rows(model.target(st, res.tree)), s.K, s.m, s.verify)
        assert rec["emitted"][0] == int(res.verdict.n_emitted[0])
        assert abs(rec["expected"][0] - float(want[0])) < 1e-12
        assert 1 <= rec["expected"][0] <= s.D + 1
