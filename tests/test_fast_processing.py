"""The fast path's logits processing (`rheo_fast.processing`) is the reference's
(`rheo_ref.processing`, exact Fractions) on random tables with planted ties.

Each of 600 seeded draws: V in 2..8, four rows of small integer weights drawn from three shared
values (so ties at every cut-off are common), every setting at random (bias, repetition,
frequency, presence, temperature incl. greedy, top-k, top-p, min-p, each of the three orders),
random counts and seen sets. Agreement: the same support (which tokens are kept: every cut-off
decided as the reference decides it, ties included) and every probability within 1e-14 of the exact
one (float tolerance; 1.7e-16 measured). The planted ties matter: the reference's own code run on
plain floats (no tie rule) keeps a different support on some rows, which the test also requires.
"""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

torch = pytest.importorskip("torch")

from rheo.lossless.stats import seed_for  # noqa: E402
from rheo_fast import processing as fast  # noqa: E402
from rheo_ref import processing as ref  # noqa: E402
from rheo_ref.bugclasses.decoder import HARNESS_TIES, Request  # noqa: E402
from rheo_ref.errors import CaseError  # noqa: E402

F = Fraction
DRAWS = 600
ATOL = 1e-14  # |fast − exact| per probability


def draw(rng: random.Random):
    V, B = rng.randint(2, 8), 4
    vals = [rng.randint(0, 4) for _ in range(3)]
    rows = []
    for _ in range(B):
        w = [rng.choice([*vals, rng.randint(0, 9)]) for _ in range(V)]
        w[0] += sum(w) == 0
        rows.append(tuple(F(x, sum(w)) for x in w))
    req = Request(
        temperature=rng.choice([F(0), F(1), F(1), F(1, 2), F(1, 3)]),
        top_k=rng.randint(0, V),
        top_p=rng.choice([F(1), F(1, 2), F(7, 10), F(3, 10), F(4, 5), F(1, 3)]),
        penalty=rng.choice([F(1), F(1, 2), F(2, 3)]),
        min_p=rng.choice([F(0), F(1, 4), F(1, 3), F(1, 2)]),
        presence=rng.choice([F(1), F(1, 2)]),
        repetition=rng.randint(1, 3),
        bias=tuple((t, rng.choice([F(0), F(1, 2), F(1)])) for t in rng.sample(range(V), rng.randint(0, 2))),
        order=rng.choice(list(ref.ORDERS)),
        ties=rng.choice([HARNESS_TIES, "all", "low", "high", (("top_k", "low"), ("top_p", "all")), None]),
    )
    counts = [[rng.choice([0, 0, 1, 2]) for _ in range(V)] for _ in range(B)]
    seen = [[t for t in range(V) if rng.random() < 0.3] for _ in range(B)]
    return rows, req, counts, seen


def test_fast_processing_is_the_reference_on_random_tables_with_ties():
    rng = random.Random(seed_for("fast-processing|tables"))
    compared = naive_differs = 0
    worst = 0.0
    for _ in range(DRAWS):
        rows, req, counts, seen = draw(rng)
        try:
            want = [ref.process(r, req, c, s) for r, c, s in zip(rows, counts, seen)]
        except CaseError:  # a row of zero mass after bias (banned tokens): refused on both sides
            with pytest.raises(CaseError):
                fast.process(_tensor(rows), req, torch.tensor(counts), _seen(seen, len(rows[0])))
            continue
        got = fast.process(_tensor(rows), req, torch.tensor(counts), _seen(seen, len(rows[0])))
        for b, w in enumerate(want):
            exact = torch.tensor([float(x) for x in w], dtype=torch.float64)
            assert torch.equal(exact > 0, got[b] > 0), (rows[b], req, counts[b], seen[b], w, got[b])
            worst = max(worst, float((exact - got[b]).abs().max()))
            compared += 1
            try:
                naive = ref.process(tuple(float(x) for x in rows[b]), req, counts[b], seen[b])
                naive_differs += [x > 0 for x in naive] != [x > 0 for x in w]
            except CaseError:
                naive_differs += 1
    assert compared > 1500 and worst <= ATOL, (compared, worst)
    assert naive_differs > 0  # the draws do plant ties that plain floats decide wrongly


def _tensor(rows):
    return torch.tensor([[float(x) for x in r] for r in rows], dtype=torch.float64)


def _seen(seen, V):
    m = torch.zeros(len(seen), V, dtype=torch.bool)
    for b, s in enumerate(seen):
        m[b, s] = True
    return m


def test_each_fast_processor_and_its_ties():
    w = _tensor([(F(1, 10), F(2, 10), F(2, 10), F(5, 10))])
    assert fast.top_k(w, 2, "all").tolist() == [[0, 0.2, 0.2, 0.5]]  # ties with the k-th kept
    assert fast.min_p(w, F(2, 5)).tolist() == [[0, 0.2, 0.2, 0.5]]  # 0.2 = 0.4 · 0.5: kept
    assert fast.top_p(w, F(7, 10), "high").tolist() == [[0, 0, 0.2, 0.5]]  # tie: the higher id kept
    assert fast.temperature(_tensor([(F(3), F(3), F(1))]), F(0)).tolist() == [[1, 0, 0]]  # argmax: lower id
    # a tie that float rounding breaks (0.3·(2/3) vs 0.4·(1/2)) is still a tie: the lower id is dropped
    r = fast.frequency(
        fast.logit_bias(_tensor([(F(3, 10), F(4, 10), F(3, 10))]), [(1, F(1, 2))]), torch.tensor([[1, 0, 0]]), F(2, 3)
    )
    assert float(r[0, 0]) != float(r[0, 1])
    assert fast.top_p(r, F(7, 10), "high")[0].tolist()[:2] == [0, float(r[0, 1])]
    with pytest.raises(CaseError, match="a root"):
        fast.repetition(_tensor([(F(2), F(1))]), torch.tensor([[True, False]]), 2)
    with pytest.raises(CaseError, match="zero mass"):
        fast.normalise(torch.zeros(1, 2, dtype=torch.float64))
