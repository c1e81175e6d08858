"""One call script, run with our generated Thrift client against any HMS-compatible server, recording every answer.

The differential test runs it against our server and the reference Hive Metastore 2.3.10 and compares the two
recordings step by step. It is the outside clients' scenario (scenario_common) plus the calls Spark's JVM client
makes (set_ugi, get_table_req, *_with_environment_context, get_partitions_ps_with_auth, ...) and the Hive 4 calls
a 2.3 server does not have.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport

from interop.scenarios.scenario_common import (
    PARTITION_NAMES,
    TABLE_STATS,
    Names,
    Recorder,
    Scenario,
    all_types_table,
    column_statistics,
    normalise_column_statistics,
    normalise_partitions,
    normalise_table_stats_result,
)


def generated_api() -> tuple[Any, Any]:
    """Our generated ThriftHiveMetastore module and ttypes (metastore/api, from thrift/hive_metastore.thrift)."""
    from metastore.api.hive_metastore import ThriftHiveMetastore, ttypes

    return ThriftHiveMetastore, ttypes


class _Connection:
    """A generated client whose socket can be replaced in place after a reply that could not be decoded."""

    def __init__(self, service: Any, host: str, port: int, timeout_s: float = 60.0) -> None:
        self.host, self.port, self.timeout_s = host, port, timeout_s
        self.transport: TTransport.TBufferedTransport | None = None
        self.client = service.Client(self._open())

    def _open(self) -> TBinaryProtocol.TBinaryProtocol:
        sock = TSocket.TSocket(self.host, self.port)
        sock.setTimeout(self.timeout_s * 1000)
        self.transport = TTransport.TBufferedTransport(sock)
        self.transport.open()
        return TBinaryProtocol.TBinaryProtocol(self.transport)

    def reconnect(self) -> None:
        self.close()
        proto = self._open()
        self.client._iprot = self.client._oprot = proto

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()


@contextmanager
def connect(host: str, port: int) -> Iterator[_Connection]:
    service, _ = generated_api()
    conn = _Connection(service, host, port)
    try:
        yield conn
    finally:
        conn.close()


def run_differential_calls(host: str, port: int, prefix: str = "diff") -> list[dict[str, Any]]:
    """Run every call against host:port with our generated client; return the recorded steps."""
    _, T = generated_api()
    names = Names(prefix)
    with connect(host, port) as conn:
        rec = Recorder("metastore.api", reconnect=conn.reconnect)
        c = conn.client
        sc = Scenario(rec, c, T, names)
        rec.step("set_ugi", lambda: sorted(c.set_ugi("interop", ["staff"])))
        sc.databases()
        table = sc.table()
        sc.partitions(table)
        jvm_client_calls(rec, c, T, names, table)
        sc.missing_stats()
        sc.write_stats()
        sc.read_stats()
        sc.merge_stats()
        sc.errors()
        sc.deletes()
        hive4_calls(rec, c, T, names)
        sc.cleanup()
    return rec.steps


def jvm_client_calls(rec: Recorder, c: Any, T: Any, n: Names, table: Any) -> None:
    """The calls Spark's Hive 2.3 client makes (seen in the reference's audit log), beyond the scenario's."""
    rec.step("get_databases_pattern", lambda: sorted(c.get_databases(f"{n.db[:4]}*")))
    rec.step("get_tables_pattern", lambda: sorted(c.get_tables(n.db, "all_*")))
    rec.step(
        "get_table_req",
        lambda: c.get_table_req(T.GetTableRequest(dbName=n.db, tblName=n.table)).table,
    )
    rec.step(
        "get_table_req_missing",
        lambda: c.get_table_req(T.GetTableRequest(dbName=n.db, tblName=n.missing_table)),
    )
    rec.step("get_schema", lambda: c.get_schema(n.db, n.table))
    rec.step("get_fields", lambda: c.get_fields(n.db, n.table))
    env = T.EnvironmentContext(properties={"interop": "yes"})
    small = all_types_table(T, n)
    small.tableName = "env_table"
    small.partitionKeys = []
    rec.step(
        "create_table_with_environment_context", lambda: c.create_table_with_environment_context(small, env)
    )
    if table is not None:
        altered = copy.deepcopy(table)
        altered.parameters = {**(altered.parameters or {}), "spark.sql.statistics.colStats.c_int.max": "7"}
        rec.step("alter_table", lambda: c.alter_table(n.db, n.table, altered))
        rec.step(
            "get_table_after_alter",
            lambda: {
                k: v
                for k, v in c.get_table(n.db, n.table).parameters.items()
                if k.startswith(("spark.", "comment"))
            },
        )
    rec.step(
        "get_partitions_ps_with_auth",
        lambda: c.get_partitions_ps_with_auth(n.db, n.table, ["2024-01-02"], -1, "interop", ["staff"]),
        normalise_partitions,
    )
    rec.step(
        "get_partitions_by_names",
        lambda: c.get_partitions_by_names(
            n.db, n.table, [PARTITION_NAMES[0], PARTITION_NAMES[2], "ds=1999-01-01"]
        ),
        normalise_partitions,
    )
    rec.step("get_partition_names_max_2", lambda: sorted(c.get_partition_names(n.db, n.table, 2)))
    rec.step(
        "drop_table_with_environment_context",
        lambda: c.drop_table_with_environment_context(n.db, "env_table", True, env),
    )
    rec.step("get_all_tables_after_env_drop", lambda: sorted(c.get_all_tables(n.db)))


def hive4_calls(rec: Recorder, c: Any, T: Any, n: Names) -> None:
    """Hive 4 statistics calls and types: a 2.3 server knows none of them."""
    one = {"c_bigint": TABLE_STATS["c_bigint"]}
    rec.step(
        "update_table_column_statistics_req",
        lambda: c.update_table_column_statistics_req(
            T.SetPartitionsStatsRequest(colStats=[column_statistics(T, n.db, n.table, one)], engine="hive")
        ),
    )
    rec.step(
        "update_partition_column_statistics_req",
        lambda: c.update_partition_column_statistics_req(
            T.SetPartitionsStatsRequest(
                colStats=[column_statistics(T, n.db, n.table, one, PARTITION_NAMES[2])], engine="hive"
            )
        ),
    )
    rec.step(
        "get_table_statistics_req_engine",
        lambda: c.get_table_statistics_req(
            T.TableStatsRequest(
                dbName=n.db, tblName=n.table, colNames=["c_bigint"], engine="hive", catName="hive"
            )
        ),
        normalise_table_stats_result,
    )
    rec.step(
        "delete_column_statistics_req",
        lambda: c.delete_column_statistics_req(
            T.DeleteColumnStatisticsRequest(
                db_name=n.db, tbl_name=n.table, col_names=["c_bigint"], tableLevel=True
            )
        ),
    )
    # Hive 4's timestampStats (union member 8). A 2.3 server cannot decode the union member and drops the call.
    ts = {
        "c_timestamp": (
            "timestampStats",
            {"lowValue": 1_600_000_000, "highValue": 1_650_000_000, "numNulls": 0, "numDVs": 9},
        )
    }
    rec.step(
        "update_table_column_statistics_timestamp_stats",
        lambda: c.update_table_column_statistics(column_statistics(T, n.db, n.table, ts)),
    )
    rec.step(
        "get_table_column_statistics_timestamp_stats",
        lambda: c.get_table_column_statistics(n.db, n.table, "c_timestamp"),
        normalise_column_statistics,
    )
