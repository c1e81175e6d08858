"""Converting SQL literals and CSV fields to column values of a Hive type, as the ORC writer takes them.

Values: boolean → bool; tinyint..bigint → int (range-checked); float/double → float; decimal → Decimal at
the column's scale (HALF_UP, precision-checked); string → str; varchar(n) → str cut to n characters;
char(n) → str padded with spaces to n; date → datetime.date; timestamp → numpy datetime64[ns]; binary →
UTF-8 bytes. Where Hive would store NULL for a value it cannot convert, this refuses it with an error naming
the value and the type (ConversionError), so bad data never lands silently.
"""

from __future__ import annotations

import datetime as dt
import math
import re
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from typing import TYPE_CHECKING, Any

from metastore.sql.hive_types import HiveType
from metastore.sql.statements import Literal, LiteralKind

if TYPE_CHECKING:
    import numpy as np

_INT_RANGES = {
    "tinyint": (-(1 << 7), (1 << 7) - 1),
    "smallint": (-(1 << 15), (1 << 15) - 1),
    "int": (-(1 << 31), (1 << 31) - 1),
    "bigint": (-(1 << 63), (1 << 63) - 1),
}
_DATE = re.compile(r"\s*(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T].*)?\s*$")
_TIMESTAMP = re.compile(
    r"\s*(\d{4})-(\d{1,2})-(\d{1,2})(?:[ T](\d{1,2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?\s*$"
)
_WIDE = Context(prec=200)
_TRUE = frozenset(["true"])
_FALSE = frozenset(["false"])


class ConversionError(ValueError):
    """A value that does not fit its column's type."""


def _too_long(text: str) -> str:
    return text if len(text) <= 60 else text[:57] + "..."


def _integer(text: str, hive_type: HiveType) -> int:
    raw = text.strip()
    lo, hi = _INT_RANGES[hive_type.name]
    try:
        value = int(raw)
    except ValueError:
        # 1e3 or 12.0 are integers written as decimals; 1.5 is not. So are integers of more than 4,300 digits,
        # which int() refuses: checked against the range as decimals, never turned into (huge) ints.
        try:
            d = Decimal(raw)
        except InvalidOperation:
            raise ConversionError(f"'{_too_long(text)}' is not a valid {hive_type} value") from None
        if not d.is_finite() or d != d.to_integral_value():
            raise ConversionError(f"'{_too_long(text)}' is not a valid {hive_type} value (not a whole number)") from None
        if not lo <= d <= hi:
            raise ConversionError(f"{_too_long(raw)} is outside the range of {hive_type} ({lo}..{hi})") from None
        value = int(d)
    if not lo <= value <= hi:
        raise ConversionError(f"{_too_long(str(value))} is outside the range of {hive_type} ({lo}..{hi})")
    return value


def _double(text: str, hive_type: HiveType) -> float:
    raw = text.strip()
    low = raw.lower()
    if low in ("nan",):
        return math.nan
    if low in ("infinity", "+infinity", "inf", "+inf"):
        return math.inf
    if low in ("-infinity", "-inf"):
        return -math.inf
    try:
        value = float(raw)
    except ValueError:
        raise ConversionError(f"'{_too_long(text)}' is not a valid {hive_type} value") from None
    if hive_type.name == "float" and math.isfinite(value) and abs(value) > 3.4028234663852886e38:
        raise ConversionError(f"{_too_long(raw)} is outside the range of float")
    return value


def _decimal(text: str, hive_type: HiveType) -> Decimal:
    raw = text.strip()
    try:
        d = Decimal(raw)
    except InvalidOperation:
        raise ConversionError(f"'{_too_long(text)}' is not a valid {hive_type} value") from None
    if not d.is_finite():
        raise ConversionError(f"'{_too_long(raw)}' is not a finite {hive_type} value")
    scale = hive_type.scale or 0
    precision = hive_type.precision or 10
    fits = f"at most {precision - scale} digits before the point"
    try:
        quantized = d.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP, context=_WIDE)
    except InvalidOperation:
        # More digits than even the wide context holds (e.g. 10,000): far too many for any decimal column.
        raise ConversionError(f"{_too_long(raw)} does not fit {hive_type} ({fits})") from None
    digits = len(quantized.as_tuple().digits)
    integer_digits = max(digits - scale, 0) if quantized != 0 else 0
    if integer_digits > precision - scale:
        raise ConversionError(f"{_too_long(raw)} does not fit {hive_type} ({fits})")
    return quantized


def parse_date(text: str, hive_type: HiveType | str = "date") -> dt.date:
    """A Hive date string ('2024-01-31', time part ignored)."""
    m = _DATE.match(text)
    if not m:
        raise ConversionError(f"'{_too_long(text)}' is not a valid {hive_type} value (expected YYYY-MM-DD)")
    try:
        return dt.date(int(m.group(1)), int(m.group(2)), int(m.group(3)))
    except ValueError as exc:
        raise ConversionError(f"'{_too_long(text)}' is not a valid date: {exc}") from None


def parse_timestamp(text: str, hive_type: HiveType | str = "timestamp") -> np.datetime64:
    """A Hive timestamp string ('2024-01-31 10:00:00.123456789'; the time part may be left out)."""
    m = _TIMESTAMP.match(text)
    if not m:
        raise ConversionError(
            f"'{_too_long(text)}' is not a valid {hive_type} value (expected YYYY-MM-DD HH:MM:SS[.fffffffff])"
        )
    year, month, day, hour, minute, second, fraction = m.groups()
    try:
        base = dt.datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0))
    except ValueError as exc:
        raise ConversionError(f"'{_too_long(text)}' is not a valid timestamp: {exc}") from None
    nanos = int((fraction or "").ljust(9, "0")) if fraction else 0
    import numpy as np  # only timestamps need it; partition specs and ANALYZE parse values without numpy

    return np.datetime64(base.isoformat(), "ns") + np.timedelta64(nanos, "ns")


def _fit_chars(text: str, hive_type: HiveType) -> str:
    if hive_type.name == "varchar":
        return text[: hive_type.length]
    if hive_type.name == "char":
        return text[: hive_type.length].ljust(hive_type.length or 0)
    return text


def from_text(text: str, hive_type: HiveType) -> Any:
    """A value of `hive_type` from its text form (a CSV field, a string literal, a partition value)."""
    name = hive_type.name
    if name == "boolean":
        low = text.strip().lower()
        if low in _TRUE:
            return True
        if low in _FALSE:
            return False
        raise ConversionError(f"'{_too_long(text)}' is not a boolean value (expected true or false)")
    if name in _INT_RANGES:
        return _integer(text, hive_type)
    if name in ("float", "double"):
        return _double(text, hive_type)
    if name == "decimal":
        return _decimal(text, hive_type)
    if name in ("string", "varchar", "char"):
        return _fit_chars(text, hive_type)
    if name == "date":
        return parse_date(text, hive_type)
    if name == "timestamp":
        return parse_timestamp(text, hive_type)
    if name == "binary":
        return text.encode("utf-8")
    raise ConversionError(f"values of type {hive_type} cannot be written by this shell (only primitive types)")


def from_literal(literal: Literal, hive_type: HiveType) -> Any:
    """A value of `hive_type` from an SQL constant (None for NULL)."""
    kind = literal.kind
    name = hive_type.name
    text = literal.text or ""
    if kind is LiteralKind.NULL:
        return None
    if kind is LiteralKind.BOOLEAN:
        if name == "boolean":
            return text == "true"
        if name in ("string", "varchar", "char"):
            return _fit_chars(text, hive_type)
        raise ConversionError(f"{text.upper()} is a boolean, not a {hive_type} value")
    if kind in (LiteralKind.INTEGER, LiteralKind.DECIMAL):
        if name in ("boolean", "date", "timestamp", "binary"):
            raise ConversionError(f"{_too_long(text)} is a number, not a {hive_type} value")
        return from_text(text, hive_type)
    if kind is LiteralKind.DATE:
        if name in ("date", "timestamp", "string", "varchar", "char"):
            parse_date(text)  # a DATE literal must be a valid date whatever the column
            return from_text(text, hive_type)
        raise ConversionError(f"DATE '{_too_long(text)}' is not a valid {hive_type} value")
    if kind is LiteralKind.TIMESTAMP:
        if name in ("date", "timestamp", "string", "varchar", "char"):
            parse_timestamp(text)
            return from_text(text, hive_type)
        raise ConversionError(f"TIMESTAMP '{_too_long(text)}' is not a valid {hive_type} value")
    return from_text(text, hive_type)


def partition_value_text(literal: Literal, hive_type: HiveType) -> str:
    """The stored text of a partition value: checked against the key's type and normalised as Hive does
    (`hr=05` for an int key is stored as `5`; dates as YYYY-MM-DD)."""
    if literal.kind is LiteralKind.NULL:
        raise ConversionError("a partition value cannot be NULL")
    value = from_literal(literal, hive_type)
    if isinstance(value, bool):
        return "true" if value else "false"
    if hive_type.name == "timestamp":  # a numpy datetime64 (parse_timestamp)
        text = str(value).replace("T", " ")
        return text[:-10] if text.endswith(".000000000") else text.rstrip("0")
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, bytes):
        return value.decode("utf-8")
    return str(value)


def column_array(values: list[Any], hive_type: HiveType) -> Any:
    """Values of one column (None for NULL) in the form the ORC writer takes: a list, or for timestamps a
    datetime64[ns] array with NaT for NULL (so nanoseconds survive)."""
    if hive_type.name == "timestamp":
        import numpy as np

        out = np.empty(len(values), dtype="datetime64[ns]")
        for i, v in enumerate(values):
            out[i] = np.datetime64("NaT") if v is None else v
        return out
    return values
