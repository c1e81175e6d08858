"""Right after thousands of partitions are added in bulk, PostgreSQL's planner statistics still describe the
table as it was (until autovacuum analyses it). The hot statements of get_aggr_stats_for and
get_partitions_statistics_req over 100 partitions must keep their plan then (issue 15 §3): each name looked up
in UNIQUEPARTITION, each partition's statistics in PART_COL_STATS_UNIQUE, no scan of either table, and the same
plan once the database is analysed. The mechanism chosen is the statements' shape (see
metastore.store.column_stats.statements.named_partition_stats); this checks it with EXPLAIN, not with timings.
The reply cache's version of a run of partitions is read as one range of UNIQUEPARTITION
(metastore.store.column_stats.versions): that plan too must hold whatever the estimates, prepared (a generic
plan, as the server runs it) or not."""

from __future__ import annotations

import re

import pytest
import sqlalchemy as sa

from metastore.catalog import Database, FieldSchema, Partition, StorageDescriptor, Table
from metastore.service import CatalogService, StatisticsService, StatsWrite
from metastore.stats.model import ColumnStatsEntry, LongStats
from metastore.store import Store, migrate
from metastore.wire.stats import encode_served

pytestmark = [pytest.mark.pg, pytest.mark.slow]

COLUMNS = [f"c{i}" for i in range(4)]
BULK = 10_000
_SCAN = re.compile(r'(Seq Scan|Index Scan|Index Only Scan|Bitmap Heap Scan) (?:using "?(\w+)"? )?on "?(\w+)"?')


def _fill(catalog: CatalogService, stats: StatisticsService, table: str, count: int) -> list[str]:
    cols = [FieldSchema(c, "bigint") for c in COLUMNS]
    catalog.create_table(
        Table(db_name="plans", table_name=table, sd=StorageDescriptor(cols=cols, location=f"/tmp/plans/{table}"),
              partition_keys=[FieldSchema("ds", "string")])
    )
    names = [f"ds=p{i:06d}" for i in range(count)]
    for start in range(0, count, 2000):
        batch = names[start : start + 2000]
        catalog.add_partitions("plans", table, [Partition(db_name="plans", table_name=table, values=[n[3:]]) for n in batch])
        stats.write([
            StatsWrite("plans", table, [
                ColumnStatsEntry(c, "bigint", LongStats(num_nulls=k, num_dvs=10 + k, low=-i, high=i + k))
                for k, c in enumerate(COLUMNS)
            ], partition_name=n)
            for i, n in enumerate(batch, start)
        ])
    return names


def _scans(conn: sa.Connection, statements: list[tuple[str, object]]) -> list[set[tuple[str, str | None, str]]]:
    """(scan kind, index, table) of every scan in each statement's plan."""
    out = []
    for sql, params in statements:
        plan = "\n".join(r[0] for r in conn.exec_driver_sql("EXPLAIN " + sql, params))
        out.append({(kind, index, rel) for kind, index, rel in _SCAN.findall(plan)})
    return out


def test_hot_statements_keep_their_plan_right_after_a_bulk_add(pg_url: str) -> None:
    migrate.upgrade(pg_url)
    store = Store(pg_url, served_encoding=encode_served)  # as the server writes: rows keep their served bytes
    store.ensure_default_database("/tmp/plans")
    admin = sa.create_engine(pg_url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            # This database's statistics are gathered when the test says so, never by autovacuum meanwhile.
            for table in ("PARTITIONS", "PART_COL_STATS", "PARTITION_KEY_VALS", "PARTITION_PARAMS", "SDS", "TBLS"):
                conn.exec_driver_sql(f'ALTER TABLE "{table}" SET (autovacuum_enabled = false)')
        catalog = CatalogService(store, "/tmp/plans")
        writer = StatisticsService(store)
        catalog.create_database(Database(name="plans", location_uri="/tmp/plans"))
        _fill(catalog, writer, "small", 200)
        with admin.connect() as conn:
            conn.exec_driver_sql("ANALYZE")  # what autovacuum did while the metastore was small
        names = _fill(catalog, writer, "big", BULK)  # then a bulk add, not analysed yet

        seen: list[tuple[str, object]] = []
        sa.event.listen(store.engine, "before_cursor_execute", lambda c, cur, sql, params, *a: seen.append((sql, params)))
        wanted = names[5000:5100]
        reader = StatisticsService(store)
        assert reader.aggregate("plans", "big", wanted, COLUMNS).parts_found == 100
        assert len(reader.partitions_stats_encoded("plans", "big", wanted, COLUMNS) or []) == 100
        assert len(reader.partitions_stats("plans", "big", wanted, COLUMNS)) == 100
        sparse = names[::100]  # 100 names over the whole table: no run
        with store.autocommit() as uow:
            repo = uow.column_stats
            assert repo.count_partitions_with_stats("hive", "plans", "big", wanted, COLUMNS, "hive") == 100
            by_name = repo.partitions_version("hive", "plans", "big", wanted)
            assert by_name[1] == 100
            span = repo.partitions_span("hive", "plans", "big", wanted)
            assert span == (wanted[0], wanted[-1], 100)
            assert repo.partitions_version("hive", "plans", "big", wanted, span=span) == by_name
            assert repo.partitions_span("hive", "plans", "big", sparse) is None
            whole = repo.partitions_span("hive", "plans", "big", names)  # the hash-joined shape: > 1,000 names
            assert whole == (names[0], names[-1], BULK)
            assert repo.partitions_version("hive", "plans", "big", names, span=whole)[1] == BULK
        with store.autocommit() as uow:
            assert uow.column_stats.partitions_version("hive", "plans", "big", wanted, span=span, prepared=True) == by_name
        statements = [
            (sql, params) for sql, params in seen
            if '"PARTITIONS"' in sql and not sql.startswith(("EXECUTE", "PREPARE"))
            and "string_to_array" not in sql  # > 1,000 names: one hash join by design (versions.partitions_version)
        ]
        assert len(statements) >= 8
        # The prepared statement as the server runs it, with the plan PostgreSQL keeps for every call.
        prepares = [sql for sql, _ in seen if sql.startswith("PREPARE metastore_partitions_version_in_range")]
        executes = [(sql, params) for sql, params in seen if sql.startswith("EXECUTE metastore_partitions_version_in_range")]
        assert len(prepares) == 1 and len(executes) == 1
        with admin.connect() as conn:
            conn.exec_driver_sql(prepares[0])
            conn.exec_driver_sql("SET plan_cache_mode = force_generic_plan")
            stale = _scans(conn, [*statements, *executes])
            conn.exec_driver_sql("ANALYZE")
            analysed = _scans(conn, [*statements, *executes])
        statements = [*statements, *executes]
        lookups = {"PARTITIONS": "UNIQUEPARTITION", "PART_COL_STATS": "PART_COL_STATS_UNIQUE"}
        for (sql, _), scans in zip(statements, stale, strict=True):
            looked_up = {(rel, index) for kind, index, rel in scans if rel in lookups and kind.startswith("Index")}
            others = [scan for scan in scans if scan[2] in lookups and (scan[2], scan[1]) not in looked_up]
            assert ("PARTITIONS", "UNIQUEPARTITION") in looked_up, (sql[:80], scans)
            assert not others, (sql[:80], others)  # no sequential or bitmap scan of either table
            assert all(lookups[rel] == index for rel, index in looked_up), (sql[:80], looked_up)
        assert stale == analysed
    finally:
        admin.dispose()
        store.dispose()
