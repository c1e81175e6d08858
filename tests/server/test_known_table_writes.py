"""Table statistics written in one round trip (PostgreSQL): a table this process wrote to before is validated
against what it saw then, and metastore_put_table_stats (migration 0004) writes only if the table is still so.
Whatever changed meanwhile, by another worker or by hand, sends the write down the general path: these tests
change each thing the one-round-trip write depends on and check the outcome is what the general path gives."""

from __future__ import annotations

import threading
import time
from decimal import Decimal

import pytest
import sqlalchemy as sa

from metastore.catalog import Database, FieldSchema, StorageDescriptor, Table
from metastore.config import Settings
from metastore.errors import InvalidInput
from metastore.service import Metastore, StatsWrite
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
from metastore.store.column_stats import writes
from metastore.store.schema import STATS_WRITE_COLUMNS, TAB_COL_STATS
from metastore.wire.stats import encode_served
from server.harness import fresh_pg_database

FUNCTION = "metastore_put_table_stats"


def _long(column: str = "l", high: int = 5, nulls: int = 1) -> ColumnStatsEntry:
    return ColumnStatsEntry(column, "bigint", LongStats(num_nulls=nulls, num_dvs=2, low=1, high=high))


def _table(name: str, cols: list[FieldSchema], parameters: dict[str, str] | None = None) -> Table:
    return Table(
        db_name="s",
        table_name=name,
        sd=StorageDescriptor(cols=cols, location=f"/tmp/wh/s.db/{name}"),
        parameters=parameters or {},
    )


COLUMNS = [FieldSchema("l", "bigint"), FieldSchema("m", "bigint"), FieldSchema("d", "decimal(38,0)")]


@pytest.fixture
def two_workers(pg_server, pg_schema_template):
    """Two metastores on one fresh database, as two server workers: `ours` writes, `other` changes the table."""
    with fresh_pg_database(pg_server, template=pg_schema_template) as url:
        ours = Metastore.open(Settings(db=url, warehouse="/tmp/wh"), served_encoding=encode_served, workers=2)
        other = Metastore.open(Settings(db=url, warehouse="/tmp/wh"), served_encoding=encode_served, workers=2)
        try:
            ours.store.ensure_default_database("/tmp/wh")
            ours.catalog.create_database(Database(name="s", location_uri="/tmp/wh/s.db"))
            ours.catalog.create_table(_table("t", COLUMNS))
            yield ours, other
        finally:
            ours.close()
            other.close()


def _statements(ms: Metastore) -> list[str]:
    seen: list[str] = []
    sa.event.listen(ms.store.engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
    return seen


@pytest.fixture
def calls(two_workers, monkeypatch):
    answers: list[bool] = []
    original = writes.put_table_stats

    def counting(*args, **kwargs):
        answer = original(*args, **kwargs)
        answers.append(answer)
        return answer

    monkeypatch.setattr(writes, "put_table_stats", counting)
    return answers


def _stored_rows(ms: Metastore, table: str = "t") -> dict[str, dict]:
    """The TAB_COL_STATS rows of s.<table> by column, every written column (the stored bytes too)."""
    with ms.store.engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                'SELECT s.* FROM "TAB_COL_STATS" s JOIN "TBLS" t ON t."TBL_ID" = s."TBL_ID" WHERE t."TBL_NAME" = :t'
            ),
            {"t": table},
        ).mappings()
        return {r["COLUMN_NAME"]: {c: r[c] for c in STATS_WRITE_COLUMNS} for r in rows}


def test_a_known_table_is_written_in_one_statement_with_the_same_row_as_the_general_path(two_workers, calls):
    ours, other = two_workers
    entry = _long()
    ours.stats.write([StatsWrite("s", "t", [entry], last_analyzed=1_700_000_000)])  # general path, learns t
    assert calls == []
    general = _stored_rows(ours)
    ours.stats.write([StatsWrite("s", "t", [_long(high=9)], last_analyzed=1_700_000_001)])  # prepares it
    seen = _statements(ours)
    ours.stats.write([StatsWrite("s", "t", [entry], last_analyzed=1_700_000_000)])
    assert calls == [True, True]
    assert len(seen) == 1 and seen[0].startswith(f"EXECUTE {FUNCTION}("), seen
    assert _stored_rows(ours) == general  # every column, the Thrift bytes included
    assert other.stats.table_column_stats("s", "t", "L")[0] == entry


def _sketch(values: list[int]) -> bytes:
    sketch = NdvSketch()
    sketch.add_longs(values)
    return sketch.to_bytes()


EVERY_KIND = [
    ("b", "boolean", BooleanStats(num_nulls=1, num_trues=2, num_falses=3)),
    ("i", "int", LongStats(num_nulls=0, num_dvs=3, low=-(2**31), high=2**31 - 1, bit_vector=_sketch([1, 2, 3]),
                           histogram=histogram_for(StatsKind.LONG, [1, 2, 3]))),
    ("f", "double", DoubleStats(num_nulls=2, num_dvs=2, low=float("-inf"), high=0.1 + 0.2, bit_vector=_sketch([4, 5]))),
    ("g", "float", DoubleStats(num_nulls=0, num_dvs=1, low=5e-324, high=float("inf"))),
    ("s", "varchar(10)", StringStats(num_nulls=0, num_dvs=4, avg_col_len=2.75, max_col_len=10, bit_vector=_sketch([9]))),
    ("x", "binary", BinaryStats(num_nulls=3, avg_col_len=1e-3, max_col_len=1 << 40)),
    ("m", "decimal(38,18)", DecimalStats(num_nulls=0, num_dvs=2, low=Decimal("-12345678901234567890.123456789012345678"),
                                         high=Decimal("0.000000000000000001"))),
    ("dt", "date", DateStats(num_nulls=0, num_dvs=2, low=-719162, high=2932896)),
    ("ts", "timestamp", TimestampStats(num_nulls=1, num_dvs=2, low=-1, high=253402300799)),
    ("e", "string", StringStats(num_nulls=0, num_dvs=1, avg_col_len=0.0, max_col_len=0)),
]


def test_every_kind_is_stored_as_the_general_path_stores_it(two_workers, calls):
    ours, other = two_workers
    other.catalog.create_table(_table("every", [FieldSchema(n, t) for n, t, _ in EVERY_KIND]))
    entries = [ColumnStatsEntry(n, t, st) for n, t, st in EVERY_KIND]
    ours.stats.write([StatsWrite("s", "every", entries, last_analyzed=1_700_000_000)])
    general = _stored_rows(ours, "every")
    with other.store.engine.begin() as conn:
        conn.execute(sa.delete(TAB_COL_STATS))
    ours.stats.write([StatsWrite("s", "every", entries, last_analyzed=1_700_000_000)])
    assert calls == [True]
    assert _stored_rows(ours, "every") == general
    for column in ("BIT_VECTOR", "HISTOGRAM", "DOUBLE_LOW_VALUE", "BIG_DECIMAL_LOW_VALUE", "NUM_TRUES", "AVG_COL_LEN"):
        assert any(row[column] is not None for row in general.values()), column  # every column was exercised
    got = {e.column: e for e in ours.stats.table_stats("s", "every", [n for n, _, _ in EVERY_KIND])}
    assert got["f"].stats.low == float("-inf") and got["g"].stats.high == float("inf")
    assert got["f"].stats.high == 0.1 + 0.2 and got["g"].stats.low == 5e-324


def test_several_columns_in_one_call_and_the_last_entry_of_a_column_wins(two_workers, calls):
    ours, _ = two_workers
    ours.stats.write([StatsWrite("s", "t", [_long("l"), _long("m")])])
    ours.stats.write([StatsWrite("s", "t", [_long("M", high=7), _long("l", high=8), _long("m", high=9)])])
    assert calls == [True]
    got = {e.column: e.stats.high for e in ours.stats.table_stats("s", "t", ["l", "m"])}
    assert got == {"l": 8, "m": 9}


def test_a_dropped_column_is_refused_as_the_general_path_refuses_it(two_workers, calls):
    ours, other = two_workers
    ours.stats.write([StatsWrite("s", "t", [_long("l"), _long("m")])])
    other.catalog.alter_table("s", "t", _table("t", [FieldSchema("m", "bigint"), FieldSchema("d", "decimal(38,0)")]))
    with pytest.raises(InvalidInput, match="column 'l' does not exist in s.t"):
        ours.stats.write([StatsWrite("s", "t", [_long("l", high=99)])])
    assert calls == [False]
    assert set(_stored_rows(ours)) == {"m"}  # the alter removed l's statistics; nothing came back


def test_a_retyped_column_takes_statistics_of_its_new_type_only(two_workers, calls):
    ours, other = two_workers
    ours.stats.write([StatsWrite("s", "t", [_long("l")])])
    other.catalog.alter_table("s", "t", _table("t", [FieldSchema("l", "string"), *COLUMNS[1:]]))
    with pytest.raises(InvalidInput, match="column 'l' of s.t is string, got longStats"):
        ours.stats.write([StatsWrite("s", "t", [_long("l")])])
    text = ColumnStatsEntry("l", "string", StringStats(num_nulls=0, num_dvs=3, avg_col_len=2.5, max_col_len=4))
    ours.stats.write([StatsWrite("s", "t", [text])])
    assert calls == [False]  # the refused write forgot the table: the next one went the general way
    assert _stored_rows(ours)["l"]["COLUMN_TYPE"] == "string"
    ours.stats.write([StatsWrite("s", "t", [text])])
    assert calls == [False, True]


def test_a_table_dropped_and_created_again_gets_the_statistics(two_workers, calls):
    ours, other = two_workers
    ours.stats.write([StatsWrite("s", "t", [_long("l")])])
    other.catalog.drop_table("s", "t", delete_data=False)
    other.catalog.create_table(_table("t", COLUMNS))
    ours.stats.write([StatsWrite("s", "t", [_long("l", high=3)])])
    assert calls == [False]
    assert set(_stored_rows(ours)) == {"l"}
    assert other.stats.table_column_stats("s", "t", "l")[0] == _long("l", high=3)


def test_a_changed_row_count_is_validated_afresh(two_workers, calls):
    ours, other = two_workers
    ours.stats.write([StatsWrite("s", "t", [_long("l", nulls=5)])])
    accurate = '{"BASIC_STATS":"true","COLUMN_STATS":{"l":"true"}}'
    other.catalog.alter_table("s", "t", _table("t", COLUMNS, {"numRows": "2", "COLUMN_STATS_ACCURATE": accurate}))
    with pytest.raises(InvalidInput, match="numNulls"):
        ours.stats.write([StatsWrite("s", "t", [_long("l", nulls=5)])])
    assert calls == [False]
    assert _stored_rows(ours)["l"]["NUM_NULLS"] == 5  # the earlier statistics stand


def test_column_stats_accurate_changed_by_another_writer_is_marked_again(two_workers, calls):
    ours, other = two_workers
    ours.stats.write([StatsWrite("s", "t", [_long("l")])])
    # Someone rewrites the parameters without the column's accuracy (as a data change in Hive does).
    other.catalog.alter_table("s", "t", _table("t", COLUMNS, {"COLUMN_STATS_ACCURATE": '{"BASIC_STATS":"true"}'}))
    ours.stats.write([StatsWrite("s", "t", [_long("l")])])
    assert calls == [False]
    params = other.catalog.get_table("s", "t").parameters
    assert '"l":"true"' in params["COLUMN_STATS_ACCURATE"].replace(" ", "")
    ours.stats.write([StatsWrite("s", "t", [_long("l")])])
    assert calls == [False, True]


def test_a_new_column_of_a_known_table_is_marked_accurate(two_workers, calls):
    ours, other = two_workers
    ours.stats.write([StatsWrite("s", "t", [_long("l")])])
    ours.stats.write([StatsWrite("s", "t", [_long("m")])])  # m is not in COLUMN_STATS_ACCURATE yet
    assert calls == []
    accurate = other.catalog.get_table("s", "t").parameters["COLUMN_STATS_ACCURATE"].replace(" ", "")
    assert '"l":"true"' in accurate and '"m":"true"' in accurate


def test_rejected_statistics_of_a_known_table_write_nothing(two_workers, calls):
    ours, _ = two_workers
    small = ColumnStatsEntry("d", "decimal(38,0)", DecimalStats(num_nulls=0, num_dvs=1, low=Decimal(0), high=Decimal(9)))
    ours.stats.write([StatsWrite("s", "t", [_long("l"), _long("m"), small])])
    before = _stored_rows(ours)
    bad = ColumnStatsEntry("m", "bigint", LongStats(num_nulls=1, num_dvs=2, low=9, high=1))
    seen = _statements(ours)
    with pytest.raises(InvalidInput, match="column 'm'"):
        ours.stats.write([StatsWrite("s", "t", [_long("l", high=50), bad])])
    assert not any(FUNCTION in s for s in seen)  # refused before it reached the database
    # Values the database used to refuse (PostgreSQL's column size, bigint's range) are now refused by
    # validation, against the column's type, before anything reaches the database (issue 16 §6).
    huge = ColumnStatsEntry("d", "decimal(38,0)", DecimalStats(num_nulls=0, num_dvs=1, low=Decimal(0), high=Decimal("9" * 5000)))
    with pytest.raises(InvalidInput, match="5000 digits before the decimal point"):
        ours.stats.write([StatsWrite("s", "t", [_long("l", high=60), huge])])
    beyond_bigint = ColumnStatsEntry("m", "bigint", LongStats(num_nulls=0, num_dvs=1, low=0, high=2**63))
    with pytest.raises(InvalidInput, match="outside the range of a 64-bit integer"):
        ours.stats.write([StatsWrite("s", "t", [_long("l", high=60), beyond_bigint])])
    assert not any(FUNCTION in s for s in seen)
    assert _stored_rows(ours) == before
    ours.stats.write([StatsWrite("s", "t", [_long("l", high=70)])])
    assert calls == [True]  # the table is still known


def test_synchronous_commit_setting_reaches_the_function(pg_server, pg_schema_template):
    with fresh_pg_database(pg_server, template=pg_schema_template) as url:
        ms = Metastore.open(Settings(db=url, warehouse="/tmp/wh", stats_synchronous_commit=False), served_encoding=encode_served, workers=1)
        try:
            ms.store.ensure_default_database("/tmp/wh")
            ms.catalog.create_database(Database(name="s", location_uri="/tmp/wh/s.db"))
            ms.catalog.create_table(_table("t", COLUMNS))
            ms.stats.write([StatsWrite("s", "t", [_long("l")])])
            sent: list[dict] = []
            sa.event.listen(ms.store.engine, "before_cursor_execute", lambda *a: sent.append(a[3]))
            ms.stats.write([StatsWrite("s", "t", [_long("l")])])
            assert [p["synchronous"] for p in sent if p and "synchronous" in p] == [False]
        finally:
            ms.close()


def wait_for_lock_waiter(engine: sa.Engine, function: str = FUNCTION, timeout: float = 20.0) -> None:
    """Until a statement calling `function` waits for a lock in the engine's database."""
    deadline = time.monotonic() + timeout
    with engine.connect() as conn:
        while time.monotonic() < deadline:
            waiting = conn.execute(
                sa.text(
                    "SELECT count(*) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND wait_event_type = 'Lock' AND query LIKE :q"
                ),
                {"q": f"%{function}%"},
            ).scalar()
            if waiting:
                return
            conn.rollback()
            time.sleep(0.02)
    raise AssertionError("the statistics write never waited for the table's lock")


def test_a_write_waiting_for_an_alter_sees_what_the_alter_committed(two_workers, calls):
    """An ALTER TABLE holds the table row (FOR UPDATE) while it retypes a column; a write that arrives
    meanwhile waits for the lock, and its checks must then see the new type, not the one its wait began with."""
    ours, other = two_workers
    ours.stats.write([StatsWrite("s", "t", [_long("l")])])
    outcome: list[object] = []

    def write() -> None:
        try:
            ours.stats.write([StatsWrite("s", "t", [_long("l", high=77)])])
            outcome.append("written")
        except Exception as exc:  # noqa: BLE001 - reported to the test thread
            outcome.append(exc)

    with other.store.engine.connect() as alter:
        with alter.begin():
            tbl_id = alter.execute(
                sa.text('SELECT "TBL_ID" FROM "TBLS" WHERE "TBL_NAME" = \'t\' FOR UPDATE')
            ).scalar_one()
            alter.execute(
                sa.text(
                    'UPDATE "COLUMNS_V2" c SET "TYPE_NAME" = \'string\' FROM "TBLS" t JOIN "SDS" s '
                    'ON s."SD_ID" = t."SD_ID" WHERE t."TBL_ID" = :id AND c."CD_ID" = s."CD_ID" '
                    'AND c."COLUMN_NAME" = \'l\''
                ),
                {"id": tbl_id},
            )
            alter.execute(sa.delete(TAB_COL_STATS).where(TAB_COL_STATS.c.TBL_ID == tbl_id))
            writer = threading.Thread(target=write)
            writer.start()
            wait_for_lock_waiter(other.store.engine)
        writer.join(30)
    assert not writer.is_alive()
    assert calls == [False]
    assert len(outcome) == 1 and isinstance(outcome[0], InvalidInput), outcome
    assert "is string, got longStats" in str(outcome[0])
    assert _stored_rows(ours) == {}


def test_the_function_takes_every_written_column(two_workers):
    """metastore_put_table_stats (a migration) and the server's call of it must agree: a statistics column
    added later needs a migration that replaces the function."""
    assert_function_takes(two_workers[0], FUNCTION, writes.PUT_TABLE_STATS_PARAMS, "TAB_COL_STATS")


def assert_function_takes(ms: Metastore, function: str, sent: tuple[tuple[str, str], ...], table: str) -> None:
    """`function`'s arguments are `sent` (names and types, in order) and its INSERT into `table` lists every
    column the server writes."""
    with ms.store.engine.connect() as conn:
        names, types, source = conn.execute(
            sa.text(
                "SELECT proargnames, ARRAY(SELECT format_type(t, NULL) FROM unnest(proargtypes) t), prosrc "
                "FROM pg_proc WHERE proname = :f"
            ),
            {"f": function},
        ).one()
    assert names == [f"p_{n}" for n, _ in sent]
    assert types == [t for _, t in sent]
    insert = source[source.index(f'INSERT INTO "{table}"') :]
    listed = insert[: insert.index(")")]
    assert [c for c in STATS_WRITE_COLUMNS if f'"{c}"' not in listed] == []
