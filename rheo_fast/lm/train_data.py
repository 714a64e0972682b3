"""Training text for the draft head, all of it shipped inside installed packages, and the target's
features on it (the distillation data).

Sources (deterministic order, shuffled by the seed): Python standard-library source, the 123
HumanEval solutions outside the evaluation pool, and English prose (the pydoc topic pages of the
standard library and package descriptions from `*.dist-info/METADATA`), half of the prose wrapped in
the chat template so the head sees the instruct model's chat format. MT-bench and the HumanEval
evaluation pool are never read here. Held-out windows come from files disjoint from training.
"""
from __future__ import annotations

import ast
import random
import sysconfig
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import torch

from .prompts import humaneval_training_text
from .kvcache import logits_of

SYSTEM = "You are a helpful AI assistant named SmolLM, trained by Hugging Face"


def _stdlib_files() -> list[Path]:
    root = Path(sysconfig.get_paths()["stdlib"])
    out = []
    for p in sorted(root.rglob("*.py")):
        rel = p.relative_to(root).parts
        if rel[0] in ("site-packages", "test", "idlelib", "lib2to3", "pydoc_data", "encodings") or "tests" in rel:
            continue
        out.append(p)
    return out


def _prose_docs() -> list[str]:
    docs: list[str] = []
    topics = Path(sysconfig.get_paths()["stdlib"]) / "pydoc_data" / "topics.py"
    if topics.is_file():
        tree = ast.parse(topics.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict):
                docs += [ast.literal_eval(v) for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)]
                break
    site = Path(sysconfig.get_paths()["purelib"])
    for meta in sorted(site.glob("*.dist-info/METADATA")):
        if "mtbench" in meta.parent.name.lower():
            continue
        text = meta.read_text(encoding="utf-8", errors="replace")
        _, _, body = text.partition("\n\n")
        if len(body) > 2000:
            docs.append(body)
    return docs


def _chat(user: str, answer: str) -> str:
    return (f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
            f"<|im_start|>assistant\n{answer}<|im_end|>\n")


def documents(seed: int) -> tuple[list[str], list[str]]:
    """(training documents, held-out documents), deterministic for a seed."""
    rng = random.Random(seed)
    code = _stdlib_files()
    rng.shuffle(code)
    prose = _prose_docs()
    rng.shuffle(prose)
    held_code, code = code[:6], code[6:]
    held_prose, prose = prose[:12], prose[12:]

    def prose_doc(d: str, i: int) -> str:
        if i % 2:
            return d
        first, _, rest = d.strip().partition("\n")
        return _chat(f"Explain the following topic: {first.strip()[:200]}", rest.strip()[:4000])

    def code_doc(p: Path) -> str:
        return p.read_text(encoding="utf-8", errors="replace")

    train_he = humaneval_training_text()
    # interleave so that any prefix of the window list is a mix of the three kinds
    train: list[str] = []
    streams = [iter(train_he), (code_doc(p) for p in code), (prose_doc(d, i) for i, d in enumerate(prose))]
    while streams:
        for s in list(streams):
            try:
                train.append(next(s))
            except StopIteration:
                streams.remove(s)
    # held-out prose stays raw: the chat template's fixed system prompt would flatter the overlap
    held = [code_doc(p) for p in held_code] + [d.strip() for d in held_prose]
    return train, held


def windows(docs: list[str], tokenizer: Any, length: int, limit: int, *, max_per_doc: int = 6) -> torch.Tensor:
    """Pack documents (each cut to `max_per_doc` windows' worth, EOS between them) into a stream
    and cut it into token windows [n, length]; at most `limit` windows."""
    stream: list[int] = []
    for d in docs:
        stream += tokenizer(d)["input_ids"][: max_per_doc * length] + [tokenizer.eos_token_id]
        if len(stream) >= limit * length:
            break
    n = min(limit, len(stream) // length)
    return torch.tensor(stream[: n * length]).view(n, length)


@dataclass
class Features:
    tokens: torch.Tensor  # [n, L] token ids
    feats: torch.Tensor  # [n, L, h] target's normed last hidden state
    top_ids: torch.Tensor  # [n, L, k] top-k ids of p(.|x_<=i) at T = 1
    top_p: torch.Tensor  # [n, L, k] their probabilities


@torch.inference_mode()
def target_features(model: Any, tokens: torch.Tensor, *, topk: int, batch: int = 4,
                    progress: Any = None) -> Features:
    feats, tids, tps = [], [], []
    for i in range(0, tokens.shape[0], batch):
        x = tokens[i:i + batch]  # [b, L]
        h = model.model(input_ids=x).last_hidden_state  # [b, L, h]
        p = torch.softmax(logits_of(model, h).float(), -1)  # [b, L, V]
        tp, ti = p.topk(topk, -1)  # [b, L, k]
        feats.append(h.float()); tids.append(ti.to(torch.int32)); tps.append(tp)
        if progress is not None:
            progress.update(x.numel())
    return Features(tokens, torch.cat(feats), torch.cat(tids), torch.cat(tps))


def choose_draft_vocab(f: Features, size: int, vocab: int, must: Iterator[int]) -> tuple[torch.Tensor, float]:
    """The `size` ids with the most target top-k mass over the data (plus the `must` ids), sorted;
    also the fraction of that mass they cover."""
    mass = torch.zeros(vocab, dtype=torch.float64)
    mass.index_add_(0, f.top_ids.reshape(-1).long(), f.top_p.reshape(-1).double())
    for m in must:
        mass[m] = float("inf")
    ids = mass.topk(size).indices.sort().values
    fin = torch.isfinite(mass)
    cover = float(mass[ids][torch.isfinite(mass[ids])].sum() / mass[fin].sum())
    return ids, cover
