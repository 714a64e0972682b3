"""The worked example of docs/GATE.md, "A batched decoder's suite": a numpy chain speculative decoder
(Leviathan et al. 2023) that runs a batch of requests, each with its own settings, as a decoder
author writes one; `bugs` plants the three bugs its tests must catch through rheo's public API:

- "shared-stream": every row of a batch reads the same uniforms (one random stream per batch);
- "penalty-forgets-drafts": verification applies the repetition penalty over the committed tokens
  only, not the tokens drafted earlier in the round (the draft sampled with them);
- "raw-logprobs": the reported logprob is the unprocessed target's.

A request is a dict of `rheo.processed` keywords; this decoder reads temperature (0: greedy), top_k
(ties at the k-th value kept), top_p (a stable ascending sort: tied tokens of lower id dropped first,
rheo's tie rule "high"), min_p and repetition, in transformers' order. The draft q and the target p
are the case's tables, processed with the request's settings.
"""

from __future__ import annotations

import numpy as np

from rheo import Case

GAMMA = 2  # draft tokens per round


def tables(case: Case) -> tuple[np.ndarray, np.ndarray]:
    """q and p of a first-order case as [V, V] float arrays (row: the previous token)."""
    V = case.vocab_size
    q = np.array([[float(x) for x in case.draft.row((t,))] for t in range(V)])  # [V, V]
    p = np.array([[float(x) for x in case.target.row((t,))] for t in range(V)])  # [V, V]
    return q, p


def settings(requests: list[dict], n: int) -> dict[str, np.ndarray]:
    """Each setting as an array over the n·B sequences (batch-major: sequence s is row s % B)."""

    def col(key: str, off: float) -> np.ndarray:
        return np.tile(np.array([float(r.get(key, off)) for r in requests]), n)  # [M]

    T = col("temperature", 1.0)
    return {
        "greedy": T == 0,
        "power": np.where(T == 0, 1.0, 1.0 / np.where(T == 0, 1.0, T)),
        "top_k": col("top_k", 0).astype(int),
        "top_p": col("top_p", 1.0),
        "min_p": col("min_p", 0.0),
        "theta": col("repetition", 1.0),
    }


def process(w: np.ndarray, seen: np.ndarray, s: dict[str, np.ndarray]) -> np.ndarray:
    """Processed rows: repetition, temperature, top-k, top-p, min-p (transformers' order)."""
    w = np.where(seen, w ** s["theta"][:, None], w)  # [M, V] weight^θ on seen tokens (logit·θ, logit ≤ 0)
    w = w ** s["power"][:, None]
    w = w / w.sum(1, keepdims=True)
    V = w.shape[1]
    k = np.where(s["top_k"] > 0, np.minimum(s["top_k"], V), V)  # [M]
    kth = -np.sort(-w, axis=1)[np.arange(len(w)), k - 1]  # [M]
    w = np.where(w >= kth[:, None], w, 0.0)
    w = w / w.sum(1, keepdims=True)
    order = np.argsort(w, axis=1, kind="stable")  # [M, V] ascending, ties: lower id first
    cum = np.cumsum(np.take_along_axis(w, order, 1), axis=1)  # [M, V]
    drop = cum <= (1 - s["top_p"])[:, None]
    drop[:, -1] = False  # the largest is always kept
    keep = np.ones_like(drop)
    np.put_along_axis(keep, order, ~drop, 1)
    w = np.where(keep, w, 0.0)
    w = np.where(w >= (s["min_p"] * w.max(1))[:, None], w, 0.0)
    w = w / w.sum(1, keepdims=True)
    best = np.eye(V)[w.argmax(1)]  # [M, V] greedy: the argmax, ties to the lowest id
    return np.where(s["greedy"][:, None], best, w)


def pick(w: np.ndarray, u: np.ndarray) -> np.ndarray:
    """Inverse CDF: the first token whose cumulative probability exceeds u."""
    c = np.cumsum(w, axis=1)  # [M, V]
    return np.minimum((c <= (u * c[:, -1])[:, None]).sum(1), w.shape[1] - 1)


class ChainDecoder:
    """`decoder(case, requests, seed, num_samples)` -> [num_samples, B, case.tokens] tokens (rheo's
    batch sampler); `generate` also returns the logprobs it reports."""

    def __init__(self, bugs: frozenset[str] = frozenset()) -> None:
        self.bugs = bugs

    def __call__(self, case: Case, requests: list[dict], seed: int, num_samples: int) -> np.ndarray:
        return self.generate(case, requests, seed, num_samples)[0]

    def uniforms(self, rng: np.random.Generator, n: int, B: int) -> np.ndarray:
        if "shared-stream" in self.bugs:
            return np.repeat(rng.random(n), B)  # [M]: one uniform for every row of a batch
        return rng.random(n * B)  # [M]

    def generate(self, case: Case, requests: list[dict], seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
        q_tab, p_tab = tables(case)  # [V, V] each
        B, V, L = len(requests), case.vocab_size, case.tokens
        M = n * B
        s = settings(requests, n)
        rng = np.random.default_rng(seed)
        out = np.full((M, L + GAMMA + 1), -1)  # [M, ·] emitted tokens
        lp = np.zeros((M, L + GAMMA + 1))  # [M, ·] reported logprobs
        length = np.zeros(M, dtype=int)  # [M]
        seen = np.zeros((M, V), dtype=bool)  # [M, V] prompt and output tokens
        seen[:, list(case.context)] = True
        last = np.full(M, case.context[-1])  # [M]
        rows = np.arange(M)
        while (length < L).any():
            drafts, qs, ctx, seen_d = [], [], last, seen.copy()
            for _ in range(GAMMA):  # draft γ tokens from the processed draft
                q = process(q_tab[ctx], seen_d, s)  # [M, V]
                x = pick(q, self.uniforms(rng, n, B))  # [M]
                drafts.append(x)
                qs.append(q)
                seen_d[rows, x] = True
                ctx = x
            live = length < L  # [M] sequences still decoding
            ctx, seen0, seen_v = last, seen.copy(), seen.copy()
            for j in range(GAMMA + 1):  # verify: accept x_j w.p. min(1, p/q); else the residual, or the bonus
                p = process(p_tab[ctx], seen0 if "penalty-forgets-drafts" in self.bugs else seen_v, s)  # [M, V]
                if j < GAMMA:
                    x, q = drafts[j], qs[j]
                    acc = self.uniforms(rng, n, B) * q[rows, x] < p[rows, x]  # [M]
                    resid = np.maximum(p - q, 0.0)
                    resid = np.where(resid.sum(1, keepdims=True) > 0, resid, p)
                    tok = np.where(acc, x, pick(resid, self.uniforms(rng, n, B)))
                else:
                    acc, tok = np.zeros(M, dtype=bool), pick(p, self.uniforms(rng, n, B))
                raw = p_tab[ctx][rows, tok] if "raw-logprobs" in self.bugs else p[rows, tok]
                out[rows[live], length[live]] = tok[live]
                with np.errstate(divide="ignore"):
                    lp[rows[live], length[live]] = np.log(raw[live])
                length += live
                seen[rows[live], tok[live]] = True
                seen_v[rows, tok] = True
                last = np.where(live, tok, last)
                ctx = tok
                live &= acc & (length < L)
        return out[:, :L].reshape(n, B, L), lp[:, :L].reshape(n, B, L)
