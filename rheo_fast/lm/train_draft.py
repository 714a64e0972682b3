"""`rheo train-draft`: distil the EAGLE-style draft head from the target, reproducibly from a seed.

One command: collect text from installed packages, run the target over it once (features and
top-k of p at T = 1), pick the draft vocabulary, train the head on two steps per position
(step 1 reads the target's features; step 2 reads the head's own step-1 predictions, as deeper
tree nodes do; EAGLE-3's "training-time test" in its simplest form), measure the overlap
Σ_v min(p, q) at T = 1 on held-out text, and save safetensors under the cache folder.
"""
from __future__ import annotations

import copy
import hashlib
import json
import math
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from safetensors.torch import load_file, save_file
from torch import nn

from .draft_head import DraftHead, HeadConfig, draft_path, save_head
from .kvcache import logits_of
from .target import cache_dir, load_target
from .train_data import Features, choose_draft_vocab, documents, target_features, windows

DATA_VERSION = 2
FEATURE_NAMES = ("tokens", "feats", "top_ids", "top_p")


@dataclass(frozen=True)
class TrainConfig:
    seed: int = 0
    window: int = 256  # tokens per training sequence
    train_windows: int = 640  # 164k tokens
    held_windows: int = 16
    topk: int = 32  # target probabilities kept per position
    draft_vocab: int = 4096  # covers 93% of the target's top-32 mass on held-out text (8192: 96%)
    inter: int = 768  # MLP width of the head's decoder layer (the target's: 1536)
    epochs: int = 4
    batch: int = 8
    lr: float = 1.5e-3
    reg_weight: float = 0.1  # weight of the feature regression loss (EAGLE-1; EAGLE-3 drops it)
    step2_weight: float = 0.25
    data_dtype: str = "bfloat16"
    reuse_data: bool = True  # reuse the cached target pass when the data settings match  # dtype of the one target pass over the training text (2-4x faster than fp32)

    @classmethod
    def tiny(cls, seed: int = 0) -> "TrainConfig":
        return cls(seed=seed, window=64, train_windows=8, held_windows=2, topk=8, draft_vocab=512, inter=64, epochs=1, batch=4)


def _trunc(logits: torch.Tensor, s: int) -> torch.Tensor:
    """trunc_S: keep the S largest logits, -inf elsewhere. logits: [..., V]."""
    if s >= logits.shape[-1]:
        return logits
    kth = logits.topk(s, -1).values[..., -1:]  # [..., 1]
    return logits.masked_fill(logits < kth, float("-inf"))


@torch.no_grad()
def measure_overlap(head: DraftHead, model: Any, f: Features, *, s: int = 128) -> dict[str, float]:
    """Mean Σ_v min(p, q) at T = 1 (q after trunc_S) at depth 1 (target features) and depth 2 (own
    predictions), and the greedy agreement argmax p == argmax q at depth 1."""
    emb = model.model.embed_tokens
    n, L = f.tokens.shape
    pos = torch.arange(1, L).expand(n, -1)
    hid1, _ = head(f.feats[:, :-1], emb(f.tokens[:, 1:]), pos)  # [n, L-1, h]
    hid2, _ = head(hid1[:, :-1], emb(f.tokens[:, 2:]), pos[:, 1:])  # [n, L-2, h]
    out = {}
    for name, hid, tgt in (("depth1", hid1, f.feats[:, 1:]), ("depth2", hid2, f.feats[:, 2:])):
        ov, agree = [], []
        for i in range(n):
            p = torch.softmax(logits_of(model, tgt[i]).float(), -1)  # [L', V]
            ql = head.full_logits(hid[i])  # [L', V]
            q = torch.softmax(_trunc(ql, s), -1)
            ov.append(torch.minimum(p, q).sum(-1))
            agree.append((p.argmax(-1) == ql.argmax(-1)).float())
        out[f"overlap_{name}"] = float(torch.cat(ov).mean())
        out[f"greedy_agree_{name}"] = float(torch.cat(agree).mean())
    return out


def _soft_ce(logits: torch.Tensor, ids: torch.Tensor, probs: torch.Tensor) -> torch.Tensor:
    """-Σ p log q over the kept target ids (ids already mapped to the draft vocab, -1 = absent)."""
    logq = torch.log_softmax(logits, -1)  # [B, N, Vd]
    w = probs * (ids >= 0)  # [B, N, k]
    return -(w * logq.gather(-1, ids.clamp(min=0))).sum(-1).mean()


def _distillation_data(cfg: TrainConfig, model: Any, tok: Any, progress: bool) -> tuple[Features, Features, bool]:
    """Target features on the training and held-out windows; cached (safetensors) under the cache
    folder, keyed by everything that determines them, so a rerun with the same data settings
    skips the target pass."""
    from tqdm import tqdm
    train_docs, held_docs = documents(cfg.seed)
    data_model = None
    parts = []
    for part, n_win, per_doc in (("train", cfg.train_windows, 6), ("held", cfg.held_windows, 1)):
        key = {k: getattr(cfg, k) for k in ("seed", "window", "topk")}
        key.update(part=part, windows=n_win, dtype=cfg.data_dtype if part == "train" else "float32", version=DATA_VERSION)
        path = cache_dir() / f"draft_data_{hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:12]}.safetensors"
        if cfg.reuse_data and path.is_file():
            t = load_file(str(path))
            parts.append((Features(*(t[n] for n in FEATURE_NAMES)), True))
            continue
        x = windows(train_docs if part == "train" else held_docs, tok, cfg.window, n_win, max_per_doc=per_doc)
        m = model
        if part == "train" and cfg.data_dtype != "float32":  # held-out always uses the real fp32 target
            data_model = data_model or copy.deepcopy(model).to(getattr(torch, cfg.data_dtype))
            m = data_model
        with tqdm(total=x.numel(), desc=f"target features ({part})", unit="tok", disable=not progress) as bar:
            f = target_features(m, x, topk=cfg.topk, progress=bar)
        if cfg.reuse_data:
            path.parent.mkdir(parents=True, exist_ok=True)
            save_file({n: getattr(f, n).contiguous() for n in FEATURE_NAMES}, str(path))
        parts.append((f, False))
    return parts[0][0], parts[1][0], parts[0][1] and parts[1][1]


def train(cfg: TrainConfig, *, out: Path | None = None, progress: bool = True, log=print) -> dict[str, Any]:
    from tqdm import tqdm
    t_start = time.perf_counter()
    torch.manual_seed(cfg.seed)
    tgt = load_target()
    model, tok = tgt.model, tgt.tokenizer
    ftr, fho, cached = _distillation_data(cfg, model, tok, progress)
    t_data = time.perf_counter() - t_start
    must = [i for i in (tok.eos_token_id, tok.convert_tokens_to_ids("<|im_start|>"), tok.convert_tokens_to_ids("<|im_end|>")) if isinstance(i, int)]
    vocab_ids, cover = choose_draft_vocab(ftr, cfg.draft_vocab, model.config.vocab_size, iter(must))
    hc = HeadConfig(hidden=model.config.hidden_size, heads=model.config.num_attention_heads,
                    kv_heads=model.config.num_key_value_heads, head_dim=model.config.head_dim,
                    inter=cfg.inter, vocab=model.config.vocab_size,
                    draft_vocab=cfg.draft_vocab, rope_theta=float(model.config.rope_parameters["rope_theta"]),
                    eps=float(model.config.rms_norm_eps))
    head = DraftHead(hc)
    head.init_from_target(model, vocab_ids)
    to_draft = torch.full((hc.vocab,), -1, dtype=torch.long)
    to_draft[vocab_ids] = torch.arange(cfg.draft_vocab)
    d_ids = to_draft[ftr.top_ids.long()]  # [n, L, k] draft-vocab index or -1
    emb = model.model.embed_tokens
    xw = ftr.tokens
    n, L = xw.shape
    steps = cfg.epochs * math.ceil(n / cfg.batch)
    opt = torch.optim.AdamW([q for q in head.parameters() if q.requires_grad], lr=cfg.lr, betas=(0.9, 0.95), weight_decay=0.0)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 10) * 0.5 * (1 + math.cos(math.pi * s / steps)))
    gen = torch.Generator().manual_seed(cfg.seed)
    pos = torch.arange(1, L)
    step = 0
    curve: list[float] = []
    with tqdm(total=steps, desc="train draft head", disable=not progress) as bar:
        for _ in range(cfg.epochs):
            for idx in torch.randperm(n, generator=gen).split(cfg.batch):
                x, fe = xw[idx], ftr.feats[idx]  # [b, L], [b, L, h]
                with torch.no_grad():
                    e = emb(x[:, 1:])  # [b, L-1, h]
                p_ = pos.expand(len(idx), -1)
                hid1, _ = head(fe[:, :-1], e, p_)  # [b, L-1, h] predicts f_1..f_{L-1}
                loss1 = _soft_ce(head.draft_logits(hid1), d_ids[idx, 1:], ftr.top_p[idx, 1:]) \
                    + cfg.reg_weight * nn.functional.smooth_l1_loss(hid1, fe[:, 1:])
                loss = loss1
                if cfg.step2_weight > 0:
                    hid2, _ = head(hid1[:, :-1].detach(), e[:, 1:], p_[:, 1:])  # [b, L-2, h] predicts f_2..
                    loss2 = _soft_ce(head.draft_logits(hid2), d_ids[idx, 2:], ftr.top_p[idx, 2:]) \
                        + cfg.reg_weight * nn.functional.smooth_l1_loss(hid2, fe[:, 2:])
                    loss = loss + cfg.step2_weight * loss2
                opt.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_([q for q in head.parameters() if q.requires_grad], 1.0)
                opt.step(); sched.step(); step += 1
                bar.update(1); bar.set_postfix(loss=f"{loss.item():.3f}")
                if step % 10 == 0 or step == steps:
                    curve.append(round(loss.item(), 4))
    t_train = time.perf_counter() - t_start - t_data
    head.eval()
    ov = measure_overlap(head, model, fho)
    result = {"config": asdict(cfg), "train_tokens": int(xw.numel()), "held_tokens": int(fho.tokens.numel()),
              "data_from_cache": cached, "loss_curve": curve,
              "draft_vocab_mass_cover": cover, "data_seconds": round(t_data, 1), "train_seconds": round(t_train, 1),
              "total_seconds": round(time.perf_counter() - t_start, 1), "steps": step, **ov}
    path = draft_path(out)
    save_head(head, path, result)
    result["path"] = str(path)
    log(json.dumps(result, indent=1))
    return result


def cmd_train_draft(args: Any) -> int:
    cfg = TrainConfig.tiny(args.seed) if args.tiny else TrainConfig(seed=args.seed)
    if args.epochs:
        cfg = TrainConfig(**{**asdict(cfg), "epochs": args.epochs})
    if args.windows:
        cfg = TrainConfig(**{**asdict(cfg), "train_windows": args.windows})
    torch.set_num_threads(args.threads) if args.threads else None
    train(cfg, out=Path(args.out) if args.out else None, progress=not args.quiet)
    return 0
