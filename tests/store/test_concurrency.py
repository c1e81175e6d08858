"""Concurrent writers of the same statistics, from threads and from processes: no lost update, no duplicate
row, no "database is locked"."""

from __future__ import annotations

import json
import multiprocessing
import threading
from collections.abc import Callable
from dataclasses import replace

import sqlalchemy as sa

from metastore.catalog import DEFAULT_CATALOG, DEFAULT_ENGINE, Database
from metastore.stats.model import ColumnStatsEntry, LongStats
from metastore.store import Store
from store.builders import partition, sales_table
from store.stats_steps import partition_stats, put_partitions, put_table, table_stats, target

PART = "ds=2024-01-01/hr=0"


def _entry(nulls: int, column: str = "id") -> ColumnStatsEntry:
    return ColumnStatsEntry(column, "bigint", LongStats(num_nulls=nulls, num_dvs=1, low=0, high=nulls))


def _setup(store: Store) -> None:
    with store.transaction() as uow:
        uow.databases.create(Database(name="sales"))
        uow.tables.create(sales_table())
        uow.partitions.add([partition(["2024-01-01", "0"])])


def _increment_table(store: Store) -> None:
    """Read-merge-write of table-level statistics, as the service's merge does it: add one null."""
    with store.transaction() as uow:
        repo = uow.column_stats
        t = target(uow, "sales", "orders", lock="update")  # exclusive: read-merge-write
        current = repo.read_table_stats(DEFAULT_CATALOG, "sales", "orders", ["id"], DEFAULT_ENGINE)
        nulls = current[0][0].stats.num_nulls if current else 0
        repo.write_table_stats(t, [_entry(nulls + 1)], engine=DEFAULT_ENGINE, last_analyzed=1)


def _increment_partition(store: Store) -> None:
    with store.transaction() as uow:
        repo = uow.column_stats
        t = target(uow, "sales", "orders", lock="share")
        parts = repo.partition_targets(t.tbl_id, [PART], lock=True)
        current = repo.read_partition_stats(DEFAULT_CATALOG, "sales", "orders", [PART], ["id"], DEFAULT_ENGINE)
        nulls = current[0][1].stats.num_nulls if current else 0
        repo.write_partition_stats(parts, {PART: [_entry(nulls + 1)]}, engine=DEFAULT_ENGINE, last_analyzed={PART: 1})


def _overwrite(store: Store, value: int) -> None:
    """Blind upserts of the same column (no read): the race INSERT ... ON CONFLICT must absorb."""
    with store.transaction() as uow:
        put_table(uow, "sales", "orders", [_entry(value)])
        put_partitions(uow, "sales", "orders", {PART: [_entry(value)]})


def _run_threads(n: int, work: Callable[[int], None]) -> None:
    errors: list[BaseException] = []
    start = threading.Barrier(n)

    def body(i: int) -> None:
        try:
            start.wait()
            work(i)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=body, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []


def _rows(store: Store) -> tuple[int, int]:
    with store.read() as uow:
        c = uow.connection
        return (
            c.execute(sa.text('SELECT count(*) FROM "TAB_COL_STATS"')).scalar(),
            c.execute(sa.text('SELECT count(*) FROM "PART_COL_STATS"')).scalar(),
        )


def test_threads_read_merge_write_without_lost_updates(store: Store) -> None:
    _setup(store)
    threads, rounds = 4, 8

    def work(_i: int) -> None:
        for _ in range(rounds):
            _increment_table(store)
            _increment_partition(store)

    _run_threads(threads, work)
    with store.read() as uow:
        assert table_stats(uow, "sales", "orders", ["id"])[0].stats.num_nulls == threads * rounds
        assert partition_stats(uow, "sales", "orders", [PART], ["id"])[PART][0].stats.num_nulls == threads * rounds
    assert _rows(store) == (1, 1)


def test_threads_blind_upserts_leave_one_row(store: Store) -> None:
    _setup(store)

    def work(i: int) -> None:
        for r in range(10):
            _overwrite(store, i * 100 + r)

    _run_threads(4, work)
    assert _rows(store) == (1, 1)
    with store.read() as uow:
        final = table_stats(uow, "sales", "orders", ["id"])[0].stats.num_nulls
    assert final % 100 == 9  # the last write of some thread


def test_threads_marking_different_columns_keep_every_mark(store: Store) -> None:
    """COLUMN_STATS_ACCURATE is read-modify-write JSON: concurrent writers of different columns must not
    erase each other's marks."""
    _setup(store)
    columns = ["id", "price", "name", "ok"]
    with store.transaction() as uow:
        t = uow.tables.get("sales", "orders")
        cols = [replace(c, type="bigint") for c in t.sd.cols]  # every column bigint: one entry kind for all
        uow.tables.alter("sales", "orders", replace(t, sd=replace(t.sd, cols=cols)))

    def work(i: int) -> None:
        for _ in range(3):
            with store.transaction() as uow:
                put_table(uow, "sales", "orders", [_entry(1, columns[i])])
                put_partitions(uow, "sales", "orders", {PART: [_entry(1, columns[i])]})

    _run_threads(4, work)
    with store.read() as uow:
        table_marks = json.loads(uow.tables.get("sales", "orders").parameters["COLUMN_STATS_ACCURATE"])
        part_marks = json.loads(
            uow.partitions.get_by_name("sales", "orders", PART).parameters["COLUMN_STATS_ACCURATE"]
        )
    assert sorted(table_marks["COLUMN_STATS"]) == sorted(columns)
    assert sorted(part_marks["COLUMN_STATS"]) == sorted(columns)


def _process_worker(url: str, rounds: int) -> None:
    store = Store(url)
    try:
        for _ in range(rounds):
            _increment_table(store)
            _increment_partition(store)
    finally:
        store.dispose()


def test_processes_read_merge_write_without_lost_updates(store: Store) -> None:
    _setup(store)
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_process_worker, args=(store.url, 5)) for _ in range(3)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(180)
    assert [p.exitcode for p in procs] == [0, 0, 0]
    with store.read() as uow:
        assert table_stats(uow, "sales", "orders", ["id"])[0].stats.num_nulls == 15
        assert partition_stats(uow, "sales", "orders", [PART], ["id"])[PART][0].stats.num_nulls == 15
    assert _rows(store) == (1, 1)
