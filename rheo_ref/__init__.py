"""rheo_ref: the exact reference of RheoSampling (pure Python, `fractions.Fraction`, no torch).

Modules, one idea each: `models` (tables, cases, section 10), `slots` (section 3), `tree`
(section 4), `verify` (section 5), `enumerate` (brute and class enumerators, section 7),
`exact` (laws, TV, tau, section 6-7), `cli` (the `rheo` command).
"""
from .errors import CaseError, RheoError, TooLargeError

__all__ = ["RheoError", "CaseError", "TooLargeError"]
