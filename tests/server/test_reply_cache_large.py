"""Large replies in the reply cache (issue 15 §3): get_partitions_statistics_req over 10,000 partitions × 30
columns is a 23 MB reply, more than a quarter of the default 64 MiB cache. Such replies are kept from the second
time their request is seen, up to half the cache; one large request alone never evicts the others' entries, and a
kept large reply is never stale."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from metastore.api.hive_metastore import ttypes as tt
from metastore.catalog import Database, FieldSchema, Partition, StorageDescriptor, Table
from metastore.config import Settings
from metastore.server.handler import Handler
from metastore.service import Metastore, StatsWrite
from metastore.service.stats_cache import SEEN_KEYS, ReplyCache
from metastore.stats.model import ColumnStatsEntry, LongStats
from metastore.wire.encoded import EncodedResult, StreamedResult
from metastore.wire.stats import encode_served
from server.harness import fresh_pg_database

V = (0, 0, 0)


def test_a_large_reply_is_kept_from_its_second_request():
    cache = ReplyCache(1000)
    assert (cache.small_bytes, cache.large_bytes) == (250, 500)
    for i in range(4):
        cache.put(("small", i), V, bytes(200))
    cache.put("big", V, bytes(400))  # first time: not kept, nothing evicted
    assert cache.get("big", V) is None and len(cache) == 4 and cache.size_bytes == 800
    cache.put("big", V, bytes(400))  # asked again: kept, the least recently used small entry goes
    assert cache.get("big", V) == bytes(400)
    assert cache.size_bytes == 1000 and len(cache) == 4
    assert cache.get(("small", 0), V) is None and cache.get(("small", 1), V) == bytes(200)
    cache.put("huge", V, bytes(501))
    cache.put("huge", V, bytes(501))  # more than half the cache: never kept
    assert cache.get("huge", V) is None and cache.size_bytes <= cache.max_bytes


def test_keep_limit_grows_for_a_request_seen_before():
    cache = ReplyCache(1000)
    assert cache.keep_limit("k") == 250  # first time: only what put keeps at once
    assert cache.keep_limit("k") == 500
    cache.put("k", V, bytes(300))  # seen by keep_limit: kept
    assert cache.get("k", V) == bytes(300)
    assert cache.keep_limit("other") == 250


def test_seen_requests_are_bounded():
    cache = ReplyCache(1000)
    for i in range(SEEN_KEYS + 1):
        cache.keep_limit(i)
    assert len(cache._seen) == SEEN_KEYS
    cache.put(0, V, bytes(300))  # the oldest was forgotten: first time again
    assert cache.get(0, V) is None
    cache.put(SEEN_KEYS, V, bytes(300))
    assert cache.get(SEEN_KEYS, V) == bytes(300)


# ---------------------------------------------------------------- PostgreSQL, the streamed reply


PARTS = [f"ds={i}" for i in range(6)]


def _long(col: str, low: int) -> ColumnStatsEntry:
    return ColumnStatsEntry(col, "bigint", LongStats(num_nulls=0, num_dvs=3, low=low, high=low + 10))


@pytest.fixture
def handler(pg_server, pg_schema_template):
    with fresh_pg_database(pg_server, template=pg_schema_template) as url:
        settings = Settings(db=url, warehouse="/tmp/wh")
        ms = Metastore.open(settings, served_encoding=encode_served, workers=2)
        try:
            ms.store.ensure_default_database("/tmp/wh")
            ms.catalog.create_database(Database(name="s", location_uri="/tmp/wh/s.db"))
            ms.catalog.create_table(
                Table(
                    db_name="s", table_name="t",
                    sd=StorageDescriptor(cols=[FieldSchema("a", "bigint"), FieldSchema("b", "bigint")], location="/tmp/wh/t"),
                    partition_keys=[FieldSchema("ds", "string")],
                )
            )
            ms.catalog.add_partitions(
                "s", "t", [Partition("s", "t", [p.split("=")[1]], sd=StorageDescriptor(location=f"/tmp/wh/t/{p}")) for p in PARTS]
            )
            ms.stats.write([StatsWrite("s", "t", [_long("a", i), _long("b", -i)], partition_name=p) for i, p in enumerate(PARTS)])
            ms.stats.batch = 2  # 6 names: streamed, 2 a page
            yield Handler(ms, settings), ms
        finally:
            ms.close()


def _read(h: Handler) -> tuple[bytes, bool]:
    """(the encoded reply, whether it came whole from the cache)."""
    req = tt.PartitionsStatsRequest(dbName="s", tblName="t", colNames=["a", "b"], partNames=PARTS)
    res = h.get_partitions_statistics_req(req)
    if isinstance(res, EncodedResult):
        return res.struct_bytes, True
    assert isinstance(res, StreamedResult)
    try:
        return b"".join(res.pieces), False
    finally:
        res.close()


@pytest.mark.pg
def test_a_large_streamed_reply_is_kept_from_the_second_request_and_never_stale(handler):
    h, ms = handler
    first, cached = _read(h)
    assert not cached
    size = len(first)
    # A cache in which this reply is "large": more than a quarter, at most half.
    cache = ms.stats.reply_cache = ReplyCache(3 * size)
    assert cache.small_bytes < size <= cache.large_bytes
    assert _read(h) == (first, False)  # first request seen by this cache: streamed, not kept
    assert len(cache) == 0
    assert _read(h) == (first, False)  # seen before: streamed and kept
    assert len(cache) == 1
    seen: list[str] = []
    sa.event.listen(ms.store.engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
    assert _read(h) == (first, True)  # from the cache, after one version query
    executed = [sql for sql in seen if not sql.startswith("PREPARE ")]  # a connection prepares it on first use
    assert len(executed) == 1 and "PART_COL_STATS" not in executed[0]
    ms.stats.write([StatsWrite("s", "t", [_long("a", 100)], partition_name="ds=4")])
    changed, cached = _read(h)
    assert not cached and changed != first and len(changed) == size
