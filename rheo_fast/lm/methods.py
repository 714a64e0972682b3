"""The real-model decoding methods by name (torch-free, so that the `rheo` parser can list them
without importing torch; `rheo_fast.lm.decode.scheme_for` maps each to its scheme)."""

METHODS = (
    "ar",
    "chain",
    "topk",
    "rheo-m0",
    "rheo",
    "rheo-m2",
    "rheo-rrsw",
    "static-traversal",
    "delayed-traversal",
    "tsubame",
    "treespark",
)
