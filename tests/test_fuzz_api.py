"""No input gets past the library API unchecked: a fuzzing harness over what downstream tests hand
rheo (docs/GATE_REFERENCE.md, "What the API refuses"), beside tests/test_fuzz.py's harness over the CLI.

Hypothesis draws hostile samplers (outputs of every shape: None, scalars, strings, flat lists, 1-D /
3-D arrays, float / bool / object / complex arrays, meta tensors, short rows, too few or endless
rows, tokens that are NaN, floats, strings, complex, bools, huge or negative, `Rounds` with wrong
fields) and hostile arguments (α, β, δ, tokens, seed, horizon, rounds, statistic, force as every
type users pass: numpy scalars of every width, 0-d arrays and tensors, Decimal, Fraction, bools,
strings, None, NaN, tiny and huge values), and hostile counts and laws for `check_law`, and asserts
the API's contract:

- the call returns a record, or raises a `RheoError` subclass with a one-line message; never any
  other exception, never a hang (a SIGALRM guard fails the example after `HANG_S` seconds);
- an argument refused before sampling leaves the sampler uncalled (only the sampler's output and
  the verdict are judged after it runs);
- an output holding anything but integer tokens never gets a verdict (it is a `SamplerOutputError`);
- valid generated outputs (integer arrays, tensors, lists, tuples of the exact law's draws) are
  read, never refused, so the harness cannot pass by refusing everything.

Profiles as tests/test_fuzz.py: the default tries `n` examples per test, nightly
(RHEO_HYPOTHESIS_PROFILE=nightly) 10x as many; inputs that once failed are `@example`s.
"""

from __future__ import annotations

import itertools
import math
import os
import random
import signal
from contextlib import contextmanager
from decimal import Decimal
from fractions import Fraction

import numpy as np
import pytest
import torch
from helpers import load_json
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import rheo
from rheo_ref.errors import RheoError, SamplerOutputError
from rheo_ref.models import Case

SCALE = 10 if os.environ.get("RHEO_HYPOTHESIS_PROFILE") == "nightly" else 1
HANG_S = 30  # seconds one input may take (an accepted one takes milliseconds)
CASE = Case.from_json({"target": {"vocab_size": 3, "context_length": 0, "probs": {"": ["1/2", "1/4", "1/4"]}}})
SMALL = Case.from_json(load_json("small.json"))  # a scheme, context length 1: horizon and rounds
P = [2, 1, 1]  # CASE's target weights


def fuzz(n: int):
    return settings(
        max_examples=n * SCALE, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
    )


class Hang(BaseException):
    """An input ran past HANG_S seconds (a BaseException: no handler of rheo's may swallow it)."""


@contextmanager
def hang_guard():
    def alarm(signum, frame):
        raise Hang(f"ran past {HANG_S} s")

    old = signal.signal(signal.SIGALRM, alarm)
    signal.alarm(HANG_S)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def contract(call):
    """Run `call()`; return the record, or the RheoError it raised after checking its message (one
    line; a rejection's verdict adds its diagnosis lines). Any other exception fails the example."""
    with hang_guard():
        try:
            return call()
        except rheo.LosslessError as e:
            assert str(e).strip(), repr(e)
            return e
        except RheoError as e:
            msg = str(e)
            assert msg.strip() and "\n" not in msg, repr(msg)
            return e


# --- hostile values ---------------------------------------------------------------------------

NUMBERS = st.one_of(
    st.sampled_from(
        [
            None,
            True,
            False,
            np.True_,
            0,
            1,
            -1,
            2,
            10**18,
            2**64,
            10**400,
            0.0,
            -0.0,
            0.5,
            1.0,
            1e-200,
            1e-320,
            5e-324,
            1e-8,
            0.999,
            0.99,
            float("nan"),
            float("inf"),
            1j,
            complex(0.1, 0),
            "0.1",
            "",
            b"1",
            [0.1],
            (0.1,),
            {},
            Decimal("0.01"),
            Decimal("NaN"),
            Decimal("1e-400"),
            Decimal("-0.1"),
            Fraction(1, 3),
            Fraction(10**50 + 1, 10**51),
            np.float16(0.01),
            np.float32(0.05),
            np.float64(0.2),
            np.longdouble(0.1),
            np.int8(3),
            np.uint64(2**63),
            np.int64(-1),
            np.array(0.1),
            np.array([0.1]),
            np.array(3),
            torch.tensor(0.1),
            torch.tensor(2),
            torch.tensor([0.1]),
            torch.tensor(0.1, device="meta"),
        ]
    ),
    st.floats(),
    st.integers(-(2**70), 2**70),
    st.fractions(),
    st.decimals(),
)
RATE = st.one_of(st.floats(1e-6, 0.5), NUMBERS)
TOKEN = st.one_of(
    st.integers(0, 2),
    st.integers(0, 2),
    st.sampled_from(
        [-1, 3, 2**63, -(2**70), 2**70, 0.0, 1.0, 2.7, float("nan"), float("inf"), "0", b"1", None, True, 1j]
        + [np.int8(1), np.uint16(2), np.int64(0), np.float32(1.0), np.bool_(False), Decimal(1), Fraction(1, 2)]
        + [torch.tensor(1), torch.tensor(1.0), (0,)]
    ),
)
KEY_TOKEN = TOKEN  # every TOKEN is hashable (a law's or a count's key holds them)


def is_token(t) -> bool:
    """What the API reads as a token id: an int or a numpy / torch integer (not a bool)."""
    if isinstance(t, torch.Tensor):
        return t.dim() == 0 and not t.is_floating_point() and t.dtype != torch.bool
    return (type(t) is int) or isinstance(t, np.integer)


def draws(tokens: int, n: int, seed: int) -> list[tuple[int, ...]]:
    r = random.Random(seed)
    return [tuple(r.choices(range(3), P, k=tokens)) for _ in range(n)]


@st.composite
def hostile_output(draw):
    """(description, valid, make): make(n, tokens, seed) -> what the sampler returns."""
    kind = draw(
        st.sampled_from(
            ["valid", "valid", "tokens", "container", "array", "count", "short rows", "scalar", "endless", "rounds"]
        )
    )
    if kind == "valid":
        form = draw(
            st.sampled_from(["list of tuples", "list of lists", "numpy", "torch", "tuple", "generator", "rows"])
        )

        def make(n, tokens, seed):
            rows = draws(tokens, n, seed)
            if form == "list of lists":
                return [list(r) for r in rows]
            if form == "numpy":
                return np.array(rows, dtype=draw_dtype)
            if form == "torch":
                return torch.tensor(rows, dtype=torch.int64)
            if form == "tuple":
                return tuple(rows)
            if form == "generator":
                return (r for r in rows)
            if form == "rows":
                return [np.array(r, dtype=np.int32) for r in rows]
            return rows

        draw_dtype = draw(st.sampled_from([np.int8, np.int16, np.int32, np.int64, np.uint8, np.uint64]))
        return f"valid {form}", True, make
    if kind == "tokens":  # valid draws with some tokens replaced by hostile ones
        bad = draw(st.lists(st.tuples(st.integers(0, 300), st.integers(0, 3), TOKEN), min_size=1, max_size=3))

        def make(n, tokens, seed):
            rows = [list(r) for r in draws(tokens, n, seed)]
            for i, j, t in bad:
                rows[i % n][j % tokens] = t
            return rows

        return f"tokens {bad!r}", None if all(is_token(t) for _, _, t in bad) else False, make
    if kind == "container":
        c = draw(st.sampled_from(["flat", "dict", "set", "str", "bytes", "nested", "strings"]))

        def make(n, tokens, seed):
            rows = draws(tokens, n, seed)
            return {
                "flat": [r[0] for r in rows],
                "dict": dict.fromkeys(rows, 1),
                "set": set(rows),
                "str": "0" * n,
                "bytes": b"\x00" * n,
                "nested": [[list(r)] for r in rows],
                "strings": [",".join(map(str, r)) for r in rows],
            }[c]

        return f"container {c}", False, make
    if kind == "array":
        dtype = draw(st.sampled_from(["float64", "float32", "bool", "object", "complex64", "int64", "int8"]))
        ndim = draw(st.sampled_from([0, 1, 2, 2, 3]))
        lib = draw(st.sampled_from(["numpy", "torch", "meta"]))

        def make(n, tokens, seed):
            a = np.array(draws(tokens, n, seed), dtype=np.int64)
            a = {0: a[0, 0], 1: a[:, 0], 2: a, 3: a[:, :, None]}[ndim]
            a = np.asarray(a).astype(dtype)
            if lib == "numpy" or dtype == "object":
                return a
            t = torch.from_numpy(np.ascontiguousarray(a.astype("int64" if dtype == "int8" else dtype)))
            return t.to("meta") if lib == "meta" else t

        if dtype == "object" and ndim == 2:
            valid = None  # an object array of ints is read as rows of ints
        else:
            valid = ndim == 2 and dtype in ("int64", "int8") and lib != "meta"
        return f"{lib} array {dtype} ndim {ndim}", valid, make
    if kind == "count":
        delta = draw(st.sampled_from([-1, 1, -(10**9), 5]))

        def make(n, tokens, seed):
            return draws(tokens, max(n + delta, 0), seed)

        return f"{delta:+d} rows", False, make
    if kind == "short rows":
        return "short rows", False, lambda n, tokens, seed: [r[: tokens - 1] for r in draws(tokens, n, seed)]
    if kind == "scalar":
        v = draw(NUMBERS)
        return f"scalar {v!r}", False, lambda n, tokens, seed: v
    if kind == "endless":
        return "endless", False, lambda n, tokens, seed: itertools.cycle(draws(tokens, 3, seed))
    lengths = draw(st.sampled_from([None, "x", [1.5], [0], [True], [2**70], [np.int64(1)], [torch.tensor(1)]]))

    def make(n, tokens, seed):
        ls = lengths * n if isinstance(lengths, list) else lengths
        return rheo.Rounds(draws(tokens, n, seed), ls)

    return f"rounds first_lengths {lengths!r}", None, make


# --- the harness ------------------------------------------------------------------------------


@fuzz(120)
@given(out=hostile_output(), tokens=st.sampled_from([1, 2]))
@example(out=("endless", False, lambda n, tokens, seed: itertools.repeat((0,))), tokens=1)
@example(
    out=("+0.7", False, lambda n, tokens, seed: [tuple(t + 0.7 for t in r) for r in draws(tokens, n, seed)]), tokens=1
)
def test_assert_lossless_on_hostile_sampler_outputs(out, tokens):
    what, valid, make = out
    calls: list = []

    def sampler(case, seed, n):
        calls.append(n)
        return make(n, case.tokens, seed)

    case = CASE if tokens == 1 else Case.from_json({**CASE.to_json(), "tokens": tokens})
    res = contract(lambda: rheo.assert_lossless(sampler, case, alpha=1e-3, tv=0.2, seed=7))
    assert len(calls) == 1, what
    if valid:  # read, never refused (a verdict, whichever)
        assert not isinstance(res, SamplerOutputError), (what, res)
    if valid is False:  # no verdict on anything but integer rows of the right count and length
        assert isinstance(res, SamplerOutputError), (what, res)


@fuzz(60)
@given(out=hostile_output())
def test_the_horizon_test_with_rounds_on_hostile_outputs(out):
    what, valid, make = out
    calls: list = []

    def sampler(case, seed, n):
        calls.append(n)
        res = make(n, case.tokens, seed)
        return res if isinstance(res, rheo.Rounds) else rheo.Rounds(res, [1] * n)

    res = contract(lambda: rheo.assert_lossless(sampler, SMALL, alpha=1e-3, tv=0.25, seed=3, horizon=3, rounds=True))
    if valid is False and not what.startswith("rounds"):
        assert isinstance(res, SamplerOutputError), (what, res)


ARG_NAMES = ("alpha", "beta", "tv", "tokens", "seed", "statistic", "horizon", "rounds", "force")


@st.composite
def hostile_arguments(draw):
    """Keyword arguments of assert_lossless with one to three replaced by hostile values."""
    kw: dict = {"alpha": 1e-3, "tv": 0.2, "seed": 5}
    for name in draw(st.lists(st.sampled_from(ARG_NAMES), min_size=1, max_size=3, unique=True)):
        if name in ("alpha", "beta", "tv"):
            kw[name] = draw(RATE)
        elif name == "statistic":
            kw[name] = draw(st.one_of(st.sampled_from(["pearson", "g", "chi", "", "G", None]), NUMBERS))
        elif name in ("rounds", "force"):
            kw[name] = draw(st.one_of(st.booleans(), NUMBERS))
        else:  # tokens, seed, horizon: small ones run (milliseconds), large ones are refused up front
            kw[name] = draw(st.one_of(st.integers(-3, 5), st.sampled_from([40, 64, 65, 70, 10**18]), NUMBERS))
    if kw.get("force") is True:  # what force=True lets through really runs: keep it small
        if isinstance(kw.get("tokens"), int) and kw["tokens"] > 5:
            kw["tokens"] = 5
        if not isinstance(kw.get("tv"), float) or not 0.05 <= kw["tv"] < 1:
            kw["tv"] = 0.2
    return kw


@fuzz(150)
@given(kw=hostile_arguments())
@example(kw={"alpha": 1e-3, "tv": 1e-200, "seed": 5})  # ZeroDivisionError
@example(kw={"alpha": 0.999, "tv": 0.2, "seed": 5})  # the root finder's ValueError
@example(kw={"alpha": 1e-3, "tv": 1e-8, "seed": 5})  # asked the sampler for 1.7e17 samples
@example(kw={"alpha": 1e-3, "tv": 0.2, "seed": 5, "tokens": 40})  # enumerated 3^40 outcomes
@example(kw={"alpha": np.float32(0.01), "tv": 0.2, "seed": 5})  # "not strictly between 0 and 1"
def test_assert_lossless_on_hostile_arguments(kw):
    calls: list = []

    def sampler(case, seed, n):
        calls.append((seed, n))
        assert type(seed) is int and 0 <= seed < 2**64 and type(n) is int and n >= 1
        return draws(case.tokens, n, seed)

    case = SMALL if kw.get("rounds") is True or "horizon" in kw else CASE
    res = contract(lambda: rheo.assert_lossless(sampler, case, **kw))
    if isinstance(res, RheoError) and not isinstance(res, (rheo.LosslessError, SamplerOutputError)):
        assert not calls, ("refused after the sampler ran", kw, res)


@fuzz(100)
@given(
    counts=st.one_of(
        st.dictionaries(
            st.one_of(st.tuples(KEY_TOKEN), st.tuples(st.integers(0, 2)), KEY_TOKEN),
            st.one_of(st.integers(-5, 50), NUMBERS),
            max_size=5,
        ),
        st.lists(st.one_of(st.tuples(st.integers(0, 2)), st.tuples(TOKEN), TOKEN), max_size=30),
        NUMBERS,
    ),
    law=st.one_of(
        st.just({(0,): Fraction(1, 2), (1,): Fraction(1, 4), (2,): Fraction(1, 4)}),
        st.dictionaries(
            st.one_of(st.tuples(st.integers(0, 3)), KEY_TOKEN),
            st.one_of(st.fractions(-1, 2), NUMBERS.filter(lambda v: not isinstance(v, (list, dict)))),
            max_size=4,
        ),
        NUMBERS,
    ),
    kw=hostile_arguments(),
)
@example(counts={(0,): 10, (1,): 5, (2,): 5, (5,): 3, (6,): -3}, law={(0,): 1}, kw={"alpha": 1e-3, "tv": 0.5})
def test_check_law_on_hostile_counts_laws_and_rates(counts, law, kw):
    kw = {k: v for k, v in kw.items() if k in ("alpha", "beta", "tv", "statistic")}
    res = contract(lambda: rheo.check_law(counts, law, **kw))
    if isinstance(res, rheo.LawTest):  # a record only for non-negative integer counts of a law summing to 1
        assert res.n >= 1 and math.isfinite(res.alpha)
        assert abs(math.fsum(float(p) for p in law.values()) - 1) <= 1e-9


@fuzz(60)
@given(
    n=st.one_of(st.integers(-2, 8), NUMBERS),
    context=st.one_of(st.none(), st.lists(TOKEN, max_size=3), NUMBERS),
    kw=hostile_arguments(),
)
def test_target_law_and_plan_samples_on_hostile_arguments(n, context, kw):
    contract(lambda: rheo.target_law(SMALL, n, context))
    kw = {k: v for k, v in kw.items() if k in ("alpha", "beta", "tv", "tokens")}
    contract(lambda: rheo.plan_samples(CASE, **kw))


@pytest.fixture(scope="module")
def table_lm():
    pytest.importorskip("transformers")
    from rheo_fast.table_lm import table_lms

    return table_lms(SMALL)[1]


@fuzz(40)
@given(
    ids=st.one_of(
        st.lists(st.lists(st.integers(-3, 5), min_size=0, max_size=3), min_size=1, max_size=2).filter(
            lambda x: len({len(r) for r in x}) == 1
        ),
        st.lists(st.integers(-3, 5), max_size=3),
    ),
    dtype=st.sampled_from([torch.int64, torch.int32, torch.uint8, torch.float32, torch.bool]),
)
def test_table_lm_and_the_kit_on_hostile_ids(table_lm, ids, dtype):
    from rheo_fast.kit import table_embedding

    if dtype == torch.uint8 and any(x < 0 for x in np.ravel(ids)):
        return
    t = torch.tensor(ids, dtype=dtype)
    res = contract(lambda: table_lm(t))
    flat = np.ravel(ids)
    if (
        dtype in (torch.int64, torch.int32, torch.uint8)
        and t.dim() == 2
        and t.shape[1]
        and all(0 <= x < 3 for x in flat)
    ):
        assert not isinstance(res, RheoError), (ids, res)
    else:
        assert isinstance(res, RheoError), (ids, dtype)
    contract(lambda: table_embedding(3)(t))
