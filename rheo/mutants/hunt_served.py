"""The served-decoder draw of `rheo mutants --hunt --hunt-draw served` (docs/GATE_REFERENCE.md, "The fewest
samples"): cases for the classes that need a setting, a grammar, reported logprobs, coins on a
grid or a draft tree (classes 15–28), which the random draw (`rheo.mutants.hunt.random_case`:
temperature, top-k, top-p and a frequency penalty only, no grammar, no tree) cannot show.

Case i of seed s is drawn from `random.Random(f"hunt-served|{s}|{i}")`:

- V ∈ {3, 4}, context length 1, prompt (0,), 3 tokens; draft weights 0–9, target weights 1–9
  (every token possible, so a grammar's mask always leaves mass);
- one draw in four is *dyadic* (the boundary class: coins on the grid {k/16} can land on a
  cumulative sum): every row's weights sum to 8, the request sets nothing, token verification;
- otherwise the request draws every setting (`rheo_ref.bugclasses.decoder.Request`): T ∈ {1, 1/2},
  top-k ∈ {0, 2}, top-p ∈ {1, 4/5, 7/10}, min-p ∈ {0, 1/4}, frequency ρ, presence π ∈ {1, 1/2},
  repetition θ ∈ {1, 2}, a logit bias of 1/2 on one token or none, the order (transformers, vLLM,
  SGLang); verification token (γ ∈ {1, 2}) or tree (γ = 1: two branches of one token, so its
  exact law stays cheap); and half the time a grammar of 2 or 3 states, each allowing 2..V tokens,
  the next states at random.

A cell of this draw is keyed by (`served`, seed, i) in hunt.jsonl and holds the rows of the
classes that are not seams (`kind != "seam"`), each where the case admits it.
"""

from __future__ import annotations

import random
from fractions import Fraction

from rheo_ref.bugclasses.cases import BugCase
from rheo_ref.bugclasses.decoder import Request
from rheo_ref.constraint import Constraint
from rheo_ref.models import TableModel

ORDERS = ("transformers", "vllm", "sglang")
F = Fraction


def _dyadic(rng: random.Random, V: int) -> list[int]:
    """Integer weights over V tokens summing to 8 (cumulative sums on the grid {k/16})."""
    w = [0] * V
    for _ in range(8):
        w[rng.randrange(V)] += 1
    return w


def _grammar(rng: random.Random, V: int) -> Constraint:
    S = rng.choice((2, 3))
    allowed = [sorted(rng.sample(range(V), rng.randint(2, V))) for _ in range(S)]
    nxt = [{str(t): rng.randrange(S) for t in ok} for ok in allowed]
    return Constraint.from_json({"allowed": allowed, "next": nxt})


def served_case(seed: int, i: int) -> BugCase:
    """The i-th case of the served draw of hunt seed `seed` (module docstring)."""
    rng = random.Random(f"hunt-served|{seed}|{i}")
    V = rng.choice((3, 4))
    keys = [(), *((t,) for t in range(V))]
    dyadic = rng.random() < 0.25

    def table(name: str, low: int) -> TableModel:
        rows = {k: _dyadic(rng, V) if dyadic else [rng.randint(low, 9) for _ in range(V)] for k in keys}
        for w in rows.values():
            if not any(w):
                w[rng.randrange(V)] = 1
        return TableModel.from_weights(rows, context_length=1, name=name)

    draft, target = table("draft", 0), table("target", 1)
    if dyadic:
        return BugCase(draft, target, (0,), 3, Request(gamma=rng.choice((1, 2))))
    verify = rng.choice(("token", "token", "tree"))
    req = Request(
        temperature=rng.choice((F(1), F(1, 2))),
        top_k=rng.choice((0, 2)),
        top_p=rng.choice((F(1), F(4, 5), F(7, 10))),
        penalty=rng.choice((F(1), F(1, 2))),
        gamma=1 if verify == "tree" else rng.choice((1, 2)),
        verify=verify,
        min_p=rng.choice((F(0), F(1, 4))),
        presence=rng.choice((F(1), F(1, 2))),
        repetition=rng.choice((1, 2)),
        bias=rng.choice(((), ((rng.randrange(V), F(1, 2)),))),
        order=rng.choice(ORDERS),
    )
    constraint = _grammar(rng, V) if rng.random() < 0.5 else None
    return BugCase(draft, target, (0,), 3, req, constraint)
