"""The partition listing reply cache (metastore.service.listing_cache, migration 0008) on PostgreSQL: a repeated
listing is answered from the cache, and every change to what a listing sends invalidates it — through the
services (add, drop, alter, rename partitions; alter table with cascade; rename the table; statistics writes
changing partition parameters; parameter updates) and by hand on every table a Partition is built from (the
triggers cover any writer). After each change the reply equals the uncached server's, byte for byte, and a
second server with its own cache over the same database sees the change too."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
import sqlalchemy as sa

from metastore.catalog import Database, FieldSchema, Partition, SerDeInfo, StorageDescriptor, Table
from metastore.server.handler import Handler
from metastore.service import CatalogService, StatisticsService, StatsWrite
from metastore.service.listing_cache import ListingCache
from metastore.stats.model import ColumnStatsEntry, LongStats
from metastore.store import Store, migrate
from server.handler_support import handler_over, processed, reply_bytes

FILTER = 'ds >= ""'


@pytest.fixture
def store(pg_url: str):
    migrate.upgrade(pg_url)
    st = Store(pg_url)
    st.ensure_default_database("/tmp/warehouse")
    yield st
    st.dispose()



CALLS: dict[str, Callable[[Handler], Any]] = {
    "filter": lambda h: h.get_partitions_by_filter("lc", "t", FILTER, -1),
    "filter, hr > 1, 3 at most": lambda h: h.get_partitions_by_filter("lc", "t", "hr > 1", 3),
    "all": lambda h: h.get_partitions("lc", "t", -1),
    "ps": lambda h: h.get_partitions_ps("lc", "t", ["a"], -1),
}


def _table(cols: list[FieldSchema]) -> Table:
    return Table(db_name="lc", table_name="t", sd=StorageDescriptor(
        cols=cols, location="/tmp/warehouse/lc.db/t", input_format="in", output_format="out",
        serde_info=SerDeInfo(serialization_lib="lib", parameters={"serialization.format": "1"}),
    ), partition_keys=[FieldSchema("ds", "string"), FieldSchema("hr", "int")], table_type="EXTERNAL_TABLE")


def _setup(store: Store) -> CatalogService:
    catalog = CatalogService(store, "/tmp/warehouse")
    catalog.create_database(Database(name="lc", location_uri="/tmp/warehouse/lc.db"))
    catalog.create_table(_table([FieldSchema("x", "bigint"), FieldSchema("y", "string")]))
    catalog.add_partitions("lc", "t", [
        Partition(db_name="lc", table_name="t", values=[ds, str(hr)], parameters={"k": f"{ds}{hr}"})
        for ds in ("a", "b") for hr in range(4)
    ])
    return catalog


def _stats_write(store: Store) -> None:
    StatisticsService(store).write([StatsWrite("lc", "t", [ColumnStatsEntry("x", "bigint", LongStats(
        num_nulls=1, num_dvs=2, low=0, high=9))], partition_name="ds=a/hr=2")])


def _sql(statement: str) -> Callable[[Store], None]:
    def run(store: Store) -> None:
        with store.transaction() as uow:
            assert uow.connection.execute(sa.text(statement)).rowcount > 0, statement
    return run


def _partition(catalog: CatalogService, values: list[str]) -> Partition:
    return catalog.get_partition("lc", "t", values)


# Each change alters at least one partition every call above lists (ds=a/hr=2 and hr=3 are in all of them).
CHANGES: dict[str, Callable[[Store, CatalogService], None]] = {
    "add partition": lambda s, c: c.add_partitions("lc", "t", [
        Partition(db_name="lc", table_name="t", values=["a", "9"])]),
    "drop partition": lambda s, c: c.drop_partitions("lc", "t", names=["ds=a/hr=2"], delete_data=False),
    "alter partition parameters": lambda s, c: c.alter_partitions("lc", "t", [
        replace(_partition(c, ["a", "2"]), parameters={"k": "changed"})]),
    "alter partition location": lambda s, c: c.alter_partitions("lc", "t", [
        replace(p, sd=replace(p.sd, location="/elsewhere")) for p in [_partition(c, ["a", "3"])]]),
    "alter partition columns": lambda s, c: c.alter_partitions("lc", "t", [
        replace(p, sd=replace(p.sd, cols=[FieldSchema("z", "int")])) for p in [_partition(c, ["a", "3"])]]),
    "rename partition": lambda s, c: c.rename_partition("lc", "t", ["a", "2"], replace(
        _partition(c, ["a", "2"]), values=["a", "7"])),
    "alter table cascade": lambda s, c: c.alter_table("lc", "t", _table(
        [FieldSchema("x", "bigint"), FieldSchema("y", "string"), FieldSchema("w", "double")]), cascade=True),
    "statistics write": lambda s, c: _stats_write(s),
    "update partition parameters": lambda s, c: s_update(s),
    "by hand: PARTITIONS": lambda s, c: _sql('UPDATE "PARTITIONS" SET "LAST_ACCESS_TIME" = 5 '
                                             "WHERE \"PART_NAME\" = 'ds=a/hr=2'")(s),
    "by hand: PARTITION_KEY_VALS": lambda s, c: _sql(
        'UPDATE "PARTITION_KEY_VALS" SET "PART_KEY_VAL" = \'zz\' WHERE "INTEGER_IDX" = 1 AND "PART_ID" = '
        '(SELECT "PART_ID" FROM "PARTITIONS" WHERE "PART_NAME" = \'ds=a/hr=2\')')(s),
    "by hand: PARTITION_PARAMS delete": lambda s, c: _sql('DELETE FROM "PARTITION_PARAMS" WHERE "PARAM_KEY" = \'k\'')(s),
    "by hand: SDS": lambda s, c: _sql('UPDATE "SDS" SET "NUM_BUCKETS" = 3 WHERE "SD_ID" IN '
                                      '(SELECT "SD_ID" FROM "PARTITIONS")')(s),
    "by hand: SD_PARAMS": lambda s, c: _sql('INSERT INTO "SD_PARAMS" SELECT "SD_ID", \'p\', \'v\' FROM "PARTITIONS"')(s),
    "by hand: BUCKETING_COLS": lambda s, c: _sql(
        'INSERT INTO "BUCKETING_COLS" SELECT "SD_ID", 0, \'x\' FROM "PARTITIONS"')(s),
    "by hand: SORT_COLS": lambda s, c: _sql('INSERT INTO "SORT_COLS" SELECT "SD_ID", 0, \'x\', 1 FROM "PARTITIONS"')(s),
    "by hand: SERDES": lambda s, c: _sql('UPDATE "SERDES" SET "NAME" = \'n\' WHERE "SERDE_ID" IN '
                                         '(SELECT s."SERDE_ID" FROM "SDS" s JOIN "PARTITIONS" p USING ("SD_ID"))')(s),
    "by hand: SERDE_PARAMS": lambda s, c: _sql('UPDATE "SERDE_PARAMS" SET "PARAM_VALUE" = \'2\'')(s),
    "by hand: COLUMNS_V2": lambda s, c: _sql('UPDATE "COLUMNS_V2" SET "COMMENT" = \'c\'')(s),
}


def s_update(store: Store) -> None:
    with store.transaction() as uow:
        uow.partitions.update_parameters("lc", "t", {"ds=a/hr=2": {"k": None, "new": "1"}, "ds=a/hr=3": {"k": "v"}})


def test_a_repeated_listing_is_served_from_the_cache(store: Store) -> None:
    _setup(store)
    cache = ListingCache(8 << 20)
    handler, plain = handler_over(store, cache), handler_over(store, None)
    for name, call in CALLS.items():
        first = reply_bytes(call(handler))
        hits = cache.hits
        assert reply_bytes(call(handler)) == first == reply_bytes(call(plain)), name
        assert cache.hits == hits + 1, name
    # catName or not (a Hive 2 client) are two entries, each answered to its own client through the processor
    for hive2, hit in ((True, 0), (False, 1), (True, 1), (False, 1)):  # the first Hive 2 call keeps its entry
        hits = cache.hits
        got = processed(handler, "get_partitions_by_filter", "lc", "t", FILTER, -1, hive2=hive2)
        assert got == processed(plain, "get_partitions_by_filter", "lc", "t", FILTER, -1, hive2=hive2), hive2
        assert (b"\x00\x00\x00\x04hive" in got) is not hive2  # catName
        assert cache.hits == hits + hit, hive2
    assert processed(handler, "get_partitions_by_filter", "lc", "t", FILTER, -1, hive2=True) != processed(
        handler, "get_partitions_by_filter", "lc", "t", FILTER, -1)


def test_a_cached_listing_is_one_statement(store: Store) -> None:
    """A hit is checked before any listing is opened: one statement reads the table, its partition keys and
    its listing version (no snapshot to begin and end, no filter compiled against the database)."""
    _setup(store)
    cache = ListingCache(8 << 20)
    handler, plain = handler_over(store, cache), handler_over(store, None)
    statements: list[str] = []
    sa.event.listen(store.engine, "before_cursor_execute", lambda *a: statements.append(a[2]))
    lookup = ["EXECUTE metastore_listing_lookup(%(db)s::text, %(catalog)s::text, %(tbl)s::text)"]
    for name, call in CALLS.items():
        first = reply_bytes(call(handler))  # a miss: the lookup, then the listing read in a snapshot
        statements.clear()
        hits = cache.hits
        again = reply_bytes(call(handler))
        assert statements == lookup, name
        assert cache.hits == hits + 1 and again == first == reply_bytes(call(plain)), name
    statements.clear()
    reply_bytes(CALLS["filter"](handler))
    assert statements == lookup


@pytest.mark.parametrize("change", list(CHANGES))
def test_every_change_to_a_listing_invalidates_it(store: Store, change: str) -> None:
    catalog = _setup(store)
    cache, other_cache = ListingCache(8 << 20), ListingCache(8 << 20)
    handler, other, plain = handler_over(store, cache), handler_over(store, other_cache), handler_over(store, None)
    before = {}
    for name, call in CALLS.items():
        before[name] = reply_bytes(call(handler))
        reply_bytes(call(other))
        assert reply_bytes(call(handler)) == before[name]  # cached now
    hits = cache.hits
    CHANGES[change](store, catalog)
    for name, call in CALLS.items():
        want = reply_bytes(call(plain))
        assert reply_bytes(call(handler)) == want, (change, name)
        assert reply_bytes(call(other)) == want, (change, name)
        if name in ("filter", "all"):
            assert want != before[name], (change, name)  # the change shows in the whole-table listings
    assert cache.hits == hits, change  # nothing was served from before the change


def test_a_renamed_table_is_listed_under_its_new_name(store: Store) -> None:
    catalog = _setup(store)
    cache = ListingCache(8 << 20)
    handler, plain = handler_over(store, cache), handler_over(store, None)
    reply_bytes(CALLS["filter"](handler))
    table = catalog.get_table("lc", "t")
    catalog.alter_table("lc", "t", replace(table, table_name="t2"))
    got = reply_bytes(handler.get_partitions_by_filter("lc", "t2", FILTER, -1))
    assert got == reply_bytes(plain.get_partitions_by_filter("lc", "t2", FILTER, -1))
    assert b"\x00\x00\x00\x02t2" in got and cache.hits == 0


def test_adding_partitions_writes_each_partition_row_once(store: Store) -> None:
    """The child tables' triggers leave alone rows the same transaction wrote (no second row version per
    partition and child table), and the version still changes for everyone else (test above)."""
    catalog = _setup(store)
    table = catalog.get_table("lc", "t")
    with store.transaction() as uow:
        uow.partitions.add([
            Partition(db_name="lc", table_name="t", values=["c", str(i)], parameters={"a": "1", "b": "2"},
                      sd=replace(table.sd, location=f"/tmp/warehouse/lc.db/t/c{i}"))
            for i in range(50)
        ])
        updated = uow.connection.execute(sa.text(
            "SELECT n_tup_upd, n_tup_hot_upd FROM pg_stat_xact_user_tables WHERE relname = 'PARTITIONS'"
        )).one()
        assert tuple(updated) == (0, 0)
