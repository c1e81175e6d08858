"""The issue-10 extension calls (metastore_get/put/delete_file_partials) over Thrift, on SQLite and PostgreSQL:
our clients round-trip per-file partials, the server checks requests like any other, partials go with their
partitions, and a raw generated client sees them under names no Hive client uses."""

from __future__ import annotations

import pytest

from metastore.api.hive_metastore import ThriftHiveMetastore
from metastore.api.hive_metastore import ttypes as tt
from metastore.catalog import Database, FieldSchema, Partition, StorageDescriptor, Table
from metastore.client import ThriftMetastoreClient
from metastore.errors import InvalidInput, NoSuchObject
from metastore.stats.partial_store import FilePartials
from server.harness import ServerProcess


@pytest.fixture
def remote(server: ServerProcess, dbname: str):
    client = ThriftMetastoreClient(f"thrift://127.0.0.1:{server.port}")
    client.create_database(Database(name=dbname))
    client.create_table(Table(
        db_name=dbname, table_name="t", sd=StorageDescriptor(cols=[FieldSchema("id", "bigint")]),
        partition_keys=[FieldSchema("ds", "string")],
    ))
    client.add_partitions(dbname, "t", [Partition(dbname, "t", [d]) for d in ("1", "2")])
    try:
        yield client
    finally:
        client.close()


def _file(path: str, partition: str | None, mtime: int = 5, blob: bytes = b"\x00\x01\xfe") -> FilePartials:
    return FilePartials(path, 1234, mtime, "etag-1", partition, 10, 80, b'{"v": 1}', {"1:bigint|bigint": blob})


def test_round_trip_replace_and_delete(remote: ThriftMetastoreClient, dbname: str):
    a, b = _file("s3://bkt/t/ds=1/a.orc", "ds=1"), _file("s3://bkt/t/ds=2/b.orc", "ds=2")
    remote.put_file_partials(dbname, "t", [a, b])
    assert remote.get_file_partials(dbname, "t") == [a, b]
    assert remote.get_file_partials(dbname, "t", ["ds=2"]) == [b]
    assert remote.get_file_partials(dbname, "t", paths=[a.path]) == [a]
    rewritten = _file(a.path, "ds=1", mtime=6, blob=b"new")
    remote.put_file_partials(dbname, "t", [rewritten])
    assert remote.get_file_partials(dbname, "t", ["ds=1"]) == [rewritten]
    remote.delete_file_partials(dbname, "t", paths=[b.path])
    assert remote.get_file_partials(dbname, "t") == [rewritten]
    remote.drop_partitions(dbname, "t", ["ds=1"], delete_data=False)
    assert remote.get_file_partials(dbname, "t") == []


def test_errors_are_declared_exceptions(remote: ThriftMetastoreClient, dbname: str):
    with pytest.raises(NoSuchObject, match="partition ds=9 of .* does not exist"):
        remote.put_file_partials(dbname, "t", [_file("/w/a.orc", "ds=9")])
    with pytest.raises(InvalidInput, match="must name its partition"):
        remote.put_file_partials(dbname, "t", [_file("/w/a.orc", None)])
    with pytest.raises(NoSuchObject, match="does not exist"):
        remote.get_file_partials(dbname, "nope")
    assert remote.get_file_partials(dbname, "t") == []


def test_the_generated_client_reaches_the_extension_calls(client: ThriftHiveMetastore.Client, remote, dbname: str):
    f = tt.MetastoreFilePartials(path="/w/x.orc", size=1, mtimeNs=2, partName="ds=2", partials={"k": b"\xff"})
    client.metastore_put_file_partials(tt.MetastorePutFilePartialsRequest(dbName=dbname, tblName="t", files=[f]))
    result = client.metastore_get_file_partials(tt.MetastoreGetFilePartialsRequest(dbName=dbname, tblName="t"))
    assert [(g.path, g.partName, g.partials) for g in result.files] == [("/w/x.orc", "ds=2", {"k": b"\xff"})]
    # a request without its required field is refused like any Hive call's
    with pytest.raises(tt.InvalidInputException):
        client.metastore_put_file_partials(tt.MetastorePutFilePartialsRequest(dbName=dbname, tblName="t"))
    with pytest.raises(tt.NoSuchObjectException):
        client.metastore_delete_file_partials(tt.MetastoreDeleteFilePartialsRequest(dbName=dbname, tblName="zz"))
    # the connection still serves Hive's calls
    assert client.get_table(dbname, "t").tableName == "t"


def test_the_store_looks_up_several_partitions_in_one_call(remote: ThriftMetastoreClient, dbname: str):
    from metastore.client.file_partials import MetastorePartialStore
    from metastore.storage import FileRef

    a, b, gone = (_file("/w/ds=1/a.orc", "ds=1"), _file("/w/ds=2/b.orc", "ds=2"), _file("/w/ds=2/gone.orc", "ds=2"))
    remote.put_file_partials(dbname, "t", [a, b, gone])
    calls: list[str] = []
    original = remote.get_file_partials

    def counted(*args, **kwargs):
        calls.append("get")
        return original(*args, **kwargs)

    remote.get_file_partials = counted
    store = MetastorePartialStore(remote, dbname, "t")
    refs = {"ds=1": [FileRef(a.path, 1234, 5, "etag-1")],
            "ds=2": [FileRef(b.path, 1234, 6, "etag-1"), FileRef("/w/ds=2/new.orc", 1, 1)]}
    # what lookup gives partition by partition: b changed (another mtime), new.orc was never stored
    assert store.lookup_many(refs) == {a.path: a}
    assert calls == ["get"]
    # retain knows what each partition had stored, without reading again
    store.retain(refs["ds=2"], "ds=2")
    assert calls == ["get"]
    assert sorted(f.path for f in original(dbname, "t")) == [a.path, b.path]


def test_the_store_forgets_gone_files_of_several_partitions_in_one_call(remote: ThriftMetastoreClient, dbname: str):
    from metastore.client.file_partials import MetastorePartialStore
    from metastore.storage import FileRef

    remote.add_partitions(dbname, "t", [Partition(dbname, "t", ["3"])])
    a, gone1, b, gone2, c = (_file("/w/ds=1/a.orc", "ds=1"), _file("/w/ds=1/gone.orc", "ds=1"),
                             _file("/w/ds=2/b.orc", "ds=2"), _file("/w/ds=2/gone.orc", "ds=2"),
                             _file("/w/ds=3/c.orc", "ds=3"))
    remote.put_file_partials(dbname, "t", [a, gone1, b, gone2, c])
    calls: list[str] = []
    originals = {name: getattr(remote, name) for name in ("get_file_partials", "delete_file_partials")}

    def counted(name: str):
        def call(*args, **kwargs):
            calls.append(name)
            return originals[name](*args, **kwargs)
        return call

    for name in originals:
        setattr(remote, name, counted(name))
    store = MetastorePartialStore(remote, dbname, "t")
    refs = {"ds=1": [FileRef(a.path, 1234, 5, "etag-1")], "ds=2": [FileRef(b.path, 1234, 5, "etag-1")]}
    assert store.lookup_many(refs) == {a.path: a, b.path: b}
    # both partitions' gone files in one delete; ds=3 (not retained) keeps everything
    store.retain_many(refs)
    assert calls == ["get_file_partials", "delete_file_partials"]
    assert sorted(f.path for f in originals["get_file_partials"](dbname, "t")) == [a.path, b.path, c.path]
    # partitions no lookup saw are read first (one call for all of them); nothing gone, nothing deleted
    calls.clear()
    MetastorePartialStore(remote, dbname, "t").retain_many({"ds=1": refs["ds=1"], "ds=3": [FileRef(c.path, 1, 1)]})
    assert calls == ["get_file_partials"]
    assert len(originals["get_file_partials"](dbname, "t")) == 3
