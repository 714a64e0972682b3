"""The real-model decoding methods by name (torch-free, so that the `rheo` parser can list them
without importing torch): "ar" (plain autoregressive decoding), then each family's
(`rheo_fast.family.FastFamily.lm_methods`, in registry order); `rheo_fast.lm.decode.scheme_for`
maps each to its scheme."""

from rheo_fast.family import fast_families


def lm_methods() -> tuple[str, ...]:
    """Every method name of the registered families."""
    return ("ar",) + tuple(name for fam in fast_families().values() for name in fam.lm_methods)


METHODS = lm_methods()
