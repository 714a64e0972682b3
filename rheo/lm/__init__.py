"""The real models' side of the suite: the χ² check of the LM code path on SmolLM2 (`lossless`); the
models, decoding and training live in `rheo_fast.lm`, the commands in `rheo.cli.lm` and `rheo.cli.paper`."""
