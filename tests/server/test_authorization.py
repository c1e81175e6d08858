"""Authorization: every classified Thrift call x (allowed, denied) principal against a policy file, with the
principals authenticated by SASL PLAIN (password file, over TLS) against `metastore serve`.

The allowed principal holds only the permission the call needs; the denied one holds every other permission on
the same objects, so each cell proves that exactly that permission is required. A denied call answers a
MetaException naming the principal, the object and the permission, is logged with the peer address, and leaves
every row of the database as it was.
"""

from __future__ import annotations

import ssl
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import sqlalchemy as sa
from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TApplicationException
from thrift.transport import TSSLSocket

from metastore.api.hive_metastore import ThriftHiveMetastore
from metastore.api.hive_metastore import ttypes as tt
from metastore.client.sasl import SaslClientTransport, SaslCredentials
from metastore.client.sasl import negotiate as sasl_negotiate
from metastore.server import authorization
from metastore.server.authorization import METHOD_RULES, Permission, Policy, PolicyError, Target
from metastore.server.handler import Handler
from metastore.server.processor import _METHODS
from server import thrift_builders as b
from server.harness import ServerFailed, ServerProcess, metastore_exe, start_server
from server.test_tls import Pki, make_pki

DB, TBL = "m", "t"
COLS = [("a", "bigint"), ("s", "string")]
PASSWORD = "pw-of-every-test-user"  # a test password, in a file made by the test

USERS = ["reader", "writer", "ddler", "admin", "no_read", "no_write", "no_ddl", "no_admin", "outsider"]

POLICY = """
realm = "IGNORED.TEST"

[groups]
readers = ["reader"]

[[grants]]
groups = ["readers"]
databases = ["m*"]
permissions = ["read"]

[[grants]]
principals = ["reader"]
databases = ["shared"]
tables = ["open_*"]
permissions = ["read"]

[[grants]]
principals = ["writer"]
databases = ["m*"]
permissions = ["write_stats"]

[[grants]]
principals = ["ddler"]
databases = ["m*"]
permissions = ["ddl"]

[[grants]]
principals = ["admin"]
databases = ["*"]
permissions = ["admin"]

[[grants]]
principals = ["no_read"]
databases = ["m*"]
permissions = ["write_stats", "ddl"]

[[grants]]
principals = ["no_write"]
databases = ["m*"]
permissions = ["read", "ddl"]

[[grants]]
principals = ["no_ddl"]
databases = ["m*"]
permissions = ["read", "write_stats"]

[[grants]]
principals = ["no_admin"]
databases = ["*"]
permissions = ["read", "write_stats", "ddl"]
"""

ALLOWED = {Permission.READ: "reader", Permission.WRITE_STATS: "writer", Permission.DDL: "ddler",
           Permission.ADMIN: "admin"}
DENIED = {Permission.READ: "no_read", Permission.WRITE_STATS: "no_write", Permission.DDL: "no_ddl",
          Permission.ADMIN: "no_admin"}


def _long_stats(col: str = "a") -> list[tt.ColumnStatisticsObj]:
    return [b.obj(col, "bigint", b.data_long(1, 100, 0, 50))]


def _function(name: str, class_name: str = "org.example.F") -> tt.Function:
    return tt.Function(functionName=name, dbName=DB, className=class_name, ownerName="o", ownerType=1,
                       createTime=0, functionType=1, resourceUris=[])


def _ddl_altered_table(c: Any) -> tt.Table:
    t = c.get_table(DB, TBL)
    t.sd.cols.append(tt.FieldSchema(name="added", type="int"))
    return t


def _ddl_altered_partition(c: Any) -> tt.Partition:
    p = c.get_partition(DB, TBL, ["1"])
    p.parameters = {**(p.parameters or {}), "comment": "changed"}
    return p


def _stats_only_altered_table(c: Any) -> tt.Table:
    t = c.get_table(DB, TBL)
    t.parameters = {**(t.parameters or {}), "numRows": "42", "spark.sql.statistics.numRows": "42"}
    return t


def _new_partition(value: str) -> tt.Partition:
    return b.partition(DB, TBL, [value], COLS)


# method -> a function of an admin client returning the call's arguments (it may read the current state).
CALLS: dict[str, Callable[[Any], tuple]] = {
    "setOption": lambda c: ("k", "v"), "getCpuProfile": lambda c: (1,),
    "create_type": lambda c: (tt.Type(name="ty2", fields=[tt.FieldSchema(name="x", type="int")]),),
    "drop_type": lambda c: ("ty",),
    "create_database": lambda c: (b.database("m_new"),),
    "get_database": lambda c: (DB,),
    "drop_database": lambda c: (DB, False, True),
    "alter_database": lambda c: (DB, tt.Database(name=DB, description="changed", locationUri=c.get_database(DB).locationUri,
                                                 parameters={})),
    "create_function": lambda c: (_function("g"),),
    "drop_function": lambda c: (DB, "f"),
    "alter_function": lambda c: (DB, "f", _function("f", "org.example.G")),
    "get_functions": lambda c: (DB, "*"),
    "get_function": lambda c: (DB, "f"),
    "get_table": lambda c: (DB, TBL),
    "get_table_req": lambda c: (tt.GetTableRequest(dbName=DB, tblName=TBL),),
    "get_fields": lambda c: (DB, TBL),
    "get_fields_with_environment_context": lambda c: (DB, TBL, None),
    "get_schema": lambda c: (DB, TBL),
    "get_schema_with_environment_context": lambda c: (DB, TBL, None),
    "get_indexes": lambda c: (DB, TBL, 10),
    "get_index_names": lambda c: (DB, TBL, 10),
    "get_primary_keys": lambda c: (tt.PrimaryKeysRequest(db_name=DB, tbl_name=TBL),),
    "get_foreign_keys": lambda c: (tt.ForeignKeysRequest(foreign_db_name=DB, foreign_tbl_name=TBL),),
    "create_table": lambda c: (b.table(DB, "t2", COLS),),
    "create_table_with_environment_context": lambda c: (b.table(DB, "t2", COLS), None),
    "drop_table": lambda c: (DB, TBL, False),
    "drop_table_with_environment_context": lambda c: (DB, TBL, False, None),
    "alter_table": lambda c: (DB, TBL, _ddl_altered_table(c)),
    "alter_table_with_environment_context": lambda c: (DB, TBL, _ddl_altered_table(c), None),
    "alter_table_with_cascade": lambda c: (DB, TBL, _ddl_altered_table(c), False),
    "get_partition": lambda c: (DB, TBL, ["1"]),
    "get_partition_with_auth": lambda c: (DB, TBL, ["1"], "u", []),
    "get_partition_by_name": lambda c: (DB, TBL, "ds=1"),
    "get_partitions": lambda c: (DB, TBL, -1),
    "get_partitions_with_auth": lambda c: (DB, TBL, -1, "u", []),
    "get_partition_names": lambda c: (DB, TBL, -1),
    "get_partitions_ps": lambda c: (DB, TBL, ["1"], -1),
    "get_partitions_ps_with_auth": lambda c: (DB, TBL, ["1"], -1, "u", []),
    "get_partition_names_ps": lambda c: (DB, TBL, ["1"], -1),
    "get_partitions_by_filter": lambda c: (DB, TBL, 'ds = "1"', -1),
    "get_num_partitions_by_filter": lambda c: (DB, TBL, 'ds = "1"'),
    "get_partitions_by_names": lambda c: (DB, TBL, ["ds=1"]),
    "get_partitions_by_names_req": lambda c: (tt.GetPartitionsByNamesRequest(db_name=DB, tbl_name=TBL, names=["ds=1"]),),
    "get_partition_values": lambda c: (tt.PartitionValuesRequest(
        dbName=DB, tblName=TBL, partitionKeys=[tt.FieldSchema(name="ds", type="string")]),),
    "add_partition": lambda c: (_new_partition("2"),),
    "add_partition_with_environment_context": lambda c: (_new_partition("2"), None),
    "add_partitions": lambda c: ([_new_partition("2")],),
    "add_partitions_req": lambda c: (tt.AddPartitionsRequest(dbName=DB, tblName=TBL, parts=[_new_partition("2")],
                                                             ifNotExists=False),),
    "append_partition": lambda c: (DB, TBL, ["3"]),
    "append_partition_with_environment_context": lambda c: (DB, TBL, ["3"], None),
    "append_partition_by_name": lambda c: (DB, TBL, "ds=3"),
    "append_partition_by_name_with_environment_context": lambda c: (DB, TBL, "ds=3", None),
    "drop_partition": lambda c: (DB, TBL, ["1"], False),
    "drop_partition_with_environment_context": lambda c: (DB, TBL, ["1"], False, None),
    "drop_partition_by_name": lambda c: (DB, TBL, "ds=1", False),
    "drop_partition_by_name_with_environment_context": lambda c: (DB, TBL, "ds=1", False, None),
    "drop_partitions_req": lambda c: (tt.DropPartitionsRequest(dbName=DB, tblName=TBL,
                                                               parts=tt.RequestPartsSpec(names=["ds=1"])),),
    "alter_partition": lambda c: (DB, TBL, _ddl_altered_partition(c)),
    "alter_partition_with_environment_context": lambda c: (DB, TBL, _ddl_altered_partition(c), None),
    "alter_partitions": lambda c: (DB, TBL, [_ddl_altered_partition(c)]),
    "alter_partitions_with_environment_context": lambda c: (DB, TBL, [_ddl_altered_partition(c)], None),
    "rename_partition": lambda c: (DB, TBL, ["1"], _new_partition("9")),
    "get_table_column_statistics": lambda c: (DB, TBL, "a"),
    "get_partition_column_statistics": lambda c: (DB, TBL, "ds=1", "a"),
    "get_table_statistics_req": lambda c: (tt.TableStatsRequest(dbName=DB, tblName=TBL, colNames=["a"]),),
    "get_partitions_statistics_req": lambda c: (tt.PartitionsStatsRequest(dbName=DB, tblName=TBL, colNames=["a"],
                                                                          partNames=["ds=1"]),),
    "get_aggr_stats_for": lambda c: (tt.PartitionsStatsRequest(dbName=DB, tblName=TBL, colNames=["a"],
                                                               partNames=["ds=1"]),),
    "update_table_column_statistics": lambda c: (b.table_stats(DB, TBL, _long_stats()),),
    "update_partition_column_statistics": lambda c: (b.partition_stats(DB, TBL, "ds=1", _long_stats()),),
    "update_table_column_statistics_req": lambda c: (tt.SetPartitionsStatsRequest(
        colStats=[b.table_stats(DB, TBL, _long_stats())]),),
    "update_partition_column_statistics_req": lambda c: (tt.SetPartitionsStatsRequest(
        colStats=[b.partition_stats(DB, TBL, "ds=1", _long_stats())]),),
    "set_aggr_stats_for": lambda c: (tt.SetPartitionsStatsRequest(colStats=[b.table_stats(DB, TBL, _long_stats())]),),
    "delete_table_column_statistics": lambda c: (DB, TBL, "a", None),
    "delete_partition_column_statistics": lambda c: (DB, TBL, "ds=1", "a", None),
    "delete_column_statistics_req": lambda c: (tt.DeleteColumnStatisticsRequest(db_name=DB, tbl_name=TBL,
                                                                                col_names=["a"], tableLevel=True),),
    "metastore_get_file_partials": lambda c: (tt.MetastoreGetFilePartialsRequest(dbName=DB, tblName=TBL),),
    "metastore_put_file_partials": lambda c: (tt.MetastorePutFilePartialsRequest(dbName=DB, tblName=TBL, files=[
        tt.MetastoreFilePartials(path="/w/x.orc", size=1, mtimeNs=2, partName="ds=1", partials={"k": b"\xff"})]),),
    "metastore_delete_file_partials": lambda c: (tt.MetastoreDeleteFilePartialsRequest(dbName=DB, tblName=TBL),),
    "metastore_create_index": lambda c: (tt.MetastoreIndex(name="ix_new", dbName=DB, tableName=TBL, columnName="s",
                                                           columnType="string", indexType="bloom", level="STRIPE"),),
    "metastore_finish_index_build": lambda c: (tt.MetastoreFinishIndexBuild(name="ix_a", dbName=DB, tableName=TBL,
                                                                            parts=[]),),
    "metastore_drop_index": lambda c: (DB, TBL, "ix_a", []),
    "metastore_get_index": lambda c: (DB, TBL, "ix_a"),
    "metastore_filter_splits": lambda c: (tt.MetastoreFilterSplitsRequest(
        dbName=DB, tableName=TBL, predicate='{"op": "true"}', splits=[]),),
}


# What each call must need, written here by hand from the rules (statistics reads need read, statistics
# writes write_stats, catalog changes ddl, server administration admin), independently of METHOD_RULES.
_ADMIN_CALLS = {"setOption", "getCpuProfile", "create_type", "drop_type"}
_STATS_WRITES = {"update_table_column_statistics", "update_partition_column_statistics",
                 "update_table_column_statistics_req", "update_partition_column_statistics_req",
                 "set_aggr_stats_for", "delete_table_column_statistics", "delete_partition_column_statistics",
                 "delete_column_statistics_req",
                 # issue 10's per-file partials are statistics too (reading them needs read)
                 "metastore_put_file_partials", "metastore_delete_file_partials"}
_CATALOG_CHANGES = {
    "create_database", "drop_database", "alter_database", "create_function", "drop_function", "alter_function",
    "create_table", "create_table_with_environment_context", "drop_table", "drop_table_with_environment_context",
    "alter_table", "alter_table_with_environment_context", "alter_table_with_cascade", "add_partition",
    "add_partition_with_environment_context", "add_partitions", "add_partitions_req", "append_partition",
    "append_partition_with_environment_context", "append_partition_by_name",
    "append_partition_by_name_with_environment_context", "drop_partition", "drop_partition_with_environment_context",
    "drop_partition_by_name", "drop_partition_by_name_with_environment_context", "drop_partitions_req",
    "alter_partition", "alter_partition_with_environment_context", "alter_partitions",
    "alter_partitions_with_environment_context", "rename_partition",
    # issue 11: index DDL
    "metastore_create_index", "metastore_finish_index_build", "metastore_drop_index",
}


def expected_permission(method: str) -> Permission:
    if method in _ADMIN_CALLS:
        return Permission.ADMIN
    if method in _STATS_WRITES:
        return Permission.WRITE_STATS
    if method in _CATALOG_CHANGES:
        return Permission.DDL
    return Permission.READ

CHECKED = sorted(name for name, rule in METHOD_RULES.items() if rule.permission is not None)


def test_every_served_method_is_classified() -> None:
    served = {name for name in _METHODS if name in vars(Handler)}
    assert served - set(METHOD_RULES) == set(), "served methods without an authorization rule"
    assert set(METHOD_RULES) - set(_METHODS) == set(), "rules for methods the IDL does not have"


def test_every_checked_method_is_in_the_matrix() -> None:
    assert sorted(CALLS) == CHECKED
    wrong = {m: (METHOD_RULES[m].permission, expected_permission(m)) for m in CHECKED
             if METHOD_RULES[m].permission != expected_permission(m)}
    assert wrong == {}, "rules that differ from the expected permission (rule, expected)"


# ---------------------------------------------------------------- the server and its clients


class Connections:
    """One SASL PLAIN connection (our generated client over TLS) per test user."""

    def __init__(self, port: int, ca: Path) -> None:
        self.port = port
        self.ca = ca
        self._clients: dict[str, Any] = {}

    def __getitem__(self, user: str) -> Any:
        if user not in self._clients:
            ctx = ssl.create_default_context(cafile=str(self.ca))
            sock = TSSLSocket.TSSLSocket("127.0.0.1", self.port, ssl_context=ctx, server_hostname="127.0.0.1")
            sock.setTimeout(30_000)
            sock.open()
            sasl_negotiate(sock, "127.0.0.1", SaslCredentials("PLAIN", user=user, password=PASSWORD))
            trans = SaslClientTransport(sock, None)
            self._clients[user] = ThriftHiveMetastore.Client(TBinaryProtocol.TBinaryProtocolAccelerated(trans))
        return self._clients[user]

    def close(self) -> None:
        for client in self._clients.values():
            client._iprot.trans.close()
        self._clients.clear()


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(tmp_path_factory.mktemp("pki"))


def _password_file(path: Path, users: list[str]) -> Path:
    for user in users:
        subprocess.run([metastore_exe(), "passwd", str(path), user, "--stdin"], input=PASSWORD + "\n", text=True,
                       check=True, capture_output=True, timeout=60)
    return path


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, pki: Pki) -> Iterator[ServerProcess]:
    d = tmp_path_factory.mktemp("authz")
    policy = d / "policy.toml"
    policy.write_text(POLICY)
    pw = _password_file(d / "passwords", USERS)
    proc = start_server(
        d, f"sqlite:///{d / 'm.db'}", workers=1,
        extra_args=["--tls-cert", str(pki.server_cert), "--tls-key", str(pki.server_key),
                    "--authentication", "config", "--password-file", str(pw),
                    "--authorization-policy", str(policy)],
    )
    try:
        yield proc
    finally:
        proc.stop()


@pytest.fixture(scope="module")
def clients(server: ServerProcess, pki: Pki) -> Iterator[Connections]:
    conns = Connections(server.port, pki.ca)
    try:
        yield conns
    finally:
        conns.close()


def _reset(admin: Any, warehouse: Path) -> None:
    """The fixture every call starts from: database m, table t (ds-partitioned) with partition ds=1, table and
    partition statistics, function m.f, type ty."""
    for name in admin.get_all_databases():
        if name != "default":
            admin.drop_database(name, True, True)
    try:
        admin.drop_type("ty")
    except tt.NoSuchObjectException:
        pass
    try:
        admin.drop_type("ty2")
    except tt.NoSuchObjectException:
        pass
    admin.create_database(b.database(DB, f"file:{warehouse / DB}"))
    admin.create_table(b.table(DB, TBL, COLS, [("ds", "string")]))
    admin.add_partition(_new_partition("1"))
    admin.update_table_column_statistics(b.table_stats(DB, TBL, _long_stats()))
    admin.update_partition_column_statistics(b.partition_stats(DB, TBL, "ds=1", _long_stats()))
    admin.create_function(_function("f"))
    admin.create_type(tt.Type(name="ty", fields=[tt.FieldSchema(name="x", type="int")]))
    admin.metastore_create_index(tt.MetastoreIndex(name="ix_a", dbName=DB, tableName=TBL, columnName="a",
                                                   columnType="bigint", indexType="minmax", level="STRIPE"))


def _snapshot(db_url: str) -> dict[str, list[tuple]]:
    """Every row of every table of the server's database."""
    engine = sa.create_engine(db_url)
    try:
        meta = sa.MetaData()
        meta.reflect(engine)
        with engine.connect() as conn:
            return {t.name: sorted((tuple(r) for r in conn.execute(sa.select(t))), key=repr)
                    for t in meta.sorted_tables}
    finally:
        engine.dispose()


@pytest.mark.parametrize("method", CHECKED)
def test_matrix(method: str, server: ServerProcess, clients: Connections, tmp_path: Path) -> None:
    permission = expected_permission(method)
    admin = clients["admin"]
    _reset(admin, tmp_path)
    args = CALLS[method](admin)
    denied_user = DENIED[permission]
    before = _snapshot(server.db_url)
    assert _METHODS[method].result_cls is not None, "a oneway call's refusal would not reach the client"
    with pytest.raises((tt.MetaException, TApplicationException)) as refused:
        getattr(clients[denied_user], method)(*args)
    message = getattr(refused.value, "message", None) or str(refused.value)
    assert message.startswith(f"Permission denied: principal {denied_user} has no {permission.value} permission on ")
    assert f"({method})" in message
    if permission != Permission.ADMIN:
        assert f" {DB}" in message  # the object: database m or table m.t
    assert _snapshot(server.db_url) == before, f"a denied {method} changed the database"
    # The principal with only the needed permission is served (the call itself succeeds).
    _reset(admin, tmp_path)
    getattr(clients[ALLOWED[permission]], method)(*CALLS[method](admin))


def test_denials_are_logged_with_the_peer(server: ServerProcess, clients: Connections, tmp_path: Path) -> None:
    _reset(clients["admin"], tmp_path)
    with pytest.raises(tt.MetaException):
        clients["outsider"].drop_table(DB, TBL, False)
    time.sleep(0.3)
    lines = [ln for ln in server.output.splitlines()
             if "Permission denied: principal outsider has no ddl permission on table m.t (drop_table)" in ln]
    assert lines and "(peer 127.0.0.1:" in lines[-1]


def test_listings_show_only_what_the_principal_may_read(clients: Connections, tmp_path: Path) -> None:
    admin = clients["admin"]
    _reset(admin, tmp_path)
    admin.create_database(b.database("secret", f"file:{tmp_path / 'secret'}"))
    admin.create_table(b.table("secret", "s", COLS))
    assert {"m", "secret"} <= set(admin.get_all_databases())
    reader, outsider = clients["reader"], clients["outsider"]
    assert "m" in reader.get_all_databases() and "secret" not in reader.get_all_databases()
    assert reader.get_databases("*") == [d for d in reader.get_all_databases()]
    assert outsider.get_all_databases() == []
    assert reader.get_all_tables(DB) == [TBL] and reader.get_tables(DB, "*") == [TBL]
    assert reader.get_all_tables("secret") == [] and outsider.get_all_tables(DB) == []
    assert [m.tableName for m in reader.get_table_meta("*", "*", [])] == [TBL]
    assert reader.get_table_objects_by_name("secret", ["s"]) == []
    assert [t.tableName for t in reader.get_table_objects_by_name(DB, [TBL])] == [TBL]
    assert reader.get_table_objects_by_name_req(tt.GetTablesRequest(dbName="secret", tblNames=["s"])).tables == []
    assert [f.functionName for f in reader.get_all_functions().functions] == ["f"]
    assert outsider.get_all_functions().functions == []
    admin.metastore_create_index(tt.MetastoreIndex(name="ix_secret", dbName="secret", tableName="s", columnName="a",
                                                   columnType="bigint", indexType="minmax", level="STRIPE"))
    assert {i.name for i in admin.metastore_list_indexes("", "")} == {"ix_a", "ix_secret"}
    assert [i.name for i in reader.metastore_list_indexes("", "")] == ["ix_a"]
    assert reader.metastore_list_indexes("secret", "s") == [] and outsider.metastore_list_indexes("", "") == []
    # Session calls need no grant; nor does fb303's shutdown, which Hive's client sends whenever it closes a
    # connection (and this server ignores).
    assert outsider.getName() == "metastore"
    outsider.shutdown()
    assert outsider.partition_name_to_vals("ds=1") == ["1"]


def test_filtered_and_typed_table_listings_show_only_readable_tables(clients: Connections, tmp_path: Path) -> None:
    # In `shared` the reader may read the tables named open_*, no other: the listing calls that take a filter or
    # a table type drop the rest, and a principal without grants there sees nothing.
    admin = clients["admin"]
    _reset(admin, tmp_path)
    admin.create_database(b.database("shared", f"file:{tmp_path / 'shared'}"))
    for name in ("open_a", "open_b", "hidden_c"):
        admin.create_table(b.table("shared", name, COLS, flag="on"))
    view = b.table("shared", "open_view", COLS, flag="on")
    view.tableType = "VIRTUAL_VIEW"
    admin.create_table(view)
    flagged = 'hive_filter_field_params__flag = "on"'
    assert admin.get_table_names_by_filter("shared", flagged, -1) == ["hidden_c", "open_a", "open_b", "open_view"]
    assert sorted(admin.get_tables_by_type("shared", "*", "MANAGED_TABLE")) == ["hidden_c", "open_a", "open_b"]
    reader, outsider = clients["reader"], clients["outsider"]
    assert reader.get_table_names_by_filter("shared", flagged, -1) == ["open_a", "open_b", "open_view"]
    assert sorted(reader.get_tables_by_type("shared", "*", "MANAGED_TABLE")) == ["open_a", "open_b"]
    assert reader.get_tables_by_type("shared", "*", "VIRTUAL_VIEW") == ["open_view"]
    assert sorted(reader.get_tables_by_type("shared", "*hid*|open_a", "")) == ["open_a"]
    assert outsider.get_table_names_by_filter("shared", flagged, -1) == []
    assert outsider.get_tables_by_type("shared", "*", "MANAGED_TABLE") == []
    # The same reader in database m (read on every table there) is not narrowed.
    assert reader.get_tables_by_type(DB, "*", "MANAGED_TABLE") == [TBL]


def test_an_alter_that_changes_only_statistics_is_a_statistics_write(clients: Connections, tmp_path: Path) -> None:
    admin = clients["admin"]
    _reset(admin, tmp_path)
    clients["writer"].alter_table(DB, TBL, _stats_only_altered_table(admin))
    assert admin.get_table(DB, TBL).parameters["numRows"] == "42"
    with pytest.raises(tt.MetaException, match="has no ddl permission on table m.t"):
        clients["writer"].alter_table(DB, TBL, _ddl_altered_table(admin))
    part = admin.get_partition(DB, TBL, ["1"])
    # (the shell's ANALYZE also records its fingerprint, a statistics parameter)
    part.parameters = {**(part.parameters or {}), "numRows": "7", "COLUMN_STATS_ACCURATE": '{"BASIC_STATS":"true"}',
                       "metastore.analyze.fingerprint": "1:ab:cd"}
    clients["writer"].alter_partitions(DB, TBL, [part])
    assert admin.get_partition(DB, TBL, ["1"]).parameters["numRows"] == "7"
    with pytest.raises(tt.MetaException, match="has no ddl permission"):
        clients["writer"].alter_partition(DB, TBL, _ddl_altered_partition(admin))
    # Statistics-only needs write_stats: a reader may not.
    with pytest.raises(tt.MetaException, match="principal reader has no ddl permission"):
        clients["reader"].alter_table(DB, TBL, _stats_only_altered_table(admin))


def test_set_ugi_claims_change_nothing_once_authenticated(clients: Connections, tmp_path: Path) -> None:
    _reset(clients["admin"], tmp_path)
    reader = clients["reader"]
    reader.set_ugi("admin", ["admins"])
    with pytest.raises(tt.MetaException, match="principal reader has no ddl permission on table m.t"):
        reader.drop_table(DB, TBL, False)


def test_policy_without_authentication_believes_set_ugi_and_warns(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text(POLICY)
    server = start_server(tmp_path, f"sqlite:///{tmp_path / 'm.db'}", workers=1,
                          extra_args=["--authorization-policy", str(policy)])
    try:
        assert f"authorization policy {policy}" in server.ready_line
        assert "principals are the user names clients claim in set_ugi" in server.output
        with server.client() as anonymous, pytest.raises(
                tt.MetaException, match="principal anonymous has no ddl permission on database m_x"):
            anonymous.create_database(b.database("m_x"))
        with server.client() as c:
            c.set_ugi("ddler", [])
            c.create_database(b.database("m_x", f"file:{tmp_path / 'm_x'}"))
            assert c.get_all_databases() == []  # ddl without read: created, but not listed
    finally:
        assert server.stop() == 0


def test_policy_changes_apply_without_restart(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[[grants]]\nprincipals = ["u"]\ndatabases = ["default"]\npermissions = ["read"]\n')
    server = start_server(tmp_path, f"sqlite:///{tmp_path / 'm.db'}", workers=1,
                          extra_args=["--authorization-policy", str(policy)])
    try:
        with server.client() as c:
            c.set_ugi("u", [])
            assert c.get_all_databases() == ["default"]
            time.sleep(1.1)
            policy.write_text("this is [not toml")
            time.sleep(1.1)
            assert c.get_all_databases() == ["default"]  # a broken edit keeps the previous policy
            policy.write_text('[[grants]]\nprincipals = ["v"]\ndatabases = ["default"]\npermissions = ["read"]\n')
            time.sleep(1.1)
            assert c.get_all_databases() == []
        time.sleep(0.2)
        assert "authorization policy not reloaded, keeping the previous one" in server.output
    finally:
        assert server.stop() == 0


def test_a_broken_policy_stops_serve_with_one_line(tmp_path: Path) -> None:
    policy = tmp_path / "policy.toml"
    policy.write_text('[[grants]]\nprincipals = ["u"]\ndatabases = ["x"]\npermissions = ["write"]\n')
    with pytest.raises(ServerFailed) as failed:
        start_server(tmp_path, f"sqlite:///{tmp_path / 'm.db'}", workers=1,
                     extra_args=["--authorization-policy", str(policy)])
    lines = [ln for ln in str(failed.value).splitlines()[1:] if ln.strip()]
    assert len(lines) == 1 and "grant 1: unknown permission(s) write" in lines[0], str(failed.value)


# ---------------------------------------------------------------- the policy itself


def test_policy_semantics() -> None:
    policy = Policy.parse(
        """
realm = "EXAMPLE.COM"
[groups]
team = ["carol", "svc/host.example.com@EXAMPLE.COM"]

[[grants]]
principals = ["alice"]
databases = ["Sales"]
tables = ["orders*"]
permissions = ["read", "write_stats"]

[[grants]]
groups = ["team"]
databases = ["tmp_*"]
permissions = ["ddl"]

[[grants]]
principals = ["*"]
databases = ["public"]
permissions = ["read"]
""", "p.toml")
    alice = "alice@EXAMPLE.COM"
    assert policy.allows(alice, Permission.READ, Target("sales", "ORDERS_2024"))
    assert policy.allows("alice/laptop@EXAMPLE.COM", Permission.WRITE_STATS, Target("sales", "orders"))
    assert not policy.allows("alice@OTHER.ORG", Permission.READ, Target("sales", "orders"))  # other realm
    assert not policy.allows(alice, Permission.READ, Target("sales", "customers"))
    assert not policy.allows(alice, Permission.DDL, Target("sales", "orders"))
    assert policy.allows(alice, Permission.READ, Target("sales"))  # reading a database: any readable table
    assert not policy.allows(alice, Permission.WRITE_STATS, Target("sales"))  # database-wide: tables ["*"]
    assert policy.allows("carol", Permission.DDL, Target("tmp_x"))
    assert policy.allows("svc/host.example.com@EXAMPLE.COM", Permission.DDL, Target("tmp_x", "t"))
    assert not policy.allows("svc/other@EXAMPLE.COM", Permission.DDL, Target("tmp_x", "t"))
    assert policy.allows("anyone", Permission.READ, Target("public", "x"))
    assert not policy.allows(alice, Permission.ADMIN, Target(None))


def test_policy_memory_stays_bounded_whatever_names_clients_claim() -> None:
    # Without authentication a principal is whatever set_ugi says: a client inventing names must not make the
    # server keep an entry per name for ever.
    policy = Policy.parse(POLICY, "p.toml")
    for i in range(authorization.MAX_CACHED_PRINCIPALS * 2 + 5):
        assert not policy.allows(f"invented-{i}", Permission.READ, Target("m", "t"))
        assert len(policy._grants_of) <= authorization.MAX_CACHED_PRINCIPALS
        assert len(policy._cache) <= authorization.MAX_CACHED_ANSWERS
    assert policy.allows("reader", Permission.READ, Target("m", "t"))  # answers stay right after emptying


@pytest.mark.parametrize(("text", "message"), [
    ("grants = 3", "grants must be [[grants]] tables"),
    ("[[grants]]\ndatabases = ['x']\npermissions = ['read']", "names no principals and no groups"),
    ("[[grants]]\nprincipals = ['a']\npermissions = ['read']", "needs databases"),
    ("[[grants]]\nprincipals = ['a']\ndatabases = ['x']\npermissions = []", "grants no permissions"),
    ("[[grants]]\ngroups = ['g']\ndatabases = ['x']\npermissions = ['read']", "group(s) g not defined"),
    ("[[grants]]\nprincipals = ['a']\ndatabases = ['x']\npermissions = ['read']\ntable = ['y']", "unknown key(s) table"),
    ("owner = 'x'", "unknown key(s) owner"),
    ("[groups]\ng = 'alice'", "must be a list of non-empty strings"),
    ("[[grants", "is not valid TOML"),
])
def test_policy_errors_name_the_entry(text: str, message: str) -> None:
    with pytest.raises(PolicyError, match=message.replace("(", r"\(").replace(")", r"\)").replace("[", r"\[")):
        Policy.parse(text, "p.toml")
