"""The statistics kinds in one table, keyed by :class:`~metastore.stats.model.StatsKind`.

Every place that treats the kinds differently — Thrift and SQL-row conversions at the edges, validation,
merge-on-write and partition aggregation — reads what a kind is made of from :data:`KIND_SPECS` instead of
repeating its own ``if``/``isinstance`` chain over the eight kinds. The table is data, not behaviour: a
conversion looks up the kind's :class:`KindSpec`, reads the flat fields with :meth:`KindSpec.flatten` and
builds the domain value with :meth:`KindSpec.build`.

Public API (small on purpose; the edges key their conversions on it):

- :class:`ValueType` — how a kind's low/high values are typed (``INTEGER``, ``FLOAT``, ``DECIMAL``); an SQL
  row picks its LONG_/DOUBLE_/BIG_DECIMAL_ columns by it.
- :class:`KindSpec` — one kind: its stats class, Hive union member name, value type and which optional
  parts (NDV, histogram, lengths, true/false counts) it has; ``build`` and ``flatten``.
- :class:`FlatStats` — every field any kind has, ``None`` where the kind lacks it.
- :data:`KIND_SPECS`, :func:`spec_for` (by kind), :func:`spec_of` (of a stats value),
  :func:`spec_for_member` (by union member name, e.g. ``"longStats"``).

This module imports only :mod:`metastore.stats.model`: any layer may use it.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import Decimal
from types import MappingProxyType

from metastore.stats.model import (
    BinaryStats,
    BooleanStats,
    ColumnStats,
    DateStats,
    DecimalStats,
    DoubleStats,
    LengthStats,
    LongStats,
    RangeStats,
    StatsKind,
    StringStats,
    TimestampStats,
)

__all__ = [
    "KIND_SPECS",
    "FlatStats",
    "KindSpec",
    "ValueType",
    "spec_for",
    "spec_for_member",
    "spec_of",
]


class ValueType(enum.Enum):
    """The Python type of a kind's low/high values."""

    INTEGER = "integer"  # int: long values, days (date), epoch seconds (timestamp)
    FLOAT = "float"  # float
    DECIMAL = "decimal"  # decimal.Decimal


@dataclass(frozen=True, kw_only=True)
class FlatStats:
    """Every statistics field of every kind in one record; a field the kind lacks is ``None``.

    This is the shape Thrift structs and SQL rows have, so an edge reads or writes it without asking which
    kind it holds.
    """

    num_nulls: int
    bit_vector: bytes | None = None
    num_dvs: int | None = None
    histogram: bytes | None = None
    low: int | float | Decimal | None = None
    high: int | float | Decimal | None = None
    num_trues: int | None = None
    num_falses: int | None = None
    max_col_len: int | None = None
    avg_col_len: float | None = None


@dataclass(frozen=True)
class KindSpec:
    """What one statistics kind is made of.

    ``values`` is the type of low/high (None: the kind has no range); ``has_ndv`` means numDVs and an NDV
    sketch, ``has_histogram`` a KLL histogram, ``has_lengths`` maxColLen/avgColLen, ``has_booleans``
    numTrues/numFalses.
    """

    kind: StatsKind
    stats_class: type[ColumnStats]
    union_member: str
    values: ValueType | None
    has_ndv: bool
    has_histogram: bool
    has_lengths: bool
    has_booleans: bool

    def build(
        self,
        *,
        num_nulls: int,
        bit_vector: bytes | None = None,
        num_dvs: int | None = None,
        histogram: bytes | None = None,
        low: int | float | Decimal | None = None,
        high: int | float | Decimal | None = None,
        num_trues: int | None = None,
        num_falses: int | None = None,
        max_col_len: int | None = None,
        avg_col_len: float | None = None,
    ) -> ColumnStats:
        """The kind's stats value from flat fields; fields the kind lacks are ignored, missing counts are 0.

        Values are taken as given (no coercion): :mod:`metastore.stats.validate` checks them on writes.
        """
        cls = self.stats_class
        # issubclass narrows the class, so each constructor call is checked against its family's fields
        if issubclass(cls, BooleanStats):
            return cls(num_nulls=num_nulls, bit_vector=bit_vector, num_trues=num_trues or 0,
                       num_falses=num_falses or 0)
        if issubclass(cls, RangeStats):
            return cls(num_nulls=num_nulls, bit_vector=bit_vector, num_dvs=num_dvs or 0, histogram=histogram,
                       low=low, high=high)
        if issubclass(cls, StringStats):
            return cls(num_nulls=num_nulls, bit_vector=bit_vector, num_dvs=num_dvs or 0,
                       max_col_len=max_col_len or 0, avg_col_len=avg_col_len or 0.0)
        if issubclass(cls, LengthStats):
            return cls(num_nulls=num_nulls, bit_vector=bit_vector, max_col_len=max_col_len or 0,
                       avg_col_len=avg_col_len or 0.0)
        raise TypeError(f"not typed column statistics: {cls.__name__}")  # pragma: no cover - the table is closed

    def flatten(self, stats: ColumnStats) -> FlatStats:
        """``stats`` (of this kind) as a :class:`FlatStats`."""
        if isinstance(stats, BooleanStats):
            return FlatStats(num_nulls=stats.num_nulls, bit_vector=stats.bit_vector, num_trues=stats.num_trues,
                             num_falses=stats.num_falses)
        if isinstance(stats, RangeStats):
            return FlatStats(num_nulls=stats.num_nulls, bit_vector=stats.bit_vector, num_dvs=stats.num_dvs,
                             histogram=stats.histogram, low=stats.low, high=stats.high)
        if isinstance(stats, StringStats):
            return FlatStats(num_nulls=stats.num_nulls, bit_vector=stats.bit_vector, num_dvs=stats.num_dvs,
                             max_col_len=stats.max_col_len, avg_col_len=stats.avg_col_len)
        if isinstance(stats, LengthStats):
            return FlatStats(num_nulls=stats.num_nulls, bit_vector=stats.bit_vector,
                             max_col_len=stats.max_col_len, avg_col_len=stats.avg_col_len)
        raise TypeError(f"not typed column statistics: {type(stats).__name__}")


def _range(kind: StatsKind, cls: type[ColumnStats], member: str, values: ValueType) -> KindSpec:
    return KindSpec(kind, cls, member, values, has_ndv=True, has_histogram=True, has_lengths=False,
                    has_booleans=False)


#: The eight kinds, in union field-id order.
KIND_SPECS: Mapping[StatsKind, KindSpec] = MappingProxyType({
    StatsKind.BOOLEAN: KindSpec(StatsKind.BOOLEAN, BooleanStats, "booleanStats", None, has_ndv=False,
                                has_histogram=False, has_lengths=False, has_booleans=True),
    StatsKind.LONG: _range(StatsKind.LONG, LongStats, "longStats", ValueType.INTEGER),
    StatsKind.DOUBLE: _range(StatsKind.DOUBLE, DoubleStats, "doubleStats", ValueType.FLOAT),
    StatsKind.STRING: KindSpec(StatsKind.STRING, StringStats, "stringStats", None, has_ndv=True,
                               has_histogram=False, has_lengths=True, has_booleans=False),
    StatsKind.BINARY: KindSpec(StatsKind.BINARY, BinaryStats, "binaryStats", None, has_ndv=False,
                               has_histogram=False, has_lengths=True, has_booleans=False),
    StatsKind.DECIMAL: _range(StatsKind.DECIMAL, DecimalStats, "decimalStats", ValueType.DECIMAL),
    StatsKind.DATE: _range(StatsKind.DATE, DateStats, "dateStats", ValueType.INTEGER),
    StatsKind.TIMESTAMP: _range(StatsKind.TIMESTAMP, TimestampStats, "timestampStats", ValueType.INTEGER),
})

_BY_MEMBER = {spec.union_member: spec for spec in KIND_SPECS.values()}


def spec_for(kind: StatsKind) -> KindSpec:
    """The spec of ``kind``."""
    return KIND_SPECS[kind]


def spec_of(stats: ColumnStats) -> KindSpec:
    """The spec of a stats value's kind; TypeError for an untyped :class:`ColumnStats`."""
    kind = getattr(type(stats), "kind", None)
    if not isinstance(kind, StatsKind):
        raise TypeError(f"not typed column statistics: {type(stats).__name__}")
    return KIND_SPECS[kind]


def spec_for_member(member: str) -> KindSpec | None:
    """The spec of a ColumnStatisticsData union member name (``"longStats"``), None if there is no such member."""
    return _BY_MEMBER.get(member)
