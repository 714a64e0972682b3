"""`rheo paper-tables`: the seeds' Tables 4/5 and Figures 3/4 on SmolLM2 + the draft head.

Two measurements, each saved per unit of work (one prompt, or one prompt x setting) so that a
killed run resumes where it stopped:

- **Tables 4 and 5, exact per context.** For each prompt a continuation is sampled from the target
  at T = 1 (autoregressive, seeded); one teacher-forced forward of the target over prompt +
  continuation and one of the head give p and q at every continuation position (the head at
  depth 1: it reads the target's features, as at a tree's root). At each such context the exact
  one-level acceptance (`rheo_fast.expected.one_level_acceptance`, K = 3 slots top-1, sampled-1,
  top-1 of the rest) of Top-K (m = K), Rheo + RRSw and Rheo + OT (m = 1), and, for Table 5, the
  coverage of q by its top-S ids and the OT acceptance with q truncated to S. Rows are on the
  compact vocabulary (the head's ids + one bucket for every other token), which leaves every
  acceptance unchanged: no slot ever holds a bucket token. The first contexts are re-done by
  rheo_ref's exact Fractions (`rheo_ref.exact.acceptance` on the float64 rows read as rationals).
- **Figures 3 and 4, paired and Rao–Blackwellised.** Every prompt is decoded once per setting
  (m in {0, 1, 2, K} at T = 1; T in {0.3, 0.5, 0.7, 1} at m = 1) with common random numbers: round
  i of a prompt draws its coin block (and a bucket bonus) from a generator seeded by (seed,
  prompt, i), whatever the setting. Each round records the realised length and its exact
  expectation given the built tree (`rheo_fast.expected.expected_emitted`), the drafting time and
  the time the expectation took.
Summaries, intervals and the report: `rheo_fast.lm.paper_report`.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import torch

from rheo_fast.decode import round_coins
from rheo_fast.expected import expected_emitted, one_level_acceptance
from rheo_fast.families.rheo.round import check_round as _check_round
from rheo_fast.families.rheo.round import run_round
from rheo_fast.family import layout_for
from rheo_fast.models import DenseRows, draft_probs, target_probs
from rheo_ref import strict_json
from rheo_ref.atomic import write_text_atomic
from rheo_ref.errors import CaseError
from rheo_ref.families.rheo.scheme import Scheme

from . import kvcache as kv
from .bench import _seed
from .decode import LMTreeModel, generate_ar
from .prompts import Prompt, render, sample_prompts


@dataclass(frozen=True)
class PaperConfig:
    """Sizes of one run (`full()`: the documented run; `quick()`: the test size)."""

    table_per_set: int = 4  # prompts per set (HumanEval, MT-bench) for Tables 4/5
    table_tokens: int = 256  # continuation tokens sampled per prompt = contexts per prompt (fewer at an EOS)
    min_contexts: int = 2000  # more prompts (up to 4 more per set) while the continuations gave fewer contexts
    abl_per_set: int = 8  # prompts per set for Figures 3/4
    abl_tokens: int = 48  # new tokens per ablation decode
    K: int = 6
    W: int = 4
    D: int = 4
    R: int = 16
    S: int = 128
    ms: tuple[int, ...] = (0, 1, 2, 6)  # Figure 3 (the last: m = K, Top-K)
    temps: tuple[float, ...] = (0.3, 0.5, 0.7, 1.0)  # Figure 4
    supports: tuple[int, ...] = (128, 256, 512, 1024)  # Table 5, plus the full draft vocabulary
    exact_check: int = 8  # contexts re-done in exact Fractions by rheo_ref
    seed: int = 0

    @classmethod
    def quick(cls, seed: int = 0) -> PaperConfig:
        return cls(
            table_per_set=1, table_tokens=12, min_contexts=0, abl_per_set=1, abl_tokens=6, K=4, W=2, D=2, R=6, ms=(0, 1, 2, 4),
            supports=(16, 64, 256), exact_check=2, seed=seed,
        )  # fmt: skip

    def key(self, draft_id: str) -> str:
        """Work-folder key: the configuration and the draft head's identity."""
        return hashlib.sha256(json.dumps([asdict(self), draft_id], allow_nan=False).encode()).hexdigest()[:12]


def settings(cfg: PaperConfig) -> list[tuple[int, float]]:
    """The (m, T) pairs decoded: Figure 3's m at T = 1, then Figure 4's T at m = 1 (shared once)."""
    out = [(m, 1.0) for m in cfg.ms]
    return out + [(1, T) for T in cfg.temps if (1, T) not in out]


# --- Tables 4 and 5 ------------------------------------------------------------------------


@torch.inference_mode()
def context_rows(target: Any, head: Any, ids: list[int], n_prompt: int) -> tuple[torch.Tensor, torch.Tensor]:
    """One teacher-forced forward of target and head over ids: at the contexts ids[:j] for
    j = n_prompt .. len(ids)-1, p [L, V'] (T = 1, compact: the head's ids + bucket) and the head's
    depth-1 draft logits [L, Vd]."""
    model = target.model
    layers = tuple(head.cfg.feature_layers)
    h = model.config.hidden_size
    feats = kv.forward(model, kv.new_cache(model), torch.tensor(ids), layers=layers)  # [n, h']
    vocab = head.vocab_ids  # [Vd] sorted target ids
    at = torch.arange(n_prompt - 1, len(ids) - 1)  # [L] positions whose next-token row is wanted
    p = target_probs(kv.logits_of(model, feats[at, -h:]), T=1.0)  # [L, V]
    p = torch.cat([p[:, vocab], (1 - p[:, vocab].sum(-1, keepdim=True)).clamp(min=0)], -1)  # [L, Vd+1]
    emb = model.model.embed_tokens
    pos = torch.arange(1, len(ids))[None]  # [1, n-1] the head at position i reads (feature i-1, token i)
    hid, _ = head(head.fuse(feats[None, :-1]), emb(torch.tensor(ids[1:]))[None], pos)  # [1, n-1, h]
    logits = head.draft_logits(hid[0, at - 1])  # [L, Vd] output at position i predicts the token after i
    return p, logits


def with_bucket(logits: torch.Tensor) -> torch.Tensor:
    """Draft logits [L, Vd] -> [L, Vd+1] with -inf on the bucket (q = 0 there)."""
    return torch.cat([logits, logits.new_full((logits.shape[0], 1), float("-inf"))], -1)


def table_rows(p: torch.Tensor, logits: torch.Tensor, cfg: PaperConfig) -> dict[str, list[float]]:
    """Per-context Table 4/5 numbers from p [L, V'] and draft logits [L, Vd]."""
    q = draft_probs(with_bucket(logits), S=cfg.S, T=1.0).q_rank  # [L, V']
    out = {
        "topk": one_level_acceptance(p, q, q, K=3, m=3, verify="rheo"),
        "rheo_rrsw": one_level_acceptance(p, q, q, K=3, m=1, verify="rrsw"),
        "rheo_ot": one_level_acceptance(p, q, q, K=3, m=1, verify="rheo"),
    }
    full = torch.softmax(logits.double(), -1)  # [L, Vd] the head's untruncated q
    srt = full.sort(-1, descending=True).values  # [L, Vd]
    for s in list(cfg.supports) + [logits.shape[-1]]:
        name = "full" if s >= logits.shape[-1] else str(s)
        qs = draft_probs(with_bucket(logits), S=s, T=1.0).q_rank  # [L, V']
        out[f"coverage_{name}"] = srt[:, :s].sum(-1)
        out[f"accept_{name}"] = one_level_acceptance(p, qs, qs, K=3, m=1, verify="rheo")
    return {k: [float(x) for x in v] for k, v in out.items()}


def exact_check(p: torch.Tensor, q: torch.Tensor) -> dict[str, float]:
    """|float64 - exact| of the three Table 4 rates at one context: rheo_ref on the rows restricted
    to q's support + 4 more ids + one rest bucket, read as exact rationals (exact on these rows:
    the restriction changes no acceptance). p, q: [V'] float64."""
    from rheo_ref.exact import acceptance
    from rheo_ref.models import Case

    keep = sorted(set((q > 0).nonzero()[:, 0].tolist()) | set(p.topk(4).indices.tolist()))
    rest = [i for i in range(len(p)) if i not in set(keep)]

    def rational(row: torch.Tensor) -> list[str]:
        xs = [Fraction(float(row[i])) for i in keep] + [Fraction(float(row[rest].sum())) if rest else Fraction(0)]
        z = sum(xs)
        return [str(x / z) for x in xs]

    pr, qr = rational(p), rational(q)
    errs = {}
    for name, m, verify in (("topk", 3, "rheo"), ("rheo_rrsw", 1, "rrsw"), ("rheo_ot", 1, "rheo")):
        case = Case.from_json(
            {
                "draft": {"vocab_size": len(qr), "context_length": 0, "probs": {"": qr}},
                "target": {"vocab_size": len(pr), "context_length": 0, "probs": {"": pr}},
                "context": [],
                "tokens": 1,
                "scheme": {"K": 3, "m": m, "W": 1, "D": 1, "R": 3, "verify": verify},
            }
        )
        row = lambda r: torch.tensor([[float(Fraction(x)) for x in r]], dtype=torch.float64)
        fast = float(one_level_acceptance(row(pr), row(qr), row(qr), K=3, m=m, verify=verify)[0])
        errs[name] = abs(fast - float(acceptance(case)))
    return errs


def table_unit(target: Any, head: Any, prompt: Prompt, cfg: PaperConfig) -> dict[str, Any]:
    """Sample the continuation, read the rows, compute every context's numbers (one prompt)."""
    ids = render(prompt, target.tokenizer)
    g = torch.Generator().manual_seed(_seed(cfg.seed, "table", prompt.set, prompt.id))
    t0 = time.perf_counter()
    cont = generate_ar(target.model, ids, T=1.0, max_new=cfg.table_tokens, generator=g, eos=target.eos_ids).tokens
    t1 = time.perf_counter()
    full = ids + cont
    p, logits = context_rows(target, head, full, len(ids))
    t2 = time.perf_counter()
    rows = table_rows(p, logits, cfg)
    t3 = time.perf_counter()
    q = draft_probs(with_bucket(logits), S=cfg.S, T=1.0).q_rank  # [L, V']
    checks = [exact_check(p[j], q[j]) for j in range(min(cfg.exact_check, len(cont)))]
    worst = max((e for c in checks for e in c.values()), default=0.0)
    return {
        "set": prompt.set,
        "id": prompt.id,
        "prompt_tokens": len(ids),
        "contexts": len(cont),
        "context_tokens": len(full) - 1,  # tokens the teacher-forced forward ran over (its last row unused)
        "target_forwards": 1,
        "seconds": {"sample": t1 - t0, "forward": t2 - t1, "exact_rates": t3 - t2},
        "exact_check_max_abs": worst,
        "exact_checked": len(checks),
        "rows": rows,
        "top": top_tokens(p, q, rows, target.tokenizer, head),
    }


def top_tokens(p: torch.Tensor, q: torch.Tensor, rows: dict[str, list[float]], tok: Any, head: Any) -> list[dict]:
    """For each context where OT < RRSw: the rates and p, q on the few ids that carry them."""
    out = []
    ids = head.vocab_ids.tolist() + [-1]
    for j, (a, b) in enumerate(zip(rows["rheo_ot"], rows["rheo_rrsw"])):
        if a < b - 1e-12:
            pick = sorted(set(q[j].topk(4).indices.tolist()) | set(p[j].topk(3).indices.tolist()))
            out.append(
                {
                    "context": j,
                    "ot": a,
                    "rrsw": b,
                    "q_support": int((q[j] > 0).sum()),
                    "tokens": [tok.decode([ids[i]]) if ids[i] >= 0 else "<rest>" for i in pick],
                    "p": [float(p[j, i]) for i in pick],
                    "q": [float(q[j, i]) for i in pick],
                }
            )
    return out


# --- Figures 3 and 4 -----------------------------------------------------------------------


class RecordingLM(LMTreeModel):
    """LMTreeModel that keeps the target rows it returned (for the exact expectation)."""

    last_rows: torch.Tensor | None = None

    def target(self, st, tree):  # type: ignore[override]
        self.last_rows = super().target(st, tree)  # [1, 1+N, V']
        return self.last_rows


@torch.inference_mode()
def recorded_rounds(
    lm: RecordingLM, ids: list[int], scheme: Scheme, *, max_new: int, eos: set[int], coins: Callable[[int], Any]
) -> dict[str, Any]:
    """Decode ids with scheme until max_new tokens or EOS; per round: realised and expected
    length, drafting, round and expectation times. coins(i): the torch.Generator of round i (its
    coin block, then a bucket bonus if any)."""
    layout = layout_for(scheme)
    st = lm.start([ids])
    out: list[int] = []
    rec: dict[str, list[float]] = {"emitted": [], "expected": [], "draft_s": [], "round_s": [], "expected_s": []}
    i = 0
    while len(out) < max_new:
        g = coins(i)
        t0 = time.perf_counter()
        res = run_round(lm, st, scheme, round_coins(g, 1, layout), layout=layout)
        _check_round(lm, st, res, scheme, torch.ones(1, dtype=torch.bool))
        t1 = time.perf_counter()
        exp = float(expected_emitted(res.tree, DenseRows(lm.last_rows), scheme.K, scheme.m, scheme.verify)[0])
        t2 = time.perf_counter()
        v = res.verdict
        n = int(v.n_emitted[0])
        compact = v.emitted[0, :n].tolist()
        visited = lm.accepted_path(st, compact[:-1])
        emitted = lm.real_tokens(st, compact, visited, g)
        lm.commit(st, emitted, visited)
        for k, x in (("emitted", n), ("expected", exp), ("draft_s", res.seconds[0]), ("round_s", t1 - t0)):
            rec[k].append(float(x))
        rec["expected_s"].append(t2 - t1)
        i += 1
        cut = next((j + 1 for j, t in enumerate(emitted) if t in eos), None)
        out += emitted[:cut]
        if cut is not None:
            break
    return {"rounds": i, "tokens": len(out), **rec}


def ablation_unit(target: Any, head: Any, prompt: Prompt, m: int, T: float, cfg: PaperConfig) -> dict[str, Any]:
    """One prompt decoded with Scheme(K, m, W, D, R) at T. Round i's coins come from (seed,
    prompt, i), whatever m and T: common random numbers across settings."""
    lm = RecordingLM(target.model, head, T=T, S=cfg.S)

    def coins(i: int) -> torch.Generator:
        return torch.Generator().manual_seed(_seed(cfg.seed, "round", prompt.set, prompt.id, i))

    rec = recorded_rounds(
        lm,
        render(prompt, target.tokenizer),
        Scheme(cfg.K, m, cfg.W, cfg.D, cfg.R),
        max_new=cfg.abl_tokens,
        eos=target.eos_ids,
        coins=coins,
    )
    return {"set": prompt.set, "id": prompt.id, "m": m, "T": T, **rec}


# --- the run -------------------------------------------------------------------------------


def run(
    cfg: PaperConfig,
    out: Path,
    *,
    draft: str | None = None,
    progress: bool = True,
    threads: int | None = None,
) -> dict[str, Any]:
    """Every unit not already in the work folder, then the summary (paper_report.summarise)."""
    from tqdm import tqdm

    from .draft_head import draft_path, load_head
    from .paper_report import summarise
    from .target import load_target

    pool = sample_prompts(cfg.table_per_set + 4)
    n_pool = len(pool) // 2
    table_prompts = [pool[i + k * n_pool] for i in range(n_pool) for k in (0, 1)]  # sets alternating
    abl_prompts = sample_prompts(cfg.abl_per_set, offset=1)  # other prompts than the tables' where possible
    head, meta = load_head(draft)
    if cfg.ms[-1] != cfg.K:
        raise CaseError(f"the last m of {list(cfg.ms)} must be K={cfg.K} (Top-K)")
    hp = draft_path(draft)
    draft_id = hashlib.sha256(hp.read_bytes()).hexdigest()[:16]
    work = out / "paper_tables.work" / cfg.key(draft_id)
    work.mkdir(parents=True, exist_ok=True)
    units: list[tuple[str, Any]] = [("table", pr) for pr in table_prompts]
    spare = len(table_prompts) - 2 * cfg.table_per_set  # table units run only while contexts are short
    units += [("abl", (pr, m, T)) for pr in abl_prompts for m, T in settings(cfg)]  # prompt-major: a slow
    # spell of the machine hits every setting of a prompt alike
    t_start = time.perf_counter()
    tgt = None
    results: dict[str, list[dict]] = {"table": [], "abl": []}
    with tqdm(total=len(units) - spare, desc="paper-tables", unit="unit", disable=None if progress else True) as bar:
        for kind, u in units:
            n_ctx = sum(r["contexts"] for r in results["table"])
            if kind == "table" and len(results["table"]) >= 2 * cfg.table_per_set:
                if n_ctx >= cfg.min_contexts:
                    continue
                bar.total += 1
            name = (
                f"table-{u.set}-{u.id}.json" if kind == "table" else f"abl-{u[0].set}-{u[0].id}-m{u[1]}-T{u[2]}.json"
            ).replace("/", "_")
            f = work / name
            if f.is_file():
                results[kind].append(json.loads(f.read_text()))
                bar.update(1)
                continue
            if tgt is None:
                tgt = load_target(threads=threads)
            rec = table_unit(tgt, head, u, cfg) if kind == "table" else ablation_unit(tgt, head, *u, cfg)
            write_text_atomic(f, strict_json.dumps(rec))
            results[kind].append(rec)
            bar.update(1)
    res = summarise(results, cfg, head_meta=meta)
    res_meta = {"config": asdict(cfg), "draft": str(hp), "draft_sha256_16": draft_id, "work": str(work)}
    res_meta["wall_seconds_this_invocation"] = time.perf_counter() - t_start
    res["table4"]["run"] = res_meta
    return res


def quick_or_full(quick: bool, seed: int) -> PaperConfig:
    return PaperConfig.quick(seed) if quick else replace(PaperConfig(), seed=seed)
