"""The one number syntax of every text file (and number option) vpeval reads.

A number is written ``[+-]`` ASCII decimal digits with an optional point and fraction and an optional exponent
(``12``, ``-0.5``, ``.25``, ``3.``, ``1e-3``, ``2.5E+04``); where a reader allows it, also an infinity (``inf``,
``infinity``, any case, optional sign) or a NaN (``nan``, any case, optional sign). Nothing else: Python's
``float`` also accepts digit separators (``1_0`` is 10), other scripts' digits (``١٢``), surrounding white space
and ``nan`` everywhere, and NumPy's string conversion does the same, while the bulk (pyarrow) readers refuse them;
every reader checks its text against this rule first, so a file means the same to all of them.

A number whose value overflows float64 (``1e400``) is refused, not read as infinity; one that underflows to
zero although its digits are not all zero (``1e-400``) is refused too.
"""

from __future__ import annotations

import math
import re

__all__ = ["NUMBER", "INFINITY", "NAN", "NumberSyntaxError", "parse_number", "is_nan_word"]

#: A finite decimal number (ASCII digits, no separators).
NUMBER = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
#: An explicit infinity.
INFINITY = re.compile(r"[+-]?(?:inf|infinity)", re.IGNORECASE)
#: An explicit NaN.
NAN = re.compile(r"[+-]?nan", re.IGNORECASE)

_SYNTAX = ("is not a number (expected ASCII decimal digits with an optional sign, point and exponent, such as "
           "-0.25 or 1e-3; no digit separators such as 1_0)")


class NumberSyntaxError(ValueError):
    """Text that is not a number under the rule of this module (or a NaN/infinity where none is allowed).

    ``reason`` completes a sentence whose subject is the quoted text (``"'1_0' " + reason``).
    """

    def __init__(self, text: str, reason: str):
        self.text, self.reason = text, reason
        super().__init__(f"{text!r} {reason}")


def is_nan_word(text: str) -> bool:
    """Whether ``text`` is an explicit NaN (``nan``, ``-nan``, ``NaN``, ...)."""
    return bool(NAN.fullmatch(text))


def parse_number(text: str, *, allow_inf: bool = False, allow_nan: bool = False) -> float:
    """``text`` as a float64 under the module's rule.

    Parameters
    ----------
    text : str
        One field as written (not stripped: a reader strips its fields by its own rule).
    allow_inf, allow_nan : bool
        Whether an explicit infinity / NaN is a value here.

    Raises
    ------
    NumberSyntaxError
        Not a number; an infinity or NaN where not allowed; a finite number that overflows float64 or a nonzero
        one that underflows to 0.

    >>> parse_number("1e-3"), parse_number("-inf", allow_inf=True)
    (0.001, -inf)
    >>> parse_number("1_0")
    Traceback (most recent call last):
    ...
    vpeval.io.numbers.NumberSyntaxError: '1_0' is not a number (expected ASCII decimal digits with an optional sign, point and exponent, such as -0.25 or 1e-3; no digit separators such as 1_0)
    """
    if NUMBER.fullmatch(text):
        v = float(text)
        if math.isinf(v):
            raise NumberSyntaxError(text, "is outside the float64 range (it would be read as infinity)")
        if v == 0.0 and any(c in "123456789" for c in text.lower().split("e")[0]):
            raise NumberSyntaxError(text, "underflows float64 to 0")
        return v
    if INFINITY.fullmatch(text):
        if allow_inf:
            return float(text)
        raise NumberSyntaxError(text, "is infinite; a finite number is expected here")
    if NAN.fullmatch(text):
        if allow_nan:
            return math.nan
        raise NumberSyntaxError(text, "is NaN; a number is expected here")
    raise NumberSyntaxError(text, _SYNTAX)
