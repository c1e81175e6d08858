"""Per-type column statistics values, as Hive's ColumnStatisticsData union describes them.

These are the domain values every layer speaks; Thrift structs, SQL rows and ORC statistics are
converted to and from them at the edges, one function each.
"""

from __future__ import annotations

import enum
import functools
import re
from dataclasses import dataclass
from decimal import Decimal
from typing import ClassVar, Generic, TypeVar

#: The Python type of a kind's low/high values (int for long/date/timestamp, float, Decimal).
V = TypeVar("V", int, float, Decimal)


class StatsKind(enum.Enum):
    """The members of Hive's ColumnStatisticsData union; the value is the union field id."""

    BOOLEAN = 1
    LONG = 2
    DOUBLE = 3
    STRING = 4
    BINARY = 5
    DECIMAL = 6
    DATE = 7
    TIMESTAMP = 8


@dataclass(frozen=True, kw_only=True)
class ColumnStats:
    """Statistics common to every kind: the null count and an optional NDV sketch (Hive bitVector bytes)."""

    kind: ClassVar[StatsKind]
    num_nulls: int
    bit_vector: bytes | None = None


@dataclass(frozen=True, kw_only=True)
class BooleanStats(ColumnStats):
    kind: ClassVar[StatsKind] = StatsKind.BOOLEAN
    num_trues: int
    num_falses: int


@dataclass(frozen=True, kw_only=True)
class RangeStats(ColumnStats, Generic[V]):
    """Kinds with low/high values of type ``V``, an NDV and an optional KLL histogram (Hive 4 field 6)."""

    num_dvs: int
    histogram: bytes | None = None
    low: V | None = None
    high: V | None = None


@dataclass(frozen=True, kw_only=True)
class LongStats(RangeStats[int]):
    kind: ClassVar[StatsKind] = StatsKind.LONG


@dataclass(frozen=True, kw_only=True)
class DoubleStats(RangeStats[float]):
    kind: ClassVar[StatsKind] = StatsKind.DOUBLE


@dataclass(frozen=True, kw_only=True)
class DecimalStats(RangeStats[Decimal]):
    kind: ClassVar[StatsKind] = StatsKind.DECIMAL


@dataclass(frozen=True, kw_only=True)
class DateStats(RangeStats[int]):
    """low/high are days since 1970-01-01."""

    kind: ClassVar[StatsKind] = StatsKind.DATE


@dataclass(frozen=True, kw_only=True)
class TimestampStats(RangeStats[int]):
    """low/high are seconds since the UTC epoch, as Hive 4's Timestamp struct."""

    kind: ClassVar[StatsKind] = StatsKind.TIMESTAMP


@dataclass(frozen=True, kw_only=True)
class LengthStats(ColumnStats):
    """Kinds measured by value length in bytes (strings and binaries)."""

    max_col_len: int
    avg_col_len: float


@dataclass(frozen=True, kw_only=True)
class StringStats(LengthStats):
    kind: ClassVar[StatsKind] = StatsKind.STRING
    num_dvs: int


@dataclass(frozen=True, kw_only=True)
class BinaryStats(LengthStats):
    kind: ClassVar[StatsKind] = StatsKind.BINARY


STATS_CLASSES: dict[StatsKind, type[ColumnStats]] = {
    StatsKind.BOOLEAN: BooleanStats,
    StatsKind.LONG: LongStats,
    StatsKind.DOUBLE: DoubleStats,
    StatsKind.STRING: StringStats,
    StatsKind.BINARY: BinaryStats,
    StatsKind.DECIMAL: DecimalStats,
    StatsKind.DATE: DateStats,
    StatsKind.TIMESTAMP: TimestampStats,
}


@dataclass(frozen=True)
class ColumnStatsEntry:
    """One column's statistics (Hive's ColumnStatisticsObj): name, Hive type string and the values."""

    column: str
    column_type: str
    stats: ColumnStats


_TYPE_HEAD = re.compile(r"^\s*([a-zA-Z_]+)")

# Which statistics kind a Hive column type carries; Hive picks the union member on read the same way.
_KIND_BY_TYPE = {
    "boolean": StatsKind.BOOLEAN,
    "tinyint": StatsKind.LONG,
    "smallint": StatsKind.LONG,
    "int": StatsKind.LONG,
    "integer": StatsKind.LONG,
    "bigint": StatsKind.LONG,
    "float": StatsKind.DOUBLE,
    "double": StatsKind.DOUBLE,
    "decimal": StatsKind.DECIMAL,
    "numeric": StatsKind.DECIMAL,
    "date": StatsKind.DATE,
    "timestamp": StatsKind.TIMESTAMP,
    "string": StatsKind.STRING,
    "varchar": StatsKind.STRING,
    "char": StatsKind.STRING,
    "binary": StatsKind.BINARY,
}


@functools.lru_cache(maxsize=1024)
def kind_for_type(hive_type: str) -> StatsKind | None:
    """The statistics kind of a Hive column type (e.g. 'varchar(10)' → STRING); None for complex types. Kept
    per type text (a re-run checks every cached partial's kind against its column's)."""
    m = _TYPE_HEAD.match(hive_type)
    if not m:
        return None
    head = m.group(1).lower()
    if head == "double" and hive_type.strip().lower().startswith("double precision"):
        return StatsKind.DOUBLE
    return _KIND_BY_TYPE.get(head)
