"""Conversion between Hive's Thrift ColumnStatisticsObj and the statistics model: one function each way."""

from __future__ import annotations

import inspect
import math
import struct
from collections.abc import Sequence
from decimal import Decimal

from metastore.api.hive_metastore import ttypes as tt
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
    StringStats,
    TimestampStats,
)


def decimal_from_thrift(d: tt.Decimal | None) -> Decimal | None:
    """Hive's Decimal struct (big-endian two's complement unscaled bytes + scale) as a Python Decimal."""
    if d is None:
        return None
    if d.unscaled is None or d.scale is None:
        raise InvalidInput("a Decimal value needs both 'unscaled' and 'scale'")
    unscaled = int.from_bytes(d.unscaled, "big", signed=True) if d.unscaled else 0
    # Built from its digits: Decimal.scaleb would round to the context's 28 digits (Hive allows 38). The digits
    # come from Decimal(int), which is exact and, unlike str(int), has no limit on their number.
    return Decimal((int(unscaled < 0), Decimal(abs(unscaled)).as_tuple().digits, -d.scale))


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


def _finite(value: float | None, what: str, column: str) -> float | None:
    if value is not None and math.isnan(value):
        raise InvalidInput(f"column '{column}': {what} is NaN")
    return value


def entry_from_thrift(obj: tt.ColumnStatisticsObj) -> ColumnStatsEntry:
    """A Thrift ColumnStatisticsObj as a ColumnStatsEntry; an empty or unknown union member is InvalidInput."""
    if not obj.colName:
        raise InvalidInput("a ColumnStatisticsObj has no colName")
    column = obj.colName
    data = obj.statsData
    if data is None:
        raise InvalidInput(f"column '{column}': statsData is missing")
    stats: ColumnStats
    if (b := data.booleanStats) is not None:
        stats = BooleanStats(
            num_trues=_req(b.numTrues, "numTrues", column),
            num_falses=_req(b.numFalses, "numFalses", column),
            num_nulls=_req(b.numNulls, "numNulls", column),
            bit_vector=_bytes(b.bitVectors),
        )
    elif (lg := data.longStats) is not None:
        stats = LongStats(
            low=lg.lowValue,
            high=lg.highValue,
            num_nulls=_req(lg.numNulls, "numNulls", column),
            num_dvs=_req(lg.numDVs, "numDVs", column),
            bit_vector=_bytes(lg.bitVectors),
            histogram=_bytes(getattr(lg, "histogram", None)),
        )
    elif (d := data.doubleStats) is not None:
        stats = DoubleStats(
            low=_finite(d.lowValue, "lowValue", column),
            high=_finite(d.highValue, "highValue", column),
            num_nulls=_req(d.numNulls, "numNulls", column),
            num_dvs=_req(d.numDVs, "numDVs", column),
            bit_vector=_bytes(d.bitVectors),
            histogram=_bytes(getattr(d, "histogram", None)),
        )
    elif (s := data.stringStats) is not None:
        stats = StringStats(
            max_col_len=_req(s.maxColLen, "maxColLen", column),
            avg_col_len=_finite(_req(s.avgColLen, "avgColLen", column), "avgColLen", column),  # type: ignore[arg-type]
            num_nulls=_req(s.numNulls, "numNulls", column),
            num_dvs=_req(s.numDVs, "numDVs", column),
            bit_vector=_bytes(s.bitVectors),
        )
    elif (bn := data.binaryStats) is not None:
        stats = BinaryStats(
            max_col_len=_req(bn.maxColLen, "maxColLen", column),
            avg_col_len=_finite(_req(bn.avgColLen, "avgColLen", column), "avgColLen", column),  # type: ignore[arg-type]
            num_nulls=_req(bn.numNulls, "numNulls", column),
            bit_vector=_bytes(bn.bitVectors),
        )
    elif (dc := data.decimalStats) is not None:
        stats = DecimalStats(
            low=decimal_from_thrift(dc.lowValue),
            high=decimal_from_thrift(dc.highValue),
            num_nulls=_req(dc.numNulls, "numNulls", column),
            num_dvs=_req(dc.numDVs, "numDVs", column),
            bit_vector=_bytes(dc.bitVectors),
            histogram=_bytes(getattr(dc, "histogram", None)),
        )
    elif (dt := data.dateStats) is not None:
        stats = DateStats(
            low=None if dt.lowValue is None else dt.lowValue.daysSinceEpoch,
            high=None if dt.highValue is None else dt.highValue.daysSinceEpoch,
            num_nulls=_req(dt.numNulls, "numNulls", column),
            num_dvs=_req(dt.numDVs, "numDVs", column),
            bit_vector=_bytes(dt.bitVectors),
            histogram=_bytes(getattr(dt, "histogram", None)),
        )
    elif (ts := data.timestampStats) is not None:
        stats = TimestampStats(
            low=None if ts.lowValue is None else ts.lowValue.secondsSinceEpoch,
            high=None if ts.highValue is None else ts.highValue.secondsSinceEpoch,
            num_nulls=_req(ts.numNulls, "numNulls", column),
            num_dvs=_req(ts.numDVs, "numDVs", column),
            bit_vector=_bytes(ts.bitVectors),
            histogram=_bytes(getattr(ts, "histogram", None)),
        )
    else:
        raise InvalidInput(f"column '{column}': statsData has no statistics (empty or unknown union member)")
    return ColumnStatsEntry(column=column, column_type=obj.colType or "", stats=stats)


# entry_to_thrift builds the union and its members positionally (half the cost of keyword arguments, and a
# 4000-partition reply builds 12,000 of them); the generated argument order is checked once here.
_POSITIONAL = {
    tt.ColumnStatisticsObj: ("colName", "colType", "statsData"),
    tt.ColumnStatisticsData: (
        "booleanStats", "longStats", "doubleStats", "stringStats", "binaryStats", "decimalStats", "dateStats",
        "timestampStats",
    ),
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
    if tuple(inspect.signature(_cls.__init__).parameters)[1:] != _fields:  # pragma: no cover - regenerated IDL
        raise ImportError(f"generated {_cls.__name__}.__init__ arguments changed; update thrift_codec._POSITIONAL")

_Obj, _Data = tt.ColumnStatisticsObj, tt.ColumnStatisticsData


def _boolean(s: BooleanStats, bv: bytes | None, hist: bytes | None) -> tt.ColumnStatisticsData:
    # Hive never returns bit vectors for booleans.
    return _Data(tt.BooleanColumnStatsData(s.num_trues, s.num_falses, s.num_nulls))


def _long(s: LongStats, bv: bytes | None, hist: bytes | None) -> tt.ColumnStatisticsData:
    return _Data(None, tt.LongColumnStatsData(s.low, s.high, s.num_nulls, s.num_dvs, bv, hist))


def _double(s: DoubleStats, bv: bytes | None, hist: bytes | None) -> tt.ColumnStatisticsData:
    return _Data(None, None, tt.DoubleColumnStatsData(s.low, s.high, s.num_nulls, s.num_dvs, bv, hist))


def _string(s: StringStats, bv: bytes | None, hist: bytes | None) -> tt.ColumnStatisticsData:
    return _Data(None, None, None, tt.StringColumnStatsData(s.max_col_len, s.avg_col_len, s.num_nulls, s.num_dvs, bv))


def _binary(s: BinaryStats, bv: bytes | None, hist: bytes | None) -> tt.ColumnStatisticsData:
    # Hive never returns bit vectors for binary columns either.
    return _Data(None, None, None, None, tt.BinaryColumnStatsData(s.max_col_len, s.avg_col_len, s.num_nulls))


def _decimal(s: DecimalStats, bv: bytes | None, hist: bytes | None) -> tt.ColumnStatisticsData:
    data = tt.DecimalColumnStatsData(
        decimal_to_thrift(s.low), decimal_to_thrift(s.high), s.num_nulls, s.num_dvs, bv, hist
    )
    return _Data(None, None, None, None, None, data)


def _date(s: DateStats, bv: bytes | None, hist: bytes | None) -> tt.ColumnStatisticsData:
    data = tt.DateColumnStatsData(
        None if s.low is None else tt.Date(daysSinceEpoch=s.low),
        None if s.high is None else tt.Date(daysSinceEpoch=s.high),
        s.num_nulls, s.num_dvs, bv, hist,
    )
    return _Data(None, None, None, None, None, None, data)


def _timestamp(s: TimestampStats, bv: bytes | None, hist: bytes | None) -> tt.ColumnStatisticsData:
    data = tt.TimestampColumnStatsData(
        None if s.low is None else tt.Timestamp(secondsSinceEpoch=s.low),
        None if s.high is None else tt.Timestamp(secondsSinceEpoch=s.high),
        s.num_nulls, s.num_dvs, bv, hist,
    )
    return _Data(None, None, None, None, None, None, None, data)


_TO_THRIFT = {
    BooleanStats: _boolean,
    LongStats: _long,
    DoubleStats: _double,
    StringStats: _string,
    BinaryStats: _binary,
    DecimalStats: _decimal,
    DateStats: _date,
    TimestampStats: _timestamp,
}


def _timestamp_as_long(s: TimestampStats, bv: bytes | None, hist: bytes | None) -> tt.ColumnStatisticsData:
    return _Data(None, tt.LongColumnStatsData(s.low, s.high, s.num_nulls, s.num_dvs, bv, hist))


def entry_to_thrift(
    entry: ColumnStatsEntry, *, bit_vectors: bool = False, histograms: bool = False, timestamp_as_long: bool = False
) -> tt.ColumnStatisticsObj:
    """A ColumnStatsEntry as Thrift; sketches are included only when the server is configured to return them.
    timestamp_as_long sends timestamp statistics as longStats (epoch seconds), the pre-Hive-4 form."""
    s = entry.stats
    convert = _timestamp_as_long if timestamp_as_long and type(s) is TimestampStats else _TO_THRIFT.get(type(s))
    if convert is None:
        raise TypeError(f"unknown statistics type {type(s).__name__}")
    bv = s.bit_vector if bit_vectors else None
    hist = getattr(s, "histogram", None) if histograms else None
    return _Obj(entry.column, entry.column_type, convert(s, bv, hist))


try:
    from thrift.protocol.fastbinary import encode_binary as _encode_binary
except ImportError:  # pragma: no cover - thrift built without its C extension
    _encode_binary = None

_OBJ_SPEC = [tt.ColumnStatisticsObj, tt.ColumnStatisticsObj.thrift_spec]


def encode_obj(obj: tt.ColumnStatisticsObj) -> bytes:
    """The TBinaryProtocol bytes of one ColumnStatisticsObj (a complete struct, ending in its STOP byte)."""
    return encode_struct(obj, _OBJ_SPEC)


def encode_struct(obj: object, spec: list | None = None) -> bytes:
    """The TBinaryProtocol bytes of a generated Thrift struct (ending in its STOP byte)."""
    if _encode_binary is not None:
        return _encode_binary(obj, spec or [type(obj), obj.thrift_spec])  # type: ignore[attr-defined]
    from thrift.protocol.TBinaryProtocol import TBinaryProtocol  # noqa: PLC0415 - fallback only
    from thrift.transport.TTransport import TMemoryBuffer  # noqa: PLC0415

    buf = TMemoryBuffer()
    obj.write(TBinaryProtocol(buf))
    return buf.getvalue()


def encode_served(entry: ColumnStatsEntry) -> bytes:
    """The ColumnStatisticsObj a server with the default settings returns for `entry` (no bitVectors or
    histogram, timestamps as longStats), encoded: what TAB_COL_STATS / PART_COL_STATS keep in STATS_THRIFT."""
    return encode_obj(entry_to_thrift(entry, timestamp_as_long=True))


class EncodedResult:
    """A reply value already encoded as Thrift: the bytes of the method's return struct. The processor writes
    them as field 0 (success) of the method's result struct."""

    __slots__ = ("struct_bytes",)

    def __init__(self, struct_bytes: bytes) -> None:
        self.struct_bytes = struct_bytes

    def write(self, oprot: object) -> None:
        """Write the whole result struct ({0: the value}) to the protocol's transport."""
        trans = oprot.trans  # type: ignore[attr-defined]
        trans.write(b"\x0c\x00\x00")  # field 0 (success), a struct
        trans.write(self.struct_bytes)
        trans.write(b"\x00")  # end of the result struct


_T_STRING, _T_STRUCT, _T_MAP, _T_LIST = 11, 12, 13, 15


def partitions_stats_result(parts: Sequence[tuple[str, int, bytes]]) -> bytes:
    """A PartitionsStatsResult ({1: map<string, list<ColumnStatisticsObj>> partStats}) from, per partition,
    its name, the number of statistics and their encoded ColumnStatisticsObj structs, concatenated."""
    out = [_pack_field_map(len(parts))]
    for name, count, objs in parts:
        key = name.encode("utf-8")
        out.append(_pack_i32(len(key)))
        out.append(key)
        out.append(_pack_list(_T_STRUCT, count))
        out.append(objs)
    out.append(b"\x00")
    return b"".join(out)


def table_stats_result(count: int, objs: bytes) -> bytes:
    """A TableStatsResult ({1: list<ColumnStatisticsObj> tableStats}) from the number of statistics and their
    encoded ColumnStatisticsObj structs, concatenated."""
    return _pack_field_list(_T_LIST, 1, _T_STRUCT, count) + objs + b"\x00"


_pack_field_list = struct.Struct(">bhbi").pack
_pack_i32 = struct.Struct(">i").pack
_pack_list = struct.Struct(">bi").pack


def _pack_field_map(size: int) -> bytes:
    return struct.pack(">bhbbi", _T_MAP, 1, _T_STRING, _T_LIST, size)


def _req(value: int | float | None, name: str, column: str) -> int | float:
    if value is None:
        raise InvalidInput(f"column '{column}': required field {name} is missing")
    return value


def _bytes(value: bytes | str | None) -> bytes | None:
    # Hive-2.3-generated clients declare bitVectors as string; the wire bytes are the same.
    if value is None or value == b"" or value == "":
        return None
    if isinstance(value, str):
        return value.encode("utf-8", "surrogateescape")
    return value
