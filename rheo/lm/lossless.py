"""Lossless check on the real models (a statistical gate, docs/ALGORITHM.md §6).

From a fixed prompt at T = 1, decode two tokens many times with a scheme and test with χ²
(rheo.lossless.stats.check_law: α stated, cells with expected count < 5 pooled, the smallest TV
detected with power 1 − β reported):
- the law of the first emitted token against p(·|prompt), one target forward;
- the law of the second token given each of the `top` most frequent first tokens against
  p(·|prompt, x), one forward each.
Each sample is a fresh decode (its own coins) from a copy of the prefilled state.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import torch

from rheo.lossless import validate
from rheo.lossless.stats import LawTest, law_test
from rheo_fast.lm import kvcache as kv
from rheo_fast.lm.decode import LMTreeModel, generate_tree
from rheo_ref.variants import SPEC, Variant, variant_named

PROMPT = "The capital of France is"  # p: " Paris" .77 (then " ," .68, "." .19, ...), " the" .065


@dataclass
class LosslessReport:
    tests: list[LawTest]
    n: int

    @property
    def rejected(self) -> bool:
        return any(t.rejected for t in self.tests)

    def summary(self) -> str:
        return "\n".join(t.summary() for t in self.tests)


@torch.inference_mode()
def exact_next(model: Any, ids: list[int], *, floor: float = 0.0) -> dict[tuple[int, ...], Fraction]:
    """p(·|ids) at T = 1 as a law over 1-tuples: every token of p > floor (check_law pools the small
    cells). The floor must stay 0 for a test: an outcome left out counts as impossible, and a
    sampled token of p = 1e-10 is not rare in aggregate: a bonus drawn in the compact vocabulary's
    bucket is drawn from p over ~45,000 tokens outside the draft's vocabulary, most of them tiny
    (a floor of 1e-9 once rejected a correct static-traversal decoder for emitting 'nas', p = 9.3e-10)."""
    cache = kv.new_cache(model)
    p = torch.softmax(kv.logits_of(model, kv.forward(model, cache, torch.tensor(ids))[-1:]).double(), -1)[0]  # [V]
    keep = (p > floor).nonzero()[:, 0].tolist()
    return {(t,): Fraction(float(p[t])) for t in keep}


def sample_pairs(
    lm: LMTreeModel, ids: list[int], scheme: Any, n: int, seed: int, variant: Variant = SPEC
) -> list[tuple[int, int]]:
    """n independent decodes of 2 tokens from ids (seeded generator, one stream for all)."""
    g = torch.Generator().manual_seed(seed)
    out = []
    for _ in range(n):
        r = generate_tree(lm, ids, scheme, max_new=2, generator=g, variant=variant)
        out.append((r.tokens[0], r.tokens[1]))
    return out


def lossless_check(
    target: Any,
    head: Any,
    scheme: Any,
    *,
    n: int,
    alpha: float,
    tv: float,
    beta: float = 0.01,
    top: int = 2,
    seed: int = 0,
    prompt: str = PROMPT,
    mutant: str | None = None,
) -> LosslessReport:
    """The χ² check of the module docstring; `mutant` names a broken variant (a negative control)."""
    alpha, beta, tv = validate.gate_rates(alpha, beta, tv, tv_one=True)  # once: each law_test below takes the floats
    model, tok = target.model, target.tokenizer
    ids = tok(prompt)["input_ids"]
    lm = LMTreeModel(model, head, T=1.0)
    pairs = sample_pairs(lm, ids, scheme, n, seed, variant_named(mutant))
    tests = [
        law_test([(a,) for a, _ in pairs], exact_next(model, ids), alpha=alpha, tv=tv, beta=beta, label="first token")
    ]
    for x, c in Counter(a for a, _ in pairs).most_common(top):
        seconds = [(b,) for a, b in pairs if a == x]
        tests.append(
            law_test(
                seconds,
                exact_next(model, ids + [x]),
                alpha=alpha,
                tv=tv,
                beta=beta,
                label=f"second token | first={tok.decode([x])!r} (N={c})",
            )
        )
    return LosslessReport(tests, n)
