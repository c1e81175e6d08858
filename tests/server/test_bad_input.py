"""Bad input (issue §9): thousands of malformed frames on many connections. The server answers with an error or
closes that connection, keeps serving everyone else, its workers neither die nor grow without bound, and the
database stays consistent. Deterministic: every case comes from a seeded generator."""

from __future__ import annotations

import random
import struct
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from thrift.protocol import TBinaryProtocol
from thrift.Thrift import TApplicationException, TMessageType, TType
from thrift.transport import TTransport

from metastore.api.hive_metastore import ThriftHiveMetastore
from metastore.api.hive_metastore import ttypes as tt
from server import thrift_builders as b
from server.db_inspect import orphan_count, query
from server.harness import connect
from server.wire import (
    ALL_TTYPES,
    call_bytes,
    exchange,
    field,
    flip_bits,
    framed,
    message,
    string,
    value_of_type,
)

SEED = 20240601
CASES = 2500
THREADS = 8
PART = "ds=2024-01-01/hr=1"


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")


def _valid_calls(db: str) -> list[bytes]:
    """Well-formed calls of many methods on the fuzz database (the seeds that mutations start from)."""
    stats = b.all_kinds_objs()
    cols = [o.colName for o in stats]
    preq = tt.PartitionsStatsRequest(dbName=db, tblName="t", colNames=cols, partNames=[PART, "ds=2024-01-02/hr=1"])
    sends = [
        lambda c: c.send_get_all_databases(),
        lambda c: c.send_get_database(db),
        lambda c: c.send_get_table(db, "t"),
        lambda c: c.send_get_table_req(tt.GetTableRequest(dbName=db, tblName="t")),
        lambda c: c.send_get_partitions(db, "t", -1),
        lambda c: c.send_get_partition_names(db, "t", 10),
        lambda c: c.send_get_partitions_by_filter(db, "t", 'ds = "2024-01-01" and hr > 0', -1),
        lambda c: c.send_get_partitions_by_names(db, "t", [PART]),
        lambda c: c.send_get_fields(db, "t"),
        lambda c: c.send_get_table_objects_by_name(db, ["t", "x"]),
        lambda c: c.send_getMetaConf("metastore.stats.fetch.bitvector"),
        lambda c: c.send_set_ugi("fuzzer", ["g"]),
        lambda c: c.send_get_table_statistics_req(tt.TableStatsRequest(dbName=db, tblName="t", colNames=cols)),
        lambda c: c.send_get_partitions_statistics_req(preq),
        lambda c: c.send_get_aggr_stats_for(preq),
        lambda c: c.send_get_table_column_statistics(db, "t", "l"),
        lambda c: c.send_get_partition_column_statistics(db, "t", PART, "s"),
        lambda c: c.send_update_table_column_statistics(b.table_stats(db, "t", stats)),
        lambda c: c.send_update_partition_column_statistics(b.partition_stats(db, "t", PART, stats)),
        lambda c: c.send_set_aggr_stats_for(
            tt.SetPartitionsStatsRequest(colStats=[b.partition_stats(db, "t", PART, stats)], needMerge=True)
        ),
        lambda c: c.send_delete_table_column_statistics(db, "t", "i", None),
        lambda c: c.send_add_partitions([b.partition(db, "t", ["2024-02-01", "3"])]),
        lambda c: c.send_alter_partition(db, "t", b.partition(db, "t", ["2024-01-01", "1"])),
        lambda c: c.send_create_table(b.table(db, "other", [("x", "int")])),
    ]
    return [call_bytes(s) for s in sends]


def _wrong_types(rng: random.Random, name: str) -> bytes:
    """A call of `name` whose first arguments have random (mostly wrong) wire types."""
    body = b"".join(
        field(t, fid, value_of_type(t, rng)) for fid in range(1, rng.randrange(2, 5)) for t in [rng.choice(ALL_TTYPES)]
    )
    return message(name, body + b"\x00")


def _oversized(rng: random.Random, db: str) -> bytes:
    huge = rng.choice([2**31 - 1, 2**30, 10**9, 0x7FFFFFF0, 200_000_000, 70_000_000])
    kind = rng.randrange(6)
    if kind == 0:  # a method name claiming to be huge
        return struct.pack("!ii", -2147418111, huge) + b"get_table"
    if kind == 1:  # old-style header (no version) with a huge name
        return struct.pack("!i", huge) + b"get_all_databases"
    if kind == 2:  # a string argument claiming more bytes than sent
        return message("get_database", field(TType.STRING, 1, string(b"default", huge)) + b"\x00")
    if kind == 3:  # a list claiming billions of elements
        return message(
            "get_table_objects_by_name",
            field(TType.STRING, 1, string(db.encode())) + field(TType.LIST, 2, struct.pack("!bi", TType.STRING, huge)),
        )
    if kind == 4:  # a map claiming many entries inside a struct argument
        return message(
            "create_database",
            field(TType.STRUCT, 1, field(TType.MAP, 4, struct.pack("!bbi", TType.STRING, TType.STRING, huge))),
        )
    return message(  # a negative length
        "get_database", field(TType.STRING, 1, string(b"", -rng.randrange(1, 2**31)))
    )


def _case(rng: random.Random, seeds: list[bytes], db: str) -> bytes:
    kind = rng.randrange(10)
    seed = rng.choice(seeds)
    if kind == 0:
        return bytes(rng.randrange(256) for _ in range(rng.randrange(1, 300)))
    if kind == 1:
        return seed[: rng.randrange(1, len(seed))]
    if kind in (2, 3):
        return flip_bits(seed, rng, rng.randrange(1, 6))
    if kind == 4:  # a run of 0xff or 0x7f bytes somewhere (huge lengths, bad types)
        i = rng.randrange(len(seed))
        return seed[:i] + bytes([rng.choice([0xFF, 0x7F, 0x00])]) * rng.randrange(1, 6) + seed[i + 5:]
    if kind == 5:
        return _oversized(rng, db)
    if kind == 6:
        name = rng.choice(["", "x" * rng.randrange(1, 2000), "get_table ", "GET_TABLE", "\u00e9t\u00e9", "shutdown_now"])
        return message(name, b"\x00")
    if kind == 7:
        name = rng.choice(
            ["get_table", "get_database", "get_partitions", "get_table_statistics_req", "set_aggr_stats_for",
             "update_table_column_statistics", "get_aggr_stats_for", "drop_partition_by_name", "add_partitions",
             "get_partitions_by_filter", "delete_column_statistics_req", "getMetaConf", "set_ugi"]
        )
        return _wrong_types(rng, name)
    if kind == 8:  # pipelined: valid, then garbage, then valid again
        junk = flip_bits(rng.choice(seeds), rng, 3)
        return seed + junk + rng.choice(seeds)
    # Wrong message types and an old-style header around a valid body.
    mtype = rng.choice([TMessageType.REPLY, TMessageType.EXCEPTION, TMessageType.ONEWAY, 7])
    body = seed[seed.index(b"\x00\x00\x00\x01", 8) + 4:] if b"\x00\x00\x00\x01" in seed[8:] else seed
    return message("get_all_databases", body, mtype=mtype)


class GoodClient(threading.Thread):
    """Keeps making real calls while the fuzzing goes on; every call must succeed."""

    def __init__(self, port: int, db: str) -> None:
        super().__init__(daemon=True)
        self.port, self.db = port, db
        self.stop = threading.Event()
        self.calls = 0
        self.errors: list[str] = []

    def run(self) -> None:
        client = connect(self.port)
        objs = [b.obj("l", "bigint", b.data_long(0, 10, 0, 5))]
        try:
            while not self.stop.is_set():
                try:
                    assert client.get_table(self.db, "t").tableName == "t"
                    client.update_table_column_statistics(b.table_stats(self.db, "good", objs))
                    got = client.get_table_column_statistics(self.db, "good", "l").statsObj
                    assert got == objs
                    self.calls += 1
                except Exception as exc:  # noqa: BLE001 - every failure is reported by the test
                    self.errors.append(repr(exc))
                    client._iprot.trans.close()
                    client = connect(self.port)
        finally:
            client._iprot.trans.close()


def _assert_consistent(server, db: str) -> None:
    assert orphan_count(server.db_url) == 0
    dupes = query(
        server.db_url,
        'SELECT "PART_ID", "COLUMN_NAME", "ENGINE", count(*) FROM "PART_COL_STATS" '
        'GROUP BY "PART_ID", "COLUMN_NAME", "ENGINE" HAVING count(*) > 1',
    )
    assert dupes == []


def test_fuzzed_frames_leave_the_server_serving(server, client, dbname):
    b.create_db_and_table(client, dbname, "t", partitioned=True)
    client.create_table(b.table(dbname, "good", [("l", "bigint")]))
    client.add_partitions([b.partition(dbname, "t", ["2024-01-01", "1"]), b.partition(dbname, "t", ["2024-01-02", "1"])])
    seeds = _valid_calls(dbname)
    workers = server.worker_pids()
    assert len(workers) == 2

    # Warm both workers up with the valid calls, then take the memory baseline.
    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(lambda data: exchange(server.port, data), seeds * 4))
    rss_before = {pid: _rss_kb(pid) for pid in workers}

    good = GoodClient(server.port, dbname)
    good.start()
    rng = random.Random(SEED)
    cases = [_case(rng, seeds, dbname) for _ in range(CASES)]
    hung: list[bytes] = []

    def run(data: bytes) -> None:
        _, closed = exchange(server.port, data)
        if not closed:
            hung.append(data)

    with ThreadPoolExecutor(THREADS) as pool:
        list(pool.map(run, cases))
    time.sleep(0.5)
    good.stop.set()
    good.join(timeout=30)

    assert hung == [], f"{len(hung)} connections were left open, first: {hung[0][:120]!r}"
    assert good.errors == [], good.errors[:5]
    assert good.calls > 0
    assert server.worker_pids() == workers, "a worker died while fuzzed"
    growth = {pid: _rss_kb(pid) - rss_before[pid] for pid in workers}
    assert all(g < 64 * 1024 for g in growth.values()), f"worker RSS grew (KiB): {growth}"
    # The database is consistent, and the fuzz table's statistics are readable.
    _assert_consistent(server, dbname)
    client.get_table_statistics_req(tt.TableStatsRequest(dbName=dbname, tblName="t", colNames=["l", "s", "b"]))
    problems = [line for line in server.output.splitlines() if "Traceback" in line or "unexpected error" in line]
    assert problems == [], "\n".join(problems[:10])


def _reply_or_close(port: int, data: bytes) -> tuple[bytes, bool]:
    reply, closed = exchange(port, data, timeout=60)
    assert closed
    return reply, closed


def _decode_exception(reply: bytes) -> TApplicationException | object:
    """The result (or TApplicationException) of a reply message."""
    trans = TTransport.TMemoryBuffer(reply)
    proto = TBinaryProtocol.TBinaryProtocol(trans)
    name, mtype, _ = proto.readMessageBegin()
    if mtype == TMessageType.EXCEPTION:
        exc = TApplicationException()
        exc.read(proto)
        return exc
    result = getattr(ThriftHiveMetastore, f"{name}_result")()
    result.read(proto)
    return result


def test_unknown_method_is_answered_and_the_connection_goes_on(server):
    data = message("no_such_method", field(TType.STRING, 1, string(b"x")) + b"\x00") + call_bytes(
        lambda c: c.send_get_all_databases()
    )
    reply, _ = _reply_or_close(server.port, data)
    first = _decode_exception(reply)
    assert isinstance(first, TApplicationException)
    assert first.type == TApplicationException.UNKNOWN_METHOD and "no_such_method" in first.message
    assert reply.count(b"get_all_databases") == 1  # the second call was answered on the same connection


@pytest.mark.parametrize(
    "args, words",
    [
        (field(TType.I32, 1, struct.pack("!i", 5)) + field(TType.I32, 2, struct.pack("!i", 6)), ["dbname", "tbl_name"]),
        (field(TType.STRING, 1, string(b"default")), ["tbl_name"]),
        (b"", ["dbname"]),
    ],
)
def test_missing_or_mistyped_arguments_get_a_clear_error(server, args, words):
    reply, _ = _reply_or_close(server.port, message("get_table", args + b"\x00"))
    result = _decode_exception(reply)
    exc = result if isinstance(result, TApplicationException) else (result.o1 or result.o2)
    assert exc is not None, result
    assert all(w in exc.message for w in words), exc.message


def test_huge_batches_are_answered(server, client, dbname):
    b.create_db_and_table(client, dbname, "t", partitioned=True)
    client.add_partition(b.partition(dbname, "t", ["2024-01-01", "1"]))
    names = [f"ds=2024-01-01/hr={i}" for i in range(100_000)]
    res = client.get_partitions_statistics_req(
        tt.PartitionsStatsRequest(dbName=dbname, tblName="t", colNames=["l", "s"], partNames=names)
    )
    assert res.partStats == {}
    assert client.get_aggr_stats_for(
        tt.PartitionsStatsRequest(dbName=dbname, tblName="t", colNames=["l"], partNames=names)
    ).partsFound == 0
    assert len(client.get_partitions_by_names(dbname, "t", names)) == 1
    assert client.get_table_objects_by_name(dbname, [f"t{i}" for i in range(100_000)]) == []
    # 10,000 statistics for partitions that do not exist: refused, nothing written.
    many = [b.partition_stats(dbname, "t", f"ds=2024-01-01/hr={i}", [b.obj("l", "bigint", b.data_long(1, 2, 0, 2))])
            for i in range(2, 10_002)]
    with pytest.raises(tt.NoSuchObjectException, match="do not exist"):
        client.set_aggr_stats_for(tt.SetPartitionsStatsRequest(colStats=many))
    assert client.get_partition_names(dbname, "t", -1) == ["ds=2024-01-01/hr=1"]
    _assert_consistent(server, dbname)


def test_nul_characters_in_names_are_refused_as_input(server, client, dbname):
    """PostgreSQL text cannot hold NUL: every statistics read that takes partition names says so as invalid
    input (the fuzzer found the reply cache's version check answering with an internal error)."""
    b.create_db_and_table(client, dbname, "t", partitioned=True)
    client.add_partition(b.partition(dbname, "t", ["2024-01-01", "1"]))
    names = ["ds=2024-01-01/hr=1", "ds=2024-01-01/hr=\x00"]
    for call in (client.get_partitions_statistics_req, client.get_aggr_stats_for):
        with pytest.raises(tt.MetaException, match="NUL"):
            call(tt.PartitionsStatsRequest(dbName=dbname, tblName="t", colNames=["l"], partNames=names))
    assert client.get_partition_names(dbname, "t", -1) == ["ds=2024-01-01/hr=1"]


def test_nul_in_any_statistics_name_is_the_same_invalid_input_on_every_database(client, dbname):
    """One validation for the names of every statistics call (database, table, partition, column): a NUL
    anywhere is refused as invalid input, before any SQL (SQLite used to answer an internal KeyError for a
    column name, PostgreSQL a driver error). Calls declaring InvalidInputException answer it; the others
    MetaException, with the same message."""
    b.create_db_and_table(client, dbname, "t", partitioned=True)
    client.add_partition(b.partition(dbname, "t", ["2024-01-01", "1"]))
    part, bad = "ds=2024-01-01/hr=1", "a\x00b"

    def reads(db: str, table: str, parts: list[str], cols: list[str]) -> list:
        request = tt.PartitionsStatsRequest(dbName=db, tblName=table, colNames=cols, partNames=parts)
        partition_calls = [
            (tt.MetaException, lambda: client.get_partitions_statistics_req(request)),
            (tt.MetaException, lambda: client.get_aggr_stats_for(request)),
            (tt.InvalidInputException, lambda: client.get_partition_column_statistics(db, table, parts[0], cols[0])),
            (tt.InvalidInputException, lambda: client.delete_partition_column_statistics(db, table, parts[0], cols[0], "hive")),
        ]
        if parts != [part]:
            return partition_calls
        return [
            *partition_calls,
            (tt.MetaException, lambda: client.get_table_statistics_req(
                tt.TableStatsRequest(dbName=db, tblName=table, colNames=cols))),
            (tt.InvalidInputException, lambda: client.get_table_column_statistics(db, table, cols[0])),
            (tt.InvalidInputException, lambda: client.delete_table_column_statistics(db, table, cols[0], "hive")),
        ]

    cases = {
        "database": reads(bad, "t", [part], ["l"]),
        "table": reads(dbname, bad, [part], ["l"]),
        "partition": reads(dbname, "t", [bad], ["l"]),
        "column": reads(dbname, "t", [part], [bad]),
    }
    for what, calls in cases.items():
        for i, (expected, call) in enumerate(calls):
            try:
                call()
            except tt.TException as exc:
                assert type(exc) is expected, (what, i, exc)
                assert f"{what} name 'a\\x00b' contains a NUL character" in exc.message, (what, i, exc)
            else:
                pytest.fail(f"call {i} with a NUL in the {what} name answered")
    writes = tt.ColumnStatistics(
        statsDesc=tt.ColumnStatisticsDesc(isTblLevel=True, dbName=dbname, tableName="t"),
        statsObj=[b.obj(bad, "bigint", b.data_long(1, 2, 0, 1))],
    )
    with pytest.raises(tt.InvalidInputException) as caught:
        client.update_table_column_statistics(writes)
    assert "column name 'a\\x00b' contains a NUL character" in caught.value.message
    assert client.get_partition_names(dbname, "t", -1) == [part]


def test_one_very_long_string_is_read_and_refused_with_a_short_error(server):
    # A 60 MB database name (under the 64 MB string limit): read once, answered with a bounded message.
    name = b"d" * 60_000_000
    reply, _ = _reply_or_close(server.port, message("get_database", field(TType.STRING, 1, string(name)) + b"\x00"))
    assert len(reply) < 10_000
    result = _decode_exception(reply)
    assert isinstance(result.o1, tt.NoSuchObjectException)
    assert "more characters" in result.o1.message


def test_oversized_frame_closes_the_framed_connection(server_factory):
    framed_server = server_factory("--framed", "--max-frame-size", "1048576")
    valid = call_bytes(lambda c: c.send_get_all_databases())
    reply, closed = exchange(framed_server.port, struct.pack("!i", 2**31 - 1) + b"\x80\x01")
    assert closed and reply == b""
    reply, closed = exchange(framed_server.port, struct.pack("!i", 2_000_000) + b"x" * 1000)
    assert closed and reply == b""
    reply, closed = exchange(framed_server.port, struct.pack("!i", -5) + valid)
    assert closed and reply == b""
    # A good framed client is served before, after and alongside.
    reply, closed = exchange(framed_server.port, framed(valid) + framed(valid))
    assert closed and reply.count(b"get_all_databases") == 2
    with framed_server.client() as c:
        assert "default" in c.get_all_databases()
    problems = [line for line in framed_server.output.splitlines() if "Traceback" in line]
    assert problems == []
