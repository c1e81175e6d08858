"""Validation and normalisation of incoming column statistics, once for every writer (Thrift, SQL, ANALYZE).

Hive itself checks little on write (see the research notes): a union member that does not fit the column
type only shows up later, when reads pick the member from the stored type. We refuse such statistics up front
with an error naming the column, the owner and the rule broken, and normalise what Hive clients legitimately
send differently (Hive 2.3/3 send timestamp statistics as ``longStats``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from decimal import Decimal, InvalidOperation

from metastore.catalog import FieldSchema
from metastore.errors import InvalidInput
from metastore.stats.decimals import decimal_type_of, fit_decimal
from metastore.stats.kinds import KIND_SPECS, ValueType, spec_for
from metastore.stats.kll import KllFormatError, kll_from_bytes
from metastore.stats.model import (
    ColumnStats,
    ColumnStatsEntry,
    LongStats,
    StatsKind,
    kind_for_type,
)
from metastore.stats.ndv import NdvFormatError, NdvSketch

__all__ = ["UNION_MEMBER", "normalize_entry", "normalize_stats"]

# The ColumnStatisticsData union member names, as Hive clients know them.
UNION_MEMBER: dict[StatsKind, str] = {kind: spec.union_member for kind, spec in KIND_SPECS.items()}

Bound = int | float | Decimal


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
            stats = spec_for(StatsKind.TIMESTAMP).build(**vars(spec_for(StatsKind.LONG).flatten(stats)))
        else:
            raise InvalidInput(f"{where} is {column_type}, got {UNION_MEMBER[stats.kind]}")

    spec = spec_for(stats.kind)
    flat = spec.flatten(stats)
    _check_count(where, "numNulls", flat.num_nulls)
    if spec.has_booleans:
        _check_count(where, "numTrues", flat.num_trues)
        _check_count(where, "numFalses", flat.num_falses)
    if spec.has_ndv:
        _check_count(where, "numDVs", flat.num_dvs)
    avg_col_len = flat.avg_col_len
    if spec.has_lengths:
        max_col_len = _check_count(where, "maxColLen", flat.max_col_len)
        avg_col_len = _number(where, "avgColLen", flat.avg_col_len)
        if avg_col_len < 0:
            raise InvalidInput(f"{where}: avgColLen must not be negative, got {flat.avg_col_len}")
        if avg_col_len > max_col_len:
            raise InvalidInput(f"{where}: avgColLen {avg_col_len} is greater than maxColLen {max_col_len}")

    low, high = flat.low, flat.high
    if spec.values is not None:
        low = _VALUE_CHECKS[spec.values](where, "lowValue", low, column_type)
        high = _VALUE_CHECKS[spec.values](where, "highValue", high, column_type)
        if low is not None and high is not None and low > high:
            raise InvalidInput(f"{where}: lowValue {low} is greater than highValue {high}")

    if num_rows is not None:
        if flat.num_nulls > num_rows:
            raise InvalidInput(f"{where}: numNulls {flat.num_nulls} exceeds the {num_rows} rows of {owner}")
        if spec.has_booleans:
            total = (flat.num_trues or 0) + (flat.num_falses or 0) + flat.num_nulls
            if total > num_rows:
                raise InvalidInput(
                    f"{where}: numTrues + numFalses + numNulls = {total} exceeds the {num_rows} rows of {owner}"
                )

    # Hive treats an empty bitVector or histogram as absent.
    bit_vector = _sketch_bytes(where, flat.bit_vector, _check_bit_vector)
    histogram = _sketch_bytes(where, flat.histogram, kll_from_bytes) if spec.has_histogram else None
    return spec.build(
        num_nulls=flat.num_nulls,
        bit_vector=bit_vector,
        num_dvs=flat.num_dvs,
        histogram=histogram,
        low=low,
        high=high,
        num_trues=flat.num_trues,
        num_falses=flat.num_falses,
        max_col_len=flat.max_col_len,
        avg_col_len=avg_col_len,
    )


def _check_bit_vector(data: bytes) -> object:
    return NdvSketch.from_bytes(data)


def _sketch_bytes(where: str, data: bytes | None, reader: Callable[[bytes], object]) -> bytes | None:
    """Sketch bytes as stored: None for absent or empty, InvalidInput naming the sketch when unreadable."""
    if data is None or len(data) == 0:
        return None
    try:
        reader(data)
    except (NdvFormatError, KllFormatError) as exc:
        raise InvalidInput(f"{where}: {exc}") from None
    return bytes(data)


def _check_count(where: str, name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidInput(f"{where}: {name} must be an integer, got {value!r}")
    if value < 0:
        raise InvalidInput(f"{where}: {name} must not be negative, got {value}")
    return _long(where, name, int(value))


# Hive's counts and integer statistics are Java longs (Thrift i64, SQL BIGINT): a larger value cannot be
# sent or stored, so it is refused here with a message rather than failing in an encoder or the database.
_LONG_MIN, _LONG_MAX = -(1 << 63), (1 << 63) - 1


def _long(where: str, name: str, value: int) -> int:
    if not _LONG_MIN <= value <= _LONG_MAX:
        raise InvalidInput(f"{where}: {name} {value} is outside the range of a 64-bit integer")
    return value


def _number(where: str, name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidInput(f"{where}: {name} must be a number, got {value!r}")
    result = float(value)
    if math.isnan(result):
        raise InvalidInput(f"{where}: {name} is NaN")
    return result


def _integer(where: str, name: str, value: object, column_type: str) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise InvalidInput(f"{where}: {name} must be an integer, got {value!r}")
    return _long(where, name, int(value))


def _double(where: str, name: str, value: object, column_type: str) -> float | None:
    if value is None:
        return None
    return _number(where, name, value)


def _decimal(where: str, name: str, value: object, column_type: str) -> Decimal | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise InvalidInput(f"{where}: {name} must be a decimal, got {value!r}")
    try:
        if isinstance(value, Decimal):
            result = value
        elif isinstance(value, float):
            result = Decimal(repr(value))
        elif isinstance(value, numbers.Integral):
            result = Decimal(int(value))
        elif isinstance(value, str):
            result = Decimal(value)
        else:
            raise InvalidInput(f"{where}: {name} must be a decimal, got {value!r}")
    except InvalidOperation:
        raise InvalidInput(f"{where}: {name} must be a decimal, got {value!r}") from None
    if not result.is_finite():
        raise InvalidInput(f"{where}: {name} must be a finite decimal, got {value!r}")
    declared = decimal_type_of(column_type)
    if declared is None:
        raise InvalidInput(f"{where}: {column_type} is not a valid decimal type")
    return fit_decimal(result, declared, where=where, name=name)


# How low/high values of each value type are checked and converted (the column type bounds decimals).
_VALUE_CHECKS: dict[ValueType, Callable[[str, str, object, str], Bound | None]] = {
    ValueType.INTEGER: _integer,
    ValueType.FLOAT: _double,
    ValueType.DECIMAL: _decimal,
}
