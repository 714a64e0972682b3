"""The static family's mutants (docs/SCHEMES.md §8): each a `rheo_ref.variants.Variant` whose
`VerifierSteps` (the family's settings, beside the shared verifier laws in
`rheo_ref.verifier_laws`) change one step of a verifier; `READ_BY` there says which verifiers
read it (on the others a mutant runs the spec's round)."""

from __future__ import annotations

from rheo_ref.variants import Variant
from rheo_ref.verifier_laws import VerifierSteps


def _mutant(name: str, description: str, note: str = "", **changes: str) -> Variant:
    return Variant(name, description, "static", VerifierSteps(**changes), note)  # type: ignore[arg-type]


MUTANTS = (
    _mutant(
        "traversal-bad-rate",
        "traversal: after a removal α[u] <- min(1, S/(1 - Ms[u][x])) instead of "
        "S/(S + 1 - α[u]) (a published third-party rule)",
        traversal_rate="one_minus_ms",
    ),
    _mutant(
        "traversal-min-index-leaf",
        "traversal: the next leaf is the live leaf created first, not the first in post-order",
        leaf_order="min_index",
        note="the two orders differ only where a leaf is created before a deeper node (a parents shape)",
    ),
    _mutant(
        "traversal-stale-bonus",
        "traversal: the bonus drawn from the original p at the accepted node, not Mb",
        traversal_bonus="target",
    ),
    _mutant(
        "specinfer-on-wor",
        "wor siblings verified by specinfer: rrsw's proposal row kept fixed after a "
        "rejection (q not conditioned on the drawn tokens)",
        proposal_update="fixed",
    ),
    _mutant(
        "traversal-wrong-update",
        "traversal: the Ms update of the other sampling mode (wor: Ms unchanged; iid: the rejected token removed)",
        ms_update="other",
    ),
    _mutant(
        "sorted-siblings",
        "children verified in token-id order (ties in draw order) instead of draw order",
        sibling_order="token_id",
    ),
)
