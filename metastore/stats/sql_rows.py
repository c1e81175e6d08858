"""Column statistics ↔ TAB_COL_STATS / PART_COL_STATS rows: the one place that knows the typed columns.

The layout is Hive 4's (StatObjectConverter): long, date (days) and timestamp (seconds) in LONG_*, double in
DOUBLE_*, decimal as BigDecimal.toString() text in BIG_DECIMAL_*, string/binary lengths in AVG/MAX_COL_LEN,
boolean counts in NUM_TRUES/NUM_FALSES. As Hive does, the kind is chosen on read from COLUMN_TYPE.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from metastore.errors import InvalidInput
from metastore.stats.model import (
    BinaryStats,
    BooleanStats,
    ColumnStats,
    ColumnStatsEntry,
    DateStats,
    DecimalStats,
    DoubleStats,
    LongStats,
    StatsKind,
    StringStats,
    TimestampStats,
    kind_for_type,
)

_EMPTY_ROW: dict[str, Any] = {
    "LONG_LOW_VALUE": None,
    "LONG_HIGH_VALUE": None,
    "DOUBLE_LOW_VALUE": None,
    "DOUBLE_HIGH_VALUE": None,
    "BIG_DECIMAL_LOW_VALUE": None,
    "BIG_DECIMAL_HIGH_VALUE": None,
    "NUM_DISTINCTS": None,
    "BIT_VECTOR": None,
    "AVG_COL_LEN": None,
    "MAX_COL_LEN": None,
    "NUM_TRUES": None,
    "NUM_FALSES": None,
    "HISTOGRAM": None,
}

_LONG_KINDS = (StatsKind.LONG, StatsKind.DATE, StatsKind.TIMESTAMP)


def decimal_to_text(value: Decimal) -> str:
    """Java's BigDecimal.toString() of the same unscaled value and scale (Python's str() follows the same
    to-scientific-string rule: plain unless the exponent is positive or the adjusted exponent is below -6)."""
    if not value.is_finite():
        raise InvalidInput(f"decimal statistic {value} is not a finite number")
    return str(value)


def text_to_decimal(text: str) -> Decimal:
    """Parse a BIG_DECIMAL_* value back; the scale written is kept (1.50 stays 1.50)."""
    try:
        return Decimal(text)
    except InvalidOperation:
        raise InvalidInput(f"stored decimal statistic {text!r} is not a number") from None


def _double(value: float | None, what: str, column: str) -> float | None:
    if value is not None and math.isnan(value):
        # SQLite would store NaN as NULL; refuse it rather than read back something else.
        raise InvalidInput(f"{what} of column {column!r} is NaN")
    return value


def entry_to_row(entry: ColumnStatsEntry, *, engine: str, last_analyzed: int) -> dict[str, Any]:
    """The statistics-table row values for one entry (without the TBL_ID / PART_ID owner column)."""
    stats = entry.stats
    kind = kind_for_type(entry.column_type)
    if kind is not stats.kind:
        raise InvalidInput(
            f"column {entry.column!r} is {entry.column_type}, which carries "
            f"{kind.name.lower() + 'Stats' if kind else 'no statistics'}, got {stats.kind.name.lower()}Stats"
        )
    row: dict[str, Any] = {
        "COLUMN_NAME": entry.column.lower(),
        "COLUMN_TYPE": entry.column_type,
        **_EMPTY_ROW,
        "NUM_NULLS": stats.num_nulls,
        "BIT_VECTOR": stats.bit_vector,
        "LAST_ANALYZED": last_analyzed,
        "ENGINE": engine,
    }
    if isinstance(stats, BooleanStats):
        row["NUM_TRUES"] = stats.num_trues
        row["NUM_FALSES"] = stats.num_falses
    elif isinstance(stats, LongStats | DateStats | TimestampStats):
        row["LONG_LOW_VALUE"] = stats.low
        row["LONG_HIGH_VALUE"] = stats.high
        row["NUM_DISTINCTS"] = stats.num_dvs
        row["HISTOGRAM"] = stats.histogram
    elif isinstance(stats, DoubleStats):
        row["DOUBLE_LOW_VALUE"] = _double(stats.low, "double low value", entry.column)
        row["DOUBLE_HIGH_VALUE"] = _double(stats.high, "double high value", entry.column)
        row["NUM_DISTINCTS"] = stats.num_dvs
        row["HISTOGRAM"] = stats.histogram
    elif isinstance(stats, DecimalStats):
        row["BIG_DECIMAL_LOW_VALUE"] = None if stats.low is None else decimal_to_text(stats.low)
        row["BIG_DECIMAL_HIGH_VALUE"] = None if stats.high is None else decimal_to_text(stats.high)
        row["NUM_DISTINCTS"] = stats.num_dvs
        row["HISTOGRAM"] = stats.histogram
    elif isinstance(stats, StringStats):
        row["AVG_COL_LEN"] = _double(stats.avg_col_len, "average length", entry.column)
        row["MAX_COL_LEN"] = stats.max_col_len
        row["NUM_DISTINCTS"] = stats.num_dvs
    elif isinstance(stats, BinaryStats):
        row["AVG_COL_LEN"] = _double(stats.avg_col_len, "average length", entry.column)
        row["MAX_COL_LEN"] = stats.max_col_len
    else:  # pragma: no cover - every kind is handled above
        raise InvalidInput(f"unknown statistics kind {type(stats).__name__}")
    return row


def _bytes(value: Any) -> bytes | None:
    # psycopg2 hands back memoryview for bytea.
    return None if value is None else bytes(value)


def _int(value: Any) -> int:
    return 0 if value is None else int(value)


def row_to_entry(row: Mapping[str, Any]) -> ColumnStatsEntry:
    """The entry for one statistics row; BIT_VECTOR and HISTOGRAM may be absent from `row` (not fetched)."""
    column_type = row["COLUMN_TYPE"]
    kind = kind_for_type(column_type)
    num_nulls = _int(row["NUM_NULLS"])
    bit_vector = _bytes(row.get("BIT_VECTOR"))
    stats: ColumnStats
    if kind in _LONG_KINDS:
        cls = LongStats if kind is StatsKind.LONG else DateStats if kind is StatsKind.DATE else TimestampStats
        stats = cls(
            num_nulls=num_nulls,
            bit_vector=bit_vector,
            num_dvs=_int(row["NUM_DISTINCTS"]),
            histogram=_bytes(row.get("HISTOGRAM")),
            low=row["LONG_LOW_VALUE"],
            high=row["LONG_HIGH_VALUE"],
        )
    elif kind is StatsKind.DOUBLE:
        stats = DoubleStats(
            num_nulls=num_nulls,
            bit_vector=bit_vector,
            num_dvs=_int(row["NUM_DISTINCTS"]),
            histogram=_bytes(row.get("HISTOGRAM")),
            low=row["DOUBLE_LOW_VALUE"],
            high=row["DOUBLE_HIGH_VALUE"],
        )
    elif kind is StatsKind.DECIMAL:
        low, high = row["BIG_DECIMAL_LOW_VALUE"], row["BIG_DECIMAL_HIGH_VALUE"]
        stats = DecimalStats(
            num_nulls=num_nulls,
            bit_vector=bit_vector,
            num_dvs=_int(row["NUM_DISTINCTS"]),
            histogram=_bytes(row.get("HISTOGRAM")),
            low=None if low is None else text_to_decimal(low),
            high=None if high is None else text_to_decimal(high),
        )
    elif kind is StatsKind.BOOLEAN:
        stats = BooleanStats(
            num_nulls=num_nulls,
            bit_vector=bit_vector,
            num_trues=_int(row["NUM_TRUES"]),
            num_falses=_int(row["NUM_FALSES"]),
        )
    elif kind is StatsKind.STRING:
        stats = StringStats(
            num_nulls=num_nulls,
            bit_vector=bit_vector,
            max_col_len=_int(row["MAX_COL_LEN"]),
            avg_col_len=float(row["AVG_COL_LEN"] or 0.0),
            num_dvs=_int(row["NUM_DISTINCTS"]),
        )
    elif kind is StatsKind.BINARY:
        stats = BinaryStats(
            num_nulls=num_nulls,
            bit_vector=bit_vector,
            max_col_len=_int(row["MAX_COL_LEN"]),
            avg_col_len=float(row["AVG_COL_LEN"] or 0.0),
        )
    else:
        # entry_to_row refuses such rows; only a database edited by hand can hold one.
        raise InvalidInput(
            f"statistics row of column {row['COLUMN_NAME']!r} has type {column_type!r}, "
            "which carries no statistics"
        )
    return ColumnStatsEntry(column=row["COLUMN_NAME"], column_type=column_type, stats=stats)
