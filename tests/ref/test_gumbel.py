"""The exact law of Gumbel-max draws over shared noise (rheo_ref.gumbel) and of keyed speculative decoding.

The exact joint law is checked against its marginals (each draw alone has law w / Σw) and against Monte
Carlo; the speculative law against a direct simulation of the keyed decoder. Monte Carlo seeds are fixed
for reproducibility; every cell is checked at 5 standard errors (a false alarm ≈ 6e-7 a cell)."""

from __future__ import annotations

import math
import random
from fractions import Fraction as F
from pathlib import Path

import pytest

from rheo_ref.errors import CaseError
from rheo_ref.gumbel import pair_law, position_law, speculative_law, target_law
from rheo_ref.laws import tv
from rheo_ref.models import load_case

HF = str(Path(__file__).resolve().parents[1] / "cases" / "hf.json")
PAIRS = [
    ([F(1, 2), F(1, 3), F(1, 6)], [F(1, 5), F(0), F(4, 5)]),
    ([F(1, 4), F(1, 4), F(1, 2)], [F(1, 4), F(1, 4), F(1, 2)]),
    ([F(0), F(2, 3), F(1, 3)], [F(1, 2), F(1, 6), F(1, 3)]),
    ([F(1, 10), F(2, 5), F(3, 10), F(1, 5)], [F(3, 7), F(1, 7), F(0), F(3, 7)]),
]


def _argmax(w: list[F], g: list[float]) -> int:
    return max((i for i in range(len(w)) if w[i] > 0), key=lambda i: math.log(w[i]) + g[i])


def _gumbel(rng: random.Random, V: int) -> list[float]:
    return [-math.log(rng.expovariate(1.0)) for _ in range(V)]


def _within(freq: dict, law: dict, n: int) -> list[str]:
    bad = []
    for cell in set(freq) | set(law):
        pr = float(law.get(cell, 0))
        se = math.sqrt(max(pr * (1 - pr), 1 / n) / n)
        if abs(freq.get(cell, 0) / n - pr) > 5 * se:
            bad.append(f"{cell}: {freq.get(cell, 0) / n:.4f} vs exact {pr:.4f}")
    return bad


@pytest.mark.parametrize("a,b", PAIRS)
def test_pair_law_marginals_are_the_gumbel_max_laws(a: list[F], b: list[F]) -> None:
    law = pair_law(a, b)
    assert sum(law.values()) == 1
    for x in range(len(a)):
        assert sum(v for (i, _), v in law.items() if i == x) == a[x] / sum(a)
    for y in range(len(b)):
        assert sum(v for (_, j), v in law.items() if j == y) == b[y] / sum(b)


def test_pair_law_same_weights_is_the_diagonal() -> None:
    a = [F(1, 4), F(1, 4), F(1, 2)]
    assert pair_law(a, a) == {(i, i): a[i] for i in range(3)}


@pytest.mark.parametrize("a,b", PAIRS)
def test_pair_law_matches_monte_carlo(a: list[F], b: list[F]) -> None:
    rng, n, freq = random.Random(20261206), 40_000, {}
    for _ in range(n):
        g = _gumbel(rng, len(a))
        cell = (_argmax(a, g), _argmax(b, g))
        freq[cell] = freq.get(cell, 0) + 1
    assert not _within(freq, pair_law(a, b), n)


def test_pair_law_refuses_bad_weights() -> None:
    with pytest.raises(CaseError, match="weights must be >= 0"):
        pair_law([F(0), F(0)], [F(1), F(0)])
    with pytest.raises(CaseError, match="equally long"):
        pair_law([F(1)], [F(1), F(1)])


def test_independent_noise_position_is_token_level_verification() -> None:
    p, q = [F(6, 23), F(10, 23), F(3, 23), F(4, 23)], [F(11, 26), F(7, 26), F(5, 26), F(3, 26)]
    acc, rej = position_law(p, q, shared=False)
    assert [a + r for a, r in zip(acc, rej)] == p
    acc, rej = position_law(p, q, shared=True)
    assert sum(acc) + sum(rej) == 1
    assert [a + r for a, r in zip(acc, rej)] != p  # the shared-noise residual draw is not r


def _simulate(case, k: int, n: int, rng: random.Random) -> tuple[int, ...]:
    """One run of keyed speculative decoding, the draft and the residual at a position sharing noise."""
    ctx, out = list(case.context), []
    while len(out) < n:
        for _ in range(k):
            p, q = list(case.target.row(ctx)), list(case.draft.row(ctx))
            g = _gumbel(rng, len(p))
            x = _argmax(q, g)
            if rng.random() < min(1.0, float(p[x] / q[x])):
                out.append(x)
                ctx.append(x)
                if len(out) >= n:
                    return tuple(out[:n])
                continue
            r = [max(pi - qi, F(0)) for pi, qi in zip(p, q)]
            y = _argmax(r, g)
            out.append(y)
            ctx.append(y)
            break
        else:
            p = list(case.target.row(ctx))
            z = _argmax(p, _gumbel(rng, len(p)))
            out.append(z)
            ctx.append(z)
    return tuple(out[:n])


@pytest.mark.parametrize("k", [1, 2])
def test_speculative_law_matches_simulation(k: int) -> None:
    case = load_case(HF)
    rng, n, freq = random.Random(7 + k), 30_000, {}
    for _ in range(n):
        s = _simulate(case, k, 2, rng)
        freq[s] = freq.get(s, 0) + 1
    assert not _within(freq, speculative_law(case, k, 2, shared=True), n)
    assert _within(freq, target_law(case, 2), n)  # and the simulation tells it from the target law


def test_hf_case_shared_noise_is_lossy_independent_noise_is_not() -> None:
    case = load_case(HF)
    for n in (1, 2):
        target = target_law(case, n)
        for k in (1, 2, 3):
            assert speculative_law(case, k, n, shared=False) == target
    assert tv(speculative_law(case, 1, 1, shared=True), target_law(case, 1)) == F(170, 5313)
    assert tv(speculative_law(case, 1, 2, shared=True), target_law(case, 2)) == F(170, 5313)
    two = F(812956523733, 17442117604912)
    assert tv(speculative_law(case, 2, 2, shared=True), target_law(case, 2)) == two
    assert tv(speculative_law(case, 3, 2, shared=True), target_law(case, 2)) == two
