"""The one conversion from ORC column statistics (file footers) to the metastore's statistics model.

:func:`orc_column_facts` reads what an ORC ``ColumnStatistics`` entry tells about a column, in the units of the
Hive statistics kind the table declares, and leaves out (``None``) whatever the footer does not record or
cannot be trusted for; :func:`column_stats_from_orc` turns those facts into a :class:`ColumnStats`.
Harvesting (:mod:`metastore.stats.harvest`) scans data only for the facts left out.

Units: integers → ``LongStats`` low/high; float/double → ``DoubleStats`` (ORC widens floats to double, as Hive
does); decimal → ``DecimalStats`` (``Decimal``); date → ``DateStats`` (days since 1970-01-01, proleptic
Gregorian); timestamp → ``TimestampStats`` (whole seconds since the epoch of the wall-clock time read as UTC,
the floor of ORC's UTC milliseconds); string/char/varchar → ``StringStats`` and binary → ``BinaryStats``
(average length = the footer's total length / non-null values, in bytes); boolean → ``BooleanStats`` (true
count from the bucket statistics, false = non-null values − trues). Strings carry no low/high in Hive's model,
so ORC's string minimum/maximum (and the lower/upper bounds Java writes instead for values over 1024 bytes)
are not needed at all.

When footers are not trusted (the rules of ORC's own readers):

- ``writerVersion`` 0 (ORIGINAL, before HIVE-8732: Hive 0.11/0.12 era files): minimum/maximum of every type are
  ignored, as ORC C++ refuses the statistics of such files for predicate push-down (``hasCorrectStatistics``);
  counts, true counts and total lengths are kept (they were never affected).
- timestamps: only ``minimum_utc``/``maximum_utc`` (ORC-135, writerVersion >= 6) are used, the pre-ORC-135
  local-time fields never; files from writers other than ORC Java must have written their stripes in UTC
  (ORC Java normalises statistics to UTC itself; other writers record instants relative to their zone).
- decimals from ORC Java before ORC-517 (writerVersion < 7) with precision <= 18: minimum/maximum ignored
  (written wrong through the decimal64 path).
- doubles whose minimum or maximum is NaN (ORC Java keeps a leading NaN as both): ignored.
- dates and timestamps from hybrid-calendar files before 1582-10-15: dates are converted the way the reader
  converts values; timestamps are ignored.
- a missing ``numberOfValues`` (not every writer stores a field whose value is 0): nulls unknown.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any

import numpy as np

from metastore.errors import InvalidInput
from metastore.orcio import (
    GREGORIAN_CUTOVER_DAYS,
    BinaryStatistics,
    BooleanStatistics,
    Category,
    ColumnStatistics,
    DateStatistics,
    DecimalStatistics,
    DoubleStatistics,
    IntegerStatistics,
    StringStatistics,
    TimestampStatistics,
    TypeDescription,
    hybrid_to_proleptic_days,
    is_utc,
)
from metastore.stats.kinds import KIND_SPECS
from metastore.stats.model import ColumnStats, StatsKind, kind_for_type

if TYPE_CHECKING:
    from metastore.orcio import OrcReader

__all__ = [
    "OrcColumnFacts",
    "OrcWriterFacts",
    "column_stats_from_orc",
    "hive_kind",
    "orc_column_facts",
    "raw_data_size_of",
    "stats_from_facts",
    "storage_kind_fits",
]

_INTEGER = frozenset({Category.BYTE, Category.SHORT, Category.INT, Category.LONG})
_FLOATING = frozenset({Category.FLOAT, Category.DOUBLE})
_TEXT = frozenset({Category.STRING, Category.CHAR, Category.VARCHAR})
_TIMESTAMP = frozenset({Category.TIMESTAMP, Category.TIMESTAMP_INSTANT})

# ORC categories a column of each Hive statistics kind may be stored as (Hive's schema evolution widens
# integers to double/decimal and reads any string family as string).
_STORAGE: dict[StatsKind, frozenset[Category]] = {
    StatsKind.BOOLEAN: frozenset({Category.BOOLEAN}),
    StatsKind.LONG: _INTEGER,
    StatsKind.DOUBLE: _FLOATING | _INTEGER,
    StatsKind.DECIMAL: frozenset({Category.DECIMAL}) | _INTEGER,
    StatsKind.DATE: frozenset({Category.DATE}),
    StatsKind.TIMESTAMP: _TIMESTAMP,
    StatsKind.STRING: _TEXT,
    StatsKind.BINARY: frozenset({Category.BINARY}),
}

_WRITER_ORC_JAVA = 0
_HIVE_8732 = 1
_ORC_135 = 6
_ORC_517 = 7


@dataclass(frozen=True)
class OrcWriterFacts:
    """What decides how far a file's statistics can be trusted (see the module docstring)."""

    writer_id: int = _WRITER_ORC_JAVA
    writer_version: int = 9
    hybrid_calendar: bool = False
    utc_stripes: bool = True

    @classmethod
    def from_reader(cls, reader: OrcReader) -> OrcWriterFacts:
        """The facts of an open file (reads the first stripe footer for its writer time zone)."""
        utc = True
        if reader.stripes and reader.writer_id != _WRITER_ORC_JAVA:
            zone = reader.writer_timezone(0)
            utc = zone is None or is_utc(zone)
        return cls(
            writer_id=reader.writer_id,
            writer_version=reader.writer_version,
            hybrid_calendar=reader.hybrid_calendar,
            utc_stripes=utc,
        )


@dataclass(frozen=True)
class OrcColumnFacts:
    """What a footer says about one column, in the units of its Hive statistics kind; None = not known."""

    kind: StatsKind
    non_null: int | None
    num_nulls: int | None
    low: Any = None
    high: Any = None
    num_trues: int | None = None
    total_length: int | None = None

    @property
    def has_range(self) -> bool:
        """True when both low and high are known."""
        return self.low is not None and self.high is not None


def hive_kind(hive_type: str) -> StatsKind:
    """The statistics kind of a Hive column type; InvalidInput for types without column statistics."""
    kind = kind_for_type(hive_type)
    if kind is None:
        raise InvalidInput(f"type {hive_type} has no column statistics (only primitive types do)")
    return kind


def storage_kind_fits(kind: StatsKind, orc_type: TypeDescription) -> bool:
    """Whether a Hive column of statistics ``kind`` can be read from an ORC column of ``orc_type``."""
    return orc_type.category in _STORAGE[kind]


def orc_column_facts(
    orc_stats: ColumnStatistics,
    orc_type: TypeDescription,
    hive_type: str,
    *,
    num_rows: int | None = None,
    writer: OrcWriterFacts | None = None,
    has_value_count: bool = True,
) -> OrcColumnFacts:
    """The trusted facts of one column's ORC statistics (see the module docstring for the rules).

    ``num_rows`` is the number of rows the statistics cover (the file's row count for file statistics);
    ``has_value_count`` is False when the entry lacks ``numberOfValues``. Raises InvalidInput when the ORC
    type cannot hold values of the Hive type.
    """
    kind = hive_kind(hive_type)
    if not storage_kind_fits(kind, orc_type):
        raise InvalidInput(f"a {hive_type} column cannot be read from an ORC {orc_type} column")
    w = writer or OrcWriterFacts()
    non_null = int(orc_stats.number_of_values) if has_value_count else None
    nulls: int | None = None
    if non_null is not None:
        if not orc_stats.has_null:
            nulls = 0
        elif num_rows is not None:
            nulls = num_rows - non_null
            if nulls < 0:
                raise InvalidInput(
                    f"ORC statistics count {non_null} values in {num_rows} rows: the file is inconsistent"
                )
    elif not orc_stats.has_null and num_rows is not None:
        non_null, nulls = num_rows, 0
    facts: dict[str, Any] = {}
    trusted_range = w.writer_version >= _HIVE_8732
    if kind is StatsKind.BOOLEAN:
        if isinstance(orc_stats, BooleanStatistics) and orc_stats.true_count is not None:
            facts["num_trues"] = int(orc_stats.true_count)
    elif kind in (StatsKind.STRING, StatsKind.BINARY):
        total = getattr(orc_stats, "total_length", None)
        if total is not None and int(total) >= 0:
            facts["total_length"] = int(total)
    elif trusted_range and non_null:
        low, high = _range(orc_stats, orc_type, kind, w)
        if low is not None and high is not None and not low > high:
            facts["low"], facts["high"] = low, high
    if non_null == 0:
        # nothing but nulls: every fact about values is known to be empty
        facts.pop("low", None)
        facts.pop("high", None)
        if kind in (StatsKind.STRING, StatsKind.BINARY):
            facts["total_length"] = 0
        if kind is StatsKind.BOOLEAN:
            facts["num_trues"] = 0
    if "num_trues" in facts and non_null is not None and not 0 <= facts["num_trues"] <= non_null:
        del facts["num_trues"]
    return OrcColumnFacts(kind=kind, non_null=non_null, num_nulls=nulls, **facts)


def _range(
    stats: ColumnStatistics, orc_type: TypeDescription, kind: StatsKind, w: OrcWriterFacts
) -> tuple[Any, Any]:
    category = orc_type.category
    if isinstance(stats, IntegerStatistics):
        if stats.minimum is None or stats.maximum is None:
            return None, None
        lo, hi = int(stats.minimum), int(stats.maximum)
        if kind is StatsKind.DOUBLE:
            return float(lo), float(hi)
        if kind is StatsKind.DECIMAL:
            return Decimal(lo), Decimal(hi)
        return lo, hi
    if isinstance(stats, DoubleStatistics):
        lo_f, hi_f = stats.minimum, stats.maximum
        if lo_f is None or hi_f is None or math.isnan(lo_f) or math.isnan(hi_f):
            return None, None
        if category == Category.FLOAT:
            # ORC stores the float widened to double already; keep exactly that double
            lo_f, hi_f = float(np.float32(lo_f)), float(np.float32(hi_f))
        return float(lo_f), float(hi_f)
    if isinstance(stats, DecimalStatistics):
        if stats.minimum is None or stats.maximum is None:
            return None, None
        if w.writer_id == _WRITER_ORC_JAVA and w.writer_version < _ORC_517 and (orc_type.precision or 0) <= 18 \
                and (orc_type.precision or 0) > 0:
            return None, None
        return stats.minimum, stats.maximum
    if isinstance(stats, DateStatistics):
        if stats.minimum is None or stats.maximum is None:
            return None, None
        lo_d, hi_d = int(stats.minimum), int(stats.maximum)
        if w.hybrid_calendar:
            converted = hybrid_to_proleptic_days(np.array([lo_d, hi_d], dtype=np.int64))
            lo_d, hi_d = int(converted[0]), int(converted[1])
        return lo_d, hi_d
    if isinstance(stats, TimestampStatistics):
        if stats.minimum is None or stats.maximum is None or w.writer_version < _ORC_135:
            return None, None
        if w.writer_id != _WRITER_ORC_JAVA and not w.utc_stripes and category == Category.TIMESTAMP:
            return None, None
        lo_s, hi_s = int(stats.minimum) // 1000, int(stats.maximum) // 1000
        if w.hybrid_calendar and lo_s < GREGORIAN_CUTOVER_DAYS * 86400:
            return None, None
        return lo_s, hi_s
    return None, None


def column_stats_from_orc(
    orc_stats: ColumnStatistics,
    orc_type: TypeDescription,
    hive_type: str,
    *,
    num_rows: int | None = None,
    writer: OrcWriterFacts | None = None,
) -> ColumnStats:
    """Statistics of a column from its ORC statistics alone (no data read).

    Footers never record the number of distinct values nor the longest string, so ``num_dvs`` is 0 and
    ``max_col_len`` is the least value consistent with the average (its ceiling); low/high are None where the
    footer is silent or untrusted. ``num_rows`` is needed for the null count unless the footer says there are
    no nulls; counts a footer does not give are 0.
    """
    facts = orc_column_facts(orc_stats, orc_type, hive_type, num_rows=num_rows, writer=writer)
    return stats_from_facts(facts)


def stats_from_facts(facts: OrcColumnFacts) -> ColumnStats:
    """A :class:`ColumnStats` of the kind of ``facts`` (unknown counts become 0, see column_stats_from_orc)."""
    nulls = facts.num_nulls or 0
    non_null = facts.non_null or 0
    trues = facts.num_trues or 0
    avg = (facts.total_length or 0) / non_null if non_null else 0.0
    # the kinds table picks what the kind has: counts of trues/falses, lengths, or a range with numDVs 0
    return KIND_SPECS[facts.kind].build(
        num_nulls=nulls,
        num_dvs=0,
        low=facts.low,
        high=facts.high,
        num_trues=trues,
        num_falses=max(non_null - trues, 0),
        max_col_len=math.ceil(avg),
        avg_col_len=avg,
    )


# Hive's JavaDataModel for a 64-bit JVM: what ORC's Reader.getRawDataSize() multiplies value counts by.
_JAVA_OBJECT = 32
_JAVA_ARRAY = 40
_JAVA_PRIMITIVE1 = 4
_JAVA_PRIMITIVE2 = 8
_RAW_SIZE_PER_VALUE = {
    Category.BOOLEAN: _JAVA_PRIMITIVE1,
    Category.BYTE: _JAVA_PRIMITIVE1,
    Category.SHORT: _JAVA_PRIMITIVE1,
    Category.INT: _JAVA_PRIMITIVE1,
    Category.FLOAT: _JAVA_PRIMITIVE1,
    Category.LONG: _JAVA_PRIMITIVE2,
    Category.DOUBLE: _JAVA_PRIMITIVE2,
    # containers count one int per value (ORC >= 1.5; Hive 2's ORC 1.3 counted nothing for them)
    Category.STRUCT: _JAVA_PRIMITIVE1,
    Category.LIST: _JAVA_PRIMITIVE1,
    Category.MAP: _JAVA_PRIMITIVE1,
    Category.UNION: _JAVA_PRIMITIVE1,
    # object + int nanos (padded)
    Category.TIMESTAMP: _JAVA_OBJECT + _JAVA_PRIMITIVE2,
    Category.TIMESTAMP_INSTANT: _JAVA_OBJECT + _JAVA_PRIMITIVE2,
    # object + long + cached calendar fields
    Category.DATE: _JAVA_OBJECT + 3 * _JAVA_PRIMITIVE2,
    # object + two ints + a BigInteger (object + 4 longs)
    Category.DECIMAL: _JAVA_OBJECT + 2 * _JAVA_PRIMITIVE2 + _JAVA_OBJECT + 4 * _JAVA_PRIMITIVE2,
}


def raw_data_size_of(reader: OrcReader) -> int:
    """``rawDataSize`` as Hive stores it for an ORC file: ORC Java's ``Reader.getRawDataSize()``.

    That is an estimate of the deserialised size computed from the file statistics of every column (nested
    ones included): per non-null value a fixed Java object size for numbers, dates, timestamps and decimals;
    binary columns count their total bytes; strings count ``object + 3 ints + char array + average length``
    per value (at least one value); structs (the root too), lists, maps and unions count one int per value.
    Computed with the same integer arithmetic as ORC Java 1.5+ (Hive 3 and 4), so it equals what Hive
    reports; Hive 2 (ORC 1.3) gave containers no size and so reports 4 bytes per row less.
    """
    columns = reader.schema.flatten()
    total = 0
    for cid, stats in enumerate(reader.file_statistics):
        if cid >= len(columns):
            break
        category = columns[cid].category
        values = stats.number_of_values
        if category == Category.BINARY:
            total += _total_length(stats)
        elif category in _TEXT:
            values = values or 1
            average = _total_length(stats) // values
            total += values * (_JAVA_OBJECT + 3 * _JAVA_PRIMITIVE1 + _JAVA_ARRAY + average)
        else:
            total += values * _RAW_SIZE_PER_VALUE.get(category, 0)
    return total


def _total_length(stats: ColumnStatistics) -> int:
    """A string or binary column's total length; 0 when the footer has none (as ORC Java reads a missing sum)."""
    if isinstance(stats, StringStatistics | BinaryStatistics):
        return stats.total_length or 0
    return 0
