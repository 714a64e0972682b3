"""What a newcomer's adapter repeats, once (docs/GATE.md, "Gate a decoder from the package index").

Third-party speculative decoders take their models and run their loops in a handful of shapes; these
put a table model (exact law known) behind them, so that an adapter is the package's call and nothing else:

- `table_module(table, cache=False)`: an `nn.Module` whose `forward(ids, *args, **kwargs)` returns the
  logits [B, S, V] of every position of a token tensor [B, S] (or [S]): the table row of that position's
  context (its last `context_length` tokens; the logits of `TableLM`: log p, and NEG where p = 0), causal
  over the whole tensor, no mask. With `cache=True` it returns
  `(logits, (kv, None))`, a KV-cache tuple whose tensor [B, 1, S, 1] has the sequence on dim -2, as
  decoders slice and realign it. The table reads the whole tensor every call and ignores any cache or
  position argument it is given; what a package does with the cache (crop, realign) runs unchanged.
- `decode_batches(fn, context, n, seed, num_samples, batch=1)`: the sampler of a function that decodes
  a batch from a prompt tensor: `fn(prompt [B, len(context)] long) -> new tokens [B, >= n]` (a tensor or
  nested lists), called on batches of `batch` copies of the context after seeding torch's global
  generator (where packages draw their coins), the first n tokens of each row kept.
- `processing_args(run)`: a run's settings as numbers a package takes (`temperature` 1/k, `top_k`,
  `top_p`; None where off), so an adapter maps them onto its own keywords without re-parsing.

Pure torch (no transformers).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import torch
from torch import Tensor

from rheo_ref.errors import CaseError
from rheo_ref.models import TableModel


def table_module(table: TableModel, *, cache: bool = False, dtype: torch.dtype = torch.float32) -> Any:
    """An `nn.Module`: token tensor -> logits [B, S, V] of `table` (with `cache`: (logits, (kv, None)))."""
    import math

    from rheo_fast.table_lm import NEG

    if not isinstance(table, TableModel):
        raise CaseError(f"table must be a rheo_ref.models.TableModel, got {type(table).__name__}")
    L = table.context_length
    rows: dict[tuple[int, ...], list[float]] = {}

    def logits_of(window: tuple[int, ...]) -> list[float]:
        if window not in rows:  # the table's CaseError names a context it has no row for
            rows[window] = [math.log(x) if x else NEG for x in table.row(window)]
        return rows[window]

    class TableModule(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.table, self.vocab_size = table, table.vocab_size

        def forward(self, ids: Tensor, *args: Any, **kwargs: Any) -> Any:
            flat = ids.dim() == 1
            x = ids[None] if flat else ids
            if x.dim() != 2:
                raise CaseError(f"table_module takes token ids [B, S] or [S], got shape {tuple(ids.shape)}")
            toks = x.tolist()  # each position's row: the table row of its last L tokens, as TableLM's (causal)
            out = [[logits_of(tuple(r[max(0, i + 1 - L) : i + 1])) for i in range(len(r))] for r in toks]
            logits = torch.tensor(out, dtype=torch.float64).to(dtype).reshape(*x.shape, table.vocab_size)
            if flat:
                logits = logits[0]
            if not cache:
                return logits
            return logits, (torch.zeros(x.shape[0], 1, x.shape[1], 1, dtype=dtype), None)

    return TableModule().eval()


def decode_batches(
    fn: Callable[[Tensor], Any], context: Sequence[int], n: int, seed: int, num_samples: int, *, batch: int = 1
) -> list[tuple[int, ...]]:
    """num_samples decodes of n tokens: `fn` on prompt tensors of `batch` copies of `context`."""
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise CaseError(f"batch={batch!r} must be an integer >= 1")
    torch.manual_seed(seed % 2**63)
    out: list[tuple[int, ...]] = []
    while len(out) < num_samples:
        prompt = torch.tensor([list(context)] * batch, dtype=torch.long)
        rows = fn(prompt)
        rows = rows.tolist() if isinstance(rows, Tensor) else rows
        if len(rows) != batch:
            raise CaseError(f"the decoder returned {len(rows)} rows for a batch of {batch}")
        for row in rows:
            if len(row) < n:
                raise CaseError(f"the decoder returned {len(row)} new tokens, fewer than {n}")
            out.append(tuple(int(t) for t in row[:n]))
    return out[:num_samples]


def processing_args(run: Any) -> dict[str, Any]:
    """temperature (1/power), top_k, top_p (float) of a run's processing; None where off."""
    proc = run.processing()
    return {
        "temperature": 1 / proc.power,
        "top_k": proc.top_k,
        "top_p": None if proc.top_p is None else float(proc.top_p),
    }
