"""Reads over more partitions than one statement takes (issue 15 §3): get_aggr_stats_for, get_partitions_statistics_req,
get_partition_names and get_partitions_by_filter are read (and sent) in batches and pages, with bounded memory.
Their answers must be exactly those of the one-statement path. 2,500 partitions, on SQLite and on PostgreSQL: the
service with batches of 1,000 and 300 names against the same service reading everything in one statement; and
the server, through the generated client, against answers known from the data written."""

from __future__ import annotations

import random
from decimal import Decimal

import pytest

from metastore.api.hive_metastore import ttypes as tt
from metastore.catalog import Database, FieldSchema, Partition, StorageDescriptor, Table
from metastore.service import CatalogService, StatisticsService, StatsWrite
from metastore.stats.model import (
    BooleanStats,
    ColumnStatsEntry,
    DateStats,
    DecimalStats,
    DoubleStats,
    LongStats,
    StringStats,
)
from metastore.stats.ndv import NdvSketch
from metastore.store import Store, migrate
from metastore.wire.stats import encode_served
from server import thrift_builders as tb

PARTITIONS = 2500
COLUMNS = [("l", "bigint"), ("d", "double"), ("s", "string"), ("b", "boolean"), ("dec", "decimal(12,2)"),
           ("dt", "date")]


def _sketch(rng: random.Random) -> bytes:
    sketch = NdvSketch(p=rng.choice([10, 14]))
    start = rng.randrange(0, 5000)
    sketch.add_longs(list(range(start, start + rng.randrange(1, 200))))
    return sketch.to_bytes()


def _entry(column: str, column_type: str, rng: random.Random, sketches: bool) -> ColumnStatsEntry:
    nulls, ndv = rng.randrange(0, 50), rng.randrange(1, 300)
    low = rng.randrange(-10**6, 10**6)
    high = low + rng.randrange(0, 10**5)
    bv = _sketch(rng) if sketches else None
    stats: object
    if column_type == "bigint":
        stats = LongStats(num_nulls=nulls, num_dvs=ndv, bit_vector=bv, low=low, high=high)
    elif column_type == "double":
        stats = DoubleStats(num_nulls=nulls, num_dvs=ndv, low=low / 8.0, high=high / 8.0)
    elif column_type == "string":
        max_len = rng.randrange(1, 200)
        stats = StringStats(num_nulls=nulls, num_dvs=ndv, bit_vector=bv, max_col_len=max_len, avg_col_len=max_len / 2)
    elif column_type == "boolean":
        stats = BooleanStats(num_nulls=nulls, num_trues=rng.randrange(0, 99), num_falses=rng.randrange(0, 99))
    elif column_type == "date":
        stats = DateStats(num_nulls=nulls, num_dvs=ndv, low=low // 100, high=high // 100)
    else:
        stats = DecimalStats(num_nulls=nulls, num_dvs=ndv, low=Decimal(low).scaleb(-2), high=Decimal(high).scaleb(-2))
    return ColumnStatsEntry(column, column_type, stats)


@pytest.fixture
def store(db_url: str):
    migrate.upgrade(db_url)
    st = Store(db_url, served_encoding=encode_served)  # as the server writes: rows keep their served bytes
    st.ensure_default_database("/tmp/warehouse")
    yield st
    st.dispose()


@pytest.mark.slow
def test_batched_reads_equal_one_statement(store: Store) -> None:
    rng = random.Random(15)
    catalog = CatalogService(store, "/tmp/warehouse")
    catalog.create_database(Database(name="many", location_uri="/tmp/warehouse/many.db"))
    cols = [FieldSchema(n, t) for n, t in COLUMNS]
    catalog.create_table(
        Table(db_name="many", table_name="t", sd=StorageDescriptor(cols=cols, location="/tmp/warehouse/many.db/t"),
              partition_keys=[FieldSchema("ds", "string")])
    )
    names = [f"ds=p{i:05d}" for i in range(PARTITIONS)]
    writer = StatisticsService(store)
    for start in range(0, PARTITIONS, 500):
        batch = names[start : start + 500]
        catalog.add_partitions("many", "t", [Partition(db_name="many", table_name="t", values=[n[3:]]) for n in batch])
        writes = []
        for i, name in enumerate(batch, start):
            # Every partition has l with a sketch (the Python aggregator, sketches merged); s has sketches in
            # most, so it is extrapolated or not merged; a few partitions lack d, and one in ten has nothing.
            if i % 10 == 7:
                continue
            entries = [
                _entry(c, t, rng, sketches=c == "l" or (c == "s" and i % 13 != 0))
                for c, t in COLUMNS if not (c == "d" and i % 17 == 3)
            ]
            writes.append(StatsWrite("many", "t", entries, partition_name=name))
        writer.write(writes)
    asked = [c for c, _ in COLUMNS]
    shuffled = names[:]
    rng.shuffle(shuffled)
    requests = {
        "all, shuffled, and one that does not exist": [*shuffled, "ds=nothere"],
        "1,500 of them": shuffled[:1500],
        "all of those with every column": [n for i, n in enumerate(names) if i % 10 != 7 and i % 17 != 3],
    }
    for aggregate_in_sql in (True, False):
        one = StatisticsService(store, aggregate_in_sql=aggregate_in_sql, fetch_bitvector=True, batch=10**6)
        batched = StatisticsService(store, aggregate_in_sql=aggregate_in_sql, fetch_bitvector=True, batch=300)
        for what, request in requests.items():
            want = one.aggregate("many", "t", request, asked)
            assert want.parts_found > 0
            assert batched.aggregate("many", "t", request, asked) == want, (what, aggregate_in_sql)
    for fetch_bitvector in (False, True):
        one = StatisticsService(store, fetch_bitvector=fetch_bitvector, batch=10**6)
        batched = StatisticsService(store, fetch_bitvector=fetch_bitvector, batch=300)
        for what, request in list(requests.items())[:2]:
            stream = batched.partitions_stats_stream("many", "t", request, asked)
            try:
                pages = list(stream.pages)
            finally:
                stream.close()
            assert len(pages) == (len(set(request)) + 299) // 300
            assert stream.count == sum(len(p) for p in pages), what
            if fetch_bitvector:  # sketches are returned: the stored bytes cannot serve, entries are read
                got_entries = {n: es for p in pages for n, es in p.entries.items()}
                assert not any(p.encoded for p in pages)
                assert got_entries == one.partitions_stats("many", "t", request, asked), what
            else:
                got = sorted(e for p in pages for e in p.encoded)
                assert not any(p.entries for p in pages)
                assert got == sorted(one.partitions_stats_encoded("many", "t", request, asked) or []), what


def test_a_missing_table_is_refused_before_anything_is_streamed(store: Store) -> None:
    from metastore.errors import NoSuchObject

    service = StatisticsService(store, batch=10)
    with pytest.raises(NoSuchObject):
        service.partitions_stats_stream("default", "nothere", [f"ds={i}" for i in range(50)], ["c"])
    catalog = CatalogService(store, "/tmp/warehouse")
    with pytest.raises(NoSuchObject):
        catalog.stream_partition_names("default", "nothere")


# ---------------------------------------------------------------- through the server


def _long(i: int, column: int) -> tt.ColumnStatisticsData:
    return tb.data_long(-i - column, 1000 * (column + 1) + i, i % 7, 100 + column)


@pytest.mark.slow
def test_replies_over_thousands_of_partitions(client, dbname: str) -> None:
    cols = [("c0", "bigint"), ("c1", "bigint"), ("c2", "bigint")]
    client.create_database(tb.database(dbname))
    client.create_table(tb.table(dbname, "t", cols, partition_keys=[("ds", "string")]))
    names = [f"ds=p{i:05d}" for i in range(PARTITIONS)]
    for start in range(0, PARTITIONS, 500):
        client.add_partitions([tb.partition(dbname, "t", [n[3:]], cols) for n in names[start : start + 500]])
        client.set_aggr_stats_for(
            tt.SetPartitionsStatsRequest(
                colStats=[
                    tb.partition_stats(dbname, "t", n, [tb.obj(c, "bigint", _long(i, k)) for k, (c, _) in enumerate(cols)])
                    for i, n in enumerate(names[start : start + 500], start)
                    if i % 10 != 7  # one partition in ten has no statistics
                ],
                needMerge=False,
            )
        )
    # Listings: 2,500 names are two pages of the server's reads.
    assert client.get_partition_names(dbname, "t", -1) == names
    assert client.get_partition_names(dbname, "t", 2100) == names[:2100]
    assert client.get_partition_names(dbname, "t", 3) == names[:3]
    found = client.get_partitions_by_filter(dbname, "t", "ds >= 'p00400'", -1)
    assert [p.values[0] for p in found] == [n[3:] for n in names[400:]]
    assert found[-1] == client.get_partition_by_name(dbname, "t", names[-1])
    assert [p.values for p in client.get_partitions_by_filter(dbname, "t", "ds < 'p00002'", -1)] == [["p00000"], ["p00001"]]
    with pytest.raises(tt.MetaException):
        client.get_partitions_by_filter(dbname, "t", "ds >>> 3", -1)

    # get_partitions_statistics_req over all of them (streamed) is the union of requests of at most 1,000.
    asked = [c for c, _ in cols]
    request = [*reversed(names), "ds=nothere"]
    for _ in range(2):  # the second may come from the reply cache (PostgreSQL)
        whole = client.get_partitions_statistics_req(
            tt.PartitionsStatsRequest(dbName=dbname, tblName="t", colNames=asked, partNames=request)
        ).partStats
        pieces: dict[str, list[tt.ColumnStatisticsObj]] = {}
        for start in range(0, PARTITIONS, 1000):
            pieces.update(
                client.get_partitions_statistics_req(
                    tt.PartitionsStatsRequest(dbName=dbname, tblName="t", colNames=asked, partNames=names[start : start + 1000])
                ).partStats
            )
        assert whole == pieces
        assert len(whole) == PARTITIONS - PARTITIONS // 10
        assert whole["ds=p00003"] == [tb.obj(c, "bigint", _long(3, k)) for k, (c, _) in enumerate(cols)]

    # get_aggr_stats_for over all of them: the sums of what was written (every partition that has statistics
    # has all three columns, and a tenth have none: Hive extrapolates nulls as sum * requested / found).
    with_stats = [i for i in range(PARTITIONS) if i % 10 != 7]
    for _ in range(2):
        aggr = client.get_aggr_stats_for(
            tt.PartitionsStatsRequest(dbName=dbname, tblName="t", colNames=asked, partNames=names)
        )
        assert aggr.partsFound == len(with_stats)
        by_column = {o.colName: o.statsData.longStats for o in aggr.colStats}
        for k, (c, _) in enumerate(cols):
            assert by_column[c].numNulls == sum(i % 7 for i in with_stats) * PARTITIONS // len(with_stats)
            assert by_column[c].numDVs == 100 + k
        only_found = client.get_aggr_stats_for(
            tt.PartitionsStatsRequest(dbName=dbname, tblName="t", colNames=asked, partNames=[names[i] for i in with_stats])
        )
        long0 = {o.colName: o.statsData.longStats for o in only_found.colStats}["c0"]
        assert (long0.lowValue, long0.highValue) == (-max(with_stats), 1000 + max(with_stats))
        assert long0.numNulls == sum(i % 7 for i in with_stats)
