"""CSV to ORC: :func:`write_csv` (behind ``metastore orc write --schema ... CSV OUT``).

The schema must be a struct of primitive columns, in the CSV's column order. Text forms accepted per type:

* boolean: true/false, t/f, yes/no, y/n, 1/0 (any case);
* tinyint..bigint: decimal integers; float/double: Python float syntax (``nan``, ``inf`` too);
* string/char/varchar: the text as is (char padded, varchar cut as ORC does);
* binary: hexadecimal (an optional ``0x`` prefix);
* decimal: plain or scientific notation, rounded half-up to the column scale;
* date: ``YYYY-MM-DD``; timestamp: ``YYYY-MM-DD HH:MM:SS[.fraction]`` (or a ``T`` separator), up to nanoseconds;
  ``timestamp with local time zone`` also takes a ``Z`` or ``+HH:MM`` suffix (else the time is UTC).

Fields equal to one of ``null_values`` (default: empty and ``\\N``) are null. A first line equal to the field
names is taken as a header unless ``header`` says otherwise. Bad input raises :class:`OrcError` naming the file,
line and column.
"""

from __future__ import annotations

import csv
import datetime as dt
import os
import re
from collections.abc import Callable, Sequence
from decimal import Decimal, InvalidOperation
from typing import Any

import numpy as np

from ._column_input import ColumnValueError, TimestampValues
from ._errors import OrcError
from ._types import Category, TypeDescription
from ._writer import DEFAULT_SOFTWARE_VERSION, OrcWriter

_TRUE = frozenset({"true", "t", "yes", "y", "1"})
_FALSE = frozenset({"false", "f", "no", "n", "0"})
_TIMESTAMP = re.compile(
    r"^\s*(\d{4,})-(\d{2})-(\d{2})(?:[ T](\d{2}):(\d{2})(?::(\d{2})(?:\.(\d{1,9}))?)?)?"
    r"\s*(Z|[+-]\d{2}:?\d{2})?\s*$"
)
_DATE = re.compile(r"^\s*(\d{4,})-(\d{2})-(\d{2})\s*$")
_EPOCH = dt.datetime(1970, 1, 1)


class _BadValue(Exception):
    """A field that does not parse; carries the reason."""


def _parse_bool(text: str) -> bool:
    low = text.strip().lower()
    if low in _TRUE:
        return True
    if low in _FALSE:
        return False
    raise _BadValue("expected true/false")


def _parse_int(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise _BadValue("expected an integer") from None


def _parse_float(text: str) -> float:
    try:
        return float(text.strip())
    except ValueError:
        raise _BadValue("expected a number") from None


def _parse_binary(text: str) -> bytes:
    body = text.strip()
    if body[:2].lower() == "0x":
        body = body[2:]
    try:
        return bytes.fromhex(body)
    except ValueError:
        raise _BadValue("expected hexadecimal bytes") from None


def _parse_decimal(text: str) -> Decimal:
    try:
        value = Decimal(text.strip())
    except InvalidOperation:
        raise _BadValue("expected a decimal number") from None
    if not value.is_finite():
        raise _BadValue("expected a finite decimal number")
    return value


def _parse_date(text: str) -> dt.date:
    match = _DATE.match(text)
    if not match:
        raise _BadValue("expected a date YYYY-MM-DD")
    try:
        return dt.date(int(match[1]), int(match[2]), int(match[3]))
    except ValueError as exc:
        raise _BadValue(str(exc)) from None


def _parse_timestamp(text: str, instant: bool) -> tuple[int, int]:
    """(floor seconds since 1970-01-01, nanoseconds) of a timestamp text; offsets only for instants."""
    match = _TIMESTAMP.match(text)
    if not match:
        raise _BadValue("expected a timestamp YYYY-MM-DD HH:MM:SS[.fraction]")
    year, month, day, hour, minute, second, fraction, zone = match.groups()
    try:
        wall = dt.datetime(int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0))
    except ValueError as exc:
        raise _BadValue(str(exc)) from None
    if zone and not instant:
        raise _BadValue("a timestamp column keeps wall-clock times; use 'timestamp with local time zone' for offsets")
    delta = wall - _EPOCH
    seconds = delta.days * 86400 + delta.seconds
    if zone and zone != "Z":
        sign = -1 if zone[0] == "-" else 1
        digits = zone[1:].replace(":", "")
        seconds -= sign * (int(digits[:2]) * 3600 + int(digits[2:]) * 60)
    nanos = int((fraction or "0").ljust(9, "0"))
    return seconds, nanos


def _parser(column: TypeDescription) -> Callable[[str], Any]:
    c = column.category
    if c == Category.BOOLEAN:
        return _parse_bool
    if c in (Category.BYTE, Category.SHORT, Category.INT, Category.LONG):
        return _parse_int
    if c in (Category.FLOAT, Category.DOUBLE):
        return _parse_float
    if c in (Category.STRING, Category.CHAR, Category.VARCHAR):
        return str
    if c == Category.BINARY:
        return _parse_binary
    if c == Category.DECIMAL:
        return _parse_decimal
    if c == Category.DATE:
        return _parse_date
    if c in (Category.TIMESTAMP, Category.TIMESTAMP_INSTANT):
        instant = c == Category.TIMESTAMP_INSTANT
        return lambda text: _parse_timestamp(text, instant)
    raise OrcError(f"CSV columns must be primitive; {column} cannot be read from CSV text")


def _timestamp_column(pairs: list[tuple[int, int] | None]) -> TimestampValues:
    """(seconds, nanos) pairs, None for null, as the writer's timestamp input (any year, nanoseconds kept)."""
    present = np.fromiter((p is not None for p in pairs), dtype=bool, count=len(pairs))
    seconds = np.fromiter((p[0] if p is not None else 0 for p in pairs), dtype=np.int64, count=len(pairs))
    nanos = np.fromiter((p[1] if p is not None else 0 for p in pairs), dtype=np.int64, count=len(pairs))
    return TimestampValues(seconds, nanos, present)


def write_csv(
    csv_path: str | os.PathLike[str],
    out_path: str | os.PathLike[str],
    schema: TypeDescription | str,
    options: dict[str, str] | None = None,
    *,
    header: bool | None = None,
    delimiter: str = ",",
    null_values: Sequence[str] = ("", "\\N"),
    encoding: str = "utf-8-sig",  # a leading byte-order mark is skipped
    batch_rows: int = 50_000,
    software_version: str = DEFAULT_SOFTWARE_VERSION,
) -> int:
    """Convert a CSV file into an ORC file with ``schema``; returns the number of rows written.
    ``software_version`` is the writer identity the file records (see :class:`OrcWriter`)."""
    root = TypeDescription.parse(schema) if isinstance(schema, str) else schema
    if root.category != Category.STRUCT:
        raise OrcError(f"the schema for a CSV file must be a struct of columns, got {root}")
    names = list(root.field_names)
    parsers = [_parser(t) for t in root.children]
    nulls = frozenset(null_values)
    shown = os.fspath(csv_path)
    total = 0
    with (
        open(csv_path, newline="", encoding=encoding) as source,
        OrcWriter(out_path, root, options, software_version=software_version) as writer,
    ):
        reader = csv.reader(source, delimiter=delimiter)
        columns: list[list[Any]] = [[] for _ in names]
        lines: list[int] = []
        first = True
        for row in reader:
            line = reader.line_num
            if first:
                first = False
                is_header = [c.strip() for c in row] == names if header is None else header
                if is_header:
                    continue
            if not row or row == [""] and len(names) != 1:
                continue  # blank line
            if len(row) != len(names):
                raise OrcError(f"{shown}:{line}: expected {len(names)} fields ({', '.join(names)}), got {len(row)}")
            for f, (text, parse) in enumerate(zip(row, parsers, strict=True)):
                if text in nulls:
                    columns[f].append(None)
                    continue
                try:
                    columns[f].append(parse(text))
                except _BadValue as exc:
                    raise OrcError(
                        f"{shown}:{line}: column {names[f]!r} ({root.children[f]}): cannot read {text!r}: {exc}"
                    ) from None
            lines.append(line)
            if len(lines) >= batch_rows:
                total += _flush(writer, root, columns, lines, shown)
                columns = [[] for _ in names]
                lines = []
        if lines:
            total += _flush(writer, root, columns, lines, shown)
    return total


def _flush(writer: OrcWriter, root: TypeDescription, columns: list[list[Any]], lines: list[int], shown: str) -> int:
    batch: dict[str, Any] = {}
    for name, column_type, values in zip(root.field_names, root.children, columns, strict=True):
        if column_type.category in (Category.TIMESTAMP, Category.TIMESTAMP_INSTANT):
            batch[name] = _timestamp_column(values)
        else:
            batch[name] = values
    try:
        writer.write_batch(batch)
    except ColumnValueError as exc:
        if exc.row is not None and exc.row < len(lines):
            raise OrcError(f"{shown}:{lines[exc.row]}: column {exc.path!r}: {exc.problem}") from None
        raise
    return len(lines)
