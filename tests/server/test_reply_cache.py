"""The reply cache of get_partitions_statistics_req and get_aggr_stats_for: a repeated request is answered from
it, and every kind of change to what a reply stands for is seen by the next call (no stale reply), whoever
makes the change — the statistics calls, catalog calls, or SQL run by hand (triggers, migration 0003)."""

from __future__ import annotations

import threading

import pytest
import sqlalchemy as sa

from metastore.api.hive_metastore import ttypes as tt
from metastore.catalog import Database, FieldSchema, Partition, StorageDescriptor, Table
from metastore.config import Settings
from metastore.service import Metastore, StatsWrite
from metastore.service.stats_cache import ReplyCache
from metastore.stats.model import ColumnStatsEntry, LongStats
from metastore.store.column_stats.versions import partitions_version
from metastore.wire.stats import encode_served
from server import thrift_builders as b
from server.harness import fresh_pg_database

COLS = [("a", "bigint"), ("b", "bigint")]
KEYS = [("ds", "string")]
PARTS = ["ds=1", "ds=2", "ds=3"]


# ---------------------------------------------------------------- the cache itself


def test_cache_answers_only_for_the_version_it_was_filled_at():
    cache = ReplyCache(1000)
    cache.put("k", (1, 2, 3), b"reply")
    assert cache.get("k", (1, 2, 3)) == b"reply"
    assert cache.get("k", (1, 2, 4)) is None
    assert cache.get("other", (1, 2, 3)) is None
    assert (cache.hits, cache.misses) == (1, 2)


def test_cache_evicts_least_recently_used_by_bytes_and_skips_huge_replies():
    cache = ReplyCache(1000)
    for i in range(5):
        cache.put(i, (0, 0, 0), bytes(200))
    assert cache.size_bytes == 1000 and len(cache) == 5
    cache.get(0, (0, 0, 0))  # 0 becomes the most recently used
    cache.put(5, (0, 0, 0), bytes(200))
    assert cache.get(1, (0, 0, 0)) is None and cache.get(0, (0, 0, 0)) == bytes(200)
    cache.put(6, (0, 0, 0), bytes(251))  # more than a quarter of the cache
    assert cache.get(6, (0, 0, 0)) is None
    cache.put(0, (0, 0, 1), bytes(10))  # replacing an entry accounts for the old bytes
    assert cache.size_bytes == 4 * 200 + 10
    with pytest.raises(ValueError):
        ReplyCache(-1)


def test_cache_is_consistent_under_threads():
    cache = ReplyCache(10_000)

    def work(t: int) -> None:
        for i in range(2000):
            cache.put((t, i % 37), (i, 0, 0), bytes(i % 300))
            cache.get((t, (i * 7) % 37), (i, 0, 0))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert cache.size_bytes == sum(len(entry[1]) for entry in cache._entries.values()) <= 10_000


# ---------------------------------------------------------------- in process, PostgreSQL: what a hit costs


def _long(col: str, low: int) -> ColumnStatsEntry:
    return ColumnStatsEntry(col, "bigint", LongStats(num_nulls=0, num_dvs=3, low=low, high=low + 10))


@pytest.fixture
def pg_metastore(pg_server, pg_schema_template):
    with fresh_pg_database(pg_server, template=pg_schema_template) as url:
        ms = Metastore.open(Settings(db=url, warehouse="/tmp/wh"), served_encoding=encode_served, workers=2)
        try:
            ms.store.ensure_default_database("/tmp/wh")
            ms.catalog.create_database(Database(name="s", location_uri="/tmp/wh/s.db"))
            ms.catalog.create_table(
                Table(
                    db_name="s", table_name="t",
                    sd=StorageDescriptor(cols=[FieldSchema(n, t) for n, t in COLS], location="/tmp/wh/t"),
                    partition_keys=[FieldSchema("ds", "string")],
                )
            )
            ms.catalog.add_partitions(
                "s", "t", [Partition("s", "t", [p.split("=")[1]], sd=StorageDescriptor(location=f"/tmp/wh/t/{p}")) for p in PARTS]
            )
            ms.stats.write([StatsWrite("s", "t", [_long("a", i), _long("b", -i)], partition_name=p) for i, p in enumerate(PARTS)])
            yield ms
        finally:
            ms.close()


@pytest.mark.pg
def test_version_check_finds_partitions_whatever_their_names_hold(pg_metastore):
    """The names reach PostgreSQL as one JSON array: quotes, backslashes, commas, braces, non-ASCII and
    JSON-looking values must each match their own partition and nothing else."""
    ms = pg_metastore
    values = ['q"uote', "back\\slash", "com,ma", "{br}", "ünï", "[1]", "NULL", " sp "]
    ms.catalog.add_partitions(
        "s", "t", [Partition("s", "t", [v], sd=StorageDescriptor(location=f"/tmp/wh/t/{i}")) for i, v in enumerate(values)]
    )
    names = [n for n in ms.catalog.list_partition_names("s", "t") if n not in PARTS]
    assert len(names) == len(values)
    with ms.store.engine.connect() as conn:
        tbl_id, found, _ = partitions_version(conn, "hive", "s", "t", names)
        assert found == len(values)
        assert partitions_version(conn, "hive", "s", "t", [*names, "ds=absent", names[0]])[1] == len(values)
        assert partitions_version(conn, "hive", "s", "t", ['ds="quote', "ds=com"])[1] == 0
        with pytest.raises(ValueError, match="NUL character"):  # the handler answers InvalidInput
            partitions_version(conn, "hive", "s", "t", ["ds=1", "ds=\x00"])


@pytest.mark.pg
def test_a_repeated_request_costs_one_version_query(pg_metastore):
    ms = pg_metastore
    calls = []

    def compute() -> bytes:
        calls.append(1)
        return repr(ms.stats.partitions_stats("s", "t", PARTS, ["a", "b"])).encode()

    first = ms.stats.cached_partition_reply("test", "s", "t", PARTS, ["a", "b"], compute)
    seen: list[str] = []
    sa.event.listen(ms.store.engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
    assert ms.stats.cached_partition_reply("test", "s", "t", PARTS, ["A", "b"], compute) == first
    assert len(calls) == 1
    executed = [sql for sql in seen if not sql.startswith("PREPARE ")]  # a connection prepares it on first use
    # PARTS are all the table's partitions from ds=1 to ds=3: their version is read as that one index range.
    assert len(executed) == 1 and "EXECUTE metastore_partitions_version_in_range" in executed[0]
    ms.stats.write([StatsWrite("s", "t", [_long("a", 100)], partition_name="ds=2")])
    second = ms.stats.cached_partition_reply("test", "s", "t", PARTS, ["a", "b"], compute)
    assert len(calls) == 2 and second != first and b"low=100" in second


def _add(ms, *values: str) -> None:
    ms.catalog.add_partitions(
        "s", "t", [Partition("s", "t", [v], sd=StorageDescriptor(location=f"/tmp/wh/t/ds={v}")) for v in values]
    )


@pytest.mark.pg
def test_a_span_is_a_run_of_existing_partitions_and_its_version_is_theirs(pg_metastore):
    """partitions_span: the named partitions, all present, are every partition from the smallest name to the
    largest; the version read over that range is then the version read name by name."""
    ms = pg_metastore
    _add(ms, "5", "7")  # the table: ds=1, ds=2, ds=3, ds=5, ds=7
    with ms.store.autocommit() as uow:
        repo = uow.column_stats

        def span(*names: str):
            return repo.partitions_span("hive", "s", "t", list(names))

        assert span("ds=3", "ds=1", "ds=2", "ds=1") == ("ds=1", "ds=3", 3)  # any order, repeats
        assert span("ds=5") == ("ds=5", "ds=5", 1)
        assert span("ds=1", "ds=3") is None  # ds=2 lies between
        assert span("ds=1", "ds=2", "ds=4") is None  # ds=4 is not a partition
        assert span("ds=7", "ds=5", "ds=3", "ds=2", "ds=1") == ("ds=1", "ds=7", 5)
        assert span() is None and span("ds=absent") is None
        assert repo.partitions_span("hive", "s", "missing", ["ds=1"]) is None
        for names in (["ds=1", "ds=2", "ds=3"], ["ds=5"], ["ds=1", "ds=2", "ds=3", "ds=5", "ds=7"]):
            found = span(*names)
            by_name = repo.partitions_version("hive", "s", "t", names)
            assert repo.partitions_version("hive", "s", "t", names, span=found) == by_name
            assert repo.partitions_version("hive", "s", "t", names, span=found, prepared=True) == by_name
        # Another partition in the range: the range's version is no longer the names' (one more found).
        run = span("ds=1", "ds=2", "ds=3")
        _add(ms, "2a")
        assert repo.partitions_version("hive", "s", "t", ["ds=1"], span=run)[1] == 4
        assert span("ds=1", "ds=2", "ds=3") is None


@pytest.mark.pg
def test_a_run_read_as_a_range_is_never_stale(pg_metastore):
    """A reply cached for a run of partitions is checked over their range of names: every change to what the
    reply stands for misses, including partitions coming and going inside the range or at a requested name."""
    ms = pg_metastore
    calls: list[int] = []

    def reply(names: list[str]) -> bytes:
        def compute() -> bytes:
            calls.append(1)
            return repr(sorted(ms.stats.partitions_stats("s", "t", names, ["a"]).items())).encode()

        return ms.stats.cached_partition_reply("test", "s", "t", names, ["a"], compute)

    def fresh(names: list[str]) -> bytes:
        return repr(sorted(ms.stats.partitions_stats("s", "t", names, ["a"]).items())).encode()

    def cached_how(names: list[str]):
        return ms.stats.reply_cache.how(ms.stats._reply_key("test", "hive", "s", "t", "hive", names, ["a"]))

    run = ["ds=1", "ds=2", "ds=3"]
    assert reply(run) == reply(run) == fresh(run) and len(calls) == 1
    assert cached_how(run) == ("ds=1", "ds=3", 3)
    # A partition added inside the range, without statistics: a miss (the range holds 4), then read by name.
    _add(ms, "2a")
    assert reply(run) == fresh(run) and len(calls) == 2
    assert cached_how(run) is None
    ms.stats.write([StatsWrite("s", "t", [_long("a", 50)], partition_name="ds=2a")])  # not requested: a hit
    assert reply(run) == fresh(run) and len(calls) == 2
    # A requested name missing when the reply was cached, then added after the range's last name.
    names = ["ds=1", "ds=2", "ds=9"]
    _add(ms, "0")
    first = reply(names)
    assert cached_how(names) is None  # ds=9 is no partition: not a run
    _add(ms, "9")
    ms.stats.write([StatsWrite("s", "t", [_long("a", 90)], partition_name="ds=9")])
    assert reply(names) == fresh(names) != first
    # A run whose partition is dropped while another takes its place in the range: same count, a miss.
    run = ["ds=3"]
    _add(ms, "4")
    before = reply(run)
    assert cached_how(run) == ("ds=3", "ds=3", 1)
    ms.catalog.drop_partitions("s", "t", names=["ds=3"], delete_data=False)
    _add(ms, "3")
    assert reply(run) == fresh(run) != before
    # Statistics written by hand to a partition of a run.
    run = ["ds=2a", "ds=3", "ds=4"]
    assert reply(run) == fresh(run) and cached_how(run) == ("ds=2a", "ds=4", 3)
    with ms.store.engine.begin() as conn:
        conn.execute(sa.text('UPDATE "PART_COL_STATS" SET "NUM_NULLS" = 77 WHERE "COLUMN_NAME" = \'a\''))
    assert reply(run) == fresh(run) and b"77" in reply(run)


@pytest.mark.pg
def test_a_reply_the_cache_does_not_keep_costs_no_span(pg_metastore):
    ms = pg_metastore
    ms.stats.reply_cache = ReplyCache(40)  # keeps replies of up to 10 bytes
    seen: list[str] = []
    sa.event.listen(ms.store.engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
    for size in (11, 10):
        seen.clear()
        ms.stats.cached_partition_reply("test", "s", "t", PARTS, ["a"], lambda size=size: bytes(size))
        assert sum('min(pt."PART_NAME")' in sql for sql in seen) == (size == 10)
    assert len(ms.stats.reply_cache) == 1


@pytest.mark.pg
def test_versions_are_renewed_by_every_change_to_a_partitions_statistics(pg_metastore):
    ms = pg_metastore

    def versions() -> dict[int, tuple[str, int]]:
        with ms.store.engine.connect() as conn:
            rows = conn.execute(sa.text('SELECT "PART_ID", "PART_NAME", "STATS_VERSION" FROM "PARTITIONS"')).all()
            return {pid: (name, version) for pid, name, version in rows}

    def changed(before: dict[int, tuple[str, int]]) -> set[str]:
        """Names (now) of the partitions whose version changed; versions never go down."""
        now = versions()
        assert now.keys() == before.keys()
        assert all(now[p][1] >= before[p][1] for p in now)
        return {now[p][0] for p in now if now[p][1] != before[p][1]}

    v0 = versions()
    values = [v for _, v in v0.values()]
    assert len(set(values)) == len(values) and min(values) > 0  # every partition its own value
    ms.stats.write([StatsWrite("s", "t", [_long("a", 7)], partition_name="ds=1")])
    assert changed(v0) == {"ds=1"}
    v1 = versions()
    ms.stats.delete_partition_stats("s", "t", ["ds=2"], ["b"])
    assert changed(v1) == {"ds=2"}
    v2 = versions()
    with ms.store.engine.begin() as conn:  # by hand
        conn.execute(sa.text('UPDATE "PART_COL_STATS" SET "NUM_NULLS" = 5 WHERE "COLUMN_NAME" = \'a\''))
    assert changed(v2) == set(PARTS)
    v3 = versions()
    with ms.store.engine.begin() as conn:
        conn.execute(sa.text('UPDATE "PARTITIONS" SET "PART_NAME" = \'ds=9\' WHERE "PART_NAME" = \'ds=3\''))
        conn.execute(sa.text('UPDATE "PARTITIONS" SET "CREATE_TIME" = 5'))  # not a rename: no new version
    assert changed(v3) == {"ds=9"}
    v4 = versions()
    ms.stats.delete_partition_stats("s", "t", None, None)  # every partition of the table
    assert changed(v4) == {"ds=1", "ds=2", "ds=9"}
    v5 = versions()
    ms.stats.delete_partition_stats("s", "t", None, None)  # nothing left to delete: nothing changes
    assert changed(v5) == set()


# ---------------------------------------------------------------- through the server: never stale


def _setup(client, db: str, table: str = "t") -> None:
    client.create_table(b.table(db, table, COLS, KEYS))
    for p in PARTS:
        client.add_partition(tt.Partition(dbName=db, tableName=table, values=[p.split("=")[1]], sd=b.sd(COLS)))
    for i, p in enumerate(PARTS):
        objs = [b.obj("a", "bigint", b.data_long(i, i + 10, 0, 3)), b.obj("b", "bigint", b.data_long(-i, 5, 1, 2))]
        client.update_partition_column_statistics(b.partition_stats(db, table, p, objs))


def _reads(client, db: str, table: str = "t"):
    req = tt.PartitionsStatsRequest(dbName=db, tblName=table, colNames=["a", "b"], partNames=PARTS)
    return client.get_partitions_statistics_req(req).partStats, client.get_aggr_stats_for(req)


def _lows(parts) -> dict[str, list[int]]:
    return {p: [o.statsData.longStats.lowValue for o in objs] for p, objs in sorted(parts.items())}


@pytest.fixture
def db(client, dbname):
    client.create_database(b.database(dbname))
    _setup(client, dbname)
    first = _reads(client, dbname)
    assert _reads(client, dbname) == first  # the second read is a hit (on PostgreSQL)
    return dbname


def test_statistics_writes_are_seen(client, db):
    client.update_partition_column_statistics(b.partition_stats(db, "t", "ds=2", [b.obj("a", "bigint", b.data_long(-50, 0, 0, 1))]))
    parts, aggr = _reads(client, db)
    assert _lows(parts)["ds=2"] == [-50, -1]
    assert aggr.colStats[0].statsData.longStats.lowValue == -50
    merged = b.partition_stats(db, "t", "ds=1", [b.obj("a", "bigint", b.data_long(-70, 0, 0, 1))])
    client.set_aggr_stats_for(tt.SetPartitionsStatsRequest(colStats=[merged], needMerge=True))
    parts, aggr = _reads(client, db)
    assert _lows(parts)["ds=1"] == [-70, 0]
    assert aggr.colStats[0].statsData.longStats.lowValue == -70


def test_deletes_are_seen(client, db):
    client.delete_partition_column_statistics(db, "t", "ds=1", "a", None)
    parts, aggr = _reads(client, db)
    assert [o.colName for o in parts["ds=1"]] == ["b"]
    assert aggr.partsFound == 2
    client.delete_partition_column_statistics(db, "t", "ds=2", None, None)
    parts, aggr = _reads(client, db)
    assert sorted(parts) == ["ds=1", "ds=3"] and aggr.partsFound == 1
    client.delete_column_statistics_req(tt.DeleteColumnStatisticsRequest(db_name=db, tbl_name="t", tableLevel=False))
    parts, aggr = _reads(client, db)
    assert parts == {} and aggr.partsFound == 0 and aggr.colStats == []


def test_partition_drop_recreate_and_rename_are_seen(client, db):
    client.drop_partition(db, "t", ["2"], False)
    parts, aggr = _reads(client, db)
    assert sorted(parts) == ["ds=1", "ds=3"] and aggr.partsFound == 2
    client.add_partition(tt.Partition(dbName=db, tableName="t", values=["2"], sd=b.sd(COLS)))
    client.update_partition_column_statistics(
        b.partition_stats(db, "t", "ds=2", [b.obj(c, "bigint", b.data_long(1, 2, 0, 1)) for c in ("a", "b")])
    )
    parts, _ = _reads(client, db)
    assert _lows(parts)["ds=2"] == [1, 1]
    # Swap the names of ds=1 and ds=3: same partitions found, same versions summed unless renames count.
    for old, new in (("1", "x"), ("3", "1"), ("x", "3")):
        client.rename_partition(db, "t", [old], tt.Partition(dbName=db, tableName="t", values=[new], sd=b.sd(COLS)))
    parts, _ = _reads(client, db)
    assert _lows(parts)["ds=1"] == [2, -2] and _lows(parts)["ds=3"] == [0, 0]


def test_table_changes_are_seen(client, db):
    table = client.get_table(db, "t")
    table.sd.cols = [tt.FieldSchema(name="a", type="bigint"), tt.FieldSchema(name="b", type="string")]
    client.alter_table(db, "t", table)  # b retyped: its statistics go
    parts, aggr = _reads(client, db)
    assert all([o.colName for o in objs] == ["a"] for objs in parts.values())
    assert [c.colName for c in aggr.colStats] == ["a"] and aggr.partsFound == 0
    # Swap two tables' names: the same partition names, other partitions.
    _setup(client, db, "u")
    client.update_partition_column_statistics(b.partition_stats(db, "u", "ds=1", [b.obj("a", "bigint", b.data_long(99, 100, 0, 1))]))
    for old, new in (("t", "x"), ("u", "t"), ("x", "u")):
        renamed = client.get_table(db, old)
        renamed.tableName = new
        client.alter_table(db, old, renamed)
    parts, aggr = _reads(client, db)
    assert _lows(parts)["ds=1"] == [99, 0]
    assert aggr.partsFound == 3
    client.drop_table(db, "t", True)
    with pytest.raises(tt.NoSuchObjectException):
        _reads(client, db)
    _setup(client, db)
    assert _lows(_reads(client, db)[0]) == {"ds=1": [0, 0], "ds=2": [1, -1], "ds=3": [2, -2]}
