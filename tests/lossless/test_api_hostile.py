"""What the library API is handed is checked before anything runs (docs/GATE_REFERENCE.md, "What the API
refuses"): one `RheoError` subclass naming the bad value and what is allowed, before the sampler is
called wherever the value is known by then; never a raw TypeError / IndexError / ZeroDivisionError,
a hang, or a verdict about values the decoder never returned. One test per class of hostile input;
tests/test_fuzz_api.py draws them at random."""

from __future__ import annotations

import itertools
import random
import subprocess
import sys
from decimal import Decimal
from fractions import Fraction
from pathlib import Path

import numpy as np
import pytest
import torch
from helpers import load_json

import rheo
from rheo.lossless import validate
from rheo_ref.errors import CaseError, RheoError, SamplerOutputError, StatsError, TooLargeError
from rheo_ref.models import Case, TableModel

# p = (1/2, 1/4, 1/4) over V = 3, no context: at α = 1e-3, δ = 0.2 the gate draws N = 240 samples
CASE = Case.from_json({"target": {"vocab_size": 3, "context_length": 0, "probs": {"": ["1/2", "1/4", "1/4"]}}})
CASE3 = Case.from_json({**CASE.to_json(), "tokens": 3})
SMALL = Case.from_json(load_json("small.json"))
ARGS = dict(alpha=1e-3, tv=0.2, seed=1)


def exact(case: Case, seed: int, n: int) -> list[tuple[int, ...]]:
    """A lossless sampler of CASE's target (i.i.d. tokens from p)."""
    r = random.Random(seed)
    return [tuple(r.choices(range(3), [2, 1, 1], k=case.tokens)) for _ in range(n)]


def rows(case: Case, seed: int, n: int) -> np.ndarray:
    return np.array(exact(case, seed, n), dtype=np.int64)  # [n, tokens]


HOSTILE_OUTPUTS = {
    "None": lambda c, s, n: None,
    "an int": lambda c, s, n: 3,
    "a flat list (natural at tokens = 1)": lambda c, s, n: [x[0] for x in exact(c, s, n)],
    "a 1-D array": lambda c, s, n: rows(c, s, n)[:, 0],
    "a 3-D array": lambda c, s, n: rows(c, s, n)[:, :, None],
    "NaN tokens": lambda c, s, n: [(float("nan"),)] * n,
    "infinite tokens": lambda c, s, n: [(float("inf"),)] * n,
    "non-integral floats (int() would truncate them and pass)": lambda c, s, n: [
        tuple(t + 0.7 for t in x) for x in exact(c, s, n)
    ],
    "a float array": lambda c, s, n: rows(c, s, n).astype(np.float64),
    "strings": lambda c, s, n: ["0"] * n,
    "complex numbers": lambda c, s, n: [(1j,)] * n,
    "a bool tensor": lambda c, s, n: torch.zeros((n, 1), dtype=torch.bool),
    "a tensor on the meta device": lambda c, s, n: torch.zeros((n, 1), dtype=torch.long, device="meta"),
    "an endless generator": lambda c, s, n: itertools.repeat((0,)),
    "a dict": lambda c, s, n: {(0,): n},
}


@pytest.mark.parametrize("what", HOSTILE_OUTPUTS)
def test_a_sampler_output_that_is_not_token_sequences_is_refused_naming_it(what):
    with pytest.raises(SamplerOutputError) as e:
        rheo.assert_lossless(HOSTILE_OUTPUTS[what], CASE, **ARGS)
    msg = str(e.value)
    assert isinstance(e.value, RheoError) and "\n" not in msg
    assert "allowed" in msg or "num_samples" in msg, msg


def test_a_refused_token_is_named_with_its_sample_and_position():
    def one_bad(case, seed, n):
        out = [list(x) for x in exact(case, seed, n)]
        out[7][2] = 2.5
        return out

    with pytest.raises(SamplerOutputError, match=r"token 2 of the sampler's sample 7 is 2\.5 \(float\)"):
        rheo.assert_lossless(one_bad, CASE3, **ARGS)


def test_an_endless_sampler_is_read_only_to_n_plus_one_rows():
    read = []

    def endless(case, seed, n):
        read.append(n)
        for i in itertools.count():
            read.append(i)
            yield (0,)

    n = rheo.plan_samples(CASE, alpha=ARGS["alpha"], tv=ARGS["tv"])
    with pytest.raises(SamplerOutputError, match=f"more than num_samples={n}"):
        rheo.assert_lossless(endless, CASE, **ARGS)
    assert read[0] == n and len(read) - 1 == n + 1


def test_integer_arrays_and_tensors_of_shape_n_by_tokens_are_accepted():
    for make in (rows, lambda c, s, n: torch.from_numpy(rows(c, s, n)), lambda c, s, n: list(rows(c, s, n))):
        res = rheo.assert_lossless(make, CASE3, **ARGS)
        assert res.n == rheo.plan_samples(CASE3, alpha=1e-3, tv=0.2) and not res.rejected


@pytest.mark.parametrize(
    "lengths, needle",
    [
        (None, "first_lengths is None"),
        ("length", "first_lengths is 'length'"),
        ([1.5], r"first_lengths\[0\] is 1\.5"),
        ([0], r"first_lengths\[0\] is 0"),
        ([1, 1], "must hold"),
    ],
)
def test_wrong_rounds_fields_are_refused(lengths, needle):
    def sampler(case, seed, n):
        ls = lengths if not isinstance(lengths, list) else (lengths * n if len(lengths) == 1 else lengths)
        return rheo.Rounds([(0, 1, 2)] * n, ls)

    with pytest.raises(SamplerOutputError, match=needle):
        rheo.assert_lossless(sampler, SMALL, alpha=1e-3, tv=0.2, seed=1, horizon=3, rounds=True)


LAW = {(0,): Fraction(1, 2), (1,): Fraction(1, 4), (2,): Fraction(1, 4)}


@pytest.mark.parametrize(
    "samples, law, needle",
    [
        # negative counts cancel the impossible samples: the test passed with p = 1
        ({(0,): 10, (1,): 5, (2,): 5, (5,): 3, (6,): -3}, LAW, r"counts\[\(6,\)\]=-3 must be an integer >= 0"),
        ({(0,): 10.5, (1,): 5, (2,): 5}, LAW, r"counts\[\(0,\)\]=10.5 must be an integer"),
        ({0: 10, (1,): 5}, LAW, "counts key 0 .* must be a tuple"),
        ({(0,): 10, (1,): 5, (2,): 5}, {(0,): Fraction(3, 2), (1,): Fraction(-1, 2)}, r"law\[\(1,\)\] = .* >= 0"),
        ({(0,): 10, (1,): 5, (2,): 5}, {(0,): Fraction(1, 2), (1,): Fraction(1, 4)}, "sum to 0.75"),
        ({(0,): 10, (1,): 5, (2,): 5}, {0: Fraction(1, 2), 1: Fraction(1, 2)}, "law key 0 .* must be a tuple"),
        ({(0,): 10, (1,): 5, (2,): 5}, {(0,): float("nan"), (1,): 1.0}, r"law\[\(0,\)\] = nan"),
        ({(0,): 10, (1,): 5, (2,): 5}, [((0,), 1)], "must be a mapping"),
    ],
)
def test_check_law_refuses_bad_counts_and_malformed_laws(samples, law, needle):
    for check in (rheo.check_law, rheo.assert_law):
        with pytest.raises(RheoError, match=needle):
            check(samples, law, alpha=1e-3, tv=0.5)


class Recorder:
    """A sampler that records being called (it must not be, when the arguments are refused)."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, case, seed, n):
        self.calls += 1
        return exact(case, seed, n)


@pytest.mark.parametrize(
    "kwargs, error, needle",
    [
        (dict(tv=1e-200), TooLargeError, "samples the test needs at tv 1e-200"),  # ZeroDivisionError
        (dict(tv=1e-8), TooLargeError, "estimated ~8.6e16"),  # 1.7e17 samples asked of the sampler
        (dict(alpha=0.999), StatsError, "alpha < 1 - beta"),  # the root finder's ValueError
        (dict(tokens=40), TooLargeError, "tokens=40"),  # 3^40 outcomes enumerated
        (dict(statistic="chi"), StatsError, "statistic='chi'"),  # refused only after the sampler ran
        (dict(seed=-1), StatsError, "seed=-1"),
        (dict(seed=1.5), StatsError, "seed=1.5"),
        (dict(tokens=2.0), StatsError, "tokens=2.0"),
        (dict(horizon=3, tokens=2), StatsError, "give one"),
        (dict(horizon=2.5), CaseError, "horizon=2.5"),
        (dict(rounds=1, horizon=3), StatsError, "rounds=1"),
        (dict(alpha=1j), StatsError, "complex"),
        (dict(alpha=np.True_), StatsError, "boolean"),
        (dict(tv=Decimal("NaN")), StatsError, "not finite"),
        (dict(alpha=Decimal("1e-400")), StatsError, "rounds to 0"),
    ],
)
def test_extreme_or_malformed_arguments_are_refused_before_the_sampler_runs(kwargs, error, needle):
    s = Recorder()
    with pytest.raises(error, match=needle):
        rheo.assert_lossless(s, CASE, **{**ARGS, **kwargs})
    assert s.calls == 0


def test_the_size_limits_are_the_clis_and_force_lifts_them():
    import rheo.cli.gate as cli_hf

    assert not hasattr(cli_hf, "MAX_TOKENS") and not hasattr(cli_hf, "MAX_SAMPLES")  # the library checks them
    one = Case.from_json({"target": {"vocab_size": 2, "context_length": 0, "probs": {"": ["1", "0"]}}})
    zeros = lambda case, seed, n: np.zeros((n, case.tokens), dtype=np.int64)
    with pytest.raises(TooLargeError, match="force=True"):
        rheo.assert_lossless(zeros, one, alpha=1e-3, tv=0.2, seed=1, tokens=validate.MAX_TOKENS + 1)
    res = rheo.assert_lossless(zeros, one, alpha=1e-3, tv=0.2, seed=1, tokens=validate.MAX_TOKENS + 1, force=True)
    assert res.n == 21 and not res.rejected  # one outcome: (1 - 0.2)^21 <= 0.01
    with pytest.raises(TooLargeError, match="force=True"):
        rheo.plan_samples(CASE, alpha=1e-3, tv=1e-8)


def test_min_num_samples_is_exact_at_tiny_tv():
    from rheo.lossless.stats import min_num_samples

    assert min_num_samples(1e-200, 1e-3, 0.01, 2) > 10**400


def test_tokens_is_what_the_sampler_is_handed():
    """tokens=5 on a case that says 3: the sampler sees tokens=5 (as the horizon path does), so a
    sampler that returns case.tokens tokens passes instead of being refused for returning 3."""
    seen = []

    def sampler(case, seed, n):
        seen.append(case.tokens)
        return exact(case, seed, n)

    res = rheo.assert_lossless(sampler, CASE3, tokens=5, **ARGS)
    assert seen == [5] and res.label == "first 5 tokens vs target law"


def test_numeric_types_users_pass_are_taken_at_their_exact_value():
    for alpha in (np.float32(0.01), np.float16(0.01), np.array(0.01), torch.tensor(0.01), Decimal("0.01")):
        res = rheo.assert_lossless(exact, CASE, alpha=alpha, tv=Fraction(1, 5), seed=np.int64(1))
        assert res.alpha == float(alpha)  # np.float16(0.01) is 0.0100021..., its exact value
    seeds = []
    rheo.assert_lossless(lambda c, s, n: seeds.append(s) or exact(c, s, n), CASE3, tokens=np.int8(2), **ARGS)
    assert seeds == [1] and type(seeds[0]) is int
    case = Case(CASE.draft, CASE.target, CASE.scheme, (np.int64(0), np.uint8(2)), 1)
    assert case.context == (0, 2) and all(type(t) is int for t in case.context)
    with pytest.raises(CaseError, match=r"context token=0\.5 must be an integer"):
        Case(CASE.draft, CASE.target, CASE.scheme, (0.5,), 1)


@pytest.mark.parametrize(
    "ids, needle",
    [
        ([[0, 5]], r"input_ids\[0, 1\] = 5 is outside the vocabulary 0..2"),
        ([[0, -1]], r"input_ids\[0, 1\] = -1 is outside"),
        ([[0.0, 1.0]], "dtype torch.float32"),
        ([[]], "no tokens"),
        ([0, 1], r"shape \[2\]"),
    ],
)
def test_table_lm_names_an_out_of_vocabulary_id_and_its_position(ids, needle):
    pytest.importorskip("transformers")
    from rheo_fast.table_lm import table_lms

    _, target = table_lms(SMALL)
    t = torch.tensor(ids) if ids != [[]] else torch.zeros((1, 0), dtype=torch.long)
    with pytest.raises(CaseError, match=needle):
        target(t)


def test_the_kit_embedding_names_an_out_of_vocabulary_id_and_its_position():
    from rheo_fast.kit import table_embedding

    emb = table_embedding(3)
    with pytest.raises(CaseError, match=r"\[1, 0\] = 3 is outside the vocabulary 0..2"):
        emb(torch.tensor([[0, 1], [3, 0]]))
    with pytest.raises(CaseError, match=r"dtype torch\.float32"):
        emb(torch.tensor([[0.0]]))
    assert emb(torch.tensor([[2]])).shape == (1, 1, 6)


def test_table_lms_refuses_what_is_not_a_case():
    pytest.importorskip("transformers")
    from rheo_fast.table_lm import table_lms

    for bad in ("small.json", load_json("small.json"), None):
        with pytest.raises(CaseError, match=r"needs a rheo_ref\.models\.Case"):
            table_lms(bad)
    with pytest.raises(CaseError, match="no draft table"):
        table_lms(CASE)


@pytest.mark.parametrize(
    "args, needle",
    [((0,), "n=0"), ((-1,), "n=-1"), ((2.5,), "n=2.5"), ((1, "01"), "context '01'"), ((1, [7]), "outside")],
)
def test_target_law_refuses_what_is_not_a_token_count_or_a_context(args, needle):
    with pytest.raises(CaseError, match=needle):
        rheo.target_law(CASE, *args)


def test_plan_samples_refuses_zero_tokens():
    with pytest.raises(StatsError, match="tokens=0"):
        rheo.plan_samples(CASE, alpha=1e-3, tv=0.1, tokens=0)


def test_from_weights_refuses_power_zero():
    with pytest.raises(CaseError, match="power=0"):
        TableModel.from_weights({(): [1, 0, 2]}, context_length=0, power=0)


FAILING = """
import rheo

CASE = rheo.Case.from_json({"target": {"vocab_size": 3, "context_length": 0, "probs": {"": ["1/2", "1/4", "1/4"]}}})


def test_my_decoder(rheo_lossless):
    rheo_lossless(lambda case, seed, n: [(1,)] * n, CASE, alpha=1e-3, tv=0.2)
"""


def test_a_failing_gate_shows_the_users_test_and_the_verdict_not_rheos_frames(tmp_path):
    (tmp_path / "test_example.py").write_text(FAILING, encoding="utf-8")
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly", "test_example.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = r.stdout + r.stderr
    assert r.returncode == 1 and "1 failed" in out, out
    assert "def test_my_decoder" in out and "REJECT" in out and "LosslessError" in out, out
    rheo_root = str(Path(rheo.__file__).parent)
    assert rheo_root not in out, out
    assert not any(f"rheo/lossless/{m}.py" in out for m in ("stats", "horizon", "gate")), out
