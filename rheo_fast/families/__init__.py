"""The fast path of each scheme family, one folder per family (`rheo_fast.family` is their registry)."""
