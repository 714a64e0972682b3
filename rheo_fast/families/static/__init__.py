"""rheo_fast.families.static."""
