"""A table's and a page of partitions' child rows read in one statement (store/child_rows.py): the same objects as
before, in fewer statements (a re-ANALYZE reads the table and lists its partitions on every run)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import sqlalchemy as sa

from metastore.catalog import Database, FieldSchema, Order, Partition, SerDeInfo, StorageDescriptor, Table
from metastore.store import Store
from store.builders import partition


def _table() -> Table:
    return Table(
        db_name="sales",
        table_name="orders",
        owner="alice",
        sd=StorageDescriptor(
            cols=[FieldSchema("id", "bigint", "row id"), FieldSchema("name", "string"), FieldSchema("b", "int")],
            location="/warehouse/sales.db/orders",
            input_format="org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
            output_format="org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat",
            num_buckets=4,
            bucket_cols=["name", "id"],
            sort_cols=[Order("name", 0), Order("id", 1)],
            parameters={"z": "1", "a": "2"},
            serde_info=SerDeInfo(serialization_lib="org.apache.hadoop.hive.ql.io.orc.OrcSerde",
                                 parameters={"serialization.format": "1", "field.delim": ","}),
        ),
        partition_keys=[FieldSchema("ds", "string", "day"), FieldSchema("hr", "int")],
        parameters={"transient_lastDdlTime": "1700000000", "b": "x", "a": "y"},
    )


@pytest.fixture
def orders(store: Store) -> Store:
    with store.transaction() as uow:
        uow.databases.create(Database(name="sales", location_uri="/warehouse/sales.db"))
        uow.tables.create(_table())
        uow.partitions.add([
            partition(["2024-01-01", "0"], parameters={"numRows": "5", "k": "v"}),
            # columns and storage of its own
            Partition("sales", "orders", ["2024-01-01", "5"], parameters={"numRows": "7"}, sd=StorageDescriptor(
                cols=[FieldSchema("id", "bigint"), FieldSchema("extra", "string", "new")],
                location="/warehouse/sales.db/orders/other", bucket_cols=["id"], sort_cols=[Order("id", 0)],
                num_buckets=2, parameters={"p": "q"},
                serde_info=SerDeInfo(serialization_lib="x.Serde", parameters={"s": "t"}))),
            partition(["2024-01-02", "23"]),
        ])
    return store


@pytest.fixture
def statements(store: Store) -> Iterator[list[str]]:
    seen: list[str] = []

    def record(conn, cursor, statement, parameters, context, executemany) -> None:
        if statement.lstrip().upper().startswith("SELECT"):
            seen.append(statement)

    sa.event.listen(store.engine, "before_cursor_execute", record)
    yield seen
    sa.event.remove(store.engine, "before_cursor_execute", record)


def test_a_table_is_read_in_three_statements(orders: Store, statements: list[str]) -> None:
    with orders.read() as uow:
        got = uow.tables.get("sales", "orders")
    # the table's row, its descriptor's row, every kind of child row (was nine statements: one a kind)
    assert len(statements) == 3, statements
    want = _table()
    assert got.sd.cols == want.sd.cols
    assert got.sd.bucket_cols == ["name", "id"] and got.sd.sort_cols == [Order("name", 0), Order("id", 1)]
    assert list(got.sd.parameters.items()) == [("a", "2"), ("z", "1")]  # ordered by key, as before
    assert got.sd.serde_info.parameters == {"field.delim": ",", "serialization.format": "1"}
    assert got.partition_keys == want.partition_keys
    assert [k for k in got.parameters if k != "transient_lastDdlTime"] == ["a", "b"]
    assert got.parameters["a"] == "y" and got.sd.num_buckets == 4


def test_partitions_are_listed_in_four_statements(orders: Store, statements: list[str]) -> None:
    with orders.read() as uow:
        got = uow.partitions.list("sales", "orders")
    # the table's reference, the partitions' rows, their descriptors, every kind of child row (was 11: keys too)
    assert len(statements) == 4, statements
    assert [p.values for p in got] == [["2024-01-01", "0"], ["2024-01-01", "5"], ["2024-01-02", "23"]]
    first, own, last = got
    assert first.parameters["numRows"] == "5" and first.parameters["k"] == "v"
    assert first.sd.location.endswith("/2024-01-01/0") and first.sd.bucket_cols == [] and first.sd.sort_cols == []
    assert own.sd.cols == [FieldSchema("id", "bigint"), FieldSchema("extra", "string", "new")]
    assert own.sd.bucket_cols == ["id"] and own.sd.sort_cols == [Order("id", 0)] and own.sd.num_buckets == 2
    assert own.sd.parameters == {"p": "q"} and own.sd.serde_info.parameters == {"s": "t"}
    assert own.parameters["numRows"] == "7" and "k" not in own.parameters
    assert last.parameters.get("numRows") is None


def test_more_partitions_than_an_in_list_holds(store: Store) -> None:
    with store.transaction() as uow:
        uow.databases.create(Database(name="sales", location_uri="/warehouse/sales.db"))
        uow.tables.create(_table())
        uow.partitions.add([partition([f"d{i:04d}", str(i % 24)], parameters={"n": str(i)}) for i in range(1203)])
    with store.read() as uow:
        got = uow.partitions.list("sales", "orders")
    assert len(got) == 1203
    for p in got:
        i = int(p.values[0][1:])
        assert p.values == [f"d{i:04d}", str(i % 24)]
        assert p.parameters["n"] == str(i)
        assert [c.name for c in p.sd.cols] == ["id", "name", "b"]
