"""The shell against a running `metastore serve` (Thrift): the same statements as embedded, statistics computed in
the shell's process and persisted through set_aggr_stats_for / alter_partitions, read back through Thrift."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from server.harness import ServerProcess, start_server

from metastore.client import ThriftMetastoreClient
from metastore.locations import local_path
from sql.ground_truth import COLUMNS, CREATE_COLUMNS, expected, make_table, write_csv, write_pyarrow_orc
from sql.session import SqlSession
from sql.test_analyze import check

HIVE_TYPES = {name: hive for name, hive, _ in COLUMNS}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    workdir = tmp_path_factory.mktemp("sql-server")
    proc = start_server(workdir, f"sqlite:///{workdir / 'ms.db'}", workers=2)
    yield proc
    proc.stop()


@pytest.fixture
def remote(server: ServerProcess) -> Iterator[ThriftMetastoreClient]:
    with ThriftMetastoreClient(f"thrift://127.0.0.1:{server.port}") as client:
        yield client


def test_statements_through_the_server(remote: ThriftMetastoreClient, server: ServerProcess, tmp_path: Path) -> None:
    session = SqlSession(remote, tmp_path / "cache.sqlite")
    session.run(
        f"CREATE DATABASE remote_db; USE remote_db; CREATE TABLE sales ({CREATE_COLUMNS}) PARTITIONED BY (ds string) "
        "STORED AS ORC TBLPROPERTIES ('orc.compress'='ZSTD')"
    )
    location = local_path(remote.get_table("remote_db", "sales").sd.location)
    assert location.is_dir(), "the server created the table's folder, the shell writes into it"
    rng = np.random.default_rng(99)
    ours, theirs = make_table(rng, 5000, 4000), make_table(rng, 5000, 4000)
    write_csv(ours, tmp_path / "ours.csv")
    session.run(f"LOAD DATA LOCAL INPATH '{tmp_path / 'ours.csv'}' INTO TABLE sales PARTITION (ds='a')")
    write_pyarrow_orc(theirs, location / "ds=b" / "part-0.orc")
    assert session.one("MSCK REPAIR TABLE sales").message == "1 partition(s) added"

    result = session.one("ANALYZE TABLE sales PARTITION (ds='a') COMPUTE STATISTICS FOR COLUMNS")
    assert [r[:3] for r in result.rows] == [["ds=a", 5000, 1]]
    found = remote.partition_statistics("remote_db", "sales", ["ds=a", "ds=b"], list(HIVE_TYPES))
    assert list(found) == ["ds=a"]
    stats = {e.column: e.stats for e in found["ds=a"]}
    for column, hive in HIVE_TYPES.items():
        check(stats[column], expected(ours.column(column), hive), 0.02, f"ds=a {column}")
    part = remote.get_partition("remote_db", "sales", ["a"])
    assert part.parameters["numRows"] == "5000"
    assert json.loads(part.parameters["COLUMN_STATS_ACCURATE"])["BASIC_STATS"] == "true"

    session.run("ANALYZE TABLE sales COMPUTE STATISTICS FOR ALL COLUMNS")
    found = remote.partition_statistics("remote_db", "sales", ["ds=a", "ds=b"], list(HIVE_TYPES))
    stats = {e.column: e.stats for e in found["ds=b"]}
    for column, hive in HIVE_TYPES.items():
        check(stats[column], expected(theirs.column(column), hive), 0.02, f"ds=b {column}")
    import pyarrow as pa

    whole = pa.concat_tables([ours, theirs])
    table_level = {e.column: e.stats for e in remote.table_statistics("remote_db", "sales", list(HIVE_TYPES))}
    for column, hive in HIVE_TYPES.items():
        check(table_level[column], expected(whole.column(column), hive), 0.04, f"table {column}")
    # the server's own aggregation of the stored partition sketches agrees with the shell's merge
    aggregated = remote.aggregate_statistics("remote_db", "sales", ["ds=a", "ds=b"], ["id", "name"])
    by_column = {e.column: e.stats for e in aggregated.entries}
    assert by_column["id"].num_dvs == table_level["id"].num_dvs
    assert by_column["name"].num_dvs == table_level["name"].num_dvs

    row = session.rows("DESCRIBE FORMATTED sales PARTITION (ds='b') qty")[0]
    want = expected(theirs.column("qty"), "int")
    assert (row["min"], row["max"], row["num_nulls"]) == (want.low, want.high, want.num_nulls)
    assert row["bitVector"] == "", "the server does not send sketches unless started with --fetch-bitvector"


def test_shell_subprocess_with_connect(server: ServerProcess, tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("METASTORE_")}
    env["METASTORE_ANALYZE_CACHE"] = str(tmp_path / "cache.sqlite")
    script = (
        "CREATE DATABASE IF NOT EXISTS cli_db; USE cli_db; CREATE TABLE t (k string, v double) PARTITIONED BY (p int);"
        "INSERT INTO t PARTITION (p=1) VALUES ('a', 1.5), ('b', NULL), ('a', -2);"
        "INSERT INTO t PARTITION (p=2) VALUES ('c', 10);"
        "ANALYZE TABLE t PARTITION (p) COMPUTE STATISTICS FOR COLUMNS v, k;"
        "DESCRIBE FORMATTED t v; DESCRIBE FORMATTED t PARTITION (p=1) k;"
    )
    proc = subprocess.run(
        [sys.executable, "-m", "metastore.sql", "--connect", f"thrift://127.0.0.1:{server.port}", "--output", "json",
         "-e", script],
        capture_output=True, text=True, timeout=120, env=env, input="",
    )
    assert proc.returncode == 0, proc.stderr
    analyzed, table_v, part_k = (json.loads(line) for line in proc.stdout.splitlines())
    assert [(r["partition"], r["num_rows"]) for r in analyzed] == [("p=1", 3), ("p=2", 1)]
    assert (table_v[0]["min"], table_v[0]["max"], table_v[0]["num_nulls"], table_v[0]["distinct_count"]) == (
        -2.0, 10.0, 1, 3,
    )
    assert (part_k[0]["distinct_count"], part_k[0]["avg_col_len"], part_k[0]["max_col_len"]) == (2, 1.0, 1)
