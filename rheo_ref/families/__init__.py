"""rheo_ref.families."""
