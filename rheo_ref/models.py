"""Table models and cases: docs/ALGORITHM.md §10 (the JSON exchange format).

A table model maps the last `context_length` tokens of a context to an exact probability row
(a tuple of `Fraction`s over the whole vocabulary). A case names the draft (`q_rank`), the
optional sampling draft (`q_samp`, default: the draft), the target (`p`), the start context,
the number of tokens and the scheme (docs/ALGORITHM.md §2).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any, ClassVar, Mapping, Sequence

from .errors import CaseError
from .fields import check_fields, is_int
from .static import StaticScheme

Row = tuple[Fraction, ...]
Context = tuple[int, ...]

VERIFY_ORDERS = ("rheo", "rrsw")
FAMILIES = ("rheo", "static")  # the `family` of a scheme object; rheo when absent


def parse_prob(value: Any, where: str) -> Fraction:
    """Read one probability exactly: "1/3", "0.25", "0", "1" (strings) or ints; never floats."""
    if isinstance(value, bool) or not isinstance(value, (str, int, Fraction)):
        raise CaseError(f"{where}: probability {value!r} must be a string such as \"1/3\" or \"0.25\" (floats are not exact)")
    try:
        f = Fraction(value)
    except (ValueError, ZeroDivisionError):
        raise CaseError(f"{where}: {value!r} is not a number; allowed: exact rationals such as \"1/3\" or decimals such as \"0.25\"") from None
    if f < 0:
        raise CaseError(f"{where}: probability {value!r} is negative; entries must be >= 0")
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
            raise CaseError(f"{self.name}: vocab_size {self.vocab_size!r} must be an integer >= 1")
        if not is_int(self.context_length) or self.context_length < 0:
            raise CaseError(f"{self.name}: context_length {self.context_length!r} must be an integer >= 0")
        for key, row in self.probs.items():
            where = f"{self.name} row {key!r}"
            toks = _parse_key(key, where)
            if len(toks) > self.context_length:
                raise CaseError(f"{where}: key has {len(toks)} tokens, more than context_length {self.context_length}")
            bad = [t for t in toks if t >= self.vocab_size]
            if bad:
                raise CaseError(f"{where}: context token {bad[0]} is outside the vocabulary 0..{self.vocab_size - 1}")
            if len(row) != self.vocab_size:
                raise CaseError(f"{where}: row has {len(row)} entries, vocab_size is {self.vocab_size}")
            if any(not isinstance(x, Fraction) or x < 0 for x in row):
                raise CaseError(f"{where}: entries must be non-negative Fractions, got {[str(x) for x in row]}")
            total = sum(row, Fraction(0))
            if total != 1:
                raise CaseError(f"{where}: row sums to {total}, must be exactly 1")

    @classmethod
    def from_json(cls, obj: Any, name: str = "model") -> "TableModel":
        check_fields(obj, f"{name} table", ("vocab_size", "context_length", "probs"))
        probs = obj["probs"]
        if not isinstance(probs, dict):
            raise CaseError(f"{name}: probs must be an object from context keys to rows, got {type(probs).__name__}")
        rows: dict[str, Row] = {}
        for key, row in probs.items():
            if not isinstance(row, list):
                raise CaseError(f"{name} row {key!r}: must be a list of probabilities, got {type(row).__name__}")
            rows[_canonical_key(key, f"{name} row {key!r}")] = tuple(parse_prob(x, f"{name} row {key!r}[{i}]") for i, x in enumerate(row))
        return cls(obj["vocab_size"], obj["context_length"], rows, name)

    @classmethod
    def from_rows(cls, rows: Mapping[Any, Sequence[Any]], *, context_length: int | None = None, name: str = "model") -> "TableModel":
        """Build from Python: keys are tuples of tokens (or key strings), values rows of rationals."""
        conv: dict[str, Row] = {}
        lengths = []
        for key, row in rows.items():
            if isinstance(key, str):
                skey = _canonical_key(key, f"{name} row {key!r}")
            else:
                skey = ",".join(str(int(t)) for t in key)
            lengths.append(len(_parse_key(skey, name)))
            conv[skey] = tuple(x if isinstance(x, Fraction) else parse_prob(x, f"{name} row {skey!r}[{i}]") for i, x in enumerate(row))
        if not conv:
            raise CaseError(f"{name}: no rows given")
        v = len(next(iter(conv.values())))
        L = max(lengths) if context_length is None else context_length
        return cls(v, L, conv, name)

    @classmethod
    def from_weights(cls, weights: Mapping[Any, Sequence[int]], *, context_length: int | None = None,
                     name: str = "model", power: int = 1) -> "TableModel":
        """Build from non-negative integer weights per context, each row normalised; `power` raises
        the weights first (2: the rows at temperature 1/2)."""
        rows = {}
        for key, w in weights.items():
            if any(isinstance(x, bool) or not isinstance(x, int) or x < 0 for x in w) or not any(w):
                raise CaseError(f"{name} row {key!r}: weights {list(w)} must be non-negative integers, not all 0")
            w = [x ** power for x in w]
            rows[key] = tuple(Fraction(x, sum(w)) for x in w)
        return cls.from_rows(rows, context_length=context_length, name=name)

    def row(self, context: Sequence[int]) -> Row:
        key = context_key(context, self.context_length)
        try:
            return self.probs[key]
        except KeyError:
            raise CaseError(f"{self.name}: reachable context {list(context)} (key {key!r}) has no row") from None

    def to_json(self) -> dict:
        return {"vocab_size": self.vocab_size, "context_length": self.context_length,
                "probs": {k: [str(x) for x in r] for k, r in self.probs.items()}}


def _parse_key(key: str, where: str) -> Context:
    if key == "":
        return ()
    try:
        toks = tuple(int(t) for t in key.split(","))
    except ValueError:
        raise CaseError(f"{where}: key {key!r} must be comma-joined token ids such as \"0,2\" or \"\"") from None
    if any(t < 0 for t in toks):
        raise CaseError(f"{where}: key {key!r} has a negative token id")
    return toks


def _canonical_key(key: str, where: str) -> str:
    return ",".join(str(t) for t in _parse_key(key.replace(" ", ""), where))


@dataclass(frozen=True)
class Proxy:
    """The factor rule of the sampled slot (docs/ALGORITHM.md §3): rheo, true, const:a, scaled:s."""

    kind: str
    value: Fraction | None = None

    @classmethod
    def parse(cls, text: Any) -> "Proxy":
        if isinstance(text, Proxy):
            return text
        if not isinstance(text, str):
            raise CaseError(f"proxy {text!r} must be a string: rheo, true, const:<rational>, scaled:<rational>")
        if text in ("rheo", "true"):
            return cls(text)
        head, _, arg = text.partition(":")
        if head in ("const", "scaled") and arg:
            try:
                v = Fraction(arg)
            except (ValueError, ZeroDivisionError):
                raise CaseError(f"proxy {text!r}: {arg!r} is not a rational number") from None
            if head == "const" and not (0 < v <= 1):
                raise CaseError(f"proxy {text!r}: the constant must be in (0, 1] (factors above 1 break the tree's closure)")
            if head == "scaled" and v <= 0:
                raise CaseError(f"proxy {text!r}: the scale must be > 0")
            return cls(head, v)
        raise CaseError(f"unknown proxy {text!r}; allowed: rheo, true, const:<rational>, scaled:<rational>")

    @property
    def number(self) -> Fraction:
        """The rational of `const:a` / `scaled:s`."""
        if self.value is None:
            raise CaseError(f"proxy {self.kind} has no number")
        return self.value

    def __str__(self) -> str:
        return self.kind if self.value is None else f"{self.kind}:{self.value}"


@dataclass(frozen=True)
class Scheme:
    """Parameters of docs/ALGORITHM.md §2 (S and T live in the fast path; tables already apply them)."""

    K: int
    m: int
    W: int
    D: int
    R: int
    proxy: Proxy = field(default_factory=lambda: Proxy("rheo"))
    verify: str = "rheo"
    family: ClassVar[str] = "rheo"

    def __post_init__(self) -> None:
        for name in ("K", "m", "W", "D", "R"):
            v = getattr(self, name)
            if not is_int(v):
                raise CaseError(f"scheme {name}={v!r} must be an integer")
        if self.K < 1:
            raise CaseError(f"scheme K={self.K} must be >= 1")
        if not 0 <= self.m <= self.K:
            raise CaseError(f"scheme m={self.m} must satisfy 0 <= m <= K={self.K}")
        if self.W < 1:
            raise CaseError(f"scheme W={self.W} must be >= 1")
        if self.D < 1:
            raise CaseError(f"scheme D={self.D} must be >= 1")
        if self.R < 1:
            raise CaseError(f"scheme R={self.R} must be >= 1")
        if not isinstance(self.proxy, Proxy):
            object.__setattr__(self, "proxy", Proxy.parse(self.proxy))
        if self.verify not in VERIFY_ORDERS:
            raise CaseError(f"unknown verification order {self.verify!r}; allowed: {', '.join(VERIFY_ORDERS)}")

    @classmethod
    def from_json(cls, obj: Any) -> "Scheme":
        check_fields(obj, "scheme", ("K", "m", "W", "D", "R"), ("proxy", "verify", "family"))
        if obj.get("family", "rheo") != "rheo":
            raise CaseError(f"scheme family {obj['family']!r} has no K, m, W, D, R; use scheme_from_json")
        return cls(obj["K"], obj["m"], obj["W"], obj["D"], obj["R"], Proxy.parse(obj.get("proxy", "rheo")), obj.get("verify", "rheo"))

    def to_json(self) -> dict:
        return {"K": self.K, "m": self.m, "W": self.W, "D": self.D, "R": self.R, "proxy": str(self.proxy), "verify": self.verify}

    def check_vocab(self, vocab_size: int) -> None:
        if self.K > vocab_size:
            raise CaseError(f"scheme K={self.K} must be <= vocab_size {vocab_size}")


def scheme_from_json(obj: Any) -> "Scheme | StaticScheme":
    """The scheme object of a case: its `family` (default rheo) says which fields it has."""
    family = obj.get("family", "rheo") if isinstance(obj, dict) else "rheo"
    if family == "static":
        return StaticScheme.from_json(obj)
    if family != "rheo":
        raise CaseError(f"unknown scheme family {family!r}; allowed: {', '.join(FAMILIES)}")
    return Scheme.from_json(obj)


@dataclass(frozen=True)
class Case:
    """A complete exact problem: models, start context, number of tokens, scheme."""

    draft: TableModel
    target: TableModel
    scheme: Scheme | StaticScheme
    context: Context = ()
    tokens: int = 1
    draft_sample: TableModel | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "context", tuple(self.context))
        V = self.target.vocab_size
        for mod in (self.draft, self.draft_sample):
            if mod is not None and mod.vocab_size != V:
                raise CaseError(f"vocabulary sizes differ: {mod.name} has {mod.vocab_size}, target has {V}")
        for t in self.context:
            if not is_int(t) or not 0 <= t < V:
                raise CaseError(f"context token {t!r} is outside the vocabulary 0..{V - 1}")
        if not is_int(self.tokens) or self.tokens < 1:
            raise CaseError(f"tokens={self.tokens!r} must be an integer >= 1")
        self.scheme.check_vocab(V)

    @property
    def vocab_size(self) -> int:
        return self.target.vocab_size

    def rheo_scheme(self) -> Scheme:
        """The scheme, for code that runs the rheo family only (refuses a static one)."""
        if not isinstance(self.scheme, Scheme):
            raise CaseError(f"this needs a scheme of family rheo; the case's is family {self.scheme.family!r}")
        return self.scheme

    def static_scheme(self) -> StaticScheme:
        """The scheme, for code that runs the static family only."""
        if not isinstance(self.scheme, StaticScheme):
            raise CaseError(f"this needs a scheme of family static; the case's is family {self.scheme.family!r}")
        return self.scheme

    def visible(self, context: Context) -> Context:
        """The last tokens of a context that any of the case's models can see: round laws and
        everything below a tree node depend on the context only through them."""
        L = max(self.draft.context_length, self.q_samp_model.context_length, self.target.context_length)
        return tuple(context)[-L:] if L else ()

    @property
    def q_samp_model(self) -> TableModel:
        return self.draft_sample if self.draft_sample is not None else self.draft

    def with_scheme(self, **changes: Any) -> "Case":
        d = self.scheme.to_json()
        d.update({k: (str(v) if k == "proxy" else v) for k, v in changes.items()})
        return Case(self.draft, self.target, scheme_from_json(d), self.context, self.tokens, self.draft_sample)

    @classmethod
    def from_json(cls, obj: Any) -> "Case":
        check_fields(obj, "case", ("draft", "target", "scheme"), ("draft_sample", "context", "tokens"))
        ctx = obj.get("context", [])
        if not isinstance(ctx, list):
            raise CaseError(f"context {ctx!r} must be a list of token ids")
        ds = obj.get("draft_sample")
        return cls(
            draft=TableModel.from_json(obj["draft"], "draft"),
            target=TableModel.from_json(obj["target"], "target"),
            scheme=scheme_from_json(obj["scheme"]),
            context=tuple(ctx),
            tokens=obj.get("tokens", 1),
            draft_sample=None if ds is None else TableModel.from_json(ds, "draft_sample"),
        )

    def to_json(self) -> dict:
        out = {"draft": self.draft.to_json(), "target": self.target.to_json(), "context": list(self.context),
               "tokens": self.tokens, "scheme": self.scheme.to_json()}
        if self.draft_sample is not None:
            out["draft_sample"] = self.draft_sample.to_json()
        return out


def load_case(path: str) -> Case:
    """Read a case file; every problem becomes one `CaseError` line."""
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
    except OSError as e:
        raise CaseError(f"cannot read case file {path!r}: {e.strerror}") from None
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise CaseError(f"{path}: not JSON ({e.msg} at line {e.lineno} column {e.colno})") from None
    return Case.from_json(obj)
