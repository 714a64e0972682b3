"""rheo_ref.families.static."""
