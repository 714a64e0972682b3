"""Decoders under test: one folder per decoder nobody here wrote (or rheo's own LM path), run on table
language models of a case and gated against the exact target law (docs/DECODERS.md)."""
