"""Concurrent writers to the same column (no lost update with needMerge, no duplicate row), from threads and
from processes, and every worker process serving calls (the GIL does not cap the server at one core)."""

from __future__ import annotations

import multiprocessing
import re
import threading
import time
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from pathlib import Path

from metastore.api.hive_metastore import ttypes as tt
from metastore.stats.ndv import NdvSketch
from server import thrift_builders as b
from server.db_inspect import query
from server.harness import connect

PART = "ds=2024-01-01/hr=1"
WRITERS = 6
WRITES = 12


def _merge_writes(port: int, db: str, writer: int, writes: int) -> None:
    """`writes` needMerge writes of one partition's and the table's column `l`, each with numNulls 1."""
    client = connect(port)
    try:
        for k in range(writes):
            start = (writer * writes + k) * 100
            objs = [b.obj("l", "bigint", b.data_long(start, start + 99, 1, 100, bv=b.hll_bytes(range(start, start + 100))))]
            client.set_aggr_stats_for(
                tt.SetPartitionsStatsRequest(
                    colStats=[b.partition_stats(db, "t", PART, objs), b.table_stats(db, "t", objs)], needMerge=True
                )
            )
    finally:
        client._iprot.trans.close()


def _plain_writes(port: int, db: str, writer: int, writes: int) -> None:
    client = connect(port)
    try:
        for k in range(writes):
            objs = [b.obj(f"c{k % 3}", "int", b.data_long(writer, writer + k, 0, 1))]
            client.update_partition_column_statistics(b.partition_stats(db, "t", PART, objs))
            client.update_table_column_statistics(b.table_stats(db, "t", objs))
    finally:
        client._iprot.trans.close()


def _setup(client, db: str) -> None:
    cols = [("l", "bigint"), ("c0", "int"), ("c1", "int"), ("c2", "int")]
    client.create_database(b.database(db))
    client.create_table(b.table(db, "t", cols, b.PARTITION_KEYS))
    client.add_partition(b.partition(db, "t", ["2024-01-01", "1"], cols))


def _check_merged(server, client, db: str, writers: int, writes: int) -> None:
    total = writers * writes
    union = NdvSketch.from_bytes(b.hll_bytes(range(0, total * 100)))
    for got in (
        client.get_table_column_statistics(db, "t", "l").statsObj[0],
        client.get_partition_column_statistics(db, "t", PART, "l").statsObj[0],
    ):
        lg = got.statsData.longStats
        assert lg.numNulls == total  # every merge counted: no lost update
        assert (lg.lowValue, lg.highValue) == (0, total * 100 - 1)
        assert lg.numDVs == union.estimate()
    _check_no_duplicates(server)


def _check_no_duplicates(server) -> None:
    for sql in (
        'SELECT "TBL_ID", "COLUMN_NAME", "ENGINE", count(*) FROM "TAB_COL_STATS" GROUP BY 1, 2, 3 HAVING count(*) > 1',
        'SELECT "PART_ID", "COLUMN_NAME", "ENGINE", count(*) FROM "PART_COL_STATS" GROUP BY 1, 2, 3 HAVING count(*) > 1',
    ):
        assert query(server.db_url, sql) == []


def test_concurrent_merges_from_threads(server, client, dbname):
    _setup(client, dbname)
    with ThreadPoolExecutor(WRITERS) as pool:
        list(pool.map(lambda w: _merge_writes(server.port, dbname, w, WRITES), range(WRITERS)))
    _check_merged(server, client, dbname, WRITERS, WRITES)


def test_concurrent_merges_from_processes(server, client, dbname):
    _setup(client, dbname)
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(4, mp_context=ctx) as pool:
        futures = [pool.submit(_merge_writes, server.port, dbname, w, WRITES) for w in range(4)]
        for f in futures:
            f.result()
    _check_merged(server, client, dbname, 4, WRITES)


def test_concurrent_replacing_writes_create_one_row_per_column(server, client, dbname):
    _setup(client, dbname)
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(3, mp_context=ctx) as pool, ThreadPoolExecutor(3) as threads:
        futures = [pool.submit(_plain_writes, server.port, dbname, w, 9) for w in range(3)]
        futures += [threads.submit(_plain_writes, server.port, dbname, w, 9) for w in range(3, 6)]
        for f in futures:
            f.result()
    rows = query(
        server.db_url,
        'SELECT s."COLUMN_NAME", count(*) FROM "PART_COL_STATS" s JOIN "PARTITIONS" p ON p."PART_ID" = s."PART_ID" '
        'JOIN "TBLS" t ON t."TBL_ID" = p."TBL_ID" JOIN "DBS" d ON d."DB_ID" = t."DB_ID" '
        'WHERE d."NAME" = :db GROUP BY s."COLUMN_NAME" ORDER BY 1',
        db=dbname,
    )
    assert rows == [("c0", 1), ("c1", 1), ("c2", 1)]
    _check_no_duplicates(server)
    res = client.get_table_statistics_req(tt.TableStatsRequest(dbName=dbname, tblName="t", colNames=["c0", "c1", "c2"]))
    assert [o.colName for o in res.tableStats] == ["c0", "c1", "c2"]


# ---------------------------------------------------------------- both cores


def _cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / 100.0  # utime + stime in clock ticks (USER_HZ = 100)


def _hammer(port: int, db: str, want_pid: int, calls: int) -> int:
    """Connect until served by worker `want_pid`, then make `calls` statistics reads; returns the pid.

    Workers keep their shares of connections even, so while the wanted worker holds more connections than the
    other, new ones go to the other: keep trying (for up to 60 s) until the others' connections let it in."""
    deadline = time.monotonic() + 60
    while True:
        client = connect(port)
        pid = int(re.search(r"pid (\d+)", client.getStatusDetails()).group(1))
        if pid == want_pid:
            break
        client._iprot.trans.close()
        if time.monotonic() > deadline:
            return -1
        time.sleep(0.005)
    req = tt.TableStatsRequest(dbName=db, tblName="t", colNames=["l"])
    try:
        for _ in range(calls):
            client.get_table_statistics_req(req)
    finally:
        client._iprot.trans.close()
    return pid


def test_every_worker_process_serves_calls(server, client, dbname):
    _setup(client, dbname)
    client.update_table_column_statistics(b.table_stats(dbname, "t", [b.obj("l", "bigint", b.data_long(1, 2, 0, 2))]))
    workers = server.worker_pids()
    assert len(workers) == 2
    before = {pid: _cpu_seconds(pid) for pid in workers}
    ctx = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(4, mp_context=ctx) as pool:
        served = list(pool.map(_hammer, [server.port] * 4, [dbname] * 4, [workers[i % 2] for i in range(4)], [300] * 4))
    assert sorted(set(served)) == sorted(workers)
    used = {pid: _cpu_seconds(pid) - before[pid] for pid in workers}
    # Each worker did real work (hundreds of calls), so each burnt CPU time of its own.
    assert all(t > 0.05 for t in used.values()), used


def test_connections_on_many_threads_share_a_worker(server, new_client, dbname):
    clients = [new_client() for _ in range(24)]
    client = clients[0]
    _setup(client, dbname)
    errors: list[BaseException] = []

    def use(c) -> None:
        try:
            for _ in range(10):
                assert c.get_table(dbname, "t").tableName == "t"
        except BaseException as exc:  # noqa: BLE001
            errors.append(exc)

    threads = [threading.Thread(target=use, args=(c,)) for c in clients]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == []


def _new_columns(port: int, db: str, columns: list[str]) -> None:
    client = connect(port)
    try:
        for col in columns:
            objs = [b.obj(col, "int", b.data_long(1, 2, 0, 2))]
            client.update_table_column_statistics(b.table_stats(db, "wide", objs))
            client.update_partition_column_statistics(b.partition_stats(db, "wide", PART, objs))
    finally:
        client._iprot.trans.close()


def test_concurrent_writers_of_new_columns_all_marked_accurate(server, client, dbname):
    import json

    cols = [(f"k{i}", "int") for i in range(24)]
    client.create_database(b.database(dbname))
    client.create_table(b.table(dbname, "wide", cols, b.PARTITION_KEYS))
    client.add_partition(b.partition(dbname, "wide", ["2024-01-01", "1"], cols))
    names = [c for c, _ in cols]
    with ThreadPoolExecutor(6) as pool:
        list(pool.map(lambda i: _new_columns(server.port, dbname, names[i::6]), range(6)))
    table = client.get_table(dbname, "wide")
    part = client.get_partition(dbname, "wide", ["2024-01-01", "1"])
    for params in (table.parameters, part.parameters):
        marked = json.loads(params["COLUMN_STATS_ACCURATE"])["COLUMN_STATS"]
        assert sorted(marked) == sorted(names)


def test_a_worker_serves_more_than_a_thousand_connections(server_factory):
    # Descriptors above 1023 are out of select()'s reach: every connection must still be served.
    single = server_factory(workers=1)
    clients = []
    try:
        for _ in range(1100):
            c = connect(single.port)
            clients.append(c)
        answers = {c.getStatusDetails() for c in clients[-60:]}
        assert len(answers) == 1 and "alive" in answers.pop()
        assert all("default" in c.get_all_databases() for c in clients[::50])
    finally:
        for c in clients:
            c._iprot.trans.close()
