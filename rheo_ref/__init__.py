"""rheo_ref: the exact reference of RheoSampling (pure Python, `fractions.Fraction`, no torch).

Shared modules, one idea each (the § are sections of docs/ALGORITHM.md): `models` (tables,
cases, §10), `family` (the registry of scheme families), `exact` (laws, TV, tau, §6-§7, for every
family), `coins` (the replay's coins; `CoinLayout`, the block that each family's `layout` module
sizes), `verifier_laws` (SpecInfer, RRSw and Traversal Verification on a given tree), `generate` (seeded tables, temperature), `grid` (sweep grids, the pure part of
`rheo sweep`), `variants` (the spec and the mutants, as settings), `strategies` (hypothesis
strategies), `validate` (checks of user-given values and JSON fields), `sizes` (size estimates),
`atomic` (files written whole or not at all). Each family is a folder, `families/<name>/` (rheo,
static, tsubame, treespark), found through `family`; docs/FAMILIES.md says where a new one goes.
The `rheo` command, the audit and the gate live in the top package `rheo`, which this one never
imports.
"""

from .errors import CaseError, RheoError, TooLargeError

__all__ = ["CaseError", "RheoError", "TooLargeError"]
