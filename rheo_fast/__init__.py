"""rheo_fast: the pinned RheoSampling algorithm (ALGORITHM.md) in vectorised, device-agnostic
torch, coupled coin for coin to the exact reference (`rheo_ref.replay`, docs/FAST_PATH.md).

Steps, one module each: `models` (the TreeModel interface, table models, logits -> q_rank,
q_samp, p), `slots` (section 3: `expand`), `tree` (section 4: `frontier`, `rerank`, attention
mask), `verify` (section 5: `verify_level`), `decode` (rounds, coins, multi-round decoding),
`mutants` (deliberately broken variants), `cli_sample` (`rheo sample`).
"""
from .decode import Decoded, RoundResult, decode, round_coins, run_round
from .models import TableTreeModel, TreeModel, draft_probs, target_probs
from .mutants import MUTANTS
from .tree import Layout, Tree

__all__ = ["Decoded", "Layout", "MUTANTS", "RoundResult", "TableTreeModel", "Tree", "TreeModel", "decode",
           "draft_probs", "round_coins", "run_round", "target_probs"]
