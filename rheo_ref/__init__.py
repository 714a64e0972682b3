"""rheo_ref: the exact reference of RheoSampling (pure Python, `fractions.Fraction`, no torch).

Modules, one idea each: `models` (tables, cases, section 10), `slots` (section 3), `tree`
(section 4), `verify` (section 5), `enumerate` (brute and class enumerators, section 7),
`exact` (laws, TV, tau, section 6-7), `replay` (the coupled replay), `mutants` (exact
counterparts of the broken variants), `strategies` (hypothesis strategies). The `rheo` command,
the audit and the gate live in the top package `rheo`, which this one never imports.
"""
from .errors import CaseError, RheoError, TooLargeError

__all__ = ["RheoError", "CaseError", "TooLargeError"]
