"""Spark 4's optimizer and Hive column statistics through our server (issue 15 §1-§2), Spark in local mode.

(a) Statistics written with our generated Thrift client (update_table_column_statistics, as pymetastore does)
    show in Spark's DESCRIBE EXTENDED t col with spark.sql.cbo.enabled=true, and EXPLAIN COST has the row count.
(b) Spark's own ANALYZE ... FOR ALL COLUMNS: get_table_statistics_req answers the numbers Spark shows.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import subprocess
import sys
import uuid
from decimal import Decimal
from pathlib import Path

import pytest
from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport

from metastore.api.hive_metastore import ThriftHiveMetastore
from metastore.api.hive_metastore import ttypes as tt

SCRIPT = Path(__file__).resolve().parent / "spark_statistics_script.py"
pytestmark = [pytest.mark.spark, pytest.mark.slow]

COLUMNS = [("l", "bigint"), ("d", "double"), ("m", "decimal(10,2)"), ("dt", "date"), ("ts", "timestamp"),
           ("s", "string"), ("b", "boolean")]
EPOCH_DAY = dt.date(1970, 1, 1)
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


def _client(address: tuple[str, int]) -> ThriftHiveMetastore.Client:
    sock = TSocket.TSocket(*address)
    sock.setTimeout(30_000)
    trans = TTransport.TBufferedTransport(sock)
    trans.open()
    return ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(trans))


def _decimal(text: str) -> tt.Decimal:
    d = Decimal(text)
    sign, digits, exponent = d.as_tuple()
    unscaled = int("".join(map(str, digits))) * (-1 if sign else 1)
    length = (unscaled + (unscaled < 0)).bit_length() // 8 + 1
    assert isinstance(exponent, int)
    return tt.Decimal(unscaled=unscaled.to_bytes(length, "big", signed=True), scale=-exponent)


def _from_decimal(d: tt.Decimal) -> Decimal:
    return Decimal(int.from_bytes(d.unscaled, "big", signed=True)).scaleb(-d.scale)


def _create_table(client: ThriftHiveMetastore.Client, db: str, warehouse: Path) -> None:
    client.create_database(tt.Database(name=db, locationUri=str(warehouse / f"{db}.db"), parameters={}))
    sd = tt.StorageDescriptor(
        cols=[tt.FieldSchema(name=n, type=t) for n, t in COLUMNS], location=None,
        inputFormat="org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat", compressed=False, numBuckets=-1,
        serdeInfo=tt.SerDeInfo(serializationLib="org.apache.hadoop.hive.ql.io.orc.OrcSerde", parameters={}),
        bucketCols=[], sortCols=[], parameters={},
    )
    client.create_table(tt.Table(
        tableName="t", dbName=db, owner="tester", createTime=0, lastAccessTime=0, retention=0, sd=sd,
        partitionKeys=[], parameters={"numRows": "100", "totalSize": "5000"}, tableType="MANAGED_TABLE",
    ))
    data = tt.ColumnStatisticsData
    objs = [
        ("l", "bigint", data(longStats=tt.LongColumnStatsData(lowValue=-3, highValue=40, numNulls=1, numDVs=37))),
        ("d", "double", data(doubleStats=tt.DoubleColumnStatsData(lowValue=-0.5, highValue=1234.25, numNulls=2,
                                                                  numDVs=90))),
        ("m", "decimal(10,2)", data(decimalStats=tt.DecimalColumnStatsData(
            lowValue=_decimal("-1.50"), highValue=_decimal("99999.99"), numNulls=0, numDVs=55))),
        ("dt", "date", data(dateStats=tt.DateColumnStatsData(
            lowValue=tt.Date(daysSinceEpoch=18262), highValue=tt.Date(daysSinceEpoch=19723), numNulls=3, numDVs=80))),
        ("ts", "timestamp", data(timestampStats=tt.TimestampColumnStatsData(
            lowValue=tt.Timestamp(secondsSinceEpoch=1577836800), highValue=tt.Timestamp(secondsSinceEpoch=1700000001),
            numNulls=4, numDVs=96))),
        ("s", "string", data(stringStats=tt.StringColumnStatsData(maxColLen=17, avgColLen=6.4, numNulls=5,
                                                                  numDVs=44))),
        ("b", "boolean", data(booleanStats=tt.BooleanColumnStatsData(numTrues=60, numFalses=39, numNulls=1))),
    ]
    client.update_table_column_statistics(tt.ColumnStatistics(
        statsDesc=tt.ColumnStatisticsDesc(isTblLevel=True, dbName=db, tableName="t"),
        statsObj=[tt.ColumnStatisticsObj(colName=n, colType=t, statsData=d) for n, t, d in objs],
    ))


# What Spark's DESCRIBE EXTENDED must show for table t: (min, max, num_nulls, distinct_count, avg_col_len, max_col_len)
EXPECTED_T = {
    "l": ("-3", "40", "1", "37", "8", "8"),
    "d": ("-0.5", "1234.25", "2", "90", "8", "8"),
    "m": ("-1.50", "99999.99", "0", "55", "8", "8"),
    "dt": ("2020-01-01", "2024-01-01", "3", "80", "4", "4"),
    # DESCRIBE re-formats the stored UTC text in the session time zone (UTC here) with its offset
    "ts": ("2020-01-01 00:00:00.000000 +0000", "2023-11-14 22:13:21.000000 +0000", "4", "96", "8", "8"),
    "s": ("NULL", "NULL", "5", "44", "7", "17"),
    "b": ("false", "true", "1", "2", "1", "1"),
}
FIELDS = ("min", "max", "num_nulls", "distinct_count", "avg_col_len", "max_col_len")


def test_spark_sees_thrift_statistics_and_hive_sees_spark_analyze(
    our_server_on_sqlite: tuple[str, int], tmp_path: Path
) -> None:
    db = f"sstats_{uuid.uuid4().hex[:8]}"
    warehouse = tmp_path / "warehouse"
    client = _client(our_server_on_sqlite)
    _create_table(client, db, warehouse)
    host, port = our_server_on_sqlite
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--uri", f"thrift://{host}:{port}", "--warehouse", str(warehouse), "--db", db],
        capture_output=True, text=True, timeout=600,
    )
    if proc.returncode != 0 or not proc.stdout.strip():
        pytest.fail(f"Spark script exited {proc.returncode}:\n{proc.stderr[-5000:]}", pytrace=False)
    doc = json.loads(proc.stdout)
    assert doc["errors"] == []

    # (a) our statistics as Spark's optimizer reads them
    shown_t = {c: tuple(doc["t"][c][f] for f in FIELDS) for c in EXPECTED_T}
    assert shown_t == EXPECTED_T
    assert "rowCount=100" in doc["t_plan"], doc["t_plan"]

    # (b) Spark's ANALYZE, read back as Hive statistics
    shown = doc["s"]
    got = {o.colName: o.statsData for o in client.get_table_statistics_req(
        tt.TableStatsRequest(dbName=db, tblName="s", colNames=[c for c, _ in COLUMNS])).tableStats}

    def counts(c: str, data: object) -> None:
        assert data.numNulls == int(shown[c]["num_nulls"]), c  # type: ignore[attr-defined]
        assert data.numDVs == int(shown[c]["distinct_count"]), c  # type: ignore[attr-defined]

    counts("l", got["l"].longStats)
    assert (got["l"].longStats.lowValue, got["l"].longStats.highValue) == (int(shown["l"]["min"]),
                                                                          int(shown["l"]["max"]))
    counts("d", got["d"].doubleStats)
    assert (got["d"].doubleStats.lowValue, got["d"].doubleStats.highValue) == (float(shown["d"]["min"]),
                                                                              float(shown["d"]["max"]))
    counts("m", got["m"].decimalStats)
    assert (_from_decimal(got["m"].decimalStats.lowValue), _from_decimal(got["m"].decimalStats.highValue)) == (
        Decimal(shown["m"]["min"]), Decimal(shown["m"]["max"]))
    counts("dt", got["dt"].dateStats)
    assert (got["dt"].dateStats.lowValue.daysSinceEpoch, got["dt"].dateStats.highValue.daysSinceEpoch) == (
        (dt.date.fromisoformat(shown["dt"]["min"]) - EPOCH_DAY).days,
        (dt.date.fromisoformat(shown["dt"]["max"]) - EPOCH_DAY).days)
    # timestamps: Hive keeps whole seconds, bounds rounded outwards; answered as longStats (pre-Hive-4 clients)
    ts = got["ts"].longStats
    counts("ts", ts)
    low = dt.datetime.strptime(shown["ts"]["min"], "%Y-%m-%d %H:%M:%S.%f %z") - EPOCH
    high = dt.datetime.strptime(shown["ts"]["max"], "%Y-%m-%d %H:%M:%S.%f %z") - EPOCH
    assert (ts.lowValue, ts.highValue) == (math.floor(low.total_seconds()), math.ceil(high.total_seconds()))
    counts("s", got["s"].stringStats)
    assert (got["s"].stringStats.avgColLen, got["s"].stringStats.maxColLen) == (
        float(shown["s"]["avg_col_len"]), int(shown["s"]["max_col_len"]))
    # A boolean column holding both values: Spark's min/max/distinct do not give Hive's true/false counts, so
    # the column is left out of TAB_COL_STATS (a WARNING in the server log) rather than invented.
    assert (shown["b"]["min"], shown["b"]["max"]) == ("false", "true")
    assert "b" not in got
