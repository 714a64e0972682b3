"""Tree attention on top of the target's KV cache (EAGLE-2 / SpecInfer style).

A round appends the N tree nodes after the L cached context tokens. Node i attends to the whole
cached context and to its own ancestors (and itself), through an additive float 4D mask
(0 / finfo.min; a bool mask is silently wrong with eager attention), at position id
L + depth(i) - 1. After verification the cache is compacted to the accepted path.
"""

from __future__ import annotations

from typing import Any

import torch


def ancestor_matrix(parents: torch.Tensor) -> torch.Tensor:
    """anc[i, j] = node j is node i or one of its ancestors. parents: [N], -1 for children of the root,
    parents[i] < i (nodes in creation order)."""
    n = parents.shape[0]
    anc = torch.eye(n, dtype=torch.bool)  # [N, N]
    for i in range(n):
        p = int(parents[i])
        if p >= 0:
            anc[i] |= anc[p]
    return anc


def tree_mask(anc: torch.Tensor, past: int, dtype: torch.dtype = torch.float32) -> torch.Tensor:
    """Additive mask [1, 1, N, past + N]: 0 where attention is allowed, finfo.min elsewhere."""
    n = anc.shape[0]
    allowed = torch.cat([torch.ones(n, past, dtype=torch.bool), anc], dim=1)  # [N, past+N]
    mask = torch.zeros(n, past + n, dtype=dtype)
    mask.masked_fill_(~allowed, torch.finfo(dtype).min)
    return mask[None, None]


def cache_len(cache: Any) -> int:
    return 0 if cache is None else int(cache.get_seq_length())


@torch.inference_mode()
def forward(
    model: Any,
    cache: Any,
    tokens: torch.Tensor,
    *,
    anc: torch.Tensor | None = None,
    depths: torch.Tensor | None = None,
    layers: tuple[int, ...] = (),
) -> torch.Tensor:
    """Run the target over N new tokens on top of `cache` (extended in place).

    tokens: [N]; anc: [N, N] ancestor matrix (None: causal chain); depths: [N], 1 for the
    root's children (None: 1..N). Returns the normed last hidden states [N, hidden], preceded by
    the hidden states after the decoder layers in `layers` ([N, hidden * (len(layers) + 1)])."""
    n = tokens.shape[0]
    past = cache_len(cache)
    if anc is None:
        anc = torch.ones(n, n, dtype=torch.bool).tril()
        depths = torch.arange(1, n + 1)
    assert depths is not None
    pos = (past + depths - 1)[None]  # [1, N]
    mask = tree_mask(anc, past, model.dtype)  # [1, 1, N, past+N]
    out = model.model(
        input_ids=tokens[None],
        attention_mask=mask,
        position_ids=pos,
        cache=cache,
        use_cache=True,
        output_hidden_states=bool(layers),
    )
    return features(out, layers)[0]  # [N, hidden * (len(layers) + 1)]


def features(out: Any, layers: tuple[int, ...]) -> torch.Tensor:
    """The draft head's target features from a model output (run with output_hidden_states when
    `layers`): the hidden states after the decoder layers in `layers`, then the normed last one,
    concatenated [B, N, hidden * (len(layers) + 1)]. Training and decoding both read them here."""
    if not layers:
        return out.last_hidden_state  # [B, N, hidden]
    return torch.cat([out.hidden_states[i] for i in layers] + [out.last_hidden_state], -1)


def logits_of(model: Any, hidden: torch.Tensor) -> torch.Tensor:
    """Target logits [N, V] from normed hidden states [N, hidden]."""
    return model.lm_head(hidden)


def new_cache(model: Any) -> Any:
    from transformers import DynamicCache

    return DynamicCache(config=model.config)


def compact(cache: Any, past: int, keep: torch.Tensor) -> None:
    """Keep the first `past` cached positions and then the tree nodes `keep` (indices into the
    N nodes appended after `past`, in path order); drop the other nodes."""
    idx = torch.cat([torch.arange(past), past + keep.to(torch.long)])  # [past + len(keep)]
    for layer in cache.layers:
        layer.keys = layer.keys.index_select(-2, idx)  # [B, Hkv, past+k, d]
        layer.values = layer.values.index_select(-2, idx)


def crop_to(cache: Any, length: int) -> None:
    """Drop cached positions beyond `length`."""
    extra = cache_len(cache) - length
    if extra > 0:
        cache.crop(-extra)
