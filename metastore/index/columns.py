"""Column types as the indexes and predicates see them, and the typed canonical keys of their values.

Every value a predicate compares, an index stores or a bloom filter hashes is first turned into a *key* of one
of two domains, so that equal values always give equal keys and key order is value order:

- ``INT64`` (a numpy int64 per value): tinyint..bigint and boolean as themselves, date as days since 1970-01-01,
  decimal(p<=18, s) as the unscaled value at the column's scale s (so 1.5 and 1.50 are one key), float and
  double as a sortable form of the IEEE bits (float widened to double first, -0.0 = 0.0, every NaN one key
  above +infinity: Spark's ordering of floating point values);
- ``BYTES`` (a Python ``bytes`` per value, compared bytewise): string and varchar as UTF-8, char(n) as UTF-8
  with trailing spaces removed (Hive compares char values without their padding), decimal(p>18, s) as the
  16-byte big-endian two's complement of the unscaled value with the sign bit flipped, timestamp as 8 bytes of
  seconds (sign flipped) and 4 of nanoseconds, big-endian.

These keys are the "typed canonical encoding" of the issue: the same function produces them when an index is
built and when it is probed, so no value formatting (``1.0`` vs ``1``) can make them disagree.
"""

from __future__ import annotations

import datetime as dt
import enum
import struct
from dataclasses import dataclass
from decimal import Decimal

import numpy as np

from metastore.index.errors import UnsupportedColumn
from metastore.orcio import (
    BytesVector,
    ColumnVector,
    DecimalVector,
    DictionaryBytesVector,
    DoubleVector,
    LongVector,
    TimestampVector,
)
from metastore.sql.hive_types import HiveType, HiveTypeError, parse_hive_type

_SIGN64 = np.uint64(1 << 63)
_FLIP_MAGNITUDE = np.int64(0x7FFFFFFFFFFFFFFF)
_CANONICAL_NAN = np.int64(0x7FF8000000000000)
_EPOCH = dt.date(1970, 1, 1)


class Domain(enum.Enum):
    """How keys of a column are held: int64 numbers or bytes."""

    INT64 = "int64"
    BYTES = "bytes"


class Family(enum.Enum):
    """Groups of Hive types that convert literals and values alike."""

    INTEGER = "integer"
    FLOAT = "float"
    DECIMAL = "decimal"
    DATE = "date"
    STRING = "string"
    CHAR = "char"
    BOOLEAN = "boolean"
    TIMESTAMP = "timestamp"


_INTEGER_RANGES = {
    "tinyint": (-(1 << 7), (1 << 7) - 1),
    "smallint": (-(1 << 15), (1 << 15) - 1),
    "int": (-(1 << 31), (1 << 31) - 1),
    "bigint": (-(1 << 63), (1 << 63) - 1),
}
#: Hive types an index may be built on (the issue's list; float is Hive's spelling of real).
INDEXABLE_TYPES = ("tinyint", "smallint", "int", "bigint", "float", "double", "decimal", "date", "string",
                   "varchar", "char")


@dataclass(frozen=True)
class ColumnType:
    """A column's Hive type with what key conversion needs (range of integers, scale of decimals)."""

    hive: str  # canonical spelling, e.g. decimal(10,2)
    family: Family
    domain: Domain
    low: int | None = None  # integers: the type's range
    high: int | None = None
    precision: int = 0
    scale: int = 0
    length: int | None = None  # char/varchar

    @property
    def name(self) -> str:
        """The type's name without parameters (decimal, varchar...)."""
        return self.hive.split("(", 1)[0]

    @property
    def indexable(self) -> bool:
        """Whether BTREE, BLOOM and MINMAX indexes accept the type."""
        return self.name in INDEXABLE_TYPES


def column_type(type_text: str, column: str = "") -> ColumnType:
    """The ColumnType of a Hive type string; UnsupportedColumn (naming the column and type) for binary and
    complex types, which predicates cannot compare."""
    try:
        hive = parse_hive_type(type_text)
    except HiveTypeError as exc:
        raise UnsupportedColumn(f"column '{column}' has an unknown type {type_text!r}: {exc}") from None
    return _column_type(hive, column)


def _column_type(hive: HiveType, column: str) -> ColumnType:
    name = hive.name
    text = str(hive)
    if name in _INTEGER_RANGES:
        lo, hi = _INTEGER_RANGES[name]
        return ColumnType(text, Family.INTEGER, Domain.INT64, low=lo, high=hi)
    if name in ("float", "double"):
        return ColumnType(text, Family.FLOAT, Domain.INT64)
    if name == "decimal":
        precision, scale = hive.precision or 10, hive.scale or 0
        domain = Domain.INT64 if precision <= 18 else Domain.BYTES
        return ColumnType(text, Family.DECIMAL, domain, precision=precision, scale=scale)
    if name == "date":
        return ColumnType(text, Family.DATE, Domain.INT64)
    if name in ("string", "varchar"):
        return ColumnType(text, Family.STRING, Domain.BYTES, length=hive.length)
    if name == "char":
        return ColumnType(text, Family.CHAR, Domain.BYTES, length=hive.length)
    if name == "boolean":
        return ColumnType(text, Family.BOOLEAN, Domain.INT64, low=0, high=1)
    if name == "timestamp":
        return ColumnType(text, Family.TIMESTAMP, Domain.BYTES)
    raise UnsupportedColumn(f"column '{column}' is {text}; predicates compare only primitive non-binary columns")


def require_indexable(ctype: ColumnType, column: str) -> None:
    """UnsupportedColumn naming the column and its type unless an index may be built on it."""
    if not ctype.indexable:
        raise UnsupportedColumn(
            f"column '{column}' is {ctype.hive}; indexes support {', '.join(INDEXABLE_TYPES)}"
        )


# ---------------------------------------------------------------------------------------------- single keys

Key = int | bytes


def float_key(value: float) -> int:
    """The sortable int64 key of a double (-0.0 is 0.0, every NaN one key above +infinity)."""
    arr = float_keys(np.asarray([value], dtype=np.float64))
    return int(arr[0])


def float_keys(values: np.ndarray) -> np.ndarray:
    """Sortable int64 keys of float64 values (vectorised :func:`float_key`)."""
    arr = np.asarray(values, dtype=np.float64) + 0.0  # -0.0 + 0.0 is +0.0
    bits = arr.view(np.int64).copy()
    bits[np.isnan(arr)] = _CANONICAL_NAN
    return np.where(bits < 0, bits ^ _FLIP_MAGNITUDE, bits)


def key_to_float(key: int) -> float:
    """The double a float key stands for (inverse of :func:`float_key`)."""
    bits = np.int64(key)
    if bits < 0:
        bits = bits ^ _FLIP_MAGNITUDE
    return float(np.asarray([bits], dtype=np.int64).view(np.float64)[0])


def wide_decimal_key(unscaled: int) -> bytes:
    """16-byte big-endian two's complement with the sign bit flipped: bytewise order is numeric order."""
    return ((unscaled + (1 << 127)) & ((1 << 128) - 1)).to_bytes(16, "big")


def wide_decimal_value(key: bytes) -> int:
    """The unscaled integer of a :func:`wide_decimal_key`."""
    return int.from_bytes(key, "big") - (1 << 127)


def timestamp_key(seconds: int, nanos: int) -> bytes:
    """Seconds (sign bit flipped) and nanoseconds, big-endian: bytewise order is time order."""
    return struct.pack(">QI", (seconds + (1 << 63)) & ((1 << 64) - 1), nanos)


def timestamp_of_key(key: bytes) -> tuple[int, int]:
    """(seconds, nanos) of a :func:`timestamp_key`."""
    raw, nanos = struct.unpack(">QI", key)
    return raw - (1 << 63), nanos


def char_key(text: str) -> bytes:
    """A char(n) value as a key: UTF-8 without the trailing spaces of its padding."""
    return text.rstrip(" ").encode("utf-8")


def display_value(ctype: ColumnType, key: Key) -> object:
    """The Python value a key stands for (for messages, SHOW output and SELECT results)."""
    family = ctype.family
    if family is Family.FLOAT:
        assert isinstance(key, int)
        return key_to_float(key)
    if family is Family.DECIMAL:
        unscaled = key if isinstance(key, int) else wide_decimal_value(key)
        return Decimal(unscaled).scaleb(-ctype.scale)
    if family is Family.DATE:
        assert isinstance(key, int)
        return _EPOCH + dt.timedelta(days=key)
    if family is Family.BOOLEAN:
        return bool(key)
    if family in (Family.STRING, Family.CHAR):
        assert isinstance(key, bytes)
        return key.decode("utf-8", "surrogateescape")
    if family is Family.TIMESTAMP:
        assert isinstance(key, bytes)
        seconds, nanos = timestamp_of_key(key)
        return dt.datetime(1970, 1, 1) + dt.timedelta(seconds=seconds, microseconds=nanos // 1000)
    return key


# ---------------------------------------------------------------------------------------------- key arrays


@dataclass(frozen=True)
class Keys:
    """Keys of a run of values: ``values`` (int64 array, or object array of bytes) and ``present`` (None when no
    slot is null; null slots hold 0 or b'')."""

    domain: Domain
    values: np.ndarray
    present: np.ndarray | None

    def __len__(self) -> int:
        return len(self.values)

    def non_null(self) -> np.ndarray:
        """The keys of the non-null slots."""
        return self.values if self.present is None else self.values[self.present]

    @property
    def null_count(self) -> int:
        """Number of null slots."""
        return 0 if self.present is None else int(len(self.values) - np.count_nonzero(self.present))


def empty_keys(domain: Domain) -> np.ndarray:
    """An empty key array of the domain."""
    return np.zeros(0, dtype=np.int64 if domain is Domain.INT64 else object)


def null_keys(ctype: ColumnType, count: int) -> Keys:
    """Keys of ``count`` null values (a column a file lacks reads as NULL, as Hive's schema evolution)."""
    values = np.zeros(count, dtype=np.int64) if ctype.domain is Domain.INT64 else _bytes_array([b""] * count)
    return Keys(ctype.domain, values, np.zeros(count, dtype=bool))


def _bytes_array(items: list[bytes]) -> np.ndarray:
    out = np.empty(len(items), dtype=object)
    out[:] = items
    return out


class KeyConversionError(ValueError):
    """A file column's values cannot stand for the table column's type (the message says which)."""


def keys_of(vector: ColumnVector, ctype: ColumnType) -> Keys:
    """Canonical keys of every slot of an ORC column vector read for a column of type ``ctype``.

    Integer files may back integer, float/double and decimal columns (Hive's widening); other mismatches are a
    KeyConversionError."""
    present = vector.present
    family = ctype.family
    values: np.ndarray
    if isinstance(vector, LongVector):
        raw = np.asarray(vector.values).astype(np.int64, copy=False)
        if family in (Family.INTEGER, Family.DATE, Family.BOOLEAN):
            values = raw
        elif family is Family.FLOAT:
            values = float_keys(raw.astype(np.float64))
        elif family is Family.DECIMAL:
            values = _decimal_keys([int(v) for v in raw.tolist()], 0, ctype)
        else:
            raise KeyConversionError(f"integer values cannot be read as {ctype.hive}")
    elif isinstance(vector, DoubleVector):
        if family is not Family.FLOAT:
            raise KeyConversionError(f"floating point values cannot be read as {ctype.hive}")
        values = float_keys(np.asarray(vector.values, dtype=np.float64))
    elif isinstance(vector, DecimalVector):
        if family is not Family.DECIMAL:
            raise KeyConversionError(f"decimal values cannot be read as {ctype.hive}")
        values = _decimal_vector_keys(vector, ctype)
    elif isinstance(vector, BytesVector | DictionaryBytesVector):
        if family not in (Family.STRING, Family.CHAR) or not vector.is_text:
            raise KeyConversionError(f"{vector.type} values cannot be read as {ctype.hive}")
        values = _string_keys(vector, family is Family.CHAR)
    elif isinstance(vector, TimestampVector):
        if family is not Family.TIMESTAMP:
            raise KeyConversionError(f"timestamp values cannot be read as {ctype.hive}")
        values = _timestamp_keys(np.asarray(vector.seconds, np.int64), np.asarray(vector.nanos, np.int64))
    else:
        raise KeyConversionError(f"{vector.type} values cannot be read as {ctype.hive}")
    if present is not None and ctype.domain is Domain.INT64:
        values = np.where(present, values, 0)
    return Keys(ctype.domain, values, None if present is None else np.asarray(present, dtype=bool))


def _decimal_vector_keys(vector: DecimalVector, ctype: ColumnType) -> np.ndarray:
    unscaled = vector.unscaled
    if vector.scales is None and vector.scale == ctype.scale and unscaled.dtype == np.int64:
        if ctype.domain is Domain.INT64:
            return unscaled.copy()
        return _bytes_array([wide_decimal_key(int(v)) for v in unscaled.tolist()])
    ints = [int(v) for v in unscaled.tolist()]
    if vector.scales is None:
        return _decimal_keys(ints, vector.scale, ctype)
    # Hive 0.11 decimals keep a scale per value
    scales = vector.scales.tolist()
    out = [_rescale(v, s, ctype.scale) for v, s in zip(ints, scales, strict=True)]
    return _decimal_keys(out, ctype.scale, ctype)


def _rescale(unscaled: int, scale: int, target: int) -> int:
    """An unscaled value moved from ``scale`` to ``target`` (extra digits cut toward zero, as ORC readers do)."""
    if scale == target:
        return unscaled
    if scale < target:
        return unscaled * 10 ** (target - scale)
    q = abs(unscaled) // 10 ** (scale - target)
    return q if unscaled >= 0 else -q


def _decimal_keys(unscaled: list[int], scale: int, ctype: ColumnType) -> np.ndarray:
    values = [_rescale(v, scale, ctype.scale) for v in unscaled]
    if ctype.domain is Domain.INT64:
        limit = 1 << 63
        if any(not -limit <= v < limit for v in values):
            raise KeyConversionError(f"a decimal value does not fit {ctype.hive}")
        return np.asarray(values, dtype=np.int64)
    return _bytes_array([wide_decimal_key(v) for v in values])


def _string_keys(vector: BytesVector | DictionaryBytesVector, strip: bool) -> np.ndarray:
    if isinstance(vector, DictionaryBytesVector):
        assert vector.dictionary is not None
        entries = vector.dictionary.raw_values()
        if strip:
            entries = [e.rstrip(b" ") for e in entries]
        table = _bytes_array([*entries, b""])
        idx = vector.indices if vector.present is None else np.where(vector.present, vector.indices, -1)
        return table[np.asarray(idx, dtype=np.int64)]
    raw = vector.raw_values()
    if strip:
        raw = [r.rstrip(b" ") for r in raw]
    return _bytes_array(raw)


def _timestamp_keys(seconds: np.ndarray, nanos: np.ndarray) -> np.ndarray:
    n = len(seconds)
    packed = np.empty(n, dtype=[("s", ">u8"), ("n", ">u4")])
    packed["s"] = seconds.view(np.uint64) ^ _SIGN64
    packed["n"] = nanos.astype(np.uint32)
    buf = packed.tobytes()
    return _bytes_array([buf[i * 12 : i * 12 + 12] for i in range(n)])


def date_key(value: dt.date) -> int:
    """Days since 1970-01-01."""
    return (value - _EPOCH).days
