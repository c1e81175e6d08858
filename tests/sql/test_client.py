"""The client API on both implementations (embedded over SQLite, Thrift against a `metastore serve` subprocess):
the same calls give the same domain objects and the same metastore.errors; statistics go in batches; the Thrift
client reconnects after a server restart and fails over between URIs."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any, cast

import pytest
from server.harness import ServerProcess, free_port, start_server

from metastore.catalog import Database, FieldSchema, Partition, StorageDescriptor, Table
from metastore.client import (
    ConnectionFailed,
    MetastoreClient,
    StatsWrite,
    ThriftMetastoreClient,
    connect,
)
from metastore.client.embedded import EmbeddedMetastoreClient
from metastore.errors import (
    AlreadyExists,
    InvalidInput,
    InvalidObject,
    InvalidOperation,
    MetastoreError,
    NoSuchObject,
)
from metastore.stats.model import ColumnStatsEntry, LongStats, StatsKind, StringStats
from metastore.stats.ndv import NdvSketch


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    workdir = tmp_path_factory.mktemp("client-server")
    proc = start_server(workdir, f"sqlite:///{workdir / 'ms.db'}", workers=1)
    yield proc
    proc.stop()


@pytest.fixture(params=["embedded", pytest.param("embedded-postgresql", marks=pytest.mark.pg), "thrift"])
def client(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[MetastoreClient]:
    if request.param == "embedded":
        c: MetastoreClient = EmbeddedMetastoreClient(f"sqlite:///{tmp_path / 'ms.db'}", str(tmp_path / "wh"))
    elif request.param == "embedded-postgresql":
        from metastore.store import migrate

        url = request.getfixturevalue("pg_url")
        migrate.upgrade(url)
        c = EmbeddedMetastoreClient(url, str(tmp_path / "wh"))
    else:
        server = request.getfixturevalue("server")
        c = ThriftMetastoreClient(f"thrift://127.0.0.1:{server.port}")
    with c:
        yield c


def _table(db: str, name: str) -> Table:
    return Table(
        db_name=db, table_name=name,
        sd=StorageDescriptor(cols=[FieldSchema("id", "bigint"), FieldSchema("name", "string")]),
        partition_keys=[FieldSchema("ds", "string"), FieldSchema("hr", "int")],
    )


def _unique(tmp_path: Path) -> str:
    return "db_" + tmp_path.name.replace("-", "_").lower()[-40:]


def test_catalog_calls(client: MetastoreClient, tmp_path: Path) -> None:
    db = _unique(tmp_path)
    client.create_database(Database(name=db, description="d"))
    with pytest.raises(AlreadyExists):
        client.create_database(Database(name=db))
    assert client.get_database(db).description == "d"
    assert db in client.list_databases() and client.list_databases(db) == [db]
    created = client.create_table(_table(db, "t"))
    assert created.sd.location and created.sd.location.endswith("/t") and created.create_time > 0
    assert client.list_tables(db) == ["t"] and client.list_tables(db, "x*") == []
    with pytest.raises(NoSuchObject):
        client.get_table(db, "missing")
    parts = [Partition(db_name=db, table_name="t", values=[ds, hr]) for ds in ("a", "b") for hr in ("1", "2")]
    added = client.add_partitions(db, "t", parts)
    assert sorted(p.values for p in added) == [["a", "1"], ["a", "2"], ["b", "1"], ["b", "2"]]
    assert all(p.sd.location and p.sd.location.endswith(f"/ds={p.values[0]}/hr={p.values[1]}") for p in added)
    again = client.add_partitions(db, "t", [*parts[:1], Partition(db_name=db, table_name="t", values=["c", "1"])],
                                  if_not_exists=True)
    assert [p.values for p in again] == [["c", "1"]]
    with pytest.raises(AlreadyExists):
        client.add_partitions(db, "t", parts[:1])
    with pytest.raises((InvalidObject, InvalidInput)):
        client.add_partitions(db, "t", [Partition(db_name=db, table_name="t", values=["only-one"])])
    assert client.list_partition_names(db, "t") == ["ds=a/hr=1", "ds=a/hr=2", "ds=b/hr=1", "ds=b/hr=2", "ds=c/hr=1"]
    assert client.list_partition_names(db, "t", ["", "1"]) == ["ds=a/hr=1", "ds=b/hr=1", "ds=c/hr=1"]
    assert [p.values for p in client.list_partitions(db, "t", ["a"])] == [["a", "1"], ["a", "2"]]
    assert client.get_partition(db, "t", ["b", "2"]).values == ["b", "2"]
    fetched = client.get_partitions_by_names(db, "t", ["ds=a/hr=1", "ds=b/hr=1"])
    assert sorted(p.values for p in fetched) == [["a", "1"], ["b", "1"]]
    client.alter_partitions(db, "t", [Partition(db_name=db, table_name="t", values=p.values, sd=p.sd,
                                                parameters={"k": "v"}) for p in fetched])
    assert client.get_partition(db, "t", ["a", "1"]).parameters["k"] == "v"
    dropped = client.drop_partitions(db, "t", ["ds=a/hr=1", "ds=zz/hr=1"], if_exists=True)
    assert [p.values for p in dropped] == [["a", "1"]]
    table = client.get_table(db, "t")
    client.alter_table(db, "t", Table(**{**table.__dict__, "parameters": {**table.parameters, "x": "1"}}))
    assert client.get_table(db, "t").parameters["x"] == "1"
    client.drop_table(db, "t")
    with pytest.raises(NoSuchObject):
        client.drop_table(db, "t")
    client.drop_database(db)
    with pytest.raises(NoSuchObject):
        client.get_database(db)


def test_update_table_parameters_sets_only_the_given_parameters(client: MetastoreClient, tmp_path: Path) -> None:
    db = _unique(tmp_path)
    client.create_database(Database(name=db))
    table = client.create_table(_table(db, "t"))
    client.alter_table(db, "t", Table(**{**table.__dict__, "parameters": {**table.parameters, "a": "1", "b": "2"}}))
    before = client.get_table(db, "t")
    client.update_table_parameters(db, "t", {"b": "3", "fingerprint": "x" * 300})
    after = client.get_table(db, "t")
    assert after.parameters == {**before.parameters, "b": "3", "fingerprint": "x" * 300}
    assert (after.sd, after.partition_keys, after.owner) == (before.sd, before.partition_keys, before.owner)
    with pytest.raises(NoSuchObject):
        client.update_table_parameters(db, "missing", {"a": "1"})
    if isinstance(client, EmbeddedMetastoreClient):
        # Spark's statistics properties are absorbed into column statistics by alter_table only
        with pytest.raises(InvalidInput, match="spark.sql.statistics.numRows"):
            client.update_table_parameters(db, "t", {"spark.sql.statistics.numRows": "1"})
        assert client.get_table(db, "t").parameters == after.parameters
    client.drop_table(db, "t")
    client.drop_database(db)


def _sketch(values: range) -> bytes:
    sketch = NdvSketch()
    sketch.add_values(StatsKind.LONG, list(values))
    return sketch.to_bytes()


def test_statistics_in_batches(client: MetastoreClient, tmp_path: Path) -> None:
    db = _unique(tmp_path)
    client.create_database(Database(name=db))
    client.create_table(_table(db, "t"))
    names = [f"ds=d{i:03d}/hr=1" for i in range(230)]
    client.add_partitions(db, "t", [Partition(db_name=db, table_name="t", values=[f"d{i:03d}", "1"])
                                    for i in range(230)])
    writes = [
        StatsWrite(db, "t", [
            ColumnStatsEntry("id", "bigint", LongStats(num_nulls=1, num_dvs=100, low=i, high=i + 99,
                                                        bit_vector=_sketch(range(i, i + 100)))),
            ColumnStatsEntry("name", "string", StringStats(num_nulls=0, num_dvs=3, max_col_len=5, avg_col_len=2.5)),
        ], partition_name=name, last_analyzed=1_700_000_000)
        for i, name in enumerate(names)
    ]
    assert client.write_statistics(writes, batch_size=100) == 3
    found = client.partition_statistics(db, "t", names[:3], ["id", "name"])
    assert sorted(found) == names[:3]
    first = {e.column: e.stats for e in found[names[0]]}
    assert first["id"].low == 0 and first["id"].high == 99 and first["name"].max_col_len == 5
    # bitVectors come back from the embedded store; a server returns them only with --fetch-bitvector
    assert (first["id"].bit_vector is not None) == client.returns_sketches
    # sketches=False: the embedded client leaves the bit vectors out, a server sends what it is configured to
    plain = client.partition_statistics(db, "t", names[:3], ["id", "name"], sketches=False)
    assert sorted(plain) == names[:3] and plain[names[0]][1] == found[names[0]][1]
    assert plain[names[0]][0].stats == (replace(first["id"], bit_vector=None)
                                        if isinstance(client, EmbeddedMetastoreClient) else first["id"])
    aggregated = client.aggregate_statistics(db, "t", names, ["id"])
    assert aggregated.parts_found == 230
    (agg,) = aggregated.entries
    assert agg.stats.num_nulls == 230 and agg.stats.low == 0 and agg.stats.high == 229 + 99
    assert abs(agg.stats.num_dvs - 329) <= 7, "the metastore merges the stored sketches"
    # merge=True combines with what is stored (Hive's needMerge): null counts add up
    client.write_statistics(writes[:1], merge=True)
    merged = client.partition_statistics(db, "t", names[:1], ["id"])[names[0]][0]
    assert merged.stats.num_nulls == 2
    client.write_statistics([StatsWrite(db, "t", [agg])])
    assert client.table_statistics(db, "t", ["id", "name"])[0].stats.high == 328
    (full_table,) = client.table_statistics(db, "t", ["id"])
    (plain_table,) = client.table_statistics(db, "t", ["id"], sketches=False)
    assert plain_table.stats == (replace(full_table.stats, bit_vector=None)
                                 if isinstance(client, EmbeddedMetastoreClient) else full_table.stats)
    client.delete_partition_statistics(db, "t", names[:1], ["id"])
    assert client.partition_statistics(db, "t", names[:1], ["id"]) == {}
    client.delete_table_statistics(db, "t")
    assert client.table_statistics(db, "t", ["id"]) == []
    with pytest.raises(InvalidInput):
        client.write_statistics([StatsWrite(db, "t", [ColumnStatsEntry(
            "id", "bigint", LongStats(num_nulls=-1, num_dvs=1, low=1, high=0))], partition_name=names[1])])
    with pytest.raises(NoSuchObject):
        client.partition_statistics(db, "missing", names[:1], ["id"])


def _analysis(client: MetastoreClient, db: str, table: str, *, table_column: str = "id"
              ) -> tuple[list[Partition], list[StatsWrite], list[StatsWrite], dict[str, str]]:
    """What an ANALYZE of two partitions of ``table`` writes (a table-level entry of ``table_column``)."""
    parts = client.get_partitions_by_names(db, table, ["ds=a/hr=1", "ds=b/hr=1"])
    altered = [Partition(db_name=db, table_name=table, values=p.values, sd=p.sd,
                         parameters={**p.parameters, "numRows": "10", "analyzed": p.values[0]}) for p in parts]
    entry = ColumnStatsEntry("id", "bigint", LongStats(num_nulls=1, num_dvs=9, low=0, high=9,
                                                        bit_vector=_sketch(range(10))))
    partition_writes = [StatsWrite(db, table, [entry], partition_name=name, last_analyzed=1_700_000_000)
                        for name in ("ds=a/hr=1", "ds=b/hr=1")]
    table_entry = ColumnStatsEntry(table_column, "bigint", LongStats(num_nulls=2, num_dvs=9, low=0, high=9))
    table_writes = [StatsWrite(db, table, [table_entry], last_analyzed=1_700_000_000)]
    return altered, partition_writes, table_writes, {"analysis.fingerprint": f"fp-{table}"}


def _stored(client: MetastoreClient, db: str, table: str) -> tuple[Any, ...]:
    def params(p: dict[str, str]) -> dict[str, str]:
        return {k: v for k, v in p.items() if k != "transient_lastDdlTime"}

    names = ["ds=a/hr=1", "ds=a/hr=2", "ds=b/hr=1"]
    return (
        [params(p.parameters) for p in client.get_partitions_by_names(db, table, names)],
        {n: [(e.column, e.stats) for e in entries]
         for n, entries in client.partition_statistics(db, table, names, ["id", "name"]).items()},
        [(e.column, e.stats) for e in client.table_statistics(db, table, ["id", "name"])],
        params(client.get_table(db, table).parameters),
    )


def _analysis_tables(client: MetastoreClient, db: str, names: tuple[str, ...]) -> None:
    client.create_database(Database(name=db))
    for name in names:
        client.create_table(_table(db, name))
        client.add_partitions(db, name, [Partition(db_name=db, table_name=name, values=[ds, "1"]) for ds in "ab"]
                              + [Partition(db_name=db, table_name=name, values=["a", "2"])])


def test_write_analysis_stores_what_the_separate_calls_store(client: MetastoreClient, tmp_path: Path) -> None:
    """write_analysis (the embedded client: one transaction) leaves what alter_partitions, write_statistics of
    the partitions and of the table and update_table_parameters leave, made in turn (the base client's way)."""
    db = _unique(tmp_path)
    _analysis_tables(client, db, ("t", "u"))
    client.write_analysis(db, "t", *_analysis(client, db, "t"))
    MetastoreClient.write_analysis(client, db, "u", *_analysis(client, db, "u"))
    one, separate = _stored(client, db, "t"), _stored(client, db, "u")
    assert one[0][0]["analyzed"] == "a" and one[0][1].get("analyzed") is None
    assert sorted(one[1]) == ["ds=a/hr=1", "ds=b/hr=1"] and one[2][0][1].num_nulls == 2
    assert one[3]["analysis.fingerprint"] == "fp-t" and separate[3]["analysis.fingerprint"] == "fp-u"
    one[3]["analysis.fingerprint"] = separate[3]["analysis.fingerprint"] = "-"
    assert one == separate
    # nothing to write but parameters, or nothing at all
    client.write_analysis(db, "t", [], [], [], {"analysis.fingerprint": "again"})
    assert client.get_table(db, "t").parameters["analysis.fingerprint"] == "again"
    client.write_analysis(db, "t", [], [])
    assert _stored(client, db, "t")[:3] == one[:3]


def test_write_analysis_of_listed_partitions_parameters_only_stores_what_alter_stores(
        client: MetastoreClient, tmp_path: Path) -> None:
    """ANALYZE's partitions are those it listed with new parameters: with parameters_only the embedded client
    writes their parameters alone, and every stored definition (location, format, columns, times, parameters) and
    statistics are what alter_partitions leaves; a partition whose location alter_partitions would still qualify
    (given unqualified) is altered as before. A missing partition fails as alter_partitions fails."""
    db = _unique(tmp_path)
    _analysis_tables(client, db, ("t", "u"))
    names = ["ds=a/hr=1", "ds=b/hr=1"]

    def write(table: str, parameters_only: bool) -> None:
        listed = client.get_partitions_by_names(db, table, names)
        new = [replace(p, parameters={**p.parameters, "numRows": "10", "analyzed": p.values[0]}) for p in listed]
        # the second one's location as a user might give it, unqualified: alter_partitions stores it qualified
        assert new[1].sd.location.startswith("file:")
        new[1] = replace(new[1], sd=replace(new[1].sd, location=new[1].sd.location[len("file:"):]))
        _, partition_writes, table_writes, changes = _analysis(client, db, table)
        client.write_analysis(db, table, new, partition_writes, table_writes, changes,
                              parameters_only=parameters_only)

    def stored(table: str) -> tuple[Any, ...]:
        parts = client.get_partitions_by_names(db, table, [*names, "ds=a/hr=2"])
        definitions = [(p.values, p.sd.location.split(f"/{table}/", 1)[1], p.sd.location[:5], p.sd.input_format,
                        p.sd.output_format, p.sd.cols, p.sd.serde_info, p.last_access_time,
                        {k: v for k, v in p.parameters.items() if k != "transient_lastDdlTime"})
                       for p in sorted(parts, key=lambda p: p.values)]
        table_params = {k: v for k, v in client.get_table(db, table).parameters.items()
                        if k not in ("transient_lastDdlTime", "analysis.fingerprint")}
        return definitions, _stored(client, db, table)[1:3], table_params

    def created(table: str) -> list[int]:
        return [p.create_time for p in sorted(client.list_partitions(db, table), key=lambda p: p.values)]

    # the tables' partitions were created in different seconds: each keeps its creation time
    before = created("t"), created("u")
    write("t", True)
    write("u", False)
    assert (created("t"), created("u")) == before
    fast, altered = stored("t"), stored("u")
    # sorted by values: ds=a/hr=1, ds=a/hr=2 (not analysed), ds=b/hr=1 (given unqualified)
    assert fast[0][0][8]["analyzed"] == "a" and "analyzed" not in fast[0][1][8] and fast[0][2][8]["analyzed"] == "b"
    assert fast[0][2][1] == "ds=b/hr=1" and fast[0][2][2] == "file:"
    assert fast == altered
    with pytest.raises(InvalidOperation, match="alter is not possible"):
        missing = replace(client.get_partitions_by_names(db, "t", names[:1])[0], values=["z", "9"])
        client.write_analysis(db, "t", [missing], [], parameters_only=True)


def test_write_analysis_that_fails_midway_leaves_nothing_half_written(client: MetastoreClient,
                                                                      tmp_path: Path) -> None:
    """The embedded client's write_analysis is one transaction: a table-level entry for a column the table lacks
    fails it after the partitions' definitions and statistics were written in it, and none of it stays. A
    server gets separate calls (Hive's), so there the calls before the failing one stay written."""
    db = _unique(tmp_path)
    _analysis_tables(client, db, ("t",))
    before = _stored(client, db, "t")
    with pytest.raises((InvalidObject, InvalidInput, NoSuchObject)):
        client.write_analysis(db, "t", *_analysis(client, db, "t", table_column="nope"))
    after = _stored(client, db, "t")
    if isinstance(client, EmbeddedMetastoreClient):
        assert after == before
    else:
        assert after[0] != before[0] and sorted(after[1]) == ["ds=a/hr=1", "ds=b/hr=1"]
        assert after[2] == [] and "analysis.fingerprint" not in after[3]
    # and a write that fails on the table's parameters (Spark's statistics properties, refused by the embedded
    # metastore's update_table_parameters) leaves nothing either
    if isinstance(client, EmbeddedMetastoreClient):
        altered, partition_writes, table_writes, _ = _analysis(client, db, "t")
        with pytest.raises(InvalidInput, match="spark.sql.statistics.numRows"):
            client.write_analysis(db, "t", altered, partition_writes, table_writes,
                                  {"spark.sql.statistics.numRows": "1"})
        assert _stored(client, db, "t") == before


def test_thrift_client_reconnects_after_a_restart(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'ms.db'}"
    port = free_port()
    servers = [start_server(tmp_path / "a", db_url, workers=1, port=port)]
    client = ThriftMetastoreClient(f"thrift://127.0.0.1:{port}", timeout=30)
    try:
        client.create_database(Database(name="kept"))
        servers[-1].stop()
        servers.append(start_server(tmp_path / "b", db_url, workers=1, port=port))
        # the old socket is dead: the call notices, reconnects and is sent again
        assert "kept" in client.list_databases()
        servers[-1].stop()
        with pytest.raises(ConnectionFailed, match="get_all_databases: cannot connect"):
            client.list_databases()
        servers.append(start_server(tmp_path / "c", db_url, workers=1, port=port))
        assert "kept" in client.list_databases(), "a new connection once a server is back"
    finally:
        client.close()
        for server in servers:
            server.stop()


def test_failover_between_uris_and_connect(server: ServerProcess, tmp_path: Path) -> None:
    dead = free_port()
    with ThriftMetastoreClient(f"thrift://127.0.0.1:{dead}, thrift://127.0.0.1:{server.port}") as c:
        assert c.target == f"thrift://127.0.0.1:{server.port}"
        assert "default" in c.list_databases()
    with pytest.raises(ConnectionFailed, match=f"127.0.0.1:{dead}"):
        ThriftMetastoreClient(f"thrift://127.0.0.1:{dead}")
    with pytest.raises(InvalidInput, match="not of the form thrift://host:port"):
        ThriftMetastoreClient("localhost:9083")
    with connect(f"thrift://127.0.0.1:{server.port}") as c:
        assert isinstance(c, ThriftMetastoreClient)
    with connect(f"sqlite:///{tmp_path / 'e.db'}", warehouse=str(tmp_path / "wh")) as c:
        assert isinstance(c, EmbeddedMetastoreClient) and c.list_databases() == ["default"]
    with pytest.raises(InvalidInput, match="neither a metastore URI"):
        connect("just-a-name")
    assert issubclass(ConnectionFailed, MetastoreError)


def test_embedded_postgresql_needs_an_upgraded_schema(pg_url: str, tmp_path: Path) -> None:
    """A shared PostgreSQL database is upgraded on purpose (`metastore db upgrade`), never by a shell."""
    from metastore.errors import SchemaOutOfDate

    with pytest.raises(SchemaOutOfDate, match="metastore db upgrade"):
        EmbeddedMetastoreClient(pg_url, str(tmp_path / "wh"))


def test_embedded_clients_of_one_database_share_an_engine_and_close_its_connections(tmp_path: Path) -> None:
    """Clients opened one after the other on a database reuse its engine (SQLAlchemy's compiled statements live
    there: a client opened per call would compile every statement again); when the last one closes, no
    connection stays open, and a client opened later works on the same engine."""
    url = f"sqlite:///{tmp_path / 'ms.db'}"
    first = EmbeddedMetastoreClient(url, str(tmp_path / "wh"))
    engine = first._ms.store.engine
    first.create_database(Database(name="shared"))
    with EmbeddedMetastoreClient(url, str(tmp_path / "wh")) as second:
        assert second._ms.store.engine is engine
        first.close()  # another client still has the database open: its connections stay usable
        first.close()  # closing twice releases once
        assert second.get_database("shared").name == "shared"
    assert engine.pool.checkedin() == 0 and engine.pool.checkedout() == 0
    compiled = len(cast(Any, engine)._compiled_cache)
    assert compiled > 0
    with EmbeddedMetastoreClient(url, str(tmp_path / "wh")) as third:
        assert third._ms.store.engine is engine
        assert third.get_database("shared").name == "shared"
        assert len(cast(Any, engine)._compiled_cache) == compiled  # the same statement, not compiled again
    other = EmbeddedMetastoreClient(f"sqlite:///{tmp_path / 'other.db'}", str(tmp_path / "wh"))
    with other:
        assert other._ms.store.engine is not engine


# Run in a fresh interpreter: the remote client, used through connect() for catalog calls and a statistics
# round trip; it prints the modules that got loaded although a Spark executor or a planner must not need them.
_REMOTE_ONLY = """
import json, sys
import metastore.client.remote
from metastore.catalog import Database, FieldSchema, StorageDescriptor, Table
from metastore.client import StatsWrite, connect
from metastore.stats.model import ColumnStatsEntry, LongStats

with connect(sys.argv[1]) as c:
    c.create_database(Database(name="remote_only"))
    c.create_table(Table(db_name="remote_only", table_name="t",
                         sd=StorageDescriptor(cols=[FieldSchema("id", "bigint")])))
    entry = ColumnStatsEntry("id", "bigint", LongStats(num_nulls=0, num_dvs=3, low=1, high=3))
    c.write_statistics([StatsWrite("remote_only", "t", [entry])])
    assert c.table_statistics("remote_only", "t", ["id"]) == [entry], c.table_statistics("remote_only", "t", ["id"])
    c.drop_database("remote_only", cascade=True)
heavy = ("sqlalchemy", "alembic", "psycopg2", "metastore.store", "metastore.service", "metastore.client.embedded")
print(json.dumps(sorted(m for m in sys.modules if any(m == h or m.startswith(h + ".") for h in heavy))))
"""


def test_remote_client_loads_no_store_service_or_sqlalchemy(server: ServerProcess) -> None:
    """A Spark executor or a query planner talks to a server with the Thrift client alone."""
    done = subprocess.run(
        [sys.executable, "-c", _REMOTE_ONLY, f"thrift://127.0.0.1:{server.port}"],
        capture_output=True, text=True, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == []
