"""The lossless gate's core: statistics, cells, windows, horizon tests, diagnosis, planning, the
pytest plugin, and the checks of what the gate is handed (`rheo.lossless.validate`). No torch."""
