"""get_partitions_statistics_req answered from the Thrift bytes stored with each statistics row (STATS_THRIFT).

The batched reply must be exactly what the general path (row → entry → Thrift struct) answers: the same
objects, in the order of the requested columns, for every kind, on SQLite and PostgreSQL; and where the stored
bytes cannot serve (a row without them, timestamps served as Hive 4's timestampStats, sketches returned) the
server must still answer correctly through the general path."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from metastore.api.hive_metastore import ttypes as tt
from metastore.store.column_stats.rows import row_to_entry
from metastore.wire.encoded import partitions_stats_result
from metastore.wire.stats import encode_served
from server import thrift_builders as b

COLS = [n for n, t in b.ALL_KINDS_COLUMNS if t != "array<int>"]
PARTS = ["ds=2024-01-01/hr=1", "ds=2024-01-02/hr=1", "ds=2024-01-03/hr=7"]


def _fill(client, db: str) -> None:
    b.create_db_and_table(client, db, "t", partitioned=True)
    for name in [*PARTS, "ds=2024-01-04/hr=0"]:  # the last one gets no statistics
        ds, hr = (kv.split("=")[1] for kv in name.split("/"))
        client.add_partition(b.partition(db, "t", [ds, hr]))
    for seed, name in enumerate(PARTS):
        objs = b.all_kinds_objs(seed=seed)
        if seed == 1:
            objs = [o for o in objs if o.colName not in ("s", "ts")]  # a partition lacking some columns
        client.update_partition_column_statistics(b.partition_stats(db, "t", name, objs))


def _one_by_one(client, db: str, parts: list[str], cols: list[str]) -> dict[str, list[tt.ColumnStatisticsObj]]:
    """The same statistics read one (partition, column) at a time: the general read path."""
    out: dict[str, list[tt.ColumnStatisticsObj]] = {}
    for part in parts:
        for col in cols:
            try:
                got = client.get_partition_column_statistics(db, "t", part, col)
            except tt.NoSuchObjectException:
                continue
            out.setdefault(part, []).extend(got.statsObj)
    return out


def _batched(client, db: str, parts: list[str], cols: list[str]) -> dict[str, list[tt.ColumnStatisticsObj]]:
    req = tt.PartitionsStatsRequest(dbName=db, tblName="t", colNames=cols, partNames=parts)
    return client.get_partitions_statistics_req(req).partStats


def _stats_rows(db_url: str, db: str) -> list[dict]:
    engine = sa.create_engine(db_url)
    try:
        with engine.connect() as conn:
            return [
                dict(r)
                for r in conn.execute(
                    sa.text(
                        'SELECT s.* FROM "PART_COL_STATS" s JOIN "PARTITIONS" p ON p."PART_ID" = s."PART_ID" '
                        'JOIN "TBLS" t ON t."TBL_ID" = p."TBL_ID" JOIN "DBS" d ON d."DB_ID" = t."DB_ID" '
                        "WHERE d.\"NAME\" = :db"
                    ),
                    {"db": db},
                ).mappings()
            ]
    finally:
        engine.dispose()


def _execute(db_url: str, sql: str, **params: object) -> None:
    engine = sa.create_engine(db_url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text(sql), params)
    finally:
        engine.dispose()


def test_every_stored_row_carries_the_bytes_its_read_would_build(client, server, dbname):
    _fill(client, dbname)
    rows = _stats_rows(server.db_url, dbname)
    assert len(rows) == 3 * len(COLS) - 2
    for row in rows:
        assert bytes(row["STATS_THRIFT"]) == encode_served(row_to_entry(row)), row["COLUMN_NAME"]


@pytest.mark.parametrize(
    "cols",
    [
        COLS,
        list(reversed(COLS)),
        ["ts", "NOPE", "l", "B", "dec"],  # a column without statistics, upper case, an order of its own
        ["s"],
    ],
    ids=["all", "reversed", "mixed", "one"],
)
def test_batched_reply_equals_the_general_path_in_the_requested_order(client, dbname, cols):
    _fill(client, dbname)
    parts = [PARTS[2], "ds=2024-01-04/hr=0", "ds=1999-01-01/hr=0", PARTS[0], PARTS[1]]
    got = _batched(client, dbname, parts, cols)
    expected = _one_by_one(client, dbname, parts, cols)
    assert got == expected
    for part, objs in got.items():
        wanted = [c.lower() for c in cols]
        positions = [wanted.index(o.colName) for o in objs]
        assert positions == sorted(positions), part


def test_rows_without_stored_bytes_are_read_through_the_general_path(client, server, dbname):
    _fill(client, dbname)
    before = _batched(client, dbname, PARTS, COLS)
    _execute(
        server.db_url,
        'UPDATE "PART_COL_STATS" SET "STATS_THRIFT" = NULL WHERE "COLUMN_NAME" = \'dec\' AND "PART_ID" IN '
        '(SELECT p."PART_ID" FROM "PARTITIONS" p JOIN "TBLS" t ON t."TBL_ID" = p."TBL_ID" '
        'JOIN "DBS" d ON d."DB_ID" = t."DB_ID" WHERE d."NAME" = :db)',
        db=dbname,
    )
    assert _batched(client, dbname, PARTS, COLS) == before
    assert before[PARTS[0]] == b.as_served(b.all_kinds_objs(seed=0))


def test_a_hive4_server_serves_timestamp_statistics_in_batches_as_timestamp_stats(client, server_factory, dbname):
    _fill(client, dbname)
    hive4 = server_factory(env={"METASTORE_STATS_TIMESTAMP_AS_LONG": "false"})
    with hive4.client() as c:
        got = _batched(c, dbname, PARTS, COLS)
        assert got[PARTS[0]] == b.all_kinds_objs(seed=0)
        assert got == _one_by_one(c, dbname, PARTS, COLS)
        # Without a timestamp column among those asked, the stored bytes serve a Hive 4 server as well.
        assert _batched(c, dbname, PARTS, ["l", "s"]) == _one_by_one(c, dbname, PARTS, ["l", "s"])


def test_a_server_returning_sketches_reads_them_with_the_statistics(client, server_factory, dbname):
    b.create_db_and_table(client, dbname, "t", partitioned=True)
    client.add_partition(b.partition(dbname, "t", ["2024-01-01", "1"]))
    bv = b.hll_bytes(range(50))
    obj = b.obj("l", "bigint", b.data_long(1, 50, 0, 50, bv=bv))
    client.update_partition_column_statistics(b.partition_stats(dbname, "t", PARTS[0], [obj]))
    assert _batched(client, dbname, [PARTS[0]], ["l"]) == {PARTS[0]: [b.obj("l", "bigint", b.data_long(1, 50, 0, 50))]}
    sketches = server_factory("--fetch-bitvector")
    with sketches.client() as c:
        assert _batched(c, dbname, [PARTS[0]], ["l"]) == {PARTS[0]: [obj]}


def test_missing_table_and_empty_answers(client, dbname):
    _fill(client, dbname)
    assert _batched(client, dbname, ["ds=1999-01-01/hr=0"], COLS) == {}
    assert _batched(client, dbname, PARTS, ["nope"]) == {}
    with pytest.raises(tt.NoSuchObjectException):
        _batched(client, dbname + "_gone", PARTS, COLS)


def test_partitions_stats_result_encoding_decodes_as_thrift():
    from thrift.protocol.TBinaryProtocol import TBinaryProtocol
    from thrift.transport.TTransport import TMemoryBuffer

    from metastore.wire.encoded import encode_obj

    objs = [b.obj("l", "bigint", b.data_long(1, 2, 0, 1)), b.obj("s", "string", b.data_string(3, 1.5, 0, 2))]
    parts = [("ds=ä/hr=1", 2, b"".join(encode_obj(o) for o in objs)), ("empty", 0, b"")]
    decoded = tt.PartitionsStatsResult()
    decoded.read(TBinaryProtocol(TMemoryBuffer(partitions_stats_result(parts))))
    assert decoded.partStats == {"ds=ä/hr=1": objs, "empty": []}


# ---------------------------------------------------------------- get_table_statistics_req


def _fill_table(client, db: str) -> None:
    b.create_db_and_table(client, db, "t")
    client.update_table_column_statistics(b.table_stats(db, "t", b.all_kinds_objs(seed=3)))


def _table_batched(client, db: str, cols: list[str]) -> list[tt.ColumnStatisticsObj]:
    return client.get_table_statistics_req(tt.TableStatsRequest(dbName=db, tblName="t", colNames=cols)).tableStats


def _table_one_by_one(client, db: str, cols: list[str]) -> list[tt.ColumnStatisticsObj]:
    out = []
    for col in cols:
        try:
            out.extend(client.get_table_column_statistics(db, "t", col).statsObj)
        except tt.NoSuchObjectException:
            continue
    return out


@pytest.mark.parametrize(
    "cols",
    [COLS, list(reversed(COLS)), ["ts", "NOPE", "l", "B", "dec", "l"], ["s"], ["nope"]],
    ids=["all", "reversed", "mixed", "one", "none"],
)
def test_table_reply_equals_the_general_path_in_the_requested_order(client, dbname, cols):
    _fill_table(client, dbname)
    got = _table_batched(client, dbname, cols)
    assert got == _table_one_by_one(client, dbname, list(dict.fromkeys(c.lower() for c in cols)))
    wanted = [c.lower() for c in cols]
    positions = [wanted.index(o.colName) for o in got]
    assert positions == sorted(positions) and len(set(positions)) == len(positions)


def test_table_rows_without_stored_bytes_are_read_through_the_general_path(client, server, dbname):
    _fill_table(client, dbname)
    before = _table_batched(client, dbname, COLS)
    assert before == b.as_served(b.all_kinds_objs(seed=3))
    _execute(
        server.db_url,
        'UPDATE "TAB_COL_STATS" SET "STATS_THRIFT" = NULL WHERE "COLUMN_NAME" = \'dec\' AND "TBL_ID" IN '
        '(SELECT t."TBL_ID" FROM "TBLS" t JOIN "DBS" d ON d."DB_ID" = t."DB_ID" WHERE d."NAME" = :db)',
        db=dbname,
    )
    assert _table_batched(client, dbname, COLS) == before


def test_a_hive4_server_serves_table_timestamp_statistics_as_timestamp_stats(client, server_factory, dbname):
    _fill_table(client, dbname)
    hive4 = server_factory(env={"METASTORE_STATS_TIMESTAMP_AS_LONG": "false"})
    with hive4.client() as c:
        assert _table_batched(c, dbname, COLS) == b.all_kinds_objs(seed=3)
        assert _table_batched(c, dbname, ["l", "s"]) == _table_one_by_one(c, dbname, ["l", "s"])


def test_a_server_returning_sketches_reads_table_sketches(client, server_factory, dbname):
    b.create_db_and_table(client, dbname, "t")
    bv = b.hll_bytes(range(50))
    obj = b.obj("l", "bigint", b.data_long(1, 50, 0, 50, bv=bv))
    client.update_table_column_statistics(b.table_stats(dbname, "t", [obj]))
    assert _table_batched(client, dbname, ["l"]) == [b.obj("l", "bigint", b.data_long(1, 50, 0, 50))]
    with server_factory("--fetch-bitvector").client() as c:
        assert _table_batched(c, dbname, ["l"]) == [obj]


def test_table_missing_or_without_statistics(client, dbname):
    b.create_db_and_table(client, dbname, "t")
    assert _table_batched(client, dbname, COLS) == []
    with pytest.raises(tt.NoSuchObjectException):
        client.get_table_statistics_req(tt.TableStatsRequest(dbName=dbname, tblName="gone", colNames=["l"]))


def test_table_stats_result_encoding_decodes_as_thrift():
    from thrift.protocol.TBinaryProtocol import TBinaryProtocol
    from thrift.transport.TTransport import TMemoryBuffer

    from metastore.wire.encoded import encode_obj, table_stats_result

    objs = [b.obj("l", "bigint", b.data_long(1, 2, 0, 1)), b.obj("s", "string", b.data_string(3, 1.5, 0, 2))]
    for chosen in (objs, []):
        decoded = tt.TableStatsResult()
        decoded.read(TBinaryProtocol(TMemoryBuffer(table_stats_result(len(chosen), b"".join(encode_obj(o) for o in chosen)))))
        assert decoded.tableStats == chosen


def test_table_reads_use_the_stored_bytes(client, server, dbname):
    """The fast path really answers (not only the general path after it declined): its bytes are the
    stored ones, in the asked order."""
    from metastore.store.column_stats.encoded import table_stats_encoded

    _fill_table(client, dbname)
    engine = sa.create_engine(server.db_url)
    try:
        with engine.connect() as conn:
            count, data = table_stats_encoded(conn, "hive", dbname, "t", ["s", "l", "nope"], "hive")
            stored = {
                r.COLUMN_NAME: bytes(r.STATS_THRIFT)
                for r in conn.execute(
                    sa.text(
                        'SELECT s."COLUMN_NAME", s."STATS_THRIFT" FROM "TAB_COL_STATS" s '
                        'JOIN "TBLS" t ON t."TBL_ID" = s."TBL_ID" JOIN "DBS" d ON d."DB_ID" = t."DB_ID" '
                        'WHERE d."NAME" = :db'
                    ),
                    {"db": dbname},
                )
            }
    finally:
        engine.dispose()
    assert (count, data) == (2, stored["s"] + stored["l"])
