"""The statistics service on PostgreSQL: statistics writes may skip the WAL flush wait (configurable),
reads take no transaction round trips, and one write of one column is one statement (a table written to
before) or a fixed handful (the first time)."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from metastore.catalog import Database, FieldSchema, StorageDescriptor, Table
from metastore.config import Settings
from metastore.service import Metastore, StatsWrite
from metastore.stats.model import ColumnStatsEntry, LongStats
from metastore.wire.stats import encode_served
from server.harness import fresh_pg_database

ENTRY = ColumnStatsEntry("l", "bigint", LongStats(num_nulls=1, num_dvs=2, low=1, high=5))


@pytest.fixture
def pg_metastore(pg_server, pg_schema_template):
    def open_(**settings: object) -> Metastore:
        ms = Metastore.open(Settings(db=url, warehouse="/tmp/wh", **settings), served_encoding=encode_served, workers=2)
        opened.append(ms)
        return ms

    opened: list[Metastore] = []
    with fresh_pg_database(pg_server, template=pg_schema_template) as url:
        first = open_()
        first.store.ensure_default_database("/tmp/wh")
        first.catalog.create_database(Database(name="s", location_uri="/tmp/wh/s.db"))
        first.catalog.create_table(
            Table(db_name="s", table_name="t", sd=StorageDescriptor(cols=[FieldSchema("l", "bigint")], location="/tmp/wh/t"))
        )
        yield open_
        for ms in opened:
            ms.close()


def _statements(ms: Metastore) -> list[str]:
    seen: list[str] = []
    sa.event.listen(ms.store.engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
    return seen


@pytest.mark.parametrize("synchronous, expect_set", [(False, True), (True, False)])
def test_statistics_writes_commit_without_waiting_for_the_flush(pg_metastore, synchronous, expect_set):
    ms = pg_metastore(stats_synchronous_commit=synchronous)
    seen = _statements(ms)
    ms.stats.write([StatsWrite("s", "t", [ENTRY])])
    assert any("SET LOCAL synchronous_commit = off" in s for s in seen) is expect_set
    seen.clear()
    ms.catalog.create_database(Database(name=f"other_{int(synchronous)}", location_uri="/tmp/wh/o.db"))
    assert not any("synchronous_commit" in s for s in seen)
    assert ms.stats.table_column_stats("s", "t", "l")[0] == ENTRY


def test_one_column_write_and_read_statement_counts(pg_metastore):
    ms = pg_metastore()
    ms.stats.write([StatsWrite("s", "t", [ENTRY])])  # first write also marks the column accurate
    ms.stats.table_stats("s", "t", ["l"])  # reads prepare their statement once per connection
    seen = _statements(ms)
    ms.stats.write([StatsWrite("s", "t", [ENTRY])])
    # The table is known now: one call of metastore_put_table_stats (prepared on first use per connection).
    assert [s.split("(")[0] for s in seen if not s.startswith("PREPARE")] == ["EXECUTE metastore_put_table_stats"]
    seen.clear()
    ms.stats.write([StatsWrite("s", "t", [ENTRY])])
    assert len(seen) == 1, seen
    seen.clear()
    # A table this worker has not written to: the locking lookup, the table's details, the upsert
    # (COLUMN_STATS_ACCURATE is already right, so it is not written again).
    fresh = pg_metastore()
    seen_fresh = _statements(fresh)
    fresh.stats.write([StatsWrite("s", "t", [ENTRY])])
    preparing = ("PREPARE", "SELECT 1 FROM pg_prepared_statements")  # first use on each new connection
    assert len([s for s in seen_fresh if not s.startswith(preparing)]) == 3, seen_fresh
    ms.stats.table_column_stats("s", "t", "l")
    ms.stats.table_stats("s", "t", ["l", "x"])
    assert len(seen) == 2, seen


def test_reads_are_prepared_once_per_connection(pg_metastore, pg_server):
    ms = pg_metastore()
    ms.stats.write([StatsWrite("s", "t", [ENTRY])])
    seen = _statements(ms)
    for _ in range(10):
        assert ms.stats.table_column_stats("s", "t", "l")[0] == ENTRY
    assert sum(s.startswith("PREPARE") for s in seen) <= 1
    assert sum(s.startswith("EXECUTE") for s in seen) == 10
    # A connection that lost its prepared statements (here: all of them deallocated) prepares them again.
    with ms.store.engine.connect() as conn:
        conn.exec_driver_sql("DEALLOCATE ALL")
        conn.commit()
    for _ in range(3):
        assert ms.stats.table_stats("s", "t", ["l"]) == [ENTRY]
