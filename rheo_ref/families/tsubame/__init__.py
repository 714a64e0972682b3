"""rheo_ref.families.tsubame."""
