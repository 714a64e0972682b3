"""The real models' side of the suite: the χ² check of the LM code path on SmolLM2 (`lossless`); greedy identity at T = 0, flips classified against the verify shape's float bound (`greedy`); the
models, decoding and training live in `rheo_fast.lm`, the commands in `rheo.cli` (`generate`, `bench_model`, `draft_ceiling`, `train_draft`, `paper`)."""
