"""Column statistics through the repository the server runs (UnitOfWork.column_stats, as the statistics service
calls it): upsert, read, delete, COLUMN_STATS_ACCURATE, lifecycle rules, set-based queries, sums in SQL."""

from __future__ import annotations

import json
from dataclasses import replace
from decimal import Decimal

import pytest
import sqlalchemy as sa

from metastore.catalog import DEFAULT_CATALOG, DEFAULT_ENGINE, Database, FieldSchema
from metastore.errors import InvalidInput, NoSuchObject
from metastore.service import StatisticsService, StatsWrite
from metastore.stats.model import BooleanStats, ColumnStatsEntry, DecimalStats, LongStats, StringStats
from metastore.store import Store
from metastore.store.column_stats.rows import entry_to_row
from metastore.store.column_stats.writes import upsert_table_rows
from store.builders import partition, sales_table
from store.stats_steps import last_analyzed, partition_stats, put_partitions, put_table, table_stats, target

H = DEFAULT_CATALOG
ALL = ["id", "name", "ok", "price"]  # the table's columns, in name order


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
        put_table(uow, "sales", "orders", [long_stats(), PRICE, NAME, OK], last_analyzed=1234)
    with sales.read() as uow:
        assert table_stats(uow, "sales", "orders", ["OK", "id", "missing"]) == [
            OK,
            replace(long_stats(), stats=replace(long_stats().stats, bit_vector=None)),
        ]
        everything = table_stats(uow, "sales", "orders", ALL, bit_vectors=True)
        assert [e.column for e in everything] == ["id", "name", "ok", "price"]
        assert everything[0] == long_stats()
        assert last_analyzed(uow, "sales", "orders", ALL) == 1234
        assert table_stats(uow, "sales", "orders", ["id"], engine="impala") == []
        # A missing table reads as no statistics; the lookup (which the service makes then) tells it apart.
        assert table_stats(uow, "sales", "nope", ["id"]) == []
        with pytest.raises(NoSuchObject):
            target(uow, "sales", "nope")
        with pytest.raises(NoSuchObject):
            target(uow, "nodb", "orders")


def test_upsert_replaces_one_row_per_column_and_engine(sales: Store) -> None:
    with sales.transaction() as uow:
        put_table(uow, "sales", "orders", [long_stats(nulls=1)])
    # One request naming a column twice: the service keeps the last entry of each column.
    plain = [replace(e, stats=replace(e.stats, bit_vector=None)) for e in (long_stats(nulls=2), long_stats(nulls=3, column="ID"))]
    StatisticsService(sales).write([StatsWrite("sales", "orders", plain)])
    with sales.transaction() as uow:
        put_table(uow, "sales", "orders", [long_stats(nulls=9)], engine="impala")
    with sales.read() as uow:
        assert table_stats(uow, "sales", "orders", ["id"])[0].stats.num_nulls == 3  # last one wins
        assert table_stats(uow, "sales", "orders", ["id"], engine="impala")[0].stats.num_nulls == 9
    assert count(sales, "TAB_COL_STATS") == 2


def test_column_stats_accurate_is_maintained(sales: Store) -> None:
    with sales.transaction() as uow:
        t = uow.tables.get("sales", "orders")
        uow.tables.alter(
            "sales",
            "orders",
            replace(t, parameters={**t.parameters, "COLUMN_STATS_ACCURATE": '{"BASIC_STATS":"true"}'}),
        )
        put_table(uow, "sales", "orders", [long_stats(), PRICE])
    assert (
        params(sales)["COLUMN_STATS_ACCURATE"]
        == '{"BASIC_STATS":"true","COLUMN_STATS":{"id":"true","price":"true"}}'
    )
    with sales.transaction() as uow:
        # A row the accuracy marks do not list (the upsert alone): deletes must not add or need it.
        row = entry_to_row(NAME, engine=DEFAULT_ENGINE, last_analyzed=1)
        upsert_table_rows(uow.connection, [{**row, "TBL_ID": target(uow, "sales", "orders").tbl_id}])
        assert uow.column_stats.delete_table_stats(H, "sales", "orders", ["price"], engine=None) == 1
    assert accurate(sales) == {"BASIC_STATS": "true", "COLUMN_STATS": {"id": "true"}}
    with sales.transaction() as uow:
        assert uow.column_stats.delete_table_stats(H, "sales", "orders", None, engine=None) == 2
    assert accurate(sales) == {"BASIC_STATS": "true"}
    assert params(sales)["transient_lastDdlTime"] == "1700000000"  # other parameters untouched


def test_table_delete_by_engine(sales: Store) -> None:
    with sales.transaction() as uow:
        put_table(uow, "sales", "orders", [long_stats(), NAME])
        put_table(uow, "sales", "orders", [long_stats()], engine="impala")
        assert uow.column_stats.delete_table_stats(H, "sales", "orders", ["id"], engine="impala") == 1
        assert uow.column_stats.delete_table_stats(H, "sales", "orders", ["id"], engine="impala") == 0
        assert [e.column for e in table_stats(uow, "sales", "orders", ALL)] == ["id", "name"]
        with pytest.raises(NoSuchObject):
            uow.column_stats.delete_table_stats(H, "sales", "nope", None, engine=None)


def test_kind_must_fit_the_type_and_nothing_is_written(sales: Store) -> None:
    bad = ColumnStatsEntry("name", "string", LongStats(num_nulls=0, num_dvs=1))
    with pytest.raises(InvalidInput, match="'name' is string.*longStats"), sales.transaction() as uow:
        put_table(uow, "sales", "orders", [long_stats(), bad])
    assert count(sales, "TAB_COL_STATS") == 0


# ---------------------------------------------------------------- partition level


def test_partition_upsert_read_and_aggregation_rows(sales: Store) -> None:
    with sales.transaction() as uow:
        put_partitions(
            uow, "sales", "orders", {p: [long_stats(nulls=i), NAME] for i, p in enumerate(PARTS)}, last_analyzed=77
        )
    with sales.read() as uow:
        got = partition_stats(uow, "sales", "orders", [PARTS[3], PARTS[0], "ds=x/hr=1"], ["name", "ID", "ok"])
        assert list(got) == [PARTS[0], PARTS[3]]
        assert [e.column for e in got[PARTS[3]]] == ["name", "id"]  # in the order asked
        assert got[PARTS[3]][1].stats.num_nulls == 3 and got[PARTS[3]][1].stats.bit_vector is None
        # What the Python aggregator reads: every partition's row, with its sketch.
        rows = uow.column_stats.read_partition_stats(H, "sales", "orders", PARTS, ["id"], DEFAULT_ENGINE, bit_vectors=True)
        assert sorted((n, e.stats.num_nulls) for n, e, _ in rows) == sorted((p, i) for i, p in enumerate(PARTS))
        assert all(e.stats.bit_vector == b"HLL\x01" for _, e, _ in rows)
        assert last_analyzed(uow, "sales", "orders", ["id"], partition=PARTS[1]) == 77
        assert partition_stats(uow, "sales", "orders", [], ["id"]) == {}
        assert partition_stats(uow, "sales", "nope", PARTS, ["id"]) == {}
        with pytest.raises(NoSuchObject):
            target(uow, "sales", "nope")
    assert accurate(sales, PARTS[5]) == {"COLUMN_STATS": {"id": "true", "name": "true"}}


def test_partition_upsert_into_missing_partition_writes_nothing(sales: Store) -> None:
    writes = [StatsWrite("sales", "orders", [NAME], partition_name=p) for p in (PARTS[0], "ds=1999-01-01/hr=1")]
    with pytest.raises(NoSuchObject, match="ds=1999-01-01/hr=1"):
        StatisticsService(sales).write(writes)
    assert count(sales, "PART_COL_STATS") == 0


def test_partition_delete(sales: Store) -> None:
    with sales.transaction() as uow:
        put_partitions(uow, "sales", "orders", {p: [long_stats(), NAME, OK] for p in PARTS})
        put_partitions(uow, "sales", "orders", {p: [long_stats()] for p in PARTS}, engine="impala")
    with sales.transaction() as uow:
        delete = uow.column_stats.delete_partition_stats
        assert delete(H, "sales", "orders", [PARTS[0]], ["name"], engine=None) == 1
        assert delete(H, "sales", "orders", [PARTS[1]], None, engine=None) == 4
        assert delete(H, "sales", "orders", None, ["ok"], engine=None) == 11
        assert delete(H, "sales", "orders", None, None, engine="impala") == 11
        with pytest.raises(NoSuchObject):
            delete(H, "sales", "orders", ["ds=1999-01-01/hr=1"], None, engine=None)
    assert count(sales, "PART_COL_STATS") == 36 - 1 - 3 - 11
    assert accurate(sales, PARTS[0]) == {"COLUMN_STATS": {"id": "true"}}
    assert accurate(sales, PARTS[1]) == {}
    assert accurate(sales, PARTS[2]) == {"COLUMN_STATS": {"id": "true", "name": "true"}}


def test_wide_requests_take_one_query(store: Store) -> None:
    """200 partitions × 20 columns, as the benchmark asks: a fixed handful of statements to write them, one to
    read them (whatever the number of names)."""
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
        put_partitions(uow, "sales", "orders", {n: entries for n in names})
    writes = [s for s in statements if s.startswith('INSERT INTO "PART_COL_STATS"')]
    assert 1 <= len(writes) <= 8  # 4000 rows: one executemany, which the driver may page
    assert len(statements) <= 16
    statements.clear()
    with store.read() as uow:
        got = partition_stats(uow, "sales", "orders", names, [c.name for c in cols])
        assert len(got) == 200 and all(len(v) == 20 for v in got.values())
        assert (
            len(uow.column_stats.read_partition_stats(H, "sales", "orders", names, [c.name for c in cols], DEFAULT_ENGINE))
            == 4000
        )
    assert [s for s in statements if not s.startswith("BEGIN")].__len__() == 2
    assert count(store, "PART_COL_STATS") == 4000


# ---------------------------------------------------------------- lifecycle


@pytest.fixture
def analyzed(sales: Store) -> Store:
    with sales.transaction() as uow:
        put_table(uow, "sales", "orders", [long_stats(), PRICE, NAME, OK])
        put_partitions(uow, "sales", "orders", {p: [long_stats(), PRICE, NAME, OK] for p in PARTS})
    return sales


def test_rename_carries_statistics(analyzed: Store) -> None:
    with analyzed.transaction() as uow:
        uow.databases.create(Database(name="archive"))
        t = uow.tables.get("sales", "orders")
        uow.tables.alter("sales", "orders", replace(t, db_name="archive", table_name="orders_2024"))
    with analyzed.read() as uow:
        assert len(table_stats(uow, "archive", "orders_2024", ALL)) == 4
        assert len(uow.column_stats.read_partition_stats(H, "archive", "orders_2024", PARTS, ALL, DEFAULT_ENGINE)) == 48
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
        assert [e.column for e in table_stats(uow, "sales", "orders", ALL)] == ["id", "name"]
        rows = uow.column_stats.read_partition_stats(H, "sales", "orders", PARTS, ALL, DEFAULT_ENGINE)
        assert {e.column for _, e, _ in rows} == {"id", "name"} and len(rows) == 24
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
        assert len(table_stats(uow, "sales", "orders", ALL)) == 4  # nothing dropped or retyped
        assert uow.connection.execute(sa.text('SELECT count(*) FROM "CDS"')).scalar() == 1


def test_partition_alter_that_retypes_a_column_loses_its_statistics(analyzed: Store) -> None:
    with analyzed.transaction() as uow:
        p = uow.partitions.get_by_name("sales", "orders", PARTS[2])
        cols = [c if c.name != "id" else FieldSchema("id", "string") for c in p.sd.cols]
        uow.partitions.alter("sales", "orders", replace(p, sd=replace(p.sd, cols=cols)))
        got = partition_stats(uow, "sales", "orders", [PARTS[2], PARTS[3]], ["id", "name"])
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
                partition_stats(uow, "sales", "orders", ["ds=2030-01-01/hr=1"], ALL)["ds=2030-01-01/hr=1"]
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
        put_table(uow, "sales", "other", [NAME])
        put_partitions(uow, "sales", "other", {"ds=x/hr=1": [NAME]})
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
        repo = uow.column_stats
        t = target(uow, "sales", "orders", lock="update")
        assert repo.read_table_stats(H, "sales", "orders", ["id"], DEFAULT_ENGINE) == []
        repo.write_table_stats(t, [long_stats(nulls=1)], engine=DEFAULT_ENGINE, last_analyzed=1)
        assert set(repo.partition_targets(t.tbl_id, PARTS[:2], lock=True)) == set(PARTS[:2])
        assert repo.read_partition_stats(H, "sales", "orders", PARTS[:2], ["id"], DEFAULT_ENGINE) == []


# ---------------------------------------------------------------- aggregation in SQL


def test_sums_in_sql_match_the_rows(sales: Store) -> None:
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
        put_partitions(uow, "sales", "orders", stats)
        put_partitions(uow, "sales", "orders", {PARTS[0]: [long_stats(nulls=10**6)]}, engine="impala")
    asked = PARTS[:10] + ["ds=1999-01-01/hr=1"]  # one requested partition does not exist
    with sales.read() as uow:
        def sums(columns: list[str]) -> tuple[dict, int]:
            return uow.column_stats.sum_partition_stats(H, "sales", "orders", asked, columns, DEFAULT_ENGINE)

        agg, parts_found = sums(["id", "price", "name", "ok"])
        with_d, d_found = sums(["id", "d"])
        nothing, nothing_found = sums(["id", "extra"])
        assert uow.column_stats.sum_partition_stats(H, "sales", "nope", asked, ["id"], DEFAULT_ENGINE) == ({}, 0)
    by_col = {c: found[0] for c, found in agg.items()}
    assert all(len(found) == 1 for found in agg.values())  # one stored type each
    assert parts_found == 10 and sorted(by_col) == ["id", "name", "ok", "price"]
    i = range(10)
    assert by_col["id"].sums.stats == LongStats(num_nulls=sum(i), num_dvs=10, low=-90, high=900)
    assert by_col["id"].partitions == 10 and by_col["id"].bit_vectors == 10 and by_col["id"].histograms == 0
    # Decimal bounds are left to the Python aggregator (SQLite cannot compare them exactly).
    assert by_col["price"].sums.stats == DecimalStats(num_nulls=10, num_dvs=10, low=None, high=None)
    assert by_col["name"].sums.stats == StringStats(num_nulls=0, max_col_len=9, avg_col_len=4.5, num_dvs=9)
    assert by_col["ok"].sums.stats == BooleanStats(num_nulls=10, num_trues=sum(i), num_falses=10)
    assert d_found == 6  # partitions 1, 2, 4, 5, 7, 8 have `d`
    d = with_d["d"][0]
    assert (d.partitions, d.sums.stats.low, d.sums.stats.high) == (6, -2.0, 12.0)
    assert nothing_found == 0 and list(nothing) == ["id"]
    # The service answers the whole aggregate: decimal bounds in numeric, not text, order; a missing table.
    service = StatisticsService(sales)
    price = service.aggregate("sales", "orders", PARTS[:10], ["price"]).entries[0].stats  # no extrapolation
    assert (price.low, price.high) == (Decimal("0.09"), Decimal("110.50"))
    with pytest.raises(NoSuchObject):
        service.aggregate("sales", "nope", asked, ["id"])


def test_sums_are_one_statement(sales: Store) -> None:
    with sales.transaction() as uow:
        put_partitions(uow, "sales", "orders", {p: [long_stats(), NAME] for p in PARTS})
    statements: list[str] = []
    sa.event.listen(sales.engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    with sales.read() as uow:
        _, parts_found = uow.column_stats.sum_partition_stats(H, "sales", "orders", PARTS, ["id", "name"], DEFAULT_ENGINE)
    assert parts_found == 12
    assert [s for s in statements if not s.startswith("BEGIN")].__len__() == 1
