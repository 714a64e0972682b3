"""`TableLM` (rheo_fast.table_lm): a transformers causal LM whose logits are a section-10 table, exactly.

Its logits equal log(row) of the float64 table row of each position's context in float64 (zeros at
NEG), batched, under 2D padding masks with transformers' position ids, 4D tree masks (rheo's own
`kvcache.tree_mask`, float and bool), the cache and its crops; position ids and masks that do not
describe a path are refused; the table draft head of rheo's LM path rebuilds contexts the same way.
"""

from __future__ import annotations

import random
import subprocess
import sys
from fractions import Fraction

import pytest

pytest.importorskip("transformers")

import torch
from helpers import CASES

from rheo_fast.lm import kvcache as kv
from rheo_fast.table_lm import NEG, table_lm, table_lms
from rheo_ref.errors import CaseError
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.models import Case, TableModel, load_case

pytestmark = pytest.mark.usefixtures("one_thread")


def random_table(V: int, L: int, seed: int, zeros: bool = True) -> TableModel:
    """Every context of length <= L gets a row of random integer weights (some 0)."""
    rng = random.Random(seed)
    keys: list[tuple[int, ...]] = [()]
    for n in range(1, L + 1):
        keys += [k + (t,) for k in keys if len(k) == n - 1 for t in range(V)]
    weights = {}
    for k in keys:
        w = [rng.randint(0 if zeros else 1, 9) for _ in range(V)]
        w[rng.randrange(V)] = rng.randint(1, 9)
        weights[k] = w
    return TableModel.from_weights(weights, context_length=L, name="target")


def expected_logits(table: TableModel, context: list[int]) -> torch.Tensor:
    """log of the float64 row, computed here independently of rheo_fast."""
    row = torch.tensor([float(x) for x in table.row(context)], dtype=torch.float64)
    return torch.where(row > 0, row.log(), torch.full_like(row, NEG))  # [V]


@pytest.mark.parametrize("L", [0, 1, 2])
def test_logits_are_the_table_rows_exactly(L):
    table = random_table(4, L, seed=L)
    lm = table_lm(table)
    ids = [2, 0, 3, 3, 1, 0]
    out = lm(torch.tensor([ids]))
    assert out.logits.dtype == torch.float64 and out.logits.shape == (1, len(ids), 4)
    for i in range(len(ids)):
        want = expected_logits(table, ids[: i + 1])
        assert torch.equal(out.logits[0, i], want), (i, out.logits[0, i], want)
        p = torch.softmax(out.logits[0, i], -1)
        exact = torch.tensor([float(x) for x in table.row(ids[: i + 1])], dtype=torch.float64)
        assert torch.equal(p == 0, exact == 0)  # probability 0 stays exactly 0
        assert torch.allclose(p, exact, rtol=0, atol=1e-15)


def test_left_padding_with_transformers_position_ids():
    table = random_table(4, 2, seed=5)
    lm = table_lm(table)
    rows = [[1, 2, 3, 0], [0, 0, 2, 1]]  # the second row: two pads, then [2, 1]
    mask = torch.tensor([[1, 1, 1, 1], [0, 0, 1, 1]])
    pos = (mask.cumsum(-1) - 1).masked_fill(mask == 0, 1)  # what generate gives a left-padded batch
    out = lm(torch.tensor(rows), attention_mask=mask, position_ids=pos)
    for i in range(4):
        assert torch.equal(out.logits[0, i], expected_logits(table, rows[0][: i + 1]))
    assert torch.equal(out.logits[1, 2], expected_logits(table, [2]))
    assert torch.equal(out.logits[1, 3], expected_logits(table, [2, 1]))
    assert torch.equal(out.logits[1, :2], torch.zeros(2, 4, dtype=torch.float64))  # pads: logits 0


def test_batched_sampling_with_padding_runs_generate():
    table = random_table(3, 1, seed=2, zeros=False)
    lm = table_lm(table)
    ids = torch.tensor([[0, 1, 2], [2, 2, 1]])
    mask = torch.tensor([[1, 1, 1], [0, 1, 1]])
    torch.manual_seed(0)
    out = lm.generate(ids, attention_mask=mask, do_sample=True, max_new_tokens=4, pad_token_id=0)
    assert out.shape == (2, 7) and int(out.max()) < 3
    greedy = lm.generate(torch.tensor([[0]]), do_sample=False, max_new_tokens=3)
    ctx = [0]
    for _ in range(3):
        ctx.append(int(expected_logits(table, ctx).argmax()))
    assert greedy[0].tolist() == ctx


def test_cache_and_crop():
    table = random_table(4, 2, seed=7)
    lm = table_lm(table)
    out = lm(torch.tensor([[1, 2]]), use_cache=True)
    cache = out.cache
    assert cache.get_seq_length() == 2
    lm(torch.tensor([[3, 0, 1]]), cache=cache)
    assert cache.get_seq_length() == 5
    cache.crop(-2)  # keep [1, 2, 3]
    assert cache.get_seq_length() == 3
    last = lm(torch.tensor([[2]]), cache=cache, position_ids=torch.tensor([[3]]))
    assert torch.equal(last.logits[0, 0], expected_logits(table, [1, 2, 3, 2]))


@pytest.mark.parametrize("old", ["past_key_values", "cache_params"])
def test_the_cache_under_its_pre_5_25_name_is_extended_not_ignored(old):
    """transformers' own models still take `past_key_values` (renamed `cache` in 5.25); a TableLM that
    swallowed it in **kwargs started a fresh cache, so a decoder appending one token saw it shrink."""
    table = random_table(4, 2, seed=7)
    lm = table_lm(table)
    cache = lm(torch.tensor([[1, 2]]), use_cache=True).cache
    out = lm(torch.tensor([[3]]), use_cache=True, **{old: cache})
    assert out.cache is cache and cache.get_seq_length() == 3
    assert torch.equal(out.logits[0, -1], expected_logits(table, [1, 2, 3]))
    with pytest.raises(CaseError, match="both `cache` and"):
        lm(torch.tensor([[0]]), cache=cache, **{old: cache})


@pytest.mark.parametrize("kind", ["float", "bool"])
def test_tree_masks_give_each_node_its_path(kind):
    """rheo's own 4D tree mask over a cache: node i's logits are the row of context + its path."""
    table = random_table(4, 2, seed=11)
    lm = table_lm(table)
    context = [3, 1, 0]
    cache = lm(torch.tensor([context[:-1]]), use_cache=True).cache  # the root (last token) is a tree node
    parents = torch.tensor([-1, 0, 0, 1, 2, 2])  # node 0 = root
    tokens = torch.tensor([0, 2, 1, 3, 3, 0])
    anc = kv.ancestor_matrix(parents)
    depth = anc.sum(-1) - 1  # [N]
    past = cache.get_seq_length()
    mask = kv.tree_mask(anc, past, torch.float64)
    if kind == "bool":
        mask = mask == 0
    out = lm.model(input_ids=tokens[None], attention_mask=mask, position_ids=(past + depth)[None], cache=cache)
    logits = lm.lm_head(out.last_hidden_state)
    for i in range(len(tokens)):
        path = [int(tokens[j]) for j in range(len(tokens)) if anc[i, j]]
        assert torch.equal(logits[0, i], expected_logits(table, context[:-1] + path)), i
    # the one-hot part of the hidden state is the node's own token (read by the table draft head)
    assert torch.equal(out.last_hidden_state[0, :, 4:].argmax(-1), tokens)


def test_wrong_position_ids_and_non_path_masks_are_refused():
    lm = table_lm(random_table(4, 1, seed=3))
    with pytest.raises(CaseError, match=r"position ids \[0, 1, 3\]"):
        lm(torch.tensor([[1, 2, 3]]), position_ids=torch.tensor([[0, 1, 3]]))
    anc = torch.tensor([[1, 0, 0], [1, 1, 0], [0, 1, 1]], dtype=torch.bool)  # node 2 sees node 1 but not the root
    mask = kv.tree_mask(anc, 0, torch.float64)
    with pytest.raises(CaseError, match="position ids"):
        lm(torch.tensor([[1, 2, 3]]), attention_mask=mask, position_ids=torch.tensor([[0, 1, 2]]))
    with pytest.raises(CaseError, match=r"bias -0\.5"):
        lm(torch.tensor([[1, 2]]), attention_mask=torch.tensor([[[[0.0, -0.5], [0.0, 0.0]]]], dtype=torch.float64))
    with pytest.raises(CaseError, match=r"2D attention mask of shape \[1, 3\]"):
        lm(torch.tensor([[1, 2]]), attention_mask=torch.ones(1, 3))
    relaxed = table_lm(random_table(4, 1, seed=3), strict_positions=False)
    relaxed(torch.tensor([[1, 2, 3]]), position_ids=torch.tensor([[0, 1, 3]]))  # not checked when asked not to


def test_a_context_without_a_row_is_named():
    lm = table_lm(TableModel.from_rows({(0,): ["1/2", "1/2"]}, name="target"))
    lm(torch.tensor([[0]]))
    with pytest.raises(CaseError, match=r"target: reachable context \[1\] \(key '1'\) has no row"):
        lm(torch.tensor([[0, 1]]))


def test_inputs_embeds_and_logits_to_keep():
    table = random_table(3, 1, seed=4)
    lm = table_lm(table)
    ids = torch.tensor([[2, 0, 1]])
    a = lm(ids).logits
    b = lm(inputs_embeds=lm.model.embed_tokens(ids)).logits
    assert torch.equal(a, b)
    assert torch.equal(lm(ids, logits_to_keep=1).logits, a[:, -1:])


def test_a_case_gives_draft_and_target():
    case = load_case(str(CASES / "hf.json"))
    draft, target = table_lms(case)
    assert draft.table == case.q_samp_model and target.table == case.target
    assert draft.config.vocab_size == 4 and target.config.hidden_size == 8
    assert target.config.table == case.target.to_json()


def test_importing_the_module_does_not_import_transformers():
    probe = "import sys, rheo_fast, rheo_fast.table_lm; print('transformers' in sys.modules)"
    r = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0 and r.stdout.strip() == "False", r.stderr


# --- rheo's LM path on TableLM: its bookkeeping decides which rows are read -----------------


def _lm_case(L: int = 1) -> Case:
    q = random_table(4, L, seed=20 + L, zeros=False)
    p = random_table(4, L, seed=30 + L)
    return Case(TableModel(q.vocab_size, L, q.probs, "draft"), p, Scheme(3, 1, 2, 2, 5), (0, 1), 2)


def test_the_table_draft_head_refuses_a_mask_that_shows_no_path():
    from rheo_fast.lm.table_head import TableDraftHead

    head = TableDraftHead(_lm_case().draft)
    feat = torch.zeros(1, 2, 8, dtype=torch.float64)
    feat[0, :, 4] = 1  # the previous token of both inputs is 0
    emb = torch.eye(4, dtype=torch.float64)[[1, 2]][None]  # inputs x = 1, 2
    both = torch.zeros(1, 1, 2, 2)  # each sees both: input 1 sees token 2 at position 1 too
    with pytest.raises(CaseError, match="sees tokens 1 and 2 at position 1"):
        head(feat, emb, torch.tensor([[1, 1]]), mask=both)
    with pytest.raises(CaseError, match=r"sees positions \[1, 2\]"):
        head(feat, emb, torch.tensor([[2, 3]]), mask=torch.tensor([[[[0.0, float("-inf")], [0.0, 0.0]]]]))


@pytest.mark.parametrize("L", [1, 2])
def test_rheo_lm_path_breaks_loudly_when_its_masks_or_positions_break(L, monkeypatch):
    """Negative controls of the LM path on TableLM: a tree mask without ancestors, or tree position
    ids off by one, is refused by the target TableLM instead of decoding a wrong law."""
    from rheo_fast.lm.table_head import generate_tokens, table_tree_model

    case = _lm_case(L)
    lm = table_tree_model(case)
    g = torch.Generator().manual_seed(0)
    assert len(generate_tokens(lm, [0, 1], case.scheme_as(Scheme), 4, g)) == 4
    with monkeypatch.context() as m:  # every tree node sees the cache and itself only
        m.setattr(kv, "ancestor_matrix", lambda parents: torch.eye(len(parents), dtype=torch.bool))
        with pytest.raises(CaseError, match="position ids"):
            generate_tokens(table_tree_model(case), [0, 1], case.scheme_as(Scheme), 4, g)
    real_forward = kv.forward
    monkeypatch.setattr(
        kv,
        "forward",
        lambda model, cache, tokens, *, anc=None, depths=None, layers=(): real_forward(
            model, cache, tokens, anc=anc, depths=None if depths is None else depths + 1, layers=layers
        ),
    )
    with pytest.raises(CaseError, match="position ids"):
        generate_tokens(table_tree_model(case), [0, 1], case.scheme_as(Scheme), 4, g)


def test_fraction_rows_survive_the_round_trip_through_the_config():
    table = TableModel.from_rows({(): ["1/3", "2/3"]}, name="t")
    assert table_lm(table).table.probs[""] == (Fraction(1, 3), Fraction(2, 3))
