"""Checks of what the gate's API is handed, made before the sampler runs wherever the value is known
by then: rates, integers, the sizes the CLI caps, a sampler's output, counts and exact laws.

Each bad value raises one `RheoError` subclass whose one-line message names the value (and, for a
sampler's output, the sample and token it sits at) and what is allowed:
- `rate`, `whole`, `rates`, `gate_rates`: numbers users really pass are taken at their exact value (int, float,
  `Fraction`, `Decimal`, numpy scalars of every width, 0-d arrays and tensors); a boolean, a
  string, a complex number, NaN or infinity is refused with that reason;
- `gate_size`, `planned_samples`: the limits of `rheo gate-hf` (docs/CLI.md): the API's, which the CLI
  hands its flags to (`force=True` lifts them in the API);
- `sampler_rows`: a sampler returns N token sequences: a list or tuple (or any iterable: at most
  N + 1 items are read) of lists, tuples or 1-D integer arrays, or a numpy / torch integer array of
  shape (N, tokens), or an object with `tokens` (`rheo.Rounds`, rheo_fast's `Decoded`); a token is
  an integer (int, numpy or torch integer), never a float (not even 2.0: `int()` would truncate
  2.7 into a verdict about values the decoder never returned), a string, a bool or None;
- `sample_counts`, `exact_law`: what `check_law` / `assert_law` are handed.

No torch and no numpy here: arrays are recognised by their `dtype`, `ndim`, `shape` and `tolist`.
"""

from __future__ import annotations

import math
import numbers
import operator
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from decimal import Decimal
from fractions import Fraction
from itertools import islice
from typing import Any

from rheo_ref.errors import CaseError, SamplerOutputError, StatsError
from rheo_ref.validate import index, is_bool, label, show, within_limit

MAX_TOKENS = 64  # tokens per sample (the exact law grows as b^tokens), from --tokens / tokens= or the case
MAX_CONTEXT = 1024  # tokens of the case's context (TableLM runs a forward pass over all of them)
MAX_SAMPLES = 10**6  # samples one test may ask a sampler for
LAW_SUM_TOLERANCE = 1e-9  # an exact law's entries sum to 1 within this (laws built from float64 rows)
ROWS = (
    "allowed: N token sequences (a list or tuple of lists / tuples of integer token ids, a numpy or torch "
    "integer array of shape (N, tokens), or rheo.Rounds)"
)


# --- numbers ----------------------------------------------------------------------------------


def plain(value: Any) -> Any:
    """A numpy scalar, 0-d array or 0-d tensor as the Python number it holds; anything else unchanged."""
    if getattr(value, "ndim", None) == 0 and hasattr(value, "item") and not isinstance(value, (int, float)):
        try:
            return value.item()
        except Exception:  # a meta tensor holds no value: refused as what it is
            return value
    return value


def exact_real(value: Any) -> Fraction | None:
    """The exact value of a finite real number (int, float, Fraction, Decimal, numpy scalar), else None."""
    v = plain(value)
    if is_bool(v):
        return None
    try:
        if isinstance(v, Decimal):
            return Fraction(v) if v.is_finite() else None
        if isinstance(v, (int, Fraction)):
            return Fraction(v)
        if isinstance(v, numbers.Real):
            return Fraction(float(v))  # a float is exact as a Fraction; NaN and infinities raise
    except (ValueError, OverflowError, TypeError):
        return None
    return None


def _why_not_real(value: Any) -> str:
    v = plain(value)
    if is_bool(v):
        return "a boolean is not a number"
    if isinstance(v, numbers.Complex) and not isinstance(v, numbers.Real):
        return "a complex number is not a real number"
    if isinstance(v, (float, Decimal)) or isinstance(v, numbers.Real):
        return "it is not finite"
    return f"a {type(value).__name__} is not a number (int, float, Fraction, Decimal or a numpy scalar)"


def rate(name: str, value: Any, *, one: bool = False) -> float:
    """A probability strictly between 0 and 1 (with `one`: 1 allowed), as the float nearest its
    exact value; a value that float64 rounds to 0 or 1 is refused."""
    exact = exact_real(value)
    allowed = "strictly between 0 and 1" if not one else "in (0, 1]"
    if exact is None:
        raise StatsError(f"{label(name, value)} must be a number {allowed}: {_why_not_real(value)}")
    if not (0 < exact < 1 or (one and exact == 1)):
        raise StatsError(f"{label(name, value)} must be a number {allowed}")
    f = float(exact)
    if f == 0.0 or (f == 1.0 and exact != 1):
        raise StatsError(f"{label(name, value)} rounds to {f:g} in float64; allowed: a number {allowed} that does not")
    return f


def rates(alpha: Any, beta: Any) -> tuple[float, float]:
    """(α, β) as floats; also refuses α ≥ 1 − β: such a test rejects a correct decoder at least as
    often as a wrong one, so no N gives it power 1 − β (the noncentrality is 0)."""
    a, b = rate("alpha", alpha), rate("beta", beta)
    if a >= 1 - b:
        raise StatsError(
            f"alpha={show(alpha)} with beta={show(beta)}: a false-alarm probability alpha >= the power 1 - beta "
            "is no test; allowed: alpha < 1 - beta"
        )
    return a, b


def gate_rates(alpha: Any, beta: Any, tv: Any, *, tv_one: bool = False) -> tuple[float, float, float]:
    """(α, β, δ) as floats: the one check of a test's rates, made once at each public entry (`check_law`,
    `samples_for`, `check_lossless`, `plan_samples`, ...); the helpers those call take the floats it returns
    and check nothing again. `tv_one`: δ = 1 allowed (a law's planner: every sample off the law)."""
    a, b = rates(alpha, beta)
    return a, b, rate("tv", tv, one=tv_one)


def whole(name: str, value: Any, *, min: int | None = None, max: int | None = None, error: type = StatsError) -> int:
    """`value` as an int: an int or a numpy / torch integer (not a bool, not a float, even 2.0), in range."""
    return index(name, value, min=min, max=max, error=error)


def boolean(name: str, value: Any) -> bool:
    """A switch (`force=`, `rounds=`): True or False only (not 0, 1 or a string such as "no")."""
    if not isinstance(value, bool):
        raise StatsError(f"{label(name, value)} must be True or False")
    return value


def case(value: Any) -> Any:
    """A `rheo_ref.models.Case`, returned as given."""
    from rheo_ref.models import Case

    if not isinstance(value, Case):
        raise StatsError(
            f"case must be a rheo_ref.models.Case (use Case.from_json or load_case), got {type(value).__name__}"
        )
    return value


def statistic(value: Any, allowed: Sequence[str]) -> str:
    if not isinstance(value, str) or value not in allowed:
        raise StatsError(f"statistic={show(value)}; allowed: {', '.join(allowed)}")
    return value


# --- sizes the CLI caps -------------------------------------------------------------------------


def _names(flags: bool) -> tuple[Any, str]:
    """How a size refusal names an argument and how to go past it: the CLI's flags or the API's keywords."""
    if flags:
        return (lambda s: f"--{s}"), "a larger --tv or --alpha, or a smaller 1 - --beta"
    return (lambda s: s), "a larger tv or alpha, a smaller 1 - beta, or force=True to run anyway"


def gate_size(
    case: Any,
    tokens: int,
    *,
    needed: int,
    alpha: float,
    tv: float,
    beta: float,
    force: bool = False,
) -> None:
    """Refuse up front what the gate cannot pay for (the API and `rheo gate`, which hands its flags to the
    API and names them in the refusal): more than MAX_TOKENS tokens or MAX_CONTEXT context tokens, an exact
    law over `rheo exact`'s size limit, `needed` samples (a lower bound: the two-cell χ² test's N,
    `rheo.lossless.stats.min_num_samples(tv, alpha, beta, 2)`) over MAX_SAMPLES. `force`: no limit. `tokens`
    and the rates are the caller's, checked there (`gate_call`, `plan_samples`)."""
    from rheo_ref.exact import DEFAULT_MAX_LAW_SIZE, check_law_size

    if force:
        return
    within_limit(f"tokens={tokens}: tokens per sample", tokens, MAX_TOKENS, override="force=True to run anyway")
    if len(case.context) > MAX_CONTEXT:
        raise CaseError(
            f"the case's context has {len(case.context):,} tokens; allowed: at most {MAX_CONTEXT:,} "
            "(force=True to run anyway)"
        )
    check_law_size(
        case, tokens, DEFAULT_MAX_LAW_SIZE, name="tokens", override="use fewer tokens, or force=True to run anyway"
    )
    samples_lower_bound(needed, alpha=alpha, tv=tv, beta=beta)


def samples_lower_bound(
    needed: int,
    *,
    alpha: float,
    tv: float,
    beta: float,
    flags: bool = False,
    limit: int = MAX_SAMPLES,
    what: str = "samples the test needs",
) -> None:
    """Refuse rates whose two-cell χ² test needs `needed` samples (a lower bound on any test's N) over `limit`."""
    name, override = _names(flags)
    within_limit(
        f"{what} at {name('tv')} {tv:g}, {name('alpha')} {alpha:g}, {name('beta')} {beta:g} (at least)",
        needed,
        limit,
        override=override,
    )


def sample_limit(force: Any) -> int | None:
    """The N past which the planner need not search (`samples_for(..., limit=)`): MAX_SAMPLES, or
    None under force=True."""
    return None if force else MAX_SAMPLES


def planned_samples(n: int, *, alpha: float, tv: float, beta: float, force: bool = False) -> int:
    """Refuse a planned N over MAX_SAMPLES (the law's cells can ask for more than the lower bound)."""
    if not force:
        within_limit(
            f"samples the test needs at tv {tv:g}, alpha {alpha:g}, beta {beta:g} on this law",
            n,
            MAX_SAMPLES,
            override=_names(False)[1],
        )
    return n


# --- what a sampler returns ----------------------------------------------------------------------


def _token(t: Any, where: str) -> int:
    if type(t) is int:
        return t
    if is_bool(t):
        raise SamplerOutputError(f"{where} is {show(t)}: a boolean is not a token id; allowed: integer token ids")
    try:
        return operator.index(t)  # numpy and torch integers
    except TypeError:
        pass
    what = type(t).__name__
    if isinstance(t, float) or exact_real(t) is not None or isinstance(plain(t), float):
        why = "a token id is an integer; a float (even a whole one) is refused, not truncated"
    else:
        why = f"a {what} is not a token id"
    raise SamplerOutputError(f"{where} is {show(t)} ({what}): {why}; allowed: integer token ids (int, numpy or torch)")


def _array(x: Any) -> bool:
    return hasattr(x, "dtype") and hasattr(x, "ndim") and hasattr(x, "tolist")


def _integer_dtype(dtype: Any) -> bool | None:
    """True for an integer dtype, False for bool / float / complex / other, None for numpy's object dtype."""
    kind = getattr(dtype, "kind", None)
    if isinstance(kind, str):  # numpy
        return None if kind == "O" else kind in "iu"
    return str(dtype).rsplit(".", 1)[-1].startswith(("int", "uint"))  # torch (and others): int64, uint8, ...


def _array_values(x: Any, where: str, ndim: int, shape_text: str) -> list:
    """An integer array's values as nested lists, after checking where it lives, its dtype and rank."""
    if getattr(x, "is_meta", False) or str(getattr(x, "device", "")) == "meta":
        raise SamplerOutputError(f"{where} is a tensor on the meta device, which holds no values; {ROWS}")
    ok = _integer_dtype(x.dtype)
    if ok is False:
        raise SamplerOutputError(f"{where} is an array of dtype {x.dtype}; allowed: an integer dtype ({shape_text})")
    if x.ndim != ndim:
        shape = tuple(getattr(x, "shape", ()))
        hint = " (at tokens = 1 too: one column per sample, x[:, None])" if ndim == 2 and x.ndim == 1 else ""
        raise SamplerOutputError(f"{where} is an array of shape {shape}; allowed: {shape_text}{hint}")
    try:
        return x.tolist()
    except Exception as e:  # a sparse tensor, a device that cannot copy out
        raise SamplerOutputError(f"{where}: its values cannot be read ({type(e).__name__}: {e}); {ROWS}") from None


def _row(s: Any, i: int, n_tok: int | None, what: str) -> tuple[int, ...]:
    where = f"sample {i}"
    if _array(s):
        s = _array_values(s, f"{what}'s {where}", 1, "a 1-D integer array of token ids")
    elif isinstance(s, (str, bytes, bytearray, Mapping)) or not isinstance(s, Sequence):
        flat = " (a flat list of tokens is refused: return one sequence per sample, e.g. [(t,) for t in ...])"
        raise SamplerOutputError(
            f"{what}'s {where} is {show(s)} ({type(s).__name__}), not a sequence of token ids"
            f"{flat if exact_real(s) is not None or is_bool(s) else ''}; {ROWS}"
        )
    if n_tok is not None and len(s) < n_tok:
        raise SamplerOutputError(
            f"{what}'s {where} has {len(s)} tokens {show(list(s))}; the sampler must return at least {n_tok}"
        )
    part = s if n_tok is None else s[:n_tok]
    return tuple(_token(t, f"token {j} of {what}'s {where}") for j, t in enumerate(part))


def sampler_rows(batch: Any, n_tok: int | None, n: int | None, *, what: str = "the sampler") -> list[tuple[int, ...]]:
    """The n token sequences `batch` holds, each cut to its first `n_tok` tokens (None: no count, no cut);
    at most n + 1 items of an iterable are read."""
    if hasattr(batch, "tokens") and hasattr(batch, "first_lengths"):
        batch = batch.tokens
    if _array(batch):
        shape = "shape (N, tokens)" if n is None else f"shape ({n}, >= {n_tok})"
        rows = _array_values(batch, f"{what}'s output", 2, f"an integer array of {shape}")
        if n is not None and len(rows) != n:
            raise SamplerOutputError(f"{what} returned {len(rows)} sequences for num_samples={n}")
        return [_row(r, i, n_tok, what) for i, r in enumerate(rows)]
    if (
        batch is None
        or isinstance(batch, (str, bytes, bytearray, Mapping, set, frozenset))
        or not isinstance(batch, Iterable)
    ):
        raise SamplerOutputError(f"{what} returned {show(batch)} ({type(batch).__name__}); {ROWS}")
    items = list(batch) if n is None else list(islice(iter(batch), n + 1))
    if n is not None and len(items) > n:
        raise SamplerOutputError(
            f"{what} returned more than num_samples={n} sequences (read {n + 1}, stopped there); {ROWS}"
        )
    if n is not None and len(items) < n:
        raise SamplerOutputError(f"{what} returned {len(items)} sequences for num_samples={n}")
    return [_row(s, i, n_tok, what) for i, s in enumerate(items)]


def first_lengths(value: Any, n: int) -> list[int]:
    """`Rounds.first_lengths`: n integers >= 1 (a list, tuple or 1-D integer array)."""
    if _array(value):
        value = _array_values(value, "first_lengths", 1, f"a 1-D integer array of {n} lengths")
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Sequence):
        raise SamplerOutputError(
            f"rounds=True: first_lengths is {show(value)} ({type(value).__name__}); allowed: {n} integers >= 1"
        )
    if len(value) != n:
        raise SamplerOutputError(f"rounds=True: first_lengths must hold {n} lengths >= 1, got {len(value)}")
    out = [_token(x, f"first_lengths[{i}]") for i, x in enumerate(value)]
    bad = next((i for i, x in enumerate(out) if x < 1), None)
    if bad is not None:
        raise SamplerOutputError(f"rounds=True: first_lengths[{bad}] is {out[bad]}; allowed: lengths >= 1")
    return out


# --- what check_law / assert_law are handed -------------------------------------------------------


def sample_counts(samples: Any) -> Counter:
    """Sequences (as `sampler_rows` reads them, no count) or a mapping from token tuples to counts
    (non-negative integers) -> a Counter of token tuples."""
    if not isinstance(samples, Mapping):
        return Counter(sampler_rows(samples, None, None, what="samples"))
    counts: Counter = Counter()
    for key, c in samples.items():
        if not isinstance(key, tuple):
            raise SamplerOutputError(f"counts key {show(key)} ({type(key).__name__}) must be a tuple of token ids")
        row = tuple(_token(t, f"token {j} of counts key {show(key)}") for j, t in enumerate(key))
        counts[row] += whole(f"counts[{show(key)}]", c, min=0, error=SamplerOutputError)
    return counts


def exact_law(law: Any) -> Mapping:
    """A law: a mapping from token tuples to finite probabilities >= 0 that sum to 1 (within
    LAW_SUM_TOLERANCE); returned as given."""
    if not isinstance(law, Mapping):
        raise StatsError(f"law {show(law)} ({type(law).__name__}) must be a mapping from token tuples to probabilities")
    if not law:
        raise StatsError("the law is empty; allowed: a mapping from token tuples to probabilities that sum to 1")
    total = []
    for key, p in law.items():
        if not isinstance(key, tuple):
            raise StatsError(f"law key {show(key)} ({type(key).__name__}) must be a tuple of token ids")
        for j, t in enumerate(key):
            _token(t, f"token {j} of law key {show(key)}")
        v = exact_real(p) if type(p) is not Fraction else p
        if v is None or v < 0:
            raise StatsError(f"law[{show(key)}] = {show(p)} must be a finite number >= 0 (a probability)")
        total.append(float(v))
    s = math.fsum(total)
    if not abs(s - 1) <= LAW_SUM_TOLERANCE:
        raise StatsError(f"the law's probabilities sum to {s:.12g}; allowed: 1 (within {LAW_SUM_TOLERANCE:g})")
    return law
