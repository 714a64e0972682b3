"""rheo_fast: the pinned RheoSampling algorithm in vectorised, device-agnostic torch, coupled
coin for coin to the exact reference (`rheo_ref.families.rheo.replay`, docs/FAST_PATH.md).

Steps, one module each: `models` (the TreeModel interface, table models, logits -> q_rank,
q_samp, p), `slots` (`expand`), `tree` (`frontier`, `rerank`, attention mask), `verify`
(`verify_level`), `decode` (rounds, coins, multi-round decoding), `static_tree` and `static` (the
`static` family's tree and round: a fixed shape, docs/SCHEMES.md §7), `lm` (real language models).
The deliberately broken variants that steps can run are declared once, for both implementations,
in `rheo_ref.variants`.

The names below are loaded on first use (PEP 562), so importing the package does not import torch.
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Decoded": "decode",
    "RoundResult": "decode",
    "decode": "decode",
    "round_coins": "decode",
    "run_round": "decode",
    "TableTreeModel": "models",
    "TreeModel": "models",
    "draft_probs": "models",
    "target_probs": "models",
    "Layout": "tree",
    "Tree": "tree",
    "StaticLayout": "static_tree",
    "static_round": "static",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'rheo_fast' has no attribute {name!r}")
    return getattr(importlib.import_module(f".{_EXPORTS[name]}", __name__), name)
