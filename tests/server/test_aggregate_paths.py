"""get_aggr_stats_for has two paths: columns the database can sum up (StatisticsService.aggregate with
aggregate_in_sql) and the Python aggregator (metastore.stats.aggregate, the rules). On random partition
statistics, both give exactly the same answer, on SQLite and on PostgreSQL."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest
import sqlalchemy as sa

from metastore.catalog import Database, FieldSchema, Partition, StorageDescriptor, Table
from metastore.service import CatalogService, StatisticsService, StatsWrite
from metastore.stats.kll import histogram_for
from metastore.stats.model import (
    BinaryStats,
    BooleanStats,
    ColumnStatsEntry,
    DateStats,
    DecimalStats,
    DoubleStats,
    LongStats,
    StatsKind,
    StringStats,
    TimestampStats,
)
from metastore.stats.ndv import NdvSketch
from metastore.store import Store, migrate

COLUMNS = [
    ("b", "boolean"), ("l", "bigint"), ("i", "int"), ("d", "double"), ("s", "string"), ("bin", "binary"),
    ("dt", "date"), ("ts", "timestamp"), ("dec", "decimal(12,2)"),
]
CASES = 40


def _sketch(rng: random.Random) -> bytes:
    sketch = NdvSketch(p=10)
    start = rng.randrange(0, 5000)
    sketch.add_longs(list(range(start, start + rng.randrange(1, 400))))
    return sketch.to_bytes()


def _range(rng: random.Random) -> tuple[int | None, int | None]:
    if rng.random() < 0.1:
        return None, None
    a, b = rng.randrange(-10**6, 10**6), rng.randrange(-10**6, 10**6)
    return min(a, b), max(a, b)


def _stats(kind_type: str, rng: random.Random, bit_vectors: bool, histograms: bool):
    nulls, ndv = rng.randrange(0, 50), rng.randrange(0, 300)
    bv = _sketch(rng) if bit_vectors else None
    low, high = _range(rng)
    hist = None
    if histograms and low is not None:
        hist = histogram_for(StatsKind.LONG, [rng.randrange(low, high + 1) for _ in range(20)])
    if kind_type == "boolean":
        return BooleanStats(num_nulls=nulls, num_trues=rng.randrange(0, 99), num_falses=rng.randrange(0, 99))
    if kind_type in ("bigint", "int"):
        return LongStats(num_nulls=nulls, num_dvs=ndv, bit_vector=bv, histogram=hist, low=low, high=high)
    if kind_type == "date":
        return DateStats(num_nulls=nulls, num_dvs=ndv, bit_vector=bv, histogram=hist, low=low, high=high)
    if kind_type == "timestamp":
        return TimestampStats(num_nulls=nulls, num_dvs=ndv, bit_vector=bv, histogram=hist, low=low, high=high)
    if kind_type == "double":
        lo, hi = (None, None) if low is None else (low / 7.0, low / 7.0 + (high - low) / 3.0)
        return DoubleStats(num_nulls=nulls, num_dvs=ndv, bit_vector=bv, histogram=hist, low=lo, high=hi)
    if kind_type.startswith("decimal"):
        lo, hi = (None, None) if low is None else (Decimal(low).scaleb(-2), Decimal(high).scaleb(-2))
        return DecimalStats(num_nulls=nulls, num_dvs=ndv, bit_vector=bv, low=lo, high=hi)
    max_len = rng.randrange(0, 500)
    avg = rng.randrange(0, max_len * 4 + 1) / 4.0
    if kind_type == "string":
        return StringStats(num_nulls=nulls, num_dvs=ndv, bit_vector=bv, max_col_len=max_len, avg_col_len=avg)
    return BinaryStats(num_nulls=nulls, max_col_len=max_len, avg_col_len=avg)


@pytest.fixture
def store(db_url: str):
    migrate.upgrade(db_url)
    st = Store(db_url)
    st.ensure_default_database("/tmp/warehouse")
    yield st
    st.dispose()


def test_sql_sums_and_python_aggregator_agree(store: Store):
    rng = random.Random(4242)
    catalog = CatalogService(store, "/tmp/warehouse")
    catalog.create_database(Database(name="agg", location_uri="/tmp/warehouse/agg.db"))
    sql_statements: list[str] = []
    sa.event.listen(store.engine, "before_cursor_execute", lambda *a: sql_statements.append(a[2]))
    paths = {"sums": 0, "python": 0}
    for case in range(CASES):
        name = f"t{case}"
        cols = [FieldSchema(n, t) for n, t in COLUMNS]
        catalog.create_table(
            Table(
                db_name="agg", table_name=name, sd=StorageDescriptor(cols=cols, location=f"/tmp/warehouse/agg.db/{name}"),
                partition_keys=[FieldSchema("p", "int")],
            )
        )
        n_parts = rng.randrange(1, 9)
        part_names = [f"p={k}" for k in range(n_parts)]
        catalog.add_partitions("agg", name, [Partition(db_name="agg", table_name=name, values=[str(k)]) for k in range(n_parts)])
        presence = rng.choice([1.0, 1.0, 0.7, 0.3])
        writes = []
        for part in part_names:
            entries = []
            for col, col_type in COLUMNS:
                if rng.random() > presence:
                    continue
                mode = rng.random()
                bit_vectors = mode < 0.25 or (mode < 0.5 and rng.random() < 0.5)
                entries.append(ColumnStatsEntry(col, col_type, _stats(col_type, rng, bit_vectors, rng.random() < 0.5)))
            if entries:
                writes.append(StatsWrite("agg", name, entries, partition_name=part))
        fast_service = StatisticsService(store, aggregate_in_sql=True)
        fast_service.write(writes)
        requested = rng.sample(part_names, rng.randrange(1, n_parts + 1))
        if rng.random() < 0.3:
            requested.append("p=999")  # a partition that does not exist
        asked = rng.sample([c for c, _ in COLUMNS], rng.randrange(1, len(COLUMNS) + 1))
        for fetch_bitvector in (False, True):
            for fetch_kll in (False, True):
                fast = StatisticsService(
                    store, fetch_bitvector=fetch_bitvector, fetch_kll=fetch_kll, aggregate_in_sql=True
                )
                slow = StatisticsService(
                    store, fetch_bitvector=fetch_bitvector, fetch_kll=fetch_kll, aggregate_in_sql=False
                )
                sql_statements.clear()
                got = fast.aggregate("agg", name, requested, asked)
                # The Python aggregator needs the per-partition rows: the read of partition statistics.
                used_python = any(s.startswith('SELECT pt."PART_NAME", s."COLUMN_NAME"') for s in sql_statements)
                paths["python" if used_python else "sums"] += 1
                want = slow.aggregate("agg", name, requested, asked)
                assert got == want, (case, requested, asked, fetch_bitvector, fetch_kll)
    # Both paths were exercised.
    assert paths["sums"] > 10 and paths["python"] > 10, paths


def test_missing_table_and_empty_requests(store: Store):
    service = StatisticsService(store)
    from metastore.errors import NoSuchObject

    with pytest.raises(NoSuchObject, match="nope"):
        service.aggregate("default", "nope", ["p=1"], ["x"])
    result = service.aggregate("default", "nope", [], ["x"])
    assert (result.entries, result.parts_found) == ([], 0)
