"""The case library of `rheo cases` (rheo.mutants.library): per family and pairing, one shared case on
which every listed mutant has exact TV >= `floor` on its best check.

The bug-class cases (family `bugclasses`, a `BugCase`) were found by `rheo mutants --hunt` (its
draw, seed and index in `hunt`; the block case by the block draw, `rheo.mutants.hunt_block`) and improved
by `rheo.mutants.hunt.refine` (seeded local search on the weights); `tests/test_bugclasses.py` recomputes
every mutant's exact TV on them against the floor, and the block case from its hunt cell.
The algorithmic families' cases (a `rheo_ref.models.Case`, checked by the gate's four checks) are
`rheo.mutants.hunt.shared_case(base, seed, i)` as recorded in `hunt`: the best floor among cells 0–100 of
seed 1 per pairing; `tests/test_case_library.py` recomputes their floors.

The library is data, shipped in the package as `rheo/data/case_library.json` (its `cases`: name ->
family, pairing, floor, mutants covered, hunt provenance, a note where one is due, the case); this module reads it once.
"""

from __future__ import annotations

import json
from importlib.resources import files

_PATH = files("rheo") / "data" / "case_library.json"

LIBRARY: dict[str, dict] = json.loads(_PATH.read_text(encoding="utf-8"))["cases"]
