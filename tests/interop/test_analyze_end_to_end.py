"""End to end with outside systems (issue 4, section 6): Spark creates and fills a partitioned ORC table (zstd) through
our server; `metastore sql --connect` runs ANALYZE on it; pymetastore, an outside client in its own virtualenv,
reads the statistics back; DESCRIBE FORMATTED shows the same numbers.

Ground truth comes from Spark's own ORC files read with pyarrow and counted with numpy, never from our reader.
"""

from __future__ import annotations

import datetime as dt
import json
import math
import os
import subprocess
import sys
import textwrap
from decimal import Decimal
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as pa_orc
import pytest

from interop.client_venvs import CLIENTS, run_in_venv

EPOCH = dt.date(1970, 1, 1)
pytestmark = [pytest.mark.spark, pytest.mark.clients, pytest.mark.slow]

DB = "e2e_analyze"
TABLE = "events"
PARTITIONS = ("2024-01-01", "2024-01-02", "2024-01-03")
ROWS_PER_PARTITION = 20_000
COLUMN_TYPES = {
    "id": "bigint", "qty": "int", "amount": "double", "price": "decimal(10,2)", "name": "string", "flag": "boolean",
    "day": "date",
}

SPARK_SCRIPT = textwrap.dedent(
    f"""
    import json, sys
    from pyspark.sql import SparkSession

    uri, warehouse = sys.argv[1], sys.argv[2]
    spark = (
        SparkSession.builder.master("local[2]")
        .appName("metastore-e2e-analyze")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.sql.catalogImplementation", "hive")
        .config("spark.hadoop.hive.metastore.uris", uri)
        .config("spark.sql.warehouse.dir", warehouse)
        .config("spark.driver.memory", "1g")
        .enableHiveSupport()
        .getOrCreate()
    )
    spark.sparkContext.setLogLevel("ERROR")
    spark.sql("CREATE DATABASE {DB}")
    spark.sql(
        "CREATE TABLE {DB}.{TABLE} (id bigint, qty int, amount double, price decimal(10,2), name string, "
        "flag boolean, day date) PARTITIONED BY (ds string) STORED AS ORC TBLPROPERTIES ('orc.compress'='ZSTD')"
    )
    for index, ds in enumerate({list(PARTITIONS)!r}):
        spark.sql((
            "INSERT INTO {DB}.{TABLE} PARTITION (ds='@DS@') "
            "SELECT CASE WHEN id % 20 = 0 THEN NULL ELSE (id * 7919 + @IX@ * 1000003) % 1000003 END, "
            "CAST(id % 977 AS int) - 400, "
            "CASE WHEN id % 7 = 0 THEN NULL ELSE rand(@IX@) * 1e6 - 5e5 END, "
            "CAST((id * 31 % 100000) / 100.0 - 300 AS decimal(10,2)), "
            "CASE WHEN id % 11 = 0 THEN NULL ELSE concat('name-', CAST((id * 13 + @IX@ * 5000) % 9000 AS string), "
            "  repeat('x', CAST(id % 5 AS int))) END, "
            "CASE WHEN id % 3 = 0 THEN NULL ELSE id % 4 = 1 END, "
            "date_add(DATE'2000-01-01', CAST(id % 3650 AS int)) "
            "FROM range({ROWS_PER_PARTITION}) AS r(id)"
        ).replace("@DS@", ds).replace("@IX@", str(index)))
    counts = spark.sql("SELECT ds, count(*) FROM {DB}.{TABLE} GROUP BY ds ORDER BY ds").collect()
    location = spark.sql("DESCRIBE FORMATTED {DB}.{TABLE}").where("col_name = 'Location'").collect()[0][1]
    spark.stop()
    print(json.dumps({{"counts": [[r[0], r[1]] for r in counts], "location": location}}))
    """
)

PYMETASTORE_SCRIPT = textwrap.dedent(
    """
    import json, sys
    from pymetastore.hive_metastore import ThriftHiveMetastore
    from pymetastore.metastore import HMS
    from thrift.protocol.TBinaryProtocol import TBinaryProtocol
    from thrift.transport import TSocket, TTransport

    host, port, db, table, partitions = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5:]
    transport = TTransport.TBufferedTransport(TSocket.TSocket(host, port))
    transport.open()
    hms = HMS(ThriftHiveMetastore.Client(TBinaryProtocol(transport)))

    def plain(value):
        if value is None or isinstance(value, (int, float, str, bool)):
            return value
        if hasattr(value, "unscaled"):  # Hive's Decimal struct
            unscaled = int.from_bytes(value.unscaled, "big", signed=True)
            return {"unscaled": unscaled, "scale": value.scale}
        if hasattr(value, "daysSinceEpoch"):
            return value.daysSinceEpoch
        return {k: plain(v) for k, v in vars(value).items()}

    htable = hms.get_table(db, table)
    table_stats = {s.columnName: plain(s.stats) for s in hms.get_table_stats(htable)}
    partition_stats = {}
    for name in partitions:
        partition_stats[name] = {}
        for column in htable.columns:
            got = hms.client.get_partition_column_statistics(db, table, name, column.name)
            partition_stats[name][column.name] = plain(got.statsObj[0].statsData)
    part = hms.get_partition(db, table, partitions[0])
    print(json.dumps({"table": table_stats, "partitions": partition_stats, "parameters": part.parameters}))
    transport.close()
    """
)


def spark_data(location: Path, ds: str) -> pa.Table:
    folder = location / f"ds={ds}"
    files = sorted(p for p in folder.iterdir() if p.is_file() and not p.name.startswith((".", "_")))
    assert files, f"Spark wrote no files into {folder}"
    return pa.concat_tables([pa_orc.ORCFile(str(p)).read() for p in files])


def truth(column: pa.ChunkedArray, hive_type: str) -> dict:
    """Ground truth as pymetastore reports it (field names of its stats classes)."""
    valid = pc.drop_null(column)
    out: dict = {"numNulls": column.null_count}
    if hive_type == "boolean":
        trues = int(pc.sum(valid.cast(pa.int64())).as_py() or 0)
        return {**out, "numTrues": trues, "numFalses": len(valid) - trues}
    out["cardinality"] = len(pc.unique(valid))
    if hive_type == "string":
        lengths = pc.binary_length(valid.cast(pa.binary())).to_numpy()
        return {**out, "maxColLen": int(lengths.max()), "avgColLen": float(lengths.sum()) / len(lengths)}
    low, high = pc.min(valid).as_py(), pc.max(valid).as_py()
    if hive_type == "date":
        low, high = (low - EPOCH).days, (high - EPOCH).days
    return {**out, "lowValue": low, "highValue": high}


def as_number(value: object) -> object:
    if isinstance(value, dict) and "unscaled" in value:
        return Decimal(value["unscaled"]).scaleb(-value["scale"])
    return value


def assert_matches(got: dict, want: dict, ndv_tolerance: float, where: str) -> None:
    for key, expected_value in want.items():
        actual = as_number(got.get(key))
        if key == "cardinality":
            assert abs(actual - expected_value) <= max(1, ndv_tolerance * expected_value), (
                f"{where}: NDV {actual}, true {expected_value}"
            )
        elif key == "avgColLen":
            assert math.isclose(actual, expected_value, rel_tol=1e-9), f"{where}: {key} {actual} != {expected_value}"
        else:
            assert actual == expected_value, f"{where}: {key} {actual!r} != {expected_value!r}"


def test_spark_table_analyzed_by_the_shell_read_by_pymetastore(
    our_server_on_sqlite: tuple[str, int], tmp_path: Path
) -> None:
    host, port = our_server_on_sqlite
    uri = f"thrift://{host}:{port}"
    script = tmp_path / "spark_fill.py"
    script.write_text(SPARK_SCRIPT)
    spark = subprocess.run([sys.executable, str(script), uri, str(tmp_path / "spark-warehouse")],
                           capture_output=True, text=True, timeout=600)
    assert spark.returncode == 0, spark.stderr[-5000:]
    filled = json.loads(spark.stdout.strip().splitlines()[-1])
    assert filled["counts"] == [[ds, ROWS_PER_PARTITION] for ds in PARTITIONS]
    location = Path(filled["location"].removeprefix("file:"))
    data = {ds: spark_data(location, ds) for ds in PARTITIONS}
    assert all(pa_orc.ORCFile(str(next((location / f"ds={ds}").glob("part-*")))).compression == "ZSTD"
               for ds in PARTITIONS)

    env = {k: v for k, v in os.environ.items() if not k.startswith("METASTORE_")}
    env["METASTORE_ANALYZE_CACHE"] = str(tmp_path / "cache.sqlite")
    statements = (
        f"ANALYZE TABLE {DB}.{TABLE} COMPUTE STATISTICS; "
        f"ANALYZE TABLE {DB}.{TABLE} PARTITION (ds) COMPUTE STATISTICS FOR ALL COLUMNS; "
        f"DESCRIBE FORMATTED {DB}.{TABLE} PARTITION (ds='{PARTITIONS[0]}') name; "
        f"DESCRIBE FORMATTED {DB}.{TABLE} id;"
    )
    shell = subprocess.run([sys.executable, "-m", "metastore.sql", "--connect", uri, "--output", "json", "-e",
                            statements], capture_output=True, text=True, timeout=300, env=env, input="")
    assert shell.returncode == 0, shell.stderr
    basic, columns, described_name, described_id = (json.loads(line) for line in shell.stdout.splitlines())
    assert [(r["partition"], r["num_rows"]) for r in basic] == [(f"ds={ds}", ROWS_PER_PARTITION) for ds in PARTITIONS]
    assert [r["files_read"] + r["files_reused"] for r in columns] == [r["num_files"] for r in columns]

    names = [f"ds={ds}" for ds in PARTITIONS]
    reader = tmp_path / "pymetastore_read_stats.py"
    reader.write_text(PYMETASTORE_SCRIPT)
    read = run_in_venv(CLIENTS["pymetastore"], reader, [host, str(port), DB, TABLE, *names])
    for ds, name in zip(PARTITIONS, names, strict=True):
        for column, hive_type in COLUMN_TYPES.items():
            got = read["partitions"][name][column]
            member = next(v for v in got.values() if v is not None)
            renamed = {"numDVs": "cardinality"}
            stats = {renamed.get(k, k): v for k, v in member.items()}
            assert_matches(stats, truth(data[ds].column(column), hive_type), 0.02, f"{name} {column}")
    whole = pa.concat_tables(list(data.values()))
    for column, hive_type in COLUMN_TYPES.items():
        assert_matches(read["table"][column], truth(whole.column(column), hive_type), 0.04, f"table {column}")
    assert read["parameters"]["numRows"] == str(ROWS_PER_PARTITION)
    assert json.loads(read["parameters"]["COLUMN_STATS_ACCURATE"])["BASIC_STATS"] == "true"

    # DESCRIBE shows what the outside client reads
    name_stats = read["partitions"][names[0]]["name"]["stringStats"]
    assert described_name == [{
        "col_name": "name", "data_type": "string", "min": "", "max": "", "num_nulls": name_stats["numNulls"],
        "distinct_count": name_stats["numDVs"], "avg_col_len": name_stats["avgColLen"],
        "max_col_len": name_stats["maxColLen"], "num_trues": "", "num_falses": "", "bitVector": "", "comment": "",
    }]
    id_stats = read["table"]["id"]
    row = described_id[0]
    assert (row["min"], row["max"], row["num_nulls"], row["distinct_count"]) == (
        id_stats["lowValue"], id_stats["highValue"], id_stats["numNulls"], id_stats["cardinality"],
    )

