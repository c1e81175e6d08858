"""The get_partition_names reply cache (the listing cache's "names" entries, validated by PART_NAMES_VERSIONS of
migration 0009) on PostgreSQL: a repeated call is answered from the cache in one statement, changes that leave the
names alone keep it, and every change to a table's set of partition names invalidates it — through the services
(add one or several partitions, drop, rename a partition; drop and recreate the table; rename the table), by hand
(insert, delete, rename, move to another table, truncate) and from a second process with its own store. After each
change the reply equals the uncached server's, byte for byte, for the whole table and for a max_parts limit, and a
second handler with its own cache over the same database sees the change too."""

from __future__ import annotations

import multiprocessing
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest
import sqlalchemy as sa
from thrift.protocol.TBinaryProtocol import TBinaryProtocol
from thrift.transport.TTransport import TMemoryBuffer

from metastore.api.hive_metastore import ThriftHiveMetastore as gen  # noqa: N813
from metastore.catalog import Database, FieldSchema, Partition, SerDeInfo, StorageDescriptor, Table
from metastore.errors import NoSuchObject
from metastore.server.handler import Handler
from metastore.service import CatalogService, StatisticsService, StatsWrite
from metastore.service.listing_cache import ListingCache
from metastore.stats.model import ColumnStatsEntry, LongStats
from metastore.store import Store, migrate
from server.handler_support import handler_over, reply_bytes


@pytest.fixture
def store(pg_url: str):
    migrate.upgrade(pg_url)
    st = Store(pg_url)
    st.ensure_default_database("/tmp/warehouse")
    yield st
    st.dispose()



def _names(data: bytes) -> list[str]:
    result = gen.get_partition_names_result()
    result.read(TBinaryProtocol(TMemoryBuffer(data)))
    return list(result.success)


def _table(name: str = "t") -> Table:
    return Table(db_name="nc", table_name=name, sd=StorageDescriptor(
        cols=[FieldSchema("x", "bigint")], location=f"/tmp/warehouse/nc.db/{name}", input_format="in",
        output_format="out", serde_info=SerDeInfo(serialization_lib="lib"),
    ), partition_keys=[FieldSchema("ds", "string"), FieldSchema("hr", "int")], table_type="EXTERNAL_TABLE")


def _parts(table: str, values: list[tuple[str, int]]) -> list[Partition]:
    return [Partition(db_name="nc", table_name=table, values=[ds, str(hr)]) for ds, hr in values]


def _setup(store: Store) -> CatalogService:
    catalog = CatalogService(store, "/tmp/warehouse")
    catalog.create_database(Database(name="nc", location_uri="/tmp/warehouse/nc.db"))
    for name in ("t", "u"):
        catalog.create_table(_table(name))
        catalog.add_partitions("nc", name, _parts(name, [(ds, hr) for ds in ("a", "b") for hr in range(4)]))
    return catalog


def _sql(*statements: str) -> Callable[[Store, CatalogService], None]:
    def run(store: Store, catalog: CatalogService) -> None:
        with store.transaction() as uow:
            for statement in statements:
                uow.connection.execute(sa.text(statement))
    return run


def _recreate(store: Store, catalog: CatalogService, values: list[tuple[str, int]]) -> None:
    catalog.drop_table("nc", "t", delete_data=False)
    catalog.create_table(_table())
    if values:
        catalog.add_partitions("nc", "t", _parts("t", values))


def _in_another_process(url: str) -> None:
    store = Store(url)
    try:
        CatalogService(store, "/tmp/warehouse").add_partitions("nc", "t", _parts("t", [("a", 9)]))
    finally:
        store.dispose()


def _another_process(store: Store, catalog: CatalogService) -> None:
    process = multiprocessing.get_context("spawn").Process(target=_in_another_process, args=(store.url,))
    process.start()
    process.join(120)
    assert process.exitcode == 0


_T = '(SELECT "TBL_ID" FROM "TBLS" WHERE "TBL_NAME" = \'t\')'
_U = '(SELECT "TBL_ID" FROM "TBLS" WHERE "TBL_NAME" = \'u\')'

# Each changes the names of table t (the whole listing, and its first 3 names for all but the ones at the end).
CHANGES: dict[str, Callable[[Store, CatalogService], None]] = {
    "add a partition": lambda s, c: c.add_partitions("nc", "t", _parts("t", [("a", 9)])),
    "add partitions": lambda s, c: c.add_partitions("nc", "t", _parts("t", [("0", 1), ("c", 2), ("c", 3)])),
    "drop a partition": lambda s, c: c.drop_partitions("nc", "t", names=["ds=a/hr=0"], delete_data=False),
    "rename a partition": lambda s, c: c.rename_partition("nc", "t", ["a", "1"], replace(
        c.get_partition("nc", "t", ["a", "1"]), values=["z", "1"])),
    "drop and recreate the table": lambda s, c: _recreate(s, c, [("a", 0), ("c", 5)]),
    "drop and recreate the table without partitions": lambda s, c: _recreate(s, c, []),
    "another process adds a partition": _another_process,
    "by hand: insert": _sql(
        'INSERT INTO "PARTITIONS" ("TBL_ID", "PART_NAME", "CREATE_TIME", "LAST_ACCESS_TIME", "WRITE_ID") '
        f"SELECT {_T}, 'ds=a/hr=00', 0, 0, 0"),
    "by hand: delete": _sql(f'DELETE FROM "PARTITIONS" WHERE "TBL_ID" = {_T} AND "PART_NAME" = \'ds=a/hr=1\''),
    "by hand: rename": _sql(
        f'UPDATE "PARTITIONS" SET "PART_NAME" = \'ds=0/hr=1\' WHERE "TBL_ID" = {_T} AND "PART_NAME" = \'ds=b/hr=1\''),
    "by hand: move to another table": _sql(
        f'DELETE FROM "PARTITIONS" WHERE "TBL_ID" = {_U} AND "PART_NAME" = \'ds=a/hr=0\'',
        f'UPDATE "PARTITIONS" SET "TBL_ID" = {_U} WHERE "TBL_ID" = {_T} AND "PART_NAME" = \'ds=a/hr=0\''),
    "by hand: move from another table": _sql(
        f'DELETE FROM "PARTITIONS" WHERE "TBL_ID" = {_T} AND "PART_NAME" = \'ds=a/hr=0\'',
        f'UPDATE "PARTITIONS" SET "TBL_ID" = {_T}, "PART_NAME" = \'ds=a/hr=0\' '
        f'WHERE "TBL_ID" = {_U} AND "PART_NAME" = \'ds=b/hr=3\''),
    "by hand: truncate": _sql('TRUNCATE "PARTITIONS" CASCADE'),
}

CALLS: dict[str, Callable[[Handler], Any]] = {
    "all": lambda h: h.get_partition_names("nc", "t", -1),
    "3 at most": lambda h: h.get_partition_names("nc", "t", 3),
}


def test_a_repeated_call_is_served_from_the_cache_in_one_statement(store: Store) -> None:
    _setup(store)
    cache = ListingCache(8 << 20)
    handler, plain = handler_over(store, cache), handler_over(store, None)
    statements: list[str] = []
    sa.event.listen(store.engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    for name, call in CALLS.items():
        first = reply_bytes(call(handler))
        hits = cache.hits
        del statements[:]
        assert reply_bytes(call(handler)) == first == reply_bytes(call(plain)), name
        assert cache.hits == hits + 1, name
    assert _names(reply_bytes(CALLS["3 at most"](handler))) == ["ds=a/hr=0", "ds=a/hr=1", "ds=a/hr=2"]
    assert len(cache) == 2  # max_parts -1 and 3: two entries
    del statements[:]
    reply_bytes(CALLS["all"](handler))
    assert len(statements) == 1, statements  # the table lookup with the version; no snapshot, no names read


def test_changes_that_keep_the_names_keep_the_cached_reply(store: Store) -> None:
    catalog = _setup(store)
    cache = ListingCache(8 << 20)
    handler, plain = handler_over(store, cache), handler_over(store, None)
    first = reply_bytes(CALLS["all"](handler))
    catalog.alter_partitions("nc", "t", [replace(catalog.get_partition("nc", "t", ["a", "2"]), parameters={"k": "v"})])
    StatisticsService(store).write([StatsWrite("nc", "t", [ColumnStatsEntry("x", "bigint", LongStats(
        num_nulls=1, num_dvs=2, low=0, high=9))], partition_name="ds=a/hr=2")])
    catalog.add_partitions("nc", "u", _parts("u", [("c", 1)]))  # another table's names
    hits = cache.hits
    assert reply_bytes(CALLS["all"](handler)) == first == reply_bytes(CALLS["all"](plain))
    assert cache.hits == hits + 1


@pytest.mark.parametrize("change", list(CHANGES))
def test_every_change_to_the_names_invalidates_the_cached_reply(store: Store, change: str) -> None:
    catalog = _setup(store)
    cache, other_cache = ListingCache(8 << 20), ListingCache(8 << 20)
    handler, other, plain = handler_over(store, cache), handler_over(store, other_cache), handler_over(store, None)
    before = {}
    for name, call in CALLS.items():
        before[name] = reply_bytes(call(handler))
        reply_bytes(call(other))
        assert reply_bytes(call(handler)) == before[name]  # cached now
    hits, other_hits = cache.hits, other_cache.hits
    CHANGES[change](store, catalog)
    for name, call in CALLS.items():
        want = reply_bytes(call(plain))
        assert reply_bytes(call(handler)) == want, (change, name)
        assert reply_bytes(call(other)) == want, (change, name)
    if change != "by hand: move from another table":  # (which puts back the names it takes away)
        assert reply_bytes(CALLS["all"](plain)) != before["all"], change  # the change shows in the whole listing
    assert cache.hits == hits and other_cache.hits == other_hits, change  # nothing served from before it
    # and the new reply is cached in its turn (a table whose partitions never changed since it was created
    # has no version: not cached)
    cached = change != "drop and recreate the table without partitions"
    assert reply_bytes(CALLS["all"](handler)) == reply_bytes(CALLS["all"](plain)) and cache.hits == hits + cached


def test_a_renamed_table_answers_under_its_new_name_only(store: Store) -> None:
    catalog = _setup(store)
    cache = ListingCache(8 << 20)
    handler, plain = handler_over(store, cache), handler_over(store, None)
    first = reply_bytes(CALLS["all"](handler))
    catalog.alter_table("nc", "t", replace(catalog.get_table("nc", "t"), table_name="t2"))
    with pytest.raises(NoSuchObject):
        handler.ms.catalog.cached_partition_names("nc", "t")
    assert reply_bytes(handler.get_partition_names("nc", "t2", -1)) == reply_bytes(plain.get_partition_names("nc", "t2", -1))
    assert reply_bytes(handler.get_partition_names("nc", "t2", -1)) == first  # the same names, the same table
    catalog.create_table(_table())  # a new table under the old name: its own (empty) names
    assert _names(reply_bytes(handler.get_partition_names("nc", "t", -1))) == []
    catalog.add_partitions("nc", "t", _parts("t", [("q", 1)]))
    assert _names(reply_bytes(handler.get_partition_names("nc", "t", -1))) == ["ds=q/hr=1"]
