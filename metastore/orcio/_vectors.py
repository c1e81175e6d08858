"""Columnar results of the ORC reader: one :class:`ColumnVector` subclass per kind of column, numpy underneath.

Every vector has ``length`` slots and ``present`` (a bool array, True where the slot holds a value; ``None``
when the vector has no nulls). Value arrays are full length; null slots hold 0 / empty. Nested vectors:
- :class:`StructVector` children have the struct's length (a null struct makes its fields null too);
- :class:`ListVector`/:class:`MapVector` have ``offsets`` (length + 1) into their element vectors;
- :class:`UnionVector` has ``tags`` and ``offsets`` into dense per-alternative vectors.

``to_pylist()`` gives Python values: bool, int, float, str, bytes, Decimal, datetime.date, datetime.datetime
(naive wall clock for ``timestamp``, aware UTC for ``timestamp with local time zone``; microsecond precision),
list, dict (maps; a list of (key, value) pairs when keys are not hashable), dict (structs) and (tag, value)
tuples (unions).
"""

from __future__ import annotations

import datetime as dt
import decimal
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any, TypeVar

import numpy as np

from ._errors import OrcError
from ._types import Category, TypeDescription

_EPOCH_DATE_ORDINAL = dt.date(1970, 1, 1).toordinal()
_MIN_DAYS = dt.date.min.toordinal() - _EPOCH_DATE_ORDINAL
_MAX_DAYS = dt.date.max.toordinal() - _EPOCH_DATE_ORDINAL
_EPOCH_NAIVE = dt.datetime(1970, 1, 1)
_EPOCH_UTC = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
#: scaleb in this context never rounds: decimal(38, s) values keep every digit (the default context has 28)
_EXACT = decimal.Context(prec=decimal.MAX_PREC, Emax=decimal.MAX_EMAX, Emin=decimal.MIN_EMIN)


def _spread(values: np.ndarray, mask: np.ndarray, fill: object = 0) -> np.ndarray:
    """Place ``values`` (one per True in ``mask``) into a full-length array."""
    if values.dtype == object:
        out = np.empty(len(mask), dtype=object)
        out[:] = fill if fill != 0 else None
    else:
        out = np.zeros(len(mask), dtype=values.dtype)
    out[mask] = values
    return out


def _spread_offsets(offsets: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Offsets (one more than slots) of a dense vector widened to ``len(mask)`` slots: a null slot is empty,
    so the offset after slot i is the dense offset after the present slots up to i."""
    out = np.empty(len(mask) + 1, dtype=np.int64)
    out[0] = offsets[0]
    np.take(offsets, np.cumsum(mask), out=out[1:])
    return out


def _combine_present(outer: np.ndarray, inner: np.ndarray | None) -> np.ndarray:
    if inner is None:
        return outer.copy()
    out = np.zeros(len(outer), dtype=bool)
    out[outer] = inner
    return out


@dataclass
class ColumnVector:
    """Common part of every vector: its type, number of slots and null mask."""

    type: TypeDescription
    length: int
    present: np.ndarray | None

    @property
    def null_count(self) -> int:
        """Number of null slots."""
        return 0 if self.present is None else int(self.length - np.count_nonzero(self.present))

    @property
    def has_nulls(self) -> bool:
        """True when any slot is null."""
        return self.null_count > 0

    def is_null(self, i: int) -> bool:
        """Whether slot ``i`` is null."""
        return self.present is not None and not bool(self.present[i])

    def null_mask(self) -> np.ndarray:
        """Bool array, True where null."""
        if self.present is None:
            return np.zeros(self.length, dtype=bool)
        return ~self.present

    def to_pylist(self) -> list[Any]:
        """Python values of every slot (None for nulls)."""
        values = self._py_values()
        if self.present is None:
            return values
        return [v if p else None for v, p in zip(values, self.present.tolist(), strict=True)]

    def _py_values(self) -> list[Any]:
        raise NotImplementedError

    def to_numpy(self) -> np.ndarray:
        """The slots as one numpy array: the value array for numbers (nulls hold 0; see ``present``),
        datetime64[ns] for timestamps, an object array of Python values (None for nulls) otherwise."""
        out = np.empty(self.length, dtype=object)
        out[:] = self.to_pylist()
        return out

    def slice(self, start: int, stop: int) -> ColumnVector:
        """Slots ``start..stop`` as a new vector (arrays are views where possible)."""
        raise NotImplementedError

    def spread(self, mask: np.ndarray) -> ColumnVector:
        """This dense vector (one slot per True in ``mask``) widened to ``len(mask)`` slots, nulls elsewhere."""
        raise NotImplementedError

    def _present_slice(self, start: int, stop: int) -> np.ndarray | None:
        return None if self.present is None else self.present[start:stop]


@dataclass
class LongVector(ColumnVector):
    """boolean (bool values), tinyint/smallint/int/bigint (int8..int64) and date (int64 days since 1970-01-01)."""

    values: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def _py_values(self) -> list[Any]:
        if self.type.category == Category.DATE:
            days = self.values.tolist()
            out: list[dt.date | None] = []
            for d, p in zip(days, self._present_list(), strict=True):
                if not p:
                    out.append(None)
                elif not _MIN_DAYS <= d <= _MAX_DAYS:
                    raise OrcError(f"date {d} days from 1970-01-01 is outside the range of datetime.date")
                else:
                    out.append(dt.date.fromordinal(d + _EPOCH_DATE_ORDINAL))
            return out
        return self.values.tolist()

    def _present_list(self) -> list[bool]:
        return [True] * self.length if self.present is None else self.present.tolist()

    def to_numpy(self) -> np.ndarray:
        if self.type.category == Category.DATE:
            return self.values.astype("datetime64[D]")
        return self.values

    def slice(self, start: int, stop: int) -> LongVector:
        values = self.values[start:stop]
        return LongVector(self.type, len(values), self._present_slice(start, stop), values)

    def spread(self, mask: np.ndarray) -> LongVector:
        present = mask.copy() if self.present is None else _combine_present(mask, self.present)
        return LongVector(self.type, len(mask), present, _spread(self.values, mask))


@dataclass
class DoubleVector(ColumnVector):
    """float (float32) and double (float64)."""

    values: np.ndarray = field(default_factory=lambda: np.zeros(0, np.float64))

    def _py_values(self) -> list[Any]:
        return self.values.tolist()

    def to_numpy(self) -> np.ndarray:
        return self.values

    def slice(self, start: int, stop: int) -> DoubleVector:
        return DoubleVector(self.type, len(self.values[start:stop]), self._present_slice(start, stop),
                            self.values[start:stop])

    def spread(self, mask: np.ndarray) -> DoubleVector:
        return DoubleVector(self.type, len(mask), _combine_present(mask, self.present), _spread(self.values, mask))


@dataclass
class BytesVector(ColumnVector):
    """string, char, varchar and binary stored directly: value i is ``data[offsets[i]:offsets[i+1]]``."""

    offsets: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    #: the stream's bytes: ``bytes``, or a memoryview of a decompression buffer
    data: bytes | memoryview = b""

    @property
    def is_text(self) -> bool:
        """True for string/char/varchar (values decode as UTF-8), False for binary."""
        return self.type.category != Category.BINARY

    def __getstate__(self) -> dict[str, Any]:
        # a memoryview does not pickle: ship the bytes
        state = self.__dict__.copy()
        if isinstance(state["data"], memoryview):
            state["data"] = state["data"].tobytes()
        return state

    def lengths(self) -> np.ndarray:
        """Byte length of every slot (0 for nulls)."""
        return np.diff(self.offsets)

    def raw_values(self) -> list[bytes]:
        """Every slot as bytes (b'' for nulls)."""
        data = self.data if isinstance(self.data, bytes) else bytes(self.data)
        offs = self.offsets.tolist()
        return [data[a:b] for a, b in zip(offs[:-1], offs[1:], strict=True)]

    def _py_values(self) -> list[Any]:
        if self.is_text and self.length:
            start, stop = int(self.offsets[0]), int(self.offsets[-1])
            try:
                # one decode for the whole buffer; byte offsets are character offsets in ASCII
                text = str(memoryview(self.data)[start:stop], "ascii")
            except UnicodeDecodeError:
                text = None
            if text is not None:
                offs = (self.offsets - start).tolist()
                return [text[a:b] for a, b in zip(offs[:-1], offs[1:], strict=True)]
        raw = self.raw_values()
        if self.is_text:
            return [b.decode("utf-8", "surrogateescape") for b in raw]
        return raw

    def to_numpy(self) -> np.ndarray:
        """Object array of str (bytes for binary) with None for nulls."""
        out = np.empty(self.length, dtype=object)
        out[:] = self.to_pylist()
        return out

    def slice(self, start: int, stop: int) -> BytesVector:
        offs = self.offsets[start : stop + 1] if stop >= start else self.offsets[start : start + 1]
        return BytesVector(self.type, max(len(offs) - 1, 0), self._present_slice(start, stop), offs, self.data)

    def spread(self, mask: np.ndarray) -> BytesVector:
        offsets = _spread_offsets(self.offsets, mask)
        return BytesVector(self.type, len(mask), _combine_present(mask, self.present), offsets, self.data)


@dataclass
class DictionaryBytesVector(ColumnVector):
    """string/char/varchar stored with a dictionary: value i is ``dictionary[indices[i]]`` (index 0 for nulls)."""

    indices: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    dictionary: BytesVector | None = None

    @property
    def is_text(self) -> bool:
        """Always True (only string kinds use dictionaries)."""
        return True

    def lengths(self) -> np.ndarray:
        """Byte length of every slot (0 for nulls)."""
        assert self.dictionary is not None
        lens = self.dictionary.lengths()[self.indices] if len(self.indices) else np.zeros(0, np.int64)
        if self.present is not None:
            lens = np.where(self.present, lens, 0)
        return lens

    def raw_values(self) -> list[bytes]:
        """Every slot as bytes (b'' for nulls)."""
        assert self.dictionary is not None
        entries = np.empty(self.dictionary.length + 1, dtype=object)
        entries[:-1] = self.dictionary.raw_values()
        entries[-1] = b""
        idx = self.indices if self.present is None else np.where(self.present, self.indices, -1)
        return entries[idx].tolist()

    def _py_values(self) -> list[Any]:
        assert self.dictionary is not None
        entries = np.empty(self.dictionary.length + 1, dtype=object)
        entries[:-1] = [b.decode("utf-8", "surrogateescape") for b in self.dictionary.raw_values()]
        entries[-1] = None
        idx = self.indices if self.present is None else np.where(self.present, self.indices, -1)
        return entries[idx].tolist()

    def to_numpy(self) -> np.ndarray:
        """Object array of str with None for nulls."""
        out = np.empty(self.length, dtype=object)
        out[:] = self._py_values()
        return out

    def decoded(self) -> BytesVector:
        """The same values as a direct :class:`BytesVector`."""
        raw = self.raw_values()
        offsets = np.zeros(self.length + 1, dtype=np.int64)
        np.cumsum([len(r) for r in raw], out=offsets[1:])
        return BytesVector(self.type, self.length, self.present, offsets, b"".join(raw))

    def slice(self, start: int, stop: int) -> DictionaryBytesVector:
        idx = self.indices[start:stop]
        return DictionaryBytesVector(self.type, len(idx), self._present_slice(start, stop), idx, self.dictionary)

    def spread(self, mask: np.ndarray) -> DictionaryBytesVector:
        return DictionaryBytesVector(
            self.type, len(mask), _combine_present(mask, self.present), _spread(self.indices, mask), self.dictionary
        )


@dataclass
class DecimalVector(ColumnVector):
    """decimal: ``unscaled`` (int64, or object array of Python ints when precision > 18) at column ``scale``.

    Hive 0.11 columns (precision 0) keep each value's own scale in ``scales``.
    """

    unscaled: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    scale: int = 0
    scales: np.ndarray | None = None

    def _py_values(self) -> list[Any]:
        ints = self.unscaled.tolist()
        if self.scales is None:
            exp = -self.scale
            return [Decimal(v).scaleb(exp, _EXACT) for v in ints]
        return [Decimal(v).scaleb(-s, _EXACT) for v, s in zip(ints, self.scales.tolist(), strict=True)]

    def to_pylist(self) -> list[Any]:
        if self.present is None:
            return self._py_values()
        ints = self.unscaled.tolist()
        scales = [self.scale] * self.length if self.scales is None else self.scales.tolist()
        return [
            Decimal(v).scaleb(-s, _EXACT) if p else None
            for v, s, p in zip(ints, scales, self.present.tolist(), strict=True)
        ]

    def slice(self, start: int, stop: int) -> DecimalVector:
        u = self.unscaled[start:stop]
        scales = None if self.scales is None else self.scales[start:stop]
        return DecimalVector(self.type, len(u), self._present_slice(start, stop), u, self.scale, scales)

    def spread(self, mask: np.ndarray) -> DecimalVector:
        scales = None if self.scales is None else _spread(self.scales, mask)
        unscaled = _spread(self.unscaled, mask, fill=0)
        if unscaled.dtype == object:
            unscaled[~mask] = 0
        return DecimalVector(self.type, len(mask), _combine_present(mask, self.present), unscaled, self.scale, scales)


@dataclass
class TimestampVector(ColumnVector):
    """timestamp / timestamp with local time zone: ``seconds`` since the epoch and ``nanos`` (0..999,999,999).

    For ``timestamp`` the seconds are the writer's wall clock read as if it were UTC (what ORC's tools print);
    for ``timestamp with local time zone`` they are the true UTC instant.
    """

    seconds: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    nanos: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))

    def epoch_nanos(self) -> np.ndarray:
        """Nanoseconds since the epoch as int64 (wraps outside years 1677..2262, like datetime64[ns])."""
        with np.errstate(over="ignore"):
            return self.seconds * np.int64(1_000_000_000) + self.nanos

    def to_numpy(self) -> np.ndarray:
        return self.epoch_nanos().view("datetime64[ns]")

    def _py_values(self) -> list[Any]:
        base = _EPOCH_UTC if self.type.category == Category.TIMESTAMP_INSTANT else _EPOCH_NAIVE
        out: list[dt.datetime | None] = []
        for s, n, p in zip(self.seconds.tolist(), self.nanos.tolist(), self._present_list(), strict=True):
            if not p:
                out.append(None)
                continue
            try:
                out.append(base + dt.timedelta(seconds=s, microseconds=n // 1000))
            except OverflowError:
                raise OrcError(f"timestamp {s} s from the epoch is outside the range of datetime") from None
        return out

    def _present_list(self) -> list[bool]:
        return [True] * self.length if self.present is None else self.present.tolist()

    def slice(self, start: int, stop: int) -> TimestampVector:
        s = self.seconds[start:stop]
        return TimestampVector(self.type, len(s), self._present_slice(start, stop), s, self.nanos[start:stop])

    def spread(self, mask: np.ndarray) -> TimestampVector:
        return TimestampVector(
            self.type, len(mask), _combine_present(mask, self.present), _spread(self.seconds, mask),
            _spread(self.nanos, mask),
        )


@dataclass
class ListVector(ColumnVector):
    """array: slot i holds ``child[offsets[i]:offsets[i+1]]``."""

    offsets: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    child: ColumnVector | None = None

    def _py_values(self) -> list[Any]:
        assert self.child is not None
        items = self.child.to_pylist()
        base = int(self.offsets[0]) if len(self.offsets) else 0
        offs = (self.offsets - base).tolist()
        items = items[base:] if base else items
        return [items[a:b] for a, b in zip(offs[:-1], offs[1:], strict=True)]

    def _child_window(self) -> tuple[int, int]:
        return int(self.offsets[0]), int(self.offsets[-1])

    def slice(self, start: int, stop: int) -> ListVector:
        offs = self.offsets[start : stop + 1]
        return ListVector(self.type, max(len(offs) - 1, 0), self._present_slice(start, stop), offs, self.child)

    def spread(self, mask: np.ndarray) -> ListVector:
        offsets = _spread_offsets(self.offsets, mask)
        return ListVector(self.type, len(mask), _combine_present(mask, self.present), offsets, self.child)


@dataclass
class MapVector(ColumnVector):
    """map: slot i holds pairs ``keys[offsets[i]:offsets[i+1]]`` / ``values[...]``."""

    offsets: np.ndarray = field(default_factory=lambda: np.zeros(1, np.int64))
    keys: ColumnVector | None = None
    items: ColumnVector | None = None

    def _py_values(self) -> list[Any]:
        assert self.keys is not None and self.items is not None
        keys = self.keys.to_pylist()
        vals = self.items.to_pylist()
        offs = self.offsets.tolist()
        out: list[dict[Any, Any] | list[tuple[Any, Any]]] = []
        for a, b in zip(offs[:-1], offs[1:], strict=True):
            pairs = list(zip(keys[a:b], vals[a:b], strict=True))
            try:
                out.append(dict(pairs))
            except TypeError:
                out.append(pairs)
        return out

    def slice(self, start: int, stop: int) -> MapVector:
        offs = self.offsets[start : stop + 1]
        return MapVector(self.type, max(len(offs) - 1, 0), self._present_slice(start, stop), offs, self.keys,
                         self.items)

    def spread(self, mask: np.ndarray) -> MapVector:
        offsets = _spread_offsets(self.offsets, mask)
        return MapVector(self.type, len(mask), _combine_present(mask, self.present), offsets, self.keys, self.items)


@dataclass
class StructVector(ColumnVector):
    """struct: one full-length child vector per field."""

    children: list[ColumnVector] = field(default_factory=list)

    @property
    def field_names(self) -> tuple[str, ...]:
        """The struct's field names."""
        return self.type.field_names

    def field(self, name: str) -> ColumnVector:
        """The child vector of field ``name``."""
        for n, child in zip(self.type.field_names, self.children, strict=True):
            if n == name:
                return child
        raise KeyError(name)

    def _py_values(self) -> list[Any]:
        columns = [c.to_pylist() for c in self.children]
        names = self.type.field_names
        if not columns:
            return [{} for _ in range(self.length)]
        return [dict(zip(names, row, strict=True)) for row in zip(*columns, strict=True)]

    def slice(self, start: int, stop: int) -> StructVector:
        kids = [c.slice(start, stop) for c in self.children]
        n = len(range(self.length)[start:stop])
        return StructVector(self.type, n, self._present_slice(start, stop), kids)

    def spread(self, mask: np.ndarray) -> StructVector:
        present = _combine_present(mask, self.present)
        return StructVector(self.type, len(mask), present, [c.spread(present) for c in self.children])


@dataclass
class UnionVector(ColumnVector):
    """uniontype: slot i is alternative ``tags[i]``, value ``children[tags[i]]`` slot ``offsets[i]``."""

    tags: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int8))
    offsets: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    children: list[ColumnVector] = field(default_factory=list)

    def _py_values(self) -> list[Any]:
        columns = [c.to_pylist() for c in self.children]
        out = []
        for t, o, p in zip(self.tags.tolist(), self.offsets.tolist(), self._present_list(), strict=True):
            out.append((t, columns[t][o]) if p else None)
        return out

    def _present_list(self) -> list[bool]:
        return [True] * self.length if self.present is None else self.present.tolist()

    def slice(self, start: int, stop: int) -> UnionVector:
        tags = self.tags[start:stop]
        return UnionVector(self.type, len(tags), self._present_slice(start, stop), tags, self.offsets[start:stop],
                           self.children)

    def spread(self, mask: np.ndarray) -> UnionVector:
        return UnionVector(
            self.type, len(mask), _combine_present(mask, self.present), _spread(self.tags, mask),
            _spread(self.offsets, mask), self.children,
        )


@dataclass
class Batch:
    """A run of rows: the root vector (usually a struct) plus where the rows came from."""

    root: ColumnVector
    stripe: int | None = None
    first_row: int = 0

    @property
    def num_rows(self) -> int:
        """Number of rows."""
        return self.root.length

    @property
    def schema(self) -> TypeDescription:
        """The type of the root vector (the projected schema)."""
        return self.root.type

    def column(self, name: str) -> ColumnVector:
        """A top-level field's vector (dotted paths walk nested structs)."""
        vec = self.root
        for part in name.split("."):
            if not isinstance(vec, StructVector):
                raise KeyError(name)
            vec = vec.field(part)
        return vec

    @property
    def columns(self) -> dict[str, ColumnVector]:
        """Top-level fields by name (empty for a non-struct root)."""
        if isinstance(self.root, StructVector):
            return dict(zip(self.root.type.field_names, self.root.children, strict=True))
        return {}

    def to_pylist(self) -> list[Any]:
        """Rows as Python values (dicts for a struct root)."""
        return self.root.to_pylist()

    def slice(self, start: int, stop: int) -> Batch:
        """Rows ``start..stop`` of this batch."""
        return replace(self, root=self.root.slice(start, stop), first_row=self.first_row + start)


# ---------------------------------------------------------------------------------------------- concatenation


def _concat_present(parts: list[ColumnVector]) -> np.ndarray | None:
    if all(p.present is None for p in parts):
        return None
    return np.concatenate(
        [p.present if p.present is not None else np.ones(p.length, dtype=bool) for p in parts]
    ) if parts else None


def _concat_arrays(arrays: list[np.ndarray]) -> np.ndarray:
    if any(a.dtype == object for a in arrays) and not all(a.dtype == object for a in arrays):
        arrays = [a.astype(object) for a in arrays]
    return np.concatenate(arrays)


def _rebased_offsets(parts_offsets: list[np.ndarray]) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Join offset arrays of several parts into one starting at 0; also each part's child window."""
    out = [np.zeros(1, dtype=np.int64)]
    windows = []
    base = 0
    for offs in parts_offsets:
        start, stop = int(offs[0]), int(offs[-1])
        windows.append((start, stop))
        out.append(offs[1:] - start + base)
        base += stop - start
    return np.concatenate(out), windows


_Vector = TypeVar("_Vector", bound=ColumnVector)


def _all_of(parts: Sequence[ColumnVector], cls: type[_Vector]) -> list[_Vector]:
    """``parts`` as vectors of ``cls``; a part of another class cannot join them."""
    same = [p for p in parts if isinstance(p, cls)]
    if len(same) != len(parts):
        others = sorted({type(p).__name__ for p in parts if not isinstance(p, cls)})
        raise TypeError(f"cannot concatenate {cls.__name__} with {', '.join(others)}")
    return same


_Part = TypeVar("_Part")


def _required(value: _Part | None, what: str) -> _Part:
    if value is None:
        raise TypeError(f"cannot concatenate vectors when one lacks its {what}")
    return value


def concat(parts: list[ColumnVector]) -> ColumnVector:
    """One vector holding the slots of ``parts`` (all of the same column type) in order."""
    if not parts:
        raise ValueError("nothing to concatenate")
    if len(parts) == 1:
        return parts[0]
    first = parts[0]
    t = first.type
    n = sum(p.length for p in parts)
    present = _concat_present(parts)
    if isinstance(first, LongVector | DoubleVector):
        numbers = _all_of(parts, type(first))
        return type(first)(t, n, present, np.concatenate([p.values for p in numbers]))
    if isinstance(first, BytesVector | DictionaryBytesVector):
        if all(isinstance(p, DictionaryBytesVector) for p in parts):
            coded = _all_of(parts, DictionaryBytesVector)
            dicts = [_required(p.dictionary, "dictionary") for p in coded]
            if all(d is dicts[0] for d in dicts):
                return DictionaryBytesVector(t, n, present, np.concatenate([p.indices for p in coded]), dicts[0])
            merged = concat(list[ColumnVector](dicts))
            assert isinstance(merged, BytesVector)  # concatenated dictionaries stay direct bytes
            bases = np.cumsum([0] + [d.length for d in dicts[:-1]])
            indices = np.concatenate([p.indices + b for p, b in zip(coded, bases, strict=True)])
            return DictionaryBytesVector(t, n, present, indices, merged)
        direct = _all_of([p.decoded() if isinstance(p, DictionaryBytesVector) else p for p in parts], BytesVector)
        offsets, windows = _rebased_offsets([p.offsets for p in direct])
        # memoryview slices: the bytes are copied once, into the joined buffer
        data = b"".join(memoryview(p.data)[a:b] for p, (a, b) in zip(direct, windows, strict=True))
        return BytesVector(t, n, present, offsets, data)
    if isinstance(first, DecimalVector):
        decimals = _all_of(parts, DecimalVector)
        scales = None
        if first.scales is not None:
            scales = np.concatenate([_required(p.scales, "per-value scales") for p in decimals])
        unscaled = _concat_arrays([p.unscaled for p in decimals])
        return DecimalVector(t, n, present, unscaled, first.scale, scales)
    if isinstance(first, TimestampVector):
        stamps = _all_of(parts, TimestampVector)
        return TimestampVector(
            t, n, present, np.concatenate([p.seconds for p in stamps]), np.concatenate([p.nanos for p in stamps])
        )
    if isinstance(first, ListVector):
        lists = _all_of(parts, ListVector)
        offsets, windows = _rebased_offsets([p.offsets for p in lists])
        child = concat([_required(p.child, "child vector").slice(a, b) for p, (a, b) in zip(lists, windows, strict=True)])
        return ListVector(t, n, present, offsets, child)
    if isinstance(first, MapVector):
        maps = _all_of(parts, MapVector)
        offsets, windows = _rebased_offsets([p.offsets for p in maps])
        keys = concat([_required(p.keys, "key vector").slice(a, b) for p, (a, b) in zip(maps, windows, strict=True)])
        items = concat([_required(p.items, "value vector").slice(a, b) for p, (a, b) in zip(maps, windows, strict=True)])
        return MapVector(t, n, present, offsets, keys, items)
    if isinstance(first, StructVector):
        structs = _all_of(parts, StructVector)
        children = [concat([p.children[i] for p in structs]) for i in range(len(first.children))]
        return StructVector(t, n, present, children)
    if isinstance(first, UnionVector):
        unions = _all_of(parts, UnionVector)
        k = len(first.children)
        tags = np.concatenate([p.tags for p in unions])
        offsets_parts = []
        bases = np.zeros(k, dtype=np.int64)
        for p in unions:
            offsets_parts.append(p.offsets + bases[p.tags.astype(np.int64)])
            bases += [c.length for c in p.children]
        children = [concat([p.children[i] for p in unions]) for i in range(k)]
        return UnionVector(t, n, present, tags, np.concatenate(offsets_parts), children)
    raise TypeError(f"cannot concatenate {type(first).__name__}")
