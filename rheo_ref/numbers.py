"""The one grammar of a number a user writes: in a case file, a grid, a flag, a `--gen` value, a
decoder name (`ensemble:1/2`), a proxy (`const:1/4`) or a table row's context key.

    integer   -?D                       at most MAX_INT_DIGITS digits ("0", "12", "-3")
    rational  -?D/D                     "1/3"; the denominator is not 0
    decimal   -?D[.D][e[+-]D]           "0.25", "2e-3", "1E5"; |exponent| <= MAX_EXPONENT

D is one or more ASCII digits 0-9 (no other Unicode digit, no "_", no "+", no whitespace), and
the whole text has at most MAX_NUMBER_CHARS characters. Anything else is refused with one
`CaseError` line naming the value and this grammar, before any arithmetic: so no value can take
unbounded time or memory to build ("1e999999999", "1/" + 4,000 nines), and no text is read as
a number that a reader would not ("١/٤", "1_0", " 1", "+1/4"). A context key is comma-joined
integers without sign or leading zeros ("0,2", "").

    rational("1/3", where)            # Fraction(1, 3); CaseError on anything outside the grammar
    integer_text("12", where)         # 12
    flag_int("12") / flag_float("0.5")   # argparse types (usage error, exit 2, on a bad value)
    json_int("12") / json_float("0.5")   # json.loads hooks: bounded JSON numbers
"""

from __future__ import annotations

import re
from fractions import Fraction

from .errors import CaseError

MAX_NUMBER_CHARS = 1000  # characters of one number's text
MAX_INT_DIGITS = 40  # digits of an integer: 10^40 > 2^128, and every such integer is a finite float
MAX_EXPONENT = 1000  # |e| of a decimal exponent

_INT = re.compile(r"-?[0-9]+")
_RATIONAL = re.compile(r"-?[0-9]+/[0-9]+")
_DECIMAL = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE]([+-]?[0-9]+))?")
_KEY = re.compile(r"(?:0|[1-9][0-9]*)(?:,(?:0|[1-9][0-9]*))*")
TOKEN_KEY = re.compile(r"0|[1-9][0-9]{0,8}")  # one token id as a JSON object key (a constraint's `next`)
GRAMMAR = 'ASCII digits as an integer ("3"), a fraction ("1/3") or a decimal ("0.25", "2e-3")'


def _short(text: str) -> str:
    shown = text if len(text) <= 40 else text[:37] + "..."
    return repr(shown)


def _refuse(text: str, where: str, why: str) -> CaseError:
    return CaseError(f"{where}: {_short(text)} {why}; allowed: {GRAMMAR}, at most {MAX_NUMBER_CHARS} characters")


def rational(text: str, where: str) -> Fraction:
    """The exact value of a number's text (module docstring); CaseError outside the grammar."""
    if not isinstance(text, str):
        raise CaseError(f"{where}: {_short(str(text))} must be a string; allowed: {GRAMMAR}")
    if len(text) > MAX_NUMBER_CHARS:
        raise _refuse(text, where, f"has {len(text):,} characters")
    if _INT.fullmatch(text):
        if len(text.lstrip("-")) > MAX_INT_DIGITS:
            raise _refuse(text, where, f"has more than {MAX_INT_DIGITS} digits")
        return Fraction(int(text))
    if _RATIONAL.fullmatch(text):
        num, den = text.split("/")
        if len(num.lstrip("-")) > MAX_INT_DIGITS or len(den) > MAX_INT_DIGITS:
            raise _refuse(text, where, f"has a part of more than {MAX_INT_DIGITS} digits")
        if int(den) == 0:
            raise _refuse(text, where, "divides by 0")
        return Fraction(int(num), int(den))
    m = _DECIMAL.fullmatch(text)
    if m:
        if m.group(1) is not None and abs(int(m.group(1))) > MAX_EXPONENT:
            raise _refuse(text, where, f"has the exponent {m.group(1)} (|exponent| <= {MAX_EXPONENT} is allowed)")
        return Fraction(text)
    raise _refuse(text, where, "is not a number")


def integer_text(text: str, where: str) -> int:
    """An integer's text (at most MAX_INT_DIGITS ASCII digits, optional "-")."""
    if not isinstance(text, str) or not _INT.fullmatch(text) or len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise CaseError(
            f"{where}: {_short(str(text))} is not an integer; allowed: at most {MAX_INT_DIGITS} ASCII digits, "
            f'optionally after "-"'
        )
    return int(text)


def context_key(text: str, where: str) -> tuple[int, ...]:
    """A table row's key: "" or comma-joined token ids, each without sign or leading zero."""
    if text == "":
        return ()
    if not isinstance(text, str) or len(text) > MAX_NUMBER_CHARS * 10 or not _KEY.fullmatch(text):
        raise CaseError(
            f'{where}: key {_short(str(text))} must be comma-joined token ids such as "0,2" or "" '
            f"(ASCII digits, no sign, spaces or leading zeros)"
        )
    toks = text.split(",")
    if any(len(t) > MAX_INT_DIGITS for t in toks):
        raise CaseError(f"{where}: key {_short(text)} has a token id of more than {MAX_INT_DIGITS} digits")
    return tuple(int(t) for t in toks)


# --- argparse types and json hooks ---------------------------------------------------------------


def flag_int(text: str) -> int:
    """argparse `type=` for an integer flag (a bad value is argparse's usage error, exit 2)."""
    try:
        return integer_text(text, "an integer flag")
    except CaseError as e:
        raise ValueError(str(e)) from None


def flag_float(text: str) -> float:
    """argparse `type=` for a real flag: the grammar's value as a float ("nan", "inf" are refused)."""
    try:
        return float(rational(text, "a number flag"))
    except CaseError as e:
        raise ValueError(str(e)) from None
    except OverflowError:
        raise ValueError(f"value {_short(text)} is beyond the float range") from None


def json_int(text: str) -> int:
    """`json.loads(parse_int=...)`: a JSON integer of at most MAX_INT_DIGITS digits."""
    if len(text.lstrip("-")) > MAX_INT_DIGITS:
        raise CaseError(
            f"the JSON integer {_short(text)} has {len(text):,} characters; allowed: {MAX_INT_DIGITS} digits"
        )
    return int(text)


def json_float(text: str) -> float:
    """`json.loads(parse_float=...)`: a JSON real within the grammar's bounds, as a float."""
    value = rational(text, "a JSON number")
    try:
        return float(value)
    except OverflowError:
        raise CaseError(f"the JSON number {_short(text)} is beyond the float range") from None
