"""Hive decimals in column statistics: the declared precision and scale, and the values that fit them.

Hive stores a decimal as an unscaled integer (Java ``BigInteger`` bytes: big-endian two's complement) and a
scale that is never negative, and a ``decimal(p,s)`` column holds at most ``p - s`` digits before the point
and ``s`` after it (``HiveDecimal.enforcePrecisionScale``). Statistics of such a column are values of the
column. Their scale must fit the column's: a value written with more fractional digits than the column's scale
is accepted only when the extra digits are trailing zeros (``1.50000`` is ``1.5000`` in a ``decimal(38,4)``).

Digits before the point are bounded by what a Hive decimal of the column's scale can hold at all (38 - scale),
not by the column's declared precision: Hive 2.3 stores whatever a client sends, and existing clients send
bounds beyond the declared precision (pymetastore's own integration tests write a 19-digit bound for a
``decimal(10,2)`` column). Such a bound is still a Hive decimal that every client can read back unchanged;
a value past 38 digits is not, so it is refused.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from decimal import Decimal

from metastore.errors import InvalidInput

__all__ = ["HIVE_MAX_PRECISION", "DecimalType", "decimal_from_unscaled", "decimal_type_of", "fit_decimal"]

#: Hive's largest decimal precision.
HIVE_MAX_PRECISION = 38
# What a bare ``decimal`` means in Hive (HiveDecimal.USER_DEFAULT_PRECISION / _SCALE).
_DEFAULT_PRECISION = 10
_DEFAULT_SCALE = 0
_DECIMAL_TYPE = re.compile(r"^\s*(?:decimal|numeric)\s*(?:\(\s*(\d+)\s*(?:,\s*(\d+)\s*)?\))?\s*$", re.IGNORECASE)
# Long values are cut to this many characters in messages (the whole of a 5,000-digit value helps nobody).
_SHOWN_CHARS = 40


@dataclass(frozen=True)
class DecimalType:
    """A Hive ``decimal(precision, scale)`` type."""

    precision: int
    scale: int

    def __str__(self) -> str:
        return f"decimal({self.precision},{self.scale})"


@functools.lru_cache(maxsize=256)
def decimal_type_of(hive_type: str) -> DecimalType | None:
    """The precision and scale of a Hive decimal type (``decimal`` alone is ``decimal(10,0)``); None if it is
    not a decimal type or its scale exceeds its precision."""
    m = _DECIMAL_TYPE.match(hive_type)
    if not m:
        return None
    precision = int(m.group(1)) if m.group(1) else _DEFAULT_PRECISION
    scale = int(m.group(2)) if m.group(2) else _DEFAULT_SCALE
    if scale > precision:
        return None
    return DecimalType(precision, scale)


def _shown(value: Decimal) -> str:
    text = str(value)
    if len(text) <= _SHOWN_CHARS:
        return text
    return f"{text[:_SHOWN_CHARS]}... ({len(value.as_tuple().digits)} digits)"


def fit_decimal(value: Decimal, column_type: DecimalType, *, where: str, name: str) -> Decimal:
    """``value`` as a value of ``column_type``, or InvalidInput naming ``where``, ``name``, the value and the rule.

    Trailing zeros beyond the column's scale are dropped; a positive exponent (``1E+3``) becomes scale 0.
    Nothing is rounded: a value that does not fit exactly is refused.
    """
    sign, digit_tuple, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        raise InvalidInput(f"{where}: {name} must be a finite decimal, got {value}")
    allowed = HIVE_MAX_PRECISION - column_type.scale
    if (-column_type.scale <= exponent <= 0 and len(digit_tuple) + exponent <= allowed
            and not (sign and digit_tuple == (0,))):
        return value  # the common case: already a value of the column's type (and not a negative zero)
    digits = list(digit_tuple)
    if not any(digits):
        return Decimal((0, (0,), max(exponent, -column_type.scale) if exponent < 0 else 0))
    while exponent < -column_type.scale and digits[-1] == 0:
        digits.pop()
        exponent += 1
    if exponent < -column_type.scale:
        raise InvalidInput(
            f"{where}: {name} {_shown(value)} has {-exponent} digits after the decimal point; "
            f"the column's type {column_type} allows {column_type.scale}"
        )
    if exponent > 0:
        digits.extend([0] * exponent)
        exponent = 0
    integer_digits = len(digits) + exponent
    if integer_digits > allowed:
        raise InvalidInput(
            f"{where}: {name} {_shown(value)} has {integer_digits} digits before the decimal point; "
            f"a Hive decimal at the scale of the column's type {column_type} holds at most {allowed}"
        )
    return Decimal((sign, tuple(digits), exponent))


def decimal_from_unscaled(unscaled: bytes | None, scale: int | None, *, where: str, name: str) -> Decimal:
    """The decimal that Hive's (unscaled two's-complement bytes, scale) pair stands for.

    An empty unscaled value or a negative scale is InvalidInput naming ``where`` and ``name``: Hive never
    writes either, so a client that does has a bug worth hearing about, not a value to guess.
    """
    if unscaled is None or scale is None:
        raise InvalidInput(f"{where}: {name} needs both 'unscaled' and 'scale'")
    if len(unscaled) == 0:
        raise InvalidInput(f"{where}: {name} has an empty unscaled value (scale {scale})")
    if scale < 0:
        raise InvalidInput(f"{where}: {name} has a negative scale {scale}; Hive decimal scales are 0 or more")
    number = int.from_bytes(unscaled, "big", signed=True)
    # Built from its digits: Decimal.scaleb would round to the context's 28 digits (Hive allows 38), and
    # Decimal(int), unlike str(int), has no limit on the number of digits.
    return Decimal((int(number < 0), Decimal(abs(number)).as_tuple().digits, -scale))
