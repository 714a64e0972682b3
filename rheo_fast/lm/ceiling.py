"""`rheo draft-ceiling`: what speedup would a better draft buy on this machine?

The speed of tree decoding is τ / (cost of a round). The round's cost is set by the tree's size
(K, W, D, R) and the machine, not by how good the draft is; τ is set by the draft. This command
holds the first fixed and varies the second: it decodes with *oracle-mixed* drafts

    q_α = trunc_S((1 - α) q_head + α p̄)        (p̄: the target's own p at the node, on the draft
                                                vocabulary, renormalised; T = 1)

whose overlap Σ min(p, q) with the target runs from the trained head's (α = 0) up to ~1 (α = 1),
measures τ and that overlap at the tree's nodes, and converts τ into the speedup over
autoregressive decoding that a real head of that quality would give, using the round cost of the
real head (this run's rounds with the oracle's extra target forwards timed and subtracted) and
autoregressive tokens/s measured in the same run. Any q is a valid draft, so decoding with q_α is
as lossless as with the head; only the cost of computing p̄ (one target forward per depth) is not
something a real drafter could pay, which is why it is taken out of the timing.

Writes reports/draft_ceiling.md and .png (τ and projected speedup against overlap, per scheme).
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import torch
from torch import Tensor

from rheo_fast.models import DraftRows, draft_probs, target_probs
from rheo_ref.atomic import savefig_atomic
from rheo_ref.errors import CaseError

from . import kvcache as kv
from .decode import LMState, LMTreeModel, TreeSize, scheme_for


def check_alpha(alpha: Any) -> float:
    """The oracle's mixing weight as a float, or CaseError naming it and what is allowed."""
    if isinstance(alpha, bool) or not isinstance(alpha, (int, float)) or not 0.0 <= alpha <= 1.0:
        raise CaseError(f"oracle mixing weight alpha={alpha!r} is outside [0, 1] (must be a number in [0, 1])")
    return float(alpha)


class OracleMixLM(LMTreeModel):
    """LMTreeModel whose draft rows are the head's q mixed with the target's p at the same node
    (T = 1 only: the mixture is taken in probability space and then S-truncated, which at T = 1
    is both q_rank and q_samp). Records, per depth of the drafted children, the overlap
    Σ min(p, q) of the head's q and of the mixture, and the seconds spent on the oracle."""

    def __init__(self, target: Any, head: Any, *, alpha: float, S: int = 128):
        self.alpha = check_alpha(alpha)
        super().__init__(target, head, T=1.0, S=S)
        self.oracle_seconds = 0.0
        self.overlap_head: dict[int, list[float]] = {}  # depth of the children -> overlaps of q_head
        self.overlap_mix: dict[int, list[float]] = {}  # and of q_α

    def reset_stats(self) -> None:
        self.oracle_seconds = 0.0
        self.overlap_head, self.overlap_mix = {}, {}

    @torch.inference_mode()
    def node_p(self, st: LMState, tree: Any, nodes: list[int]) -> Tensor:
        """The target's p at T = 1 at tree nodes `nodes` (creation-order ids; 0 is the root), on the
        compact vocabulary [len(nodes), V'] (last column: the mass outside the draft vocabulary).
        One target forward over the nodes and their ancestors on top of the cache, cropped after."""
        parents = tree.parent[0]
        need = set()
        for j in nodes:
            while j > 0:
                need.add(j)
                j = int(parents[j])
        sub = torch.tensor([0] + sorted(need))  # root first, parents before children
        toks, anc, depths = self.subtree_inputs(st, tree, sub)
        past = kv.cache_len(st.tcache)
        try:
            hid = kv.forward(self.model, st.tcache, toks, anc=anc, depths=depths)  # [n, h]
        finally:
            kv.crop_to(st.tcache, past)
        rows = torch.searchsorted(sub, torch.tensor(nodes))  # [F] rows of `nodes` in sub
        return self.compact(target_probs(kv.logits_of(self.model, hid[rows]), T=1.0))  # [F, V']

    @torch.inference_mode()
    def draft(self, st: LMState, tree: Any, nodes: Tensor) -> DraftRows:
        q_head = super().draft(st, tree, nodes).q_rank  # [1, F, V'] (T = 1: q_samp = q_rank)
        t0 = time.perf_counter()
        ids = nodes[0].tolist()
        pc = self.node_p(st, tree, ids)  # [F, V'] (also needed at α = 0: the overlaps)
        if self.alpha == 0.0:
            q = q_head[0]  # exactly the head's decoding
        else:
            pbar = pc.clone()
            pbar[:, -1] = 0.0
            pbar /= pbar.sum(-1, keepdim=True)  # p on the draft vocabulary, renormalised
            mix = (1.0 - self.alpha) * q_head[0] + self.alpha * pbar  # [F, V']
            q = draft_probs(mix.log(), S=self.S, T=1.0).q_rank  # [F, V'] S-truncated, renormalised
        d = int(tree.depth[ids[0]]) + 1  # depth of the children these rows draft
        self.overlap_head.setdefault(d, []).extend(torch.minimum(pc, q_head[0]).sum(-1).tolist())
        self.overlap_mix.setdefault(d, []).extend(torch.minimum(pc, q).sum(-1).tolist())
        self.oracle_seconds += time.perf_counter() - t0
        return DraftRows.one(q[None])


def _mean(xs: list[float]) -> float:
    return sum(xs) / len(xs) if xs else float("nan")


def ceiling(
    alphas: list[float],
    methods: list[str],
    *,
    per_set: int,
    max_new: int,
    size: TreeSize,
    S: int,
    seed: int,
    draft: str | None = None,
    progress: bool = True,
) -> dict[str, Any]:
    from .bench import Cell, Loaded, timed_decodes

    loaded = Loaded.load(per_set, draft)
    lms = {a: OracleMixLM(loaded.target.model, loaded.head, alpha=a, S=S) for a in alphas}
    # autoregressive first on each prompt; every α decodes a method from the same coins
    cells = [Cell("ar", 1.0, key=("ar",))]
    cells += [Cell(meth, 1.0, lms[a], (meth,), f"alpha={a:g}") for a in alphas for meth in methods]
    ar = {"tokens": 0, "seconds": 0.0}
    rows: dict[tuple[str, float], dict[str, Any]] = {}
    for _, cell, r in timed_decodes(
        loaded, cells, size=size, max_new=max_new, seed=seed, desc="draft-ceiling", progress=progress
    ):
        if cell.lm is None:
            ar["tokens"] += len(r.tokens)
            ar["seconds"] += r.seconds
            continue
        lm = cell.lm
        acc = rows.setdefault(
            (cell.method, lm.alpha), {"emitted": 0, "rounds": 0, "seconds": 0.0, "oracle": 0.0, "head": {}, "mix": {}}
        )
        acc["emitted"] += r.emitted
        acc["rounds"] += r.rounds
        acc["seconds"] += r.seconds
        acc["oracle"] += lm.oracle_seconds
        for key, src in (("head", lm.overlap_head), ("mix", lm.overlap_mix)):
            for d, xs in src.items():
                acc[key].setdefault(d, []).extend(xs)
        lm.reset_stats()  # the next decode's oracle seconds and overlaps
    ar_tps = ar["tokens"] / ar["seconds"]
    table = []
    for meth in methods:
        for a in alphas:
            c = rows[(meth, a)]
            tau = c["emitted"] / c["rounds"]
            round_s = (c["seconds"] - c["oracle"]) / c["rounds"]  # the real head's round
            table.append(
                {
                    "method": meth,
                    "alpha": a,
                    "tau": tau,
                    "rounds": c["rounds"],
                    "overlap_d1": _mean(c["mix"].get(1, [])),
                    "overlap_d2": _mean(c["mix"].get(2, [])),
                    "head_overlap_d1": _mean(c["head"].get(1, [])),
                    "round_ms": 1e3 * round_s,
                    "oracle_ms": 1e3 * c["oracle"] / c["rounds"],
                    "break_even_tau": round_s * ar_tps,
                    "projected_speedup": tau / (round_s * ar_tps),
                }
            )
    return {**loaded.header(size, S, max_new), "T": 1.0, "ar_tokens_per_s": ar_tps, "table": table}


def needed_overlap(res: dict[str, Any], method: str, goal: float) -> float | None:
    """The depth-1 overlap at which `method`'s projected speedup first reaches `goal`, by linear
    interpolation between measured α (None: not reached even at the largest α)."""
    pts = sorted((r["overlap_d1"], r["projected_speedup"]) for r in res["table"] if r["method"] == method)
    for (x0, y0), (x1, y1) in zip(pts, pts[1:]):
        if y0 >= goal:
            return x0
        if y1 >= goal:
            return x0 + (goal - y0) * (x1 - x0) / (y1 - y0)
    return pts[-1][0] if pts and pts[-1][1] >= goal else None


def markdown(res: dict[str, Any], goal: float) -> str:
    s = res["size"]
    lines = [
        "# draft-ceiling: τ and speedup against draft quality (oracle-mixed drafts, T = 1)",
        "",
        f"Tree: K={s['K']} W={s['W']} D={s['D']} R={s['R']} (chain: D={s['chain_D']}), S={res['S']}; "
        f"{len(res['prompts'])} prompts ({', '.join(res['prompts'])}), up to {res['max_new_tokens']} new tokens each; "
        f"torch threads {res['threads']}; autoregressive {res['ar_tokens_per_s']:.2f} tokens/s (same run).",
        "",
        "q_α = trunc_S((1-α) q_head + α p̄). Overlap: mean Σ min(p, q_α) at the drafted tree nodes "
        "(depth 1: the root's children, drafted from the target's features; depth 2: drafted from the head's "
        "own prediction). Round ms: the real head's round (the oracle's target forwards are timed and "
        "subtracted). Projected speedup = τ / (round s × AR tokens/s).",
        "",
        "| method | α | overlap depth 1 | overlap depth 2 | τ | rounds | round ms (oracle ms removed) | break-even τ | projected speedup |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for r in res["table"]:
        lines.append(
            f"| {r['method']} | {r['alpha']:g} | {r['overlap_d1']:.3f} | {r['overlap_d2']:.3f} | {r['tau']:.3f} "
            f"| {r['rounds']} | {r['round_ms']:.1f} ({r['oracle_ms']:.0f}) | {r['break_even_tau']:.2f} "
            f"| {r['projected_speedup']:.2f}x |"
        )
    lines.append("")
    for meth in dict.fromkeys(r["method"] for r in res["table"]):
        need = needed_overlap(res, meth, goal)
        lines.append(
            f"- {meth}: a {goal}x speedup needs depth-1 overlap ≈ {need:.2f}"
            if need is not None
            else f"- {meth}: {goal}x is not reached even at the largest α measured"
        )
    d = res["draft"]
    lines += [
        f"- the trained head: overlap {d.get('overlap_depth1', float('nan')):.3f} on held-out text "
        f"(depth 1; depth 2: {d.get('overlap_depth2', float('nan')):.3f})",
        "",
    ]
    return "\n".join(lines)


def plot(res: dict[str, Any], path: Path, goal: float) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for meth in dict.fromkeys(r["method"] for r in res["table"]):
        pts = sorted((r["overlap_d1"], r["tau"], r["projected_speedup"]) for r in res["table"] if r["method"] == meth)
        axes[0].plot([x for x, _, _ in pts], [t for _, t, _ in pts], "o-", label=meth)
        axes[1].plot([x for x, _, _ in pts], [s for _, _, s in pts], "o-", label=meth)
    head = res["draft"].get("overlap_depth1")
    axes[1].axhline(goal, color="red", lw=0.8, label=f"goal {goal}x")
    axes[1].axhline(1.0, color="grey", lw=0.8)
    for ax in axes:
        ax.set_xlabel("draft overlap Σ min(p, q) at depth 1 (T = 1)")
        if head is not None:
            ax.axvline(head, color="grey", ls=":", label="trained head (held-out)")
        ax.legend()
    axes[0].set_ylabel("τ (tokens per round)")
    axes[1].set_ylabel("projected speedup over autoregressive")
    axes[0].set_title("τ against draft quality")
    axes[1].set_title("speedup a draft of that quality would give here")
    fig.tight_layout()
    savefig_atomic(fig, path, dpi=110)
    plt.close(fig)


def run_ceiling(args: Any) -> int:
    from .bench import GOAL_SPEEDUP, write_report

    size = TreeSize(K=args.K, W=args.W, D=args.D, R=args.R)
    try:
        alphas = [float(x) for x in args.alphas.split(",")]
    except ValueError:
        raise CaseError(f"--alphas {args.alphas!r} must be comma-separated numbers in [0, 1]") from None
    methods = [m.strip() for m in args.methods.split(",")]
    for m in methods:
        if scheme_for(m, size) is None:
            raise CaseError(f"--methods: {m!r} has no draft; allowed: tree schemes (chain, topk, rheo, ...)")
    for a in alphas:
        check_alpha(a)  # before any model loads
    t0 = time.perf_counter()
    res = ceiling(
        alphas,
        methods,
        per_set=args.prompts,
        max_new=args.max_new_tokens,
        size=size,
        S=args.S,
        seed=args.seed,
        draft=args.draft,
    )
    res["wall_seconds"] = time.perf_counter() - t0
    return write_report(
        res, args, "draft_ceiling", markdown(res, GOAL_SPEEDUP), lambda path: plot(res, path, GOAL_SPEEDUP)
    )
