"""Table models as transformers language models: `TableLM` (docs/THIRD_PARTY.md §1).

A `TableLM` is a transformers `PreTrainedModel` + `GenerationMixin` built from one section-10
table (docs/ALGORITHM.md §10, any `context_length`), so that any decoder written against the
transformers model interface (`generate`, assisted decoding, a hand-written speculative loop, rheo's
own `rheo_fast.lm`) runs on a model whose law is known exactly.

The forward pass returns, at every position, the log of the table row of that position's context,
where a position's context is *the path its attention mask lets it see*: the keys it may attend to,
in cache order. So
- a 2D padding mask [B, past+N] (1 = token, 0 = pad) with the causal rule gives each real position
  its prefix; a query that cannot see itself (a pad) gets logits 0 (uniform; decoders ignore them);
- a 4D mask [B|1, 1|H, N, past+N] (bool: True = attend; float: 0 = attend, a large negative or -inf
  = blocked; any other bias is refused) gives a tree node its ancestors: tree decoders get the rows
  of their paths;
- no mask: causal over the cache and the new tokens.
Position ids are checked, not used: the visible keys' positions, in cache order, must be 0, 1, ...,
n-1 and the query must be the last of them (`strict_positions`, default on), so a decoder that
gives a node the wrong position or lets it see a sibling fails loudly instead of silently.

The cache (argument `cache`, or its pre-5.25 names `past_key_values` / `cache_params`, as transformers'
own models take them) is a real transformers `DynamicCache` of one layer holding tiny tensors: keys [B, 1, S, 1]
the token ids and values [B, 1, S, 1] the position ids (float64, exact), so `crop`, assisted
decoding's rollback and rheo's compaction (`rheo_fast.lm.kvcache.compact`) work on it unchanged.

Logits are float64: log of the float64 row; probability 0 becomes the finite logit NEG = -1e4
(-inf makes NaNs in some processors). Error bound: softmax(logits / T) puts on a zero entry at most
V^(1/T)·e^(NEG/T) (the row's largest entry is ≥ 1/V), which underflows to exactly 0 in float64 for
T < 13 and in float32 for T < 90, for any V < 10^6; the other entries carry float64 rounding of
log p (relative 1e-16). transformers casts logits to float32 before its processors and its
speculative sampling: relative error ≤ 6e-8·|log p| on each probability, a TV below 1e-6 on the
tables used here — far below any δ a sampler can detect.

The hidden state (of `.model`, hidden_size = 2V) is [log row, one-hot of the position's token];
`lm_head` keeps its first V columns. The one-hot part lets rheo's EAGLE-style draft interface read
the previous token from a feature (`rheo_fast.lm.table_head`).

transformers is imported on first use of `TableLM`, `TableLMConfig` or `TableLMModel` (PEP 562), so
importing this module costs only torch.
"""

from __future__ import annotations

from functools import lru_cache
from typing import Any

import torch
from torch import Tensor

from rheo_ref.errors import CaseError
from rheo_ref.models import Case, TableModel, present

from .models import _Table

NEG = -1.0e4  # the logit of probability 0 (see the module docstring for the error it leaves)
MODEL_TYPE = "rheo_table_lm"


OLD_CACHE_NAMES = ("past_key_values", "cache_params")  # transformers < 5.25's names for `cache`


def cache_argument(cache: Any, kwargs: dict[str, Any]) -> Any:
    """The cache a forward was given, under `cache` or an older name (popped from `kwargs`).

    transformers 5.25 renamed `past_key_values` (and `cache_params`) to `cache`; its own models
    still take the old names (`deprecate_kwarg(..., new_name="cache")`), and decoders written
    against older versions pass them. Ignoring an old name would silently start a fresh cache.
    """
    for name in OLD_CACHE_NAMES:
        if name in kwargs:
            old = kwargs.pop(name)
            if cache is not None and old is not None:
                raise CaseError(f"got both `cache` and `{name}`; give the cache once (`cache`)")
            cache = old if old is not None else cache
    return cache


def log_rows(rows: Tensor) -> Tensor:
    """log of probability rows [M, V], zeros at NEG."""
    return torch.log(rows).clamp(min=NEG)  # [M, V]


def check_token_ids(ids: Any, V: int, what: str = "input_ids", *, ndim: int | None = 2) -> Tensor:
    """ids: a torch integer tensor ([batch, tokens] when ndim = 2) of token ids in 0..V-1; anything else
    is a CaseError naming the id and its position (instead of an IndexError deep in an embedding)."""
    if not isinstance(ids, Tensor):
        raise CaseError(f"{what} must be a torch integer tensor of token ids, got {type(ids).__name__}")
    if ids.dtype == torch.bool or ids.dtype.is_floating_point or ids.dtype.is_complex:
        raise CaseError(f"{what} has dtype {ids.dtype}; allowed: an integer dtype (token ids 0..{V - 1})")
    if ndim is not None and ids.dim() != ndim:
        raise CaseError(f"{what} has shape {list(ids.shape)}; allowed: [batch, tokens]")
    if ndim == 2 and ids.shape[1] == 0:
        raise CaseError(f"{what} has shape {list(ids.shape)}: no tokens; allowed: [batch, tokens] with tokens >= 1")
    bad = (ids < 0) | (ids >= V)  # [same shape as ids]
    if ids.device.type != "meta" and bool(bad.any()):
        at = tuple(int(x) for x in bad.nonzero()[0])
        raise CaseError(
            f"{what}{list(at)} = {int(ids[at])} is outside the vocabulary 0..{V - 1} (vocab_size {V}): "
            "a token id the model cannot have emitted"
        )
    return ids


# --- which keys each query sees ------------------------------------------------------------


def allowed_keys(mask: Tensor | None, B: int, N: int, S: int) -> Tensor:
    """allowed [B, N, S]: query i (the (S-N+i)-th key) may attend to key j, from a mask as transformers
    models receive it (None, 2D padding [B, S] or 4D [B|1, 1|H, N, S]; see the module docstring)."""
    past = S - N
    causal = torch.arange(S)[None, :] <= past + torch.arange(N)[:, None]  # [N, S]
    if mask is None:
        return causal.expand(B, N, S)
    if mask.dim() == 2:
        if tuple(mask.shape) != (B, S):
            raise CaseError(f"2D attention mask of shape {list(mask.shape)}; a table LM needs [batch {B}, keys {S}]")
        return causal[None] & (mask != 0)[:, None, :]  # [B, N, S]
    if mask.dim() == 4:
        if mask.shape[0] not in (1, B) or tuple(mask.shape[2:]) != (N, S):
            raise CaseError(
                f"4D attention mask of shape {list(mask.shape)}; a table LM needs [{B} or 1, heads, {N}, {S}]"
            )
        m = mask[:, 0]  # [B|1, N, S]: every head must agree, a table has one
        if mask.shape[1] > 1 and not bool((mask == mask[:, :1]).all()):
            raise CaseError("4D attention mask differs between heads; a table LM has one attention pattern")
        if m.dtype == torch.bool:
            allowed = m
        else:
            allowed = m == 0
            blocked = m <= NEG / 2  # finfo.min, -inf, or any large negative bias
            if not bool((allowed | blocked).all()):
                bad = float(m[~(allowed | blocked)][0])
                raise CaseError(
                    f"4D attention mask holds the bias {bad:g}; a table LM needs 0 (attend) or a large "
                    f"negative number / -inf (blocked)"
                )
        return allowed.expand(B, N, S)
    raise CaseError(f"attention mask with {mask.dim()} dimensions; allowed: none, 2D [batch, keys] or 4D")


def visible_windows(
    tokens: Tensor, positions: Tensor, allowed: Tensor, L: int, *, strict_positions: bool = True
) -> tuple[Tensor, Tensor]:
    """Each query's context window from what it sees.

    tokens, positions: [B, S] of every key (cache, then the N queries); allowed [B, N, S].
    Returns windows [B, N, L] (the last L tokens of the visible path, -1 where it is shorter) and
    real [B, N] (False for a query that cannot see itself: padding)."""
    B, N, S = allowed.shape
    toks, poss, ok = tokens.tolist(), positions.tolist(), allowed.tolist()
    win = [[[-1] * L for _ in range(N)] for _ in range(B)]
    real = [[False] * N for _ in range(B)]
    for b in range(B):
        for i in range(N):
            me = S - N + i
            seen = [j for j in range(S) if ok[b][i][j]]
            if not seen or seen[-1] != me:
                if me in seen:
                    raise CaseError(
                        f"query {i} of batch row {b} sees key {seen[-1]} after itself; a path must end at the query"
                    )
                continue  # a pad query (it cannot see itself): logits 0
            real[b][i] = True
            if strict_positions:
                got = [int(poss[b][j]) for j in seen]
                if got != list(range(len(seen))):
                    raise CaseError(
                        f"query {i} of batch row {b} sees {len(seen)} tokens at position ids {got}; "
                        f"the path its mask lets it see must have position ids 0..{len(seen) - 1}"
                    )
            path = [int(toks[b][j]) for j in seen]
            if L:
                tail = path[-L:]
                win[b][i] = [-1] * (L - len(tail)) + tail
    return torch.tensor(win, dtype=torch.int64).reshape(B, N, L), torch.tensor(real).reshape(B, N)


class LogTable:
    """The log rows of one table, looked up by context window (rheo_fast.models' row lookup)."""

    def __init__(self, table: TableModel) -> None:
        self.table = table
        self.L, self.V = table.context_length, table.vocab_size
        self.rows = _Table(table, torch.device("cpu"), log_rows)

    def lookup(self, windows: Tensor, real: Tensor) -> Tensor:
        """windows [B, N, L], real [B, N] -> log rows [B, N, V] (0 at pad queries); a missing row is a CaseError."""
        w = windows.clone()
        w[~real] = -1  # any window: the row is replaced by 0 below
        out = self.rows.lookup(w)  # [B, N, V]
        missing = torch.isnan(out[..., 0]) & real  # [B, N]
        if bool(missing.any()):
            b, i = (int(x) for x in missing.nonzero()[0])
            ctx = [int(t) for t in windows[b, i].tolist() if t >= 0]
            self.table.row(ctx)  # raises the reference's CaseError naming the context
        return torch.where(real[..., None], out, torch.zeros_like(out))  # [B, N, V]


# --- the transformers classes (built on first use) -------------------------------------------


@lru_cache(maxsize=1)
def _classes() -> dict[str, Any]:
    from transformers import DynamicCache, GenerationMixin, PreTrainedConfig, PreTrainedModel
    from transformers.modeling_outputs import BaseModelOutputWithPast, CausalLMOutputWithPast

    class TableLMConfig(PreTrainedConfig):
        """A section-10 table (`table`, its JSON object) and the cache geometry transformers reads."""

        model_type = MODEL_TYPE

        def __init__(
            self, table: dict | None = None, table_name: str = "table", strict_positions: bool = True, **kwargs: Any
        ) -> None:
            self.table = table if table is not None else {"vocab_size": 1, "context_length": 0, "probs": {"": ["1"]}}
            self.table_name = table_name
            V = int(self.table["vocab_size"])
            self.strict_positions = strict_positions
            self.vocab_size = V
            self.hidden_size = 2 * V  # [log row, one-hot token]
            self.num_hidden_layers = 1  # one cache layer of tiny tensors
            self.num_attention_heads = 1
            self.num_key_value_heads = 1
            self.head_dim = 1
            kwargs.setdefault("dtype", torch.float64)
            super().__init__(**kwargs)

    class _Base(PreTrainedModel):
        config_class = TableLMConfig
        base_model_prefix = "model"

        def _init_weights(self, module: Any) -> None:
            """No weights to initialise: the embedding is set to the identity after post_init."""

    class FirstColumns(torch.nn.Module):
        """lm_head: the log row, i.e. the first V columns of the hidden state."""

        def __init__(self, V: int) -> None:
            super().__init__()
            self.V = V

        def forward(self, hidden: Tensor) -> Tensor:
            return hidden[..., : self.V]  # [..., V]

    class TableLMModel(_Base):
        """The base model: hidden states [B, N, 2V] = [log row, one-hot token] and the cache."""

        def __init__(self, config: Any) -> None:
            super().__init__(config)
            V = config.vocab_size
            self.embed_tokens = torch.nn.Embedding(V, V, dtype=torch.float64)  # one-hot rows
            self.post_init()
            with torch.no_grad():
                self.embed_tokens.weight.copy_(torch.eye(V, dtype=torch.float64))
            self.embed_tokens.weight.requires_grad_(False)
            self.log_table = LogTable(TableModel.from_json(config.table, config.table_name))

        def forward(
            self,
            input_ids: Tensor | None = None,
            attention_mask: Tensor | None = None,
            position_ids: Tensor | None = None,
            cache: Any = None,
            inputs_embeds: Tensor | None = None,
            use_cache: bool | None = None,
            output_hidden_states: bool | None = None,
            **kwargs: Any,
        ) -> Any:
            if (input_ids is None) == (inputs_embeds is None):
                raise CaseError("give exactly one of input_ids and inputs_embeds")
            if input_ids is not None:  # any integer dtype, read as int64 (nn.Embedding takes int32/int64 only)
                input_ids = check_token_ids(input_ids, self.config.vocab_size).long()  # [B, N]
            tokens = input_ids if input_ids is not None else inputs_embeds.argmax(-1)  # [B, N]
            B, N = tokens.shape
            cache = cache_argument(cache, kwargs)
            past = 0 if cache is None else int(cache.get_seq_length())
            if position_ids is None:
                position_ids = past + torch.arange(N)[None]  # [1, N], as Llama does
            pos = position_ids.expand(B, N)  # [B, N]
            k = tokens.to(torch.float64)[:, None, :, None]  # [B, 1, N, 1] token ids
            v = pos.to(torch.float64)[:, None, :, None]  # [B, 1, N, 1] position ids
            if cache is None and use_cache is not False:  # transformers models build a cache unless told not to
                cache = DynamicCache(config=self.config)
            if cache is not None:
                k, v = cache.update(k, v, 0)  # [B, 1, S, 1]
            S = k.shape[2]
            allowed = allowed_keys(attention_mask, B, N, S)  # [B, N, S]
            windows, real = visible_windows(
                k[:, 0, :, 0].long(),
                v[:, 0, :, 0].long(),
                allowed,
                self.log_table.L,
                strict_positions=self.config.strict_positions,
            )
            rows = self.log_table.lookup(windows, real)  # [B, N, V]
            hidden = torch.cat([rows, self.embed_tokens(tokens)], -1)  # [B, N, 2V]
            return BaseModelOutputWithPast(
                last_hidden_state=hidden, cache=cache, hidden_states=(hidden,) if output_hidden_states else None
            )

    class TableLM(_Base, GenerationMixin):
        """A causal LM whose next-token law is a section-10 table (see the module docstring)."""

        def __init__(self, config: Any) -> None:
            super().__init__(config)
            self.model = TableLMModel(config)
            self.lm_head = FirstColumns(config.vocab_size)
            self.post_init()

        @property
        def table(self) -> TableModel:
            return self.model.log_table.table

        def forward(
            self,
            input_ids: Tensor | None = None,
            attention_mask: Tensor | None = None,
            position_ids: Tensor | None = None,
            cache: Any = None,
            inputs_embeds: Tensor | None = None,
            use_cache: bool | None = None,
            logits_to_keep: int | Tensor = 0,
            output_hidden_states: bool | None = None,
            **kwargs: Any,
        ) -> Any:
            cache = cache_argument(cache, kwargs)
            out = self.model(
                input_ids=input_ids,
                attention_mask=attention_mask,
                position_ids=position_ids,
                cache=cache,
                inputs_embeds=inputs_embeds,
                use_cache=use_cache,
                output_hidden_states=output_hidden_states,
            )
            hidden = out.last_hidden_state  # [B, N, 2V]
            if isinstance(logits_to_keep, int):
                hidden = hidden[:, -logits_to_keep:] if logits_to_keep else hidden  # [B, n, 2V]
            else:
                hidden = hidden[:, logits_to_keep]
            return CausalLMOutputWithPast(logits=self.lm_head(hidden), cache=out.cache, hidden_states=out.hidden_states)

    out = {"TableLMConfig": TableLMConfig, "TableLMModel": TableLMModel, "TableLM": TableLM}
    for name, cls in out.items():  # importable by name (module __getattr__), e.g. for pickle
        cls.__qualname__, cls.__module__ = name, __name__
    return out


def __getattr__(name: str) -> Any:
    if name in ("TableLM", "TableLMConfig", "TableLMModel"):
        return _classes()[name]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def table_lm(table: TableModel, *, strict_positions: bool = True) -> Any:
    """A `TableLM` (eval mode, float64, CPU) whose next-token law is `table`."""
    cls = _classes()
    if not isinstance(table, TableModel):
        raise CaseError(f"table must be a rheo_ref.models.TableModel, got {type(table).__name__}")
    config = cls["TableLMConfig"](table=table.to_json(), table_name=table.name, strict_positions=strict_positions)
    return cls["TableLM"](config).eval()


def table_lms(case: Case, *, strict_positions: bool = True) -> tuple[Any, Any]:
    """(draft, target) `TableLM`s of one case: the draft is the case's q_samp table (what a
    decoder samples from and verifies with), the target its p table."""
    if not isinstance(case, Case):
        raise CaseError(
            f"table_lms needs a rheo_ref.models.Case (Case.from_json, load_case), got {type(case).__name__}"
        )
    if not present(case.q_samp_model):
        raise CaseError("table_lms: the case has no draft table (its 'draft' or 'draft_sample'); add one")
    return (
        table_lm(case.q_samp_model, strict_positions=strict_positions),
        table_lm(case.target, strict_positions=strict_positions),
    )
