"""The case library of `rheo cases` (rheo.cli_cases): per family and pairing, one shared case on
which every listed mutant has exact TV >= `floor` on its best check.

Each case was found by `rheo mutants --hunt` (its seed and index in `hunt`) and improved by
`rheo.hunt.refine` (seeded local search on the weights); `tests/test_bugclasses.py` recomputes
every mutant's exact TV on it against the floor.
"""

from __future__ import annotations

LIBRARY: dict[str, dict] = {
    "bugclasses-token": {
        "family": "bugclasses",
        "pairing": "token",
        "floor": 0.156,
        "mutants": [
            "recovery-skips-processors",
            "draft-reports-raw-q",
            "draft-argmax-softmax-q",
            "target-default-params",
            "uniform-reused-for-residual",
            "stream-positions-shared",
            "accept-uniform-zero",
            "draft-as-point-mass",
            "verify-argmax",
            "penalty-per-step",
            "target-off-by-one",
            "first-token-argmax",
        ],
        "below_floor": {"draft-bfloat16": "float-level (exact TV 0.00033)"},
        "hunt": {"seed": 1, "i": 101, "refine_seed": 1, "refine_steps": 150},
        "case": {
            "draft": {
                "vocab_size": 6,
                "context_length": 1,
                "probs": {
                    "": ["3/16", "1/4", "1/8", "0", "9/32", "5/32"],
                    "0": ["4/9", "0", "2/9", "2/9", "0", "1/9"],
                    "1": ["1/22", "9/22", "7/22", "1/22", "0", "2/11"],
                    "2": ["1/6", "0", "0", "1/3", "1/3", "1/6"],
                    "3": ["2/19", "4/19", "9/19", "1/19", "2/19", "1/19"],
                    "4": ["3/25", "3/25", "1/5", "4/25", "6/25", "4/25"],
                    "5": ["7/31", "1/31", "9/31", "3/31", "3/31", "8/31"],
                },
            },
            "target": {
                "vocab_size": 6,
                "context_length": 1,
                "probs": {
                    "": ["2/11", "3/11", "0", "2/11", "4/11", "0"],
                    "0": ["1/40", "9/40", "1/10", "1/8", "3/10", "9/40"],
                    "1": ["8/33", "2/11", "2/11", "8/33", "1/33", "4/33"],
                    "2": ["1/25", "0", "12/25", "3/25", "0", "9/25"],
                    "3": ["2/15", "2/15", "7/30", "1/15", "4/15", "1/6"],
                    "4": ["1/15", "7/30", "2/15", "1/6", "3/10", "1/10"],
                    "5": ["0", "1/17", "3/17", "2/17", "3/17", "8/17"],
                },
            },
            "context": [0],
            "tokens": 2,
            "request": {
                "temperature": "1",
                "top_k": 0,
                "top_p": "4/5",
                "penalty": "1/2",
                "gamma": 2,
                "verify": "token",
            },
        },
    },
    "bugclasses-block": {
        "family": "bugclasses",
        "pairing": "block",
        "floor": 0.011,
        "mutants": [
            "recovery-skips-processors",
            "draft-reports-raw-q",
            "draft-argmax-softmax-q",
            "target-default-params",
            "accept-uniform-zero",
            "draft-as-point-mass",
            "verify-argmax",
            "penalty-per-step",
            "block-token-residual",
            "target-off-by-one",
            "first-token-argmax",
        ],
        "below_floor": {"draft-bfloat16": "float-level (exact TV 0.00014)"},
        "hunt": {"seed": 1, "i": 49, "refine_seed": None, "refine_steps": 0},
        "case": {
            "draft": {
                "vocab_size": 4,
                "context_length": 1,
                "probs": {
                    "": ["2/11", "7/11", "1/11", "1/11"],
                    "0": ["3/7", "1/7", "5/14", "1/14"],
                    "1": ["1/11", "9/22", "1/11", "9/22"],
                    "2": ["4/13", "4/13", "3/13", "2/13"],
                    "3": ["3/8", "3/8", "1/6", "1/12"],
                },
            },
            "target": {
                "vocab_size": 4,
                "context_length": 1,
                "probs": {
                    "": ["0", "7/16", "5/16", "1/4"],
                    "0": ["1/17", "4/17", "4/17", "8/17"],
                    "1": ["1/12", "1/3", "1/2", "1/12"],
                    "2": ["1/8", "0", "9/16", "5/16"],
                    "3": ["3/11", "3/11", "9/22", "1/22"],
                },
            },
            "context": [0],
            "tokens": 3,
            "request": {
                "temperature": "1/2",
                "top_k": 3,
                "top_p": "9/10",
                "penalty": "1/2",
                "gamma": 2,
                "verify": "block",
            },
        },
    },
}
