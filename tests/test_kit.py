"""The stand-in kit (rheo_fast.kit): exact rows of the path a position's mask lets it see, and a mask,
position or KV-cache slip in the decoder that drives it either raises or changes the row used."""

from __future__ import annotations

import pytest
import torch

from rheo_fast.kit import (
    TableBodyLayer,
    TableDraftLayer,
    draft_fc,
    grow_cache,
    table_embedding,
    table_lm_head,
)
from rheo_fast.table_lm import log_rows
from rheo_ref.errors import CaseError
from rheo_ref.models import TableModel

V = 4
P = TableModel.from_json(
    {
        "vocab_size": V,
        "context_length": 2,
        "probs": {
            "": ["1/4", "1/4", "1/4", "1/4"],
            **{f"{a}": ["1/10", "2/10", "3/10", "4/10"] for a in range(V)},
            **{f"{a},{b}": [f"{1 + (a + b + i) % 4}/10" for i in range(V)] for a in range(V) for b in range(V)},
        },
    }
)


def body_logits(tokens, positions, mask=None, past=None, dtype=torch.float64):
    """lm_head(layer(embedding(tokens))): logits [1, N, V] of one call, and the cache it returns."""
    layer = TableBodyLayer(P, dtype=dtype)
    emb, head = table_embedding(V, dtype=dtype), table_lm_head(V, dtype=dtype)
    hid, present = layer(emb(torch.tensor([tokens])), mask, torch.tensor([positions]), past)
    return head(hid), present


def row(ctx):
    return log_rows(torch.tensor([[float(x) for x in P.row(ctx)]], dtype=torch.float64))[0]  # [V]


def test_body_and_lm_head_give_the_log_row_of_each_prefix_exactly():
    logits, _ = body_logits([3, 1, 2], [0, 1, 2])
    for i, ctx in enumerate(([3], [3, 1], [3, 1, 2])):
        assert torch.equal(logits[0, i], row(ctx)), ctx


def tree_mask(rows):
    """A 4D additive mask [1, 1, N, N] from the keys each query sees (0 attend, finfo.min blocked)."""
    m = torch.full((len(rows), len(rows)), torch.finfo(torch.float32).min)
    for i, seen in enumerate(rows):
        m[i, seen] = 0
    return m[None, None]


def test_a_tree_node_gets_the_row_of_its_path():
    # prefix 3, then siblings 1 and 2 at position 1, then 0 below sibling 2 (position 2)
    logits, _ = body_logits([3, 1, 2, 0], [0, 1, 1, 2], tree_mask([[0], [0, 1], [0, 2], [0, 2, 3]]))
    assert torch.equal(logits[0, 2], row([3, 2])) and torch.equal(logits[0, 3], row([3, 2, 0]))


@pytest.mark.parametrize(
    "positions, seen, what",
    [
        ([0, 1, 1, 2], [[0], [0, 1], [0, 1, 2], [0, 2, 3]], "sees a sibling"),
        ([0, 1, 1, 2], [[0], [0, 1], [0, 2], [0, 3]], "misses its parent"),
        ([0, 1, 1, 3], [[0], [0, 1], [0, 2], [0, 2, 3]], "a position id off by one"),
    ],
)
def test_a_mask_or_position_slip_raises(positions, seen, what):
    with pytest.raises(CaseError, match="position ids"):
        body_logits([3, 1, 2, 0], positions, tree_mask(seen))


def test_a_cache_that_kept_the_wrong_entry_changes_the_row():
    """After a round the decoder must keep the accepted node's cache entry; keeping its sibling's
    instead (same position) is not refused, but the next position then gets another row."""
    _, (k, v) = body_logits([3, 1, 2], [0, 1, 1], tree_mask([[0], [0, 1], [0, 2]]))
    right = (k[:, :, [0, 2]], v[:, :, [0, 2]])  # accepted: the sibling 2
    wrong = (k[:, :, [0, 1]], v[:, :, [0, 1]])
    good, _ = body_logits([0], [2], None, right)
    bad, _ = body_logits([0], [2], None, wrong)
    assert torch.equal(good[0, 0], row([3, 2, 0])) and not torch.equal(bad[0, 0], good[0, 0])


def draft_step(prev_feat_tokens, tokens, positions, mask=None, past=None, shift=1):
    """The EAGLE draft input: fc(cat(embedding of x_(i+1), feature whose one-hot part is x_i))."""
    emb = table_embedding(V)
    feat = torch.cat(
        [torch.zeros(1, len(tokens), V, dtype=torch.float64), emb(torch.tensor([prev_feat_tokens]))[..., V:]], -1
    )
    x = draft_fc(V)(torch.cat([emb(torch.tensor([tokens])), feat], -1))  # [1, N, 2V]
    layer = TableDraftLayer(P, shift=shift)
    hid, present = layer(x, mask, torch.tensor([positions]), past)
    return table_lm_head(V)(hid), present


def test_the_draft_head_gives_the_q_row_of_its_path_in_eagles_convention():
    # features of positions 0, 1 carry x_0 = 3, x_1 = 1; their inputs the tokens x_1 = 1, x_2 = 2
    logits, past = draft_step([3, 1], [1, 2], [0, 1])
    assert torch.equal(logits[0, 0], row([3, 1])) and torch.equal(logits[0, 1], row([3, 1, 2]))
    # a tree level: two children (0 and 3) of x_2 = 2 at position 2, each sees the past and itself
    mask = torch.zeros(1, 1, 2, 4)
    mask[0, 0, 0, 3] = mask[0, 0, 1, 2] = torch.finfo(torch.float32).min
    logits, _ = draft_step([2, 2], [0, 3], [2, 2], mask, past)
    assert torch.equal(logits[0, 0], row([3, 1, 2, 0])) and torch.equal(logits[0, 1], row([3, 1, 2, 3]))


def test_a_draft_node_that_sees_its_sibling_raises():
    _, past = draft_step([3, 1], [1, 2], [0, 1])
    with pytest.raises(CaseError, match="one path"):
        draft_step([2, 2], [0, 3], [2, 2], torch.zeros(1, 1, 2, 4), past)


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16])
def test_half_precision_keeps_tokens_exact_and_rounds_only_the_rows(dtype):
    logits, (k, _) = body_logits([3, 1, 2], [0, 1, 2], dtype=dtype)
    assert logits.dtype == dtype and k.dtype == dtype and k[0, 0, :, 0].tolist() == [3, 1, 2]
    rel = 2.0**-8 if dtype == torch.bfloat16 else 2.0**-11
    assert torch.allclose(logits[0, 2].double(), row([3, 1, 2]), rtol=rel, atol=0)


def test_half_precision_refuses_what_it_cannot_hold_exactly():
    big = TableModel.from_json({"vocab_size": 300, "context_length": 0, "probs": {"": ["1/300"] * 300}})
    with pytest.raises(CaseError, match="bfloat16 holds integers exactly only up to 256"):
        TableBodyLayer(big, dtype=torch.bfloat16)


def test_an_unknown_cache_is_refused():
    k = torch.zeros(1, 1, 1, 2)
    with pytest.raises(CaseError, match="past_key_value of type str"):
        grow_cache("cache", k, k, 0)
