"""Each family's part of the suite, one folder per family (`rheo.family` is their registry)."""
