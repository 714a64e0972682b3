"""rheo_fast: the pinned RheoSampling algorithm in vectorised, device-agnostic torch, coupled
coin for coin to the exact reference (`rheo_ref.families.rheo.replay`, docs/FAST_PATH.md).

Shared steps, one module each: `models` (the TreeModel interface, table models, logits -> q_rank,
q_samp, p), `slots` (`expand`), `tree` (`frontier`, `rerank`, attention mask), `verify`
(`verify_level`), `decode` (coins and the one multi-round loop of every family), `lm` (real
language models). Each family's round lives in `families/<name>/` (rheo, static, tsubame,
treespark) and is found through `family` (the registry: `layout_for`, `fast_family_of`); its coin
layout is the reference's (`rheo_ref.families.<name>.layout`), the same object on both sides.
docs/FAMILIES.md says where a new family goes. The deliberately broken variants that steps can
run are declared once, for both implementations, in `rheo_ref.variants`.

The names below are loaded on first use (PEP 562), so importing the package does not import torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Decoded": "decode",
    "RoundResult": "families.rheo.round",
    "decode": "decode",
    "round_coins": "decode",
    "run_round": "families.rheo.round",
    "TableTreeModel": "models",
    "TreeModel": "models",
    "draft_probs": "models",
    "target_probs": "models",
    "Tree": "tree",
    "RheoLayout": "families.rheo.round",
    "StaticLayout": "families.static.round",
    "static_round": "families.static.round",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'rheo_fast' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
