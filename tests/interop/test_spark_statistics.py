"""Spark 4's optimizer and Hive column statistics through our server (issue 15 §1, §2, §4), Spark in local mode with
spark.sql.cbo.enabled: one Spark session for the whole module (spark_statistics_script.py serves its requests).

- Statistics written by pymetastore's update_table_column_statistics, by `metastore sql` ANALYZE and by
  metastore.spark.analyze_table show in Spark's DESCRIBE EXTENDED t col, for every type Spark keeps statistics of,
  with Spark's histogram where we hold a KLL sketch; EXPLAIN COST has the row count and size.
- Spark's own ANALYZE reaches Hive's statistics (pymetastore reads them), with fixed expected values computed from
  the deterministic data, never read back from our store; Spark's histograms stay.
- Partitions: Spark sums Hive's sizes of the partitions left after pruning; its ANALYZE ... PARTITION numbers
  become Hive's.
- A three-table join under CBO join reordering follows the statistics: change them, the order changes.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport

from interop.client_venvs import CLIENTS, run_in_venv
from metastore.api.hive_metastore import ThriftHiveMetastore
from metastore.api.hive_metastore import ttypes as tt

SCRIPT = Path(__file__).resolve().parent / "spark_statistics_script.py"
pytestmark = [pytest.mark.spark, pytest.mark.clients, pytest.mark.slow]
FIELDS = ("min", "max", "num_nulls", "distinct_count", "avg_col_len", "max_col_len")


class SparkDriver:
    """The module's Spark session in its subprocess: one JSON request, one JSON answer."""

    def __init__(self, uri: str, warehouse: Path, log: Path) -> None:
        self.uri = uri
        self.warehouse = warehouse
        self._log = log
        self._stderr = log.open("w")
        self.proc = subprocess.Popen(
            [sys.executable, str(SCRIPT), "--uri", uri, "--warehouse", str(warehouse)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self._stderr, text=True,
        )
        ready = self._read()
        if "ready" not in ready:
            pytest.fail(f"Spark did not start: {ready}", pytrace=False)

    def _read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            pytest.fail(f"Spark exited {self.proc.poll()}:\n{self._log.read_text()[-5000:]}", pytrace=False)
        return json.loads(line)

    def request(self, doc: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(doc) + "\n")
        self.proc.stdin.flush()
        reply = self._read()
        assert "error" not in reply, reply["error"]
        return reply

    def sql(self, *statements: str) -> list[list[list[Any]]]:
        """Rows of each statement; fails the test on any statement's error."""
        results = self.request({"sql": list(statements)})["results"]
        errors = [(s, r["error"]) for s, r in zip(statements, results, strict=True) if "error" in r]
        assert not errors, errors
        return [r["rows"] for r in results]

    def describe(self, table: str, columns: list[str]) -> dict[str, dict[str, str]]:
        return self.request({"describe": table, "columns": columns})["columns"]

    def explain_cost(self, query: str) -> str:
        return str(self.sql(f"EXPLAIN COST {query}")[0][0][0])

    def close(self) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=120)
        except subprocess.TimeoutExpired:
            self.proc.kill()
        self._stderr.close()


@pytest.fixture(scope="module")
def spark(our_server_on_sqlite: tuple[str, int], tmp_path_factory: pytest.TempPathFactory) -> Iterator[SparkDriver]:
    host, port = our_server_on_sqlite
    root = tmp_path_factory.mktemp("spark-statistics")
    driver = SparkDriver(f"thrift://{host}:{port}", root / "warehouse", root / "spark.log")
    try:
        yield driver
    finally:
        driver.close()


@pytest.fixture
def db(spark: SparkDriver) -> str:
    name = f"sstats_{uuid.uuid4().hex[:8]}"
    spark.sql(f"CREATE DATABASE {name}")
    return name


def _client(uri: str) -> ThriftHiveMetastore.Client:
    host, _, port = uri.removeprefix("thrift://").rpartition(":")
    sock = TSocket.TSocket(host, int(port))
    sock.setTimeout(60_000)
    trans = TTransport.TBufferedTransport(sock)
    trans.open()
    return ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocol(trans))


def _shown(described: dict[str, dict[str, str]]) -> dict[str, tuple[str, ...]]:
    return {c: tuple(d[f] for f in FIELDS) for c, d in described.items()}


def _size_in_bytes(plan: str) -> str:
    m = re.search(r"Relation [^\n]*Statistics\(sizeInBytes=([^,)]+)", plan)
    assert m, plan
    return m.group(1)


# ---------------------------------------------------------------------------------------------- pymetastore writes

ALL_TYPES = [("ti", "tinyint"), ("si", "smallint"), ("i", "int"), ("l", "bigint"), ("f", "float"), ("d", "double"),
             ("m", "decimal(10,2)"), ("dt", "date"), ("ts", "timestamp"), ("s", "string"), ("c", "char(5)"),
             ("v", "varchar(10)"), ("b", "boolean"), ("bin", "binary")]

PYMETASTORE_WRITE = textwrap.dedent(
    """
    import json, sys
    from pymetastore.hive_metastore import ThriftHiveMetastore
    from pymetastore.hive_metastore import ttypes as tt
    from thrift.protocol.TBinaryProtocol import TBinaryProtocol
    from thrift.transport import TSocket, TTransport

    host, port, db = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    transport = TTransport.TBufferedTransport(TSocket.TSocket(host, port))
    transport.open()
    client = ThriftHiveMetastore.Client(TBinaryProtocol(transport))
    D = tt.ColumnStatisticsData

    def dec(unscaled, scale):
        return tt.Decimal(unscaled=unscaled.to_bytes(8, "big", signed=True), scale=scale)

    def long(low, high, nulls, ndv):
        return D(longStats=tt.LongColumnStatsData(lowValue=low, highValue=high, numNulls=nulls, numDVs=ndv))

    def string(max_len, avg, nulls, ndv):
        return D(stringStats=tt.StringColumnStatsData(maxColLen=max_len, avgColLen=avg, numNulls=nulls, numDVs=ndv))

    objs = [
        ("ti", "tinyint", long(-128, 127, 1, 200)),
        ("si", "smallint", long(-300, 3000, 2, 90)),
        ("i", "int", long(-70000, 2000000000, 0, 77)),
        ("l", "bigint", long(-3, 40, 1, 37)),
        ("f", "float", D(doubleStats=tt.DoubleColumnStatsData(lowValue=-1.5, highValue=2.25, numNulls=0, numDVs=12))),
        ("d", "double", D(doubleStats=tt.DoubleColumnStatsData(lowValue=-0.5, highValue=1234.25, numNulls=2,
                                                              numDVs=90))),
        ("m", "decimal(10,2)", D(decimalStats=tt.DecimalColumnStatsData(
            lowValue=dec(-150, 2), highValue=dec(9999999, 2), numNulls=0, numDVs=55))),
        ("dt", "date", D(dateStats=tt.DateColumnStatsData(
            lowValue=tt.Date(daysSinceEpoch=18262), highValue=tt.Date(daysSinceEpoch=19723), numNulls=3, numDVs=80))),
        # Hive 2.3's IDL (pymetastore's) has no timestampStats: timestamps go as epoch seconds in longStats
        ("ts", "timestamp", long(1577836800, 1700000001, 4, 96)),
        ("s", "string", string(17, 6.4, 5, 44)),
        ("c", "char(5)", string(5, 5.0, 0, 3)),
        ("v", "varchar(10)", string(10, 2.5, 6, 20)),
        ("b", "boolean", D(booleanStats=tt.BooleanColumnStatsData(numTrues=60, numFalses=39, numNulls=1))),
        ("bin", "binary", D(binaryStats=tt.BinaryColumnStatsData(maxColLen=64, avgColLen=10.5, numNulls=7))),
    ]
    client.update_table_column_statistics(tt.ColumnStatistics(
        statsDesc=tt.ColumnStatisticsDesc(isTblLevel=True, dbName=db, tableName="pm"),
        statsObj=[tt.ColumnStatisticsObj(colName=n, colType=t, statsData=d) for n, t, d in objs],
    ))
    print(json.dumps({"written": len(objs)}))
    transport.close()
    """
)

# What Spark's DESCRIBE EXTENDED must show: (min, max, num_nulls, distinct_count, avg_col_len, max_col_len).
EXPECTED_PM = {
    "ti": ("-128", "127", "1", "200", "1", "1"),
    "si": ("-300", "3000", "2", "90", "2", "2"),
    "i": ("-70000", "2000000000", "0", "77", "4", "4"),
    "l": ("-3", "40", "1", "37", "8", "8"),
    "f": ("-1.5", "2.25", "0", "12", "4", "4"),
    "d": ("-0.5", "1234.25", "2", "90", "8", "8"),
    "m": ("-1.50", "99999.99", "0", "55", "8", "8"),
    "dt": ("2020-01-01", "2024-01-01", "3", "80", "4", "4"),
    # DESCRIBE re-formats the stored UTC text in the session time zone (UTC here) with its offset
    "ts": ("2020-01-01 00:00:00.000000 +0000", "2023-11-14 22:13:21.000000 +0000", "4", "96", "8", "8"),
    "s": ("NULL", "NULL", "5", "44", "7", "17"),
    "c": ("NULL", "NULL", "0", "3", "5", "5"),
    "v": ("NULL", "NULL", "6", "20", "3", "10"),
    "b": ("false", "true", "1", "2", "1", "1"),
    # Hive keeps no distinct count of binaries
    "bin": ("NULL", "NULL", "7", "NULL", "11", "64"),
}


def test_spark_sees_what_pymetastore_wrote_for_every_type(spark: SparkDriver, db: str) -> None:
    client = _client(spark.uri)
    sd = tt.StorageDescriptor(
        cols=[tt.FieldSchema(name=n, type=t) for n, t in ALL_TYPES], location=None,
        inputFormat="org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
        outputFormat="org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat", compressed=False, numBuckets=-1,
        serdeInfo=tt.SerDeInfo(serializationLib="org.apache.hadoop.hive.ql.io.orc.OrcSerde", parameters={}),
        bucketCols=[], sortCols=[], parameters={},
    )
    client.create_table(tt.Table(
        tableName="pm", dbName=db, owner="tester", createTime=0, lastAccessTime=0, retention=0, sd=sd,
        partitionKeys=[], parameters={"numRows": "100", "totalSize": "5000"}, tableType="MANAGED_TABLE",
    ))
    host, _, port = spark.uri.removeprefix("thrift://").rpartition(":")
    script = spark.warehouse.parent / "pymetastore_write.py"
    script.write_text(PYMETASTORE_WRITE)
    assert run_in_venv(CLIENTS["pymetastore"], script, [host, port, db]) == {"written": len(ALL_TYPES)}

    shown = _shown(spark.describe(f"{db}.pm", [c for c, _ in ALL_TYPES]))
    assert shown == EXPECTED_PM

    # CBO: the row count, and a size of rows x (8 + each column's average length, + 12 for strings), as Spark
    # estimates it (EstimationUtils.getOutputSize)
    plan = spark.explain_cost(f"SELECT * FROM {db}.pm")
    assert "rowCount=100" in plan, plan
    row_size = 8 + sum(int(v[4]) + (12 if c in ("s", "c", "v") else 0) for c, v in EXPECTED_PM.items())
    assert _size_in_bytes(plan) == f"{row_size * 100 / 1024:.1f} KiB", plan
    # without CBO Spark takes Hive's totalSize
    spark.sql("SET spark.sql.cbo.enabled=false")
    try:
        plan = spark.explain_cost(f"SELECT * FROM {db}.pm")
    finally:
        spark.sql("SET spark.sql.cbo.enabled=true")
    assert _size_in_bytes(plan) == f"{5000 / 1024:.1f} KiB" and "rowCount" not in plan, plan


# ------------------------------------------------------------------------------------ our ANALYZE, shell and Spark

FILL = ("SELECT id * 3 - 7, id / 4.0, CAST(id * 1.25 AS decimal(10,2)), date_add(DATE'2021-03-01', CAST(id AS int)), "
        "IF(id % 7 = 0, NULL, repeat('x', CAST(id % 5 AS int))), CAST(id % 2 AS string) FROM range(40)")
COLUMNS = "l bigint, d double, m decimal(10,2), dt date, s string"
# range(40): l = 3 id - 7, d = id / 4, m = 1.25 id, dt = 2021-03-01 + id days; s NULL when id % 7 = 0 (6 rows)
TRUTH = {
    "l": ("-7", "110", "0"),
    "d": ("0.0", "9.75", "0"),
    "m": ("0.00", "48.75", "0"),
    "dt": ("2021-03-01", "2021-04-09", "0"),
}


# the bounds as Spark's histograms hold them (dates as days since the epoch)
BOUNDS = {"l": (-7.0, 110.0), "d": (0.0, 9.75), "m": (0.0, 48.75), "dt": (18687.0, 18726.0)}


def _ours(uri: str, db: str, table: str, columns: list[str]) -> dict[str, tuple[str, ...]]:
    """Our statistics as get_table_statistics_req answers them, in DESCRIBE's text."""
    import datetime as dt
    from decimal import Decimal

    client = _client(uri)
    got = {o.colName: o.statsData for o in client.get_table_statistics_req(
        tt.TableStatsRequest(dbName=db, tblName=table, colNames=columns)).tableStats}
    out: dict[str, tuple[str, ...]] = {}
    for c, data in got.items():
        if data.longStats is not None:
            s = data.longStats
            out[c] = (str(s.lowValue), str(s.highValue), str(s.numNulls), str(s.numDVs))
        elif data.doubleStats is not None:
            s = data.doubleStats
            out[c] = (repr(s.lowValue), repr(s.highValue), str(s.numNulls), str(s.numDVs))
        elif data.decimalStats is not None:
            s = data.decimalStats

            def text(d: tt.Decimal) -> str:  # in the column's scale (decimal(10,2)), as Spark writes bounds
                return str(Decimal(int.from_bytes(d.unscaled, "big", signed=True)).scaleb(-d.scale).quantize(
                    Decimal("0.01")))

            out[c] = (text(s.lowValue), text(s.highValue), str(s.numNulls), str(s.numDVs))
        elif data.dateStats is not None:
            s = data.dateStats
            epoch = dt.date(1970, 1, 1)
            out[c] = (str(epoch + dt.timedelta(days=s.lowValue.daysSinceEpoch)),
                      str(epoch + dt.timedelta(days=s.highValue.daysSinceEpoch)), str(s.numNulls), str(s.numDVs))
        elif data.stringStats is not None:
            s = data.stringStats
            out[c] = ("NULL", "NULL", str(s.numNulls), str(s.numDVs))
    return out


def _bins(described: dict[str, str]) -> list[tuple[float, float, int]]:
    """The bins DESCRIBE EXTENDED lists after its `histogram` line."""
    out = []
    for key, value in described.items():
        if key.startswith("bin_"):
            m = re.fullmatch(r"lower_bound: (\S+), upper_bound: (\S+), distinct_count: (\d+)", value)
            assert m, value
            out.append((float(m.group(1)), float(m.group(2)), int(m.group(3))))
    return out


def test_spark_sees_our_analyze_from_the_shell_and_from_spark(spark: SparkDriver, db: str, tmp_path: Path) -> None:
    spark.sql(f"CREATE TABLE {db}.sh ({COLUMNS}, k string) STORED AS ORC",
              f"CREATE TABLE {db}.sp ({COLUMNS}, k string) STORED AS ORC",
              f"INSERT INTO {db}.sh {FILL}", f"INSERT INTO {db}.sp {FILL}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("METASTORE_")}
    env["METASTORE_ANALYZE_CACHE"] = str(tmp_path / "cache.sqlite")
    shell = subprocess.run(
        [sys.executable, "-m", "metastore.sql", "--connect", spark.uri, "--histograms", "-e",
         f"ANALYZE TABLE {db}.sh COMPUTE STATISTICS; ANALYZE TABLE {db}.sh COMPUTE STATISTICS FOR ALL COLUMNS"],
        capture_output=True, text=True, timeout=300, env=env, input="")
    assert shell.returncode == 0, shell.stderr
    spark.request({"analyze": f"{db}.sp", "histograms": True})

    columns = ["l", "d", "m", "dt", "s"]
    for table in ("sh", "sp"):
        described = spark.describe(f"{db}.{table}", columns)
        shown = _shown(described)
        ours = _ours(spark.uri, db, table, columns)
        assert {c: v[:4] for c, v in shown.items()} == ours, table  # DESCRIBE equals what we hold
        assert {c: v[:3] for c, v in shown.items() if c in TRUTH} == TRUTH, table  # and the data's truth
        assert shown["s"][2] == "6"
        # Spark's equi-height histogram from our KLL sketch: bins within [min, max], 40 rows over them
        for c in ("l", "d", "m", "dt"):
            assert described[c]["histogram"].startswith("height: "), (table, c, described[c])
            bins = _bins(described[c])
            assert bins and (bins[0][0], bins[-1][1]) == BOUNDS[c], (table, c, bins)
            height = float(described[c]["histogram"].split(",")[0].removeprefix("height: "))
            assert height * len(bins) == pytest.approx(40), (table, c)
        assert described["s"]["histogram"] == "NULL"
        plan = spark.explain_cost(f"SELECT * FROM {db}.{table}")
        assert "rowCount=40" in plan, plan

    # Spark's INSERT makes the statistics stale and Spark drops its properties (alterTableStats(None)): Spark sees
    # none until the next analysis, Hive's readers keep TAB_COL_STATS as Hive does after a load
    spark.sql(f"INSERT INTO {db}.sp {FILL}")
    after = spark.describe(f"{db}.sp", ["l"])["l"]
    assert (after["min"], after["distinct_count"]) == ("NULL", "NULL"), after
    assert _ours(spark.uri, db, "sp", ["l"])["l"][:2] == ("-7", "110")


# -------------------------------------------------------------------------------------------- Spark's own ANALYZE

def test_spark_analyze_reaches_hive_statistics(spark: SparkDriver, db: str) -> None:
    spark.sql(
        f"CREATE TABLE {db}.s (l bigint, d double, m decimal(10,2), dt date, ts timestamp, s string, b boolean, "
        "one boolean) STORED AS ORC",
        f"INSERT INTO {db}.s SELECT id * 3 - 7, id / 4.0, CAST(id * 1.25 AS decimal(10,2)), "
        "date_add(DATE'2021-03-01', CAST(id AS int)), "
        "TIMESTAMP'2022-01-01 00:00:00' + make_interval(0, 0, 0, 0, 0, 0, id * 1.5), "
        "IF(id % 7 = 0, NULL, repeat('x', CAST(id % 5 AS int))), id < 10, IF(id < 5, NULL, true) FROM range(40)",
        "SET spark.sql.statistics.histogram.enabled=true",
        f"ANALYZE TABLE {db}.s COMPUTE STATISTICS FOR ALL COLUMNS",
        "SET spark.sql.statistics.histogram.enabled=false",
    )
    host, _, port = spark.uri.removeprefix("thrift://").rpartition(":")
    script = spark.warehouse.parent / "pymetastore_read.py"
    script.write_text(PYMETASTORE_READ)
    got = run_in_venv(CLIENTS["pymetastore"], script, [host, port, db, "s", "l", "d", "m", "dt", "ts", "s", "b", "one"])
    # NDVs are Spark's HyperLogLog++ estimates (relative error 5 %, spark.sql.statistics.ndv.maxError) of the
    # true counts: 40 distinct values in each numeric column, 5 strings ('' to 'xxxx').
    true_ndv = {"l": 40, "d": 40, "m": 40, "dt": 40, "ts": 40, "s": 5}
    for column, ndv in true_ndv.items():
        (stats,) = got[column].values()
        assert abs(stats.pop("numDVs") - ndv) <= max(1, 0.05 * ndv), (column, stats)
    # Every other number fixed by range(40), never read back from our store. Timestamps go to Hive's whole
    # seconds rounded outwards: 2022-01-01 00:00:00 + 58.5 s -> 1640995259. s holds id % 5 'x's where
    # id % 7 != 0: 34 values of total length 70, Spark's avgLen ceil(70 / 34) = 3.
    assert got == {
        "l": {"longStats": {"lowValue": -7, "highValue": 110, "numNulls": 0}},
        "d": {"doubleStats": {"lowValue": 0.0, "highValue": 9.75, "numNulls": 0}},
        "m": {"decimalStats": {"lowValue": "0.00", "highValue": "48.75", "numNulls": 0}},
        "dt": {"dateStats": {"lowValue": 18687, "highValue": 18726, "numNulls": 0}},
        "ts": {"longStats": {"lowValue": 1640995200, "highValue": 1640995259, "numNulls": 0}},
        "s": {"stringStats": {"maxColLen": 4, "avgColLen": 3.0, "numNulls": 6}},
        # a boolean with one value gives Hive's counts exactly: 35 true, 5 NULL
        "one": {"booleanStats": {"numTrues": 35, "numFalses": 0, "numNulls": 5}},
        # b has both values: Spark does not say how many of each, so Hive gets nothing rather than a guess
    }
    # our shell's DESCRIBE reads them too
    env = {k: v for k, v in os.environ.items() if not k.startswith("METASTORE_")}
    shell = subprocess.run([sys.executable, "-m", "metastore.sql", "--connect", spark.uri, "--output", "json", "-e",
                            f"DESCRIBE FORMATTED {db}.s l"], capture_output=True, text=True, timeout=300, env=env,
                           input="")
    assert shell.returncode == 0, shell.stderr
    (row,) = json.loads(shell.stdout)
    assert (row["min"], row["max"], row["num_nulls"]) == (-7, 110, 0), row
    # Spark's own histograms stay with the statistics they came with: DESCRIBE shows Spark's 254 bins
    described = spark.describe(f"{db}.s", ["l", "dt"])
    assert described["l"]["histogram"].startswith("height: 0.15748031496062992, num_of_bins: 254"), described["l"]
    bins = _bins(described["l"])
    assert (len(bins), bins[0][0], bins[-1][1]) == (254, -7.0, 110.0)
    assert _bins(described["dt"])[-1][1] == 18726.0


PYMETASTORE_READ = textwrap.dedent(
    """
    import json, sys
    from decimal import Decimal
    from pymetastore.hive_metastore import ThriftHiveMetastore
    from pymetastore.hive_metastore import ttypes as tt
    from thrift.protocol.TBinaryProtocol import TBinaryProtocol
    from thrift.transport import TSocket, TTransport

    host, port, db, table, columns = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
    transport = TTransport.TBufferedTransport(TSocket.TSocket(host, port))
    transport.open()
    client = ThriftHiveMetastore.Client(TBinaryProtocol(transport))

    def plain(value):
        if hasattr(value, "unscaled"):
            return str(Decimal(int.from_bytes(value.unscaled, "big", signed=True)).scaleb(-value.scale))
        if hasattr(value, "daysSinceEpoch"):
            return value.daysSinceEpoch
        return value

    out = {}
    reply = client.get_table_statistics_req(tt.TableStatsRequest(dbName=db, tblName=table, colNames=columns))
    for obj in reply.tableStats:
        for kind, stats in vars(obj.statsData).items():
            if stats is not None:
                out[obj.colName] = {kind: {k: plain(v) for k, v in vars(stats).items()
                                           if v is not None and k not in ("bitVectors", "histogram")}}
    print(json.dumps(out))
    transport.close()
    """
)


# --------------------------------------------------------------------------------------------------- partitions

def test_spark_sums_hive_sizes_of_pruned_partitions(spark: SparkDriver, db: str, tmp_path: Path) -> None:
    spark.sql(f"CREATE TABLE {db}.p (a bigint, b string) PARTITIONED BY (ds string) STORED AS ORC",
              f"INSERT INTO {db}.p PARTITION (ds='1') SELECT id, repeat('y', CAST(id % 9 AS int)) FROM range(300)",
              f"INSERT INTO {db}.p PARTITION (ds='2') SELECT id, 'z' FROM range(50)")
    env = {k: v for k, v in os.environ.items() if not k.startswith("METASTORE_")}
    env["METASTORE_ANALYZE_CACHE"] = str(tmp_path / "cache.sqlite")
    shell = subprocess.run([sys.executable, "-m", "metastore.sql", "--connect", spark.uri, "-e",
                            f"ANALYZE TABLE {db}.p PARTITION (ds) COMPUTE STATISTICS"],
                           capture_output=True, text=True, timeout=300, env=env, input="")
    assert shell.returncode == 0, shell.stderr
    client = _client(spark.uri)
    params = {p.values[0]: p.parameters for p in client.get_partitions(db, "p", -1)}
    assert (params["1"]["numRows"], params["2"]["numRows"]) == ("300", "50")
    raw_1 = int(params["1"]["rawDataSize"])
    assert raw_1 > 0

    # Hive's reader path (no ORC conversion) prunes, then sums rawDataSize of what is left (CBO off: with it,
    # Spark estimates the size from the row count instead)
    spark.sql("SET spark.sql.hive.convertMetastoreOrc=false", "SET spark.sql.cbo.enabled=false")
    try:
        plan = spark.explain_cost(f"SELECT * FROM {db}.p WHERE ds = '1'")
        assert f"sizeInBytes={_bytes_text(raw_1)}" in plan, plan
        # Spark's ANALYZE of one partition: its numbers become Hive's; no Spark key is stored with the partition
        spark.sql(f"ANALYZE TABLE {db}.p PARTITION (ds='1') COMPUTE STATISTICS")
        part = client.get_partition(db, "p", ["1"])
        assert part.parameters["numRows"] == "300"
        assert "rawDataSize" not in part.parameters or part.parameters["rawDataSize"] == str(raw_1)
        assert not any(k.startswith("spark.sql.") for k in part.parameters), part.parameters
        total_1 = int(part.parameters["totalSize"])
        plan = spark.explain_cost(f"SELECT * FROM {db}.p WHERE ds = '1'")
        assert f"sizeInBytes={_bytes_text(int(part.parameters.get('rawDataSize', total_1)))}" in plan, plan
    finally:
        spark.sql("SET spark.sql.hive.convertMetastoreOrc=true", "SET spark.sql.cbo.enabled=true")


def _bytes_text(size: int) -> str:
    """Spark's Utils.bytesToString of a size below 1 GiB."""
    if size >= 1 << 20:
        return f"{size / (1 << 20):.1f} MiB"
    if size >= 1 << 10:
        return f"{size / (1 << 10):.1f} KiB"
    return f"{size}.0 B"


# ----------------------------------------------------------------------------------------------- CBO join order

def _join_order(plan: str) -> list[str]:
    """The tables of the optimized logical plan's joins, in the order they appear (deepest-left first)."""
    optimized = plan.split("== Physical Plan ==", maxsplit=1)[0]
    return re.findall(r"Relation spark_catalog\.\w+\.(\w+)\[", optimized)


def _stats(client: ThriftHiveMetastore.Client, db: str, table: str, rows: int, ndv: int) -> None:
    t = client.get_table(db, table)
    t.parameters.update({"numRows": str(rows), "totalSize": str(rows * 16)})
    client.alter_table(db, table, t)
    client.update_table_column_statistics(tt.ColumnStatistics(
        statsDesc=tt.ColumnStatisticsDesc(isTblLevel=True, dbName=db, tableName=table),
        statsObj=[tt.ColumnStatisticsObj(colName="k", colType="bigint", statsData=tt.ColumnStatisticsData(
            longStats=tt.LongColumnStatsData(lowValue=0, highValue=max(ndv - 1, 0), numNulls=0, numDVs=ndv)))],
    ))


def test_cbo_join_order_follows_the_statistics(spark: SparkDriver, db: str) -> None:
    spark.sql(*(f"CREATE TABLE {db}.{t} (k bigint, v string) STORED AS ORC" for t in ("f", "x", "y")))
    client = _client(spark.uri)
    query = f"SELECT count(*) FROM {db}.f JOIN {db}.x ON f.k = x.k JOIN {db}.y ON f.k = y.k"

    def order() -> list[str]:
        for t in ("f", "x", "y"):
            spark.sql(f"REFRESH TABLE {db}.{t}")
        return _join_order(spark.explain_cost(query))

    # x is small and its keys few: f joined with x first keeps the intermediate result small
    _stats(client, db, "f", 1_000_000, 1_000_000)
    _stats(client, db, "x", 100, 100)
    _stats(client, db, "y", 900_000, 900_000)
    first = order()
    # now y is the small one: the optimizer joins f with y first
    _stats(client, db, "x", 900_000, 900_000)
    _stats(client, db, "y", 100, 100)
    second = order()
    assert sorted(first) == sorted(second) == ["f", "x", "y"], (first, second)
    assert first.index("x") < first.index("y") and second.index("y") < second.index("x"), (first, second)
