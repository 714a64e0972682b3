"""EAGLE-1 (eagle-llm 1.2.1) under the gate: its sampler on the stand-in kit and its exact law."""
