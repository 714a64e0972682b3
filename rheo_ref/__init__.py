"""rheo_ref: the exact reference of RheoSampling (pure Python, `fractions.Fraction`, no torch).

Modules, one idea each: `models` (tables, cases, section 10), `slots` (section 3), `tree`
(section 4), `verify` (section 5), `enumerate` (brute and class enumerators, section 7),
`exact` (laws, TV, tau, section 6-7), `replay` (the coupled replay), `mutants` (exact
counterparts of the broken variants), `strategies` (hypothesis strategies). The `static` family
(a fixed shape, docs/SCHEMES.md): `static` (shapes, sibling sampling), `verifiers` (specinfer,
rrsw, traversal on a given tree), `static_exact` (brute and the subtree recursion); `fields`
(JSON field checks shared by every scheme). The `rheo` command,
the audit and the gate live in the top package `rheo`, which this one never imports.
"""
from .errors import CaseError, RheoError, TooLargeError

__all__ = ["RheoError", "CaseError", "TooLargeError"]
