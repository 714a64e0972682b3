"""Greedy identity on the real model: at T = 0 speculative decoding must emit the target's argmax
path, token for token; a token that differs (a *flip*) is classified by its logit margin against the
float error bound of the verify shape, so "near-tie numerics" is told apart from a bug.

Why flips happen without a bug: the decoder reads the target's logits at a position from a forward
over a block of tokens (verification: the root and k drafts, or a tree of them, in one forward),
while the reference path reads them from a forward of one token on the KV cache. The two forwards
sum in different orders, so each logit differs by a float error e ≤ `bound`; the argmax can change
only where the top two logits are within 2·bound (each moves by at most `bound`).

- `one_token_logits`: the logits [n, V] at every position of a sequence, one forward per token
  (the reference shape); `argmax_path`: the target's greedy path, the same way.
- `block_logits`: the logits at the same positions from forwards over blocks of `size` tokens on
  the cache (the verify shape: each block is the last committed token and size − 1 drafts, here
  the path's own tokens, so every row of every block is read).
- `verify_shape_bound`: max |one-token − block| over prompts, positions and vocabulary, per block
  size: the measured float error bound.
- `classify`: every position of a decoder's output judged against the one-token argmax given its
  own prefix: a flip with margin logit(argmax) − logit(emitted) ≤ 2·bound is `near-tie`, else `bug`.
- `chain_greedy`: chain speculative greedy decoding with prompt-lookup drafts (k per round: the
  tokens after the latest earlier match of the last `ngram` tokens, else the last k tokens again; no
  training), verified in one forward of k + 1 tokens. `verifier="argmax"` keeps a draft iff it is
  the block's argmax (correct), then emits the argmax of the row after the kept drafts;
  `"off-by-one"` (the negative control) reads that last token from the row one position late (the
  row after the first rejected draft), as a decoder that verifies against the wrong target row.
- `tree_greedy`: rheo's LM path (`rheo_fast.lm.decode.generate_tree`, the rheo family's tree, the
  draft head) at T = 0.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from rheo_fast.lm import kvcache as kv
from rheo_ref.errors import CaseError

VERIFIERS = ("argmax", "off-by-one")


@dataclass(frozen=True)
class Flip:
    position: int  # index in the output
    expected: int  # the one-token argmax given the output's own prefix
    emitted: int
    margin: float  # logit(expected) − logit(emitted), one-token shape, ≥ 0
    kind: str  # "near-tie" (margin ≤ 2·bound) or "bug"


@dataclass
class Classified:
    tokens: int  # positions judged
    flips: list[Flip] = field(default_factory=list)

    @property
    def near_ties(self) -> int:
        return sum(f.kind == "near-tie" for f in self.flips)

    @property
    def bugs(self) -> int:
        return sum(f.kind == "bug" for f in self.flips)


def _argmax(logits: Tensor) -> Tensor:
    """Argmax per row, ties to the lower id (`torch.argmax` returns the first maximum)."""
    return logits.argmax(-1)  # [n]


@torch.inference_mode()
def one_token_logits(model: Any, prompt: Sequence[int], tokens: Sequence[int]) -> Tensor:
    """Logits [len(tokens), V] predicting tokens[i] from prompt + tokens[:i], one token per forward."""
    cache = kv.new_cache(model)
    hid = kv.forward(model, cache, torch.tensor(list(prompt)))[-1:]  # [1, h]
    rows = [kv.logits_of(model, hid)[0]]
    for t in tokens[:-1]:
        rows.append(kv.logits_of(model, kv.forward(model, cache, torch.tensor([t])))[0])  # [V]
    return torch.stack(rows)  # [n, V]


@torch.inference_mode()
def argmax_path(model: Any, prompt: Sequence[int], n: int) -> tuple[list[int], Tensor]:
    """The target's greedy path of n tokens and its logits [n, V], one token per forward."""
    cache = kv.new_cache(model)
    hid = kv.forward(model, cache, torch.tensor(list(prompt)))[-1:]  # [1, h]
    out: list[int] = []
    rows = []
    while True:
        logits = kv.logits_of(model, hid)[0]  # [V]
        rows.append(logits)
        out.append(int(_argmax(logits[None])[0]))
        if len(out) == n:
            return out, torch.stack(rows)
        hid = kv.forward(model, cache, torch.tensor(out[-1:]))  # [1, h]


@torch.inference_mode()
def block_logits(model: Any, prompt: Sequence[int], tokens: Sequence[int], size: int) -> Tensor:
    """Logits [len(tokens), V] at the same positions as `one_token_logits`, from forwards over
    blocks of `size` tokens (the last committed token and size − 1 of the following ones)."""
    if size < 1:
        raise CaseError(f"block size={size}; allowed: an integer >= 1")
    ctx = list(prompt)
    cache = kv.new_cache(model)
    if len(ctx) > 1:  # a one-token prompt: nothing to cache before the first block
        kv.forward(model, cache, torch.tensor(ctx[:-1]))
    rows = []
    i = 0
    while i < len(tokens):
        block = [ctx[-1], *tokens[i : i + size - 1]]  # the verify shape: root + drafts
        hid = kv.forward(model, cache, torch.tensor(block))  # [size, h]
        rows.append(kv.logits_of(model, hid))  # [size, V]
        ctx += list(tokens[i : i + size])  # the cache now holds ctx[:-1]
        i += size
    return torch.cat(rows)[: len(tokens)]  # [n, V]


def verify_shape_bound(model: Any, prompts: Sequence[Sequence[int]], n: int, sizes: Sequence[int]) -> dict[int, float]:
    """max |one-token − block logit| over the prompts' greedy paths of n tokens, per block size."""
    out = dict.fromkeys(sizes, 0.0)
    for ids in prompts:
        path, one = argmax_path(model, ids, n)
        for s in sizes:
            out[s] = max(out[s], float((block_logits(model, ids, path, s) - one).abs().max()))
    return out


def classify(
    model: Any,
    prompt: Sequence[int],
    emitted: Sequence[int],
    bound: float,
    reference: tuple[Sequence[int], Tensor] | None = None,
) -> Classified:
    """Each emitted token against the one-token argmax given the output's own prefix (module
    docstring). `reference`: the argmax path and its one-token logits (`argmax_path`), reused up to
    the first position where the output leaves it."""
    if not emitted:
        return Classified(0)
    same = 0
    if reference is not None:
        path, ref_logits = reference
        while same < min(len(path), len(emitted)) and path[same] == emitted[same]:
            same += 1
        same = min(same + 1, len(emitted), len(ref_logits))  # the row after the common prefix is the path's too
    head = [] if reference is None else [reference[1][:same]]
    rest = [one_token_logits(model, [*prompt, *emitted[:same]], emitted[same:])] if same < len(emitted) else []
    logits = torch.cat(head + rest)  # [n, V]
    best = _argmax(logits)  # [n]
    out = Classified(len(emitted))
    for i, t in enumerate(emitted):
        a = int(best[i])
        if a != t:
            margin = float(logits[i, a] - logits[i, t])
            out.flips.append(Flip(i, a, t, margin, "near-tie" if margin <= 2 * bound else "bug"))
    return out


def lookup_draft(ids: Sequence[int], k: int, ngram: int = 2) -> list[int]:
    """Prompt lookup: the k tokens after the latest earlier occurrence of the last `ngram` tokens
    (fewer at the end of the context); without a match, the last k tokens again (a draft every
    round, so every round verifies a block)."""
    tail = list(ids[-ngram:])
    for start in range(len(ids) - ngram - 1, -1, -1):
        if list(ids[start : start + ngram]) == tail and start + ngram < len(ids):
            return list(ids[start + ngram : start + ngram + k])
    return list(ids[-k:])


@torch.inference_mode()
def chain_greedy(
    model: Any, prompt: Sequence[int], n: int, *, k: int = 3, verifier: str = "argmax"
) -> tuple[list[int], int]:
    """(n tokens of chain speculative greedy decoding, rounds): prompt-lookup drafts verified in
    one forward of ≤ k + 1 tokens (module docstring)."""
    if verifier not in VERIFIERS:
        raise CaseError(f"verifier={verifier!r}; allowed: {', '.join(VERIFIERS)}")
    if k < 1:
        raise CaseError(f"k={k}; allowed: an integer >= 1 draft tokens per round")
    ids = list(prompt)
    cache = kv.new_cache(model)
    if len(ids) > 1:  # the cache holds ids[:-1] (nothing for a one-token prompt)
        kv.forward(model, cache, torch.tensor(ids[:-1]))
    out: list[int] = []
    rounds = 0
    while len(out) < n:
        drafts = lookup_draft(ids, k)
        past = kv.cache_len(cache)
        logits = kv.logits_of(model, kv.forward(model, cache, torch.tensor([ids[-1], *drafts])))  # [1 + k', V]
        best = _argmax(logits)  # [1 + k']
        kept = 0
        while kept < len(drafts) and int(best[kept]) == drafts[kept]:
            kept += 1
        late = verifier == "off-by-one" and kept < len(drafts)
        emitted = [*drafts[:kept], int(best[kept + late])]  # accepted drafts + the argmax after them
        kv.crop_to(cache, past + 1 + kept)  # keep the root and the accepted drafts
        ids += emitted
        out += emitted
        rounds += 1
    return out[:n], rounds


def tree_greedy(model: Any, head: Any, prompt: Sequence[int], n: int) -> tuple[list[int], int]:
    """(n tokens of rheo's LM path at T = 0, rounds): the rheo family's tree, verified in one target
    forward over the tree (`rheo_fast.lm.decode.generate_tree`)."""
    from rheo_fast.lm.decode import LMTreeModel, TreeSize, generate_tree, scheme_for

    scheme = scheme_for("rheo", TreeSize())
    assert scheme is not None  # "rheo" is a tree method, not plain autoregressive decoding
    res = generate_tree(LMTreeModel(model, head, T=0.0), list(prompt), scheme, max_new=n, generator=torch.Generator())
    return res.tokens[:n], res.rounds


__all__ = [
    "VERIFIERS",
    "Classified",
    "Flip",
    "argmax_path",
    "block_logits",
    "chain_greedy",
    "classify",
    "lookup_draft",
    "one_token_logits",
    "tree_greedy",
    "verify_shape_bound",
]
