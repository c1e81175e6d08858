"""The catalog calls real HMS clients make (issue §6), through our generated client, on SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from thrift.protocol.TProtocol import TProtocolBase
from thrift.Thrift import TApplicationException, TMessageType, TType

from metastore.api.fb303.ttypes import fb_status
from metastore.api.hive_metastore import ttypes as tt
from server import thrift_builders as b
from server.db_inspect import orphan_count, partition_stats_rows, table_stats_rows

COL_NAMES = [n for n, t in b.ALL_KINDS_COLUMNS if t != "array<int>"]


# ---------------------------------------------------------------- session, configuration, fb303


def test_fb303_basics(client):
    assert client.getName()
    assert client.getVersion()
    assert client.getStatus() == fb_status.ALIVE
    assert client.aliveSince() > 1_600_000_000
    assert isinstance(client.getCounters(), dict)


def test_set_ugi_answers_the_groups_like_hms_2_3(client):
    assert client.set_ugi("alice", ["staff", "eng"]) == ["staff", "eng"]
    assert client.set_ugi("bob", []) == []


def test_configuration_calls(client, server):
    assert client.getMetaConf("metastore.stats.fetch.bitvector") == "false"
    assert client.getMetaConf("hive.metastore.warehouse.dir").endswith("warehouse")
    with pytest.raises(tt.MetaException, match="no.such.key"):
        client.getMetaConf("no.such.key")
    assert client.get_config_value("no.such.key", "fallback") == "fallback"
    assert client.get_config_value("hive.metastore.try.direct.sql", "x") == "true"
    assert client.get_all_functions().functions == []


# ---------------------------------------------------------------- databases


def test_default_database_exists(client):
    assert "default" in client.get_all_databases()
    db = client.get_database("default")
    assert db.name == "default"
    assert db.locationUri


def test_database_lifecycle(client, dbname):
    client.create_database(b.database(dbname, owner="x"))
    db = client.get_database(dbname)
    assert (db.name, db.parameters) == (dbname, {"owner": "x"})
    assert db.locationUri.endswith(f"/{dbname}.db")
    assert dbname in client.get_all_databases()
    assert client.get_databases(f"{dbname[:6]}*") == sorted(n for n in client.get_all_databases() if n.startswith(dbname[:6]))
    assert client.get_databases(f"{dbname}|nomatch") == [dbname]
    # Names are case-insensitive, as Hive's.
    assert client.get_database(dbname.upper()).name == dbname
    with pytest.raises(tt.AlreadyExistsException, match=dbname):
        client.create_database(b.database(dbname))
    client.drop_database(dbname, True, False)
    assert dbname not in client.get_all_databases()
    with pytest.raises(tt.NoSuchObjectException, match=dbname):
        client.get_database(dbname)
    with pytest.raises(tt.NoSuchObjectException, match=dbname):
        client.drop_database(dbname, True, True)


def test_drop_database_needs_cascade_and_takes_everything(client, server, dbname):
    b.create_db_and_table(client, dbname, "t", partitioned=True)
    client.add_partition(b.partition(dbname, "t", ["2024-01-01", "1"]))
    client.update_table_column_statistics(b.table_stats(dbname, "t", b.all_kinds_objs()))
    client.update_partition_column_statistics(b.partition_stats(dbname, "t", "ds=2024-01-01/hr=1", b.all_kinds_objs()))
    with pytest.raises(tt.InvalidOperationException, match="cascade"):
        client.drop_database(dbname, True, False)
    client.drop_database(dbname, True, True)
    assert dbname not in client.get_all_databases()
    assert table_stats_rows(server.db_url, dbname, "t") == []
    assert partition_stats_rows(server.db_url, dbname, "t") == []
    assert orphan_count(server.db_url) == 0


def test_default_database_cannot_be_dropped(client):
    with pytest.raises(tt.InvalidOperationException, match="default"):
        client.drop_database("default", False, True)


# ---------------------------------------------------------------- tables


def test_create_and_read_table(client, dbname):
    client.create_database(b.database(dbname))
    t = b.table(dbname, "events", partition_keys=b.PARTITION_KEYS, comment="hello")
    client.create_table(t)
    ctx = tt.EnvironmentContext(properties={"DO_NOT_UPDATE_STATS": "true"})
    client.create_table_with_environment_context(b.table(dbname, "Other", [("x", "int")]), ctx)

    got = client.get_table(dbname, "events")
    assert (got.dbName, got.tableName, got.tableType, got.owner) == (dbname, "events", "MANAGED_TABLE", "tester")
    assert [(c.name, c.type) for c in got.sd.cols] == b.ALL_KINDS_COLUMNS
    assert [(k.name, k.type) for k in got.partitionKeys] == b.PARTITION_KEYS
    assert got.parameters["comment"] == "hello"
    assert got.sd.location.endswith(f"/{dbname}.db/events")
    assert got.sd.serdeInfo.serializationLib == b.ORC_SERDE
    assert got.createTime > 0

    req = client.get_table_req(tt.GetTableRequest(dbName=dbname, tblName="EVENTS"))
    assert req.table.tableName == "events"
    assert client.get_table(dbname, "other").sd.cols[0].name == "x"

    assert client.get_all_tables(dbname) == ["events", "other"]
    assert client.get_tables(dbname, "ev*") == ["events"]
    assert client.get_tables(dbname, "*") == ["events", "other"]

    objs = client.get_table_objects_by_name(dbname, ["other", "missing", "events"])
    assert sorted(o.tableName for o in objs) == ["events", "other"]
    res = client.get_table_objects_by_name_req(tt.GetTablesRequest(dbName=dbname, tblNames=["events", "nope"]))
    assert [o.tableName for o in res.tables] == ["events"]

    fields = client.get_fields(dbname, "events")
    assert [(f.name, f.type) for f in fields] == b.ALL_KINDS_COLUMNS
    schema = client.get_schema(dbname, "events")
    assert [(f.name, f.type) for f in schema] == b.ALL_KINDS_COLUMNS + b.PARTITION_KEYS

    with pytest.raises(tt.AlreadyExistsException):
        client.create_table(t)


def test_missing_tables_and_databases(client, dbname):
    client.create_database(b.database(dbname))
    with pytest.raises(tt.NoSuchObjectException, match="nope"):
        client.get_table(dbname, "nope")
    with pytest.raises(tt.NoSuchObjectException, match="nope"):
        client.get_table_req(tt.GetTableRequest(dbName=dbname, tblName="nope"))
    with pytest.raises((tt.UnknownTableException, tt.MetaException, tt.UnknownDBException), match="nope"):
        client.get_fields(dbname, "nope")
    with pytest.raises(tt.NoSuchObjectException, match="nodb"):
        client.create_table(b.table("nodb_" + dbname, "t"))
    with pytest.raises(tt.NoSuchObjectException, match="nope"):
        client.drop_table(dbname, "nope", True)


def test_invalid_table_definitions(client, dbname):
    client.create_database(b.database(dbname))
    with pytest.raises(tt.InvalidObjectException):
        client.create_table(b.table(dbname, "bad name!", [("x", "int")]))
    # A partition key that is also a data column is accepted, as in Hive 2.3 (test_hive_semantics.py).
    bad = b.table(dbname, "nocols", [("x", "int")])
    bad.sd.cols[0].type = None
    with pytest.raises(tt.InvalidObjectException, match="type"):
        client.create_table(bad)


def _stats_cols(client, db, tbl, cols=COL_NAMES):
    res = client.get_table_statistics_req(tt.TableStatsRequest(dbName=db, tblName=tbl, colNames=list(cols)))
    return {o.colName: o for o in res.tableStats}


def test_rename_carries_statistics(client, server, dbname):
    b.create_db_and_table(client, dbname, "t", partitioned=True)
    client.add_partition(b.partition(dbname, "t", ["2024-01-01", "1"]))
    client.update_table_column_statistics(b.table_stats(dbname, "t", b.all_kinds_objs()))
    client.update_partition_column_statistics(b.partition_stats(dbname, "t", "ds=2024-01-01/hr=1", b.all_kinds_objs()))
    before = _stats_cols(client, dbname, "t")

    client.create_database(b.database(dbname + "_2"))
    new = client.get_table(dbname, "t")
    new.dbName, new.tableName = dbname + "_2", "renamed"
    client.alter_table(dbname, "t", new)

    with pytest.raises(tt.NoSuchObjectException):
        client.get_table(dbname, "t")
    assert _stats_cols(client, dbname + "_2", "renamed") == before
    assert table_stats_rows(server.db_url, dbname, "t") == []
    part = client.get_partition_column_statistics(dbname + "_2", "renamed", "ds=2024-01-01/hr=1", "l")
    assert part.statsObj[0].statsData.longStats.numDVs == 1000
    assert client.get_partition_names(dbname + "_2", "renamed", -1) == ["ds=2024-01-01/hr=1"]


def test_dropped_or_retyped_columns_lose_statistics(client, server, dbname):
    b.create_db_and_table(client, dbname, "t", partitioned=True)
    client.add_partition(b.partition(dbname, "t", ["2024-01-01", "1"]))
    client.update_table_column_statistics(b.table_stats(dbname, "t", b.all_kinds_objs()))
    client.update_partition_column_statistics(b.partition_stats(dbname, "t", "ds=2024-01-01/hr=1", b.all_kinds_objs()))

    new = client.get_table(dbname, "t")
    # drop `s`, retype `i` int -> bigint, keep the rest (a comment change alone keeps statistics).
    new.sd.cols = [c for c in new.sd.cols if c.name != "s"]
    for c in new.sd.cols:
        if c.name == "i":
            c.type = "bigint"
        if c.name == "l":
            c.comment = "now with a comment"
    ctx = tt.EnvironmentContext(properties={"CASCADE": "true"})
    client.alter_table_with_environment_context(dbname, "t", new, ctx)

    left = _stats_cols(client, dbname, "t", [c for c in COL_NAMES if c != "s"])
    assert "i" not in left and "l" in left and "b" in left
    assert {c for c, _ in table_stats_rows(server.db_url, dbname, "t")} == set(COL_NAMES) - {"s", "i"}
    assert {c for _, c, _ in partition_stats_rows(server.db_url, dbname, "t")} == set(COL_NAMES) - {"s", "i"}
    with pytest.raises(tt.NoSuchObjectException):
        client.get_table_column_statistics(dbname, "t", "i")


def test_drop_table_takes_statistics(client, server, dbname):
    b.create_db_and_table(client, dbname, "t", partitioned=True)
    client.add_partition(b.partition(dbname, "t", ["2024-01-01", "1"]))
    client.update_table_column_statistics(b.table_stats(dbname, "t", b.all_kinds_objs()))
    client.update_partition_column_statistics(b.partition_stats(dbname, "t", "ds=2024-01-01/hr=1", b.all_kinds_objs()))
    assert len(table_stats_rows(server.db_url, dbname, "t")) == len(COL_NAMES)
    client.drop_table_with_environment_context(dbname, "t", True, tt.EnvironmentContext(properties={}))
    assert client.get_all_tables(dbname) == []
    assert table_stats_rows(server.db_url, dbname, "t") == []
    assert partition_stats_rows(server.db_url, dbname, "t") == []
    # A new table of the same name starts without statistics.
    client.create_table(b.table(dbname, "t", partition_keys=b.PARTITION_KEYS))
    with pytest.raises(tt.NoSuchObjectException):
        client.get_table_column_statistics(dbname, "t", "l")
    client.drop_table(dbname, "t", False)
    assert orphan_count(server.db_url) == 0


# ---------------------------------------------------------------- partitions


def _add_parts(client, db, tbl, days=(1, 2, 3), hours=(0, 5)):
    parts = [b.partition(db, tbl, [f"2024-01-0{d}", str(h)]) for d in days for h in hours]
    assert client.add_partitions(parts) == len(parts)
    return [f"ds=2024-01-0{d}/hr={h}" for d in days for h in hours]


def test_add_and_get_partitions(client, dbname):
    b.create_db_and_table(client, dbname, "t", partitioned=True)
    added = client.add_partition(b.partition(dbname, "t", ["2024-02-01", "7"]))
    assert added.values == ["2024-02-01", "7"]
    assert added.sd.location.endswith("/t/ds=2024-02-01/hr=7")
    names = _add_parts(client, dbname, "t")
    res = client.add_partitions_req(
        tt.AddPartitionsRequest(
            dbName=dbname, tblName="t", parts=[b.partition(dbname, "t", ["2024-03-01", "1"])], ifNotExists=False,
            needResult=True,
        )
    )
    assert [p.values for p in res.partitions] == [["2024-03-01", "1"]]
    # ifNotExists skips existing partitions instead of failing.
    res = client.add_partitions_req(
        tt.AddPartitionsRequest(
            dbName=dbname, tblName="t",
            parts=[b.partition(dbname, "t", ["2024-03-01", "1"]), b.partition(dbname, "t", ["2024-03-02", "1"])],
            ifNotExists=True, needResult=True,
        )
    )
    assert [p.values for p in res.partitions] == [["2024-03-02", "1"]]
    with pytest.raises(tt.AlreadyExistsException):
        client.add_partition(b.partition(dbname, "t", ["2024-03-01", "1"]))

    all_names = sorted(names + ["ds=2024-02-01/hr=7", "ds=2024-03-01/hr=1", "ds=2024-03-02/hr=1"])
    assert client.get_partition_names(dbname, "t", -1) == all_names
    assert len(client.get_partition_names(dbname, "t", 2)) == 2

    p = client.get_partition(dbname, "t", ["2024-01-02", "5"])
    assert (p.dbName, p.tableName, p.values) == (dbname, "t", ["2024-01-02", "5"])
    assert client.get_partition_by_name(dbname, "t", "ds=2024-01-02/hr=5").values == ["2024-01-02", "5"]
    assert client.get_partition_with_auth(dbname, "t", ["2024-01-02", "5"], "u", ["g"]).values == ["2024-01-02", "5"]
    assert [q.values for q in client.get_partitions(dbname, "t", -1)] == [
        n.replace("ds=", "").replace("hr=", "").split("/") for n in all_names
    ]
    assert len(client.get_partitions(dbname, "t", 3)) == 3
    assert {tuple(q.values) for q in client.get_partitions_ps(dbname, "t", ["2024-01-01"], -1)} == {
        ("2024-01-01", "0"), ("2024-01-01", "5"),
    }
    assert {tuple(q.values) for q in client.get_partitions_ps(dbname, "t", ["", "5"], -1)} == {
        ("2024-01-01", "5"), ("2024-01-02", "5"), ("2024-01-03", "5"),
    }
    assert len(client.get_partitions_ps_with_auth(dbname, "t", ["2024-01-01"], -1, "u", ["g"])) == 2
    got = client.get_partitions_by_names(dbname, "t", ["ds=2024-01-03/hr=0", "ds=1999-01-01/hr=0"])
    assert [q.values for q in got] == [["2024-01-03", "0"]]

    by_filter = client.get_partitions_by_filter(dbname, "t", 'ds >= "2024-01-02" and hr = 5', -1)
    assert sorted(tuple(q.values) for q in by_filter) == [("2024-01-02", "5"), ("2024-01-03", "5")]
    assert len(client.get_partitions_by_filter(dbname, "t", "hr > 0", 2)) == 2
    with pytest.raises(tt.MetaException, match="nosuchkey"):
        client.get_partitions_by_filter(dbname, "t", "nosuchkey = 1", -1)

    with pytest.raises(tt.NoSuchObjectException):
        client.get_partition(dbname, "t", ["1999-01-01", "0"])
    with pytest.raises(tt.NoSuchObjectException):
        client.get_partition_by_name(dbname, "t", "ds=1999-01-01/hr=0")
    with pytest.raises(tt.NoSuchObjectException):
        client.get_partitions(dbname, "missing", -1)


def test_add_partition_validation(client, dbname):
    b.create_db_and_table(client, dbname, "t", partitioned=True)
    with pytest.raises(tt.InvalidObjectException, match="partition key"):
        client.add_partition(b.partition(dbname, "t", ["only-one-value"]))
    with pytest.raises((tt.InvalidObjectException, tt.NoSuchObjectException)):
        client.add_partition(b.partition(dbname, "nope", ["a", "1"]))
    # One bad partition in a batch adds none.
    with pytest.raises(tt.InvalidObjectException):
        client.add_partitions([b.partition(dbname, "t", ["2024-05-01", "1"]), b.partition(dbname, "t", ["x"])])
    assert client.get_partition_names(dbname, "t", -1) == []


def test_alter_partitions(client, dbname):
    b.create_db_and_table(client, dbname, "t", partitioned=True)
    _add_parts(client, dbname, "t", days=(1,), hours=(0, 5))
    p = client.get_partition(dbname, "t", ["2024-01-01", "0"])
    p.parameters = {"numRows": "10", "k": "v"}
    client.alter_partition(dbname, "t", p)
    assert client.get_partition(dbname, "t", ["2024-01-01", "0"]).parameters["k"] == "v"

    ps = client.get_partitions(dbname, "t", -1)
    for q in ps:
        q.parameters["batch"] = "yes"
    client.alter_partitions(dbname, "t", ps)
    assert all(q.parameters["batch"] == "yes" for q in client.get_partitions(dbname, "t", -1))
    client.alter_partitions_with_environment_context(dbname, "t", ps, tt.EnvironmentContext(properties={}))

    missing = b.partition(dbname, "t", ["1999-01-01", "0"])
    with pytest.raises(tt.InvalidOperationException, match="1999"):
        client.alter_partition(dbname, "t", missing)


def test_drop_partitions_take_statistics(client, server, dbname):
    b.create_db_and_table(client, dbname, "t", partitioned=True)
    names = _add_parts(client, dbname, "t", days=(1,), hours=(0, 5, 9))
    for n in names:
        client.update_partition_column_statistics(b.partition_stats(dbname, "t", n, b.all_kinds_objs()))
    assert client.drop_partition(dbname, "t", ["2024-01-01", "0"], True) is True
    assert client.drop_partition_by_name(dbname, "t", "ds=2024-01-01/hr=5", False) is True
    assert client.get_partition_names(dbname, "t", -1) == ["ds=2024-01-01/hr=9"]
    assert {p for p, _, _ in partition_stats_rows(server.db_url, dbname, "t")} == {"ds=2024-01-01/hr=9"}
    with pytest.raises(tt.NoSuchObjectException):
        client.drop_partition_by_name(dbname, "t", "ds=2024-01-01/hr=5", False)
    with pytest.raises(tt.NoSuchObjectException):
        client.drop_partition(dbname, "t", ["2024-01-01", "0"], False)
    # A partition added again under the same name has no statistics.
    client.add_partition(b.partition(dbname, "t", ["2024-01-01", "0"]))
    with pytest.raises(tt.NoSuchObjectException):
        client.get_partition_column_statistics(dbname, "t", "ds=2024-01-01/hr=0", "l")
    assert orphan_count(server.db_url) == 0


# ---------------------------------------------------------------- get_partitions with max_parts as i32


def _send_get_partitions(client, db: str, tbl: str, max_parts: int, int_type: int) -> list[tt.Partition]:
    """get_partitions written by hand, with max_parts (field 3) of the given integer wire type."""
    oprot: TProtocolBase = client._oprot
    client._seqid += 1
    oprot.writeMessageBegin("get_partitions", TMessageType.CALL, client._seqid)
    oprot.writeStructBegin("get_partitions_args")
    oprot.writeFieldBegin("db_name", TType.STRING, 1)
    oprot.writeString(db)
    oprot.writeFieldEnd()
    oprot.writeFieldBegin("tbl_name", TType.STRING, 2)
    oprot.writeString(tbl)
    oprot.writeFieldEnd()
    oprot.writeFieldBegin("max_parts", int_type, 3)
    {TType.I16: oprot.writeI16, TType.I32: oprot.writeI32, TType.I64: oprot.writeI64}[int_type](max_parts)
    oprot.writeFieldEnd()
    oprot.writeFieldStop()
    oprot.writeStructEnd()
    oprot.writeMessageEnd()
    oprot.trans.flush()
    return client.recv_get_partitions()


@pytest.mark.parametrize("int_type", [TType.I16, TType.I32, TType.I64])
def test_get_partitions_accepts_any_integer_width_for_max_parts(client, dbname, int_type):
    b.create_db_and_table(client, dbname, "t", partitioned=True)
    _add_parts(client, dbname, "t", days=(1, 2), hours=(0, 5))
    assert len(_send_get_partitions(client, dbname, "t", 3, int_type)) == 3
    assert len(_send_get_partitions(client, dbname, "t", 1, int_type)) == 1
    assert len(_send_get_partitions(client, dbname, "t", -1, int_type)) == 4
    # The connection is still in sync afterwards.
    assert client.get_partition_names(dbname, "t", -1)[0] == "ds=2024-01-01/hr=0"


def test_max_parts_beyond_i16_as_i32(client, dbname):
    b.create_db_and_table(client, dbname, "t", partitioned=True)
    _add_parts(client, dbname, "t", days=(1,), hours=(0,))
    assert len(_send_get_partitions(client, dbname, "t", 100_000, TType.I32)) == 1


def test_unsupported_method_is_a_clear_application_error(client):
    with pytest.raises(TApplicationException, match="not supported"):
        client.truncate_table("default", "nope", None)
    assert client.get_all_databases()


def test_get_partition_values(client, dbname):
    b.create_db_and_table(client, dbname, "t", partitioned=True)
    _add_parts(client, dbname, "t", days=(1, 2, 3), hours=(0, 5))
    ds, hr = tt.FieldSchema(name="ds", type="string"), tt.FieldSchema(name="hr", type="int")

    def values(**kw):
        req = tt.PartitionValuesRequest(dbName=dbname, tblName="t", **kw)
        return [r.row for r in client.get_partition_values(req).partitionValues]

    assert values(partitionKeys=[ds]) == [["2024-01-01"], ["2024-01-02"], ["2024-01-03"]]
    assert values(partitionKeys=[ds], applyDistinct=False) == [[f"2024-01-0{d}"] for d in (1, 1, 2, 2, 3, 3)]
    assert values(partitionKeys=[hr, ds], partitionOrder=[hr], ascending=False, maxParts=2) == [
        ["5", "2024-01-01"], ["5", "2024-01-02"],
    ]
    assert values(partitionKeys=[ds], filter='ds > "2024-01-01" and hr = 5') == [["2024-01-02"], ["2024-01-03"]]
    with pytest.raises(tt.MetaException, match="nokey"):
        values(partitionKeys=[tt.FieldSchema(name="nokey", type="string")])
    with pytest.raises(tt.NoSuchObjectException):
        client.get_partition_values(tt.PartitionValuesRequest(dbName=dbname, tblName="nope", partitionKeys=[ds]))
