"""Rows as JSON lines, byte for byte as ORC C++'s ``ColumnPrinter`` prints them (``orc-contents``), which is
the format of the ORC project's ``examples/expected/*.jsn.gz`` files.

Format: ``{"name": value, ...}`` with ``", "``/``": "`` separators; null, true/false, integers in decimal; float
``%.7g`` and double ``%.14g``; decimals with the column scale (Hive 0.11 unbounded decimals at scale 6, cut,
as C++ does by default); strings JSON-escaped only for ``\\ " \\b \\f \\n \\r \\t`` with every other byte as it
is; binary as a list of byte values; dates ``"YYYY-MM-DD"``; timestamps ``"YYYY-MM-DD HH:MM:SS.f"`` with
trailing zeros of the nanoseconds removed; lists ``[...]``, maps ``[{"key": k, "value": v}, ...]``, unions
``{"tag": n, "value": v}``. A non-struct root prints its bare value.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterator, Sequence
from typing import Any, BinaryIO

import numpy as np

from ._column_readers import _rescale
from ._reader import OrcReader, OrcSource
from ._types import Category
from ._vectors import (
    BytesVector,
    ColumnVector,
    DecimalVector,
    DictionaryBytesVector,
    DoubleVector,
    ListVector,
    LongVector,
    MapVector,
    StructVector,
    TimestampVector,
    UnionVector,
)

#: scale ORC C++ forces on Hive 0.11 (precision 0) decimals
HIVE11_DECIMAL_SCALE = 6
_NULL = b"null"
_ESCAPES = {b"\\": b"\\\\", b'"': b'\\"', b"\b": b"\\b", b"\f": b"\\f", b"\n": b"\\n", b"\r": b"\\r", b"\t": b"\\t"}
_NEEDS_ESCAPE = re.compile(rb'[\\"\b\f\n\r\t]')


def _civil_from_days(days: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Proleptic Gregorian (year, month, day) of days since 1970-01-01, for any int64 day."""
    z = days.astype(np.int64) + 719468
    era = np.floor_divide(z, 146097)
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    y = yoe + era * 400
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = np.where(mp < 10, mp + 3, mp - 9)
    return y + (m <= 2), m, d


def _with_nulls(vec: ColumnVector, texts: list[bytes]) -> list[bytes]:
    if vec.present is None:
        return texts
    return [t if p else _NULL for t, p in zip(texts, vec.present.tolist(), strict=True)]


def _escape(raw: bytes) -> bytes:
    if _NEEDS_ESCAPE.search(raw) is None:
        return b'"' + raw + b'"'
    return b'"' + _NEEDS_ESCAPE.sub(lambda m: _ESCAPES[m.group(0)], raw) + b'"'


def _decimal_text(value: int, scale: int) -> bytes:
    if scale == 0:
        return str(value).encode()
    digits = str(abs(value)).rjust(scale + 1, "0")
    sign = "-" if value < 0 else ""
    return f"{sign}{digits[:-scale]}.{digits[-scale:]}".encode()


def _nanos_text(nanos: int) -> str:
    if nanos == 0:
        return "0"
    text = f"{nanos:09d}"
    return text.rstrip("0")


def format_vector(vec: ColumnVector) -> list[bytes]:
    """The printed form of every slot of a vector."""
    if isinstance(vec, LongVector):
        c = vec.type.category
        if c == Category.BOOLEAN:
            texts = [b"true" if v else b"false" for v in vec.values.tolist()]
        elif c == Category.DATE:
            y, m, d = _civil_from_days(vec.values)
            texts = [f'"{a}-{b:02d}-{e:02d}"'.encode() for a, b, e in zip(y.tolist(), m.tolist(), d.tolist(), strict=True)]
        else:
            texts = [str(v).encode() for v in vec.values.tolist()]
        return _with_nulls(vec, texts)
    if isinstance(vec, DoubleVector):
        fmt = "%.7g" if vec.type.category == Category.FLOAT else "%.14g"
        return _with_nulls(vec, [(fmt % v).encode() for v in vec.values.tolist()])
    if isinstance(vec, BytesVector | DictionaryBytesVector):
        raw = vec.raw_values()
        if vec.type.category == Category.BINARY:
            texts = [("[" + ", ".join(map(str, r)) + "]").encode() for r in raw]
        else:
            texts = [_escape(r) for r in raw]
        return _with_nulls(vec, texts)
    if isinstance(vec, DecimalVector):
        ints = vec.unscaled.tolist()
        if vec.scales is not None:
            scale = HIVE11_DECIMAL_SCALE
            ints = [_rescale(v, s, scale) for v, s in zip(ints, vec.scales.tolist(), strict=True)]
        else:
            scale = vec.scale
        return _with_nulls(vec, [_decimal_text(v, scale) for v in ints])
    if isinstance(vec, TimestampVector):
        days, tod = np.divmod(vec.seconds, 86400)
        y, m, d = _civil_from_days(days)
        hh, rest = np.divmod(tod, 3600)
        mm, ss = np.divmod(rest, 60)
        texts = [
            f'"{a}-{b:02d}-{c:02d} {h:02d}:{mi:02d}:{s:02d}.{_nanos_text(n)}"'.encode()
            for a, b, c, h, mi, s, n in zip(
                y.tolist(), m.tolist(), d.tolist(), hh.tolist(), mm.tolist(), ss.tolist(), vec.nanos.tolist(),
                strict=True,
            )
        ]
        return _with_nulls(vec, texts)
    if isinstance(vec, ListVector):
        assert vec.child is not None
        items = format_vector(vec.child)
        offs = vec.offsets.tolist()
        texts = [b"[" + b", ".join(items[a:b]) + b"]" for a, b in zip(offs[:-1], offs[1:], strict=True)]
        return _with_nulls(vec, texts)
    if isinstance(vec, MapVector):
        assert vec.keys is not None and vec.items is not None
        keys = format_vector(vec.keys)
        vals = format_vector(vec.items)
        offs = vec.offsets.tolist()
        texts = [
            b"[" + b", ".join(b'{"key": ' + keys[i] + b', "value": ' + vals[i] + b"}" for i in range(a, b)) + b"]"
            for a, b in zip(offs[:-1], offs[1:], strict=True)
        ]
        return _with_nulls(vec, texts)
    if isinstance(vec, StructVector):
        names = [b'"' + n.encode("utf-8") + b'": ' for n in vec.type.field_names]
        columns = [format_vector(c) for c in vec.children]
        if columns:
            texts = [
                b"{" + b", ".join(name + value for name, value in zip(names, row, strict=True)) + b"}"
                for row in zip(*columns, strict=True)
            ]
        else:
            texts = [b"{}"] * vec.length
        return _with_nulls(vec, texts)
    if isinstance(vec, UnionVector):
        columns = [format_vector(c) for c in vec.children]
        texts = [
            b'{"tag": ' + str(t).encode() + b', "value": ' + columns[t][o] + b"}"
            if p else _NULL
            for t, o, p in zip(
                vec.tags.tolist(), vec.offsets.tolist(),
                [True] * vec.length if vec.present is None else vec.present.tolist(), strict=True,
            )
        ]
        return texts
    raise TypeError(f"cannot print {type(vec).__name__}")


def json_lines(
    source: OrcReader | OrcSource, columns: Sequence[str | int] | None = None, batch_size: int = 8192, **reader_options: Any
) -> Iterator[bytes]:
    """Each row of an ORC file (a path or an open :class:`~metastore.orcio._reader.OrcReader`) as one JSON line
    (bytes, no newline)."""
    reader = source if isinstance(source, OrcReader) else OrcReader(source, **reader_options)
    try:
        for batch in reader.iter_batches(batch_size, columns):
            yield from format_vector(batch.root)
    finally:
        if reader is not source:
            reader.close()


def write_json_lines(
    source: OrcReader | OrcSource, out: BinaryIO, columns: Sequence[str | int] | None = None, **reader_options: Any
) -> int:
    """Write every row as a JSON line to ``out``; returns the number of rows."""
    n = 0
    for line in json_lines(source, columns, **reader_options):
        out.write(line)
        out.write(b"\n")
        n += 1
    return n


def json_text(path: str | os.PathLike[str], **reader_options: Any) -> str:
    """All rows of a (small) file as one string of JSON lines (invalid UTF-8 replaced)."""
    return "".join(line.decode("utf-8", "replace") + "\n" for line in json_lines(path, **reader_options))
