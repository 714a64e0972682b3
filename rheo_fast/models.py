"""Model interface of the fast path, and table models (docs/ALGORITHM.md §1 and §10).

A round needs three distributions at tree nodes (docs/ALGORITHM.md §1): `q_rank` (builds and prunes the
tree), `q_samp` (samples and verifies the sampled slot) and `p` (the target). The round talks to
a `TreeModel` (the Protocol below says exactly what each method returns):

- `start(contexts)` -> state for B independent trials;
- `draft(state, tree, nodes)` -> `DraftRows(q_rank, q_samp, shared)`, each [B, F, V], for the F
  frontier nodes `nodes` [B, F] (node ids into `tree`; 0 is the root). Called once per depth, so
  a transformer draft can run the whole frontier in one forward with `tree.attention_mask()`;
- `target(state, tree)` -> p [B, 1+N, V] for every node at once (one forward of the target over
  the tree; rows of nodes that are not kept may hold anything), or a `TargetRows` (an object with
  `.at(nodes [B]) -> [B, V]`: table models fetch rows lazily, `TableRows`);
- `prefix_len` (0 when the tree carries no context) and `prefix(state)` -> [B, P]: context tokens
  the tree carries before the root, so that `tree.windows(nodes, L)` gives each node's last L
  context tokens (`prefix` is called only when `prefix_len` > 0);
- `advance(state, emitted, n_emitted)` -> state after each trial appended its first
  `n_emitted[b]` tokens of `emitted` [B, D+1] (a KV cache keeps the accepted path here);
- `missing_context(state, tree, nodes, table)` -> the context of the first node among `nodes`
  that has no row in `table` ("q_rank", "q_samp" or "p"), or None: only for the error message
  when a row is NaN (a real model always has rows and returns None).

Language models turn logits into these rows with `draft_probs` / `target_probs` (sparse top-S
truncation and temperature, docs/ALGORITHM.md §1). Table models (docs/ALGORITHM.md §10) hold float64 tensors of the
exact rows; T = 0 turns q_samp and p into point masses on their argmax (ties: lower id).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

import torch
from torch import Tensor

from rheo_ref.errors import CaseError
from rheo_ref.models import Case, TableModel


class DraftRows(NamedTuple):
    """The draft's rows at F frontier nodes: q_rank and q_samp [B, F, V]. `shared`: they are one
    distribution (T = 1 and no separate q_samp table), stated by the model rather than guessed;
    `expand` then takes the tail from the ranking key instead of masking q_samp."""

    q_rank: Tensor
    q_samp: Tensor
    shared: bool

    @classmethod
    def one(cls, q: Tensor) -> DraftRows:
        """q_rank = q_samp = q."""
        return cls(q, q, True)


class TargetRows(Protocol):
    """Target rows fetched where verification goes."""

    def at(self, nodes: Tensor) -> Tensor:
        """p at node nodes[b] of trial b: nodes [B] -> [B, V]."""
        ...


class TreeModel(Protocol):
    """What a round needs from a model (see the module docstring); every member is required."""

    vocab_size: int

    @property
    def device(self) -> torch.device: ...

    @property
    def prefix_len(self) -> int: ...

    def start(self, contexts: Sequence[Sequence[int]]) -> Any: ...

    def draft(self, state: Any, tree: Any, nodes: Tensor) -> DraftRows: ...

    def target(self, state: Any, tree: Any) -> Tensor | TargetRows: ...

    def prefix(self, state: Any) -> Tensor: ...

    def advance(self, state: Any, emitted: Tensor, n_emitted: Tensor) -> Any: ...

    def missing_context(self, state: Any, tree: Any, nodes: Tensor, table: str) -> list[int] | None: ...


class ModelDefaults:
    """The members of `TreeModel` that most models need not write: CPU, no context carried by the
    tree, always a row (no missing context to name). Subclass it and write start, draft, target,
    advance and `vocab_size`."""

    device: torch.device = torch.device("cpu")
    prefix_len: int = 0

    def prefix(self, state: Any) -> Tensor:
        raise NotImplementedError("prefix_len is 0: the tree carries no context tokens")

    def missing_context(self, state: Any, tree: Any, nodes: Tensor, table: str) -> list[int] | None:
        return None


def greedy(probs: Tensor) -> Tensor:
    """Point mass on the argmax, ties by lower id (torch.argmax returns the first maximum)."""
    return torch.zeros_like(probs).scatter_(-1, probs.argmax(-1, keepdim=True), 1.0)  # [..., V]


def trunc_s(logits: Tensor, S: int) -> Tensor:
    """Keep the S largest logits (ties by lower id, via a stable sort), the rest -inf."""
    if S >= logits.shape[-1]:
        return logits
    keep = torch.sort(logits, dim=-1, descending=True, stable=True).indices[..., :S]  # [..., S]
    out = torch.full_like(logits, float("-inf"))  # [..., V]
    return out.scatter_(-1, keep, logits.gather(-1, keep))  # [..., V]


def tempered(logits: Tensor, T: float) -> Tensor:
    """softmax(logits / T); T = 0 is the greedy point mass."""
    if T == 0:
        return greedy(logits)  # [..., V]
    return torch.softmax(logits.to(torch.float64) / T, dim=-1)  # [..., V]


def draft_probs(logits: Tensor, *, S: int = 128, T: float = 1.0) -> DraftRows:
    """(q_rank, q_samp, shared) from draft logits: q_rank at temperature 1, q_samp at T, same
    support (T = 1: one distribution, `shared`)."""
    z = trunc_s(logits.to(torch.float64), S)  # [..., V]
    q_rank = torch.softmax(z, dim=-1)  # [..., V]
    return DraftRows.one(q_rank) if T == 1 else DraftRows(q_rank, tempered(z, T), False)  # [..., V] each


def target_probs(logits: Tensor, *, T: float = 1.0) -> Tensor:
    """p = softmax(target_logits / T) (T = 0: greedy)."""
    return tempered(logits.to(torch.float64), T)  # [..., V]


DENSE_CODES = 1 << 20


class _Table:
    """One table model as float64 rows looked up by an integer code of the context key."""

    def __init__(self, model: TableModel, device: torch.device, transform) -> None:
        self.L, V = model.context_length, model.vocab_size
        self.base = V + 1  # digit 0 = "no token" (context shorter than L), token t -> t + 1
        codes, rows = [], []
        for key, row in model.probs.items():
            toks = [int(t) for t in key.split(",")] if key else []
            codes.append(_code([-1] * (self.L - len(toks)) + toks, self.base))
            rows.append([float(x) for x in row])
        if self.base ** max(self.L, 1) >= 2**62:
            raise CaseError(
                f"{model.name}: context_length {self.L} with vocab_size {V} is too large for 64-bit context codes"
            )
        order = sorted(range(len(codes)), key=codes.__getitem__)
        self.codes = torch.tensor([codes[i] for i in order], dtype=torch.int64, device=device)  # [M]
        self.dense = None  # code -> row index, when the code space is small: one index_select
        if self.base**self.L <= DENSE_CODES:
            self.dense = torch.full((self.base**self.L,), len(codes), dtype=torch.int64, device=device)  # [(V+1)^L]
            self.dense[self.codes] = torch.arange(len(codes), device=device)
        table = torch.tensor([rows[i] for i in order], dtype=torch.float64, device=device)  # [M, V]
        missing = torch.full((1, V), float("nan"), dtype=torch.float64, device=device)  # [1, V]
        self.rows = torch.cat([transform(table), missing])  # [M+1, V]; row M: no such context
        self.powers = self.base ** torch.arange(self.L - 1, -1, -1, device=device)  # [L]
        self.name = model.name

    def lookup(self, window: Tensor) -> Tensor:
        """window [..., Lmax] (last tokens, -1 = none) -> rows [..., V] (NaN where no row)."""
        row = self.row_index(window)  # [...]
        return self.rows.index_select(0, row.reshape(-1)).reshape(*window.shape[:-1], -1)  # [..., V]

    def row_index(self, window: Tensor) -> Tensor:
        """window [..., Lmax] -> row ids [...] into self.rows (M: no such context)."""
        w = window[..., window.shape[-1] - self.L :] if self.L else window[..., :0]  # [..., L]
        code = ((w + 1) * self.powers).sum(-1).reshape(-1)  # [n]
        if self.dense is not None:
            row = self.dense.index_select(0, code)  # [n]
        else:
            i = torch.searchsorted(self.codes, code)  # [n]
            found = self.codes.index_select(0, i.clamp(max=len(self.codes) - 1)) == code  # [n]
            row = torch.where(found, i, len(self.codes))  # [n]
        return row.reshape(window.shape[:-1])  # [...]


def _code(tokens: list[int], base: int) -> int:
    c = 0
    for t in tokens:
        c = c * base + (t + 1)
    return c


@dataclass
class TableState:
    history: Tensor  # [B, Lmax] last tokens of each trial's context, -1 left padding


class TableTreeModel:
    """The three tables of a case (docs/ALGORITHM.md §10) as a `TreeModel`, float64 on `device`."""

    def __init__(self, case: Case, *, T: float = 1.0, device: str | torch.device = "cpu") -> None:
        if not (isinstance(T, (int, float)) and T >= 0):
            raise CaseError(f"temperature T={T!r} must be a number >= 0")
        self.device = torch.device(device)
        self.vocab_size = case.vocab_size
        self.case, self.T = case, T  # (the tsubame mutant's reference sampler reads the exact tables)
        keep = lambda t: t
        temp = (lambda t: greedy(t)) if T == 0 else keep if T == 1 else (lambda t: _power(t, 1.0 / T))
        self.q_rank = _Table(case.draft, self.device, keep)
        self.shared = T == 1 and case.q_samp_model is case.draft  # q_samp = q_rank: one table
        self.q_samp = self.q_rank if self.shared else _Table(case.q_samp_model, self.device, temp)
        self.p = _Table(case.target, self.device, temp)
        self.Lmax = max(self.q_rank.L, self.q_samp.L, self.p.L)

    @property
    def prefix_len(self) -> int:
        """Context tokens the tree should carry before the root (`Tree.windows`)."""
        return self.Lmax

    def start(self, contexts: Sequence[Sequence[int]]) -> TableState:
        h = [([-1] * self.Lmax + list(c))[len(c) :] if self.Lmax else [] for c in contexts]
        return TableState(
            torch.tensor(h, dtype=torch.int64, device=self.device).reshape(len(h), self.Lmax)
        )  # [B, Lmax]

    def prefix(self, state: TableState) -> Tensor:
        return state.history  # [B, Lmax]

    def draft(self, state: TableState, tree: Any, nodes: Tensor) -> DraftRows:
        w = tree.windows(nodes, self.Lmax)  # [B, F, Lmax]
        q_rank = self.q_rank.lookup(w)  # [B, F, V]
        if self.shared:
            return DraftRows.one(q_rank)
        return DraftRows(q_rank, self.q_samp.lookup(w), False)  # [B, F, V] each

    def target(self, state: TableState, tree: Any) -> TableRows:
        return TableRows(self.p, self.p.row_index(tree.all_windows(self.Lmax)))  # row ids [B, 1+N]

    def advance(self, state: TableState, emitted: Tensor, n_emitted: Tensor) -> TableState:
        seq = torch.cat([state.history, emitted], -1)  # [B, Lmax+D+1]
        idx = n_emitted[:, None] + torch.arange(self.Lmax, device=seq.device)  # [B, Lmax]
        return TableState(seq.gather(-1, idx))  # [B, Lmax]

    def missing_context(self, state: TableState, tree: Any, nodes: Tensor, table: str = "p") -> list[int] | None:
        """The context window (last tokens) of the first node among `nodes` [B, F] with no row."""
        t = getattr(self, table)
        w = tree.windows(nodes, self.Lmax)  # [B, F, Lmax]
        bad = torch.isnan(t.lookup(w)[..., 0])  # [B, F]
        if not bool(bad.any()):
            return None
        b, f = (int(x) for x in bad.nonzero()[0])
        return [int(x) for x in w[b, f].tolist() if x >= 0]


class DenseRows:
    """Target rows of every node, p [B, 1+N, V], as a transformer's forward over the tree gives them."""

    def __init__(self, p: Tensor) -> None:
        self.p = p

    def at(self, nodes: Tensor) -> Tensor:
        """p[b, nodes[b]] for nodes [B] -> [B, V]."""
        B, n, V = self.p.shape
        return self.p.reshape(B * n, V).index_select(0, torch.arange(B, device=nodes.device) * n + nodes)  # [B, V]


class TableRows:
    """Target rows looked up only where verification goes (a table row per node, fetched lazily)."""

    def __init__(self, table: _Table, index: Tensor) -> None:
        self.table, self.index = table, index  # index [B, 1+N] row ids

    def at(self, nodes: Tensor) -> Tensor:
        return self.table.rows.index_select(0, self.index.gather(1, nodes[:, None])[:, 0])  # [B, V]


def as_rows(p: Tensor | TargetRows) -> TargetRows:
    """What `TreeModel.target` returned, as `TargetRows`."""
    return DenseRows(p) if isinstance(p, Tensor) else p


def _power(t: Tensor, a: float) -> Tensor:
    x = (t / t.amax(-1, keepdim=True)).pow(a)  # [M, V] max 1 first: a large a (small T) cannot underflow a row to 0
    return x / x.sum(-1, keepdim=True)  # [M, V]
