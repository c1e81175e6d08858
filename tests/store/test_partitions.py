"""Partitions: add, get (by values, by name), list, partial values, names, alter, rename, drop."""

from __future__ import annotations

from dataclasses import replace

import pytest
import sqlalchemy as sa

from metastore.catalog import Database, FieldSchema, Partition, StorageDescriptor
from metastore.errors import AlreadyExists, InvalidObject, InvalidOperation, NoSuchObject
from metastore.store import Store
from store.builders import partition, sales_table

ALL_NAMES = [f"ds=2024-01-0{d}/hr={h}" for d in (1, 2, 3) for h in (0, 10, 23, 5)]


def test_add_and_get_round_trip(sales: Store) -> None:
    p = Partition(
        "sales",
        "orders",
        ["2024-02-01", "7"],
        create_time=1700000000,
        last_access_time=1700000100,
        sd=StorageDescriptor(location="/w/x", parameters={"a": "b"}, num_buckets=2, bucket_cols=["id"]),
        parameters={"numRows": "10"},
        write_id=4,
    )
    with sales.transaction() as uow:
        assert uow.partitions.add([p]) == [p]
    with sales.read() as uow:
        got = uow.partitions.get("SALES", "ORDERS", ["2024-02-01", "7"])
        by_name = uow.partitions.get_by_name("sales", "orders", "ds=2024-02-01/hr=7")
    # A partition given no columns uses the table's.
    assert got == replace(p, sd=replace(p.sd, cols=sales_table().sd.cols))
    assert by_name == got


def test_partition_columns_are_shared_with_the_table_when_equal(sales: Store) -> None:
    with sales.transaction() as uow:
        own = replace(
            partition(["2024-03-01", "1"]),
            sd=StorageDescriptor(cols=[FieldSchema("id", "bigint")], location="/p"),
        )
        uow.partitions.add([own])
        assert uow.partitions.get("sales", "orders", ["2024-03-01", "1"]).sd.cols == [
            FieldSchema("id", "bigint")
        ]
        # 12 partitions with the table's columns + the table: one descriptor; the odd one: another.
        assert uow.connection.execute(sa.text('SELECT count(*) FROM "CDS"')).scalar() == 2


def test_add_errors(sales: Store) -> None:
    cases = [
        (AlreadyExists, [partition(["2024-01-01", "0"])], "already exist"),
        (InvalidObject, [partition(["2024-01-01"])], "2 partition key"),
        (InvalidObject, [partition(["2024-01-01", ""])], "empty"),
        (InvalidObject, [partition(["x" * 300, "1"])], "limit is 256"),
        (InvalidObject, [partition(["a", "1"]), partition(["a", "1"])], "twice"),
        (InvalidObject, [partition(["a", "1"]), partition(["a", "2"], name="other")], "different tables"),
        (NoSuchObject, [partition(["a", "1"], name="nope")], "sales.nope does not exist"),
    ]
    for error, parts, message in cases:
        with pytest.raises(error, match=message), sales.transaction() as uow:
            uow.partitions.add(parts)
    with sales.transaction() as uow:
        uow.tables.create(sales_table("flat", keys=()))
    with pytest.raises(InvalidObject, match="not partitioned"), sales.transaction() as uow:
        uow.partitions.add([partition(["a"], name="flat")])


def test_add_if_not_exists_skips_existing(sales: Store) -> None:
    with sales.transaction() as uow:
        added = uow.partitions.add(
            [partition(["2024-01-01", "0"]), partition(["2024-01-09", "1"])], if_not_exists=True
        )
        assert [p.values for p in added] == [["2024-01-09", "1"]]
        assert uow.partitions.count("sales", "orders") == 13


def test_listing(sales: Store) -> None:
    with sales.read() as uow:
        names = uow.partitions.list_names("sales", "orders")
        assert names == sorted(ALL_NAMES)
        assert uow.partitions.list_names("sales", "orders", max_parts=2) == sorted(ALL_NAMES)[:2]
        assert uow.partitions.list_names("sales", "orders", max_parts=0) == []
        parts = uow.partitions.list("sales", "orders")
        assert [p.values for p in parts][:2] == [["2024-01-01", "0"], ["2024-01-01", "10"]]
        assert len(uow.partitions.list("sales", "orders", max_parts=5)) == 5
        with pytest.raises(NoSuchObject):
            uow.partitions.list("sales", "nope")


def test_partial_values(sales: Store) -> None:
    with sales.read() as uow:
        by_day = uow.partitions.list_names_by_partial_values("sales", "orders", ["2024-01-02"])
        assert by_day == [
            "ds=2024-01-02/hr=0",
            "ds=2024-01-02/hr=10",
            "ds=2024-01-02/hr=23",
            "ds=2024-01-02/hr=5",
        ]
        any_day = uow.partitions.list_by_partial_values("sales", "orders", ["", "5"])
        assert [p.values for p in any_day] == [[f"2024-01-0{d}", "5"] for d in (1, 2, 3)]
        assert len(uow.partitions.list_names_by_partial_values("sales", "orders", ["", ""])) == 12
        assert uow.partitions.list_names_by_partial_values("sales", "orders", ["", "5"], max_parts=1) == [
            "ds=2024-01-01/hr=5"
        ]
        with pytest.raises(InvalidObject, match="2 partition key"):
            uow.partitions.list_by_partial_values("sales", "orders", ["a", "b", "c"])


def test_names_with_special_characters(sales: Store) -> None:
    odd = ["a/b=c:d%e", "1"]
    with sales.transaction() as uow:
        uow.partitions.add([partition(odd)])
        assert "ds=a%2Fb%3Dc%3Ad%25e/hr=1" in uow.partitions.list_names("sales", "orders")
        assert uow.partitions.get_by_name("sales", "orders", "ds=a%2Fb%3Dc%3Ad%25e/hr=1").values == odd
        # Key order and case in a client's name do not matter.
        assert uow.partitions.get_by_name("sales", "orders", "HR=1/DS=a%2Fb%3Dc%3Ad%25e").values == odd


def test_get_by_name_errors_are_no_such_object(sales: Store) -> None:
    with sales.read() as uow:
        for name in ("ds=2024-01-01", "ds=2024-01-01/hr=99", "garbage", "ds=2024-01-01/hr=0/x=1"):
            with pytest.raises(NoSuchObject):
                uow.partitions.get_by_name("sales", "orders", name)
        with pytest.raises(NoSuchObject, match="hr=99"):
            uow.partitions.get("sales", "orders", ["2024-01-01", "99"])


def test_get_by_names(sales: Store) -> None:
    with sales.read() as uow:
        got = uow.partitions.get_by_names(
            "sales", "orders", ["ds=2024-01-03/hr=5", "nope", "ds=2024-01-01/hr=0", "ds=x/hr=1"]
        )
        assert [p.values for p in got] == [["2024-01-01", "0"], ["2024-01-03", "5"]]


def test_alter_many(sales: Store) -> None:
    with sales.transaction() as uow:
        parts = uow.partitions.list("sales", "orders", max_parts=3)
        changed = [
            replace(
                p,
                parameters={"numRows": str(i)},
                last_access_time=99,
                sd=replace(p.sd, location=f"/moved/{i}"),
            )
            for i, p in enumerate(parts)
        ]
        uow.partitions.alter_many("sales", "orders", changed)
    with sales.read() as uow:
        again = uow.partitions.list("sales", "orders", max_parts=3)
    assert again == changed
    missing = partition(["2030-01-01", "1"])
    with pytest.raises(InvalidOperation, match="alter is not possible"), sales.transaction() as uow:
        uow.partitions.alter("sales", "orders", missing)


def test_alter_with_new_columns_gets_its_own_descriptor(sales: Store) -> None:
    with sales.transaction() as uow:
        p = uow.partitions.get("sales", "orders", ["2024-01-01", "0"])
        extra = [*p.sd.cols, FieldSchema("extra", "int")]
        uow.partitions.alter("sales", "orders", replace(p, sd=replace(p.sd, cols=extra)))
        assert uow.partitions.get("sales", "orders", ["2024-01-01", "0"]).sd.cols == extra
        assert uow.partitions.get("sales", "orders", ["2024-01-01", "5"]).sd.cols == sales_table().sd.cols
        # Back to the table's columns: the extra descriptor is gone again.
        uow.partitions.alter("sales", "orders", p)
        assert uow.connection.execute(sa.text('SELECT count(*) FROM "CDS"')).scalar() == 1


def test_rename(sales: Store) -> None:
    with sales.transaction() as uow:
        old = uow.partitions.get("sales", "orders", ["2024-01-01", "0"])
        uow.partitions.rename(
            "sales", "orders", ["2024-01-01", "0"], replace(old, values=["2025-01-01", "0"])
        )
        assert uow.partitions.get("sales", "orders", ["2025-01-01", "0"]).sd == old.sd
        with pytest.raises(NoSuchObject):
            uow.partitions.get("sales", "orders", ["2024-01-01", "0"])
        with pytest.raises(AlreadyExists):
            uow.partitions.rename(
                "sales", "orders", ["2025-01-01", "0"], replace(old, values=["2024-01-02", "5"])
            )


def test_relocate(sales: Store) -> None:
    with sales.transaction() as uow:
        n = uow.partitions.relocate("sales", "orders", "/warehouse/sales.db/orders/", "/new/home/")
        assert n == 12
        assert (
            uow.partitions.get("sales", "orders", ["2024-01-02", "5"]).sd.location == "/new/home/2024-01-02/5"
        )


def test_drop(sales: Store) -> None:
    with sales.transaction() as uow:
        dropped = uow.partitions.drop("sales", "orders", ["2024-01-01", "0"])
        assert dropped.values == ["2024-01-01", "0"]
        assert uow.partitions.drop_by_name("sales", "orders", "ds=2024-01-01/hr=5").values == [
            "2024-01-01",
            "5",
        ]
        gone = uow.partitions.drop_by_names("sales", "orders", ["ds=2024-01-02/hr=0", "ds=2024-01-02/hr=5"])
        assert len(gone) == 2
        assert uow.partitions.count("sales", "orders") == 8
        with pytest.raises(NoSuchObject):
            uow.partitions.drop("sales", "orders", ["2024-01-01", "0"])
    with pytest.raises(NoSuchObject), sales.transaction() as uow:
        uow.partitions.drop_by_names("sales", "orders", ["ds=2024-01-03/hr=0", "ds=1999-01-01/hr=1"])
    with sales.transaction() as uow:
        assert uow.partitions.count("sales", "orders") == 8  # the failed request dropped nothing
        # Each partition's storage descriptor went with it: 8 partitions + the table.
        assert uow.connection.execute(sa.text('SELECT count(*) FROM "SDS"')).scalar() == 9
        assert uow.connection.execute(sa.text('SELECT count(*) FROM "PARTITION_KEY_VALS"')).scalar() == 16


def test_many_partitions_take_a_fixed_number_of_statements(store: Store) -> None:
    with store.transaction() as uow:
        uow.databases.create(Database(name="sales"))
        uow.tables.create(sales_table())
    statements: list[str] = []

    def count(conn, cursor, statement, *args) -> None:
        statements.append(statement)

    sa.event.listen(store.engine, "before_cursor_execute", count)
    try:
        with store.transaction() as uow:
            uow.partitions.add([partition([f"d{i}", str(i)]) for i in range(600)])
        added = len(statements)
        statements.clear()
        with store.read() as uow:
            assert len(uow.partitions.list("sales", "orders")) == 600
        listed = len(statements)
    finally:
        sa.event.remove(store.engine, "before_cursor_execute", count)
    # Statement counts grow with batches of 500-1000 rows, not with the 600 partitions.
    assert added <= 25, statements
    assert listed <= 15


def test_update_parameters_of_many_partitions(sales: Store) -> None:
    with sales.transaction() as uow:
        uow.partitions.update_parameters(
            "sales", "orders", {name: {"numRows": str(i), "gone": None} for i, name in enumerate(ALL_NAMES)}
        )
        assert uow.partitions.get_by_name("sales", "orders", ALL_NAMES[3]).parameters == {"numRows": "3"}
        uow.partitions.update_parameters("sales", "orders", {ALL_NAMES[3]: {"numRows": None}})
        assert uow.partitions.get_by_name("sales", "orders", ALL_NAMES[3]).parameters == {}
    with pytest.raises(NoSuchObject, match="ds=1999"), sales.transaction() as uow:
        uow.partitions.update_parameters(
            "sales", "orders", {ALL_NAMES[0]: {"a": "b"}, "ds=1999-01-01/hr=1": {"a": "b"}}
        )
    with sales.read() as uow:
        assert uow.partitions.get_by_name("sales", "orders", ALL_NAMES[0]).parameters == {"numRows": "0"}
