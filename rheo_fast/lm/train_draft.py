"""`rheo train-draft`: distil the EAGLE-style draft head from the target, reproducibly from a seed.

One command: collect text from installed packages, run the target over it once in bfloat16
(features: the hidden states after layers 8 and 16 and the normed last one, EAGLE-3 style, and
the top-k of p at T = 1; cached in chunks), pick the draft vocabulary, train the head (bfloat16
autocast, soft cross-entropy against the target's top-k p) on two steps per position
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
from safetensors.torch import save_file
from torch import nn

from rheo_ref import strict_json
from rheo_ref.atomic import write_with

from .draft_head import DraftHead, HeadConfig, draft_path, read_safetensors, save_head
from .kvcache import logits_of
from .target import cache_dir, load_target
from .train_data import Features, choose_draft_vocab, documents, target_features, windows

DATA_VERSION = 3
CHUNK = 64  # windows per cached file of the target pass (enlarging the data reuses the chunks done)
FEATURE_NAMES = ("tokens", "feats", "top_ids", "top_p")


@dataclass(frozen=True)
class TrainConfig:
    seed: int = 0
    window: int = 256  # tokens per training sequence
    train_windows: int = 1024  # 262k tokens (the target pass over them is ~2/3 of the run's time)
    held_windows: int = 32
    topk: int = 32  # target probabilities kept per position
    draft_vocab: int = 4096  # covers 95.6% of the target's top-32 mass on the training text
    inter: int = 768  # MLP width of the head's decoder layer (the target's: 1536)
    epochs: int = 6  # held-out overlap 0.397 at 3 epochs, 0.433 at 6 (training ~7 min of the ~14 min run)
    batch: int = 8
    lr: float = 1.5e-3
    reg_weight: float = 0.0  # weight of the feature regression loss (EAGLE-1; EAGLE-3 drops it; 0.1 measured worse)
    step2_weight: float = 0.25
    data_dtype: str = "bfloat16"  # dtype of the one target pass over the training text (2-4x faster than fp32)
    reuse_data: bool = True  # reuse the cached target pass when the data settings match
    feature_layers: tuple[int, ...] = (8, 16)  # target layers fused with the last hidden state (EAGLE-3)
    train_rows: bool = True  # train the head rows (initialised from the target's rows)
    weight_decay: float = 0.0
    train_bf16: bool = True  # bfloat16 autocast for the head's training steps (~2.5x faster on this CPU)

    @classmethod
    def tiny(cls, seed: int = 0) -> TrainConfig:
        return cls(
            seed=seed,
            window=64,
            train_windows=8,
            held_windows=2,
            topk=8,
            draft_vocab=512,
            inter=64,
            epochs=1,
            batch=4,
            feature_layers=(4,),
        )


def _trunc(logits: torch.Tensor, s: int) -> torch.Tensor:
    """trunc_S: keep the S largest logits, -inf elsewhere. logits: [..., V]."""
    if s >= logits.shape[-1]:
        return logits
    kth = logits.topk(s, -1).values[..., -1:]  # [..., 1]
    return logits.masked_fill(logits < kth, float("-inf"))


@torch.no_grad()
def measure_overlap(head: DraftHead, model: Any, f: Features, *, s: int = 128) -> dict[str, float]:
    """Mean Σ_v min(p, q) at T = 1 (q after trunc_S) at depth 1 (target features) and depth 2 (own
    predictions), and the greedy agreement argmax p == argmax q at depth 1. q is 0 outside the
    draft vocabulary, so the sum runs over the draft ids only (p is still normalised over V)."""
    emb = model.model.embed_tokens
    n, L = f.tokens.shape
    h = head.cfg.hidden
    ids = head.vocab_ids
    pos = torch.arange(1, L).expand(n, -1)
    ov: dict[str, list[torch.Tensor]] = {}
    for i in range(n):
        fi = f.feats[i : i + 1].float()  # [1, L, h']
        hid1, _ = head(head.fuse(fi[:, :-1]), emb(f.tokens[i : i + 1, 1:]), pos[:1])  # [1, L-1, h]
        hid2, _ = head(hid1[:, :-1], emb(f.tokens[i : i + 1, 2:]), pos[:1, 1:])  # [1, L-2, h]
        p = torch.softmax(logits_of(model, fi[0, 1:, -h:]).float(), -1)  # [L-1, V] p at positions 1..L-1
        pmax = p.argmax(-1)  # [L-1]
        pd = p[:, ids]  # [L-1, Vd]
        for name, hid, off in (("depth1", hid1[0], 0), ("depth2", hid2[0], 1)):
            ql = head.draft_logits(hid)  # [L', Vd]
            q = torch.softmax(_trunc(ql, s), -1)
            ov.setdefault(f"overlap_{name}", []).append(torch.minimum(pd[off:], q).sum(-1))
            ov.setdefault(f"greedy_agree_{name}", []).append((pmax[off:] == ids[ql.argmax(-1)]).float())
    return {k: float(torch.cat(v).mean()) for k, v in ov.items()}


def _soft_ce(logits: torch.Tensor, ids: torch.Tensor, probs: torch.Tensor) -> torch.Tensor:
    """-Σ p log q over the kept target ids (ids already mapped to the draft vocab, -1 = absent)."""
    logq = torch.log_softmax(logits.float(), -1)  # [B, N, Vd]
    w = probs * (ids >= 0)  # [B, N, k]
    return -(w * logq.gather(-1, ids.clamp(min=0))).sum(-1).mean()


def _distillation_data(cfg: TrainConfig, model: Any, tok: Any, progress: bool) -> tuple[Features, Features, bool]:
    """Target features on the training and held-out windows; cached (safetensors, one file per
    CHUNK windows) under the cache folder, keyed by the windows' tokens and everything else that
    determines the features, so a rerun (or a run with more windows) skips the chunks done."""
    from tqdm import tqdm

    train_docs, held_docs = documents(cfg.seed)
    xs = {
        "train": windows(train_docs, tok, cfg.window, cfg.train_windows, max_per_doc=6),
        "held": windows(held_docs, tok, cfg.window, cfg.held_windows, max_per_doc=1),
    }
    todo = []  # (part, chunk tokens, path)
    for part, x in xs.items():
        dtype = cfg.data_dtype if part == "train" else "float32"  # held-out always uses the real fp32 target
        for c in range(0, x.shape[0], CHUNK):
            xc = x[c : c + CHUNK].contiguous()
            key = {
                "tokens": hashlib.sha256(xc.numpy().tobytes()).hexdigest(),
                "shape": list(xc.shape),
                "topk": cfg.topk,
                "layers": list(cfg.feature_layers),
                "dtype": dtype,
                "version": DATA_VERSION,
            }
            path = (
                cache_dir()
                / f"draft_data_{hashlib.sha256(json.dumps(key, sort_keys=True, allow_nan=False).encode()).hexdigest()[:16]}.safetensors"
            )
            todo.append((part, xc, dtype, path))
    data_model = None
    got: dict[str, list[Features]] = {"train": [], "held": []}
    cached = True
    with tqdm(
        total=sum(xc.numel() for _, xc, _, p in todo if not (cfg.reuse_data and p.is_file())),
        desc="target features",
        unit="tok",
        disable=None if progress else True,
    ) as bar:
        for part, xc, dtype, path in todo:
            if cfg.reuse_data and path.is_file():
                t = read_safetensors(path, "cached target features", FEATURE_NAMES)
                got[part].append(Features(*(t[n] for n in FEATURE_NAMES)))
                continue
            cached = False
            m = model
            if dtype != "float32":
                data_model = data_model or copy.deepcopy(model).to(getattr(torch, dtype))
                m = data_model
            f = target_features(
                m,
                xc,
                topk=cfg.topk,
                layers=cfg.feature_layers,
                store=torch.bfloat16 if part == "train" else torch.float32,
                progress=bar,
            )
            if cfg.reuse_data:
                path.parent.mkdir(parents=True, exist_ok=True)
                tensors = {n: getattr(f, n).contiguous() for n in FEATURE_NAMES}
                write_with(path, lambda tmp: save_file(tensors, tmp))  # noqa: B023 (called at once) -- a killed run leaves no half chunk
            got[part].append(f)
    tr, ho = (
        Features(*(torch.cat([getattr(f, n) for f in got[part]]) for n in FEATURE_NAMES)) for part in ("train", "held")
    )
    return tr, ho, cached


def train(cfg: TrainConfig, *, out: Path | None = None, progress: bool = True, log=print) -> dict[str, Any]:
    from tqdm import tqdm

    t_start = time.perf_counter()
    torch.manual_seed(cfg.seed)
    tgt = load_target()
    model, tok = tgt.model, tgt.tokenizer
    ftr, fho, cached = _distillation_data(cfg, model, tok, progress)
    t_data = time.perf_counter() - t_start
    must = [
        i
        for i in (tok.eos_token_id, tok.convert_tokens_to_ids("<|im_start|>"), tok.convert_tokens_to_ids("<|im_end|>"))
        if isinstance(i, int)
    ]
    vocab_ids, cover = choose_draft_vocab(ftr, cfg.draft_vocab, model.config.vocab_size, iter(must))
    hc = HeadConfig(
        hidden=model.config.hidden_size,
        heads=model.config.num_attention_heads,
        kv_heads=model.config.num_key_value_heads,
        head_dim=model.config.head_dim,
        inter=cfg.inter,
        vocab=model.config.vocab_size,
        draft_vocab=cfg.draft_vocab,
        rope_theta=float(model.config.rope_parameters["rope_theta"]),
        eps=float(model.config.rms_norm_eps),
        feature_layers=tuple(cfg.feature_layers),
    )
    head = DraftHead(hc)
    head.init_from_target(model, vocab_ids, train_rows=cfg.train_rows)
    to_draft = torch.full((hc.vocab,), -1, dtype=torch.long)
    to_draft[vocab_ids] = torch.arange(cfg.draft_vocab)
    d_ids = to_draft[ftr.top_ids.long()]  # [n, L, k] draft-vocab index or -1
    emb = model.model.embed_tokens
    xw = ftr.tokens
    n, L = xw.shape
    steps = cfg.epochs * math.ceil(n / cfg.batch)
    opt = torch.optim.AdamW(
        [q for q in head.parameters() if q.requires_grad], lr=cfg.lr, betas=(0.9, 0.95), weight_decay=cfg.weight_decay
    )
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: min(1.0, (s + 1) / 10) * 0.5 * (1 + math.cos(math.pi * s / steps))
    )
    gen = torch.Generator().manual_seed(cfg.seed)
    pos = torch.arange(1, L)
    h = hc.hidden
    step = 0
    curve: list[float] = []
    with tqdm(total=steps, desc="train draft head", disable=None if progress else True) as bar:
        for _ in range(cfg.epochs):
            for idx in torch.randperm(n, generator=gen).split(cfg.batch):
                x, fa = xw[idx], ftr.feats[idx].float()  # [b, L], [b, L, h']
                fe = fa[..., -h:]  # [b, L, h] normed last hidden state f
                with torch.no_grad():
                    e = emb(x[:, 1:])  # [b, L-1, h]
                p_ = pos.expand(len(idx), -1)
                with torch.autocast("cpu", dtype=torch.bfloat16, enabled=cfg.train_bf16):
                    hid1, _ = head(head.fuse(fa[:, :-1]), e, p_)  # [b, L-1, h] predicts f_1..f_{L-1}
                    loss1 = _soft_ce(
                        head.draft_logits(hid1), d_ids[idx, 1:], ftr.top_p[idx, 1:]
                    ) + cfg.reg_weight * nn.functional.smooth_l1_loss(hid1.float(), fe[:, 1:])
                    loss = loss1
                    if cfg.step2_weight > 0:
                        hid2, _ = head(hid1[:, :-1].detach(), e[:, 1:], p_[:, 1:])  # [b, L-2, h] predicts f_2..
                        loss2 = _soft_ce(
                            head.draft_logits(hid2), d_ids[idx, 2:], ftr.top_p[idx, 2:]
                        ) + cfg.reg_weight * nn.functional.smooth_l1_loss(hid2.float(), fe[:, 2:])
                        loss = loss + cfg.step2_weight * loss2
                opt.zero_grad(set_to_none=True)
                loss.backward()
                nn.utils.clip_grad_norm_([q for q in head.parameters() if q.requires_grad], 1.0)
                opt.step()
                sched.step()
                step += 1
                bar.update(1)
                bar.set_postfix(loss=f"{loss.item():.3f}")
                if step % 10 == 0 or step == steps:
                    curve.append(round(loss.item(), 4))
    t_train = time.perf_counter() - t_start - t_data
    head.eval()
    ov = measure_overlap(head, model, fho)
    k = min(16, n)  # the same measure on as many training windows (overfitting check)
    sub = Features(ftr.tokens[:k], ftr.feats[:k], ftr.top_ids[:k], ftr.top_p[:k])
    ov.update({f"train_windows_{a}": b for a, b in measure_overlap(head, model, sub).items() if "overlap" in a})
    t_eval = time.perf_counter() - t_start - t_data - t_train
    result = {
        "config": asdict(cfg),
        "train_tokens": int(xw.numel()),
        "held_tokens": int(fho.tokens.numel()),
        "data_from_cache": cached,
        "loss_curve": curve,
        "draft_vocab_mass_cover": cover,
        "data_seconds": round(t_data, 1),
        "train_seconds": round(t_train, 1),
        "eval_seconds": round(t_eval, 1),
        "total_seconds": round(time.perf_counter() - t_start, 1),
        "steps": step,
        **ov,
    }
    path = draft_path(out)
    save_head(head, path, result)
    result["path"] = str(path)
    log(strict_json.dumps(result, indent=1))
    return result


HIDDEN = 576  # the target's hidden size (SmolLM2-135M)


def data_bytes(cfg: TrainConfig) -> int:
    """Bytes of the target features held in memory for training (tokens int64, features bfloat16,
    top-k ids int32 and probabilities float32 per position), twice: the chunks and their concatenation."""
    per_pos = 8 + HIDDEN * (len(cfg.feature_layers) + 1) * 2 + cfg.topk * 8
    return 2 * (cfg.train_windows + cfg.held_windows) * cfg.window * per_pos


def cmd_train_draft(args: Any) -> int:
    from rheo_ref.sizes import available_memory, gib
    from rheo_ref.validate import within_limit

    cfg = TrainConfig.tiny(args.seed) if args.tiny else TrainConfig(seed=args.seed)
    if args.epochs is not None:
        cfg = TrainConfig(**{**asdict(cfg), "epochs": args.epochs})
    if args.windows is not None:
        cfg = TrainConfig(**{**asdict(cfg), "train_windows": args.windows})
    mem = available_memory()
    if mem is not None and not getattr(args, "force", False):
        within_limit(
            f"--windows {cfg.train_windows:,} of {cfg.window} tokens: bytes of the target features in memory",
            data_bytes(cfg),
            mem,
            override=f"{gib(mem)} of memory is available; use fewer --windows, or --force to run anyway",
        )
    torch.set_num_threads(args.threads) if args.threads else None
    train(cfg, out=Path(args.out) if args.out else None, progress=not args.quiet)
    return 0
