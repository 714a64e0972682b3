"""Every family on the real-model code path (`rheo_fast.lm.decode`), model-free: `LMTreeModel`
driven by table models (`rheo_fast.lm.table_head`: a `TableLM` target and a table draft head
that rebuild each node's context from what its attention mask shows, so a wrong mask, position
or KV compaction changes the rows or raises).

- Coupling: `generate_tree` on the LM path emits the very tokens `rheo_fast.decode.decode` emits
  on the same tables from the same generator (same coin blocks), for static shapes with
  undrafted nodes (a `wor` node with more children than its draft support; T = 0 makes every
  `wor` node's second child undrafted), every sampling and verifier, and for the rheo family.
- The method table of `rheo generate`: budgets, depths, families.
- Cost counters: draft calls and forwards per round.
"""

from __future__ import annotations

import random

import pytest

pytest.importorskip("transformers")

import torch

from rheo_fast.decode import decode
from rheo_fast.family import layout_for
from rheo_fast.lm.decode import METHODS, LMTreeModel, TreeSize, describe, generate_tree, scheme_for
from rheo_fast.lm.table_head import table_tree_model
from rheo_fast.models import TableTreeModel
from rheo_ref.errors import CaseError
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.families.static.scheme import StaticScheme
from rheo_ref.models import Case, TableModel

pytestmark = pytest.mark.usefixtures("one_thread")

V, L, CONTEXT = 4, 2, (0, 1)


def table(seed: int, zeros: float) -> TableModel:
    """Every context of length <= L gets a row of random integer weights, each 0 with probability
    `zeros` (at least one entry positive)."""
    rng = random.Random(seed)
    keys: list[tuple[int, ...]] = [()]
    for n in range(1, L + 1):
        keys += [k + (t,) for k in keys if len(k) == n - 1 for t in range(V)]
    weights = {}
    for k in keys:
        w = [0 if rng.random() < zeros else rng.randint(1, 9) for _ in range(V)]
        w[rng.randrange(V)] = rng.randint(1, 9)
        weights[k] = w
    return TableModel.from_weights(weights, context_length=L, name="t")


DRAFT = TableModel(V, L, table(1, zeros=0.6).probs, "draft")  # small supports: wor runs out of tokens
TARGET = TableModel(V, L, table(2, zeros=0.2).probs, "target")

STATIC = [
    StaticScheme("branching", (3, 1, 1), "wor", "traversal"),  # static-traversal's rollouts
    StaticScheme("delayed", (3, 1, 2), "wor", "traversal"),  # delayed-traversal's shape
    StaticScheme("branching", (2, 2), "iid", "traversal"),
    StaticScheme("parents", (0, 0, 1, 1, 2, 3), "wor", "rrsw"),
    StaticScheme("branching", (2, 1), "iid", "specinfer"),
]


def both(scheme, T: float, seed: int, n: int = 8):
    case = Case(DRAFT, TARGET, scheme, CONTEXT, 2)
    got = generate_tree(
        table_tree_model(case, T=T), list(CONTEXT), scheme, max_new=n, generator=torch.Generator().manual_seed(seed)
    )
    want = decode(TableTreeModel(case, T=T), [list(CONTEXT)], scheme, n, generator=torch.Generator().manual_seed(seed))
    return got, want


@pytest.mark.parametrize("T", [1.0, 0.0])
@pytest.mark.parametrize("scheme", STATIC + [Scheme(3, 1, 2, 3, 5)], ids=str)
def test_lm_path_emits_the_table_fast_path_s_tokens_coin_for_coin(scheme, T):
    for seed in range(4):
        got, want = both(scheme, T, seed)
        assert got.tokens == want.tokens[0].tolist(), (seed, got.tokens, want.tokens)
        assert got.rounds == int(want.rounds[0])


def test_the_coupling_sees_undrafted_nodes_and_duplicates():
    """The comparisons above are not vacuous: T = 0 wor trees leave nodes undrafted (their draft
    rows are zero, the head is not run on them) and iid trees draw duplicate siblings."""
    from rheo_fast.families.static.tree import draw_tree

    scheme = STATIC[0]
    lay = layout_for(scheme)
    lm = table_tree_model(Case(DRAFT, TARGET, scheme, CONTEXT, 2), T=0.0)
    st = lm.start([list(CONTEXT)])
    tree, _, _ = draw_tree(lm, st, lay, torch.rand(1, lay.N + 1, dtype=torch.float64))
    assert not bool(tree.drafted.all())
    iid = STATIC[2]
    lay = layout_for(iid)
    dup = 0
    for seed in range(20):
        lm = table_tree_model(Case(DRAFT, TARGET, iid, CONTEXT, 2))
        g = torch.Generator().manual_seed(seed)
        tree, _, _ = draw_tree(lm, lm.start([list(CONTEXT)]), lay, torch.rand(1, lay.N + 1, generator=g).double())
        dup += int(tree.tokens[0, 1] == tree.tokens[0, 2])
    assert dup > 0


def test_a_wrong_accepted_path_breaks_the_coupling(monkeypatch):
    """Negative control: committing a sibling of the last accepted node (same depth, another
    token: the caches then hold a context that was not emitted) is refused by the table head
    (its keys show two tokens at one position) or changes the tokens."""
    real = LMTreeModel.accepted_path
    swaps = []

    def sibling(self, st, acc):
        path = real(self, st, acc)
        tree, kept = st.tree, st.kept_ids.tolist()
        other = [v for v in kept if v > 0 and int(tree.depth[v]) == len(acc) and v != path[-1]]
        other = [v for v in other if int(tree.tokens[0, v]) != int(tree.tokens[0, path[-1]])]
        if len(acc) and other:
            swaps.append(1)
            return path[:-1] + [other[0]]
        return path

    monkeypatch.setattr(LMTreeModel, "accepted_path", sibling)
    differ = 0
    for seed in range(4):
        try:
            got, want = both(STATIC[2], 1.0, seed)
        except CaseError as e:
            assert "its mask must show one path" in str(e)
            differ += 1
            continue
        differ += got.tokens != want.tokens[0].tolist()
    assert swaps and differ > 0


def test_methods_fill_the_node_budget_at_depth_d():
    size = TreeSize()  # K=6 W=4 D=4 R=16
    for name in ("static-traversal", "delayed-traversal"):
        s = scheme_for(name, size)
        assert isinstance(s, StaticScheme) and s.lossless
        assert (s.nodes, s.D, s.sampling, s.verify) == (16, 4, "wor", "traversal"), name
    assert scheme_for("delayed-traversal", size).sizes == (5, 1, 3)
    assert scheme_for("static-traversal", size).sizes == (4, 1, 1, 1)
    for R, D in ((7, 3), (5, 1), (16, 2)):  # other sizes: at most R nodes, depth D
        for name in ("static-traversal", "delayed-traversal"):
            s = scheme_for(name, TreeSize(R=R, D=D))
            assert s.nodes <= R and s.D == D, (name, R, D)
    ts = scheme_for("tsubame", size)
    assert (ts.family, ts.K, ts.W, ts.D, ts.R, ts.sampling, ts.verify) == ("tsubame", 6, 4, 4, 16, "wor", "traversal")
    sp = scheme_for("treespark", size)
    assert (sp.family, sp.N, sp.k, sp.D, sp.theta, str(sp.calibration), sp.verify) == (
        "treespark",
        16,
        6,
        4,
        0,
        "sigmoid:0.6684,-0.4587",
        "rrsw",
    )
    for m in METHODS:
        s = scheme_for(m, size)
        assert (s is None) == (m == "ar") and (s is None or describe(s))
    with pytest.raises(CaseError, match="unknown method 'medusa'; allowed: ar, chain"):
        scheme_for("medusa", size)


def test_cli_method_list_is_the_decoder_s():
    from rheo.cli.lm import _methods

    assert _methods() == METHODS


@pytest.mark.parametrize("method", ["tsubame", "treespark"])
def test_new_families_run_on_the_lm_path(method):
    """Tsubame / TreeSpark through the LM path at T = 0 give the target's greedy tokens."""
    scheme = scheme_for(method, TreeSize(K=3, W=2, D=2, R=4))
    case = Case(DRAFT, TARGET, scheme, CONTEXT, 2)
    got = generate_tree(
        table_tree_model(case, T=0.0), list(CONTEXT), scheme, max_new=8, generator=torch.Generator().manual_seed(0)
    )
    greedy = decode(TableTreeModel(case, T=0.0), [list(CONTEXT)], Scheme(1, 0, 1, 1, 1), 8, generator=torch.Generator())
    assert got.tokens == greedy.tokens[0].tolist()
    assert got.draft_calls >= got.rounds  # every round drafts at least once


def test_draft_calls_and_forwards_per_round_are_counted():
    """A static round calls the draft once per depth with expanders (D for the rollouts); the
    head runs one forward per call with a drafted node, plus the prompt's first feed."""
    scheme = STATIC[0]  # branching (3, 1, 1): depths 0, 1, 2 have expanders
    g = torch.Generator().manual_seed(0)
    res = generate_tree(
        table_tree_model(Case(DRAFT, TARGET, scheme, CONTEXT, 2)), list(CONTEXT), scheme, max_new=6, generator=g
    )
    assert res.draft_calls == 3 * res.rounds
    assert res.rounds <= res.draft_forwards <= 3 * res.rounds
    rheo = Scheme(3, 1, 2, 3, 5)
    res = generate_tree(
        table_tree_model(Case(DRAFT, TARGET, rheo, CONTEXT, 2)), list(CONTEXT), rheo, max_new=6, generator=g
    )
    assert res.draft_calls == res.draft_forwards == 3 * res.rounds  # D calls, every frontier node drafted
    assert res.target_tokens == res.rounds * 6  # root + R = 5 kept nodes per round


def test_bench_t_interval_is_student_t_over_prompts():
    import math

    from rheo_fast.lm.bench import t_interval

    lo, mid, hi = t_interval([1.0, 2.0, 3.0])  # mean 2, s = 1, t_{0.975, 2} = 4.302653
    assert mid == 2.0 and math.isclose(hi - mid, 4.302653 / math.sqrt(3), rel_tol=1e-6)
    assert math.isclose(mid - lo, hi - mid)
    lo, mid, hi = t_interval([1.5])  # one prompt: no interval
    assert mid == 1.5 and math.isnan(lo) and math.isnan(hi)
