"""Tree decoding with the real models: SmolLM2 target p, EAGLE-style draft head q, KV caches.

`LMTreeModel` implements the fast path's `TreeModel` (rheo_fast.models) for one sequence
(B = 1), so the tree is built (`rheo_fast.tree.build_tree`), reranked and verified
(`rheo_fast.verify.verify`) by the fast path's own functions through `rheo_fast.decode.play_round`:

- `draft` at depth 0 first runs the head over the pending (target feature, next token) pairs of
  the tokens accepted last round (true features, causal, appended to the draft's KV cache); its
  last output is the root's predicted feature. At depth d >= 1 the W frontier nodes run in one
  forward, each reading its parent's predicted feature and attending to the draft cache and its
  own ancestors (tree mask). q_rank, q_samp = softmax(trunc_S(logits)) at 1 and at T.
- `target` runs the target once over the root and the R kept nodes (4D tree mask + position ids
  on top of the KV cache) and returns p = softmax(logits / T) on the kept rows.
- `commit` compacts the target cache to the accepted path and queues the draft's next inputs.

Compact vocabulary (exact, for speed): the fast path sees V' = Vd + 1 ids: the draft vocabulary
(sorted, so "ties by lower id" keep their meaning) and one *bucket* id for every other token. q
is 0 on the bucket; p' = (p on the draft ids, p(rest)). Verification never singles out a bucket
token (no draft proposes one), so on the bucket r stays proportional to p; when the bonus falls
in the bucket the real token is drawn from p restricted to the rest, which is exactly the law of
the bonus over the full vocabulary. This cuts every V-wide operation of the round by ~6x.

Cache invariant between rounds: the target cache holds every context token but the last (the
root of the next tree); the draft cache holds the positions whose inputs used true target
features, and the pending queue the inputs that became known in the last round.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch
from torch import Tensor

from rheo_fast.decode import play_round, round_coins
from rheo_fast.family import fast_families, layout_for
from rheo_fast.lm import methods
from rheo_fast.models import DraftRows, ModelDefaults, draft_probs, target_probs
from rheo_fast.verify import Verdict
from rheo_ref.errors import CaseError
from rheo_ref.models import AnyScheme
from rheo_ref.variants import SPEC, Variant

from . import kvcache as kv
from .draft_head import DraftHead

NEG = float("-inf")


@dataclass
class LMState:
    ids: list[int]  # the whole context so far
    tcache: Any  # target KV cache: ids[:-1]
    dk: Tensor | None  # draft keys [1, Hkv, P, d] (true-feature positions)
    dv: Tensor | None
    pend_feat: Tensor  # [P', h'] target features waiting for the draft (unfused)
    pend_tok: list[int]  # their next tokens
    pend_pos: list[int]  # and positions
    # per round
    node_hid: dict[int, Tensor] = field(default_factory=dict)  # node id -> predicted feature [h]
    tree_k: list[Tensor] = field(default_factory=list)  # draft K/V of fed tree nodes [1,Hkv,1,d]
    tree_v: list[Tensor] = field(default_factory=list)
    tree_slot: dict[int, int] = field(default_factory=dict)  # node id -> index in tree_k
    kept_ids: Tensor | None = None  # [n_kept] node ids the target ran over (root first)
    kept_hid: Tensor | None = None  # [n_kept, h'] their target features
    kept_p: Tensor | None = None  # [n_kept, V] their full-vocabulary p (for bucket bonuses)
    past: int = 0  # target cache length before the round
    root_hid: Tensor | None = None  # the head's predicted feature at the root of this round's tree
    tree: Any = None  # the tree the target last ran over (its nodes' tokens and parents give the accepted path)
    target_span: tuple[float, float] = (0.0, 0.0)  # perf_counter at the start and end of the last target forward
    # counters over the whole decode (cost per round: divide by the rounds)
    draft_calls: int = 0  # LMTreeModel.draft calls
    draft_forwards: int = 0  # draft-head forwards (a call over only undrafted nodes runs none)
    target_forwards: int = 0
    target_tokens: int = 0  # tokens fed to the target's forwards (root + tree nodes)


class LMTreeModel(ModelDefaults):
    """The TreeModel of the fast path for SmolLM2 + draft head (one sequence)."""

    def __init__(self, target: Any, head: DraftHead, *, T: float, S: int = 128):
        if not (isinstance(T, (int, float)) and T >= 0):
            raise CaseError(f"temperature T={T!r} must be a number >= 0")
        if not (isinstance(S, int) and S >= 1):
            raise CaseError(f"sparse support S={S!r} must be an integer >= 1")
        self.model, self.head, self.T, self.S = target, head, float(T), S
        self.full_vocab = target.config.vocab_size
        self.ids = head.vocab_ids.sort().values  # [Vd] compact id -> token id
        self.bucket = len(self.ids)  # compact id of "any token outside the draft vocabulary"
        self.vocab_size = self.bucket + 1  # V' seen by the fast path
        rest = torch.ones(self.full_vocab, dtype=torch.bool)
        rest[self.ids] = False
        self.rest = rest  # [V] token ids folded into the bucket
        self.to_compact = torch.full((self.full_vocab,), self.bucket, dtype=torch.long)
        self.to_compact[self.ids] = torch.arange(self.bucket)
        if not torch.equal(head.vocab_ids, self.ids):
            raise CaseError("draft head vocabulary ids must be sorted")
        self.emb = target.model.embed_tokens
        self.device = torch.device("cpu")
        self.layers = tuple(head.cfg.feature_layers)  # extra target layers the head reads (EAGLE-3)
        self.hidden = target.config.hidden_size

    @torch.inference_mode()
    def start(self, contexts: list[list[int]]) -> LMState:
        if len(contexts) != 1 or len(contexts[0]) < 2:
            raise CaseError("real-model decoding takes one context of at least 2 tokens")
        ids = list(contexts[0])
        cache = kv.new_cache(self.model)
        feats = kv.forward(self.model, cache, torch.tensor(ids[:-1]), layers=self.layers)  # [n-1, h']
        return LMState(ids, cache, None, None, feats, ids[1:], list(range(1, len(ids))))

    def _draft_forward(
        self, st: LMState, feat: Tensor, toks: list[int], pos: list[int], allowed_tree: Tensor | None
    ) -> tuple[Tensor, Tensor, Tensor]:
        """feat [F, h] -> predicted features [F, h]; allowed_tree [F, n_tree+F] (None: causal chain)."""
        F = feat.shape[0]
        st.draft_forwards += 1
        P = 0 if st.dk is None else st.dk.shape[2]
        if allowed_tree is None:
            allowed_tree = torch.ones(F, F, dtype=torch.bool).tril()  # [F, F]
        allowed = torch.cat([torch.ones(F, P, dtype=torch.bool), allowed_tree], 1)  # [F, P+T+F]
        mask = torch.zeros(allowed.shape).masked_fill_(~allowed, NEG)[None, None]  # [1, 1, F, P+T+F]
        past = None
        if st.dk is not None or st.tree_k:
            ks = ([st.dk] if st.dk is not None else []) + st.tree_k
            vs = ([st.dv] if st.dv is not None else []) + st.tree_v
            past = (torch.cat(ks, 2), torch.cat(vs, 2))  # [1, Hkv, P+T, d]
        hid, (k, v) = self.head(
            feat[None], self.emb(torch.tensor(toks))[None], torch.tensor(pos)[None], past=past, mask=mask
        )
        return hid[0], k, v  # [F, h], [1, Hkv, F, d]

    @torch.inference_mode()
    def draft(self, st: LMState, tree: Any, nodes: Tensor) -> DraftRows:
        """Rows at the F nodes `nodes` [1, F] (all at one depth). Nodes with token -1 (undrafted
        nodes of a fixed shape, `rheo_fast.families.static.tree`) are not fed to the head; their rows are
        zero (no mass: their children stay undrafted)."""
        st.draft_calls += 1
        d = int(tree.depth[nodes[0, 0]])
        ids = nodes[0].tolist()
        live = ids if d == 0 else [j for j in ids if int(tree.tokens[0, j]) >= 0]
        if not live:
            zero = torch.zeros((1, len(ids), self.vocab_size), dtype=torch.float64)  # [1, F, V']
            return DraftRows.one(zero) if self.T == 1 else DraftRows(zero, zero.clone(), False)
        rows = self._draft_rows(st, tree, d, live)  # [1, F', V'] each
        if len(live) == len(ids):
            return rows
        at = torch.tensor([ids.index(j) for j in live])  # [F'] rows of the live nodes
        q_rank, q_samp = (torch.zeros((1, len(ids), self.vocab_size), dtype=torch.float64) for _ in range(2))
        q_rank[:, at], q_samp[:, at] = rows.q_rank, rows.q_samp
        return DraftRows(q_rank, q_rank if rows.shared else q_samp, rows.shared)

    def _draft_rows(self, st: LMState, tree: Any, d: int, ids: list[int]) -> DraftRows:
        """The head's rows at the depth-d nodes ids (every one with a token), one forward."""
        if d == 0:  # a tree starts: feed the pending true-feature inputs (once), root = last output
            st.tree_k, st.tree_v = [], []  # the last tree's nodes are not the new tree's context
            if st.pend_tok:
                hid, k, v = self._draft_forward(st, self.head.fuse(st.pend_feat), st.pend_tok, st.pend_pos, None)
                st.dk = k if st.dk is None else torch.cat([st.dk, k], 2)  # [1, Hkv, P, d]
                st.dv = v if st.dv is None else torch.cat([st.dv, v], 2)
                st.root_hid = hid[-1]  # [h]
                st.pend_feat, st.pend_tok, st.pend_pos = st.pend_feat[:0], [], []  # fed: a second tree
                # of the same round (a family that drafts twice) starts from the same root
            assert st.root_hid is not None, "start() queues the prompt's inputs"
            st.node_hid, st.tree_slot = {0: st.root_hid}, {}
            out = st.root_hid[None]  # [1, h]
        else:
            n_tree = len(st.tree_k)
            allowed = torch.zeros(len(ids), n_tree + len(ids), dtype=torch.bool)  # [F, T+F]
            parents = tree.parent[0]
            for i, j in enumerate(ids):
                allowed[i, n_tree + i] = True
                a = int(parents[j])
                while a > 0:
                    allowed[i, st.tree_slot[a]] = True
                    a = int(parents[a])
            feat = torch.stack([st.node_hid[int(parents[j])] for j in ids])  # [F, h]
            toks = self.ids[tree.tokens[0, ids]].tolist()  # compact -> real token ids
            pos = [len(st.ids) - 1 + d] * len(ids)
            out, k, v = self._draft_forward(st, feat, toks, pos, allowed)
            for i, j in enumerate(ids):
                st.node_hid[j] = out[i]
                st.tree_slot[j] = n_tree + i
                st.tree_k.append(k[:, :, i : i + 1])
                st.tree_v.append(v[:, :, i : i + 1])
        small = self.head.draft_logits(out)  # [F, Vd]
        logits = torch.cat([small, small.new_full((small.shape[0], 1), NEG)], -1)  # [F, V'] bucket: q = 0
        rows = draft_probs(logits, S=self.S, T=self.T)  # [F, V'] each, float64
        if rows.shared:
            return DraftRows.one(rows.q_rank[None])  # [1, F, V']
        return DraftRows(rows.q_rank[None], rows.q_samp[None], False)  # [1, F, V'] each

    @torch.inference_mode()
    def target(self, st: LMState, tree: Any) -> Tensor:
        """p at the tree's nodes that hold a token: `kept` (the rheo family's reranked tree) or
        `drafted` (a fixed shape's drawn nodes); other rows are NaN (no row)."""
        t0 = time.perf_counter()
        nodes = tree.kept if hasattr(tree, "kept") else tree.drafted  # [1, 1+N] bool, the root True
        kept = nodes[0].nonzero()[:, 0]  # [n] node ids, creation order (parents first)
        toks, anc, depths = self.subtree_inputs(st, tree, kept)
        st.past = kv.cache_len(st.tcache)
        hid = kv.forward(self.model, st.tcache, toks, anc=anc, depths=depths, layers=self.layers)  # [n, h']
        p = target_probs(kv.logits_of(self.model, hid[:, -self.hidden :]), T=self.T)  # [n, V] float64
        st.kept_ids, st.kept_hid, st.kept_p, st.tree = kept, hid, p, tree
        st.target_forwards += 1
        st.target_tokens += len(kept)
        full = torch.full((1, tree.tokens.shape[1], self.vocab_size), math.nan, dtype=torch.float64)  # [1, 1+N, V']
        full[0, kept] = self.compact(p)
        st.target_span = (t0, time.perf_counter())
        return full

    def accepted_path(self, st: LMState, accepted: list[int]) -> list[int]:
        """Node ids root, a_1..a_k of the accepted compact tokens `accepted` in the tree the target
        last ran over: at each depth, the first node (creation order) among the target's nodes
        whose parent is the previous one and whose token is the accepted one. Duplicate siblings
        (iid) have the same context, so any of them is the path. Works for any family whose
        round verifies nodes the target ran over (the verdict's own node ids differ by family)."""
        assert st.tree is not None and st.kept_ids is not None
        kept = st.kept_ids.tolist()
        toks = st.tree.tokens[0, st.kept_ids].tolist()
        par = st.tree.parent[0, st.kept_ids].tolist()
        path = [0]
        for t in accepted:
            nxt = next((v for v, x, u in zip(kept, toks, par) if u == path[-1] and x == t), None)
            if nxt is None:
                raise CaseError(f"accepted token {t} is no child of node {path[-1]} the target ran over (a bug)")
            path.append(nxt)
        return path

    def subtree_inputs(self, st: LMState, tree: Any, nodes: Tensor) -> tuple[Tensor, Tensor, Tensor]:
        """Inputs of one target forward over tree nodes `nodes` [n] (ids in creation order, the root
        first, every node's parent among them) on top of the cache: real token ids [n], ancestor
        matrix [n, n] and depths + 1 [n] (position offsets; the root: 1)."""
        where = torch.full((tree.tokens.shape[1],), -1, dtype=torch.long)  # node id -> row
        where[nodes] = torch.arange(len(nodes))
        par = where[tree.parent[0, nodes].clamp(min=0)]  # [n]
        par[0] = -1
        toks = self.ids[tree.tokens[0, nodes].clamp(min=0)]  # [n] real token ids
        toks[0] = st.ids[-1]
        return toks, kv.ancestor_matrix(par), tree.depth[nodes] + 1

    def compact(self, p: Tensor) -> Tensor:
        """p [n, V] over the full vocabulary -> [n, V'] on the compact one (the bucket: p(rest))."""
        return torch.cat([p[:, self.ids], (p * self.rest).sum(-1, keepdim=True)], -1)

    def real_tokens(self, st: LMState, emitted: list[int], visited: list[int], generator: torch.Generator) -> list[int]:
        """Compact ids -> token ids; a bonus in the bucket is drawn from p on the rest (see module doc)."""
        out = [int(self.ids[t]) for t in emitted[:-1]]
        b = emitted[-1]
        if b != self.bucket:
            return out + [int(self.ids[b])]
        assert st.kept_ids is not None and st.kept_p is not None
        row = (st.kept_ids == visited[-1]).nonzero()[0, 0]
        pr = st.kept_p[row] * self.rest  # [V] p restricted to the rest (r is proportional to it there)
        return out + [draw(pr, self.T, generator)]

    def commit(self, st: LMState, emitted: list[int], visited: list[int]) -> None:
        """After a round: emitted = accepted tokens + bonus; visited = root + accepted node ids."""
        assert st.kept_ids is not None and st.kept_hid is not None
        row = {int(n): i for i, n in enumerate(st.kept_ids.tolist())}
        keep = torch.tensor([row[v] for v in visited])  # rows of root, a_1..a_k
        kv.compact(st.tcache, st.past, keep)
        n = len(st.ids)
        st.pend_feat = st.kept_hid[keep]  # [k+1, h]
        st.pend_tok = list(emitted)
        st.pend_pos = list(range(n, n + len(emitted)))
        st.ids += list(emitted)


# --- schemes -------------------------------------------------------------------------------


@dataclass(frozen=True)
class TreeSize:
    """Tree sizes for this CPU: a target forward over 16 tree nodes costs ~1.5 single-token steps,
    and the head's overlap (~0.4-0.5) makes acceptance beyond depth 4 rare."""

    K: int = 6
    W: int = 4
    D: int = 4
    R: int = 16
    chain_D: int = 3


METHODS = methods.METHODS


def scheme_for(method: str, size: TreeSize) -> AnyScheme | None:
    """The fast-path scheme of a method name (None: plain autoregressive decoding); each family
    declares its methods (`rheo_fast.family.FastFamily.lm_methods`)."""
    if method not in METHODS:
        raise CaseError(f"unknown method {method!r}; allowed: {', '.join(METHODS)}")
    if method == "ar":
        return None
    out: AnyScheme = next(f.lm_methods[method] for f in fast_families().values() if method in f.lm_methods)(size)
    return out


def describe(scheme: AnyScheme) -> str:
    """One line naming a scheme's sizes (for `rheo generate`'s summary)."""
    return str(scheme.describe())


@dataclass
class GenResult:
    tokens: list[int]
    rounds: int
    emitted: int  # tokens the rounds emitted before the max_new / EOS cut (τ numerator)
    seconds: float  # decoding wall time (prefill excluded)
    prefill_seconds: float
    phase_seconds: tuple[float, float, float] = (0.0, 0.0, 0.0)  # of `seconds`: tree building (draft),
    # target forward, verification
    draft_forwards: int = 0  # draft-head forwards of the whole decode (the first feeds the prompt)
    draft_calls: int = 0  # LMTreeModel.draft calls
    target_tokens: int = 0  # tokens fed to target forwards after prefill (AR: one per step)

    @property
    def tau(self) -> float:
        return self.emitted / max(self.rounds, 1)

    @property
    def tokens_per_s(self) -> float:
        return len(self.tokens) / self.seconds if self.seconds > 0 else float("nan")


def draw(probs: Tensor, T: float, generator: torch.Generator) -> int:
    """One token from probs [V] (any non-negative weights): the argmax at T = 0 (no coin used)."""
    return int(probs.argmax()) if T == 0 else int(torch.multinomial(probs, 1, generator=generator))


def _cut_eos(toks: list[int], eos: set[int]) -> tuple[list[int], bool]:
    for i, t in enumerate(toks):
        if t in eos:
            return toks[: i + 1], True
    return toks, False


@torch.inference_mode()
def generate_ar(
    model: Any,
    prompt: list[int],
    *,
    T: float,
    max_new: int,
    generator: torch.Generator,
    eos: set[int] = frozenset(),
    on_tokens: Callable[[list[int]], None] | None = None,
) -> GenResult:
    """Plain autoregressive decoding with the KV cache: one target forward per token."""
    t0 = time.perf_counter()
    cache = kv.new_cache(model)
    hid = kv.forward(model, cache, torch.tensor(prompt))[-1:]  # [1, h]
    t1 = time.perf_counter()
    out: list[int] = []
    while len(out) < max_new:
        p = target_probs(kv.logits_of(model, hid), T=T)[0]  # [V]
        tok = draw(p, T, generator)
        out.append(tok)
        if on_tokens:
            on_tokens([tok])
        if tok in eos or len(out) >= max_new:
            break
        hid = kv.forward(model, cache, torch.tensor([tok]))  # [1, h]
    return GenResult(out, len(out), len(out), time.perf_counter() - t1, t1 - t0, target_tokens=max(len(out) - 1, 0))


@dataclass
class RoundInfo:
    """What one real-model round did: the verdict, wall time of its phases, model calls."""

    verdict: Verdict
    seconds: tuple[float, float, float]  # drafting (up to the target forward), target forward, verification
    draft_forwards: int
    draft_calls: int
    target_tokens: int


@torch.inference_mode()
def tree_round(
    lm: LMTreeModel,
    st: LMState,
    scheme: AnyScheme,
    layout: Any,
    generator: torch.Generator,
    variant: Variant = SPEC,
) -> tuple[list[int], RoundInfo]:
    """One speculative round on st, of any family with a fast path: `rheo_fast.decode.play_round`
    (layout: `layout_for(scheme)`), then the emitted compact ids mapped to token ids and committed
    (KV caches compacted to the accepted path). Returns (the emitted token ids, the RoundInfo)."""
    counts = (st.draft_forwards, st.draft_calls, st.target_tokens)
    t0 = time.perf_counter()
    v = play_round(
        lm,
        st,
        scheme,
        round_coins(generator, 1, layout),
        torch.ones(1, dtype=torch.bool),
        variant=variant,
        layout=layout,
    )
    t1 = time.perf_counter()
    a, b = st.target_span
    n = int(v.n_emitted[0])
    compact = v.emitted[0, :n].tolist()
    visited = lm.accepted_path(st, compact[:-1])
    emitted = lm.real_tokens(st, compact, visited, generator)
    lm.commit(st, emitted, visited)
    info = RoundInfo(
        v,
        (a - t0, b - a, t1 - b),
        st.draft_forwards - counts[0],
        st.draft_calls - counts[1],
        st.target_tokens - counts[2],
    )
    return emitted, info


@torch.inference_mode()
def generate_tree(
    lm: LMTreeModel,
    prompt: list[int],
    scheme: AnyScheme,
    *,
    max_new: int,
    generator: torch.Generator,
    eos: set[int] = frozenset(),
    on_tokens: Callable[[list[int]], None] | None = None,
    variant: Variant = SPEC,
) -> GenResult:
    """Speculative decoding rounds driven by rheo_fast.decode.play_round until max_new tokens or EOS
    (`variant`: the spec, or one of rheo_ref.variants.MUTANTS for negative controls)."""
    layout = layout_for(scheme)
    if not isinstance(variant, Variant):
        raise CaseError(f"variant={variant!r} must be a rheo_ref.variants.Variant (SPEC, or MUTANTS[name])")
    variant.check_family(scheme.family)
    t0 = time.perf_counter()
    st = lm.start([prompt])
    t1 = time.perf_counter()
    out: list[int] = []
    rounds = total = 0
    phases = [0.0, 0.0, 0.0]
    calls = st.draft_calls
    while len(out) < max_new:
        emitted, res = tree_round(lm, st, scheme, layout, generator, variant)
        phases = [a + b for a, b in zip(phases, res.seconds)]
        rounds += 1
        total += len(emitted)
        emitted, stop = _cut_eos(emitted, eos)
        emitted = emitted[: max_new - len(out)]
        out += emitted
        if on_tokens:
            on_tokens(emitted)
        if stop:
            break
    return GenResult(
        out,
        rounds,
        total,
        time.perf_counter() - t1,
        t1 - t0,
        tuple(phases),
        st.draft_forwards,
        st.draft_calls - calls,
        st.target_tokens,
    )
