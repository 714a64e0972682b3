"""rheo_fast.families."""
