"""Proof on a real Spark standalone cluster and a Spark Connect server (issue 10 section 4): `metastore
spark-analyze` over a partitioned zstd table written by Spark writes, through our Thrift server, exactly what the
shell's in-process ANALYZE computes (every field and sketch byte), within ground truth computed with pyarrow/numpy;
a retried task counts once; a re-run after one partition changed reads only that partition's files; a corrupt file
fails its partition only.

One cluster (a master, a worker with executors in their own JVMs) and one Connect server serve the whole module.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.orc as po
import pytest
from interop.our_server import OurServer, start_our_server
from spark_cluster import Cluster, ConnectServer, start_cluster, start_connect_server
from sql.ground_truth import expected
from sql.session import SqlSession
from sql.test_analyze import check

from metastore.client import ThriftMetastoreClient
from metastore.client.embedded import EmbeddedMetastoreClient
from metastore.spark.tasks import FAIL_FIRST_ATTEMPT_ENV
from metastore.stats.model import ColumnStats

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROWS = 1_000_000
DAYS = [f"2024-01-0{d}" for d in range(1, 9)]
COLUMNS = {"id": "bigint", "name": "string", "code": "string", "amount": "double", "price": "decimal(10,2)",
           "flag": "boolean", "day": "date", "ts": "timestamp", "qty": "int", "blob": "binary"}
APP_CONF = ["--conf", "spark.cores.max=2", "--conf", "spark.executor.memory=1g", "--conf", "spark.driver.memory=1g"]


@pytest.fixture(scope="module")
def table_dir(spark, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The table as Spark writes it: partitioned by ds, zstd, up to three files per partition."""
    from pyspark.sql import functions as F  # noqa: N812

    root = tmp_path_factory.mktemp("spark-table") / "events"
    df = spark.range(0, ROWS, 1, 8).selectExpr(
        "CASE WHEN id % 20 = 0 THEN NULL ELSE (id * 2654435761) % 4000000000 END AS id",
        "concat('name-', CAST((id * 7919) % 250000 AS STRING)) AS name",
        "CASE WHEN id % 10 = 3 THEN NULL ELSE concat('c', CAST(id % 97 AS STRING)) END AS code",
        "CASE WHEN id % 5 = 1 THEN NULL ELSE CAST((id * 48271) % 100000 AS DOUBLE) / 7 - 5000 END AS amount",
        "CAST(((id * 31) % 2000000) / 100.0 AS DECIMAL(10,2)) AS price",
        "CASE WHEN id % 9 = 0 THEN NULL ELSE (id % 3 = 0) END AS flag",
        "date_add(DATE'2000-01-01', CAST(id % 9000 AS INT)) AS day",
        "timestamp_seconds(1600000000 + (id * 13) % 50000000) AS ts",
        "CAST(id % 1000 AS INT) AS qty",
        "CASE WHEN id % 7 = 0 THEN NULL ELSE unhex(hex(id % 65536)) END AS blob",
        "concat('2024-01-0', CAST(id % 8 + 1 AS STRING)) AS ds",
    )
    df.repartition(24, "ds", F.expr("id % 3")).write.option("compression", "zstd").partitionBy("ds").orc(str(root))
    return root


def _create_table(session: SqlSession, location: Path, name: str = "events") -> None:
    session.run("CREATE DATABASE IF NOT EXISTS sales")
    cols = ", ".join(f"{k} {v}" for k, v in COLUMNS.items())
    session.run(f"CREATE EXTERNAL TABLE sales.{name} ({cols}) PARTITIONED BY (ds string) STORED AS ORC "
                f"LOCATION '{location}' TBLPROPERTIES ('orc.compress'='ZSTD')")
    session.run(f"MSCK REPAIR TABLE sales.{name}")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OurServer]:
    workdir = tmp_path_factory.mktemp("metastore-server")
    # sketches returned, and timestamps as Hive 4's timestampStats (what the embedded in-process run reads back)
    process = start_our_server(workdir, f"sqlite:///{workdir / 'ms.db'}", extra_args=["--workers", "2",
                                                                                      "--fetch-bitvector"],
                               env={"METASTORE_STATS_TIMESTAMP_AS_LONG": "false"})
    try:
        yield process
    finally:
        process.stop()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    running = start_cluster(tmp_path_factory.mktemp("spark-cluster"), cores=4, memory="4g")
    try:
        yield running
    finally:
        running.stop()


@pytest.fixture(scope="module")
def connect_server(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[ConnectServer]:
    running = start_connect_server(tmp_path_factory.mktemp("spark-connect"), cluster.master_url,
                                   {"spark.cores.max": "2", "spark.executor.memory": "1g"})
    try:
        yield running
    finally:
        running.stop()


def in_process(location: Path, tmp_path: Path, name: str = "events") -> tuple[dict, dict]:
    """The shell's in-process ANALYZE of the same files (embedded metastore): (per partition, table) stats."""
    client = EmbeddedMetastoreClient(f"sqlite:///{tmp_path / 'local.db'}", str(tmp_path / "wh"))
    try:
        session = SqlSession(client, None)
        _create_table(session, location, name)
        session.run(f"ANALYZE TABLE sales.{name} COMPUTE STATISTICS FOR COLUMNS")
        return stored(client, name)
    finally:
        client.close()


def stored(client, name: str = "events") -> tuple[dict, dict]:
    names = client.list_partition_names("sales", name)
    parts = client.partition_statistics("sales", name, names, list(COLUMNS))
    table = {e.column: e.stats for e in client.table_statistics("sales", name, list(COLUMNS))}
    return {n: {e.column: e.stats for e in entries} for n, entries in parts.items()}, table


def differences(got: tuple[dict, dict], want: tuple[dict, dict]) -> list[str]:
    """Where two (per partition, table) statistics differ: 'partition column field' (empty when equal)."""
    out = []
    pairs = [(name, got[0].get(name, {}), want[0].get(name, {})) for name in sorted({*got[0], *want[0]})]
    pairs.append(("table", got[1], want[1]))
    for name, a, b in pairs:
        for column in sorted({*a, *b}):
            x, y = a.get(column), b.get(column)
            if x == y:
                continue
            if x is None or y is None or type(x) is not type(y):
                out.append(f"{name} {column}: {type(x).__name__} != {type(y).__name__}")
                continue
            for field in vars(x):
                if getattr(x, field) != getattr(y, field):
                    out.append(f"{name} {column} {field}: {str(getattr(x, field))[:80]} != "
                               f"{str(getattr(y, field))[:80]}")
    return out


def spark_analyze(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    command = [str(Path(sys.executable).with_name("metastore")), "spark-analyze", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env={**os.environ, **(env or {})})


def assert_ground_truth(location: Path, partitions: dict[str, dict[str, ColumnStats]],
                        table: dict[str, ColumnStats]) -> None:
    tables = {}
    for name, stats in partitions.items():
        files = sorted((location / name).glob("*.orc"))
        data = pa.concat_tables([po.read_table(str(f)) for f in files])
        tables[name] = data
        for column, hive in COLUMNS.items():
            check(stats[column], expected(data.column(column), hive), 0.02, f"{name} {column}")
    everything = pa.concat_tables(tables.values())
    for column, hive in COLUMNS.items():
        check(table[column], expected(everything.column(column), hive), 0.04, f"table {column}")


def test_cluster_run_equals_in_process_and_ground_truth(table_dir: Path, server: OurServer, cluster: Cluster,
                                                         tmp_path: Path) -> None:
    uri = f"thrift://127.0.0.1:{server.port}"
    with ThriftMetastoreClient(uri) as client:
        _create_table(SqlSession(client, None), table_dir)
    # the first attempts of tasks 0 and 1 fail after their first file: Spark retries them on the cluster
    result = spark_analyze("sales.events", "--master", cluster.master_url, "--metastore", uri, "--no-stats-cache",
                           "--output", "json", *APP_CONF, env={FAIL_FIRST_ATTEMPT_ENV: "0,1"})
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)
    assert [r["partition"] for r in rows] == [f"ds={d}" for d in DAYS]
    assert sum(r["num_rows"] for r in rows) == ROWS
    assert "analyzed 8 partition(s) of sales.events on Spark, 10 column(s)" in result.stderr
    logs = cluster.executor_logs()
    assert "injected failure of task 0" in logs and "injected failure of task 1" in logs
    with ThriftMetastoreClient(uri) as client:
        got = stored(client)
        params = client.get_partition("sales", "events", [DAYS[0]]).parameters
    want = in_process(table_dir, tmp_path)
    assert differences(got, want) == []  # every field and every sketch byte, per partition and for the table
    assert params["numRows"] == str(ROWS // 8) and json.loads(params["COLUMN_STATS_ACCURATE"])["BASIC_STATS"]
    assert_ground_truth(table_dir, got[0], got[1])


def test_rerun_after_one_partition_changed_reads_only_its_files(table_dir: Path, server: OurServer,
                                                               cluster: Cluster, tmp_path: Path) -> None:
    """Per-file results live in the metastore (the default with a thrift:// metastore): a re-run from Spark, and
    then the shell on another 'host' (no local cache), read only what changed."""
    copy = tmp_path / "events"
    shutil.copytree(table_dir, copy, copy_function=os.link)
    uri = f"thrift://127.0.0.1:{server.port}"
    with ThriftMetastoreClient(uri) as client:
        _create_table(SqlSession(client, None), copy, "events_changing")
    args = ["sales.events_changing", "--master", cluster.master_url, "--metastore", uri, "--output", "json",
            *APP_CONF]
    first = spark_analyze(*args)
    assert first.returncode == 0, first.stderr
    assert all(r["files_reused"] == 0 for r in json.loads(first.stdout))
    changed = f"ds={DAYS[3]}"
    rng = np.random.default_rng(5)
    extra = po.read_table(str(sorted((copy / changed).glob("*.orc"))[0])).slice(0, 1000)
    extra = extra.set_column(extra.schema.get_field_index("qty"), "qty", pa.array(rng.integers(5000, 6000, 1000),
                                                                                    pa.int32()))
    po.write_table(extra, str(copy / changed / "part-99999-new.zstd.orc"), compression="zstd")
    second = spark_analyze(*args)
    assert second.returncode == 0, second.stderr
    rows = {r["partition"]: r for r in json.loads(second.stdout)}
    assert {p: r["files_read"] for p, r in rows.items() if r["files_read"]} == {changed: 1}
    assert all(r["files_reused"] == r["num_files"] - (1 if p == changed else 0) for p, r in rows.items())
    with ThriftMetastoreClient(uri) as client:
        got = stored(client, "events_changing")
    want = in_process(copy, tmp_path, "events_changing")
    assert differences(got, want) == []
    assert got[0][changed]["qty"].high == int(pc.max(extra.column("qty")).as_py())
    shell = subprocess.run(
        [str(Path(sys.executable).with_name("metastore")), "sql", "--connect", uri, "--output", "json", "-e",
         "ANALYZE TABLE sales.events_changing COMPUTE STATISTICS FOR COLUMNS;"],
        capture_output=True, text=True, timeout=600, env={**os.environ, "HOME": str(tmp_path / "other-host"),
                                                          "XDG_CACHE_HOME": str(tmp_path / "other-host")},
    )
    assert shell.returncode == 0, shell.stderr
    assert "0 file(s) read" in shell.stderr and all(r["files_read"] == 0 for r in json.loads(shell.stdout))


def test_spark_connect_run_equals_in_process(table_dir: Path, server: OurServer, connect_server: ConnectServer,
                                             tmp_path: Path) -> None:
    uri = f"thrift://127.0.0.1:{server.port}"
    with ThriftMetastoreClient(uri) as client:
        _create_table(SqlSession(client, None), table_dir, "events_connect")
    result = spark_analyze("sales.events_connect", "--master", connect_server.url, "--metastore", uri,
                           "--no-stats-cache", "--output", "json")
    assert result.returncode == 0, result.stderr + connect_server.log_tail()
    assert len(json.loads(result.stdout)) == 8
    with ThriftMetastoreClient(uri) as client:
        got = stored(client, "events_connect")
    assert differences(got, in_process(table_dir, tmp_path, "events_connect")) == []


def test_spark_connect_corrupt_file_fails_its_partition_only(table_dir: Path, server: OurServer,
                                                            connect_server: ConnectServer, tmp_path: Path) -> None:
    copy = tmp_path / "events"
    shutil.copytree(table_dir, copy, copy_function=os.link)
    bad = copy / f"ds={DAYS[5]}" / "part-00042-corrupt.orc"
    bad.write_bytes(b"ORC" + bytes(range(256)) * 40)
    uri = f"thrift://127.0.0.1:{server.port}"
    with ThriftMetastoreClient(uri) as client:
        _create_table(SqlSession(client, None), copy, "events_bad")
    result = spark_analyze("sales.events_bad", "--master", connect_server.url, "--metastore", uri,
                           "--no-stats-cache", "--columns", "id,name", "--output", "json")
    assert result.returncode == 1
    assert f"1 partition(s) failed, nothing written for them: ds={DAYS[5]}: cannot analyze {bad}" in result.stderr
    assert [r["partition"] for r in json.loads(result.stdout)] == [f"ds={d}" for d in DAYS if d != DAYS[5]]
    with ThriftMetastoreClient(uri) as client:
        names = client.list_partition_names("sales", "events_bad")
        written = client.partition_statistics("sales", "events_bad", names, ["id", "name"])
    assert sorted(written) == [f"ds={d}" for d in DAYS if d != DAYS[5]]
