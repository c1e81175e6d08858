"""Per-column statistics sketches carried in ORC user metadata, so files we write need no scan to be analysed.

A writer that knows the values it writes (``LOAD DATA``, ``INSERT``) computes, per column, the HyperLogLog NDV
sketch, the longest value and the KLL histogram, and passes :func:`sketch_metadata`'s dict as the
``user_metadata`` of :class:`metastore.orcio.writer.OrcWriter`. :mod:`metastore.stats.harvest` then takes NDV,
``maxColLen`` and histograms from the footer instead of reading the column.

Format (one entry per column):

- key ``metastore.stats.v1.<column>``, ``<column>`` being the ORC field name the column is written under;
- value ``b"MSK1"``, a 4-byte little-endian header length, a UTF-8 JSON header, then the HLL bytes and the
  KLL bytes. The header holds ``kind`` (the statistics kind the values were hashed as, e.g. ``STRING``),
  ``type`` (the Hive type), ``rows``, ``values`` (non-null values), ``max_len`` (longest value in bytes, 0
  for non-string kinds), ``p`` (HLL precision) and the byte lengths ``hll`` and ``kll`` of the two sketches.

The values are first put through exactly the conversion the ORC writer applies (:func:`orcio.column_input.shred`:
char padding, varchar truncation, decimal rounding to the column scale, float to 32 bits, timestamps to floor
seconds), and sketched by the same code a scan uses, so a file analysed from its metadata gives the same
statistics as one analysed by reading it. Harvest uses an entry only when its kind matches the table column's
and its row and value counts match the file's footer (a file rewritten by another tool that copied the
metadata is scanned instead).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

import numpy as np

from metastore.errors import InvalidInput
from metastore.orcio import (
    Category,
    ColumnData,
    OrcError,
    TimestampValues,
    TypeDescription,
    Utf8Values,
    shred,
)
from metastore.stats.hll import HyperLogLog
from metastore.stats.model import StatsKind
from metastore.stats.orc_convert import hive_kind, storage_kind_fits
from metastore.stats.sketcher import SKETCH_P, ColumnSketcher

__all__ = [
    "KEY_PREFIX",
    "SketchMetadataBuilder",
    "SketchRecord",
    "read_sketch_metadata",
    "sketch_metadata",
    "sketch_metadata_key",
]

KEY_PREFIX = "metastore.stats.v1."
_MAGIC = b"MSK1"
_BARE_DECIMAL = re.compile(r"^\s*(decimal|numeric)\s*$", re.IGNORECASE)
_DOUBLE_PRECISION = re.compile(r"^\s*double\s+precision\s*$", re.IGNORECASE)


def sketch_metadata_key(column: str) -> str:
    """The user-metadata key of a column's sketches."""
    return KEY_PREFIX + column


@dataclass(frozen=True)
class SketchRecord:
    """One column's sketches as stored in (or read from) a file's user metadata."""

    kind: StatsKind
    hive_type: str
    rows: int
    values: int
    max_length: int
    sketch: bytes
    histogram: bytes | None

    def fits(self, kind: StatsKind, rows: int, non_null: int | None) -> bool:
        """Whether the record describes a column of ``kind`` with these row and non-null counts."""
        return self.kind is kind and self.rows == rows and (non_null is None or self.values == non_null)

    def to_bytes(self) -> bytes:
        """The metadata value."""
        header = {
            "kind": self.kind.name,
            "type": self.hive_type,
            "rows": self.rows,
            "values": self.values,
            "max_len": self.max_length,
            "p": SKETCH_P,
            "hll": len(self.sketch),
            "kll": len(self.histogram) if self.histogram else 0,
        }
        head = json.dumps(header, separators=(",", ":")).encode()
        return _MAGIC + len(head).to_bytes(4, "little") + head + self.sketch + (self.histogram or b"")

    @classmethod
    def from_bytes(cls, data: bytes) -> SketchRecord | None:
        """Parse a metadata value; None when it is not one this version understands."""
        try:
            if data[:4] != _MAGIC:
                return None
            n = int.from_bytes(data[4:8], "little")
            header = json.loads(data[8 : 8 + n])
            pos = 8 + n
            hll_len, kll_len = int(header["hll"]), int(header["kll"])
            if hll_len <= 0 or pos + hll_len + kll_len != len(data):
                return None
            sketch = data[pos : pos + hll_len]
            histogram = data[pos + hll_len :] or None
            if sketch[:3] != b"HLL":
                return None
            return cls(
                kind=StatsKind[header["kind"]],
                hive_type=str(header["type"]),
                rows=int(header["rows"]),
                values=int(header["values"]),
                max_length=int(header["max_len"]),
                sketch=sketch,
                histogram=histogram,
            )
        except (KeyError, ValueError, TypeError, IndexError):
            return None


def read_sketch_metadata(user_metadata: Mapping[str, bytes], column: str) -> SketchRecord | None:
    """The record stored for ORC field ``column``, or None when there is none (or it is unreadable)."""
    raw = user_metadata.get(sketch_metadata_key(column))
    return None if raw is None else SketchRecord.from_bytes(raw)


class SketchMetadataBuilder:
    """Sketches built batch by batch while a writer writes; :meth:`metadata` gives the user-metadata dict.

    Columns are given once, as ``{name: hive_type}``; each :meth:`add` takes ``{name: values}`` or
    ``{name: (values, null_mask)}`` for a batch (the same values the writer gets).
    """

    def __init__(self, column_types: Mapping[str, str]) -> None:
        self._types: dict[str, TypeDescription] = {}
        self._hive_types = dict(column_types)
        self._kinds: dict[str, StatsKind] = {}
        self._sketchers: dict[str, ColumnSketcher] = {}
        self._rows: dict[str, int] = {}
        for name, hive_type in column_types.items():
            kind = hive_kind(hive_type)
            orc_type = orc_type_for(hive_type)
            if not storage_kind_fits(kind, orc_type):
                raise InvalidInput(f"column '{name}': type {hive_type} cannot be sketched")
            self._types[name] = orc_type.with_ids()
            self._kinds[name] = kind
            self._sketchers[name] = ColumnSketcher(kind, range_=False, ndv=True, histogram=True)
            self._rows[name] = 0

    def add(self, columns: Mapping[str, Any]) -> None:
        """Add one batch of rows per column (values, or ``(values, null_mask)`` with True = null)."""
        for name, given in columns.items():
            if name not in self._types:
                raise InvalidInput(f"column '{name}' was not declared to the sketch builder")
            values, null_mask = given if isinstance(given, tuple) else (given, None)
            data = _shredded(self._types[name], values, null_mask, name)
            self._rows[name] += data.rows
            _feed(self._sketchers[name], data)

    def metadata(self) -> dict[str, bytes]:
        """``{key: value}`` for every declared column (pass it as the writer's ``user_metadata``)."""
        out = {}
        for name, sketcher in self._sketchers.items():
            record = SketchRecord(
                kind=self._kinds[name],
                hive_type=self._hive_types[name],
                rows=self._rows[name],
                values=sketcher.non_null,
                max_length=sketcher.max_length,
                sketch=sketcher.sketch_bytes() or b"",
                histogram=sketcher.histogram_bytes(),
            )
            if not record.sketch:
                # booleans and binaries have no NDV: an empty sketch keeps the format uniform
                record = replace(record, sketch=HyperLogLog(SKETCH_P).to_bytes())
            out[sketch_metadata_key(name)] = record.to_bytes()
        return out


def sketch_metadata(columns: Mapping[str, tuple[str, Any, Any]]) -> dict[str, bytes]:
    """The ORC user metadata carrying each column's sketches.

    ``columns`` maps an ORC field name to ``(hive_type, values, null_mask)``: ``values`` as the writer takes
    them (numpy array, masked array or list with None), ``null_mask`` a bool array with True for null rows
    (or None). Pass the result as ``user_metadata`` to the writer that writes these same values.
    """
    builder = SketchMetadataBuilder({name: spec[0] for name, spec in columns.items()})
    builder.add({name: (spec[1], spec[2]) for name, spec in columns.items()})
    return builder.metadata()


def orc_type_for(hive_type: str) -> TypeDescription:
    """The ORC type a Hive column type is written as (``decimal`` alone is Hive's decimal(10,0))."""
    if _BARE_DECIMAL.match(hive_type):
        return TypeDescription.decimal(10, 0)
    if _DOUBLE_PRECISION.match(hive_type):
        return TypeDescription.primitive(Category.DOUBLE)
    try:
        return TypeDescription.parse(hive_type.strip().lower())
    except OrcError as err:
        raise InvalidInput(f"type {hive_type!r} is not a Hive type ORC can store: {err}") from None


def _shredded(orc_type: TypeDescription, values: Any, null_mask: Any, name: str) -> ColumnData:
    data = values
    if null_mask is not None:
        mask = np.asarray(null_mask, dtype=bool)
        if mask.shape != (len(values),):
            raise InvalidInput(f"column '{name}': null mask of shape {mask.shape} for {len(values)} values")
        if isinstance(values, np.ndarray) and values.dtype != object and not np.issubdtype(values.dtype, np.datetime64):
            data = np.ma.MaskedArray(values, mask=mask)
        else:
            items = values.tolist() if isinstance(values, np.ndarray) else list(values)
            data = [None if m else v for v, m in zip(items, mask.tolist(), strict=True)]
    try:
        return shred(orc_type, data, name)
    except OrcError as err:
        raise InvalidInput(str(err)) from None


def _feed(sketcher: ColumnSketcher, data: ColumnData) -> None:
    values = data.values
    category = data.type.category
    if category == Category.BOOLEAN:
        sketcher.add_booleans(values)
    elif category in (Category.BYTE, Category.SHORT, Category.INT, Category.LONG):
        sketcher.add_integers(values)
    elif category in (Category.FLOAT, Category.DOUBLE):
        sketcher.add_doubles(values)
    elif category == Category.DATE:
        sketcher.add_dates(values)
    elif category in (Category.TIMESTAMP, Category.TIMESTAMP_INSTANT):
        assert isinstance(values, TimestampValues)
        sketcher.add_timestamps(values.seconds)
    elif category == Category.DECIMAL:
        sketcher.add_decimals(values, data.type.scale or 0)
    else:
        assert isinstance(values, Utf8Values)
        sketcher.add_packed(values.data, values.offsets)

