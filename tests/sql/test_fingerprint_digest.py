"""The statistics digest of metastore.sql.fingerprints is stored in every analysed partition's parameters: its
text must stay exactly what it was defined as (repr of each column's name and its fields' values, sorted by field
name, sketches left out, decimals normalised), whatever way it is built."""

from __future__ import annotations

import dataclasses
import hashlib
from decimal import Decimal

from metastore.sql.fingerprints import stats_digest
from metastore.stats.model import (
    BinaryStats,
    BooleanStats,
    ColumnStatsEntry,
    DateStats,
    DecimalStats,
    DoubleStats,
    LongStats,
    StringStats,
    TimestampStats,
)


def _reference(entries: list[ColumnStatsEntry], params: dict[str, str] | None) -> str:
    """The digest as first defined (fingerprints written by earlier versions must still match)."""
    h = hashlib.blake2b(digest_size=16)
    if params is not None:
        keys = ("numFiles", "totalSize", "numRows", "rawDataSize")
        h.update("\x1f".join(f"{key}={params.get(key)}" for key in keys).encode() + b"\x1e")
    for entry in sorted(entries, key=lambda e: e.column.lower()):
        stats = entry.stats
        names = sorted(f.name for f in dataclasses.fields(stats) if f.name not in ("bit_vector", "histogram"))
        values = []
        for name in names:
            value = getattr(stats, name)
            if isinstance(value, Decimal):
                value = ("decimal", str(value.normalize()))
            values.append((name, value))
        h.update(repr((entry.column.lower(), values)).encode() + b"\x1e")
    return h.hexdigest()


def test_digest_is_the_defined_repr_for_every_kind() -> None:
    entries = [
        ColumnStatsEntry("B", "boolean", BooleanStats(num_nulls=1, num_trues=2, num_falses=0, bit_vector=b"x")),
        ColumnStatsEntry("l", "bigint", LongStats(num_nulls=0, num_dvs=5, low=-(1 << 63), high=None)),
        ColumnStatsEntry("d", "double", DoubleStats(num_nulls=3, num_dvs=2, low=0.1, high=float("inf"))),
        ColumnStatsEntry("m", "decimal(10,2)", DecimalStats(num_nulls=0, num_dvs=2, low=Decimal("1.50"),
                                                           high=Decimal("1E+2"), histogram=b"h")),
        ColumnStatsEntry("dt", "date", DateStats(num_nulls=0, num_dvs=1, low=19000, high=19001)),
        ColumnStatsEntry("ts", "timestamp", TimestampStats(num_nulls=0, num_dvs=1, low=0, high=1700000000)),
        ColumnStatsEntry("s'q\"", "string", StringStats(num_nulls=0, num_dvs=7, max_col_len=9, avg_col_len=2.5)),
        ColumnStatsEntry("bé", "binary", BinaryStats(num_nulls=2, max_col_len=0, avg_col_len=0.0)),
    ]
    for params in (None, {"numRows": "10", "numFiles": "1"}):
        assert stats_digest(entries, params) == _reference(entries, params)
        assert stats_digest(entries[::-1], params) == _reference(entries, params)
        assert stats_digest([], params) == _reference([], params)
