"""Tables: create, get, get many, list, alter (incl. rename), drop."""

from __future__ import annotations

from dataclasses import replace

import pytest
import sqlalchemy as sa

from metastore.catalog import Database, FieldSchema, Order, SerDeInfo, SkewedInfo, StorageDescriptor, Table
from metastore.errors import AlreadyExists, InvalidObject, InvalidOperation, NoSuchObject
from metastore.store import Store
from store.builders import sales_table


@pytest.fixture
def db(store: Store) -> Store:
    with store.transaction() as uow:
        uow.databases.create(Database(name="sales"))
    return store


def full_table() -> Table:
    return Table(
        db_name="Sales",
        table_name="Orders",
        owner="alice",
        owner_type=1,
        create_time=1700000000,
        last_access_time=1700000001,
        retention=7,
        sd=StorageDescriptor(
            cols=[FieldSchema("ID", "bigint", "key"), FieldSchema("Amount", "decimal(10,2)")],
            location="/warehouse/sales.db/orders",
            input_format="in.Format",
            output_format="out.Format",
            compressed=True,
            num_buckets=4,
            serde_info=SerDeInfo(
                name="serde", serialization_lib="lib.Serde", parameters={"field.delim": ","}
            ),
            bucket_cols=["id"],
            sort_cols=[Order("id", 1), Order("amount", 0)],
            parameters={"sd": "param"},
            skewed_info=SkewedInfo(["id"], [["1"], ["2"]], {("1",): "/loc/1"}),
            stored_as_sub_directories=True,
        ),
        partition_keys=[FieldSchema("DS", "string", "day")],
        parameters={"EXTERNAL": "TRUE", "comment": "orders"},
        view_original_text=None,
        table_type="EXTERNAL_TABLE",
        rewrite_enabled=True,
        write_id=3,
    )


def test_create_get_round_trip(db: Store) -> None:
    with db.transaction() as uow:
        uow.tables.create(full_table())
    with db.read() as uow:
        got = uow.tables.get("SALES", "orders")
    expected = replace(
        full_table(),
        db_name="sales",
        table_name="orders",
        sd=replace(
            full_table().sd, cols=[FieldSchema("id", "bigint", "key"), FieldSchema("amount", "decimal(10,2)")]
        ),
        partition_keys=[FieldSchema("ds", "string", "day")],
    )
    assert got == expected


def test_create_sets_create_time_when_missing(db: Store) -> None:
    with db.transaction() as uow:
        uow.tables.create(sales_table())
        assert uow.tables.get("sales", "orders").create_time > 1_600_000_000


def test_a_partition_key_may_also_be_a_data_column(db: Store) -> None:
    # Hive 2.3 accepts such a table (its own TestHiveMetaStore creates them): both lists keep the name.
    table = replace(sales_table("t4"), partition_keys=[FieldSchema("id", "int")])
    with db.transaction() as uow:
        uow.tables.create(table)
        got = uow.tables.get("sales", "t4")
        assert [c.name for c in got.sd.cols] == [c.name for c in table.sd.cols]
        assert "id" in [c.name for c in got.sd.cols]
        assert [k.name for k in got.partition_keys] == ["id"]
        uow.tables.alter("sales", "t4", got)
        assert uow.tables.get("sales", "t4").partition_keys == got.partition_keys


def test_create_errors(db: Store) -> None:
    with db.transaction() as uow:
        uow.tables.create(sales_table())
    cases = [
        (AlreadyExists, sales_table(), "already exists"),
        (NoSuchObject, replace(sales_table(), db_name="nodb"), "database nodb"),
        (InvalidObject, replace(sales_table(), table_name="bad-name"), "not a valid table name"),
        (
            InvalidObject,
            replace(sales_table("t1"), sd=StorageDescriptor(cols=[FieldSchema("a", "")])),
            "no type",
        ),
        (
            InvalidObject,
            replace(sales_table("t2"), sd=StorageDescriptor(cols=[FieldSchema("a", "nosuchtype")])),
            "not a Hive type",
        ),
        (
            InvalidObject,
            replace(
                sales_table("t3"),
                sd=StorageDescriptor(cols=[FieldSchema("a", "int"), FieldSchema("A", "int")]),
            ),
            "duplicate",
        ),
        (
            InvalidObject,
            replace(sales_table("t5"), sd=StorageDescriptor(cols=[FieldSchema("", "int")])),
            "empty name",
        ),
    ]
    for error, table, message in cases:
        with pytest.raises(error, match=message), db.transaction() as uow:
            uow.tables.create(table)
    with db.read() as uow:
        assert uow.tables.list_names("sales") == ["orders"]


def test_get_many_and_list(db: Store) -> None:
    with db.transaction() as uow:
        for name in ("b", "a", "c_view"):
            uow.tables.create(
                replace(sales_table(name), table_type="VIRTUAL_VIEW" if name == "c_view" else "MANAGED_TABLE")
            )
    with db.read() as uow:
        assert [t.table_name for t in uow.tables.get_many("sales", ["C_VIEW", "nope", "a"])] == [
            "c_view",
            "a",
        ]
        assert uow.tables.list_names("sales") == ["a", "b", "c_view"]
        assert uow.tables.list_names("sales", "c*|A") == ["a", "c_view"]
        assert uow.tables.list_names("sales", table_type="VIRTUAL_VIEW") == ["c_view"]
        assert uow.tables.list_names("nodb") == []  # as Hive's get_tables
        with pytest.raises(NoSuchObject, match="table sales.zz does not exist"):
            uow.tables.get("sales", "zz")
        assert uow.tables.exists("sales", "A") and not uow.tables.exists("sales", "zz")


def test_alter_replaces_the_definition(db: Store) -> None:
    with db.transaction() as uow:
        uow.tables.create(full_table())
    new = replace(
        full_table(),
        owner="bob",
        sd=replace(
            full_table().sd,
            location="/new",
            serde_info=SerDeInfo(serialization_lib="x"),
            bucket_cols=[],
            sort_cols=[],
            skewed_info=None,
        ),
        parameters={"only": "this"},
        partition_keys=[FieldSchema("ds", "STRING", "new comment")],
    )
    with db.transaction() as uow:
        uow.tables.alter("sales", "orders", new)
    with db.read() as uow:
        got = uow.tables.get("sales", "orders")
    assert got.owner == "bob"
    assert got.sd.location == "/new" and got.sd.serde_info == SerDeInfo(serialization_lib="x")
    assert got.sd.bucket_cols == [] and got.sd.sort_cols == [] and got.sd.skewed_info is None
    assert got.parameters == {"only": "this"}
    assert got.partition_keys[0].comment == "new comment"


def test_alter_errors(db: Store) -> None:
    with db.transaction() as uow:
        uow.tables.create(sales_table())
        uow.tables.create(sales_table("other"))
    with pytest.raises(InvalidOperation, match="partition keys"), db.transaction() as uow:
        uow.tables.alter(
            "sales", "orders", replace(sales_table(), partition_keys=[FieldSchema("ds", "string")])
        )
    with pytest.raises(AlreadyExists), db.transaction() as uow:
        uow.tables.alter("sales", "orders", sales_table("other"))
    with pytest.raises(NoSuchObject), db.transaction() as uow:
        uow.tables.alter("sales", "orders", replace(sales_table(), db_name="nodb"))
    with pytest.raises(NoSuchObject), db.transaction() as uow:
        uow.tables.alter("sales", "missing", sales_table("missing"))


def test_rename_across_databases(db: Store) -> None:
    with db.transaction() as uow:
        uow.databases.create(Database(name="archive"))
        uow.tables.create(sales_table())
        uow.tables.alter(
            "sales", "orders", replace(sales_table(), db_name="archive", table_name="old_orders")
        )
    with db.read() as uow:
        assert uow.tables.list_names("sales") == []
        assert uow.tables.get("archive", "old_orders").sd.cols == sales_table().sd.cols


def test_drop_table_removes_every_row(db: Store) -> None:
    with db.transaction() as uow:
        uow.tables.create(full_table())
        dropped = uow.tables.drop("sales", "orders")
        assert dropped.table_name == "orders"
        with pytest.raises(NoSuchObject):
            uow.tables.drop("sales", "orders")
        # Nothing of it is left anywhere, storage descriptors included.
        for table in (
            "TBLS",
            "SDS",
            "SERDES",
            "CDS",
            "COLUMNS_V2",
            "SD_PARAMS",
            "SERDE_PARAMS",
            "BUCKETING_COLS",
            "SORT_COLS",
            "TABLE_PARAMS",
            "PARTITION_KEYS",
        ):
            assert uow.connection.execute(sa.text(f'SELECT count(*) FROM "{table}"')).scalar() == 0, table


def test_update_parameters(db: Store) -> None:
    with db.transaction() as uow:
        uow.tables.create(sales_table())
        uow.tables.update_parameters(
            "sales", "orders", {"numRows": "10", "transient_lastDdlTime": None, "x": "y"}
        )
        assert uow.tables.get("sales", "orders").parameters == {"numRows": "10", "x": "y"}
        uow.tables.update_parameters("sales", "orders", {"numRows": "11", "absent": None})
        assert uow.tables.get("sales", "orders").parameters == {"numRows": "11", "x": "y"}
        with pytest.raises(NoSuchObject):
            uow.tables.update_parameters("sales", "nope", {"a": "b"})
