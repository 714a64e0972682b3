"""rheo_fast.families.treespark."""
