"""Thrift structs for the server tests: databases, tables, partitions and column statistics of every kind."""

from __future__ import annotations

from collections.abc import Sequence
from decimal import Decimal

from metastore.api.hive_metastore import ttypes as tt
from metastore.stats.ndv import NdvSketch

ORC_IN = "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat"
ORC_OUT = "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat"
ORC_SERDE = "org.apache.hadoop.hive.ql.io.orc.OrcSerde"

# One column of every statistics kind (and a complex one that has none).
ALL_KINDS_COLUMNS: list[tuple[str, str]] = [
    ("b", "boolean"),
    ("l", "bigint"),
    ("i", "int"),
    ("d", "double"),
    ("f", "float"),
    ("s", "string"),
    ("v", "varchar(20)"),
    ("bin", "binary"),
    ("dec", "decimal(20,4)"),
    ("dt", "date"),
    ("ts", "timestamp"),
    ("arr", "array<int>"),
]

PARTITION_KEYS: list[tuple[str, str]] = [("ds", "string"), ("hr", "int")]


def database(name: str, location: str | None = None, **params: str) -> tt.Database:
    return tt.Database(name=name, description=f"test database {name}", locationUri=location, parameters=params)


def sd(cols: Sequence[tuple[str, str]], location: str | None = None) -> tt.StorageDescriptor:
    return tt.StorageDescriptor(
        cols=[tt.FieldSchema(name=n, type=t, comment=None) for n, t in cols],
        location=location,
        inputFormat=ORC_IN,
        outputFormat=ORC_OUT,
        compressed=False,
        numBuckets=-1,
        serdeInfo=tt.SerDeInfo(name=None, serializationLib=ORC_SERDE, parameters={"serialization.format": "1"}),
        bucketCols=[],
        sortCols=[],
        parameters={},
    )


def table(
    db: str,
    name: str,
    cols: Sequence[tuple[str, str]] = ALL_KINDS_COLUMNS,
    partition_keys: Sequence[tuple[str, str]] = (),
    **params: str,
) -> tt.Table:
    return tt.Table(
        tableName=name,
        dbName=db,
        owner="tester",
        createTime=0,
        lastAccessTime=0,
        retention=0,
        sd=sd(cols),
        partitionKeys=[tt.FieldSchema(name=n, type=t) for n, t in partition_keys],
        parameters=dict(params),
        tableType="MANAGED_TABLE",
    )


def partition(db: str, tbl: str, values: Sequence[str], cols: Sequence[tuple[str, str]] = ALL_KINDS_COLUMNS) -> tt.Partition:
    return tt.Partition(values=list(values), dbName=db, tableName=tbl, sd=sd(cols), parameters={})


# ---------------------------------------------------------------- statistics


def hll_bytes(values: Sequence[int], p: int = 14) -> bytes:
    """A Hive HLL bitVector of integer values."""
    sketch = NdvSketch(p=p)
    sketch.add_longs(list(values))
    return sketch.to_bytes()


def dec(value: str) -> tt.Decimal:
    """Hive's Decimal struct of a decimal literal (minimal big-endian two's complement, as Java's BigInteger)."""
    d = Decimal(value)
    sign, digits, exponent = d.as_tuple()
    unscaled = int("".join(map(str, digits))) * (-1 if sign else 1)
    length = (unscaled + (unscaled < 0)).bit_length() // 8 + 1
    return tt.Decimal(unscaled=unscaled.to_bytes(length, "big", signed=True), scale=-exponent)


def data_boolean(trues: int, falses: int, nulls: int) -> tt.ColumnStatisticsData:
    return tt.ColumnStatisticsData(booleanStats=tt.BooleanColumnStatsData(numTrues=trues, numFalses=falses, numNulls=nulls))


def data_long(low: int | None, high: int | None, nulls: int, ndv: int, bv: bytes | None = None, hist: bytes | None = None) -> tt.ColumnStatisticsData:
    return tt.ColumnStatisticsData(
        longStats=tt.LongColumnStatsData(lowValue=low, highValue=high, numNulls=nulls, numDVs=ndv, bitVectors=bv, histogram=hist)
    )


def data_double(low: float | None, high: float | None, nulls: int, ndv: int, bv: bytes | None = None) -> tt.ColumnStatisticsData:
    return tt.ColumnStatisticsData(
        doubleStats=tt.DoubleColumnStatsData(lowValue=low, highValue=high, numNulls=nulls, numDVs=ndv, bitVectors=bv)
    )


def data_string(max_len: int, avg_len: float, nulls: int, ndv: int, bv: bytes | None = None) -> tt.ColumnStatisticsData:
    return tt.ColumnStatisticsData(
        stringStats=tt.StringColumnStatsData(maxColLen=max_len, avgColLen=avg_len, numNulls=nulls, numDVs=ndv, bitVectors=bv)
    )


def data_binary(max_len: int, avg_len: float, nulls: int) -> tt.ColumnStatisticsData:
    return tt.ColumnStatisticsData(binaryStats=tt.BinaryColumnStatsData(maxColLen=max_len, avgColLen=avg_len, numNulls=nulls))


def data_decimal(low: str | None, high: str | None, nulls: int, ndv: int, bv: bytes | None = None) -> tt.ColumnStatisticsData:
    return tt.ColumnStatisticsData(
        decimalStats=tt.DecimalColumnStatsData(
            lowValue=None if low is None else dec(low), highValue=None if high is None else dec(high),
            numNulls=nulls, numDVs=ndv, bitVectors=bv,
        )
    )


def data_date(low: int | None, high: int | None, nulls: int, ndv: int, bv: bytes | None = None) -> tt.ColumnStatisticsData:
    return tt.ColumnStatisticsData(
        dateStats=tt.DateColumnStatsData(
            lowValue=None if low is None else tt.Date(daysSinceEpoch=low),
            highValue=None if high is None else tt.Date(daysSinceEpoch=high),
            numNulls=nulls, numDVs=ndv, bitVectors=bv,
        )
    )


def data_timestamp(low: int | None, high: int | None, nulls: int, ndv: int, bv: bytes | None = None) -> tt.ColumnStatisticsData:
    return tt.ColumnStatisticsData(
        timestampStats=tt.TimestampColumnStatsData(
            lowValue=None if low is None else tt.Timestamp(secondsSinceEpoch=low),
            highValue=None if high is None else tt.Timestamp(secondsSinceEpoch=high),
            numNulls=nulls, numDVs=ndv, bitVectors=bv,
        )
    )


def obj(col: str, col_type: str, data: tt.ColumnStatisticsData) -> tt.ColumnStatisticsObj:
    return tt.ColumnStatisticsObj(colName=col, colType=col_type, statsData=data)


def all_kinds_objs(seed: int = 0) -> list[tt.ColumnStatisticsObj]:
    """Statistics for every column of ALL_KINDS_COLUMNS that has a kind, with awkward exact values."""
    s = seed
    return [
        obj("b", "boolean", data_boolean(10 + s, 20, 3)),
        obj("l", "bigint", data_long(-(2**63), 2**63 - 1 - s, 0, 1000 + s)),
        obj("i", "int", data_long(-5, 7 + s, 1, 13)),
        obj("d", "double", data_double(-1.5e300, 2.25 + s, 4, 99)),
        obj("f", "float", data_double(0.1, 0.30000000000000004, 0, 2)),
        obj("s", "string", data_string(120 + s, 17.25, 5, 42)),
        obj("v", "varchar(20)", data_string(20, 0.0, 0, 0)),
        obj("bin", "binary", data_binary(1 << 40, 1234.5, 6)),
        obj("dec", "decimal(20,4)", data_decimal("-1234567890123456.8901", f"{s}.0500", 2, 7)),
        obj("dt", "date", data_date(-719162, 2932896 + s, 0, 365)),
        obj("ts", "timestamp", data_timestamp(-62135596800, 253402300799 - s, 9, 86400)),
    ]


def table_stats(db: str, tbl: str, objs: Sequence[tt.ColumnStatisticsObj], last_analyzed: int | None = 1700000000) -> tt.ColumnStatistics:
    desc = tt.ColumnStatisticsDesc(isTblLevel=True, dbName=db, tableName=tbl, lastAnalyzed=last_analyzed)
    return tt.ColumnStatistics(statsDesc=desc, statsObj=list(objs))


def partition_stats(db: str, tbl: str, part_name: str, objs: Sequence[tt.ColumnStatisticsObj], last_analyzed: int | None = 1700000000) -> tt.ColumnStatistics:
    desc = tt.ColumnStatisticsDesc(isTblLevel=False, dbName=db, tableName=tbl, partName=part_name, lastAnalyzed=last_analyzed)
    return tt.ColumnStatistics(statsDesc=desc, statsObj=list(objs))


def create_db_and_table(client, db: str, tbl: str = "t", *, partitioned: bool = False, cols=ALL_KINDS_COLUMNS) -> None:
    client.create_database(database(db))
    client.create_table(table(db, tbl, cols, PARTITION_KEYS if partitioned else ()))


def as_served(objs: Sequence[tt.ColumnStatisticsObj], *, timestamp_as_long: bool = True) -> list[tt.ColumnStatisticsObj]:
    """The statistics objects as the server answers them: by default (stats_timestamp_as_long) timestamp
    statistics come back as longStats of epoch seconds, the only form pre-Hive-4 clients decode."""
    out = []
    for o in objs:
        ts = o.statsData.timestampStats
        if timestamp_as_long and ts is not None:
            data = data_long(
                None if ts.lowValue is None else ts.lowValue.secondsSinceEpoch,
                None if ts.highValue is None else ts.highValue.secondsSinceEpoch,
                ts.numNulls, ts.numDVs, bv=ts.bitVectors, hist=ts.histogram,
            )
            o = obj(o.colName, o.colType, data)
        out.append(o)
    return out
