"""rheo_fast: the fast path, vectorised device-agnostic torch (ALGORITHM.md section 8)."""
