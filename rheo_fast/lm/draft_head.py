"""The draft q: an EAGLE-style head (EAGLE-1 section 4, EAGLE-3's reduced draft vocabulary).

One Llama decoder layer reads, at position i, the target's features at position i-1 and the
embedding of token x_i (the target's own, frozen), fused by a linear layer, attends
causally to the positions before it, and predicts f_i. The draft logits come from a head over a
reduced draft vocabulary of Vd ids (the ids with the most target mass in the training data),
whose rows start as the target's own (tied) head rows (`rheo train-draft` then trains them), so at
initialisation a perfect feature prediction f̂ = f gives q = p restricted to the draft vocabulary.
The other ids get logit -inf. Inside a draft tree, deeper nodes read the head's own predicted
f instead of the target's.

Features (EAGLE-3): the target's hidden states after a few decoder layers (`feature_layers`, each
RMS-normalised) and its normed last hidden state f, concatenated ([..., h * (n + 1)], f last) and
mapped to h dims by `fuse` (initialised to pass f through), so the fused input lives in the same
space as the head's own predictions that deeper tree nodes read.

Weights live in one safetensors file (`draft_head.safetensors` in the cache folder) with the
vocabulary map and the configuration in its metadata. No pickle anywhere.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import torch
from torch import nn

from rheo_ref import strict_json
from rheo_ref.atomic import write_with
from rheo_ref.errors import CorruptFileError, MissingDependencyError

from .target import cache_dir

DRAFT_FILE = "draft_head.safetensors"


@dataclass(frozen=True)
class HeadConfig:
    hidden: int = 576
    heads: int = 9
    kv_heads: int = 3
    head_dim: int = 64
    inter: int = 1536
    vocab: int = 49152  # target vocabulary V
    draft_vocab: int = 8192  # Vd
    rope_theta: float = 100000.0
    eps: float = 1e-5
    feature_layers: tuple[int, ...] = ()  # target hidden_states indices fused with f (EAGLE-3)


class RMSNorm(nn.Module):
    def __init__(self, n: int, eps: float):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.weight * (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + self.eps))


def rope(x: torch.Tensor, pos: torch.Tensor, theta: float) -> torch.Tensor:
    """Rotary embedding, HF Llama layout (rotate_half). x: [B, H, N, d]; pos: [B, N]."""
    d = x.shape[-1]
    inv = 1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float32) / d)  # [d/2]
    ang = pos[..., None].float() * inv  # [B, N, d/2]
    cos = torch.cat([ang.cos(), ang.cos()], -1)[:, None]  # [B, 1, N, d]
    sin = torch.cat([ang.sin(), ang.sin()], -1)[:, None]
    x1, x2 = x[..., : d // 2], x[..., d // 2 :]
    return x * cos + torch.cat([-x2, x1], -1) * sin


class DraftHead(nn.Module):
    def __init__(self, cfg: HeadConfig):
        super().__init__()
        self.cfg = cfg
        h, a, kvh, hd = cfg.hidden, cfg.heads, cfg.kv_heads, cfg.head_dim
        self.fc = nn.Linear(2 * h, h, bias=False)
        nl = len(cfg.feature_layers)
        self.fuse_fc = nn.Linear(h * (nl + 1), h, bias=False) if nl else None
        self.input_norm = RMSNorm(h, cfg.eps)
        self.q = nn.Linear(h, a * hd, bias=False)
        self.k = nn.Linear(h, kvh * hd, bias=False)
        self.v = nn.Linear(h, kvh * hd, bias=False)
        self.o = nn.Linear(a * hd, h, bias=False)
        self.post_norm = RMSNorm(h, cfg.eps)
        self.gate = nn.Linear(h, cfg.inter, bias=False)
        self.up = nn.Linear(h, cfg.inter, bias=False)
        self.down = nn.Linear(cfg.inter, h, bias=False)
        self.head = nn.Linear(h, cfg.draft_vocab, bias=False)
        self.head.weight.requires_grad_(False)
        self.register_buffer("vocab_ids", torch.arange(cfg.draft_vocab), persistent=True)  # [Vd] target ids

    def fuse(self, feats: torch.Tensor) -> torch.Tensor:
        """Target features [..., h * (n + 1)] (layer states, then f) -> head input [..., h]."""
        if self.fuse_fc is None:
            return feats
        h = self.cfg.hidden
        low = feats[..., :-h].unflatten(-1, (-1, h))  # [..., n, h] raw residual streams
        low = low * torch.rsqrt(low.pow(2).mean(-1, keepdim=True) + self.cfg.eps)
        return self.fuse_fc(torch.cat([low.flatten(-2), feats[..., -h:]], -1))

    def forward(
        self,
        feat: torch.Tensor,
        emb: torch.Tensor,
        pos: torch.Tensor,
        *,
        past: tuple[torch.Tensor, torch.Tensor] | None = None,
        mask: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, tuple[torch.Tensor, torch.Tensor]]:
        """feat, emb: [B, N, h]; pos: [B, N]; past: keys/values [B, Hkv, P, d]; mask: additive
        [B or 1, 1, N, P+N] (None: causal). Returns predicted features [B, N, h] and this call's
        keys/values [B, Hkv, N, d] (the caller owns the cache). feat is already fused (`fuse`) or
        the head's own prediction."""
        c = self.cfg
        B, N, _ = feat.shape
        x = self.fc(torch.cat([feat, emb], -1))  # [B, N, h]
        y = self.input_norm(x)
        q = rope(self.q(y).view(B, N, c.heads, c.head_dim).transpose(1, 2), pos, c.rope_theta)  # [B, H, N, d]
        k = rope(self.k(y).view(B, N, c.kv_heads, c.head_dim).transpose(1, 2), pos, c.rope_theta)  # [B, Hkv, N, d]
        v = self.v(y).view(B, N, c.kv_heads, c.head_dim).transpose(1, 2)
        kk, vv = (k, v) if past is None else (torch.cat([past[0], k], 2), torch.cat([past[1], v], 2))
        rep = c.heads // c.kv_heads
        kk_, vv_ = kk.repeat_interleave(rep, 1), vv.repeat_interleave(rep, 1)  # [B, H, P+N, d]
        if mask is None:
            att = nn.functional.scaled_dot_product_attention(q, kk_, vv_, is_causal=past is None)
        else:
            att = nn.functional.scaled_dot_product_attention(q, kk_, vv_, attn_mask=mask)
        x = x + self.o(att.transpose(1, 2).reshape(B, N, -1))  # [B, N, h]
        y = self.post_norm(x)
        x = x + self.down(nn.functional.silu(self.gate(y)) * self.up(y))
        return x, (k, v)

    def draft_logits(self, hid: torch.Tensor) -> torch.Tensor:
        """Logits over the draft vocabulary [..., Vd] from predicted features [..., h]."""
        return self.head(hid)

    def full_logits(self, hid: torch.Tensor) -> torch.Tensor:
        """Logits over the whole target vocabulary [..., V]; ids outside the draft vocab get -inf."""
        small = self.draft_logits(hid)  # [..., Vd]
        full = small.new_full(small.shape[:-1] + (self.cfg.vocab,), float("-inf"))  # [..., V]
        full[..., self.vocab_ids] = small
        return full

    def init_from_target(self, model: Any, vocab_ids: torch.Tensor, *, train_rows: bool = False) -> None:
        """Start from the target: q/k/v and the first `inter` MLP neurons of its last decoder layer,
        the head rows of the draft vocabulary; the residual branches (o, down) start at zero and
        fc passes the feature through, so the untrained head predicts f_i = f_{i-1}."""
        layer = model.model.layers[-1]
        n = self.cfg.inter
        with torch.no_grad():
            self.q.weight.copy_(layer.self_attn.q_proj.weight)
            self.k.weight.copy_(layer.self_attn.k_proj.weight)
            self.v.weight.copy_(layer.self_attn.v_proj.weight)
            self.o.weight.zero_()
            self.gate.weight.copy_(layer.mlp.gate_proj.weight[:n])
            self.up.weight.copy_(layer.mlp.up_proj.weight[:n])
            self.down.weight.zero_()
            self.input_norm.weight.copy_(layer.input_layernorm.weight)
            self.post_norm.weight.copy_(layer.post_attention_layernorm.weight)
            self.head.weight.copy_(model.lm_head.weight[vocab_ids])
            self.vocab_ids.copy_(vocab_ids)
            h = self.cfg.hidden
            self.fc.weight.zero_()
            self.fc.weight[:, :h].copy_(torch.eye(h))
            self.fc.weight[:, h:].normal_(0.0, 0.02)
            if self.fuse_fc is not None:
                self.fuse_fc.weight.zero_()
                self.fuse_fc.weight[:, -h:].copy_(torch.eye(h))
                self.fuse_fc.weight[:, :-h].normal_(0.0, 0.01)
        self.head.weight.requires_grad_(train_rows)


def draft_path(path: str | Path | None = None) -> Path:
    return Path(path) if path else cache_dir() / DRAFT_FILE


def save_head(head: DraftHead, path: Path, meta: dict[str, Any]) -> None:
    from safetensors.torch import save_file

    path.parent.mkdir(parents=True, exist_ok=True)
    tensors = {k: v.detach().contiguous() for k, v in head.state_dict().items()}
    md = {"config": strict_json.dumps(asdict(head.cfg)), "meta": strict_json.dumps(meta)}
    write_with(path, lambda tmp: save_file(tensors, tmp, metadata=md))  # a killed run leaves the old file or none


def load_head(path: str | Path | None = None) -> tuple[DraftHead, dict[str, Any]]:
    """Load trained weights (safetensors only). Raises MissingDependencyError with the command to
    run when no trained head exists."""
    p = draft_path(path)
    if not p.is_file():
        raise MissingDependencyError(
            f"no trained draft head at {p}; train one with `rheo train-draft` (about 14 min on 2 quiet cores)"
        )
    fix = "train a new one with `rheo train-draft` (or delete the file)"
    try:
        from safetensors import safe_open

        with safe_open(str(p), "pt") as f:
            md = f.metadata() or {}
        cfg = json.loads(md["config"])
        cfg["feature_layers"] = tuple(cfg.get("feature_layers", ()))
        head = DraftHead(HeadConfig(**cfg))
        meta = json.loads(md.get("meta", "{}"))
    except Exception as e:
        raise CorruptFileError(f"draft head {p} is not a readable draft head ({_why(e)}); {fix}") from None
    state = read_safetensors(p, "draft head", ())
    try:
        head.load_state_dict(state)
    except RuntimeError as e:
        raise CorruptFileError(f"draft head {p} does not match its own configuration ({_why(e)}); {fix}") from None
    head.eval().requires_grad_(False)
    return head, meta


def _why(e: BaseException) -> str:
    """An exception as a short phrase on one line (for CorruptFileError messages)."""
    text = " ".join(str(e).split())
    return f"{type(e).__name__}: {text[:160]}{'...' if len(text) > 160 else ''}" if text else type(e).__name__


def read_safetensors(path: Path, what: str, names: tuple[str, ...]) -> dict[str, torch.Tensor]:
    """All tensors of a safetensors file rheo wrote (and must contain `names`), or CorruptFileError."""
    from safetensors.torch import load_file

    try:
        t = load_file(str(path))
    except Exception as e:
        raise CorruptFileError(
            f"{what} {path} is not a readable safetensors file ({_why(e)}); delete it (rheo rebuilds it)"
        ) from None
    missing = [n for n in names if n not in t]
    if missing:
        raise CorruptFileError(f"{what} {path} lacks the tensors {missing}; delete it (rheo rebuilds it)")
    return t
