"""rheo_ref.families.treespark."""
