"""The case library of `rheo cases` (rheo.cli_cases): per family and pairing, one shared case on
which every listed mutant has exact TV >= `floor` on its best check.

The bug-class cases (family `bugclasses`, a `BugCase`) were found by `rheo mutants --hunt` (its
draw, seed and index in `hunt`; the block case by the block draw, `rheo.hunt_block`) and improved
by `rheo.hunt.refine` (seeded local search on the weights); `tests/test_bugclasses.py` recomputes
every mutant's exact TV on them against the floor, and the block case from its hunt cell.
The algorithmic families' cases (a `rheo_ref.models.Case`, checked by the gate's four checks) are
`rheo.hunt.shared_case(base, seed, i)` as recorded in `hunt`: the best floor among cells 0–100 of
seed 1 per pairing; `tests/test_case_library.py` recomputes their floors.
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
        "floor": 0.0899,
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
        "below_floor": {"draft-bfloat16": "float-level (exact TV 0.0004)"},
        # the block draw (`--hunt-draw block`, rheo.hunt_block) seed 1 cell 2, then `rheo.hunt.refine` seed 1,
        # 14 steps (floor 0.0897 -> 2304/25625 ~ 0.0899, set by block-token-residual: <= (5√5 - 11)/2 ~ 0.0902
        # on any case with γ <= 2, proofs/blockres.py)
        "hunt": {"draw": "block", "seed": 1, "i": 2, "refine_seed": 1, "refine_steps": 14},
        "case": {
            "draft": {
                "vocab_size": 6,
                "context_length": 1,
                "probs": {
                    "": ["2/39", "5/39", "2/13", "3/13", "7/39", "10/39"],
                    "0": ["0", "6/23", "0", "1/23", "8/23", "8/23"],
                    "1": ["0", "0", "1", "0", "0", "0"],
                    "2": ["5/9", "0", "0", "0", "4/9", "0"],
                    "3": ["2/23", "9/23", "4/23", "4/23", "2/23", "2/23"],
                    "4": ["2/23", "3/23", "3/23", "7/23", "7/23", "1/23"],
                    "5": ["0", "0", "1", "0", "0", "0"],
                },
            },
            "target": {
                "vocab_size": 6,
                "context_length": 1,
                "probs": {
                    "": ["0", "1/5", "1/5", "3/10", "4/15", "1/30"],
                    "0": ["0", "4/11", "0", "0", "0", "7/11"],
                    "1": ["3/7", "0", "4/7", "0", "0", "0"],
                    "2": ["0", "0", "0", "4/9", "5/9", "0"],
                    "3": ["1/17", "2/17", "5/34", "3/17", "4/17", "9/34"],
                    "4": ["1/8", "3/32", "1/4", "1/4", "1/4", "1/32"],
                    "5": ["3/7", "0", "4/7", "0", "0", "0"],
                },
            },
            "context": [0],
            "tokens": 3,
            "request": {
                "temperature": "1/2",
                "top_k": 3,
                "top_p": "1",
                "penalty": "1/2",
                "gamma": 2,
                "verify": "block",
            },
        },
    },
    # the algorithmic families' shared cases: `rheo.hunt.shared_case(base, seed, i)`, the gate's four checks
    "rheo-shared": {
        "family": "rheo",
        "pairing": "rheo-m1",
        "floor": 0.174,
        "mutants": [
            "proxy-true",
            "proxy-const",
            "verify-q-not-qtilde",
            "sample-whole-q",
            "residual-unnormalised",
            "stale-bonus",
            "one-hot-sampled",
            "bonus-full-p",
            "temp-sample-only",
            "fills-first",
        ],
        "hunt": {"base": "rheo-m1/T0.5", "seed": 1, "i": 13},
        "case": {
            "draft": {
                "vocab_size": 4,
                "context_length": 1,
                "probs": {
                    "": ["7/25", "7/25", "1/5", "6/25"],
                    "0": ["1/10", "3/10", "3/20", "9/20"],
                    "1": ["3/7", "0", "1/7", "3/7"],
                    "2": ["1/3", "1/21", "3/7", "4/21"],
                    "3": ["2/15", "1/5", "2/5", "4/15"],
                },
            },
            "target": {
                "vocab_size": 4,
                "context_length": 1,
                "probs": {
                    "": ["7/16", "0", "1/8", "7/16"],
                    "0": ["8/29", "9/29", "5/29", "7/29"],
                    "1": ["1/4", "0", "1/8", "5/8"],
                    "2": ["2/7", "1/4", "5/28", "2/7"],
                    "3": ["0", "5/21", "1/3", "3/7"],
                },
            },
            "context": [0],
            "tokens": 3,
            "scheme": {"K": 3, "m": 1, "W": 2, "D": 2, "R": 5, "proxy": "rheo", "verify": "rheo"},
            "draft_sample": {
                "vocab_size": 4,
                "context_length": 1,
                "probs": {
                    "": ["49/159", "49/159", "25/159", "12/53"],
                    "0": ["2/65", "18/65", "9/130", "81/130"],
                    "1": ["9/19", "0", "1/19", "9/19"],
                    "2": ["1/3", "1/147", "27/49", "16/147"],
                    "3": ["4/65", "9/65", "36/65", "16/65"],
                },
            },
        },
    },
    "static-rrsw-shared": {
        "family": "static",
        "pairing": "rrsw",
        "floor": 0.501,
        "mutants": ["specinfer-on-wor", "sorted-siblings"],
        "hunt": {"base": "branching-wor-rrsw/T0.5/zeros", "seed": 1, "i": 81},
        "case": {
            "draft": {
                "vocab_size": 4,
                "context_length": 1,
                "probs": {
                    "": ["2/11", "5/22", "3/11", "7/22"],
                    "0": ["0", "0", "2/7", "5/7"],
                    "1": ["1/15", "3/10", "3/10", "1/3"],
                    "2": ["2/7", "1/14", "0", "9/14"],
                    "3": ["1/6", "1/8", "1/3", "3/8"],
                },
            },
            "target": {
                "vocab_size": 4,
                "context_length": 1,
                "probs": {
                    "": ["1/5", "1/10", "1/2", "1/5"],
                    "0": ["5/14", "3/7", "3/14", "0"],
                    "1": ["3/7", "8/21", "4/21", "0"],
                    "2": ["0", "9/25", "9/25", "7/25"],
                    "3": ["4/23", "5/23", "6/23", "8/23"],
                },
            },
            "context": [0],
            "tokens": 3,
            "scheme": {"family": "static", "branching": [2, 1], "sampling": "wor", "verify": "rrsw"},
            "draft_sample": {
                "vocab_size": 4,
                "context_length": 1,
                "probs": {
                    "": ["8/63", "25/126", "2/7", "7/18"],
                    "0": ["0", "0", "4/29", "25/29"],
                    "1": ["2/133", "81/266", "81/266", "50/133"],
                    "2": ["8/49", "1/98", "0", "81/98"],
                    "3": ["8/85", "9/170", "32/85", "81/170"],
                },
            },
        },
    },
    "static-traversal-shared": {
        "family": "static",
        "pairing": "traversal",
        "floor": 0.191,
        "mutants": [
            "traversal-bad-rate",
            "traversal-min-index-leaf",
            "traversal-stale-bonus",
            "traversal-wrong-update",
            "sorted-siblings",
        ],
        "hunt": {"base": "parents-wor-traversal/T0.5/zeros", "seed": 1, "i": 62},
        "case": {
            "draft": {
                "vocab_size": 3,
                "context_length": 1,
                "probs": {
                    "": ["4/13", "8/13", "1/13"],
                    "0": ["7/11", "1/11", "3/11"],
                    "1": ["2/15", "8/15", "1/3"],
                    "2": ["1/5", "0", "4/5"],
                },
            },
            "target": {
                "vocab_size": 3,
                "context_length": 1,
                "probs": {
                    "": ["1/2", "1/2", "0"],
                    "0": ["1/12", "1/2", "5/12"],
                    "1": ["5/16", "5/16", "3/8"],
                    "2": ["1/3", "1/3", "1/3"],
                },
            },
            "context": [0],
            "tokens": 3,
            "scheme": {"family": "static", "parents": [0, 0, 1], "sampling": "wor", "verify": "traversal"},
            "draft_sample": {
                "vocab_size": 3,
                "context_length": 1,
                "probs": {
                    "": ["16/81", "64/81", "1/81"],
                    "0": ["49/59", "1/59", "9/59"],
                    "1": ["4/93", "64/93", "25/93"],
                    "2": ["1/17", "0", "16/17"],
                },
            },
        },
    },
    "tsubame-shared": {
        "family": "tsubame",
        "pairing": "wor-traversal",
        "floor": 0.58,
        "mutants": ["tsubame-plan-after-sampling"],
        "hunt": {"base": "tsubame-w1-wor-traversal/T1", "seed": 1, "i": 66},
        "case": {
            "draft": {
                "vocab_size": 3,
                "context_length": 1,
                "probs": {
                    "": ["6/13", "5/13", "2/13"],
                    "0": ["2/7", "1/3", "8/21"],
                    "1": ["1/3", "1/3", "1/3"],
                    "2": ["7/17", "8/17", "2/17"],
                },
            },
            "target": {
                "vocab_size": 3,
                "context_length": 1,
                "probs": {
                    "": ["5/12", "1/2", "1/12"],
                    "0": ["2/7", "1/7", "4/7"],
                    "1": ["6/19", "5/19", "8/19"],
                    "2": ["1/10", "4/5", "1/10"],
                },
            },
            "context": [0],
            "tokens": 3,
            "scheme": {"family": "tsubame", "K": 2, "W": 1, "D": 2, "R": 3, "sampling": "wor", "verify": "traversal"},
            "draft_sample": {
                "vocab_size": 3,
                "context_length": 1,
                "probs": {
                    "": ["36/65", "5/13", "4/65"],
                    "0": ["36/149", "49/149", "64/149"],
                    "1": ["1/3", "1/3", "1/3"],
                    "2": ["49/117", "64/117", "4/117"],
                },
            },
        },
    },
    "treespark-rrsw-shared": {
        "family": "treespark",
        "pairing": "rrsw",
        "floor": 0.278,
        "mutants": ["treespark-own-survival"],
        "hunt": {"base": "treespark-rrsw-theta/T1", "label": "spark-rrsw-theta/T1", "seed": 1, "i": 84},
        "case": {
            "draft": {
                "vocab_size": 3,
                "context_length": 1,
                "probs": {
                    "": ["3/7", "5/21", "1/3"],
                    "0": ["5/18", "1/3", "7/18"],
                    "1": ["4/9", "2/9", "1/3"],
                    "2": ["1/6", "5/18", "5/9"],
                },
            },
            "target": {
                "vocab_size": 3,
                "context_length": 1,
                "probs": {
                    "": ["4/15", "1/3", "2/5"],
                    "0": ["5/22", "9/22", "4/11"],
                    "1": ["7/20", "9/20", "1/5"],
                    "2": ["5/8", "1/4", "1/8"],
                },
            },
            "context": [0],
            "tokens": 3,
            "scheme": {
                "family": "treespark",
                "N": 4,
                "k": 2,
                "D": 3,
                "theta": "1/10",
                "calibration": "sigmoid:0.6684,-0.4587",
                "verify": "rrsw",
            },
            "draft_sample": {
                "vocab_size": 3,
                "context_length": 1,
                "probs": {
                    "": ["3/7", "5/21", "1/3"],
                    "0": ["5/18", "1/3", "7/18"],
                    "1": ["4/9", "2/9", "1/3"],
                    "2": ["1/6", "5/18", "5/9"],
                },
            },
        },
    },
    "treespark-traversal-shared": {
        "family": "treespark",
        "pairing": "traversal",
        "floor": 0.373,
        "mutants": ["treespark-own-survival"],
        "hunt": {"base": "treespark-traversal-theta/T1", "label": "spark-traversal-theta/T1", "seed": 1, "i": 23},
        "case": {
            "draft": {
                "vocab_size": 3,
                "context_length": 1,
                "probs": {
                    "": ["4/15", "2/15", "3/5"],
                    "0": ["7/20", "9/20", "1/5"],
                    "1": ["3/10", "3/5", "1/10"],
                    "2": ["10/19", "9/19", "0"],
                },
            },
            "target": {
                "vocab_size": 3,
                "context_length": 1,
                "probs": {
                    "": ["3/19", "8/19", "8/19"],
                    "0": ["4/7", "1/7", "2/7"],
                    "1": ["2/3", "0", "1/3"],
                    "2": ["3/8", "1/2", "1/8"],
                },
            },
            "context": [0],
            "tokens": 3,
            "scheme": {
                "family": "treespark",
                "N": 4,
                "k": 2,
                "D": 3,
                "theta": "1/10",
                "calibration": "sigmoid:0.6684,-0.4587",
                "verify": "traversal",
            },
            "draft_sample": {
                "vocab_size": 3,
                "context_length": 1,
                "probs": {
                    "": ["4/15", "2/15", "3/5"],
                    "0": ["7/20", "9/20", "1/5"],
                    "1": ["3/10", "3/5", "1/10"],
                    "2": ["10/19", "9/19", "0"],
                },
            },
        },
    },
}
