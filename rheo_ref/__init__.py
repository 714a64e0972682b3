"""rheo_ref: the exact reference of RheoSampling (pure Python, `fractions.Fraction`, no torch).

Modules, one idea each (the § are sections of docs/ALGORITHM.md): `models` (tables, cases, §10),
`slots` (§3), `tree` (§4), `verify` (§5), `enumerate` (brute and class enumerators, §7),
`bestfirst` (the `dp` method: kept trees best-first and lazily, docs/EXACT_AT_SCALE.md),
`exact` (laws, TV, tau, §6-§7), `generate` (seeded tables, temperature), `grid` (sweep grids,
the pure part of `rheo sweep`), `variants` (the spec and the mutants, as settings), `replay`
(the coupled replay), `mutants` (exact counterparts of the broken variants), `strategies`
(hypothesis strategies). The `static` family (a fixed shape, docs/SCHEMES.md): `static` (shapes,
sibling sampling), `verifiers` (specinfer, rrsw, traversal on a given tree), `static_exact`
(brute and the subtree recursion), `static_replay` (one round driven by coins, coupled to
`rheo_fast.families.static.round`); `validate` (checks of user-given values and JSON fields), `sizes` (size
estimates), `atomic` (files written whole or not at all). The `rheo` command,
the audit and the gate live in the top package `rheo`, which this one never imports.
"""

from .errors import CaseError, RheoError, TooLargeError

__all__ = ["CaseError", "RheoError", "TooLargeError"]
