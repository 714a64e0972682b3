"""EAGLE-1 (the PyPI package eagle-llm 1.2.1, SafeAILab) on the stand-in kit (docs/THIRD_PARTY.md §6).

`eagle_model(case)` builds eagle's `EaModel` without weights: its target body is eagle's own
`modeling_llama_kv.LlamaModel` and its draft head eagle's own `cnets.Model`, each with only the
neural modules replaced by the kit (`rheo_fast.kit`: embedding, decoder layer, fusion, lm_head;
norm = identity). Everything else is eagle's code, unmodified: `EaModel.eagenerate`, its tree
buffers (`mc_sim_7b_63`: 25 nodes, depth 5), its attention masks and position ids, its `KVCache`
and the copy of the accepted path in `update_inference_inputs`, `cnets.Model.topK_genrate` and
`sample` (10 children per expanded node, drawn without replacement), `evaluate_posterior`.

`sample_eagle` decodes from a case's context with eagle's random streams seeded (torch's global
generator for its multinomials, Python's `random` for `evaluate_posterior`'s coins).
eagle-llm is imported on first use; install it with `pip install --no-deps eagle-llm==1.2.1`.
"""

from __future__ import annotations

import random
from types import SimpleNamespace
from typing import Any

from rheo_ref.errors import CaseError, MissingDependencyError
from rheo_ref.models import Case

EAGLE_VERSION = "1.2.1"
EAGLE_CHILDREN = 10  # cnets.top_k: children drawn per expanded node
MAX_POSITIONS = 256  # the KV cache's length (eagle allocates max_position_embeddings rows)


def _eagle() -> SimpleNamespace:
    try:
        from eagle.model import cnets, ea_model, modeling_llama_kv
    except ImportError as e:
        raise MissingDependencyError(
            f"the eagle decoder needs eagle-llm: pip install --no-deps eagle-llm=={EAGLE_VERSION} ({e})"
        ) from None
    return SimpleNamespace(cnets=cnets, ea_model=ea_model, llama=modeling_llama_kv)


def eagle_model(case: Case, *, dtype: Any = None) -> Any:
    """eagle's `EaModel` whose target is the case's p table and whose draft head is its q_samp table."""
    import torch
    from torch import nn

    from rheo_fast.kit import TableBodyLayer, TableDraftLayer, draft_fc, table_embedding, table_lm_head

    dtype = torch.float64 if dtype is None else dtype
    V = case.vocab_size
    if V < EAGLE_CHILDREN:
        raise CaseError(
            f"eagle draws {EAGLE_CHILDREN} children per node without replacement: it needs vocab_size >= "
            f"{EAGLE_CHILDREN}, got {V}"
        )
    e = _eagle()
    config = SimpleNamespace(
        output_attentions=False,
        output_hidden_states=False,
        use_cache=False,
        use_return_dict=False,
        num_hidden_layers=1,
        num_attention_heads=V,  # head dim hidden_size // heads = 2: a cache row holds (token, position)
        num_key_value_heads=1,
        hidden_size=2 * V,
        max_position_embeddings=MAX_POSITIONS,
        vocab_size=V,
    )

    def bare(cls: Any) -> Any:  # the object without its weight-loading __init__
        obj = cls.__new__(cls)
        nn.Module.__init__(obj)
        return obj

    body = bare(e.llama.LlamaModel)
    body.config, body.padding_idx, body.vocab_size, body.gradient_checkpointing = config, None, V, False
    body.embed_tokens = table_embedding(V, dtype=dtype)
    body.layers = nn.ModuleList([TableBodyLayer(case.target, dtype=dtype, max_positions=MAX_POSITIONS)])
    body.norm = nn.Identity()

    base: Any = nn.Module()
    base.model, base.lm_head, base.config, base.dtype = body, table_lm_head(V, dtype=dtype), config, dtype

    draft = bare(e.cnets.Model)
    draft.gradient_checkpointing, draft.padding_idx, draft.vocab_size, draft.diff_device = False, None, V, False
    draft.embed_tokens = table_embedding(V, dtype=dtype)
    draft.layers = nn.ModuleList([TableDraftLayer(case.q_samp_model, dtype=dtype, max_positions=MAX_POSITIONS)])
    draft.fc = draft_fc(V, dtype=dtype)
    draft.init_tree()

    model = bare(e.ea_model.EaModel)
    model.base_model, model.ea_layer, model.config = base, draft, config
    model.hidden_size, model.vocab_size = 2 * V, V
    model.tokenizer = SimpleNamespace(eos_token_id=None)  # no end of sequence: eagenerate stops at max_new_tokens
    return model.eval()


def sample_eagle(
    case: Case, context: list[int], n: int, seed: int, num_samples: int, *, gen: dict[str, Any], dtype: Any = None
) -> list[tuple[int, ...]]:
    """num_samples runs of `EaModel.eagenerate` from `context`; the first n new tokens of each.

    gen: temperature (> 0: eagle is greedy at 0), top_p, top_k, passed to eagenerate as given."""
    import torch

    model = eagle_model(case, dtype=dtype)
    ids = torch.tensor([list(context)])
    kwargs = {"temperature": float(gen.get("temperature", 1.0)), "top_p": float(gen.get("top_p", 0.0))}
    kwargs["top_k"] = int(gen.get("top_k", 0))
    torch.manual_seed(seed % 2**63)
    random.seed(seed)  # evaluate_posterior's coins
    out = []
    for _ in range(num_samples):
        seq = model.eagenerate(ids, max_new_tokens=n, max_length=MAX_POSITIONS - 40, **kwargs)
        got = seq[0, len(context) : len(context) + n].tolist()
        if len(got) < n:
            raise CaseError(f"eagenerate returned {len(got)} new tokens, fewer than {n}")
        out.append(tuple(got))
    return out
