"""Table models and cases: docs/ALGORITHM.md §10 (the JSON exchange format).

A table model maps the last `context_length` tokens of a context to an exact probability row
(a tuple of `Fraction`s over the whole vocabulary). A case names the draft (`q_rank`), the
optional sampling draft (`q_samp`, default: the draft), the target (`p`), the start context,
the number of tokens and the scheme (docs/ALGORITHM.md §2).
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, TypeVar

from . import numbers
from .constraint import Constraint
from .errors import CaseError
from .family import SchemeLike, scheme_from_json
from .validate import check_fields, index, is_int, show

Row = tuple[Fraction, ...]
Context = tuple[int, ...]

MAX_CASE_BYTES = 256 * 2**20  # a case file is read whole; V = 50 with context_length 2 is under 1 MiB


def exact_number(text: str, where: str) -> Fraction:
    """A rational from its text ("1/3", "0.25", "2e-3"): the one number grammar of
    `rheo_ref.numbers` (ASCII digits, bounded length and exponent); CaseError otherwise."""
    return numbers.rational(text, where)


def parse_prob(value: Any, where: str) -> Fraction:
    """Read one probability exactly: "1/3", "0.25", "0", "1" (strings) or ints; never floats."""
    if isinstance(value, bool) or not isinstance(value, (str, int, Fraction)):
        raise CaseError(
            f'{where}: probability {show(value)} must be a string such as "1/3" or "0.25" (floats are not exact)'
        )
    f = exact_number(value, where) if isinstance(value, str) else Fraction(value)
    if f < 0:
        raise CaseError(f"{where}: probability {show(value)} is negative; entries must be >= 0")
    return f


def context_key(context: Sequence[int], context_length: int) -> str:
    """The table key of a context: its last `context_length` tokens, comma-joined."""
    tail = tuple(context)[-context_length:] if context_length > 0 else ()
    return ",".join(str(t) for t in tail)


@dataclass(frozen=True)
class TableModel:
    """An exact conditional distribution given by a table (docs/ALGORITHM.md §10)."""

    vocab_size: int
    context_length: int
    probs: Mapping[str, Row]
    name: str = "model"

    def __post_init__(self) -> None:
        if not is_int(self.vocab_size) or self.vocab_size < 1:
            raise CaseError(f"{self.name}: vocab_size {show(self.vocab_size)} must be an integer >= 1")
        if not is_int(self.context_length) or self.context_length < 0:
            raise CaseError(f"{self.name}: context_length {show(self.context_length)} must be an integer >= 0")
        for key, row in self.probs.items():
            where = f"{self.name} row {show(key)}"
            toks = _parse_key(key, where)
            if len(toks) > self.context_length:
                raise CaseError(f"{where}: key has {len(toks)} tokens, more than context_length {self.context_length}")
            bad = [t for t in toks if t >= self.vocab_size]
            if bad:
                raise CaseError(f"{where}: context token {bad[0]} is outside the vocabulary 0..{self.vocab_size - 1}")
            if len(row) != self.vocab_size:
                raise CaseError(f"{where}: row has {len(row)} entries, vocab_size is {self.vocab_size}")
            if any(not isinstance(x, Fraction) or x < 0 for x in row):
                raise CaseError(f"{where}: entries must be non-negative Fractions, got {show([str(x) for x in row])}")
            total = sum(row, Fraction(0))
            if total != 1:
                raise CaseError(f"{where}: row sums to {total}, must be exactly 1")

    @classmethod
    def from_json(cls, obj: Any, name: str = "model") -> TableModel:
        check_fields(obj, f"{name} table", ("vocab_size", "context_length", "probs"))
        probs = obj["probs"]
        if not isinstance(probs, dict):
            raise CaseError(f"{name}: probs must be an object from context keys to rows, got {type(probs).__name__}")
        rows: dict[str, Row] = {}
        for key, row in probs.items():
            where = f"{name} row {show(key)}"
            if not isinstance(row, list):
                raise CaseError(f"{where}: must be a list of probabilities, got {type(row).__name__}")
            ckey = _canonical_key(key, where)
            if ckey in rows:
                raise CaseError(f"{where}: the context {show(ckey)} has two rows; allowed: one row per context")
            rows[ckey] = tuple(parse_prob(x, f"{where}[{i}]") for i, x in enumerate(row))
        return cls(obj["vocab_size"], obj["context_length"], rows, name)

    @classmethod
    def from_rows(
        cls, rows: Mapping[Any, Sequence[Any]], *, context_length: int | None = None, name: str = "model"
    ) -> TableModel:
        """Build from Python: keys are tuples of tokens (or key strings), values rows of rationals."""
        conv: dict[str, Row] = {}
        lengths = []
        for key, row in rows.items():
            if isinstance(key, str):
                skey = _canonical_key(key, f"{name} row {show(key)}")
            else:
                skey = ",".join(str(int(t)) for t in key)
            lengths.append(len(_parse_key(skey, name)))
            conv[skey] = tuple(
                x if isinstance(x, Fraction) else parse_prob(x, f"{name} row {show(skey)}[{i}]")
                for i, x in enumerate(row)
            )
        if not conv:
            raise CaseError(f"{name}: no rows given")
        v = len(next(iter(conv.values())))
        L = max(lengths) if context_length is None else context_length
        return cls(v, L, conv, name)

    @classmethod
    def from_weights(
        cls,
        weights: Mapping[Any, Sequence[int]],
        *,
        context_length: int | None = None,
        name: str = "model",
        power: int = 1,
    ) -> TableModel:
        """Build from non-negative integer weights per context, each row normalised; `power` raises
        the weights first (2: the rows at temperature 1/2)."""
        index("power", power, min=1)  # power 0 makes every row uniform, whatever its weights
        rows = {}
        for key, w in weights.items():
            if any(isinstance(x, bool) or not isinstance(x, int) or x < 0 for x in w) or not any(w):
                raise CaseError(f"{name} row {key!r}: weights {list(w)} must be non-negative integers, not all 0")
            w = [x**power for x in w]
            rows[key] = tuple(Fraction(x, sum(w)) for x in w)
        return cls.from_rows(rows, context_length=context_length, name=name)

    def row(self, context: Sequence[int]) -> Row:
        key = context_key(context, self.context_length)
        try:
            return self.probs[key]
        except KeyError:
            raise CaseError(
                f"{self.name}: reachable context {show(list(context))} (key {show(key)}) has no row"
            ) from None

    def to_json(self) -> dict:
        return {
            "vocab_size": self.vocab_size,
            "context_length": self.context_length,
            "probs": {k: [str(x) for x in r] for k, r in self.probs.items()},
        }


def _parse_key(key: str, where: str) -> Context:
    return numbers.context_key(key, where)


def _canonical_key(key: str, where: str) -> str:
    return ",".join(str(t) for t in _parse_key(key, where))


@dataclass(frozen=True)
class Proxy:
    """The factor rule of the sampled slot (docs/ALGORITHM.md §3): rheo, true, const:a, scaled:s."""

    kind: str
    value: Fraction | None = None

    @classmethod
    def parse(cls, text: Any) -> Proxy:
        if isinstance(text, Proxy):
            return text
        if not isinstance(text, str):
            raise CaseError(f"proxy {show(text)} must be a string: rheo, true, const:<rational>, scaled:<rational>")
        if text in ("rheo", "true"):
            return cls(text)
        head, _, arg = text.partition(":")
        if head in ("const", "scaled") and arg:
            v = exact_number(arg, f"proxy {show(text)}")
            if head == "const" and not (0 < v <= 1):
                raise CaseError(
                    f"proxy {show(text)}: the constant must be in (0, 1] (factors above 1 break the tree's closure)"
                )
            if head == "scaled" and v <= 0:
                raise CaseError(f"proxy {show(text)}: the scale must be > 0")
            return cls(head, v)
        raise CaseError(f"unknown proxy {show(text)}; allowed: rheo, true, const:<rational>, scaled:<rational>")

    @property
    def number(self) -> Fraction:
        """The rational of `const:a` / `scaled:s`."""
        if self.value is None:
            raise CaseError(f"proxy {self.kind} has no number")
        return self.value

    def __str__(self) -> str:
        return self.kind if self.value is None else f"{self.kind}:{self.value}"


AnyScheme = SchemeLike  # a scheme of any registered family (rheo_ref.family)
S = TypeVar("S")


class Missing:
    """An optional part of a case that the case file leaves out (its `scheme`, its `draft`): reading any
    attribute of it raises a CaseError that names the part, so code that needs it stops with one clear
    line and code that does not (a target law, a decoder that brings its own draft) never notices."""

    def __init__(self, part: str, needed_by: str) -> None:
        self._part, self._needed_by = part, needed_by

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)  # copy / pickle probes
        raise CaseError(f"this case has no {self._part!r}; {self._needed_by}")

    def __repr__(self) -> str:
        return f"Missing({self._part!r})"


NEEDS = {
    "scheme": "add a scheme object (docs/ALGORITHM.md §10): rheo's exact laws and every scheme's decoder need one",
    "draft": "add a draft table (docs/ALGORITHM.md §10): only decoders that bring their own draft run without one",
}


def missing(part: str) -> Any:
    """The stand-in of an absent `scheme` or `draft` (see `Missing`)."""
    return Missing(part, NEEDS[part])


def present(part: Any) -> bool:
    return not isinstance(part, Missing)


@dataclass(frozen=True)
class Case:
    """A complete exact problem: models, start context, number of tokens, scheme."""

    draft: TableModel
    target: TableModel
    scheme: AnyScheme
    context: Context = ()
    tokens: int = 1
    draft_sample: TableModel | None = None
    constraint: Constraint | None = None  # a grammar (rheo_ref.constraint): the target law is then masked

    def __post_init__(self) -> None:
        if isinstance(self.context, (str, bytes)) or not isinstance(self.context, Sequence):
            raise CaseError(f"context {show(self.context)} must be a sequence of token ids")
        object.__setattr__(self, "context", tuple(index("context token", t) for t in self.context))
        object.__setattr__(self, "tokens", index("tokens", self.tokens, min=1))
        V = self.target.vocab_size
        for mod in (self.draft, self.draft_sample):
            if mod is not None and present(mod) and mod.vocab_size != V:
                raise CaseError(f"vocabulary sizes differ: {mod.name} has {mod.vocab_size}, target has {V}")
        for t in self.context:
            if not is_int(t) or not 0 <= t < V:
                raise CaseError(f"context token {show(t)} is outside the vocabulary 0..{V - 1}")
        if not is_int(self.tokens) or self.tokens < 1:
            raise CaseError(f"tokens={show(self.tokens)} must be an integer >= 1")
        if present(self.scheme):
            self.scheme.check_vocab(V)
        if self.constraint is not None:
            if not isinstance(self.constraint, Constraint):
                raise CaseError(
                    f"constraint must be a rheo_ref.constraint.Constraint, got {type(self.constraint).__name__}"
                )
            self.constraint.check_vocab(V)

    @property
    def vocab_size(self) -> int:
        return self.target.vocab_size

    def scheme_as(self, kind: type[S]) -> S:
        """The scheme, for code that runs one family only (refuses a scheme of another family)."""
        if not isinstance(self.scheme, kind):
            want = getattr(kind, "family", kind.__name__)
            raise CaseError(f"this needs a scheme of family {want}; the case's is family {self.scheme.family!r}")
        return self.scheme

    @property
    def sees(self) -> int:
        """How many of a context's last tokens any of the case's models can see."""
        return max(m.context_length for m in (self.draft, self.q_samp_model, self.target) if present(m))

    def visible(self, context: Context) -> Context:
        """The last tokens of a context that any of the case's models can see: round laws and
        everything below a tree node depend on the context only through them."""
        L = self.sees
        return tuple(context)[-L:] if L else ()

    @property
    def q_samp_model(self) -> TableModel:
        return self.draft_sample if self.draft_sample is not None else self.draft

    def with_scheme(self, **changes: Any) -> Case:
        d = self.scheme.to_json()
        d.update({k: (str(v) if k == "proxy" else v) for k, v in changes.items()})
        return replace(self, scheme=scheme_from_json(d))

    @classmethod
    def from_json(cls, obj: Any) -> Case:
        check_fields(obj, "case", ("target",), ("draft", "scheme", "draft_sample", "context", "tokens", "constraint"))
        ctx = obj.get("context", [])
        if not isinstance(ctx, list):
            raise CaseError(f"context {show(ctx)} must be a list of token ids")
        ds = obj.get("draft_sample")
        return cls(
            draft=TableModel.from_json(obj["draft"], "draft") if "draft" in obj else missing("draft"),
            target=TableModel.from_json(obj["target"], "target"),
            scheme=scheme_from_json(obj["scheme"]) if "scheme" in obj else missing("scheme"),
            context=tuple(ctx),
            tokens=obj.get("tokens", 1),
            draft_sample=None if ds is None else TableModel.from_json(ds, "draft_sample"),
            constraint=Constraint.from_json(obj["constraint"]) if "constraint" in obj else None,
        )

    def to_json(self) -> dict:
        out: dict[str, Any] = {"draft": self.draft.to_json() if present(self.draft) else None}
        out.update(target=self.target.to_json(), context=list(self.context), tokens=self.tokens)
        if present(self.scheme):
            out["scheme"] = self.scheme.to_json()
        if out["draft"] is None:
            del out["draft"]
        if self.draft_sample is not None:
            out["draft_sample"] = self.draft_sample.to_json()
        if self.constraint is not None:
            out["constraint"] = self.constraint.to_json()
        return out


def load_case(path: str) -> Case:
    """Read a case file; every problem becomes one `CaseError` line."""
    return Case.from_json(read_json_file(path, "case file"))


MAX_NESTING = 64  # JSON nesting of a user file: a case nests 4, a grid 6


def read_json_file(path: str, what: str, max_bytes: int = MAX_CASE_BYTES) -> Any:
    """The strict JSON (`parse_json`) of a regular file of at most `max_bytes`, read in UTF-8: a
    folder, a FIFO, a device (`/dev/zero`) or a larger file is refused before it is read."""
    text = read_text_file(path, what, max_bytes)
    return parse_json(text, show(path))


def read_text_file(path: str, what: str, max_bytes: int) -> str:
    """The UTF-8 text of a regular file of at most `max_bytes` (no FIFO, device or folder)."""
    allowed = f"allowed: a readable regular file of at most {max_bytes // 2**20} MiB, in UTF-8"
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO must not block the open
    except (OSError, ValueError) as e:  # ValueError: a NUL in the path
        reason = getattr(e, "strerror", None) or str(e)
        raise CaseError(f"cannot read {what} {show(path)}: {reason}; {allowed}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise CaseError(f"cannot read {what} {show(path)}: not a regular file; {allowed}")
        if st.st_size > max_bytes:
            raise CaseError(f"{what} {show(path)} has {st.st_size:,} bytes; {allowed}")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            data = fh.read(max_bytes + 1)
    except OSError as e:
        raise CaseError(f"cannot read {what} {show(path)}: {e.strerror or e}; {allowed}") from None
    finally:
        os.close(fd)
    if len(data) > max_bytes:
        raise CaseError(f"{what} {show(path)} has more than {max_bytes:,} bytes; {allowed}")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise CaseError(f"{what} {show(path)}: not UTF-8 text (byte {e.start}); {allowed}") from None


def parse_json(text: str, where: str) -> Any:
    """Strict JSON: no NaN or Infinity, no duplicate keys, numbers within `rheo_ref.numbers`'
    bounds, nesting at most MAX_NESTING levels (refused with its depth, before decoding)."""
    if text.count("[") + text.count("{") > MAX_NESTING and _nesting(text) > MAX_NESTING:
        raise CaseError(f"{where}: JSON nested {_nesting(text):,} levels deep; allowed: at most {MAX_NESTING}")
    try:
        return json.loads(
            text,
            parse_constant=_no_constant,
            object_pairs_hook=_no_duplicates,
            parse_int=numbers.json_int,
            parse_float=numbers.json_float,
        )
    except CaseError as e:
        raise CaseError(f"{where}: {e}") from None
    except json.JSONDecodeError as e:
        raise CaseError(f"{where}: not JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    except RecursionError:
        raise CaseError(f"{where}: JSON nested too deep; allowed: at most {MAX_NESTING} levels") from None
    except ValueError as e:  # an integer literal over Python's digit limit
        raise CaseError(f"{where}: not usable JSON ({str(e).split(';')[0]}); allowed: a case of section 10") from None


def _nesting(text: str) -> int:
    """Deepest bracket nesting outside strings (an upper bound on the decoder's recursion)."""
    stripped = re.sub(r'"(?:[^"\\]|\\.)*"', '""', text)  # strings may hold brackets
    depth = deepest = 0
    for ch in re.findall(r"[\[\]{}]", stripped):
        depth = depth + 1 if ch in "[{" else depth - 1
        deepest = max(deepest, depth)
    return deepest


def _no_constant(name: str) -> Any:
    raise CaseError(f'{name} is not a JSON number; allowed: finite numbers, and probabilities as strings such as "1/3"')


def _no_duplicates(pairs: list[tuple[str, Any]]) -> dict:
    out: dict = {}
    for key, value in pairs:
        if key in out:
            raise CaseError(f"duplicate key {show(key)} in a JSON object; allowed: each key once")
        out[key] = value
    return out
