"""Column statistics: upsert, read, delete, COLUMN_STATS_ACCURATE, lifecycle rules, set-based queries."""

from __future__ import annotations

import json
from dataclasses import replace
from decimal import Decimal

import pytest
import sqlalchemy as sa

from metastore.catalog import Database, FieldSchema
from metastore.errors import InvalidInput, NoSuchObject
from metastore.stats.model import BooleanStats, ColumnStatsEntry, DecimalStats, LongStats, StringStats
from metastore.store import Store
from store.builders import partition, sales_table


def long_stats(nulls: int = 0, low: int = 1, high: int = 100, column: str = "id") -> ColumnStatsEntry:
    return ColumnStatsEntry(
        column, "bigint", LongStats(num_nulls=nulls, num_dvs=10, low=low, high=high, bit_vector=b"HLL\x01")
    )


PRICE = ColumnStatsEntry(
    "price", "decimal(10,2)", DecimalStats(num_nulls=1, num_dvs=5, low=Decimal("0.99"), high=Decimal("19.50"))
)
NAME = ColumnStatsEntry(
    "name", "string", StringStats(num_nulls=0, max_col_len=12, avg_col_len=6.5, num_dvs=40)
)
OK = ColumnStatsEntry("ok", "boolean", BooleanStats(num_nulls=2, num_trues=10, num_falses=5))
PARTS = [f"ds=2024-01-0{d}/hr={h}" for d in (1, 2, 3) for h in (0, 5, 10, 23)]


def count(store: Store, table: str) -> int:
    with store.read() as uow:
        return uow.connection.execute(sa.text(f'SELECT count(*) FROM "{table}"')).scalar()


def params(store: Store, part: str | None = None) -> dict[str, str]:
    with store.read() as uow:
        if part is None:
            return uow.tables.get("sales", "orders").parameters
        return uow.partitions.get_by_name("sales", "orders", part).parameters


def accurate(store: Store, part: str | None = None) -> dict:
    return json.loads(params(store, part).get("COLUMN_STATS_ACCURATE", "{}"))


# ---------------------------------------------------------------- table level


def test_table_upsert_and_read(sales: Store) -> None:
    with sales.transaction() as uow:
        uow.column_stats.upsert_table("sales", "orders", [long_stats(), PRICE, NAME, OK], last_analyzed=1234)
    with sales.read() as uow:
        assert uow.column_stats.get_table("sales", "orders", ["OK", "id", "missing"]) == [
            OK,
            replace(long_stats(), stats=replace(long_stats().stats, bit_vector=None)),
        ]
        everything = uow.column_stats.get_table("sales", "orders", with_bit_vectors=True)
        assert [e.column for e in everything] == ["id", "name", "ok", "price"]
        assert everything[0] == long_stats()
        assert uow.column_stats.last_analyzed("sales", "orders") == 1234
        assert uow.column_stats.get_table("sales", "orders", ["id"], engine="impala") == []
        with pytest.raises(NoSuchObject):
            uow.column_stats.get_table("sales", "nope", ["id"])
        with pytest.raises(NoSuchObject):
            uow.column_stats.get_table("nodb", "orders")


def test_upsert_replaces_one_row_per_column_and_engine(sales: Store) -> None:
    with sales.transaction() as uow:
        uow.column_stats.upsert_table("sales", "orders", [long_stats(nulls=1)])
        uow.column_stats.upsert_table(
            "sales", "orders", [long_stats(nulls=2), long_stats(nulls=3, column="ID")]
        )
        uow.column_stats.upsert_table("sales", "orders", [long_stats(nulls=9)], engine="impala")
    with sales.read() as uow:
        assert uow.column_stats.get_table("sales", "orders", ["id"])[0].stats.num_nulls == 3  # last one wins
        assert uow.column_stats.get_table("sales", "orders", ["id"], engine="impala")[0].stats.num_nulls == 9
    assert count(sales, "TAB_COL_STATS") == 2


def test_column_stats_accurate_is_maintained(sales: Store) -> None:
    with sales.transaction() as uow:
        t = uow.tables.get("sales", "orders")
        uow.tables.alter(
            "sales",
            "orders",
            replace(t, parameters={**t.parameters, "COLUMN_STATS_ACCURATE": '{"BASIC_STATS":"true"}'}),
        )
        uow.column_stats.upsert_table("sales", "orders", [long_stats(), PRICE])
    assert (
        params(sales)["COLUMN_STATS_ACCURATE"]
        == '{"BASIC_STATS":"true","COLUMN_STATS":{"id":"true","price":"true"}}'
    )
    with sales.transaction() as uow:
        uow.column_stats.upsert_table("sales", "orders", [NAME], mark_accurate=False)
        assert uow.column_stats.delete_table("sales", "orders", ["price"]) == 1
    assert accurate(sales) == {"BASIC_STATS": "true", "COLUMN_STATS": {"id": "true"}}
    with sales.transaction() as uow:
        assert uow.column_stats.delete_table("sales", "orders") == 2
    assert accurate(sales) == {"BASIC_STATS": "true"}
    assert params(sales)["transient_lastDdlTime"] == "1700000000"  # other parameters untouched


def test_table_delete_by_engine(sales: Store) -> None:
    with sales.transaction() as uow:
        uow.column_stats.upsert_table("sales", "orders", [long_stats(), NAME])
        uow.column_stats.upsert_table("sales", "orders", [long_stats()], engine="impala")
        assert uow.column_stats.delete_table("sales", "orders", ["id"], engine="impala") == 1
        assert uow.column_stats.delete_table("sales", "orders", ["id"], engine="impala") == 0
        assert [e.column for e in uow.column_stats.get_table("sales", "orders")] == ["id", "name"]
        with pytest.raises(NoSuchObject):
            uow.column_stats.delete_table("sales", "nope")


def test_kind_must_fit_the_type_and_nothing_is_written(sales: Store) -> None:
    bad = ColumnStatsEntry("name", "string", LongStats(num_nulls=0, num_dvs=1))
    with pytest.raises(InvalidInput, match="'name' is string.*longStats"), sales.transaction() as uow:
        uow.column_stats.upsert_table("sales", "orders", [long_stats(), bad])
    assert count(sales, "TAB_COL_STATS") == 0


# ---------------------------------------------------------------- partition level


def test_partition_upsert_read_and_aggregation_rows(sales: Store) -> None:
    with sales.transaction() as uow:
        uow.column_stats.upsert_partitions(
            "sales", "orders", {p: [long_stats(nulls=i), NAME] for i, p in enumerate(PARTS)}, last_analyzed=77
        )
    with sales.read() as uow:
        got = uow.column_stats.get_partitions(
            "sales", "orders", [PARTS[3], PARTS[0], "ds=x/hr=1"], ["name", "ID", "ok"]
        )
        assert list(got) == [PARTS[0], PARTS[3]]
        assert [e.column for e in got[PARTS[3]]] == ["name", "id"]  # in the order asked
        assert got[PARTS[3]][1].stats.num_nulls == 3 and got[PARTS[3]][1].stats.bit_vector is None
        rows = uow.column_stats.rows_for_aggregation("sales", "orders", PARTS, ["id"])
        assert sorted((n, e.stats.num_nulls) for n, e in rows) == sorted((p, i) for i, p in enumerate(PARTS))
        assert all(e.stats.bit_vector == b"HLL\x01" for _, e in rows)
        assert uow.column_stats.last_analyzed("sales", "orders", partition_name=PARTS[1]) == 77
        assert uow.column_stats.get_partitions("sales", "orders", [], ["id"]) == {}
        with pytest.raises(NoSuchObject):
            uow.column_stats.get_partitions("sales", "nope", PARTS, ["id"])
    assert accurate(sales, PARTS[5]) == {"COLUMN_STATS": {"id": "true", "name": "true"}}


def test_partition_upsert_into_missing_partition_writes_nothing(sales: Store) -> None:
    with pytest.raises(NoSuchObject, match="ds=1999-01-01/hr=1"), sales.transaction() as uow:
        uow.column_stats.upsert_partitions(
            "sales", "orders", {PARTS[0]: [NAME], "ds=1999-01-01/hr=1": [NAME]}
        )
    assert count(sales, "PART_COL_STATS") == 0


def test_partition_delete(sales: Store) -> None:
    with sales.transaction() as uow:
        uow.column_stats.upsert_partitions("sales", "orders", {p: [long_stats(), NAME, OK] for p in PARTS})
        uow.column_stats.upsert_partitions(
            "sales", "orders", {p: [long_stats()] for p in PARTS}, engine="impala"
        )
    with sales.transaction() as uow:
        assert uow.column_stats.delete_partitions("sales", "orders", [PARTS[0]], ["name"]) == 1
        assert uow.column_stats.delete_partitions("sales", "orders", [PARTS[1]]) == 4
        assert uow.column_stats.delete_partitions("sales", "orders", None, ["ok"]) == 11
        assert uow.column_stats.delete_partitions("sales", "orders", engine="impala") == 11
        with pytest.raises(NoSuchObject):
            uow.column_stats.delete_partitions("sales", "orders", ["ds=1999-01-01/hr=1"])
    assert count(sales, "PART_COL_STATS") == 36 - 1 - 3 - 11
    assert accurate(sales, PARTS[0]) == {"COLUMN_STATS": {"id": "true"}}
    assert accurate(sales, PARTS[1]) == {}
    assert accurate(sales, PARTS[2]) == {"COLUMN_STATS": {"id": "true", "name": "true"}}


def test_wide_requests_take_one_query(store: Store) -> None:
    """200 partitions × 20 columns, as the benchmark asks: one statement to write a batch, one to read."""
    cols = [FieldSchema(f"c{i}", "bigint") for i in range(20)]
    table = replace(sales_table(), sd=replace(sales_table().sd, cols=cols))
    names = [f"ds=d{i:03d}/hr={i}" for i in range(200)]
    with store.transaction() as uow:
        uow.databases.create(Database(name="sales"))
        uow.tables.create(table)
        uow.partitions.add([partition([f"d{i:03d}", str(i)]) for i in range(200)])
    entries = [long_stats(column=c.name) for c in cols]
    statements: list[str] = []
    sa.event.listen(store.engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    with store.transaction() as uow:
        uow.column_stats.upsert_partitions("sales", "orders", {n: entries for n in names})
    writes = [s for s in statements if "PART_COL_STATS" in s]
    assert len(writes) == 8  # 4000 rows in batches of 500
    assert len(statements) <= 16
    statements.clear()
    with store.read() as uow:
        got = uow.column_stats.get_partitions("sales", "orders", names, [c.name for c in cols])
        assert len(got) == 200 and all(len(v) == 20 for v in got.values())
        assert (
            len(uow.column_stats.rows_for_aggregation("sales", "orders", names, [c.name for c in cols]))
            == 4000
        )
    assert [s for s in statements if not s.startswith("BEGIN")].__len__() == 2
    assert count(store, "PART_COL_STATS") == 4000


# ---------------------------------------------------------------- lifecycle


@pytest.fixture
def analyzed(sales: Store) -> Store:
    with sales.transaction() as uow:
        uow.column_stats.upsert_table("sales", "orders", [long_stats(), PRICE, NAME, OK])
        uow.column_stats.upsert_partitions(
            "sales", "orders", {p: [long_stats(), PRICE, NAME, OK] for p in PARTS}
        )
    return sales


def test_rename_carries_statistics(analyzed: Store) -> None:
    with analyzed.transaction() as uow:
        uow.databases.create(Database(name="archive"))
        t = uow.tables.get("sales", "orders")
        uow.tables.alter("sales", "orders", replace(t, db_name="archive", table_name="orders_2024"))
    with analyzed.read() as uow:
        assert len(uow.column_stats.get_table("archive", "orders_2024")) == 4
        assert (
            len(
                uow.column_stats.rows_for_aggregation(
                    "archive", "orders_2024", PARTS, ["id", "price", "name", "ok"]
                )
            )
            == 48
        )
        assert json.loads(uow.tables.get("archive", "orders_2024").parameters["COLUMN_STATS_ACCURATE"])[
            "COLUMN_STATS"
        ] == {"id": "true", "name": "true", "ok": "true", "price": "true"}


def test_dropped_and_retyped_columns_lose_statistics_everywhere(analyzed: Store) -> None:
    with analyzed.transaction() as uow:
        t = uow.tables.get("sales", "orders")
        # price: decimal -> double (retyped); ok: dropped; name: only its case changes; id: untouched; new column.
        cols = [
            FieldSchema("id", "BIGINT"),
            FieldSchema("price", "double"),
            FieldSchema("NAME", "string"),
            FieldSchema("extra", "int"),
        ]
        uow.tables.alter("sales", "orders", replace(t, sd=replace(t.sd, cols=cols)))
    with analyzed.read() as uow:
        assert [e.column for e in uow.column_stats.get_table("sales", "orders")] == ["id", "name"]
        rows = uow.column_stats.rows_for_aggregation("sales", "orders", PARTS, ["id", "price", "name", "ok"])
        assert {e.column for _, e in rows} == {"id", "name"} and len(rows) == 24
    assert accurate(analyzed)["COLUMN_STATS"] == {"id": "true", "name": "true"}
    assert accurate(analyzed, PARTS[7])["COLUMN_STATS"] == {"id": "true", "name": "true"}
    # Partitions keep their own columns (no cascade): only the table's descriptor changed.
    with analyzed.read() as uow:
        assert uow.partitions.get_by_name("sales", "orders", PARTS[0]).sd.cols == sales_table().sd.cols


def test_alter_with_cascade_gives_partitions_the_new_columns(analyzed: Store) -> None:
    with analyzed.transaction() as uow:
        p = uow.partitions.get_by_name("sales", "orders", PARTS[1])  # one partition with columns of its own
        uow.partitions.alter(
            "sales", "orders", replace(p, sd=replace(p.sd, cols=[*p.sd.cols, FieldSchema("x", "int")]))
        )
        assert uow.connection.execute(sa.text('SELECT count(*) FROM "CDS"')).scalar() == 2
        t = uow.tables.get("sales", "orders")
        cols = [*t.sd.cols, FieldSchema("extra", "int")]
        uow.tables.alter("sales", "orders", replace(t, sd=replace(t.sd, cols=cols)), cascade=True)
        assert uow.partitions.get_by_name("sales", "orders", PARTS[4]).sd.cols == cols
        assert len(uow.column_stats.get_table("sales", "orders")) == 4  # nothing dropped or retyped
        assert uow.connection.execute(sa.text('SELECT count(*) FROM "CDS"')).scalar() == 1


def test_partition_alter_that_retypes_a_column_loses_its_statistics(analyzed: Store) -> None:
    with analyzed.transaction() as uow:
        p = uow.partitions.get_by_name("sales", "orders", PARTS[2])
        cols = [c if c.name != "id" else FieldSchema("id", "string") for c in p.sd.cols]
        uow.partitions.alter("sales", "orders", replace(p, sd=replace(p.sd, cols=cols)))
        got = uow.column_stats.get_partitions("sales", "orders", [PARTS[2], PARTS[3]], ["id", "name"])
        assert [e.column for e in got[PARTS[2]]] == ["name"]
        assert [e.column for e in got[PARTS[3]]] == ["id", "name"]
        assert (
            "id"
            not in json.loads(
                uow.partitions.get_by_name("sales", "orders", PARTS[2]).parameters["COLUMN_STATS_ACCURATE"]
            )["COLUMN_STATS"]
        )


def test_partition_rename_carries_statistics(analyzed: Store) -> None:
    with analyzed.transaction() as uow:
        p = uow.partitions.get_by_name("sales", "orders", PARTS[0])
        uow.partitions.rename("sales", "orders", p.values, replace(p, values=["2030-01-01", "1"]))
        assert (
            len(
                uow.column_stats.get_partitions(
                    "sales", "orders", ["ds=2030-01-01/hr=1"], ["id", "price", "name", "ok"]
                )["ds=2030-01-01/hr=1"]
            )
            == 4
        )


def test_drops_remove_statistics(analyzed: Store) -> None:
    with analyzed.transaction() as uow:
        uow.partitions.drop_by_name("sales", "orders", PARTS[0])
    assert count(analyzed, "PART_COL_STATS") == 44
    with analyzed.transaction() as uow:
        uow.tables.create(sales_table("other"))
        uow.partitions.add([partition(["x", "1"], name="other")])
        uow.column_stats.upsert_table("sales", "other", [NAME])
        uow.column_stats.upsert_partitions("sales", "other", {"ds=x/hr=1": [NAME]})
        uow.tables.drop("sales", "orders")
    assert (count(analyzed, "TAB_COL_STATS"), count(analyzed, "PART_COL_STATS")) == (1, 1)
    with analyzed.transaction() as uow:
        uow.databases.drop("sales", cascade=True)
    for table in (
        "TAB_COL_STATS",
        "PART_COL_STATS",
        "PARTITIONS",
        "PARTITION_PARAMS",
        "PARTITION_KEY_VALS",
        "TBLS",
        "SDS",
        "CDS",
        "COLUMNS_V2",
        "SERDES",
    ):
        assert count(analyzed, table) == 0, table


def test_read_merge_write_locks_against_concurrent_writers(sales: Store) -> None:
    with sales.transaction() as uow:
        assert uow.column_stats.get_table("sales", "orders", ["id"], for_update=True) == []
        uow.column_stats.upsert_table("sales", "orders", [long_stats(nulls=1)])
        got = uow.column_stats.get_partitions("sales", "orders", PARTS[:2], ["id"], for_update=True)
        assert got == {}


# ---------------------------------------------------------------- aggregation in SQL


def test_aggregate_partitions_matches_the_rows(sales: Store) -> None:
    from metastore.stats.model import DoubleStats

    with sales.transaction() as uow:
        t = uow.tables.get("sales", "orders")
        cols = [*t.sd.cols, FieldSchema("d", "double")]
        uow.tables.alter("sales", "orders", replace(t, sd=replace(t.sd, cols=cols)), cascade=True)
        stats = {}
        for i, p in enumerate(PARTS):
            entries = [
                long_stats(nulls=i, low=-i * 10, high=i * 100),
                ColumnStatsEntry(
                    "price",
                    "decimal(10,2)",
                    DecimalStats(
                        num_nulls=1,
                        num_dvs=i + 1,
                        low=Decimal(f"{9 - i}.0{i % 10}"),
                        high=Decimal(f"{(i + 1) * 11}.50"),
                    ),
                ),
                ColumnStatsEntry(
                    "name", "string", StringStats(num_nulls=0, max_col_len=i, avg_col_len=i / 2, num_dvs=i)
                ),
                ColumnStatsEntry("ok", "boolean", BooleanStats(num_nulls=1, num_trues=i, num_falses=1)),
            ]
            if i % 3:  # `d` only in some partitions
                entries.append(
                    ColumnStatsEntry(
                        "d", "double", DoubleStats(num_nulls=0, num_dvs=4, low=-i / 4, high=i * 1.5)
                    )
                )
            stats[p] = entries
        uow.column_stats.upsert_partitions("sales", "orders", stats)
        uow.column_stats.upsert_partitions(
            "sales", "orders", {PARTS[0]: [long_stats(nulls=10**6)]}, engine="impala"
        )
    asked = PARTS[:10] + ["ds=1999-01-01/hr=1"]  # one requested partition does not exist
    with sales.read() as uow:
        agg = uow.column_stats.aggregate_partitions("sales", "orders", asked, ["ID", "price", "name", "ok"])
        with_d = uow.column_stats.aggregate_partitions("sales", "orders", asked, ["id", "d"])
        nothing = uow.column_stats.aggregate_partitions("sales", "orders", asked, ["id", "extra"])
        with pytest.raises(NoSuchObject):
            uow.column_stats.aggregate_partitions("sales", "nope", asked, ["id"])
    by_col = {a.merged.column: a for a in agg.columns}
    assert agg.parts_found == 10 and list(by_col) == ["id", "name", "ok", "price"]
    i = range(10)
    assert by_col["id"].merged.stats == LongStats(num_nulls=sum(i), num_dvs=10, low=-90, high=900)
    assert by_col["id"].partitions == 10 and by_col["id"].ndv_sum == 100
    assert by_col["id"].density == pytest.approx(sum((k * 100 + k * 10) / 10 for k in i) / 10)
    assert by_col["price"].merged.stats == DecimalStats(
        num_nulls=10, num_dvs=10, low=Decimal("0.09"), high=Decimal("110.50")
    )  # numeric, not text, order
    assert by_col["name"].merged.stats == StringStats(num_nulls=0, max_col_len=9, avg_col_len=4.5, num_dvs=9)
    assert by_col["ok"].merged.stats == BooleanStats(num_nulls=10, num_trues=sum(i), num_falses=10)
    assert by_col["ok"].density is None
    assert with_d.parts_found == 6  # partitions 1, 2, 4, 5, 7, 8 have `d`
    d = next(a for a in with_d.columns if a.merged.column == "d")
    assert (d.partitions, d.merged.stats.low, d.merged.stats.high) == (6, -2.0, 12.0)
    assert nothing.parts_found == 0 and [a.merged.column for a in nothing.columns] == ["id"]


def test_aggregate_is_one_statement(sales: Store) -> None:
    with sales.transaction() as uow:
        uow.column_stats.upsert_partitions("sales", "orders", {p: [long_stats(), NAME] for p in PARTS})
    statements: list[str] = []
    sa.event.listen(sales.engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    with sales.read() as uow:
        agg = uow.column_stats.aggregate_partitions("sales", "orders", PARTS, ["id", "name"])
    assert agg.parts_found == 12
    assert [s for s in statements if not s.startswith("BEGIN")].__len__() == 1
