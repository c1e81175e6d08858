"""Spark's table-statistics properties (format version 2) ↔ our column statistics model.

Spark's optimizer reads column statistics only from its own table properties
(``spark.sql.statistics.colStats.<col>.<field>``, restored by HiveExternalCatalog.statsFromProperties), and its
ANALYZE writes them there. This module converts between those properties and :class:`ColumnStatsEntry`; it is
pure: no Thrift, no SQL, no logging (callers decide what a parse error means).

Text formats (what Spark's CatalogColumnStat writes and parses): integers, float, double and boolean as their
plain string; decimal as Java's BigDecimal.toString (Python's ``str(Decimal)`` follows the same rules); date
``yyyy-MM-dd``; timestamp ``yyyy-MM-dd HH:mm:ss.SSSSSS`` in UTC; strings and binaries carry no min/max.
"""

from __future__ import annotations

import datetime as dt
import functools
import hashlib
import json
import math
import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from decimal import ROUND_CEILING, ROUND_FLOOR, Decimal, InvalidOperation, localcontext

from metastore.stats.kll import KllFormatError, kll_from_bytes
from metastore.stats.model import (
    BinaryStats,
    BooleanStats,
    ColumnStats,
    ColumnStatsEntry,
    DateStats,
    DecimalStats,
    DoubleStats,
    LengthStats,
    LongStats,
    StatsKind,
    StringStats,
    TimestampStats,
    kind_for_type,
)
from metastore.stats.spark_histogram import MAX_BINS, encode_histogram, equi_height_bins

__all__ = [
    "COL_STATS_PREFIX",
    "NUM_ROWS",
    "STATISTICS_PREFIX",
    "TOTAL_SIZE",
    "SparkPropertyError",
    "SparkTableStats",
    "BASIS",
    "column_fields",
    "column_properties",
    "entry_from_properties",
    "fields_digest",
    "kll_histogram_text",
    "parse_table_stats",
    "spark_column_names",
    "with_spark_statistics",
]

STATISTICS_PREFIX = "spark.sql.statistics."
TOTAL_SIZE = STATISTICS_PREFIX + "totalSize"
#: The size composed when neither Hive's totalSize nor rawDataSize is known: Spark's own value for a table of
#: unknown size (spark.sql.defaultSizeInBytes, Long.MaxValue). Never 0: Spark would take a table of size 0 as
#: small enough to broadcast to every executor. With CBO on and a row count, Spark estimates the size itself.
UNKNOWN_SIZE = str(2**63 - 1)
NUM_ROWS = STATISTICS_PREFIX + "numRows"
COL_STATS_PREFIX = STATISTICS_PREFIX + "colStats."
#: Ours, in Spark's namespace so Spark hides it and its ANALYZE (which rewrites every spark.sql.statistics.* key)
#: drops it: per column, a token of the statistics a reader was shown (LAST_ANALYZED and a digest). An alter that
#: carries it back says which statistics its properties were read from (Spark ignores unknown keys).
BASIS = STATISTICS_PREFIX + "metastore.basis"
#: The only colStats format Spark 2.4+ reads; a column without ``version`` is ignored by Spark.
FORMAT_VERSION = "2"

_SCHEMA = "spark.sql.sources.schema"
_EPOCH_DAY = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
_TIMESTAMP_TEXT = re.compile(r"^(\d{4})-(\d{2})-(\d{2}) (\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?$")
_TYPE_HEAD = re.compile(r"^\s*([a-zA-Z_]+)\s*(?:\(\s*(\d+))?")
# Spark's DataType.defaultSize: what its ANALYZE records as avgLen and maxLen of fixed-size columns.
_DEFAULT_SIZE = {
    "boolean": 1, "tinyint": 1, "smallint": 2, "int": 4, "integer": 4, "bigint": 8, "float": 4, "double": 8,
    "date": 4, "timestamp": 8,
}
_FIELDS = ("version", "distinctCount", "nullCount", "avgLen", "maxLen", "min", "max", "histogram")


class SparkPropertyError(ValueError):
    """A Spark statistics property that does not parse; the message names the key and the rule broken."""


@dataclass(frozen=True, kw_only=True)
class SparkTableStats:
    """Spark's table-level statistics properties: size, row count, and per column its raw fields (by name)."""

    total_size: int | None
    num_rows: int | None
    columns: Mapping[str, Mapping[str, str]]


def _default_size(hive_type: str) -> int:
    """Spark's defaultSize of the Spark type a Hive type maps to (decimal: 8 up to 18 digits, else 16)."""
    m = _TYPE_HEAD.match(hive_type)
    head = m.group(1).lower() if m else ""
    if head in ("decimal", "numeric"):
        precision = int(m.group(2)) if m and m.group(2) else 10
        return 8 if precision <= 18 else 16
    return _DEFAULT_SIZE.get(head, 8)


def _double_text(value: float) -> str | None:
    # Java's Double.parseDouble reads Python's repr of finite values ("1e+16" included), not "inf"/"nan".
    return repr(float(value)) if math.isfinite(value) else None


def _date_text(days: int | None) -> str | None:
    # Bounds outside years 1..9999 have no yyyy-MM-dd text: left out (Spark then knows no bound), never an error.
    if days is None:
        return None
    try:
        return (_EPOCH_DAY + dt.timedelta(days=days)).isoformat()
    except OverflowError:
        return None


def _timestamp_text(seconds: int | None) -> str | None:
    if seconds is None:
        return None
    try:
        return (_EPOCH + dt.timedelta(seconds=seconds)).strftime("%Y-%m-%d %H:%M:%S.000000")
    except OverflowError:
        return None


_DECIMAL_SCALE = re.compile(r"^\s*(?:decimal|numeric)\s*\(\s*\d+\s*,\s*(\d+)\s*\)", re.IGNORECASE)


def _decimal_scale(hive_type: str) -> int | None:
    """The scale of a decimal type (decimal without arguments is Hive's decimal(10,0)); None if unreadable."""
    m = _DECIMAL_SCALE.match(hive_type)
    if m:
        return int(m.group(1))
    return 0 if hive_type.strip().lower() in ("decimal", "numeric") else None


def _decimal_text(value: Decimal | None, scale: int | None, rounding: str) -> str | None:
    # Spark writes a decimal(p,s) bound with its type's scale ("0.00"); a stored bound may have dropped trailing
    # zeros. Rounded outwards if it had more digits, so the bounds still enclose every value.
    if value is None:
        return None
    if scale is None or not value.is_finite():
        return str(value)
    with localcontext() as ctx:
        ctx.prec = max(ctx.prec, len(value.as_tuple().digits) + scale + 2)
        return str(value.quantize(Decimal(1).scaleb(-scale), rounding=rounding))


def _min_max_text(stats: ColumnStats, scale: int | None = None) -> tuple[str | None, str | None]:
    """Spark's min/max text of a statistics value (``scale``: of a decimal column's type); (None, None) for
    kinds Spark keeps no bounds of."""
    if isinstance(stats, BooleanStats):
        low = "false" if stats.num_falses > 0 else ("true" if stats.num_trues > 0 else None)
        high = "true" if stats.num_trues > 0 else ("false" if stats.num_falses > 0 else None)
        return low, high
    if isinstance(stats, LongStats):
        return (None if stats.low is None else str(stats.low)), (None if stats.high is None else str(stats.high))
    if isinstance(stats, DoubleStats):
        return (
            None if stats.low is None else _double_text(stats.low),
            None if stats.high is None else _double_text(stats.high),
        )
    if isinstance(stats, DecimalStats):
        return _decimal_text(stats.low, scale, ROUND_FLOOR), _decimal_text(stats.high, scale, ROUND_CEILING)
    if isinstance(stats, DateStats):
        return _date_text(stats.low), _date_text(stats.high)
    if isinstance(stats, TimestampStats):
        return _timestamp_text(stats.low), _timestamp_text(stats.high)
    return None, None


def column_properties(spark_name: str, entry: ColumnStatsEntry, histogram: str | None = None) -> dict[str, str]:
    """The ``spark.sql.statistics.colStats.<spark_name>.*`` properties of one column's statistics (with
    ``histogram``, Spark's property text of an equi-height histogram, when given)."""
    fields = _column_fields(entry)
    if histogram is not None:
        fields["histogram"] = histogram
    prefix = f"{COL_STATS_PREFIX}{spark_name}."
    return {prefix + k: v for k, v in fields.items()}


def fields_digest(entry: ColumnStatsEntry) -> str:
    """A short digest of the fields Spark is shown of a column (histogram aside): equal digests, equal fields."""
    text = "\n".join(f"{k}={v}" for k, v in sorted(_column_fields(entry).items()))
    return hashlib.sha1(text.encode()).hexdigest()[:12]


def _spark_double(kind: StatsKind, value: float) -> float:
    # KLL sketches hold dates and timestamps as epoch seconds; Spark's histograms hold days and microseconds.
    if kind is StatsKind.DATE:
        return value / 86_400
    if kind is StatsKind.TIMESTAMP:
        return value * 1_000_000
    return value


def kll_histogram_text(entry: ColumnStatsEntry, max_bins: int = MAX_BINS) -> str | None:
    """Spark's equi-height histogram property of a column whose statistics carry a KLL sketch; None without a
    sketch, for kinds Spark keeps no histogram of, or for a sketch that does not read."""
    stats = entry.stats
    blob = getattr(stats, "histogram", None)
    if not blob or not isinstance(stats, (LongStats, DoubleStats, DecimalStats, DateStats, TimestampStats)):
        return None
    if stats.low is None or stats.high is None:
        return None
    return _kll_histogram_text(bytes(blob), stats.kind, float(stats.low), float(stats.high), stats.num_dvs, max_bins)


@functools.lru_cache(maxsize=2048)
def _kll_histogram_text(blob: bytes, kind: StatsKind, low: float, high: float, ndv: int, max_bins: int) -> str | None:
    # Memoized: every get_table of a table composes this for each sketched column, nearly always from the sketch
    # it composed last time (a few KiB of text per column, ~0.5 ms to build).
    try:
        sketch = kll_from_bytes(blob)
    except KllFormatError:
        return None
    count = int(sketch.n)
    if count <= 0:
        return None
    bins = max(1, min(max_bins, ndv or max_bins, count))
    quantiles = [_spark_double(kind, float(q)) for q in sketch.get_quantiles([i / bins for i in range(bins + 1)])]
    # bounds: dates are days already, timestamps seconds
    scale = 1_000_000 if kind is StatsKind.TIMESTAMP else 1
    histogram = equi_height_bins(
        quantiles, non_null=count, ndv=ndv, low=low * scale, high=high * scale,
        integral=kind in (StatsKind.LONG, StatsKind.DATE),
    )
    return None if histogram is None else encode_histogram(histogram)


def _column_fields(entry: ColumnStatsEntry) -> dict[str, str]:
    stats = entry.stats
    fields: dict[str, str] = {"version": FORMAT_VERSION, "nullCount": str(stats.num_nulls)}
    if isinstance(stats, BooleanStats):
        fields["distinctCount"] = str(int(stats.num_trues > 0) + int(stats.num_falses > 0))
    elif isinstance(stats, BinaryStats):
        pass  # Hive keeps no NDV for binaries; Spark's reader takes a missing distinctCount as unknown
    elif isinstance(stats, (LongStats, DoubleStats, DecimalStats, DateStats, TimestampStats, StringStats)):
        fields["distinctCount"] = str(stats.num_dvs)
    if isinstance(stats, LengthStats):
        # Spark records avgLen as a whole number (its ANALYZE takes the ceiling of the average length).
        fields["avgLen"] = str(math.ceil(stats.avg_col_len))
        fields["maxLen"] = str(stats.max_col_len)
    else:
        size = str(_default_size(entry.column_type))
        fields["avgLen"] = size
        fields["maxLen"] = size
    low, high = _min_max_text(stats, _decimal_scale(entry.column_type) if isinstance(stats, DecimalStats) else None)
    if low is not None:
        fields["min"] = low
    if high is not None:
        fields["max"] = high
    return fields


def spark_column_names(parameters: Mapping[str, str]) -> dict[str, str]:
    """Lower-cased column name → the name as Spark's schema spells it (``spark.sql.sources.schema``, whole or in
    ``.numParts``/``.part.N`` pieces); empty when the table has no Spark schema or it does not parse (Spark then
    uses Hive's lower-case names)."""
    text = parameters.get(_SCHEMA)
    if text is None:
        parts = parameters.get(_SCHEMA + ".numParts")
        if parts is None or not parts.isdigit():
            return {}
        pieces = [parameters.get(f"{_SCHEMA}.part.{i}") for i in range(int(parts))]
        if any(p is None for p in pieces):
            return {}
        text = "".join(p for p in pieces if p is not None)
    try:
        schema = json.loads(text)
        names = [f["name"] for f in schema["fields"]]
    except (ValueError, KeyError, TypeError):
        return {}
    return {n.lower(): n for n in names if isinstance(n, str)}


def _positive(parameters: Mapping[str, str], key: str) -> int | None:
    value = parameters.get(key)
    try:
        number = int(value) if value is not None else None
    except ValueError:
        return None
    return number if number is not None and number > 0 else None


def _key_column(key: str) -> str:
    return key[len(COL_STATS_PREFIX):].rpartition(".")[0]


def with_spark_statistics(
    parameters: Mapping[str, str], entries: Sequence[ColumnStatsEntry], columns: Collection[str] | None = None,
    spark_names: Mapping[str, str] | None = None, histograms: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The table's parameters as Spark should read them: the colStats of ``entries`` (the table's statistics,
    the one source of truth) replace any stored for those columns; stored colStats of other columns stay only if
    the column is among ``columns`` (all when None). When any statistics key is present, totalSize from Hive's
    totalSize, else rawDataSize, else UNKNOWN_SIZE (Spark's reader requires the key), numRows from numRows > 0.
    ``histograms``: lower-cased column name → Spark's histogram text to show with that column's statistics."""
    analysed = {e.column.lower() for e in entries}
    present = None if columns is None else {c.lower() for c in columns}
    result = {
        k: v for k, v in parameters.items()
        if not k.startswith(COL_STATS_PREFIX)
        or (_key_column(k).lower() not in analysed and (present is None or _key_column(k).lower() in present))
    }
    names = spark_names if spark_names is not None else spark_column_names(parameters)
    for entry in entries:
        histogram = None if histograms is None else histograms.get(entry.column.lower())
        result.update(column_properties(names.get(entry.column.lower(), entry.column.lower()), entry, histogram))
    if not any(k.startswith(STATISTICS_PREFIX) for k in result):
        return result
    size = _positive(parameters, "totalSize") or _positive(parameters, "rawDataSize")
    if size is not None:
        result[TOTAL_SIZE] = str(size)
    elif TOTAL_SIZE not in result:
        result[TOTAL_SIZE] = UNKNOWN_SIZE
    rows = _positive(parameters, "numRows")
    if rows is not None:
        result[NUM_ROWS] = str(rows)
    return result


def column_fields(parameters: Mapping[str, str]) -> dict[str, dict[str, str]]:
    """Spark's colStats properties grouped by column (as spelled in the keys): raw field text, unchecked."""
    columns: dict[str, dict[str, str]] = {}
    for key, value in parameters.items():
        if not key.startswith(COL_STATS_PREFIX):
            continue
        column, _, field = key[len(COL_STATS_PREFIX):].rpartition(".")
        if column and field in _FIELDS:
            columns.setdefault(column, {})[field] = value
    return columns


def parse_table_stats(parameters: Mapping[str, str]) -> SparkTableStats:
    """Spark's statistics properties of a table, grouped; raw text, unchecked (see entry_from_properties).
    A column key names its column by everything between the prefix and the last dot."""
    columns = column_fields(parameters)

    def number(key: str) -> int | None:
        value = parameters.get(key)
        if value is None:
            return None
        try:
            return int(value)
        except ValueError:
            raise SparkPropertyError(f"{key} is not an integer: {value!r}") from None

    return SparkTableStats(total_size=number(TOTAL_SIZE), num_rows=number(NUM_ROWS), columns=columns)


def _count(fields: Mapping[str, str], field: str, column: str, *, required: bool = True) -> int | None:
    key = f"{COL_STATS_PREFIX}{column}.{field}"
    value = fields.get(field)
    if value is None:
        if required:
            raise SparkPropertyError(f"{key} is missing")
        return None
    try:
        number = int(value)
    except ValueError:
        raise SparkPropertyError(f"{key} is not an integer: {value!r}") from None
    if number < 0:
        raise SparkPropertyError(f"{key} is negative: {value!r}")
    return number


def _days(text: str) -> int:
    return (dt.date.fromisoformat(text) - _EPOCH_DAY).days


def _timestamp_seconds(text: str, *, ceiling: bool) -> int:
    """Seconds since the epoch of Spark's UTC text; a fraction rounds outwards (down for min, up for max), so
    Hive's whole-second bounds still enclose every value."""
    m = _TIMESTAMP_TEXT.match(text)
    if not m:
        raise ValueError("not yyyy-MM-dd HH:mm:ss[.SSSSSS]")
    year, month, day, hour, minute, second = (int(g) for g in m.groups()[:6])
    whole = dt.datetime(year, month, day, hour, minute, second, tzinfo=dt.UTC)
    seconds = (whole - _EPOCH) // dt.timedelta(seconds=1)
    fraction = m.group(7)
    return seconds + 1 if ceiling and fraction and int(fraction) > 0 else seconds


def entry_from_properties(
    column: str, hive_type: str, fields: Mapping[str, str], *, num_rows: int | None,
    stored: ColumnStatsEntry | None = None,
) -> ColumnStatsEntry | None:
    """Our statistics of one column from Spark's fields of it (``parse_table_stats(...).columns[name]``), of the
    kind the column's Hive type carries; None for types Hive keeps no statistics of. Our sketches (bitVector,
    KLL) of a ``stored`` entry of the same kind are kept: Spark has none. Raises SparkPropertyError naming the
    property that does not parse."""
    kind = kind_for_type(hive_type)
    if kind is None:
        return None
    version = fields.get("version")
    if version != FORMAT_VERSION:
        raise SparkPropertyError(f"{COL_STATS_PREFIX}{column}.version is {version!r}, expected '{FORMAT_VERSION}'")
    nulls = _count(fields, "nullCount", column)
    assert nulls is not None
    kept = stored.stats if stored is not None and stored.stats.kind is kind else None
    bit_vector = kept.bit_vector if kept is not None else None
    histogram = getattr(kept, "histogram", None)
    low_text, high_text = fields.get("min"), fields.get("max")
    where = f"{COL_STATS_PREFIX}{column}.min/max"
    stats: ColumnStats
    try:
        if kind is StatsKind.BOOLEAN:
            stats = _boolean(column, fields, nulls, num_rows, low_text, high_text, kept, bit_vector)
        elif kind in (StatsKind.STRING, StatsKind.BINARY):
            max_len = _count(fields, "maxLen", column)
            avg_len = _count(fields, "avgLen", column)
            assert max_len is not None and avg_len is not None
            if kind is StatsKind.STRING:
                ndv = _count(fields, "distinctCount", column)
                assert ndv is not None
                stats = StringStats(
                    num_nulls=nulls, num_dvs=ndv, max_col_len=max_len, avg_col_len=float(avg_len),
                    bit_vector=bit_vector,
                )
            else:
                stats = BinaryStats(num_nulls=nulls, max_col_len=max_len, avg_col_len=float(avg_len))
        else:
            ndv = _count(fields, "distinctCount", column)
            assert ndv is not None
            stats = _range_stats(kind, low_text, high_text, nulls, ndv, bit_vector, histogram)
    except (ValueError, InvalidOperation) as e:
        if isinstance(e, SparkPropertyError):
            raise
        raise SparkPropertyError(
            f"{where} of a {hive_type} column do not parse: {low_text!r}, {high_text!r} ({e})"
        ) from None
    return ColumnStatsEntry(column=column.lower(), column_type=hive_type, stats=stats)


def _range_stats(
    kind: StatsKind, low: str | None, high: str | None, nulls: int, ndv: int, bit_vector: bytes | None,
    histogram: bytes | None,
) -> ColumnStats:
    """A range kind's statistics from Spark's min/max text; ValueError when the text is not of the kind."""
    if kind is StatsKind.LONG:
        return LongStats(
            num_nulls=nulls, num_dvs=ndv, bit_vector=bit_vector, histogram=histogram,
            low=None if low is None else int(low), high=None if high is None else int(high),
        )
    if kind is StatsKind.DOUBLE:
        return DoubleStats(
            num_nulls=nulls, num_dvs=ndv, bit_vector=bit_vector, histogram=histogram,
            low=None if low is None else float(low), high=None if high is None else float(high),
        )
    if kind is StatsKind.DECIMAL:
        low_d = None if low is None else Decimal(low)
        high_d = None if high is None else Decimal(high)
        if any(d is not None and not d.is_finite() for d in (low_d, high_d)):
            raise ValueError("not a finite decimal")
        return DecimalStats(num_nulls=nulls, num_dvs=ndv, bit_vector=bit_vector, histogram=histogram,
                            low=low_d, high=high_d)
    if kind is StatsKind.DATE:
        return DateStats(
            num_nulls=nulls, num_dvs=ndv, bit_vector=bit_vector, histogram=histogram,
            low=None if low is None else _days(low), high=None if high is None else _days(high),
        )
    return TimestampStats(
        num_nulls=nulls, num_dvs=ndv, bit_vector=bit_vector, histogram=histogram,
        low=None if low is None else _timestamp_seconds(low, ceiling=False),
        high=None if high is None else _timestamp_seconds(high, ceiling=True),
    )


def _boolean(
    column: str, fields: Mapping[str, str], nulls: int, num_rows: int | None, low: str | None, high: str | None,
    kept: ColumnStats | None, bit_vector: bytes | None,
) -> BooleanStats:
    """Hive's true/false counts from Spark's min/max: exact when only one value occurs; when both occur Spark
    does not say how many of each, so stored counts that fit are kept, else the column is refused."""
    for text in (low, high):
        if text is not None and text not in ("true", "false"):
            raise SparkPropertyError(f"{COL_STATS_PREFIX}{column}.min/max of a boolean column: {text!r}")
    if num_rows is None:
        raise SparkPropertyError(f"{NUM_ROWS} is needed for the true/false counts of boolean column {column!r}")
    non_null = max(num_rows - nulls, 0)
    if low is None and high is None:
        return BooleanStats(num_nulls=nulls, num_trues=0, num_falses=0, bit_vector=bit_vector)
    if low == high:
        trues = non_null if low == "true" else 0
        return BooleanStats(num_nulls=nulls, num_trues=trues, num_falses=non_null - trues, bit_vector=bit_vector)
    if isinstance(kept, BooleanStats) and kept.num_trues > 0 and kept.num_falses > 0 \
            and kept.num_trues + kept.num_falses == non_null:
        return BooleanStats(num_nulls=nulls, num_trues=kept.num_trues, num_falses=kept.num_falses,
                            bit_vector=bit_vector)
    raise SparkPropertyError(
        f"{COL_STATS_PREFIX}{column}: Spark's min/max of boolean column {column!r} do not give the true/false counts"
    )
