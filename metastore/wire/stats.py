"""Conversion between Hive's Thrift ColumnStatisticsObj and the statistics model, per statistics kind.

`KIND_CODECS` holds, for each kind of metastore.stats.kinds.KIND_SPECS (which names the ColumnStatisticsData
union member carrying it), a function each way; `entry_from_thrift` and `entry_to_thrift` only pick the codec.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from metastore.api.hive_metastore import ttypes as tt
from metastore.errors import InvalidInput
from metastore.stats.decimals import decimal_from_unscaled
from metastore.stats.kinds import KIND_SPECS, KindSpec
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
)
from metastore.wire.encoded import encode_obj

# ---------------------------------------------------------------------------------------------- decimals


def decimal_from_thrift(d: tt.Decimal | None, *, where: str = "a Decimal", name: str = "value") -> Decimal | None:
    """Hive's Decimal struct (big-endian two's complement unscaled bytes + scale) as a Python Decimal.

    An empty unscaled value or a negative scale is InvalidInput naming ``where`` and ``name`` (the stats
    side's :func:`metastore.stats.decimals.decimal_from_unscaled` holds the rule)."""
    if d is None:
        return None
    return decimal_from_unscaled(d.unscaled, d.scale, where=where, name=name)


def decimal_to_thrift(value: Decimal | None) -> tt.Decimal | None:
    """A Python Decimal as Hive's Decimal struct, with the minimal two's-complement encoding Java's BigInteger uses."""
    if value is None:
        return None
    sign, digits, exponent = value.as_tuple()
    if not isinstance(exponent, int):
        raise InvalidInput(f"decimal value {value} is not finite")
    unscaled = int(Decimal((0, digits or (0,), 0)))  # exact, and no limit on digits as int(str) has
    if sign:
        unscaled = -unscaled
    scale = -exponent
    if scale < 0:  # Hive's scale is never negative: fold positive exponents into the unscaled value
        unscaled *= 10**-scale
        scale = 0
    length = (unscaled + (unscaled < 0)).bit_length() // 8 + 1
    return tt.Decimal(unscaled=unscaled.to_bytes(length, "big", signed=True), scale=scale)


# ---------------------------------------------------------------------------------------------- field checks


def _req(value: int | None, name: str, column: str) -> int:
    if value is None:
        raise InvalidInput(f"column '{column}': required field {name} is missing")
    return value


def _req_finite(value: float | None, name: str, column: str) -> float:
    if value is None:
        raise InvalidInput(f"column '{column}': required field {name} is missing")
    if math.isnan(value):
        raise InvalidInput(f"column '{column}': {name} is NaN")
    return value


def _finite(value: float | None, what: str, column: str) -> float | None:
    if value is not None and math.isnan(value):
        raise InvalidInput(f"column '{column}': {what} is NaN")
    return value


def _bytes(value: bytes | str | None) -> bytes | None:
    # Hive-2.3-generated clients declare bitVectors as string; the wire bytes are the same.
    if value is None or value == b"" or value == "":
        return None
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    return value


# ---------------------------------------------------------------------------------------------- from Thrift
# Each takes the union member (the generated *ColumnStatsData struct) and the column name for messages. One
# function per kind rather than one generic reader over the kinds table's flags: that costs a quarter more per
# entry, and set_aggr_stats_for decodes every entry it is sent.


def _boolean_from(b: tt.BooleanColumnStatsData, column: str) -> ColumnStats:
    return BooleanStats(
        num_trues=_req(b.numTrues, "numTrues", column),
        num_falses=_req(b.numFalses, "numFalses", column),
        num_nulls=_req(b.numNulls, "numNulls", column),
        bit_vector=_bytes(b.bitVectors),
    )


def _long_from(lg: tt.LongColumnStatsData, column: str) -> ColumnStats:
    return LongStats(
        low=lg.lowValue,
        high=lg.highValue,
        num_nulls=_req(lg.numNulls, "numNulls", column),
        num_dvs=_req(lg.numDVs, "numDVs", column),
        bit_vector=_bytes(lg.bitVectors),
        histogram=_bytes(getattr(lg, "histogram", None)),
    )


def _double_from(d: tt.DoubleColumnStatsData, column: str) -> ColumnStats:
    return DoubleStats(
        low=_finite(d.lowValue, "lowValue", column),
        high=_finite(d.highValue, "highValue", column),
        num_nulls=_req(d.numNulls, "numNulls", column),
        num_dvs=_req(d.numDVs, "numDVs", column),
        bit_vector=_bytes(d.bitVectors),
        histogram=_bytes(getattr(d, "histogram", None)),
    )


def _string_from(s: tt.StringColumnStatsData, column: str) -> ColumnStats:
    return StringStats(
        max_col_len=_req(s.maxColLen, "maxColLen", column),
        avg_col_len=_req_finite(s.avgColLen, "avgColLen", column),
        num_nulls=_req(s.numNulls, "numNulls", column),
        num_dvs=_req(s.numDVs, "numDVs", column),
        bit_vector=_bytes(s.bitVectors),
    )


def _binary_from(bn: tt.BinaryColumnStatsData, column: str) -> ColumnStats:
    return BinaryStats(
        max_col_len=_req(bn.maxColLen, "maxColLen", column),
        avg_col_len=_req_finite(bn.avgColLen, "avgColLen", column),
        num_nulls=_req(bn.numNulls, "numNulls", column),
        bit_vector=_bytes(bn.bitVectors),
    )


def _decimal_from(dc: tt.DecimalColumnStatsData, column: str) -> ColumnStats:
    return DecimalStats(
        low=decimal_from_thrift(dc.lowValue, where=f"column '{column}'", name="lowValue"),
        high=decimal_from_thrift(dc.highValue, where=f"column '{column}'", name="highValue"),
        num_nulls=_req(dc.numNulls, "numNulls", column),
        num_dvs=_req(dc.numDVs, "numDVs", column),
        bit_vector=_bytes(dc.bitVectors),
        histogram=_bytes(getattr(dc, "histogram", None)),
    )


def _date_from(dt: tt.DateColumnStatsData, column: str) -> ColumnStats:
    return DateStats(
        low=None if dt.lowValue is None else dt.lowValue.daysSinceEpoch,
        high=None if dt.highValue is None else dt.highValue.daysSinceEpoch,
        num_nulls=_req(dt.numNulls, "numNulls", column),
        num_dvs=_req(dt.numDVs, "numDVs", column),
        bit_vector=_bytes(dt.bitVectors),
        histogram=_bytes(getattr(dt, "histogram", None)),
    )


def _timestamp_from(ts: tt.TimestampColumnStatsData, column: str) -> ColumnStats:
    return TimestampStats(
        low=None if ts.lowValue is None else ts.lowValue.secondsSinceEpoch,
        high=None if ts.highValue is None else ts.highValue.secondsSinceEpoch,
        num_nulls=_req(ts.numNulls, "numNulls", column),
        num_dvs=_req(ts.numDVs, "numDVs", column),
        bit_vector=_bytes(ts.bitVectors),
        histogram=_bytes(getattr(ts, "histogram", None)),
    )


# ---------------------------------------------------------------------------------------------- to Thrift
# The union and its members are built positionally (half the cost of keyword arguments, and a 4000-partition
# reply builds 12,000 of them); the generated argument order is checked once below. Each takes the statistics
# and the sketches to send (None when the caller leaves them out).

_Obj, _Data = tt.ColumnStatisticsObj, tt.ColumnStatisticsData


def _boolean_to(s: BooleanStats, bv: bytes | None, hist: bytes | None) -> tt.ColumnStatisticsData:
    # Hive never returns bit vectors for booleans.
    return _Data(tt.BooleanColumnStatsData(s.num_trues, s.num_falses, s.num_nulls))


def _long_to(s: LongStats, bv: bytes | None, hist: bytes | None) -> tt.ColumnStatisticsData:
    return _Data(None, tt.LongColumnStatsData(s.low, s.high, s.num_nulls, s.num_dvs, bv, hist))


def _double_to(s: DoubleStats, bv: bytes | None, hist: bytes | None) -> tt.ColumnStatisticsData:
    return _Data(None, None, tt.DoubleColumnStatsData(s.low, s.high, s.num_nulls, s.num_dvs, bv, hist))


def _string_to(s: StringStats, bv: bytes | None, hist: bytes | None) -> tt.ColumnStatisticsData:
    return _Data(None, None, None, tt.StringColumnStatsData(s.max_col_len, s.avg_col_len, s.num_nulls, s.num_dvs, bv))


def _binary_to(s: BinaryStats, bv: bytes | None, hist: bytes | None) -> tt.ColumnStatisticsData:
    # Hive never returns bit vectors for binary columns either.
    return _Data(None, None, None, None, tt.BinaryColumnStatsData(s.max_col_len, s.avg_col_len, s.num_nulls))


def _decimal_to(s: DecimalStats, bv: bytes | None, hist: bytes | None) -> tt.ColumnStatisticsData:
    data = tt.DecimalColumnStatsData(
        decimal_to_thrift(s.low), decimal_to_thrift(s.high), s.num_nulls, s.num_dvs, bv, hist
    )
    return _Data(None, None, None, None, None, data)


def _date_to(s: DateStats, bv: bytes | None, hist: bytes | None) -> tt.ColumnStatisticsData:
    data = tt.DateColumnStatsData(
        None if s.low is None else tt.Date(daysSinceEpoch=s.low),
        None if s.high is None else tt.Date(daysSinceEpoch=s.high),
        s.num_nulls, s.num_dvs, bv, hist,
    )
    return _Data(None, None, None, None, None, None, data)


def _timestamp_to(s: TimestampStats, bv: bytes | None, hist: bytes | None) -> tt.ColumnStatisticsData:
    data = tt.TimestampColumnStatsData(
        None if s.low is None else tt.Timestamp(secondsSinceEpoch=s.low),
        None if s.high is None else tt.Timestamp(secondsSinceEpoch=s.high),
        s.num_nulls, s.num_dvs, bv, hist,
    )
    return _Data(None, None, None, None, None, None, None, data)


def _timestamp_as_long(s: TimestampStats, bv: bytes | None, hist: bytes | None) -> tt.ColumnStatisticsData:
    # Before Hive 4 timestamps had no union member: servers sent them as longStats of epoch seconds.
    return _Data(None, tt.LongColumnStatsData(s.low, s.high, s.num_nulls, s.num_dvs, bv, hist))


# ---------------------------------------------------------------------------------------------- the table

FromThrift = Callable[[Any, str], ColumnStats]  # (the union member, the column name)
ToThrift = Callable[..., tt.ColumnStatisticsData]  # (stats of its kind, bit vector, histogram)


@dataclass(frozen=True)
class KindCodec:
    """How one statistics kind travels as Thrift: its entry in metastore.stats.kinds and a function each way."""

    spec: KindSpec  # the kind, its stats class and the ColumnStatisticsData union member carrying it
    from_thrift: FromThrift
    to_thrift: ToThrift


def _codec(kind: StatsKind, from_thrift: FromThrift, to_thrift: ToThrift) -> KindCodec:
    spec = KIND_SPECS[kind]
    # StatsKind's value is the union field id: the kinds table and the generated union must agree on its name.
    # (thrift_spec is assigned after each generated class, where mypy does not see it.)
    member = tt.ColumnStatisticsData.thrift_spec[kind.value][2]  # type: ignore[attr-defined]
    if member != spec.union_member:  # pragma: no cover
        raise ImportError(f"union member of {kind.name} differs between the IDL and metastore.stats.kinds")
    return KindCodec(spec, from_thrift, to_thrift)


#: The Thrift codec of each statistics kind, keyed like metastore.stats.kinds.KIND_SPECS, in union field order.
KIND_CODECS: dict[StatsKind, KindCodec] = {
    StatsKind.BOOLEAN: _codec(StatsKind.BOOLEAN, _boolean_from, _boolean_to),
    StatsKind.LONG: _codec(StatsKind.LONG, _long_from, _long_to),
    StatsKind.DOUBLE: _codec(StatsKind.DOUBLE, _double_from, _double_to),
    StatsKind.STRING: _codec(StatsKind.STRING, _string_from, _string_to),
    StatsKind.BINARY: _codec(StatsKind.BINARY, _binary_from, _binary_to),
    StatsKind.DECIMAL: _codec(StatsKind.DECIMAL, _decimal_from, _decimal_to),
    StatsKind.DATE: _codec(StatsKind.DATE, _date_from, _date_to),
    StatsKind.TIMESTAMP: _codec(StatsKind.TIMESTAMP, _timestamp_from, _timestamp_to),
}
if set(KIND_CODECS) != set(KIND_SPECS):  # pragma: no cover - a kind added to the model without a Thrift codec
    raise ImportError(f"no Thrift codec for {sorted(k.name for k in set(KIND_SPECS) - set(KIND_CODECS))}")

# Lookups on the hot paths: by the statistics class (a dict hit on type(), cheaper than hashing the enum), and
# the union members to probe in field order when decoding (a union with several members set reads the first).
_TO_THRIFT: dict[type, ToThrift] = {c.spec.stats_class: c.to_thrift for c in KIND_CODECS.values()}
_FROM_THRIFT: tuple[tuple[str, FromThrift], ...] = tuple(
    (c.spec.union_member, c.from_thrift) for c in sorted(KIND_CODECS.values(), key=lambda c: c.spec.kind.value)
)

_POSITIONAL = {
    tt.ColumnStatisticsObj: ("colName", "colType", "statsData"),
    tt.ColumnStatisticsData: tuple(member for member, _ in _FROM_THRIFT),
    tt.BooleanColumnStatsData: ("numTrues", "numFalses", "numNulls", "bitVectors"),
    tt.LongColumnStatsData: ("lowValue", "highValue", "numNulls", "numDVs", "bitVectors", "histogram"),
    tt.DoubleColumnStatsData: ("lowValue", "highValue", "numNulls", "numDVs", "bitVectors", "histogram"),
    tt.StringColumnStatsData: ("maxColLen", "avgColLen", "numNulls", "numDVs", "bitVectors"),
    tt.BinaryColumnStatsData: ("maxColLen", "avgColLen", "numNulls", "bitVectors"),
    tt.DecimalColumnStatsData: ("lowValue", "highValue", "numNulls", "numDVs", "bitVectors", "histogram"),
    tt.DateColumnStatsData: ("lowValue", "highValue", "numNulls", "numDVs", "bitVectors", "histogram"),
    tt.TimestampColumnStatsData: ("lowValue", "highValue", "numNulls", "numDVs", "bitVectors", "histogram"),
}
for _cls, _fields in _POSITIONAL.items():
    if tuple(inspect.signature(_cls).parameters) != _fields:  # pragma: no cover - regenerated IDL
        raise ImportError(f"generated {_cls.__name__}.__init__ arguments changed; update wire.stats._POSITIONAL")


# ---------------------------------------------------------------------------------------------- entries


def entry_from_thrift(obj: tt.ColumnStatisticsObj) -> ColumnStatsEntry:
    """A Thrift ColumnStatisticsObj as a ColumnStatsEntry; an empty or unknown union member is InvalidInput."""
    if not obj.colName:
        raise InvalidInput("a ColumnStatisticsObj has no colName")
    column = obj.colName
    data = obj.statsData
    if data is None:
        raise InvalidInput(f"column '{column}': statsData is missing")
    for member, convert in _FROM_THRIFT:
        value = getattr(data, member)
        if value is not None:
            return ColumnStatsEntry(column=column, column_type=obj.colType or "", stats=convert(value, column))
    raise InvalidInput(f"column '{column}': statsData has no statistics (empty or unknown union member)")


def entry_to_thrift(
    entry: ColumnStatsEntry, *, bit_vectors: bool = False, histograms: bool = False, timestamp_as_long: bool = False
) -> tt.ColumnStatisticsObj:
    """A ColumnStatsEntry as Thrift; sketches are included only when the server is configured to return them.
    timestamp_as_long sends timestamp statistics as longStats (epoch seconds), the pre-Hive-4 form."""
    s = entry.stats
    convert: ToThrift | None = _timestamp_as_long if timestamp_as_long and type(s) is TimestampStats else _TO_THRIFT.get(type(s))
    if convert is None:
        raise TypeError(f"unknown statistics type {type(s).__name__}")
    bv = s.bit_vector if bit_vectors else None
    hist = getattr(s, "histogram", None) if histograms else None
    return _Obj(entry.column, entry.column_type, convert(s, bv, hist))


def encode_served(entry: ColumnStatsEntry) -> bytes:
    """The ColumnStatisticsObj a server with the default settings returns for `entry` (no bitVectors or
    histogram, timestamps as longStats), encoded: what TAB_COL_STATS / PART_COL_STATS keep in STATS_THRIFT."""
    return encode_obj(entry_to_thrift(entry, timestamp_as_long=True))
