"""Symbolic execution of rheo_ref's own exact code: probability rows with symbolic entries.

`Sym` is a number in sympy's rational-function field QQ(x_1, ..., x_n) that rheo_ref's verifiers
accept in place of a `Fraction` (they only add, subtract, multiply, divide, compare and test for
zero). Every comparison whose outcome the field element does not fix (its sign as a function of
the symbols) is a *decision*: `Explorer.paths` reruns the computation once per feasible
combination of decisions (z3 over the reals, nonlinear, with the symbols' constraints: entries
positive, rows summing to 1), and returns each result with its path condition. A statement
that holds on every path, on the whole region of its path condition, holds for every real
input satisfying the constraints: that is the proof. Decisions are signs (-1, 0, +1) of
rational functions, so paths on which a comparison is an equality are explored too.

Rows are built with `Explorer.simplex(name, size, zeros)`: free symbols, the last nonzero entry
1 minus their sum, every nonzero entry constrained > 0 and the entries listed in `zeros` 0.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from fractions import Fraction
from typing import Any

import sympy as sp
import z3

from rheo_ref.errors import ProofError

Row = tuple["Sym | Fraction", ...]


class Sym:
    """A rational function of the explorer's symbols; comparisons ask the explorer for a sign."""

    __slots__ = ("e", "ex")

    def __init__(self, e: Any, ex: Explorer) -> None:
        self.e, self.ex = e, ex

    def _lift(self, other: Any) -> Any:
        if isinstance(other, Sym):
            return other.e
        if isinstance(other, (int, Fraction)):
            return self.ex.field(other)
        return NotImplemented

    def _new(self, e: Any) -> Sym:
        return Sym(e, self.ex)

    def __add__(self, o):
        o = self._lift(o)
        return NotImplemented if o is NotImplemented else self._new(self.e + o)

    __radd__ = __add__

    def __sub__(self, o):
        o = self._lift(o)
        return NotImplemented if o is NotImplemented else self._new(self.e - o)

    def __rsub__(self, o):
        o = self._lift(o)
        return NotImplemented if o is NotImplemented else self._new(o - self.e)

    def __mul__(self, o):
        o = self._lift(o)
        return NotImplemented if o is NotImplemented else self._new(self.e * o)

    __rmul__ = __mul__

    def __truediv__(self, o):
        o = self._lift(o)
        return NotImplemented if o is NotImplemented else self._new(self.e / o)

    def __rtruediv__(self, o):
        o = self._lift(o)
        return NotImplemented if o is NotImplemented else self._new(o / self.e)

    def __neg__(self) -> Sym:
        return self._new(-self.e)

    def _sign(self, o: Any) -> int:
        d = self._lift(o)
        if d is NotImplemented:
            raise TypeError(f"cannot compare a symbolic number with {o!r}")
        return self.ex.sign(self.e - d)

    def __lt__(self, o):
        return self._sign(o) < 0

    def __le__(self, o):
        return self._sign(o) <= 0

    def __gt__(self, o):
        return self._sign(o) > 0

    def __ge__(self, o):
        return self._sign(o) >= 0

    def __eq__(self, o):  # type: ignore[override]
        return isinstance(o, (Sym, int, Fraction)) and self._sign(o) == 0

    def __ne__(self, o):  # type: ignore[override]
        return not self.__eq__(o)

    def __bool__(self) -> bool:
        return self.ex.sign(self.e) != 0

    def __hash__(self) -> int:
        return hash(self.e)

    def __repr__(self) -> str:
        return f"Sym({self.e})"


class Explorer:
    """The symbols, their constraints and the decisions of the current path."""

    def __init__(self, names: list[str], *, timeout_ms: int = 20000) -> None:
        names = names or ["unused"]  # every row constant: a field still needs a generator
        self.names = names
        self.field, *gens = sp.field(",".join(names), sp.QQ)
        self.gens = dict(zip(names, gens))
        self.z3 = {n: z3.Real(n) for n in names}
        self.constraints: list[Any] = []
        self._known: dict[Any, int] = {}  # irreducible factors whose sign the constraints fix
        self._factors: dict[Any, tuple] = {}
        self.timeout_ms = timeout_ms
        self.solver = z3.SolverFor("QF_NRA")
        self.solver.set("timeout", timeout_ms)
        self.decisions = 0  # new decisions z3 was asked about, over all paths
        self._prefix: list[int] = []
        self._pos = 0
        self._memo: dict[Any, int] = {}
        self._path: list[Any] = []
        self._pending: list[list[int]] = []

    # --- symbols and rows

    def symbol(self, name: str) -> Sym:
        return Sym(self.gens[name], self)

    def const(self, x: int | Fraction) -> Sym:
        return Sym(self.field(x), self)

    def require_positive(self, x: Sym) -> None:
        """Constrain x > 0; x's factors become known-positive atoms (no decision needed)."""
        self.constraints.append(self.z3_expr(x.e.numer) * self.z3_expr(x.e.denom) > 0)
        if x.e.denom.is_ground:
            c, fs = x.e.numer.factor_list()
            if len(fs) == 1 and fs[0][1] == 1:  # c·f / d > 0: f has the sign of c·d
                self._known[fs[0][0]] = self._ground_sign(x.e.denom) * ((c > 0) - (c < 0))

    def simplex(self, name: str, size: int, zeros: tuple[int, ...] = ()) -> tuple[Sym, ...]:
        """A symbolic probability row: symbols `name_i` for the nonzero entries but the last, which
        is 1 minus their sum; every nonzero entry > 0 (the symbols must have been declared)."""
        nz = [i for i in range(size) if i not in zeros]
        if not nz:
            raise ProofError(f"row {name} has no nonzero entry")
        row: list[Sym] = [self.const(0)] * size
        for i in nz[:-1]:
            row[i] = self.symbol(f"{name}_{i}")
        row[nz[-1]] = 1 - sum((row[i] for i in nz[:-1]), self.const(0))
        for i in nz:
            self.require_positive(row[i])
        return tuple(row)

    @staticmethod
    def simplex_names(name: str, size: int, zeros: tuple[int, ...] = ()) -> list[str]:
        nz = [i for i in range(size) if i not in zeros]
        return [f"{name}_{i}" for i in nz[:-1]]

    # --- z3

    def z3_expr(self, poly: Any) -> Any:
        """A sympy PolyElement of the field's ring as a z3 real term."""
        terms = []
        for monom, coeff in poly.terms():
            c = Fraction(int(coeff.numerator), int(coeff.denominator))
            t = z3.RealVal(f"{c.numerator}/{c.denominator}")
            for n, k in zip(self.names, monom):
                for _ in range(k):
                    t = t * self.z3[n]
            terms.append(t)
        return z3.Sum(terms) if len(terms) > 1 else (terms[0] if terms else z3.RealVal(0))

    def feasible(self, extra: list[Any]) -> bool:
        self.solver.push()
        self.solver.add(*extra)
        r = self.solver.check()
        self.solver.pop()
        if r == z3.unknown:
            raise ProofError(f"z3 could not decide a path condition ({self.solver.reason_unknown()})")
        return r == z3.sat

    # --- decisions

    @staticmethod
    def _ground_sign(poly: Any) -> int:
        c = poly.LC
        return (c > 0) - (c < 0)

    def _factor_list(self, poly: Any) -> tuple:
        if poly not in self._factors:
            c, fs = poly.factor_list()
            self._factors[poly] = ((c > 0) - (c < 0), tuple(fs))
        return self._factors[poly]

    def sign(self, e: Any) -> int:
        """The sign of e on the current path: the product of the signs of its numerator's and
        denominator's irreducible factors, each fixed by the constraints, by an earlier decision of
        this path, or decided now (the other feasible signs are left for later paths)."""
        if e.numer.is_zero:
            return 0
        out = 1
        for poly, is_denom in ((e.numer, False), (e.denom, True)):
            c, fs = self._factor_list(poly)
            out *= c
            for f, k in fs:
                sf = self._factor_sign(f)
                if sf == 0 and is_denom:
                    raise ProofError(f"a denominator factor {f} is 0 on this path")
                out *= sf**k
        return out

    def _factor_sign(self, f: Any) -> int:
        if f.is_ground:
            return self._ground_sign(f)
        if f in self._known:
            return self._known[f]
        if f in self._memo:
            return self._memo[f]
        term = self.z3_expr(f)

        def cons(s: int) -> Any:
            return term < 0 if s < 0 else (term == 0 if s == 0 else term > 0)

        if self._pos < len(self._prefix):
            s = self._prefix[self._pos]
        else:
            self.decisions += 1
            options = [s for s in (1, -1, 0) if self.feasible([cons(s)])]
            if not options:
                raise ProofError("a path whose condition z3 finds infeasible was followed")
            s = options[0]
            self._prefix.append(s)
            for alt in options[1:]:
                self._pending.append(self._prefix[:-1] + [alt])
        self._pos += 1
        self._memo[f] = s
        c = cons(s)
        self._path.append(c)
        self.solver.add(c)
        return s

    def paths(self, fn: Callable[[], Any]) -> Iterator[tuple[Any, list[Any]]]:
        """(fn's result, path condition) for every feasible combination of decisions."""
        self.solver.reset()
        self.solver.set("timeout", self.timeout_ms)
        self.solver.add(*self.constraints)
        self._pending = [[]]
        while self._pending:
            self._prefix, self._pos, self._memo, self._path = self._pending.pop(), 0, {}, []
            self.solver.push()
            try:
                result = fn()
            finally:
                self.solver.pop()
            yield result, list(self._path)

    def holds(self, path: list[Any], e: Any, relation: str) -> bool:
        """Whether `e relation 0` holds on the whole region of the path condition (z3: its negation
        is infeasible there); relation is '==' or '>='."""
        if e.numer.is_zero:
            return True
        if e.numer.is_ground and e.denom.is_ground:
            return relation == ">=" and self._ground_sign(e.numer) * self._ground_sign(e.denom) > 0
        nd = self.z3_expr(e.numer) * self.z3_expr(e.denom)
        bad = nd != 0 if relation == "==" else nd < 0
        self.solver.push()
        self.solver.add(*path)
        try:
            return not self.feasible([bad])
        finally:
            self.solver.pop()


def value(x: Any, ex: Explorer) -> Any:
    """The field element of a Sym, a Fraction or an int."""
    return x.e if isinstance(x, Sym) else ex.field(x)


class SymTable:
    """A table model with symbolic rows, looked up by the last `context_length` tokens (the
    reference's verifiers only call `.row(context)`)."""

    def __init__(self, rows: dict[tuple[int, ...], Row], context_length: int, vocab_size: int, name: str) -> None:
        self.probs, self.context_length, self.vocab_size, self.name = rows, context_length, vocab_size, name

    def row(self, context: tuple[int, ...]) -> Row:
        key = tuple(context)[-self.context_length :] if self.context_length else ()
        if key not in self.probs:
            raise ProofError(f"{self.name}: no symbolic row for context {list(context)}")
        return self.probs[key]
