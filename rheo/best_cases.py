"""Per bug-class mutant, the case on which the gate convicts it with the fewest samples (`rheo mutants`
runs it there; docs/GATE.md, "The fewest samples").

Each is `rheo.hunt.random_case(seed, i)`, the best of the first 108 cases of hunt seed 1, then
improved by `rheo.hunt.refine(case, seed=refine_seed, steps=refine_steps, mutant=...)` (a seeded local
search that lowers that mutant's samples_to_convict; steps 0: not refined) at level `ALPHA_FOUND`.
Reproduce with `rheo mutants --hunt 108 --hunt-seed 1 --refine 150 --alpha ALPHA_FOUND --only MUTANT`;
`tests/test_best_cases.py` rebuilds them. `block-token-residual`'s is a cell of the block draw
(`"draw": "block"`: `rheo.hunt_block.block_case(seed, i)`, `--hunt-draw block`); the float-level
`draft-bfloat16` runs on its library case (rheo.case_library).
"""

from __future__ import annotations

ALPHA_FOUND = 3.3003300330033e-07  # the gate's derived per-test α when the search ran (refine compares N at it)

BEST_CASES: dict[str, dict] = {
    "recovery-skips-processors": {
        "hunt": {"seed": 1, "i": 2, "refine_seed": 1, "refine_steps": 150},
        "case": {
            "draft": {
                "vocab_size": 6,
                "context_length": 0,
                "probs": {"": ["11/20", "1/20", "1/5", "0", "1/20", "3/20"]},
            },
            "target": {
                "vocab_size": 6,
                "context_length": 0,
                "probs": {"": ["1/9", "7/45", "13/45", "1/5", "1/15", "8/45"]},
            },
            "context": [],
            "tokens": 2,
            "request": {
                "temperature": "1",
                "top_k": 2,
                "top_p": "9/10",
                "penalty": "1/2",
                "gamma": 2,
                "verify": "token",
            },
        },
    },
    "draft-reports-raw-q": {
        "hunt": {"seed": 1, "i": 12, "refine_seed": 1, "refine_steps": 150},
        "case": {
            "draft": {"vocab_size": 3, "context_length": 0, "probs": {"": ["1/14", "2/7", "9/14"]}},
            "target": {"vocab_size": 3, "context_length": 0, "probs": {"": ["1/12", "5/12", "1/2"]}},
            "context": [],
            "tokens": 3,
            "request": {
                "temperature": "1/2",
                "top_k": 0,
                "top_p": "4/5",
                "penalty": "1",
                "gamma": 2,
                "verify": "block",
            },
        },
    },
    "draft-argmax-softmax-q": {
        "hunt": {"seed": 1, "i": 82, "refine_seed": None, "refine_steps": 0},
        "case": {
            "draft": {
                "vocab_size": 2,
                "context_length": 1,
                "probs": {"": ["1/9", "8/9"], "0": ["3/5", "2/5"], "1": ["1/2", "1/2"]},
            },
            "target": {
                "vocab_size": 2,
                "context_length": 1,
                "probs": {"": ["4/11", "7/11"], "0": ["1/8", "7/8"], "1": ["7/8", "1/8"]},
            },
            "context": [0],
            "tokens": 3,
            "request": {
                "temperature": "1/2",
                "top_k": 0,
                "top_p": "4/5",
                "penalty": "1",
                "gamma": 1,
                "verify": "block",
            },
        },
    },
    "target-default-params": {
        "hunt": {"seed": 1, "i": 45, "refine_seed": 1, "refine_steps": 150},
        "case": {
            "draft": {"vocab_size": 4, "context_length": 0, "probs": {"": ["1/13", "4/13", "1/13", "7/13"]}},
            "target": {"vocab_size": 4, "context_length": 0, "probs": {"": ["7/10", "1/10", "1/10", "1/10"]}},
            "context": [],
            "tokens": 3,
            "request": {
                "temperature": "1/2",
                "top_k": 3,
                "top_p": "4/5",
                "penalty": "1/2",
                "gamma": 2,
                "verify": "token",
            },
        },
    },
    "uniform-reused-for-residual": {
        "hunt": {"seed": 1, "i": 102, "refine_seed": 1, "refine_steps": 150},
        "case": {
            "draft": {
                "vocab_size": 4,
                "context_length": 1,
                "probs": {
                    "": ["1/3", "1/4", "7/24", "1/8"],
                    "0": ["8/15", "1/15", "2/5", "0"],
                    "1": ["4/11", "2/11", "3/11", "2/11"],
                    "2": ["0", "1/12", "5/24", "17/24"],
                    "3": ["10/31", "10/31", "9/31", "2/31"],
                },
            },
            "target": {
                "vocab_size": 4,
                "context_length": 1,
                "probs": {
                    "": ["5/23", "8/23", "8/23", "2/23"],
                    "0": ["0", "1", "0", "0"],
                    "1": ["1/5", "3/10", "1/6", "1/3"],
                    "2": ["3/19", "10/19", "1/19", "5/19"],
                    "3": ["3/22", "3/11", "4/11", "5/22"],
                },
            },
            "context": [0],
            "tokens": 3,
            "request": {
                "temperature": "1",
                "top_k": 0,
                "top_p": "9/10",
                "penalty": "1/2",
                "gamma": 2,
                "verify": "token",
            },
        },
    },
    "stream-positions-shared": {
        "hunt": {"seed": 1, "i": 75, "refine_seed": 1, "refine_steps": 150},
        "case": {
            "draft": {
                "vocab_size": 6,
                "context_length": 1,
                "probs": {
                    "": ["1/5", "1/5", "1/5", "1/5", "0", "1/5"],
                    "0": ["1/30", "1/5", "1/5", "1/5", "1/5", "1/6"],
                    "1": ["1/24", "0", "5/24", "1/6", "7/24", "7/24"],
                    "2": ["0", "3/23", "10/23", "0", "4/23", "6/23"],
                    "3": ["0", "3/26", "3/26", "7/26", "5/26", "4/13"],
                    "4": ["5/31", "2/31", "6/31", "3/31", "8/31", "7/31"],
                    "5": ["8/17", "1/17", "1/17", "5/17", "0", "2/17"],
                },
            },
            "target": {
                "vocab_size": 6,
                "context_length": 1,
                "probs": {
                    "": ["1/33", "1/11", "8/33", "4/33", "3/11", "8/33"],
                    "0": ["0", "1/16", "0", "0", "9/16", "3/8"],
                    "1": ["6/19", "3/19", "1/19", "3/19", "4/19", "2/19"],
                    "2": ["1/4", "1/16", "1/16", "1/16", "1/8", "7/16"],
                    "3": ["1/4", "1/12", "1/6", "1/4", "2/9", "1/36"],
                    "4": ["1/25", "0", "9/25", "4/25", "8/25", "3/25"],
                    "5": ["0", "1/21", "1/3", "1/3", "4/21", "2/21"],
                },
            },
            "context": [0],
            "tokens": 2,
            "request": {
                "temperature": "1",
                "top_k": 3,
                "top_p": "9/10",
                "penalty": "1/2",
                "gamma": 2,
                "verify": "token",
            },
        },
    },
    "accept-uniform-zero": {
        "hunt": {"seed": 1, "i": 81, "refine_seed": 1, "refine_steps": 150},
        "case": {
            "draft": {"vocab_size": 5, "context_length": 0, "probs": {"": ["4/11", "3/22", "3/22", "2/11", "2/11"]}},
            "target": {"vocab_size": 5, "context_length": 0, "probs": {"": ["1/13", "1/13", "1/13", "2/13", "8/13"]}},
            "context": [],
            "tokens": 2,
            "request": {"temperature": "1/2", "top_k": 0, "top_p": "1", "penalty": "1", "gamma": 1, "verify": "block"},
        },
    },
    "draft-as-point-mass": {
        "hunt": {"seed": 1, "i": 48, "refine_seed": 1, "refine_steps": 150},
        "case": {
            "draft": {
                "vocab_size": 5,
                "context_length": 1,
                "probs": {
                    "": ["2/15", "4/15", "1/5", "1/15", "1/3"],
                    "0": ["3/17", "5/17", "2/17", "1/17", "6/17"],
                    "1": ["3/10", "1/5", "0", "1/5", "3/10"],
                    "2": ["1/20", "3/20", "1/10", "9/20", "1/4"],
                    "3": ["1/9", "5/18", "1/18", "1/2", "1/18"],
                    "4": ["7/23", "5/23", "9/23", "1/23", "1/23"],
                },
            },
            "target": {
                "vocab_size": 5,
                "context_length": 1,
                "probs": {
                    "": ["0", "0", "1/4", "1/4", "1/2"],
                    "0": ["7/40", "7/40", "3/20", "9/40", "11/40"],
                    "1": ["9/35", "8/35", "9/35", "0", "9/35"],
                    "2": ["1/12", "5/12", "1/4", "1/6", "1/12"],
                    "3": ["4/19", "1/19", "1/19", "6/19", "7/19"],
                    "4": ["2/9", "1/6", "7/18", "1/6", "1/18"],
                },
            },
            "context": [0],
            "tokens": 2,
            "request": {"temperature": "1", "top_k": 3, "top_p": "1", "penalty": "1/2", "gamma": 2, "verify": "block"},
        },
    },
    "verify-argmax": {
        "hunt": {"seed": 1, "i": 94, "refine_seed": None, "refine_steps": 0},
        "case": {
            "draft": {"vocab_size": 4, "context_length": 0, "probs": {"": ["1/15", "3/5", "1/15", "4/15"]}},
            "target": {"vocab_size": 4, "context_length": 0, "probs": {"": ["1/18", "2/9", "4/9", "5/18"]}},
            "context": [],
            "tokens": 3,
            "request": {
                "temperature": "1/2",
                "top_k": 2,
                "top_p": "1",
                "penalty": "1/2",
                "gamma": 1,
                "verify": "block",
            },
        },
    },
    "penalty-per-step": {
        "hunt": {"seed": 1, "i": 38, "refine_seed": 1, "refine_steps": 150},
        "case": {
            "draft": {
                "vocab_size": 2,
                "context_length": 1,
                "probs": {"": ["3/10", "7/10"], "0": ["1/2", "1/2"], "1": ["2/3", "1/3"]},
            },
            "target": {
                "vocab_size": 2,
                "context_length": 1,
                "probs": {"": ["1", "0"], "0": ["1/3", "2/3"], "1": ["4/7", "3/7"]},
            },
            "context": [0],
            "tokens": 3,
            "request": {
                "temperature": "1/2",
                "top_k": 0,
                "top_p": "4/5",
                "penalty": "1/2",
                "gamma": 2,
                "verify": "token",
            },
        },
    },
    "block-token-residual": {
        # the block draw (`--hunt-draw block`, rheo.hunt_block), not refined: above 600 on every case with
        # γ <= 2 (its TV <= (5√5 - 11)/2, proofs claim 11.1); this one reaches 75/832
        "hunt": {"draw": "block", "seed": 1, "i": 15, "refine_seed": None, "refine_steps": 0},
        "case": {
            "draft": {
                "vocab_size": 6,
                "context_length": 1,
                "probs": {
                    "": ["1/4", "1/4", "1/9", "1/9", "1/36", "1/4"],
                    "0": ["1/12", "5/18", "5/36", "1/4", "1/4", "0"],
                    "2": ["8/13", "0", "0", "0", "5/13", "0"],
                    "1": ["0", "1/10", "9/10", "0", "0", "0"],
                    "5": ["0", "1/10", "9/10", "0", "0", "0"],
                    "3": ["3/20", "1/4", "3/10", "1/20", "1/4", "0"],
                    "4": ["4/37", "9/37", "9/37", "5/37", "5/37", "5/37"],
                },
            },
            "target": {
                "vocab_size": 6,
                "context_length": 1,
                "probs": {
                    "": ["9/23", "7/23", "4/23", "1/23", "0", "2/23"],
                    "0": ["0", "1", "0", "0", "0", "0"],
                    "2": ["0", "0", "0", "5/13", "8/13", "0"],
                    "1": ["3/8", "0", "5/8", "0", "0", "0"],
                    "5": ["3/8", "0", "5/8", "0", "0", "0"],
                    "3": ["10/39", "5/39", "8/39", "2/13", "1/39", "3/13"],
                    "4": ["5/27", "2/9", "1/27", "2/27", "1/3", "4/27"],
                },
            },
            "context": [0],
            "tokens": 3,
            "request": {
                "temperature": "1",
                "top_k": 0,
                "top_p": "9/10",
                "penalty": "1/2",
                "gamma": 2,
                "verify": "block",
            },
        },
    },
    "target-off-by-one": {
        "hunt": {"seed": 1, "i": 82, "refine_seed": 1, "refine_steps": 150},
        "case": {
            "draft": {
                "vocab_size": 2,
                "context_length": 1,
                "probs": {"": ["1/9", "8/9"], "0": ["2/7", "5/7"], "1": ["1/2", "1/2"]},
            },
            "target": {
                "vocab_size": 2,
                "context_length": 1,
                "probs": {"": ["4/11", "7/11"], "0": ["1/8", "7/8"], "1": ["7/8", "1/8"]},
            },
            "context": [0],
            "tokens": 3,
            "request": {
                "temperature": "1/2",
                "top_k": 0,
                "top_p": "4/5",
                "penalty": "1",
                "gamma": 1,
                "verify": "block",
            },
        },
    },
    "first-token-argmax": {
        "hunt": {"seed": 1, "i": 86, "refine_seed": None, "refine_steps": 0},
        "case": {
            "draft": {
                "vocab_size": 6,
                "context_length": 0,
                "probs": {"": ["1/13", "7/13", "0", "1/13", "3/13", "1/13"]},
            },
            "target": {
                "vocab_size": 6,
                "context_length": 0,
                "probs": {"": ["7/31", "5/31", "8/31", "6/31", "5/31", "0"]},
            },
            "context": [],
            "tokens": 2,
            "request": {
                "temperature": "1/2",
                "top_k": 0,
                "top_p": "9/10",
                "penalty": "1/2",
                "gamma": 1,
                "verify": "token",
            },
        },
    },
}

# The twenty algorithmic mutants' best hunted cases: `rheo.hunt.variant_case(mutant, seed, i)`, the
# fewest samples to convict among the first 40 of hunt seed 1 (`rheo mutants --hunt 40 --hunt-seed 1`);
# the float-level `leq-coin` and `float16` have none. `rheo mutants --fewest` takes the better of this
# and the gate case.
BEST_HUNTED: dict[str, dict] = {
    "proxy-true": {"seed": 1, "i": 39},
    "proxy-const": {"seed": 1, "i": 31},
    "verify-q-not-qtilde": {"seed": 1, "i": 22},
    "sample-whole-q": {"seed": 1, "i": 27},
    "residual-unnormalised": {"seed": 1, "i": 9},
    "stale-bonus": {"seed": 1, "i": 13},
    "one-hot-sampled": {"seed": 1, "i": 15},
    "bonus-full-p": {"seed": 1, "i": 13},
    "temp-sample-only": {"seed": 1, "i": 38},
    "fills-first": {"seed": 1, "i": 10},
    "traversal-bad-rate": {"seed": 1, "i": 28},
    "traversal-min-index-leaf": {"seed": 1, "i": 21},
    "traversal-stale-bonus": {"seed": 1, "i": 2},
    "specinfer-on-wor": {"seed": 1, "i": 17},
    "traversal-wrong-update": {"seed": 1, "i": 1},
    "sorted-siblings": {"seed": 1, "i": 35},
    "treespark-own-survival": {"seed": 1, "i": 16},
    "tsubame-plan-after-sampling": {"seed": 1, "i": 9},
}
