"""proofs: machine-checked claims of the RheoSampling paper; run them with `python -m proofs`."""
