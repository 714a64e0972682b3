"""rheo_ref.families.rheo."""
