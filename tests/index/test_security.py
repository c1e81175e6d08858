"""Index calls never reach outside the index root: column names and types are checked against the table, every
name becomes one safe directory segment, a build's part files must lie directly in the index's directory, and
files are deleted only inside the index root. Includes the audit's attack: an index on column
`../../../../victim` whose DROP INDEX removed a directory outside the root."""

from __future__ import annotations

from pathlib import Path

import pytest

from metastore.catalog import Database, FieldSchema, SerDeInfo, StorageDescriptor, Table
from metastore.client import MetastoreClient
from metastore.client.embedded import EmbeddedMetastoreClient
from metastore.errors import AlreadyExists, InvalidObject
from metastore.index.model import IndexKind, IndexLevel, IndexPart, IndexRecord
from metastore.locations import local_path
from metastore.service.indexes import inside, path_segment

ORC = ("org.apache.hadoop.hive.ql.io.orc.OrcInputFormat", "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat",
       "org.apache.hadoop.hive.ql.io.orc.OrcSerde")


def _table(client: MetastoreClient, columns: list[tuple[str, str]], partitioned: bool = False) -> Table:
    try:
        client.create_database(Database(name="db"))
    except AlreadyExists:
        pass
    return client.create_table(Table(
        db_name="db", table_name="t",
        sd=StorageDescriptor(cols=[FieldSchema(n, t, None) for n, t in columns], input_format=ORC[0],
                             output_format=ORC[1], serde_info=SerDeInfo(serialization_lib=ORC[2])),
        partition_keys=[FieldSchema("ds", "string", None)] if partitioned else [], parameters={},
        table_type="MANAGED_TABLE",
    ))


def _index(column: str, column_type: str = "", name: str = "ix", **extra: object) -> IndexRecord:
    return IndexRecord(name=name, db_name="db", table_name="t", column=column, column_type=column_type,
                       kind=IndexKind.BTREE, level=IndexLevel.TABLE, **extra)


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim" / "ix"
    victim.mkdir(parents=True)
    (victim / "precious.txt").write_text("keep me")
    return victim


def test_the_audit_attack_is_refused(client: MetastoreClient, tmp_path: Path) -> None:
    """The audit's exploit: once <root>/db/t existed, column="../../../../victim" put the index directory on
    /tmp/.../victim/ix and DROP INDEX removed it. Now the column must be one of the table's."""
    _table(client, [("id", "bigint")])
    victim = _victim(tmp_path)
    first = client.create_index(_index("id", "bigint", name="ok"))  # makes <root>/db/t/... exist
    (local_path(first.location) or Path("/")).mkdir(parents=True)
    with pytest.raises(InvalidObject, match=r"column '\.\./\.\./\.\./\.\./victim' does not exist in db\.t"):
        client.create_index(_index("../../../../victim", "bigint"))
    assert [r.name for r in client.list_indexes("db", "t")] == ["ok"]
    client.drop_index("db", "t", "ok")
    assert (victim / "precious.txt").read_text() == "keep me"


def test_columns_and_types_are_checked(client: MetastoreClient) -> None:
    _table(client, [("id", "bigint"), ("b", "binary"), ("m", "map<string,int>"), ("d", "decimal(38,2)")],
           partitioned=True)
    with pytest.raises(InvalidObject, match="column 'nope' does not exist in db.t"):
        client.create_index(_index("nope"))
    with pytest.raises(InvalidObject, match="column 'b' is binary; indexes support tinyint"):
        client.create_index(_index("b"))
    with pytest.raises(InvalidObject, match="column 'm'"):
        client.create_index(_index("m"))
    with pytest.raises(InvalidObject, match="column 'id' of db.t is bigint, not int"):
        client.create_index(_index("id", "int"))
    with pytest.raises(InvalidObject, match="column 'id' has an unknown type 'nonsense'"):
        client.create_index(_index("id", "nonsense"))
    with pytest.raises(InvalidObject, match="column 'ds' is a partition column of db.t"):
        client.create_index(_index("ds", "string"))
    with pytest.raises(InvalidObject, match="bloom.fpp must be a number between 0 and 1, got '2'"):
        client.create_index(_index("id", properties={"bloom.fpp": "2"}))
    with pytest.raises(InvalidObject, match="unknown property 'x'"):
        client.create_index(_index("id", properties={"x": "1"}))
    assert client.list_indexes("db", "t") == []
    # the type comes from the table when none is given, in its canonical spelling
    assert client.create_index(_index("d", "DECIMAL(38, 2)")).column_type == "decimal(38,2)"
    assert client.create_index(_index("ID", name="ix2")).column_type == "bigint"


def test_odd_column_names_stay_one_directory_inside_the_root(client: MetastoreClient, tmp_path: Path) -> None:
    """Hive allows any column name (`a/b`, `..`); the index directory encodes it as one segment."""
    table = _table(client, [("..", "int"), ("a/../../b", "string"), ("%2e", "int")])
    root = (tmp_path / "warehouse" / ".indexes").resolve()
    made = [client.create_index(_index(c, name=f"ix{i}")) for i, c in enumerate(["..", "a/../../b", "%2e"])]
    dirs = [local_path(r.location) for r in made]
    assert [d.parent.name if d else None for d in dirs] == ["%2E%2E", "a%2F%2E%2E%2F%2E%2E%2Fb", "%252e"]
    for d in dirs:
        assert d is not None and d.resolve().is_relative_to(root) and d.resolve().parent.parent.name == "t"
        d.mkdir(parents=True)
    for r in made:
        client.drop_index("db", "t", r.name)
    assert all(d is not None and not d.exists() for d in dirs)
    assert table.sd.location is not None and (local_path(table.sd.location) or Path()).is_dir()


def test_build_parts_must_be_files_in_the_index_directory(client: MetastoreClient, tmp_path: Path) -> None:
    _table(client, [("id", "bigint")])
    record = client.create_index(_index("id"))
    victim = _victim(tmp_path)
    bad = [
        f"{record.location}/../../../../../../victim/ix",  # the audit's `..` after the prefix
        f"{record.location}/sub/part.idx",
        f"{record.location}/",
        f"{record.location}x/part.idx",
        f"file:{victim}",
        str(victim / "precious.txt"),
    ]
    for location in bad:
        with pytest.raises(InvalidObject, match="is not a file in the index directory"):
            client.finish_index_build("db", "t", "ix", [IndexPart("", "", location, 0)], built=1)
    good = client.finish_index_build("db", "t", "ix", [IndexPart("", "", f"{record.location}/part-1.idx", 0)],
                                     built=1)
    assert [p.location for p in good.parts] == [f"{record.location}/part-1.idx"]
    client.drop_index("db", "t", "ix")
    assert (victim / "precious.txt").read_text() == "keep me"


def test_deletion_only_inside_the_index_root(tmp_path: Path) -> None:
    """A record pointing outside the root (the root was reconfigured, or the database edited by hand) loses
    its record on DROP INDEX, but nothing outside the root is deleted."""
    import sqlalchemy as sa

    from metastore.store.schema import SPLIT_INDEXES

    with EmbeddedMetastoreClient(f"sqlite:///{tmp_path / 'ms.db'}", str(tmp_path / "warehouse")) as client:
        _table(client, [("id", "bigint")])
        client.create_index(_index("id"))
        victim = _victim(tmp_path)
        store = client._ms.store
        with store.engine.begin() as conn:
            conn.execute(sa.update(SPLIT_INDEXES).values(LOCATION=f"file:{victim}"))
        client.drop_index("db", "t", "ix")
        assert client.list_indexes() == []
        assert (victim / "precious.txt").read_text() == "keep me"


def test_inside_and_path_segment() -> None:
    assert inside("/r", "/r/a/b") and inside("file:/r", "/r/a") and inside("s3a://B/r", "s3://b/r/x")
    for outside in ["/r", "/r/", "/r/../x", "/r/a/../../x", "/rx/a", "/x", "s3://b/r/a", "/r/./a", "/r/a\x00"]:
        assert not inside("/r", outside), outside
    assert not inside("s3://b/r", "s3://c/r/a") and not inside("s3://b/r", "/r/a")
    assert path_segment("Ab_1") == "Ab_1" and path_segment("a b/é") == "a%20b%2F%C3%A9"


def test_symlinks_out_of_the_root_are_not_followed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (root / "db").symlink_to(outside)
    assert not inside(str(root), str(root / "db" / "t"))
