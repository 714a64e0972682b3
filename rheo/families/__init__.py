"""Each family's part of the suite, one folder per family (`rheo.families.registry` is their registry)."""
