"""The client API on both implementations (embedded over SQLite, Thrift against a `metastore serve` subprocess):
the same calls give the same domain objects and the same metastore.errors; statistics go in batches; the Thrift
client reconnects after a server restart and fails over between URIs."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
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
from metastore.errors import AlreadyExists, InvalidInput, InvalidObject, MetastoreError, NoSuchObject
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
    client.delete_partition_statistics(db, "t", names[:1], ["id"])
    assert client.partition_statistics(db, "t", names[:1], ["id"]) == {}
    client.delete_table_statistics(db, "t")
    assert client.table_statistics(db, "t", ["id"]) == []
    with pytest.raises(InvalidInput):
        client.write_statistics([StatsWrite(db, "t", [ColumnStatsEntry(
            "id", "bigint", LongStats(num_nulls=-1, num_dvs=1, low=1, high=0))], partition_name=names[1])])
    with pytest.raises(NoSuchObject):
        client.partition_statistics(db, "missing", names[:1], ["id"])


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
