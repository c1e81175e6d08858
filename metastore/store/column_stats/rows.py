"""Column statistics ↔ TAB_COL_STATS / PART_COL_STATS rows: the one place that knows the typed columns.

The layout is Hive 4's (StatObjectConverter): long, date (days) and timestamp (seconds) in LONG_*, double in
DOUBLE_*, decimal as BigDecimal.toString() text in BIG_DECIMAL_*, string/binary lengths in AVG/MAX_COL_LEN,
boolean counts in NUM_TRUES/NUM_FALSES. As Hive does, the kind is chosen on read from COLUMN_TYPE.

What each kind stores comes from the kinds table (metastore.stats.kinds): its value type picks the LONG_/DOUBLE_/
BIG_DECIMAL_ columns, its parts (NDV, histogram, lengths, true/false counts) the others. Reads build one reader
per kind from it once per SELECT list, so the per-row work stays positional indexing and one constructor call.
STATS_THRIFT, the served encoding kept with each row, is not made here: it is Thrift, which the store does not
speak; the repository gets the encoding function from the edge (see StatsRepository).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Any

from metastore.errors import InvalidInput
from metastore.stats.kinds import KIND_SPECS, KindSpec, ValueType, spec_for
from metastore.stats.model import (
    BooleanStats,
    ColumnStats,
    ColumnStatsEntry,
    LengthStats,
    RangeStats,
    StatsKind,
    StringStats,
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

@dataclass(frozen=True)
class _ValueColumns:
    """Where a value type's low/high live in a row, and how a value is written there and read back (None:
    as it is)."""

    label: str  # in messages: "double low value"
    low: str
    high: str
    to_row: Callable[[Any, str, str], Any] | None
    from_row: Callable[[Any], Any] | None


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


def _decimal_to_row(value: Decimal, _what: str, _column: str) -> str:
    return decimal_to_text(value)


#: The row columns of each kind of low/high value (KindSpec.values): Hive 4's StatObjectConverter layout.
_VALUE_COLUMNS: dict[ValueType, _ValueColumns] = {
    ValueType.INTEGER: _ValueColumns("long", "LONG_LOW_VALUE", "LONG_HIGH_VALUE", None, None),
    ValueType.FLOAT: _ValueColumns("double", "DOUBLE_LOW_VALUE", "DOUBLE_HIGH_VALUE", _double, None),
    ValueType.DECIMAL: _ValueColumns(
        "decimal", "BIG_DECIMAL_LOW_VALUE", "BIG_DECIMAL_HIGH_VALUE", _decimal_to_row, text_to_decimal
    ),
}


def entry_to_row(entry: ColumnStatsEntry, *, engine: str, last_analyzed: int) -> dict[str, Any]:
    """The statistics-table row values for one entry (without the TBL_ID / PART_ID owner column); STATS_THRIFT
    is None (the repository fills in the served encoding when it has one)."""
    stats = entry.stats
    kind = kind_for_type(entry.column_type)
    if kind is not stats.kind:
        raise InvalidInput(
            f"column {entry.column!r} is {entry.column_type}, which carries "
            f"{kind.name.lower() + 'Stats' if kind else 'no statistics'}, got {stats.kind.name.lower()}Stats"
        )
    spec = spec_for(kind)
    # The kind's spec says which fields its class has (as KindSpec.flatten reads them), read here without
    # building a FlatStats: this runs for every statistic written.
    flat: Any = stats
    row: dict[str, Any] = {
        "COLUMN_NAME": entry.column.lower(),
        "COLUMN_TYPE": entry.column_type,
        **_EMPTY_ROW,
        "NUM_NULLS": flat.num_nulls,
        "BIT_VECTOR": flat.bit_vector,
        "LAST_ANALYZED": last_analyzed,
        "ENGINE": engine,
        "STATS_THRIFT": None,
    }
    if spec.values is not None:
        columns = _VALUE_COLUMNS[spec.values]
        for name, value, what in ((columns.low, flat.low, "low"), (columns.high, flat.high, "high")):
            if value is not None and columns.to_row is not None:
                value = columns.to_row(value, f"{columns.label} {what} value", entry.column)
            row[name] = value
    if spec.has_ndv:
        row["NUM_DISTINCTS"] = flat.num_dvs
    if spec.has_histogram:
        row["HISTOGRAM"] = flat.histogram
    if spec.has_lengths:
        row["AVG_COL_LEN"] = _double(flat.avg_col_len, "average length", entry.column)
        row["MAX_COL_LEN"] = flat.max_col_len
    if spec.has_booleans:
        row["NUM_TRUES"] = flat.num_trues
        row["NUM_FALSES"] = flat.num_falses
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

# Builds a kind's stats from a row (by position) and its already-read bit vector.
_KindReader = Callable[[Sequence[Any], bytes | None], ColumnStats]


_TYPES_KEPT = 4096


@functools.lru_cache(maxsize=_TYPES_KEPT)
def _kind(column_type: str) -> StatsKind | None:
    return kind_for_type(column_type)


def _kind_reader(spec: KindSpec, pos: Mapping[str, int]) -> _KindReader:
    """A reader of one kind's statistics from rows whose fields `pos` locates, made from the kind's spec: the
    per-row work is positional indexing and one constructor call."""
    cls = spec.stats_class
    i_nulls, i_ndv, i_hist = pos["NUM_NULLS"], pos["NUM_DISTINCTS"], pos.get("HISTOGRAM")
    if spec.values is not None:
        assert issubclass(cls, RangeStats)
        range_cls = cls
        columns = _VALUE_COLUMNS[spec.values]
        i_low, i_high, parse = pos[columns.low], pos[columns.high], columns.from_row

        def read_range(row: Sequence[Any], bit_vector: bytes | None) -> ColumnStats:
            low, high = row[i_low], row[i_high]
            if parse is not None:
                low = None if low is None else parse(low)
                high = None if high is None else parse(high)
            histogram = None if i_hist is None or row[i_hist] is None else bytes(row[i_hist])  # psycopg2: memoryview
            return range_cls(num_nulls=row[i_nulls], bit_vector=bit_vector, num_dvs=row[i_ndv] or 0,
                             histogram=histogram, low=low, high=high)

        return read_range
    if spec.has_booleans:
        assert issubclass(cls, BooleanStats)
        boolean_cls = cls
        i_true, i_false = pos["NUM_TRUES"], pos["NUM_FALSES"]

        def read_booleans(row: Sequence[Any], bit_vector: bytes | None) -> ColumnStats:
            return boolean_cls(num_nulls=row[i_nulls], bit_vector=bit_vector, num_trues=row[i_true] or 0,
                               num_falses=row[i_false] or 0)

        return read_booleans
    assert spec.has_lengths
    i_avg, i_max = pos["AVG_COL_LEN"], pos["MAX_COL_LEN"]
    if spec.has_ndv:
        assert issubclass(cls, StringStats)
        string_cls = cls

        def read_lengths_and_ndv(row: Sequence[Any], bit_vector: bytes | None) -> ColumnStats:
            return string_cls(num_nulls=row[i_nulls], bit_vector=bit_vector, max_col_len=row[i_max] or 0,
                              avg_col_len=float(row[i_avg] or 0.0), num_dvs=row[i_ndv] or 0)

        return read_lengths_and_ndv
    assert issubclass(cls, LengthStats)
    length_cls = cls

    def read_lengths(row: Sequence[Any], bit_vector: bytes | None) -> ColumnStats:
        return length_cls(num_nulls=row[i_nulls], bit_vector=bit_vector, max_col_len=row[i_max] or 0,
                          avg_col_len=float(row[i_avg] or 0.0))

    return read_lengths


@functools.lru_cache(maxsize=64)
def row_reader(columns: tuple[str, ...]) -> Callable[[Sequence[Any]], ColumnStatsEntry]:
    """A converter of statistics rows given as sequences whose fields `columns` names (a SELECT list, which
    may hold other columns too and may leave out BIT_VECTOR and HISTOGRAM). The per-row work is positional
    indexing and one reader per kind, made once from the kinds table: this is the hot path of reading
    statistics for many partitions."""
    pos = {c: i for i, c in enumerate(columns)}
    absent = [c for c in _REQUIRED if c not in pos]
    if absent:
        raise ValueError(f"statistics rows lack the column(s) {absent}")
    i_name, i_type, i_bv = pos["COLUMN_NAME"], pos["COLUMN_TYPE"], pos.get("BIT_VECTOR")
    readers: dict[StatsKind | None, _KindReader] = {kind: _kind_reader(spec, pos) for kind, spec in KIND_SPECS.items()}
    # The reader of each column type seen, by its text: a str key hashes in C, where the kind (an Enum) would
    # run Enum.__hash__ and _kind's cache for every row. Bounded as _kind's cache is.
    by_type: dict[str, _KindReader | None] = {}

    def read(row: Sequence[Any]) -> ColumnStatsEntry:
        column_type = row[i_type]
        try:
            reader = by_type[column_type]
        except KeyError:
            reader = readers.get(_kind(column_type))
            if len(by_type) < _TYPES_KEPT:
                by_type[column_type] = reader
        if reader is None:
            # entry_to_row refuses such rows; only a database edited by hand can hold one.
            raise InvalidInput(
                f"statistics row of column {row[i_name]!r} has type {column_type!r}, which carries no statistics"
            )
        bit_vector = None if i_bv is None or row[i_bv] is None else bytes(row[i_bv])  # psycopg2: memoryview
        return ColumnStatsEntry(row[i_name], column_type, reader(row, bit_vector))

    return read


def row_to_entry(row: Mapping[str, Any]) -> ColumnStatsEntry:
    """The entry for one statistics row; BIT_VECTOR and HISTOGRAM may be absent from `row` (not fetched)."""
    columns = tuple(row.keys())
    return row_reader(columns)([row[c] for c in columns])
