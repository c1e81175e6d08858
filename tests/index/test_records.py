"""Index records through both clients (embedded and a `metastore serve` over Thrift), on SQLite and PostgreSQL:
create, list, finish a build, filter splits remotely, drop; DROP TABLE / DROP PARTITION / DROP DATABASE take the
index records and files with them; HMS calls are unaffected."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from metastore.catalog import FieldSchema, Partition, SerDeInfo, StorageDescriptor, Table
from metastore.client import MetastoreClient
from metastore.errors import AlreadyExists, InvalidInput, InvalidOperation, NoSuchObject
from metastore.index.build import BuildTarget, build_parts
from metastore.index.model import IndexKind, IndexLevel, IndexRecord, IndexState, Split
from metastore.index.predicate import Compare, Value, ValueKind, to_json
from metastore.index.scan import data_file
from metastore.locations import local_path
from metastore.orcio import OrcWriter

ORC = (
    "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
    "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat",
    "org.apache.hadoop.hive.ql.io.orc.OrcSerde",
)


def _table(client: MetastoreClient, name: str, partitioned: bool) -> Table:
    from metastore.catalog import Database

    try:
        client.create_database(Database(name="db"))
    except AlreadyExists:
        pass
    table = Table(
        db_name="db", table_name=name,
        sd=StorageDescriptor(
            cols=[FieldSchema("id", "bigint", None), FieldSchema("s", "string", None)], input_format=ORC[0],
            output_format=ORC[1], serde_info=SerDeInfo(serialization_lib=ORC[2]),
        ),
        partition_keys=[FieldSchema("ds", "string", None)] if partitioned else [],
        parameters={}, table_type="MANAGED_TABLE",
    )
    return client.create_table(table)


def _write(path: Path, ids: list[int]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with OrcWriter(str(path), "struct<id:bigint,s:string>") as writer:
        writer.write_batch({"id": ids, "s": [str(i) for i in ids]})


def _build(client: MetastoreClient, name: str, table: Table, kind: IndexKind, level: IndexLevel,
           targets: list[BuildTarget]) -> IndexRecord:
    record = client.create_index(IndexRecord(
        name=name, db_name=table.db_name, table_name=table.table_name, column="id", column_type="bigint",
        kind=kind, level=level,
    ))
    assert record.state is IndexState.CREATING and record.location.endswith(f"/db/{table.table_name}/id/{name}")
    report = build_parts(record, targets, column_position=0)
    return client.finish_index_build(table.db_name, table.table_name, name, report.parts, built=1234, partitions=None)


def test_records_round_trip_and_filter(client: MetastoreClient) -> None:
    table = _table(client, "t", partitioned=False)
    location = local_path(table.sd.location)
    assert location is not None
    _write(location / "a.orc", list(range(0, 100)))
    _write(location / "b.orc", list(range(100, 200)))
    files = tuple(data_file(str(location / n)) for n in ("a.orc", "b.orc"))
    record = _build(client, "ix_id", table, IndexKind.BTREE, IndexLevel.TABLE, [BuildTarget("", files)])
    assert record.state is IndexState.READY and record.built == 1234
    assert [f.path for f in record.parts[0].files] == [f.path for f in files]
    assert os.path.isfile(local_path(record.parts[0].location) or "")
    assert [r.name for r in client.list_indexes("db", "t")] == ["ix_id"]
    assert [r.name for r in client.list_indexes("db")] == ["ix_id"]
    assert client.get_index("db", "t", "IX_ID").column == "id"
    with pytest.raises(NoSuchObject):
        client.get_index("db", "other", "ix_id")

    with pytest.raises(AlreadyExists):
        client.create_index(IndexRecord(name="ix_id", db_name="db", table_name="t", column="s",
                                        column_type="string", kind=IndexKind.BLOOM, level=IndexLevel.STRIPE))
    with pytest.raises(AlreadyExists, match="btree index ix_id exists already"):
        client.create_index(IndexRecord(name="other", db_name="db", table_name="t", column="id",
                                        column_type="bigint", kind=IndexKind.BTREE, level=IndexLevel.STRIPE))
    with pytest.raises(NoSuchObject):
        client.create_index(IndexRecord(name="x", db_name="db", table_name="missing", column="id",
                                        column_type="bigint", kind=IndexKind.BTREE, level=IndexLevel.STRIPE))

    predicate = to_json(Compare("id", "=", Value(ValueKind.INTEGER, "150")))
    splits = [Split(f.path, 0, f.size) for f in files]
    result = client.filter_splits("db", "t", predicate, splits)
    assert result.kept == (1,)
    assert [(c.name, c.considered, c.kept) for c in result.counts] == [("ix_id", 2, 1)]
    with pytest.raises(InvalidInput, match="column 'nope' does not exist"):
        client.filter_splits("db", "t", json.dumps({"op": "is_null", "column": "nope"}), splits)
    with pytest.raises(InvalidInput, match="not valid JSON"):
        client.filter_splits("db", "t", "{", splits)

    index_dir = local_path(record.location)
    client.drop_index("db", "t", "ix_id")
    assert client.list_indexes("db", "t") == []
    assert index_dir is not None and not index_dir.exists()
    with pytest.raises(NoSuchObject):
        client.drop_index("db", "t", "ix_id")
    # Hive's own calls still answer as before
    assert client.get_table("db", "t").table_name == "t"


def test_drop_table_and_partition_take_their_indexes(client: MetastoreClient) -> None:
    table = _table(client, "p", partitioned=True)
    base = local_path(table.sd.location)
    assert base is not None
    client.add_partitions("db", "p", [Partition(values=["1"], db_name="db", table_name="p"),
                                      Partition(values=["2"], db_name="db", table_name="p")])
    targets = []
    for ds in ("1", "2"):
        _write(base / f"ds={ds}" / "f.orc", [int(ds)] * 10)
        targets.append(BuildTarget(f"ds={ds}", (data_file(str(base / f"ds={ds}" / "f.orc")),)))
    record = _build(client, "ix_p", table, IndexKind.MINMAX, IndexLevel.PARTITION, targets)
    assert {p.partition for p in record.parts} == {"ds=1", "ds=2"}
    part1 = next(p for p in record.parts if p.partition == "ds=1")
    client.drop_partitions("db", "p", ["ds=1"])
    after = client.get_index("db", "p", "ix_p")
    assert {p.partition for p in after.parts} == {"ds=2"}
    assert not (local_path(part1.location) or Path("/nonexistent")).exists()

    table_level = _build(client, "ix_t", table, IndexKind.BLOOM, IndexLevel.TABLE, targets[1:])
    with pytest.raises(InvalidOperation, match="TABLE-level index; it cannot be dropped for one partition"):
        client.drop_index("db", "p", table_level.name, ["ds=2"])
    index_dirs = [local_path(r.location) for r in client.list_indexes("db", "p")]
    assert len(index_dirs) == 2 and all(d is not None and d.is_dir() for d in index_dirs)
    client.drop_table("db", "p")
    assert client.list_indexes() == []
    assert all(d is not None and not d.exists() for d in index_dirs)


def test_drop_database_cascade_takes_its_indexes(client: MetastoreClient) -> None:
    table = _table(client, "t", partitioned=False)
    base = local_path(table.sd.location)
    assert base is not None
    _write(base / "f.orc", [1, 2, 3])
    record = _build(client, "ix_d", table, IndexKind.MINMAX, IndexLevel.STRIPE,
                    [BuildTarget("", (data_file(str(base / "f.orc")),))])
    index_dir = local_path(record.location)
    assert index_dir is not None and index_dir.is_dir()
    client.drop_database("db", delete_data=True, cascade=True)
    assert client.list_indexes() == []
    assert not index_dir.exists()
