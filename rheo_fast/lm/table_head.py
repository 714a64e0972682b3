"""rheo's real-model code path on table models: `LMTreeModel` driven by a target `TableLM` and a
draft table behind the draft head's interface (docs/THIRD_PARTY.md §2).

`LMTreeModel` (rheo_fast.lm.decode) decodes SmolLM2 with an EAGLE-style head: KV caches on both
sides, 4D tree masks, position ids, compaction of the target cache to the accepted path, the
pending queue of true-feature inputs. Here the target is a `TableLM` (its rows come from the path
each tree node's mask lets it see) and the head is a `TableDraftHead`, which rebuilds each draft
input's context from what *its* mask lets it see, so both sides' bookkeeping decides which table
row is used, and a slip (a node that sees a sibling, misses an ancestor, or gets a wrong position)
either changes the law, which the exact reference then catches, or raises.

The head's interface (`DraftHead`): input i carries a feature (the target's hidden state at
position i-1, or the head's own prediction for the parent node), the embedding of token x_i and
its position. `TableLM`'s features end with the one-hot of their position's token, so the head
reads x_{i-1} from the feature and x_i from the embedding. It stores (x_i, i) in its keys and
x_{i-1} in its values; a query's context is the union of (i: x_i) and (i-1: x_{i-1}) over the keys
it sees, which must cover the positions 0..i exactly once each (the first cached draft input is
at position 1: the prompt's first token enters only through its feature).
"""

from __future__ import annotations

from types import SimpleNamespace

import torch
from torch import Tensor, nn

from rheo_fast.kit import draft_windows
from rheo_fast.table_lm import LogTable, table_lm
from rheo_ref.errors import CaseError
from rheo_ref.families.rheo.scheme import Scheme
from rheo_ref.models import Case, TableModel

from .decode import LMTreeModel


class TableDraftHead(nn.Module):
    """The draft head's interface (`rheo_fast.lm.draft_head.DraftHead`) over a draft table."""

    def __init__(self, table: TableModel) -> None:
        super().__init__()
        self.V = table.vocab_size
        self.log_table = LogTable(table)
        self.cfg = SimpleNamespace(feature_layers=(), hidden=2 * self.V)
        self.register_buffer("vocab_ids", torch.arange(self.V), persistent=False)  # [V]: the whole vocabulary

    def fuse(self, feats: Tensor) -> Tensor:
        return feats  # no extra target layers

    def forward(
        self,
        feat: Tensor,
        emb: Tensor,
        pos: Tensor,
        *,
        past: tuple[Tensor, Tensor] | None = None,
        mask: Tensor | None = None,
    ) -> tuple[Tensor, tuple[Tensor, Tensor]]:
        """feat [B, F, 2V], emb [B, F, V] (one-hot), pos [B, F]; past keys [B, 1, P, 2], values [B, 1, P, 1];
        mask additive [B|1, 1, F, P+F] (None: causal without past, everything with it, as `DraftHead`).
        Returns [log q row, one-hot x_i] [B, F, 2V] and this call's keys/values."""
        B, F, _ = feat.shape
        tok = emb.argmax(-1)  # [B, F] x_i
        prev = feat[..., self.V :].argmax(-1)  # [B, F] x_{i-1}
        k = torch.stack([tok, pos.expand(B, F)], -1).to(torch.float64)[:, None]  # [B, 1, F, 2]
        v = prev.to(torch.float64)[:, None, :, None]  # [B, 1, F, 1]
        kk = k if past is None else torch.cat([past[0], k], 2)  # [B, 1, P+F, 2]
        vv = v if past is None else torch.cat([past[1], v], 2)  # [B, 1, P+F, 1]
        S = kk.shape[2]
        if mask is None:
            everything = torch.ones(F, S, dtype=torch.bool)  # [F, S]
            allowed = (everything if past is not None else everything.tril()).expand(B, F, S)
        else:
            allowed = (mask[:, 0] == 0).expand(B, F, S)  # [B, F, S]
        windows = self._windows(
            kk[:, 0].long().tolist(), vv[:, 0, :, 0].long().tolist(), allowed.tolist(), pos.expand(B, F).tolist()
        )
        rows = self.log_table.lookup(windows, torch.ones(B, F, dtype=torch.bool))  # [B, F, V]
        hid = torch.cat([rows, emb.to(torch.float64)], -1)  # [B, F, 2V]
        return hid, (k, v)

    def _windows(self, keys: list, prev: list, allowed: list, pos: list) -> Tensor:
        """Each query's last L context tokens, from the positions its visible keys cover (input i carries x_i)."""
        return draft_windows(keys, prev, allowed, pos, self.log_table.L, shift=0)

    def draft_logits(self, hid: Tensor) -> Tensor:
        return hid[..., : self.V]  # [..., V] log q


def table_tree_model(case: Case, *, T: float = 1.0) -> LMTreeModel:
    """`LMTreeModel` on a case's tables: target `TableLM` of p, `TableDraftHead` of q.

    At T = 1 the LM path uses one draft distribution (q_rank = q_samp), so a case with a separate
    `draft_sample` table is refused."""
    if case.draft_sample is not None and case.draft_sample != case.draft:
        raise CaseError(
            "rheo's LM path drafts with one table (q_rank = q_samp); this case has a separate draft_sample table"
        )
    return LMTreeModel(table_lm(case.target), TableDraftHead(case.draft), T=T)


def generate_tokens(
    lm: LMTreeModel, context: list[int], scheme: Scheme, n: int, generator: torch.Generator
) -> list[int]:
    """The first n tokens decoded by `lm` from `context` (one fresh decode)."""
    from .decode import generate_tree

    return generate_tree(lm, context, scheme, max_new=n, generator=generator).tokens[:n]


__all__ = ["TableDraftHead", "generate_tokens", "table_tree_model"]
