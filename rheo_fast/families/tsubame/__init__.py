"""rheo_fast.families.tsubame."""
