"""The stand-in kit: table-backed replacements for the neural pieces of a tree decoder that splits
body, head and draft (EAGLE-1/2/3, Medusa and their kin; docs/THIRD_PARTY.md §6, docs/GATE.md).

Such a decoder calls the target's transformer body and its `lm_head` separately, feeds the target's
hidden states to a draft head, and builds tree attention masks, position ids and KV caches of its
own. The kit replaces only the *neural* modules; the decoder's own code (mask building, position ids,
cache bookkeeping, sampling, verification) runs unchanged around them:

- `table_embedding(V)`: token -> [0, one-hot token] (width 2V), an `nn.Embedding`;
- `TableBodyLayer(p)`: a decoder layer of the target body. It reads each input's token from its
  hidden state, stores (token id, position id) in the layer's KV cache, and returns at every
  position [log p row of the path its attention mask lets it see, one-hot token];
- `table_lm_head(V)`: an `nn.Linear(2V, V)` with weight [I, 0]: the logits are the log p row;
- `draft_fc(V)`: the draft head's input fusion, an `nn.Linear(4V, 2V)` taking (token embedding,
  target feature) to [one-hot previous token, one-hot token] (EAGLE concatenates in that order);
- `TableDraftLayer(q)`: a decoder layer of the draft head. Input i carries the token x_{i+s} (s =
  `shift`: EAGLE-1 feeds the feature of position i with the token i + 1) and, through the feature,
  x_{i+s-1}; it stores (x_{i+s}, i) in its keys and x_{i+s-1} in its values, and returns [log q row
  of the path its mask lets it see, one-hot x_{i+s}], so the target's `lm_head` gives log q.

A slip in the decoder changes the law or raises: a position's context is the path *its mask* lets
it see, in cache order, with the tokens *its cache* holds; the visible keys' position ids must be
0..n-1 (body) or cover 0..pos exactly once (draft), else a `CaseError` names them. So a node that
sees a sibling, misses an ancestor, gets a wrong position id, or a cache that keeps the wrong
entries after a round either raises or changes the row used, which the exact law then catches.

Masks: None (causal), 2D padding [B, S], or 4D [B|1, 1|H, N, S] boolean (True = attend) or additive
(0 = attend, ≤ −5000 or −inf = blocked; other biases are refused), as `rheo_fast.table_lm` reads them.
Caches: a layer's `past_key_value` may be None, a (keys, values) tensor pair (returned grown, the
legacy convention), a pair of objects with `.cat(t, dim=2)` (EAGLE/Medusa's `KVCache`), or a
transformers `Cache` (`.update(k, v, layer_idx)`). Keys and values are [B, 1, S, 2] (token, position).

dtype: float64 by default, exact as `TableLM` is (log rows of float64, zeros at −1e4). Every piece
takes `dtype=`; in float16 / bfloat16 the one-hot parts, the [I, 0] weights and the token and
position ids in the cache stay exact (integers up to 2048 in float16, 256 in bfloat16: a larger
vocabulary or context is refused), and only the log rows are rounded (relative 2^-11 in float16,
2^-8 in bfloat16), which moves the law by a TV of order 1e-3 / 1e-2: run the gate in float64, and
float16 / bfloat16 to find dtype bugs (a crash or a promotion), not to measure TV.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import Tensor, nn

from rheo_ref.errors import CaseError
from rheo_ref.models import TableModel

from .table_lm import LogTable, allowed_keys, check_token_ids, visible_windows

EXACT_INTS = {torch.float16: 2048, torch.bfloat16: 256}  # largest integer every smaller one of which is exact


def _check_dtype(dtype: torch.dtype, largest: int) -> None:
    if not dtype.is_floating_point:
        raise CaseError(f"dtype {dtype} must be a floating point dtype (float64, float32, float16, bfloat16)")
    bound = EXACT_INTS.get(dtype)
    if bound is not None and largest > bound:
        raise CaseError(f"dtype {dtype} holds integers exactly only up to {bound}; this table needs {largest}")


class TableEmbedding(nn.Embedding):
    """An `nn.Embedding` that names a token id outside 0..V-1 (or a float / bool id tensor) and its
    position, instead of torch's `IndexError: index out of range in self`."""

    def forward(self, input: Tensor) -> Tensor:
        ids = check_token_ids(input, self.num_embeddings, "the kit embedding's input ids", ndim=None)
        return super().forward(ids.long())  # [..., 2V]; any integer dtype (nn.Embedding takes int32/int64 only)


def table_embedding(V: int, *, dtype: torch.dtype = torch.float64) -> nn.Embedding:
    """token -> [0 (V), one-hot token (V)]: the embedding of the kit's body and draft head."""
    emb = TableEmbedding(V, 2 * V, dtype=dtype)
    with torch.no_grad():
        emb.weight.zero_()
        emb.weight[:, V:] = torch.eye(V, dtype=dtype)
    emb.weight.requires_grad_(False)
    return emb


def table_lm_head(V: int, *, dtype: torch.dtype = torch.float64) -> nn.Linear:
    """lm_head: hidden [.., 2V] -> logits [.., V], the first V columns (weight [I, 0], exact in any dtype)."""
    head = nn.Linear(2 * V, V, bias=False, dtype=dtype)
    with torch.no_grad():
        head.weight.zero_()
        head.weight[:, :V] = torch.eye(V, dtype=dtype)
    head.weight.requires_grad_(False)
    return head


def draft_fc(V: int, *, dtype: torch.dtype = torch.float64) -> nn.Linear:
    """The draft head's fusion: cat(embedding of x [0, one-hot x], feature [row, one-hot x_prev]) [.., 4V]
    -> [one-hot x_prev, one-hot x] [.., 2V] (a 0/1 weight, exact in any dtype)."""
    fc = nn.Linear(4 * V, 2 * V, bias=False, dtype=dtype)
    with torch.no_grad():
        fc.weight.zero_()
        fc.weight[:V, 3 * V :] = torch.eye(V, dtype=dtype)  # x_prev from the feature's one-hot part
        fc.weight[V:, V : 2 * V] = torch.eye(V, dtype=dtype)  # x from the embedding's one-hot part
    fc.weight.requires_grad_(False)
    return fc


def grow_cache(past: Any, k: Tensor, v: Tensor, layer_idx: int) -> tuple[Tensor, Tensor, Any]:
    """Append this call's keys/values [B, 1, N, 2] to a layer cache in any of the supported conventions
    (see the module docstring). Returns all keys, all values [B, 1, S, 2] and what the layer returns."""
    if past is None:
        return k, v, (k, v)
    if hasattr(past, "update"):  # a transformers Cache
        kk, vv = past.update(k.to(torch.float64), v.to(torch.float64), layer_idx)
        return kk, vv, past
    if isinstance(past, (tuple, list)) and len(past) == 2:
        if hasattr(past[0], "cat"):  # EAGLE/Medusa KVCache: written in place, nothing returned
            return past[0].cat(k.to(past[0].data.dtype), dim=2), past[1].cat(v.to(past[1].data.dtype), dim=2), None
        if isinstance(past[0], Tensor):
            kk, vv = torch.cat([past[0], k.to(past[0].dtype)], 2), torch.cat([past[1], v.to(past[1].dtype)], 2)
            return kk, vv, (kk, vv)
    raise CaseError(
        f"past_key_value of type {type(past).__name__}; the kit takes None, a (keys, values) pair of tensors, "
        f"a pair of caches with .cat, or a transformers Cache"
    )


class _LlamaLayout(nn.Module):
    """`self_attn.q_proj.weight`: where decoders written for Llama look up a layer's device and dtype."""

    def __init__(self, dtype: torch.dtype) -> None:
        super().__init__()
        self.self_attn = nn.Module()
        self.self_attn.q_proj = nn.Linear(1, 1, bias=False, dtype=dtype)
        self.self_attn.q_proj.weight.requires_grad_(False)


class TableBodyLayer(_LlamaLayout):
    """A decoder layer of the target body whose output at a position is [log p row of its visible path,
    one-hot token] (see the module docstring)."""

    def __init__(
        self, table: TableModel, *, dtype: torch.dtype = torch.float64, layer_idx: int = 0, max_positions: int = 256
    ) -> None:
        super().__init__(dtype)
        _check_dtype(dtype, max(table.vocab_size, max_positions))
        self.V, self.dtype, self.layer_idx = table.vocab_size, dtype, layer_idx
        self.log_table = LogTable(table)

    def forward(
        self,
        hidden_states: Tensor,
        attention_mask: Tensor | None = None,
        position_ids: Tensor | None = None,
        past_key_value: Any = None,
        output_attentions: bool = False,
        use_cache: bool = False,
        **kwargs: Any,
    ) -> tuple[Any, ...]:
        B, N, _ = hidden_states.shape
        tok = hidden_states[..., self.V :].argmax(-1)  # [B, N]
        if position_ids is None:
            raise CaseError("a kit body layer needs position_ids (the decoder's, checked against the mask)")
        pos = position_ids.reshape(-1, N).expand(B, N)  # [B, N]
        k = torch.stack([tok, pos], -1).to(self.dtype)[:, None]  # [B, 1, N, 2] (token, position)
        kk, _, present = grow_cache(past_key_value, k, k, self.layer_idx)  # [B, 1, S, 2]
        S = kk.shape[2]
        allowed = allowed_keys(attention_mask, B, N, S)  # [B, N, S]
        windows, real = visible_windows(kk[:, 0, :, 0].long(), kk[:, 0, :, 1].long(), allowed, self.log_table.L)
        rows = self.log_table.lookup(windows, real).to(self.dtype)  # [B, N, V]
        out = torch.cat([rows, hidden_states[..., self.V :].to(self.dtype)], -1)  # [B, N, 2V]
        return (out, None, present) if output_attentions else (out, present)


def draft_windows(keys: list, prev: list, allowed: list, pos: list, L: int, shift: int) -> Tensor:
    """Each draft query's last L context tokens [B, F, L], from the positions its visible keys cover.

    keys[b][j] = (x, i): key j holds token x at token position i + shift; prev[b][j] its previous token;
    allowed[b][f][j]; pos[b][f] the query's position id. The keys a query sees must cover the token
    positions 0..pos + shift exactly once each (the first one, at shift − 1, through a feature)."""
    out = []
    for b, rows in enumerate(allowed):
        wins = []
        for f, row in enumerate(rows):
            at: dict[int, int] = {}
            for j, ok in enumerate(row):
                if ok:
                    (x, i), xp = keys[b][j], prev[b][j]
                    for where, t in ((i + shift, x), (i + shift - 1, xp)):
                        if at.setdefault(where, t) != t:
                            raise CaseError(
                                f"draft query {f} sees tokens {at[where]} and {t} at position {where}; "
                                f"its mask must show one path"
                            )
            top = pos[b][f] + shift
            if sorted(at) != list(range(top + 1)):
                raise CaseError(
                    f"draft query {f} at position {pos[b][f]} sees positions {sorted(at)}; "
                    f"its mask must show the whole path 0..{top}"
                )
            path = [at[i] for i in range(top + 1)]
            tail = path[-L:] if L else []
            wins.append([-1] * (L - len(tail)) + tail)
        out.append(wins)
    return torch.tensor(out, dtype=torch.int64).reshape(len(allowed), -1, L)


class TableDraftLayer(_LlamaLayout):
    """A decoder layer of the draft head whose output is [log q row of its visible path, one-hot token]
    (see the module docstring; `shift` = 1 for EAGLE-1's inputs, 0 for rheo's own head)."""

    def __init__(
        self,
        table: TableModel,
        *,
        dtype: torch.dtype = torch.float64,
        shift: int = 1,
        layer_idx: int = 0,
        max_positions: int = 256,
    ) -> None:
        super().__init__(dtype)
        _check_dtype(dtype, max(table.vocab_size, max_positions))
        if shift not in (0, 1):
            raise CaseError(f"shift={shift!r}; allowed: 0 (input i carries x_i) or 1 (x_(i+1), EAGLE)")
        self.V, self.dtype, self.shift, self.layer_idx = table.vocab_size, dtype, shift, layer_idx
        self.log_table = LogTable(table)

    def forward(
        self,
        hidden_states: Tensor,
        attention_mask: Tensor | None = None,
        position_ids: Tensor | None = None,
        past_key_value: Any = None,
        output_attentions: bool = False,
        use_cache: bool = False,
        **kwargs: Any,
    ) -> tuple[Any, ...]:
        B, N, _ = hidden_states.shape
        prev = hidden_states[..., : self.V].argmax(-1)  # [B, N] x_(i+s-1)
        tok = hidden_states[..., self.V :].argmax(-1)  # [B, N] x_(i+s)
        if position_ids is None:
            raise CaseError("a kit draft layer needs position_ids (the decoder's, checked against the mask)")
        pos = position_ids.reshape(-1, N).expand(B, N)  # [B, N]
        k = torch.stack([tok, pos], -1).to(self.dtype)[:, None]  # [B, 1, N, 2]
        v = torch.stack([prev, pos], -1).to(self.dtype)[:, None]  # [B, 1, N, 2]
        kk, vv, present = grow_cache(past_key_value, k, v, self.layer_idx)  # [B, 1, S, 2]
        S = kk.shape[2]
        allowed = allowed_keys(attention_mask, B, N, S)  # [B, N, S]
        windows = draft_windows(
            kk[:, 0].long().tolist(), vv[:, 0, :, 0].long().tolist(), allowed.tolist(), pos.tolist(),
            self.log_table.L, self.shift,
        )  # fmt: skip
        rows = self.log_table.lookup(windows, torch.ones(B, N, dtype=torch.bool)).to(self.dtype)  # [B, N, V]
        out = torch.cat([rows, hidden_states[..., self.V :].to(self.dtype)], -1)  # [B, N, 2V]
        return (out, None, present) if output_attentions else (out, present)


__all__ = [
    "TableBodyLayer",
    "TableDraftLayer",
    "draft_fc",
    "draft_windows",
    "grow_cache",
    "table_embedding",
    "table_lm_head",
]
