"""Validation and normalisation of incoming column statistics, once for every writer (Thrift, SQL, ANALYZE).

Hive itself checks little on write (see the research notes): a union member that does not fit the column
type only shows up later, when reads pick the member from the stored type. We refuse such statistics up front
with an error naming the column, the owner and the rule broken, and normalise what Hive clients legitimately
send differently (Hive 2.3/3 send timestamp statistics as ``longStats``).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from decimal import Decimal, InvalidOperation

from metastore.catalog import FieldSchema
from metastore.errors import InvalidInput
from metastore.stats.kll import KllFormatError, kll_from_bytes
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
from metastore.stats.ndv import NdvFormatError, NdvSketch

__all__ = ["UNION_MEMBER", "normalize_entry", "normalize_stats"]

# The ColumnStatisticsData union member names, as Hive clients know them.
UNION_MEMBER: dict[StatsKind, str] = {
    StatsKind.BOOLEAN: "booleanStats",
    StatsKind.LONG: "longStats",
    StatsKind.DOUBLE: "doubleStats",
    StatsKind.STRING: "stringStats",
    StatsKind.BINARY: "binaryStats",
    StatsKind.DECIMAL: "decimalStats",
    StatsKind.DATE: "dateStats",
    StatsKind.TIMESTAMP: "timestampStats",
}

_INTEGER_VALUED = (LongStats, DateStats, TimestampStats)


def normalize_entry(
    entry: ColumnStatsEntry,
    column: FieldSchema | None,
    *,
    owner: str,
    num_rows: int | None = None,
) -> ColumnStatsEntry:
    """Check ``entry`` against the table's ``column`` and return it normalised; raises InvalidInput.

    ``owner`` names the table or partition in messages (``"sales.orders"``,
    ``"sales.orders partition ds=2024-01-01"``); ``num_rows`` enables the row-count checks.
    The result carries the column's declared type in lower case and the column's own name.
    """
    if column is None:
        raise InvalidInput(f"column '{entry.column}' does not exist in {owner}")
    declared = column.type.strip().lower()
    stats = normalize_stats(entry.stats, declared, column=column.name, owner=owner, num_rows=num_rows)
    return ColumnStatsEntry(column=column.name, column_type=declared, stats=stats)


def normalize_stats(
    stats: ColumnStats,
    column_type: str,
    *,
    column: str,
    owner: str,
    num_rows: int | None = None,
) -> ColumnStats:
    """The checks and normalisation of :func:`normalize_entry` on bare statistics of a column of ``column_type``."""
    where = f"column '{column}' of {owner}"
    expected = kind_for_type(column_type)
    if expected is None:
        raise InvalidInput(f"{where} has type {column_type}, which has no column statistics")
    if not isinstance(stats, ColumnStats) or not hasattr(type(stats), "kind"):
        raise InvalidInput(f"{where}: statistics must be one of the typed kinds, got {type(stats).__name__}")
    if stats.kind is not expected:
        if expected is StatsKind.TIMESTAMP and isinstance(stats, LongStats):
            # Hive 2.3/3.x clients have no timestampStats member and send epoch seconds as longStats.
            stats = TimestampStats(
                num_nulls=stats.num_nulls,
                num_dvs=stats.num_dvs,
                bit_vector=stats.bit_vector,
                histogram=stats.histogram,
                low=stats.low,
                high=stats.high,
            )
        else:
            raise InvalidInput(f"{where} is {column_type}, got {UNION_MEMBER[stats.kind]}")

    changes: dict[str, object] = {}
    _check_count(where, "numNulls", stats.num_nulls)
    if isinstance(stats, BooleanStats):
        _check_count(where, "numTrues", stats.num_trues)
        _check_count(where, "numFalses", stats.num_falses)
    if hasattr(stats, "num_dvs"):
        _check_count(where, "numDVs", stats.num_dvs)
    if isinstance(stats, StringStats | BinaryStats):
        _check_count(where, "maxColLen", stats.max_col_len)
        avg = _number(where, "avgColLen", stats.avg_col_len)
        if avg < 0:
            raise InvalidInput(f"{where}: avgColLen must not be negative, got {stats.avg_col_len}")
        if avg > stats.max_col_len:
            raise InvalidInput(f"{where}: avgColLen {avg} is greater than maxColLen {stats.max_col_len}")
        changes["avg_col_len"] = avg

    if isinstance(stats, _INTEGER_VALUED):
        low = _integer(where, "lowValue", stats.low)
        high = _integer(where, "highValue", stats.high)
        changes.update(low=low, high=high)
        _check_order(where, low, high)
    elif isinstance(stats, DoubleStats):
        low = _double(where, "lowValue", stats.low)
        high = _double(where, "highValue", stats.high)
        changes.update(low=low, high=high)
        _check_order(where, low, high)
    elif isinstance(stats, DecimalStats):
        low = _decimal(where, "lowValue", stats.low)
        high = _decimal(where, "highValue", stats.high)
        changes.update(low=low, high=high)
        _check_order(where, low, high)

    if num_rows is not None:
        if stats.num_nulls > num_rows:
            raise InvalidInput(f"{where}: numNulls {stats.num_nulls} exceeds the {num_rows} rows of {owner}")
        if isinstance(stats, BooleanStats):
            total = stats.num_trues + stats.num_falses + stats.num_nulls
            if total > num_rows:
                raise InvalidInput(
                    f"{where}: numTrues + numFalses + numNulls = {total} exceeds the {num_rows} rows of {owner}"
                )

    # Hive treats an empty bitVector or histogram as absent.
    if stats.bit_vector is not None and len(stats.bit_vector) == 0:
        changes["bit_vector"] = None
    elif stats.bit_vector is not None:
        try:
            NdvSketch.from_bytes(stats.bit_vector)
        except NdvFormatError as exc:
            raise InvalidInput(f"{where}: {exc}") from None
        changes["bit_vector"] = bytes(stats.bit_vector)
    histogram = getattr(stats, "histogram", None)
    if histogram is not None and len(histogram) == 0:
        changes["histogram"] = None
    elif histogram is not None:
        try:
            kll_from_bytes(histogram)
        except KllFormatError as exc:
            raise InvalidInput(f"{where}: {exc}") from None
        changes["histogram"] = bytes(histogram)
    return dataclasses.replace(stats, **changes) if changes else stats


def _check_count(where: str, name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidInput(f"{where}: {name} must be an integer, got {value!r}")
    if value < 0:
        raise InvalidInput(f"{where}: {name} must not be negative, got {value}")


def _number(where: str, name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidInput(f"{where}: {name} must be a number, got {value!r}")
    result = float(value)
    if math.isnan(result):
        raise InvalidInput(f"{where}: {name} is NaN")
    return result


def _integer(where: str, name: str, value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidInput(f"{where}: {name} must be an integer, got {value!r}")
    return int(value)


def _double(where: str, name: str, value: object) -> float | None:
    if value is None:
        return None
    return _number(where, name, value)


def _decimal(where: str, name: str, value: object) -> Decimal | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidInput(f"{where}: {name} must be a decimal, got {value!r}")
    try:
        if isinstance(value, Decimal):
            result = value
        elif isinstance(value, float):
            result = Decimal(repr(value))
        elif isinstance(value, numbers.Integral | str):
            result = Decimal(value)
        else:
            raise InvalidInput(f"{where}: {name} must be a decimal, got {value!r}")
    except InvalidOperation:
        raise InvalidInput(f"{where}: {name} must be a decimal, got {value!r}") from None
    if not result.is_finite():
        raise InvalidInput(f"{where}: {name} must be a finite decimal, got {value!r}")
    return result


def _check_order(where: str, low: object, high: object) -> None:
    if low is not None and high is not None and low > high:  # type: ignore[operator]
        raise InvalidInput(f"{where}: lowValue {low} is greater than highValue {high}")
