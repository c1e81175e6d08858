"""Turning what users hand the writer (numpy arrays, masked arrays, Python lists with None, nested lists, dicts
and tuples) into flat per-column arrays in ORC's layout, one :class:`ColumnData` per schema node.

Layout (the same as the ORC streams): every column has a number of ``rows`` in its own row space and a
``present`` mask over them (None when nothing is null); values exist only for present rows. A struct's fields
have one row per present struct row; a list's (or map's) element columns one row per element of the present
lists; a union's alternatives one row per present union row carrying that tag.

Values per category: booleans ``bool``; tinyint..bigint and date (days since 1970-01-01) ``int64``; float
``float32``; double ``float64``; string/char/varchar/binary :class:`Utf8Values` (bytes after char padding or
varchar truncation); decimal ``int64`` unscaled at the column scale (precision <= 18) or an object array of
Python ints; timestamps :class:`TimestampValues` (floor epoch seconds and nanoseconds); list/map ``int64``
lengths; union ``uint8`` tags.
"""

from __future__ import annotations

import datetime as dt
import itertools
import operator
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from decimal import ROUND_HALF_UP, Context, Decimal, InvalidOperation
from typing import Any

import numpy as np

from ._errors import OrcError
from ._types import Category, TypeDescription

_INT_RANGES = {
    Category.BYTE: (-(1 << 7), (1 << 7) - 1),
    Category.SHORT: (-(1 << 15), (1 << 15) - 1),
    Category.INT: (-(1 << 31), (1 << 31) - 1),
    Category.LONG: (-(1 << 63), (1 << 63) - 1),
}
_EPOCH_ORDINAL = dt.date(1970, 1, 1).toordinal()
_NANOS = 1_000_000_000
_UNIT_NANOS = {"s": _NANOS, "ms": 1_000_000, "us": 1_000, "ns": 1}
_WIDE = Context(prec=200)
_ROUNDING = Context(prec=200, rounding=ROUND_HALF_UP, Emax=999_999, Emin=-999_999)


@dataclass
class Utf8Values:
    """Variable-length byte values: all bytes concatenated plus each value's length."""

    data: np.ndarray  # uint8
    lengths: np.ndarray  # int64
    # when known cheaply (from str input): value i equals code_values[codes[i]]; lets dictionary encoding skip
    # sorting every value
    codes: np.ndarray | None = None
    code_values: list[bytes] | None = None

    @property
    def offsets(self) -> np.ndarray:
        """Start of each value in ``data`` plus the end (length n + 1)."""
        out = np.zeros(len(self.lengths) + 1, dtype=np.int64)
        np.cumsum(self.lengths, out=out[1:])
        return out

    def to_list(self) -> list[bytes]:
        """Each value as a ``bytes`` object."""
        raw = self.data.tobytes()
        offs = self.offsets.tolist()
        return [raw[a:b] for a, b in zip(offs[:-1], offs[1:], strict=True)]


@dataclass
class TimestampValues:
    """Instants as floor seconds since 1970-01-01 (UTC or wall clock) and nanoseconds in that second.

    Also an input form for timestamp columns (any year, nanosecond precision), with ``present`` marking the
    rows that are not null (None: no nulls).
    """

    seconds: np.ndarray  # int64
    nanos: np.ndarray  # int64 in [0, 1e9)
    present: np.ndarray | None = None

    def __len__(self) -> int:
        return len(self.seconds)

    def __getitem__(self, rows: slice) -> TimestampValues:
        present = None if self.present is None else self.present[rows]
        return TimestampValues(self.seconds[rows], self.nanos[rows], present)


@dataclass
class ColumnData:
    """One column's slice of rows: null mask, values of the present rows, and child columns."""

    type: TypeDescription
    rows: int
    present: np.ndarray | None
    values: Any = None
    children: list[ColumnData] = field(default_factory=list)
    raw_bytes: int = 0  # rough uncompressed size, for cutting stripes

    @property
    def value_count(self) -> int:
        """Number of present rows (rows that carry a value)."""
        return self.rows if self.present is None else int(np.count_nonzero(self.present))

    def total_raw_bytes(self) -> int:
        """Rough size of this column and its children."""
        return self.raw_bytes + sum(c.total_raw_bytes() for c in self.children)


# ------------------------------------------------------------------------------------------------ helpers


def _describe(path: str) -> str:
    return f"column {path!r}" if path else "the root column"


class ColumnValueError(OrcError):
    """A value the writer cannot store; ``row`` is its row in the batch (for top-level columns) when known."""

    def __init__(self, path: str, reason: str, row: int | None = None) -> None:
        self.path = path
        self.problem = reason
        self.row = row
        super().__init__(self._text())

    def _text(self) -> str:
        where = "" if self.row is None else f" ({'row' if '.' not in self.path else 'element'} {self.row})"
        return f"{_describe(self.path)}: {self.problem}{where}"

    def shifted(self, rows: int) -> ColumnValueError:
        """The same error with its row moved by ``rows`` (the batch was written in chunks)."""
        return ColumnValueError(self.path, self.problem, None if self.row is None else self.row + rows)


def _fail(path: str, message: str, index: int | None = None) -> ColumnValueError:
    # ``index`` counts non-null values here; shred() turns it into a row number
    return ColumnValueError(path, message, index)


def _kinds_of(values: Any, kinds: set[type] | None) -> set[type]:
    """The element types of a value list (given when _split_nulls already looked)."""
    return kinds if kinds is not None else set(map(type, values))


def _split_nulls(data: Any, path: str) -> tuple[np.ndarray | None, Any, int, set[type] | None]:
    """(present mask or None, the non-null values, row count, their element types when a list) of a column."""
    if isinstance(data, TimestampValues):
        seconds = np.asarray(data.seconds, dtype=np.int64)
        nanos = np.asarray(data.nanos, dtype=np.int64)
        if data.present is None or np.all(data.present):
            return None, TimestampValues(seconds, nanos), len(seconds), None
        present = np.asarray(data.present, dtype=bool)
        return present, TimestampValues(seconds[present], nanos[present]), len(seconds), None
    if isinstance(data, np.ma.MaskedArray):
        mask = np.ma.getmaskarray(data)
        raw = np.asarray(data.data)
        if raw.dtype == object:
            raw_list = raw.tolist()
            not_none = map(operator.is_not, raw_list, itertools.repeat(None))
            present = ~mask & np.fromiter(not_none, dtype=bool, count=len(raw_list))
            values = [v for v, p in zip(raw_list, present.tolist(), strict=True) if p]
            return (None if present.all() else present), values, len(raw_list), None
        return (None if not mask.any() else ~mask), raw[~mask], len(raw), None
    if isinstance(data, np.ndarray):
        if data.ndim != 1:
            raise _fail(path, f"expected a 1-dimensional array, got shape {data.shape}")
        if data.dtype == object:
            data = data.tolist()
        elif np.issubdtype(data.dtype, np.datetime64):
            nat = np.isnat(data)
            return (None if not nat.any() else ~nat), data[~nat], len(data), None
        else:
            return None, data, len(data), None
    if isinstance(data, (str, bytes)) or not isinstance(data, Sequence) and not hasattr(data, "__iter__"):
        raise _fail(path, f"expected a sequence of values, got {type(data).__name__}")
    items = data if isinstance(data, list) else list(data)
    kinds = set(map(type, items))
    if type(None) not in kinds:
        return None, items, len(items), kinds
    # identity tests only: == against None is slow for some types (Decimal goes through abc checks)
    present = np.fromiter(map(operator.is_not, items, itertools.repeat(None)), dtype=bool, count=len(items))
    values = [v for v in items if v is not None]
    return present, values, len(items), kinds - {type(None)}


def _first_bad(values: Sequence[Any], predicate: Callable[[Any], bool]) -> int:
    for i, v in enumerate(values):
        if predicate(v):
            return i
    return -1


# ------------------------------------------------------------------------------------------------ primitives


def _booleans(values: Any, path: str) -> np.ndarray:
    if isinstance(values, np.ndarray):
        if values.dtype == bool:
            return values
        if np.issubdtype(values.dtype, np.integer):
            return values != 0
        raise _fail(path, f"boolean column needs bools, got array of {values.dtype}")
    bad = _first_bad(values, lambda v: not isinstance(v, (bool, int, np.bool_, np.integer)))
    if bad >= 0:
        raise _fail(path, f"boolean column needs bools, got {type(values[bad]).__name__} {values[bad]!r}", bad)
    return np.array(values, dtype=bool)


def _integers(values: Any, category: Category, path: str) -> np.ndarray:
    lo, hi = _INT_RANGES[category]
    if isinstance(values, np.ndarray):
        if values.dtype == bool or not np.issubdtype(values.dtype, np.integer):
            raise _fail(path, f"{category.type_name} column needs integers, got array of {values.dtype}")
        if values.dtype == np.uint64 and len(values) and int(values.max()) > hi:
            raise _fail(path, f"value {int(values.max())} is outside the range of {category.type_name}")
        arr = values.astype(np.int64)
    else:
        bad = _first_bad(
            values, lambda v: isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer))
        )
        if bad >= 0:
            raise _fail(
                path, f"{category.type_name} column needs integers, got {type(values[bad]).__name__} {values[bad]!r}",
                bad,
            )
        try:
            arr = np.array(values, dtype=np.int64)
        except OverflowError:
            bad = _first_bad(values, lambda v: not lo <= int(v) <= hi)
            raise _fail(path, f"value {values[bad]} is outside the range of {category.type_name}", bad) from None
    if category != Category.LONG and len(arr):
        outside = (arr < lo) | (arr > hi)
        if outside.any():
            bad = int(np.argmax(outside))
            raise _fail(path, f"value {int(arr[bad])} is outside the range of {category.type_name}", bad)
    return arr


def _floats(values: Any, category: Category, path: str) -> np.ndarray:
    dtype = np.float32 if category == Category.FLOAT else np.float64
    if isinstance(values, np.ndarray):
        if not (np.issubdtype(values.dtype, np.floating) or np.issubdtype(values.dtype, np.integer)):
            raise _fail(path, f"{category.type_name} column needs numbers, got array of {values.dtype}")
        return values.astype(dtype)
    bad = _first_bad(values, lambda v: isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.number)))
    if bad >= 0:
        raise _fail(path, f"{category.type_name} column needs numbers, got {type(values[bad]).__name__} {values[bad]!r}", bad)
    # doubles first: Java narrows the double it is given to float for a float column
    return np.array(values, dtype=np.float64).astype(dtype)


def _utf8(values: Any, category: Category, path: str, kinds: set[type] | None = None) -> Utf8Values:
    if isinstance(values, np.ndarray):
        values = values.tolist()
    if category == Category.BINARY:
        bad = _first_bad(values, lambda v: not isinstance(v, (bytes, bytearray, memoryview)))
        if bad >= 0:
            raise _fail(path, f"binary column needs bytes, got {type(values[bad]).__name__}", bad)
        items = [bytes(v) if not isinstance(v, bytes) else v for v in values]
        lengths = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
        return Utf8Values(np.frombuffer(b"".join(items), dtype=np.uint8), lengths)
    if _kinds_of(values, kinds) <= {str}:
        codes, code_values = _dictionary_codes(values)
        joined = "\x00".join(values)
        if len(values) and joined.count("\x00") == len(values) - 1:
            # no NUL inside any value: the separators give every value's byte length after one encode
            buf = np.frombuffer(joined.encode("utf-8", "surrogatepass"), dtype=np.uint8)
            separators = np.flatnonzero(buf == 0)
            bounds = np.concatenate([[-1], separators, [len(buf)]])
            lengths = np.diff(bounds) - 1
            data = buf[buf != 0] if len(separators) else buf.copy()  # every 0 byte is a separator
            return Utf8Values(data, lengths, codes, code_values)
        items = [v.encode("utf-8", "surrogatepass") for v in values]
        lengths = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
        return Utf8Values(np.frombuffer(b"".join(items), dtype=np.uint8), lengths, codes, code_values)
    else:
        bad = _first_bad(values, lambda v: not isinstance(v, (str, bytes, bytearray, np.str_)))
        if bad >= 0:
            raise _fail(path, f"{category.type_name} column needs str, got {type(values[bad]).__name__}", bad)
        items = [v.encode("utf-8", "surrogatepass") if isinstance(v, str) else bytes(v) for v in values]
    lengths = np.fromiter(map(len, items), dtype=np.int64, count=len(items))
    return Utf8Values(np.frombuffer(b"".join(items), dtype=np.uint8), lengths)


_CODE_SAMPLE = 10_000


def _dictionary_codes(values: list[str]) -> tuple[np.ndarray | None, list[bytes] | None]:
    """Codes of each string among the distinct ones (first-seen order), unless the strings look too distinct to
    ever be dictionary encoded (then building the dictionary would be wasted work)."""
    sample = values[:_CODE_SAMPLE]
    if len(sample) > 100 and len(set(sample)) > 0.8 * len(sample):
        return None, None
    index = dict.fromkeys(values)
    for i, key in enumerate(index):
        index[key] = i
    codes = np.fromiter(map(index.__getitem__, values), dtype=np.int64, count=len(values))
    return codes, [k.encode("utf-8", "surrogatepass") for k in index]


def _recode(values: Utf8Values, new_code_values: list[bytes]) -> Utf8Values:
    """Codes after the code values changed (char padding, varchar cut): equal results share one code."""
    index: dict[bytes, int] = {}
    remap = np.fromiter((index.setdefault(v, len(index)) for v in new_code_values), dtype=np.int64,
                        count=len(new_code_values))
    assert values.codes is not None
    return Utf8Values(values.data, values.lengths, remap[values.codes], list(index))


def _char_counts(values: Utf8Values) -> tuple[np.ndarray, np.ndarray]:
    """Per byte: 1 where a UTF-8 character starts; per byte: its character number inside its value (1-based)."""
    starts = ((values.data & 0xC0) != 0x80).astype(np.int64)
    running = np.cumsum(starts)
    offsets = values.offsets
    before = np.concatenate([[0], running])[offsets[:-1]]
    local = running - np.repeat(before, values.lengths)
    return starts, local


def segment_sums(values: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Sum of ``values[offsets[i]:offsets[i+1]]`` for each i (empty segments give 0)."""
    running = np.zeros(len(values) + 1, dtype=np.int64)
    np.cumsum(values, out=running[1:])
    return running[offsets[1:]] - running[offsets[:-1]]


def fit_char(values: Utf8Values, length: int, pad: bool) -> Utf8Values:
    """varchar(n): cut values to n characters; char(n): also pad shorter values with spaces (Java's rules)."""
    fitted = _fit_char(values, length, pad)
    if values.codes is not None and values.code_values is not None:
        lengths = np.fromiter(map(len, values.code_values), dtype=np.int64, count=len(values.code_values))
        uniq = Utf8Values(np.frombuffer(b"".join(values.code_values), dtype=np.uint8), lengths)
        new_values = _fit_char(uniq, length, pad).to_list()
        fitted.codes, fitted.code_values = values.codes, values.code_values
        return _recode(fitted, new_values)
    return fitted


def _fit_char(values: Utf8Values, length: int, pad: bool) -> Utf8Values:
    if len(values.lengths) == 0:
        return Utf8Values(values.data, values.lengths)
    starts, local = _char_counts(values)
    offsets = values.offsets
    counts = segment_sums(starts, offsets)
    data, lengths = values.data, values.lengths
    if (counts > length).any():
        keep = local <= length
        data = data[keep]
        lengths = segment_sums(keep.astype(np.int64), offsets)
        counts = np.minimum(counts, length)
    if pad and (counts < length).any():
        padding = length - counts
        new_lengths = lengths + padding
        out = np.full(int(new_lengths.sum()), ord(" "), dtype=np.uint8)
        new_offsets = np.zeros(len(new_lengths), dtype=np.int64)
        np.cumsum(new_lengths[:-1], out=new_offsets[1:])
        old_offsets = np.zeros(len(lengths), dtype=np.int64)
        np.cumsum(lengths[:-1], out=old_offsets[1:])
        if len(data):
            shift = np.repeat(new_offsets - old_offsets, lengths)
            out[np.arange(len(data)) + shift] = data
        return Utf8Values(out, new_lengths)
    return Utf8Values(data, lengths)


def _decimal_value(v: Any, scale: int, limit: int, path: str, index: int) -> int:
    if isinstance(v, (bool, np.bool_)):
        raise _fail(path, f"decimal column needs numbers, got {v!r}", index)
    if isinstance(v, (int, np.integer)):
        unscaled = int(v) * 10**scale
    else:
        try:
            if isinstance(v, (float, np.floating)):
                d = Decimal(repr(float(v)))
            elif isinstance(v, Decimal):
                d = v
            elif isinstance(v, str):
                d = Decimal(v.strip())
            else:
                raise _fail(path, f"decimal column needs Decimal, int, float or str, got {type(v).__name__}", index)
        except InvalidOperation:
            raise _fail(path, f"{v!r} is not a decimal number", index) from None
        if not d.is_finite():
            raise _fail(path, f"{v!r} is not a finite decimal", index)
        unscaled = int(d.scaleb(scale, _WIDE).quantize(Decimal(1), rounding=ROUND_HALF_UP, context=_WIDE))
    if abs(unscaled) >= limit:
        raise _fail(path, f"{v!r} does not fit the column's precision", index)
    return unscaled


def _fast_unscaled(items: list[Any], scale: int, kinds: set[type] | None = None) -> list[int] | None:
    """Unscaled values of a list of Decimals through the C decimal context (no Python loop), or None when
    some value is not a finite Decimal (the slow path then names it)."""
    if _kinds_of(items, kinds) - {Decimal}:
        return None
    try:
        scaled = map(_ROUNDING.scaleb, items, itertools.repeat(scale))
        return list(map(int, map(_ROUNDING.to_integral_value, scaled)))
    except (ValueError, OverflowError, InvalidOperation):
        return None


def _decimals(values: Any, column: TypeDescription, path: str, kinds: set[type] | None = None) -> np.ndarray:
    precision = column.precision or 38
    scale = column.scale or 0
    limit = 10**precision
    if isinstance(values, np.ndarray) and np.issubdtype(values.dtype, np.integer) and values.dtype != bool:
        if precision <= 18 and len(values):
            wide = values.astype(np.int64)
            bound = limit // 10**scale
            if not ((wide >= bound) | (wide <= -bound)).any():
                return wide * np.int64(10**scale)
        unscaled_list = [int(v) * 10**scale for v in values.tolist()]
    else:
        items = values.tolist() if isinstance(values, np.ndarray) else values
        fast = _fast_unscaled(items, scale, kinds if items is values else None)
        if fast is None:
            fast = [_decimal_value(v, scale, limit, path, i) for i, v in enumerate(items)]
        unscaled_list = fast
    if precision <= 18:
        try:
            arr = np.array(unscaled_list, dtype=np.int64)
        except OverflowError:
            arr = None
        if arr is not None and not ((arr >= limit) | (arr <= -limit)).any():
            return arr
    bad = _first_bad(unscaled_list, lambda u: abs(u) >= limit)
    if bad >= 0:
        raise _fail(path, f"value {unscaled_list[bad]}e-{scale} does not fit decimal({precision},{scale})", bad)
    out = np.empty(len(unscaled_list), dtype=object)
    out[:] = unscaled_list
    return out


def _dates(values: Any, path: str) -> np.ndarray:
    if isinstance(values, np.ndarray):
        if np.issubdtype(values.dtype, np.datetime64):
            return values.astype("datetime64[D]").astype(np.int64)
        if np.issubdtype(values.dtype, np.integer) and values.dtype != bool:
            return values.astype(np.int64)
        raise _fail(path, f"date column needs dates, got array of {values.dtype}")
    bad = _first_bad(
        values,
        lambda v: isinstance(v, dt.datetime) or not isinstance(v, (dt.date, np.datetime64, int, np.integer))
        or isinstance(v, (bool, np.bool_)),
    )
    if bad >= 0:
        raise _fail(path, f"date column needs datetime.date values, got {type(values[bad]).__name__} {values[bad]!r}", bad)
    if values and all(type(v) is dt.date for v in values):
        return np.array(values, dtype="datetime64[D]").astype(np.int64)
    return np.array(
        [v.toordinal() - _EPOCH_ORDINAL if isinstance(v, dt.date) else
         int(v.astype("datetime64[D]").astype(np.int64)) if isinstance(v, np.datetime64) else int(v) for v in values],
        dtype=np.int64,
    )


def _timestamps(values: Any, instant: bool, path: str) -> TimestampValues:
    if isinstance(values, TimestampValues):
        out_of_range = np.flatnonzero((values.nanos < 0) | (values.nanos >= _NANOS))
        if len(out_of_range):
            first = int(out_of_range[0])
            raise _fail(path, f"nanoseconds {int(values.nanos[first])} are not in 0..999999999", first)
        return TimestampValues(values.seconds, values.nanos)
    if isinstance(values, np.ndarray):
        if not np.issubdtype(values.dtype, np.datetime64):
            raise _fail(path, f"timestamp column needs datetimes, got array of {values.dtype}")
        unit = np.datetime_data(values.dtype)[0]
        if unit not in _UNIT_NANOS:
            values = values.astype("datetime64[s]")
            unit = "s"
        counts = values.astype(np.int64)
        per_second = _NANOS // _UNIT_NANOS[unit]
        seconds = counts // per_second
        nanos = (counts - seconds * per_second) * _UNIT_NANOS[unit]
        return TimestampValues(seconds, nanos)
    bad = _first_bad(values, lambda v: not isinstance(v, (dt.datetime, np.datetime64)))
    if bad >= 0:
        raise _fail(path, f"timestamp column needs datetime values, got {type(values[bad]).__name__} {values[bad]!r}", bad)
    extra = None
    if any(isinstance(v, dt.datetime) and v.tzinfo is not None for v in values):
        values = [
            v.astimezone(dt.UTC).replace(tzinfo=None) if isinstance(v, dt.datetime) and v.tzinfo is not None else v
            for v in values
        ]
    if any(hasattr(v, "nanosecond") for v in values):  # pandas Timestamps keep nanoseconds
        extra = np.fromiter((getattr(v, "nanosecond", 0) for v in values), dtype=np.int64, count=len(values))
    micros = np.array(
        [v.replace(tzinfo=None) if isinstance(v, dt.datetime) else v for v in values], dtype="datetime64[us]"
    ).astype(np.int64)
    seconds = micros // 1_000_000
    nanos = (micros - seconds * 1_000_000) * 1000
    if extra is not None:
        nanos = nanos + extra
    return TimestampValues(seconds, nanos)


# ------------------------------------------------------------------------------------------------ shredding


def shred(column: TypeDescription, data: Any, path: str = "") -> ColumnData:
    """Convert one column's values (any accepted form) into :class:`ColumnData`, recursing into children."""
    present, values, rows, kinds = _split_nulls(data, path)
    try:
        return _shred_values(column, present, values, rows, path, kinds)
    except ColumnValueError as exc:
        if exc.path != path or exc.row is None or present is None:
            raise
        # the failing value's index counts non-null values only: report its row
        raise ColumnValueError(path, exc.problem, int(np.flatnonzero(present)[exc.row])) from None


def _shred_values(
    column: TypeDescription, present: np.ndarray | None, values: Any, rows: int, path: str, kinds: set[type] | None
) -> ColumnData:
    c = column.category
    n = len(values)
    if c == Category.BOOLEAN:
        arr = _booleans(values, path)
        return ColumnData(column, rows, present, arr, raw_bytes=n)
    if c in _INT_RANGES:
        arr = _integers(values, c, path)
        return ColumnData(column, rows, present, arr, raw_bytes=8 * n)
    if c in (Category.FLOAT, Category.DOUBLE):
        arr = _floats(values, c, path)
        return ColumnData(column, rows, present, arr, raw_bytes=arr.itemsize * n)
    if c in (Category.STRING, Category.CHAR, Category.VARCHAR, Category.BINARY):
        strings = _utf8(values, c, path, kinds)
        if c == Category.CHAR:
            strings = fit_char(strings, column.max_length or 1, pad=True)
        elif c == Category.VARCHAR:
            strings = fit_char(strings, column.max_length or 1, pad=False)
        return ColumnData(column, rows, present, strings, raw_bytes=len(strings.data) + 2 * n)
    if c == Category.DECIMAL:
        arr = _decimals(values, column, path, kinds)
        return ColumnData(column, rows, present, arr, raw_bytes=(8 if arr.dtype != object else 17) * n)
    if c == Category.DATE:
        arr = _dates(values, path)
        return ColumnData(column, rows, present, arr, raw_bytes=4 * n)
    if c in (Category.TIMESTAMP, Category.TIMESTAMP_INSTANT):
        ts = _timestamps(values, c == Category.TIMESTAMP_INSTANT, path)
        return ColumnData(column, rows, present, ts, raw_bytes=12 * n)
    if isinstance(values, np.ndarray):
        values = list(values)
    if c == Category.LIST:
        return _shred_list(column, values, rows, present, path)
    if c == Category.MAP:
        return _shred_map(column, values, rows, present, path)
    if c == Category.STRUCT:
        return _shred_struct(column, values, rows, present, path)
    if c == Category.UNION:
        return _shred_union(column, values, rows, present, path)
    raise _fail(path, f"cannot write columns of type {column}")


def _child_path(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _shred_list(column: TypeDescription, values: Any, rows: int, present: np.ndarray | None, path: str) -> ColumnData:
    bad = _first_bad(values, lambda v: isinstance(v, (str, bytes, Mapping)) or not hasattr(v, "__len__"))
    if bad >= 0:
        raise _fail(path, f"array column needs lists, got {type(values[bad]).__name__}", bad)
    lengths = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
    if all(isinstance(v, np.ndarray) for v in values) and values:
        elements: Any = np.concatenate(values) if any(len(v) for v in values) else []
        if isinstance(elements, np.ndarray) and elements.dtype == object:
            elements = elements.tolist()
    else:
        elements = list(itertools.chain.from_iterable(values))
    child = shred(column.children[0], elements, _child_path(path, "_elem"))
    return ColumnData(column, rows, present, lengths, [child], raw_bytes=4 * len(values))


def _shred_map(column: TypeDescription, values: Any, rows: int, present: np.ndarray | None, path: str) -> ColumnData:
    keys: list[Any] = []
    items: list[Any] = []
    lengths = np.zeros(len(values), dtype=np.int64)
    for i, v in enumerate(values):
        if isinstance(v, Mapping):
            keys.extend(v.keys())
            items.extend(v.values())
            lengths[i] = len(v)
        elif isinstance(v, (list, tuple)):
            try:
                for k, x in v:
                    keys.append(k)
                    items.append(x)
            except (TypeError, ValueError):
                raise _fail(path, "map column needs dicts or lists of (key, value) pairs", i) from None
            lengths[i] = len(v)
        else:
            raise _fail(path, f"map column needs dicts, got {type(v).__name__}", i)
    key_data = shred(column.children[0], keys, _child_path(path, "_key"))
    value_data = shred(column.children[1], items, _child_path(path, "_value"))
    return ColumnData(column, rows, present, lengths, [key_data, value_data], raw_bytes=4 * len(values))


def _shred_struct(column: TypeDescription, values: Any, rows: int, present: np.ndarray | None, path: str) -> ColumnData:
    names = column.field_names
    children = []
    for f, (name, child_type) in enumerate(zip(names, column.children, strict=True)):
        picked = []
        for i, v in enumerate(values):
            if isinstance(v, Mapping):
                picked.append(v.get(name))
            elif isinstance(v, (tuple, list)):
                if len(v) != len(names):
                    raise _fail(path, f"struct column needs {len(names)} fields, got {len(v)}", i)
                picked.append(v[f])
            else:
                raise _fail(path, f"struct column needs dicts or tuples, got {type(v).__name__}", i)
        children.append(shred(child_type, picked, _child_path(path, name)))
    return ColumnData(column, rows, present, None, children)


def _shred_union(column: TypeDescription, values: Any, rows: int, present: np.ndarray | None, path: str) -> ColumnData:
    alternatives = len(column.children)
    tags = np.zeros(len(values), dtype=np.uint8)
    parts: list[list[Any]] = [[] for _ in range(alternatives)]
    for i, v in enumerate(values):
        if not isinstance(v, (tuple, list)) or len(v) != 2:
            raise _fail(path, "union column needs (tag, value) pairs", i)
        tag, value = v
        if not isinstance(tag, (int, np.integer)) or not 0 <= int(tag) < alternatives:
            raise _fail(path, f"union tag {tag!r} is not in 0..{alternatives - 1}", i)
        tags[i] = tag
        parts[int(tag)].append(value)
    children = [shred(t, parts[k], _child_path(path, str(k))) for k, t in enumerate(column.children)]
    return ColumnData(column, rows, present, tags, children, raw_bytes=len(values))


# ------------------------------------------------------------------------------------------------ concatenation


def _concat_values(pieces: list[Any]) -> Any:
    first = pieces[0]
    if first is None:
        return None
    if isinstance(first, Utf8Values):
        merged = Utf8Values(np.concatenate([p.data for p in pieces]), np.concatenate([p.lengths for p in pieces]))
        if all(p.codes is not None for p in pieces):
            index: dict[bytes, int] = {}
            parts = []
            for p in pieces:
                assert p.code_values is not None and p.codes is not None
                remap = np.fromiter((index.setdefault(v, len(index)) for v in p.code_values), dtype=np.int64,
                                    count=len(p.code_values))
                parts.append(remap[p.codes])
            merged.codes, merged.code_values = np.concatenate(parts), list(index)
        return merged
    if isinstance(first, TimestampValues):
        return TimestampValues(
            np.concatenate([p.seconds for p in pieces]), np.concatenate([p.nanos for p in pieces])
        )
    return np.concatenate(pieces)


def concat_columns(pieces: list[ColumnData]) -> ColumnData:
    """One :class:`ColumnData` holding the rows of ``pieces`` in order (children concatenated alike)."""
    if len(pieces) == 1:
        return pieces[0]
    column = pieces[0].type
    rows = sum(p.rows for p in pieces)
    if all(p.present is None for p in pieces):
        present = None
    else:
        present = np.concatenate([np.ones(p.rows, dtype=bool) if p.present is None else p.present for p in pieces])
    values = _concat_values([p.values for p in pieces])
    children = [concat_columns([p.children[k] for p in pieces]) for k in range(len(column.children))]
    return ColumnData(column, rows, present, values, children, sum(p.raw_bytes for p in pieces))


def empty_column(column: TypeDescription) -> ColumnData:
    """A column with no rows."""
    return shred(column, [], "")
