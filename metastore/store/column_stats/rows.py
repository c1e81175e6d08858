"""Column statistics ↔ TAB_COL_STATS / PART_COL_STATS rows: the one place that knows the typed columns.

The layout is Hive 4's (StatObjectConverter): long, date (days) and timestamp (seconds) in LONG_*, double in
DOUBLE_*, decimal as BigDecimal.toString() text in BIG_DECIMAL_*, string/binary lengths in AVG/MAX_COL_LEN,
boolean counts in NUM_TRUES/NUM_FALSES. As Hive does, the kind is chosen on read from COLUMN_TYPE.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
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
from metastore.wire.stats import encode_served

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
    # Encoded from the row as it will be read back, so the stored bytes always equal what a read of the row
    # would build (defaults for absent counts included).
    row["STATS_THRIFT"] = encode_served(row_to_entry(row))
    return row


_REQUIRED = (
    "COLUMN_NAME",
    "COLUMN_TYPE",
    "LONG_LOW_VALUE",
    "LONG_HIGH_VALUE",
    "DOUBLE_LOW_VALUE",
    "DOUBLE_HIGH_VALUE",
    "BIG_DECIMAL_LOW_VALUE",
    "BIG_DECIMAL_HIGH_VALUE",
    "NUM_NULLS",
    "NUM_DISTINCTS",
    "AVG_COL_LEN",
    "MAX_COL_LEN",
    "NUM_TRUES",
    "NUM_FALSES",
)


@functools.lru_cache(maxsize=4096)
def _kind(column_type: str) -> StatsKind | None:
    return kind_for_type(column_type)


@functools.lru_cache(maxsize=64)
def row_reader(columns: tuple[str, ...]) -> Callable[[Sequence[Any]], ColumnStatsEntry]:
    """A converter of statistics rows given as sequences whose fields `columns` names (a SELECT list, which
    may hold other columns too and may leave out BIT_VECTOR and HISTOGRAM). The per-row work is positional
    indexing only: this is the hot path of reading statistics for many partitions."""
    pos = {c: i for i, c in enumerate(columns)}
    absent = [c for c in _REQUIRED if c not in pos]
    if absent:
        raise ValueError(f"statistics rows lack the column(s) {absent}")
    i_name, i_type, i_nulls, i_ndv = (
        pos["COLUMN_NAME"],
        pos["COLUMN_TYPE"],
        pos["NUM_NULLS"],
        pos["NUM_DISTINCTS"],
    )
    i_llow, i_lhigh = pos["LONG_LOW_VALUE"], pos["LONG_HIGH_VALUE"]
    i_dlow, i_dhigh = pos["DOUBLE_LOW_VALUE"], pos["DOUBLE_HIGH_VALUE"]
    i_xlow, i_xhigh = pos["BIG_DECIMAL_LOW_VALUE"], pos["BIG_DECIMAL_HIGH_VALUE"]
    i_avg, i_max, i_true, i_false = (
        pos["AVG_COL_LEN"],
        pos["MAX_COL_LEN"],
        pos["NUM_TRUES"],
        pos["NUM_FALSES"],
    )
    i_bv, i_hist = pos.get("BIT_VECTOR"), pos.get("HISTOGRAM")
    k_long, k_double, k_decimal, k_date, k_timestamp = (
        StatsKind.LONG,
        StatsKind.DOUBLE,
        StatsKind.DECIMAL,
        StatsKind.DATE,
        StatsKind.TIMESTAMP,
    )
    k_string, k_boolean, k_binary = StatsKind.STRING, StatsKind.BOOLEAN, StatsKind.BINARY

    def read(row: Sequence[Any]) -> ColumnStatsEntry:
        column_type = row[i_type]
        kind = _kind(column_type)
        bit_vector = None if i_bv is None or row[i_bv] is None else bytes(row[i_bv])  # psycopg2: memoryview
        stats: ColumnStats
        if kind is k_long or kind is k_date or kind is k_timestamp:
            cls = LongStats if kind is k_long else DateStats if kind is k_date else TimestampStats
            histogram = None if i_hist is None or row[i_hist] is None else bytes(row[i_hist])
            stats = cls(
                num_nulls=row[i_nulls],
                bit_vector=bit_vector,
                num_dvs=row[i_ndv] or 0,
                histogram=histogram,
                low=row[i_llow],
                high=row[i_lhigh],
            )
        elif kind is k_string:
            stats = StringStats(
                num_nulls=row[i_nulls],
                bit_vector=bit_vector,
                max_col_len=row[i_max] or 0,
                avg_col_len=float(row[i_avg] or 0.0),
                num_dvs=row[i_ndv] or 0,
            )
        elif kind is k_double:
            histogram = None if i_hist is None or row[i_hist] is None else bytes(row[i_hist])
            stats = DoubleStats(
                num_nulls=row[i_nulls],
                bit_vector=bit_vector,
                num_dvs=row[i_ndv] or 0,
                histogram=histogram,
                low=row[i_dlow],
                high=row[i_dhigh],
            )
        elif kind is k_decimal:
            histogram = None if i_hist is None or row[i_hist] is None else bytes(row[i_hist])
            low, high = row[i_xlow], row[i_xhigh]
            stats = DecimalStats(
                num_nulls=row[i_nulls],
                bit_vector=bit_vector,
                num_dvs=row[i_ndv] or 0,
                histogram=histogram,
                low=None if low is None else text_to_decimal(low),
                high=None if high is None else text_to_decimal(high),
            )
        elif kind is k_boolean:
            stats = BooleanStats(
                num_nulls=row[i_nulls],
                bit_vector=bit_vector,
                num_trues=row[i_true] or 0,
                num_falses=row[i_false] or 0,
            )
        elif kind is k_binary:
            stats = BinaryStats(
                num_nulls=row[i_nulls],
                bit_vector=bit_vector,
                max_col_len=row[i_max] or 0,
                avg_col_len=float(row[i_avg] or 0.0),
            )
        else:
            # entry_to_row refuses such rows; only a database edited by hand can hold one.
            raise InvalidInput(
                f"statistics row of column {row[i_name]!r} has type {column_type!r}, which carries no statistics"
            )
        return ColumnStatsEntry(row[i_name], column_type, stats)

    return read


def row_to_entry(row: Mapping[str, Any]) -> ColumnStatsEntry:
    """The entry for one statistics row; BIT_VECTOR and HISTOGRAM may be absent from `row` (not fetched)."""
    columns = tuple(row.keys())
    return row_reader(columns)([row[c] for c in columns])
