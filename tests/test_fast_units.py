"""Unit properties of rheo_fast's steps, each against the exact reference or a hand-checked
value (docs/ALGORITHM.md §1, §3, §4, §5): ranking ties, slots, inverse CDF, strict coins,
residual rounding, tree shape and closure, attention mask, refusals, logits processing."""

from __future__ import annotations

from fractions import Fraction

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import rheo_ref.coins
import rheo_ref.families.rheo.slots
from rheo_fast.decode import decode, round_coins
from rheo_fast.families.rheo.round import run_round
from rheo_fast.models import DraftRows, ModelDefaults, TableTreeModel, draft_probs, greedy, target_probs, trunc_s
from rheo_fast.slots import DET, FILL, SAMPLED, expand, inverse_cdf, ranked
from rheo_fast.tree import check_closed
from rheo_fast.verify import residual_point, residual_sampled, try_points, try_sampled
from rheo_ref.errors import CaseError
from rheo_ref.families.rheo.enumerate import expansions_per_round
from rheo_ref.families.rheo.layout import RheoLayout, rheo_layout
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.models import Case, Proxy, TableModel
from rheo_ref.strategies import distinct_weights, prob_vectors
from rheo_ref.variants import MUTANTS

pytestmark = pytest.mark.usefixtures("one_thread")


def t64(row) -> torch.Tensor:
    return torch.tensor([float(x) for x in row], dtype=torch.float64)


@given(st.integers(2, 12).flatmap(lambda V: prob_vectors(V, max_weight=3)))
def test_ranked_breaks_ties_by_lower_id_like_the_reference(row):
    assert ranked(t64(row)).tolist() == rheo_ref.families.rheo.slots.ranked(row)


@settings(deadline=None)
@given(
    st.integers(2, 7).flatmap(
        lambda V: st.tuples(
            prob_vectors(V, max_weight=30),
            prob_vectors(V, max_weight=30),
            st.integers(1, V),
            st.floats(0, 1, exclude_max=True),
        )
    ),
    st.integers(0, 7),
    st.sampled_from(["rheo", "true", "const:1/4", "scaled:1/2"]),
)
def test_expand_matches_the_reference_slot_plan(args, m_raw, proxy):
    """Tokens, kinds and factors of one expansion equal rheo_ref.families.rheo.slots for the same coin."""
    q_rank, q_samp, K, u = args
    m = m_raw % (K + 1)
    pr = Proxy.parse(proxy)
    plan = rheo_ref.families.rheo.slots.expand(q_rank, q_samp, K, m, pr)
    ex = expand(
        DraftRows(t64(q_rank)[None, None], t64(q_samp)[None, None], False),
        torch.tensor([[u]], dtype=torch.float64),
        K,
        m,
        pr,
    )
    if plan.qtilde is None:
        want = plan.det
        kinds = [DET] * K
    else:
        y = rheo_ref.coins.inverse_cdf(plan.qtilde, Fraction(u))
        want = plan.det + [(y, plan.factor_for(y))] + plan.fills_for(y)
        kinds = [DET] * m + [SAMPLED] + [FILL] * (K - m - 1)
        assert torch.allclose(ex.qtilde[0, 0], t64(plan.qtilde), rtol=1e-12, atol=0)
    assert ex.tokens[0, 0].tolist() == [t for t, _ in want]
    assert ex.kind[0, 0].tolist() == kinds
    assert bool(ex.sampling[0, 0]) == (plan.qtilde is not None)
    got = ex.log_factor[0, 0].exp().tolist()
    assert got == pytest.approx([float(f) for _, f in want], rel=1e-12, abs=0)


def test_inverse_cdf_edges():
    probs = torch.tensor([[0.0, 0.25, 0.0, 0.75, 0.0]], dtype=torch.float64)
    assert inverse_cdf(probs, torch.tensor([0.0], dtype=torch.float64)).item() == 1  # coin 0: first positive
    assert inverse_cdf(probs, torch.tensor([0.25], dtype=torch.float64)).item() == 3  # strict: 0.25 is not < 0.25
    top = torch.tensor([1 - 2**-53], dtype=torch.float64)
    assert inverse_cdf(probs, top).item() == 3  # never past the last token with mass
    noisy = torch.tensor([[0.3, 0.3, 0.4 - 1e-16, 0.0]], dtype=torch.float64)  # sums to just under 1
    assert inverse_cdf(noisy, top).item() == 2
    assert inverse_cdf(torch.zeros(1, 3, dtype=torch.float64), top).item() == -1  # no mass: no token


def test_a_zero_coin_never_accepts_probability_zero():
    r = torch.tensor([[0.0, 0.5, 0.5]], dtype=torch.float64)
    qt = torch.tensor([[0.5, 0.5, 0.0]], dtype=torch.float64)
    u0 = torch.zeros(1, dtype=torch.float64)
    yes = torch.ones(1, dtype=torch.bool)
    acc, _ = try_sampled(r, qt, torch.tensor([0]), yes, u0)
    assert not acc.item()
    acc, _ = try_sampled(r, qt, torch.tensor([0]), yes, u0, MUTANTS["leq-coin"])
    assert acc.item()  # the mutant does, so the check can fail
    both = torch.ones(1, 2, dtype=torch.bool)
    acc, first, _ = try_points(r, torch.tensor([[0, 1]]), both, torch.zeros(1, 2, dtype=torch.float64))
    assert acc.item() and first.item() == 1  # token 0 rejected, token 1 accepted


@given(
    st.integers(2, 7).flatmap(
        lambda V: st.tuples(
            prob_vectors(V, max_weight=20),
            st.permutations(range(V)),
            st.lists(st.floats(0, 1, exclude_max=True), min_size=V, max_size=V),
            st.lists(st.booleans(), min_size=V, max_size=V),
        )
    ),
    st.integers(1, 7),
)
def test_closed_form_run_equals_one_try_at_a_time(args, J):
    """try_points' vectorised comparison u_k (Σr - Σ_{j<k} r(t_j)) < r(t_k) makes the same
    decisions and leaves the same residual as trying each point mass against the renormalised r."""
    row, perm, coins, tried = args
    J = min(J, len(row))
    r = t64(row)[None]  # [1, V]
    toks = torch.tensor(perm[:J])[None]  # [1, J]
    u = torch.tensor(coins[:J], dtype=torch.float64)[None]  # [1, J]
    mask = torch.tensor(tried[:J])[None]  # [1, J]
    acc, first, after = try_points(r, toks, mask, u)
    seq, want = r, None
    for k in range(J):
        if not tried[k]:
            continue
        if coins[k] < seq[0, perm[k]].item():
            want = k
            break
        seq = residual_point(seq, torch.tensor([perm[k]]))
    assert bool(acc) == (want is not None)
    if want is not None:
        assert first.item() == want
    # after the run (or at the accept), the residual equals the sequential one (up to rounding)
    assert torch.allclose(after, seq, rtol=1e-12, atol=1e-15)


def test_residual_of_rounding_noise_is_not_garbage():
    """r equal to q̃ up to one ulp: the exact residual is 0 (a rejection of probability 0); the fast
    path must neither divide noise by noise nor return NaN."""
    q = torch.tensor([[0.1, 0.2, 0.3, 0.4]], dtype=torch.float64)
    r = q.clone()
    r[0, 1] = torch.nextafter(r[0, 1], torch.tensor(1.0, dtype=torch.float64))
    out = residual_sampled(r, q)
    assert torch.isfinite(out).all() and torch.equal(out, r)  # falls back to r, not a spike on token 1
    noisy = (r - q).clamp(min=0)
    assert (noisy / noisy.sum()).max().item() == 1.0  # what the naive formula would give: garbage
    real = residual_sampled(torch.tensor([[0.4, 0.3, 0.2, 0.1]], dtype=torch.float64), q)
    assert real[0].tolist() == pytest.approx([0.75, 0.25, 0.0, 0.0])
    assert residual_point(torch.tensor([[0.0, 1.0]], dtype=torch.float64), torch.tensor([1])).tolist() == [[0.0, 1.0]]


def _case(V=4, K=3, m=1, W=2, D=3, R=7, proxy="rheo", verify="rheo", L=1):
    import random

    rng = random.Random(V * 100 + K)

    keys = [()] + [(c,) for c in range(V)] if L else [()]
    mk = lambda n: TableModel.from_weights(
        {k: distinct_weights(rng, V, high=60) for k in keys}, context_length=L, name=n
    )
    return Case(mk("draft"), mk("target"), Scheme(K, m, W, D, R, Proxy.parse(proxy), verify), (0,) if L else (), 3)


@pytest.mark.parametrize("K,W,D", [(1, 1, 1), (3, 2, 3), (2, 5, 4), (4, 1, 2)])
def test_layout_agrees_with_the_reference(K, W, D):
    s = Scheme(K, min(1, K), W, D, 1)
    lay = rheo_layout(s)
    N = s.K * expansions_per_round(s)  # the enumerator's count: K children per expansion
    assert (lay.N, lay.n_coins, lay.bonus, lay.accept(0)) == (N, 2 * (N + 1) + 1, 2 * N + 2, N + 1)
    assert len(lay.depths()) == lay.N + 1


def test_tree_is_closed_and_mask_is_the_ancestor_relation():
    case = _case()
    model = TableTreeModel(case)
    B = 64
    state = model.start([case.context] * B)
    lay = RheoLayout(3, 2, 3)
    res = run_round(model, state, case.scheme, round_coins(torch.Generator().manual_seed(0), B, lay))
    tree = res.tree
    assert check_closed(tree)
    assert tree.kept.sum(-1).eq(case.scheme.R + 1).all()
    mask = tree.attention_mask()
    par = tree.parent.tolist()
    for b in (0, 17, 63):
        for i in range(lay.N + 1):
            anc, j = {i}, i
            while par[b][j] >= 0:
                j = par[b][j]
                anc.add(j)
            assert set(mask[b, i].nonzero().flatten().tolist()) == anc
    assert tree.position_ids().tolist() == lay.depths()
    # a node's path is its parent's path plus its own token
    for b in (0, 5):
        for i in range(1, lay.N + 1):
            d = int(tree.depth[i])
            P = tree.P
            assert tree.path[b, i, : P + d - 1].tolist() == tree.path[b, par[b][i], : P + d - 1].tolist()
            assert tree.path[b, i, P + d - 1].item() == tree.tokens[b, i].item()
            assert tree.path[b, i, :P].tolist() == [case.context[-1]]  # the context window before the root


def test_same_seed_same_tokens_and_rounds_emit_1_to_D_plus_1():
    case = _case()
    model = TableTreeModel(case)
    run = lambda s: decode(model, [case.context] * 200, case.scheme, 5, generator=torch.Generator().manual_seed(s))
    a, b, c = run(1), run(1), run(2)
    assert torch.equal(a.tokens, b.tokens) and not torch.equal(a.tokens, c.tokens)
    assert ((a.first_lengths >= 1) & (a.first_lengths <= case.scheme.D + 1)).all()
    assert (a.tokens >= 0).all() and (a.tokens < 4).all()


def test_missing_row_and_factor_above_one_are_refused_like_the_reference():
    case = _case()
    probs = dict(case.target.probs)
    del probs["2"]
    holey = Case(case.draft, TableModel(4, 1, probs, "target"), case.scheme, case.context, 3)
    with pytest.raises(CaseError, match="no row"):
        decode(
            TableTreeModel(holey), [holey.context] * 300, holey.scheme, 3, generator=torch.Generator().manual_seed(0)
        )
    scaled = case.with_scheme(proxy="scaled:1000")
    with pytest.raises(CaseError, match="factor"):
        decode(
            TableTreeModel(scaled), [case.context] * 10, scaled.scheme, 3, generator=torch.Generator().manual_seed(0)
        )
    with pytest.raises(CaseError, match="exactly one"):
        decode(TableTreeModel(case), [case.context], case.scheme, 3)
    with pytest.raises(CaseError, match="K=5"):
        decode(TableTreeModel(_case(V=4)), [(0,)], Scheme(5, 1, 1, 1, 1), 3, generator=torch.Generator())


def test_trunc_and_temperature():
    logits = torch.tensor([1.0, 3.0, 3.0, 2.0, 3.0])
    assert torch.isinf(trunc_s(logits, 2)).tolist() == [True, False, False, True, True]  # ties: lower id kept
    q_rank, q_samp, shared = draft_probs(logits, S=3, T=0.5)
    assert q_rank.dtype == torch.float64 and ((q_rank > 0) == (q_samp > 0)).all()
    assert not shared and draft_probs(logits, S=3, T=1).shared
    assert q_rank[[1, 2, 4]].tolist() == pytest.approx([1 / 3] * 3)
    assert draft_probs(logits, S=3, T=0)[1].tolist() == [0, 1, 0, 0, 0]  # greedy: argmax, lower id
    assert target_probs(logits, T=1).sum().item() == pytest.approx(1)
    assert greedy(torch.tensor([[0.2, 0.4, 0.4]])).tolist() == [[0, 1, 0]]


class LogitModel(ModelDefaults):
    """A TreeModel the way a language model fills it: logits per node context from a function,
    draft via draft_probs (top-S, temperature), target via target_probs, contexts kept as lists."""

    def __init__(self, V: int, S: int, T: float) -> None:
        self.vocab_size, self.S, self.T = V, S, T
        g = torch.Generator().manual_seed(3)
        self.wd = torch.randn((V, V), generator=g, dtype=torch.float64)
        self.wt = self.wd + 0.3 * torch.randn((V, V), generator=g, dtype=torch.float64)

    def start(self, contexts):
        return torch.tensor([c[-1] for c in contexts])  # [B] last token

    def _last(self, state, tree, nodes):
        tok = tree.tokens.gather(1, nodes)  # [B, F]
        return torch.where(nodes == 0, state[:, None], tok)  # [B, F]

    def draft(self, state, tree, nodes):
        return draft_probs(self.wd[self._last(state, tree, nodes)], S=self.S, T=self.T)

    def target(self, state, tree):
        nodes = torch.arange(tree.tokens.shape[1]).expand_as(tree.tokens)
        return target_probs(self.wt[self._last(state, tree, nodes)], T=self.T)

    def advance(self, state, emitted, n):
        return emitted.gather(1, (n - 1)[:, None])[:, 0]


def test_a_logit_model_fits_the_interface_and_stays_in_the_top_s_support():
    V, S = 12, 4
    model = LogitModel(V, S, 0.7)
    scheme = Scheme(3, 1, 2, 3, 6)
    out = decode(model, [[0]] * 256, scheme, 6, generator=torch.Generator().manual_seed(0))
    assert out.tokens.shape == (256, 6) and (out.tokens >= 0).all() and (out.tokens < V).all()
    # the first token follows p(.|0): with T=0.7 compare frequencies against the target row loosely
    p0 = target_probs(model.wt[0], T=0.7)
    freq = torch.bincount(out.tokens[:, 0], minlength=V) / 256
    assert (freq - p0).abs().sum().item() < 0.5


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_cuda_emits_what_cpu_emits_for_the_same_coins():
    case = _case()
    lay = RheoLayout(3, 2, 3)
    coins = round_coins(torch.Generator().manual_seed(0), 512, lay)
    cpu = decode(TableTreeModel(case), [case.context] * 512, case.scheme, 3, coins=lambda i: coins)
    gpu = decode(
        TableTreeModel(case, device="cuda"), [case.context] * 512, case.scheme, 3, coins=lambda i: coins.cuda()
    )
    assert torch.equal(cpu.tokens, gpu.tokens.cpu())


class DenseNaNTarget:
    """The table model, but `target` returns a dense p [B, 1+N, V] whose rows of nodes that are
    not kept are NaN, as a transformer that only runs the kept nodes would leave them."""

    def __init__(self, inner: TableTreeModel) -> None:
        self.inner, self.vocab_size, self.device = inner, inner.vocab_size, inner.device
        self.prefix_len = inner.prefix_len

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def target(self, state, tree):
        rows = self.inner.target(state, tree)
        B, n = tree.tokens.shape
        p = torch.stack([rows.at(torch.full((B,), i, dtype=torch.int64)) for i in range(n)], 1)  # [B, 1+N, V]
        return torch.where(tree.kept[..., None], p, float("nan"))


def test_rows_of_pruned_nodes_are_never_read():
    case = _case()
    lay = RheoLayout(3, 2, 3)
    coins = round_coins(torch.Generator().manual_seed(4), 300, lay)
    table = decode(TableTreeModel(case), [case.context] * 300, case.scheme, 6, coins=lambda i: coins)
    dense = decode(DenseNaNTarget(TableTreeModel(case)), [case.context] * 300, case.scheme, 6, coins=lambda i: coins)
    assert torch.equal(table.tokens, dense.tokens)
