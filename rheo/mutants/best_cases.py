"""Per bug-class mutant, the case on which the gate convicts it with the fewest samples (`rheo mutants`
runs it there; docs/GATE_REFERENCE.md, "The fewest samples").

Each is `rheo.mutants.hunt.random_case(seed, i)`, the best of the first 108 cases of hunt seed 1, then
improved by `rheo.mutants.hunt.refine(case, seed=refine_seed, steps=refine_steps, mutant=...)` (a seeded local
search that lowers that mutant's samples_to_convict; steps 0: not refined) at level `ALPHA_FOUND`.
Reproduce with `rheo mutants --hunt 108 --hunt-seed 1 --refine 150 --alpha ALPHA_FOUND --only MUTANT`;
`tests/test_best_cases.py` rebuilds them. `block-token-residual`'s is a cell of the block draw
(`"draw": "block"`: `rheo.mutants.hunt_block.block_case(seed, i)`, `--hunt-draw block`); the float-level
`draft-bfloat16` runs on its library case (rheo.selfgate.case_library). The served-decoder classes
(15–28: settings, grammars, logprobs, coins on a grid, trees, the documented-lossy controls) are cells
of the served draw (`"draw": "served"`: `rheo.mutants.hunt_served.served_case(seed, i)`, `--hunt-draw
served`), the fewest samples to convict among its first 120 cells of seed 1, not refined
(`rheo mutants --hunt 120 --hunt-seed 1 --hunt-draw served --only MUTANT`).

`BEST_HUNTED`: the twenty algorithmic mutants' best hunted cases, `rheo.mutants.hunt.variant_case(mutant, seed,
i)`, the fewest samples to convict among the first 40 of hunt seed 1 (`rheo mutants --hunt 40 --hunt-seed
1`); the float-level `leq-coin` and `float16` have none. `rheo mutants --fewest` takes the better of this
and the gate case.

`BEST_BATCHES`: the batch classes' best batches, `rheo.mutants.hunt_batch.batch_case(seed, i)` (cut
to the requests `hunt_batch.for_mutant` runs), the fewest samples to convict among the first 40 of
seed 1 (`rheo mutants --hunt 40 --hunt-seed 1 --hunt-draw batch`).

The tables are data, shipped in the package as `rheo/data/best_cases.json` (`alpha_found`, `best_cases`,
`best_hunted`); this module reads them once.
"""

from __future__ import annotations

import json
from importlib.resources import files

_PATH = files("rheo") / "data" / "best_cases.json"
_DATA = json.loads(_PATH.read_text(encoding="utf-8"))

ALPHA_FOUND: float = _DATA["alpha_found"]  # the gate's derived per-test α when the search ran (refine compares N at it)
BEST_CASES: dict[str, dict] = _DATA["best_cases"]  # mutant -> {"hunt": its cell and refine steps, "case": a BugCase}
BEST_HUNTED: dict[str, dict] = _DATA["best_hunted"]
# batch mutant -> {"hunt": its cell, "batch": {"requests": [BugCase, ...], "seeds": [...]}}
BEST_BATCHES: dict[str, dict] = _DATA["best_batches"]  # algorithmic mutant -> {"seed", "i"} of its hunt cell
