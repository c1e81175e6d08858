"""One call script, run with our generated Thrift client against any HMS-compatible server, recording every answer.

The differential test runs it against our server and the reference Hive Metastore 2.3.10 and compares the two
recordings step by step. It is the outside clients' scenario (scenario_common) plus the calls Spark's JVM client
makes (set_ugi, get_table_req, *_with_environment_context, get_partitions_ps_with_auth, ...) and the Hive 4 calls
a 2.3 server does not have.
"""

from __future__ import annotations

import copy
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from thrift.protocol import TBinaryProtocol
from thrift.transport import TSocket, TTransport

from interop.differential_catalog_semantics import catalog_semantics_calls
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
    orc_storage,
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
        catalog_calls(rec, c, T, names, lambda: connect(host, port))
        catalog_semantics_calls(rec, c, T, names)
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


def _names(value: Any) -> list[str]:
    return sorted(value)


def _table_meta(metas: Any) -> list[tuple[str, str, str]]:
    return sorted((m.dbName, m.tableName, m.tableType) for m in metas)


def _with_ddl_time(params: dict[str, str]) -> dict[str, Any]:
    """Parameters with transient_lastDdlTime's value masked (it is the server's clock) but its presence kept."""
    return {k: ("<server clock>" if k == "transient_lastDdlTime" else v) for k, v in sorted(params.items())}


def _function(T: Any, db: str, name: str, cls: str = "org.example.Upper") -> Any:
    return T.Function(
        functionName=name, dbName=db, className=cls, ownerName="interop", ownerType=T.PrincipalType.USER,
        createTime=0, functionType=T.FunctionType.JAVA,
        resourceUris=[T.ResourceUri(resourceType=T.ResourceType.JAR, uri="file:/tmp/interop-udf.jar")],
    )


def catalog_calls(rec: Recorder, c: Any, T: Any, n: Names, second_connection: Any) -> None:
    """The catalog behaviour of issue 14 (locations, transient_lastDdlTime, partition keys among the columns,
    name patterns, partition and table filters with LIKE, rename_partition, functions, legacy types and
    per-connection get/setMetaConf), in a database of its own with an explicit location outside either
    server's warehouse, so that the two servers' answers (paths included) compare as they are."""
    db = f"{n.db}_catalog"
    base = f"{tempfile.gettempdir()}/{db}"
    rec.step(
        "catalog_create_database_unqualified_location",
        lambda: c.create_database(T.Database(name=db, description="catalog", locationUri=f"{base}/db", parameters={})),
    )
    rec.step("catalog_database_location", lambda: c.get_database(db).locationUri)

    table = T.Table(
        tableName="events", dbName=db, owner="interop", createTime=0, lastAccessTime=0, retention=0,
        sd=orc_storage(T, [("id", "bigint"), ("name", "string")]),
        partitionKeys=[T.FieldSchema(name="ds", type="string", comment=None)],
        parameters={"team": "stats", "tier": "gold"}, tableType="MANAGED_TABLE",
    )
    rec.step("catalog_create_table", lambda: c.create_table(table))
    rec.step("catalog_table_location", lambda: c.get_table(db, "events").sd.location)
    rec.step("catalog_table_parameters", lambda: _with_ddl_time(c.get_table(db, "events").parameters))
    # Altered with the DDL time the client read back: Hive 2.3 keeps it (it renews only a missing one).
    rec.step(
        "catalog_alter_table_keeping_ddl_time",
        lambda: c.alter_table(db, "events", copy.deepcopy(c.get_table(db, "events"))),
    )
    rec.step("catalog_table_parameters_after_alter", lambda: _with_ddl_time(c.get_table(db, "events").parameters))
    # Hive's own tests create tables whose partition keys are also data columns; Hive accepts them.
    key_in_cols = copy.deepcopy(table)
    key_in_cols.tableName = "key_in_cols"
    key_in_cols.sd = orc_storage(T, [("id", "bigint"), ("ds", "string")])
    # Both tables carry both parameters: HMS 2.3's JDO query joins one parameter row per key named in a table
    # filter, so a table lacking any of them drops out even from an OR branch that does not need it (ours does not).
    key_in_cols.parameters = {"tier": "silver", "team": "ops"}
    rec.step("catalog_create_table_partition_key_among_columns", lambda: c.create_table(key_in_cols))
    rec.step("catalog_get_fields_key_among_columns", lambda: c.get_fields(db, "key_in_cols"))

    def add(value: str) -> Any:
        part = T.Partition(values=[value], dbName=db, tableName="events", sd=orc_storage(T, [("id", "bigint"), ("name", "string")]), parameters={})
        return c.add_partition(part)

    for value in ("2024-01-01", "2024-01-02", "2025-06-30"):
        rec.step(f"catalog_add_partition_{value}", lambda v=value: add(v).sd.location)
    rec.step(
        "catalog_partition_parameters",
        lambda: _with_ddl_time(c.get_partition(db, "events", ["2024-01-01"]).parameters),
    )
    rec.step(
        "catalog_partitions_by_filter_like",
        lambda: sorted(tuple(p.values) for p in c.get_partitions_by_filter(db, "events", 'ds like "2024.*"', -1)),
    )
    # Only `.` and `.*` in these patterns: HMS 2.3 on Derby hands LIKE to DataNucleus, which turns the regular
    # expression into SQL LIKE and matches nothing for classes such as [12] (ours evaluates the whole regex).
    rec.step("catalog_num_partitions_by_filter_like", lambda: c.get_num_partitions_by_filter(db, "events", 'ds like ".*-0.-.*"'))

    def rename() -> Any:
        part = c.get_partition(db, "events", ["2024-01-02"])
        part.values = ["2024-02-02"]  # the old location stays in the object, as HiveMetaStoreClient sends it
        return c.rename_partition(db, "events", ["2024-01-02"], part)

    rec.step("catalog_rename_partition", rename)
    rec.step("catalog_renamed_partition_location", lambda: c.get_partition(db, "events", ["2024-02-02"]).sd.location)
    rec.step("catalog_renamed_partition_names", lambda: sorted(c.get_partition_names(db, "events", -1)))

    rec.step("catalog_get_databases_regex", lambda: _names(c.get_databases(f"{db}|no_such_db")))
    rec.step("catalog_get_databases_dot_star", lambda: db in c.get_databases(".*"))
    rec.step("catalog_get_tables_dot_star", lambda: _names(c.get_tables(db, ".*")))
    rec.step("catalog_get_tables_alternatives", lambda: _names(c.get_tables(db, "ev.*|key_*")))
    rec.step("catalog_get_table_meta", lambda: _table_meta(c.get_table_meta(db, "*", None)))

    def by_filter(text: str) -> Any:
        return _names(c.get_table_names_by_filter(db, text, -1))

    owner, access, params = "hive_filter_field_owner__", "hive_filter_field_last_access__", "hive_filter_field_params__"
    rec.step("catalog_table_filter_owner", lambda: by_filter(f'{owner} = "interop"'))
    rec.step("catalog_table_filter_owner_like", lambda: by_filter(f'{owner} like "inter.*"'))
    rec.step("catalog_table_filter_last_access", lambda: by_filter(f"{access} < 1"))
    rec.step("catalog_table_filter_params_like", lambda: by_filter(f'{params}tier like "g.*"'))
    rec.step("catalog_table_filter_params_and_or", lambda: by_filter(f'{params}tier = "silver" or ({owner} = "interop" and {params}team = "stats")'))
    rec.step("catalog_table_filter_bad_key", lambda: by_filter('badKey = "x"'))
    rec.step("catalog_table_filter_params_lt", lambda: by_filter(f'{params}tier < "x"'))

    rec.step("catalog_create_function", lambda: c.create_function(_function(T, db, "upper_x")))
    rec.step("catalog_create_function_again", lambda: c.create_function(_function(T, db, "upper_x")))
    rec.step("catalog_create_function_missing_db", lambda: c.create_function(_function(T, f"{db}_none", "f")))
    rec.step("catalog_create_function_bad_name", lambda: c.create_function(_function(T, db, "bad-name")))
    rec.step("catalog_get_function", lambda: c.get_function(db, "upper_x"))
    rec.step("catalog_get_functions", lambda: c.get_functions(db, "up*"))
    rec.step(
        "catalog_get_all_functions",
        lambda: sorted((f.dbName, f.functionName, f.className) for f in c.get_all_functions().functions if f.dbName == db),
    )
    rec.step("catalog_alter_function", lambda: c.alter_function(db, "upper_x", _function(T, db, "upper_y", "org.example.Y")))
    rec.step("catalog_get_function_after_alter", lambda: c.get_function(db, "upper_y"))
    rec.step("catalog_alter_function_missing", lambda: c.alter_function(db, "nope", _function(T, db, "nope")))
    rec.step("catalog_get_function_missing", lambda: c.get_function(db, "upper_x"))
    rec.step("catalog_drop_function", lambda: c.drop_function(db, "upper_y"))
    rec.step("catalog_drop_function_missing", lambda: c.drop_function(db, "upper_y"))

    person = T.Type(name=f"{db}_Person", fields=[T.FieldSchema(name="name", type="string", comment=None), T.FieldSchema(name="age", type="int", comment="years")])
    rec.step("catalog_drop_type_before_create", lambda: c.drop_type(person.name))
    rec.step("catalog_create_type", lambda: c.create_type(person))
    rec.step("catalog_create_type_again", lambda: c.create_type(person))
    rec.step("catalog_create_type_bad_name", lambda: c.create_type(T.Type(name="no spaces")))
    rec.step("catalog_get_type", lambda: c.get_type(person.name))
    rec.step("catalog_get_type_other_case", lambda: c.get_type(person.name.lower()))
    rec.step("catalog_get_type_all", lambda: c.get_type_all(person.name))
    rec.step("catalog_drop_type", lambda: c.drop_type(person.name))
    rec.step("catalog_get_type_dropped", lambda: c.get_type(person.name))

    whitelist = "hive.metastore.partition.name.whitelist.pattern"
    rec.step("catalog_get_meta_conf_direct_sql", lambda: c.getMetaConf("hive.metastore.try.direct.sql"))
    rec.step("catalog_get_meta_conf_timeout", lambda: c.getMetaConf("hive.metastore.client.socket.timeout"))
    rec.step("catalog_get_meta_conf_unknown", lambda: c.getMetaConf("no.such.key"))
    rec.step("catalog_set_meta_conf", lambda: c.setMetaConf(whitelist, "[a-z0-9-]*"))
    rec.step("catalog_get_meta_conf_after_set", lambda: c.getMetaConf(whitelist))
    rec.step("catalog_set_meta_conf_unknown", lambda: c.setMetaConf("no.such.key", "1"))
    rec.step("catalog_set_meta_conf_bad_value", lambda: c.setMetaConf("hive.metastore.client.socket.timeout", "soon"))

    def other_connection() -> Any:
        with second_connection() as other:
            return other.client.getMetaConf(whitelist)

    rec.step("catalog_get_meta_conf_other_connection", other_connection)
    rec.step("catalog_drop_database", lambda: c.drop_database(db, True, True))
