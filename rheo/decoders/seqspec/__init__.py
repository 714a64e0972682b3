"""sequential-speculative-decoding 0.1.1 (hierarchical speculative decoding) under the gate: its sampler
and its exact law as coded."""
