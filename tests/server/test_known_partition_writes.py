"""One partition's statistics written in one round trip (PostgreSQL): a partition this process wrote to before is
validated against what it saw then (the table's columns, the partition's id and COLUMN_STATS_ACCURATE), and
metastore_put_partition_stats (migration 0010) writes only if both are still so. Whatever changed meanwhile, by
another worker or by hand, sends the write down the general path: these tests change each thing the
one-round-trip write depends on and check the outcome is what the general path gives."""

from __future__ import annotations

import sys
import threading

import pytest
import sqlalchemy as sa

from metastore.catalog import Database, FieldSchema, Partition, StorageDescriptor, Table
from metastore.config import Settings
from metastore.errors import InvalidInput, NoSuchObject
from metastore.service import Metastore, StatsWrite
from metastore.stats.model import ColumnStatsEntry, LongStats, StringStats
from metastore.store.column_stats import writes
from metastore.store.schema import PART_COL_STATS, STATS_WRITE_COLUMNS
from metastore.wire.stats import encode_served
from server.harness import fresh_pg_database
from server.test_known_table_writes import EVERY_KIND, assert_function_takes, wait_for_lock_waiter

FUNCTION = "metastore_put_partition_stats"
COLUMNS = [FieldSchema("l", "bigint"), FieldSchema("m", "bigint")]
P1 = "ds=1"
ROOT = "/tmp/wh"  # each test's own directory (the autouse fixture below): renames move partition directories


@pytest.fixture(autouse=True)
def _own_root(tmp_path, monkeypatch):
    monkeypatch.setattr(sys.modules[__name__], "ROOT", str(tmp_path / "wh"))


def _long(column: str = "l", high: int = 5, nulls: int = 1) -> ColumnStatsEntry:
    return ColumnStatsEntry(column, "bigint", LongStats(num_nulls=nulls, num_dvs=2, low=1, high=high))


def _table(name: str, cols: list[FieldSchema]) -> Table:
    return Table(
        db_name="s", table_name=name, sd=StorageDescriptor(cols=cols, location=f"{ROOT}/s.db/{name}"),
        partition_keys=[FieldSchema("ds", "string")],
    )


def _partition(value: str, table: str = "t", parameters: dict[str, str] | None = None) -> Partition:
    return Partition(
        db_name="s", table_name=table, values=[value], parameters=parameters or {},
        sd=StorageDescriptor(cols=COLUMNS, location=f"{ROOT}/s.db/{table}/ds={value}"),
    )


def _write(ms: Metastore, *entries: ColumnStatsEntry, part: str = P1, table: str = "t", at: int | None = None) -> None:
    ms.stats.write([StatsWrite("s", table, list(entries), partition_name=part, last_analyzed=at)])


@pytest.fixture
def two_workers(pg_server, pg_schema_template):
    """Two metastores on one fresh database, as two server workers: `ours` writes, `other` changes things."""
    with fresh_pg_database(pg_server, template=pg_schema_template) as url:
        ours = Metastore.open(Settings(db=url, warehouse="/tmp/wh"), served_encoding=encode_served, workers=2)
        other = Metastore.open(Settings(db=url, warehouse="/tmp/wh"), served_encoding=encode_served, workers=2)
        try:
            ours.store.ensure_default_database("/tmp/wh")
            ours.catalog.create_database(Database(name="s", location_uri="/tmp/wh/s.db"))
            ours.catalog.create_table(_table("t", COLUMNS))
            ours.catalog.add_partitions("s", "t", [_partition("1"), _partition("2")])
            yield ours, other
        finally:
            ours.close()
            other.close()


@pytest.fixture
def calls(two_workers, monkeypatch):
    """The answers of every call of the one-round-trip partition write, in order."""
    answers: list[bool] = []
    original = writes.put_partition_stats

    def counting(*args, **kwargs):
        answer = original(*args, **kwargs)
        answers.append(answer)
        return answer

    monkeypatch.setattr(writes, "put_partition_stats", counting)
    return answers


def _statements(ms: Metastore) -> list[str]:
    seen: list[str] = []
    sa.event.listen(ms.store.engine, "before_cursor_execute", lambda *a: seen.append(a[2]))
    return seen


def _stored_rows(ms: Metastore, part: str = P1, table: str = "t") -> dict[str, dict]:
    """The PART_COL_STATS rows of one partition by column, every written column (the stored bytes too)."""
    with ms.store.engine.connect() as conn:
        rows = conn.execute(
            sa.text(
                'SELECT s.* FROM "PART_COL_STATS" s JOIN "PARTITIONS" p ON p."PART_ID" = s."PART_ID" '
                'JOIN "TBLS" t ON t."TBL_ID" = p."TBL_ID" WHERE t."TBL_NAME" = :t AND p."PART_NAME" = :p'
            ),
            {"t": table, "p": part},
        ).mappings()
        return {r["COLUMN_NAME"]: {c: r[c] for c in STATS_WRITE_COLUMNS} for r in rows}


def _accurate(ms: Metastore, value: str = "1") -> str:
    return ms.catalog.get_partition("s", "t", [value]).parameters["COLUMN_STATS_ACCURATE"].replace(" ", "")


def _stats_version(ms: Metastore, part: str = P1) -> int:
    with ms.store.engine.connect() as conn:
        return conn.execute(
            sa.text('SELECT "STATS_VERSION" FROM "PARTITIONS" WHERE "PART_NAME" = :p'), {"p": part}
        ).scalar_one()


def test_a_known_partition_is_written_in_one_statement_with_the_same_rows_as_the_general_path(two_workers, calls):
    ours, other = two_workers
    entry = _long()
    _write(ours, entry, at=1_700_000_000)  # general path: learns the table and the partition
    assert calls == []
    general = _stored_rows(ours)
    _write(ours, _long(high=9), at=1_700_000_001)  # prepares the function's statement
    version = _stats_version(ours)
    seen = _statements(ours)
    _write(ours, entry, at=1_700_000_000)
    assert calls == [True, True]
    assert len(seen) == 1 and seen[0].startswith(f"EXECUTE {FUNCTION}("), seen
    assert _stored_rows(ours) == general  # every column, the Thrift bytes included
    assert other.stats.partitions_stats("s", "t", [P1], ["l"])[P1] == [entry]
    assert _stats_version(ours) > version  # readers' caches see the change (migration 0003's triggers)
    assert _stored_rows(ours, "ds=2") == {}


def test_every_kind_is_stored_as_the_general_path_stores_it(two_workers, calls):
    ours, other = two_workers
    other.catalog.create_table(_table("every", [FieldSchema(n, t) for n, t, _ in EVERY_KIND]))
    other.catalog.add_partitions("s", "every", [_partition("1", "every")])
    entries = [ColumnStatsEntry(n, t, st) for n, t, st in EVERY_KIND]
    _write(ours, *entries, table="every", at=1_700_000_000)
    general = _stored_rows(ours, table="every")
    with other.store.engine.begin() as conn:
        conn.execute(sa.delete(PART_COL_STATS))
    _write(ours, *entries, table="every", at=1_700_000_000)
    assert calls == [True]
    assert _stored_rows(ours, table="every") == general
    for column in ("BIT_VECTOR", "HISTOGRAM", "DOUBLE_LOW_VALUE", "BIG_DECIMAL_LOW_VALUE", "NUM_TRUES", "AVG_COL_LEN"):
        assert any(row[column] is not None for row in general.values()), column  # every column was exercised


def test_several_columns_the_last_entry_of_a_column_wins_and_a_client_spelling_of_the_name(two_workers, calls):
    ours, _ = two_workers
    _write(ours, _long("l"), _long("m"))
    _write(ours, _long("M", high=7), _long("l", high=8), _long("m", high=9), part="DS=1")
    assert calls == [True]
    got = {e.column: e.stats.high for e in ours.stats.partitions_stats("s", "t", [P1], ["l", "m"])[P1]}
    assert got == {"l": 8, "m": 9}


def test_a_column_new_to_the_partition_is_marked_accurate_by_the_general_path(two_workers, calls):
    ours, _ = two_workers
    _write(ours, _long("l"))
    _write(ours, _long("m"))  # m is not in the partition's COLUMN_STATS_ACCURATE yet
    assert calls == []
    assert '"l":"true"' in _accurate(ours) and '"m":"true"' in _accurate(ours)
    _write(ours, _long("m", high=3), _long("l", high=4))
    assert calls == [True]


def test_column_stats_accurate_changed_by_another_writer_is_marked_again(two_workers, calls):
    ours, other = two_workers
    _write(ours, _long("l"))
    # Someone rewrites the partition's parameters without the column's accuracy (as a data change in Hive does).
    other.catalog.alter_partitions("s", "t", [_partition("1", parameters={"COLUMN_STATS_ACCURATE": '{"BASIC_STATS":"true"}'})])
    _write(ours, _long("l"))
    assert calls == [False]
    assert '"l":"true"' in _accurate(ours)
    _write(ours, _long("l"))
    assert calls == [False, True]


def test_a_partition_dropped_and_added_again_gets_the_statistics(two_workers, calls):
    ours, other = two_workers
    _write(ours, _long("l"))
    other.catalog.drop_partitions("s", "t", names=[P1], delete_data=False)
    other.catalog.add_partitions("s", "t", [_partition("1")])
    _write(ours, _long("l", high=3))
    assert calls == [False]
    assert other.stats.partitions_stats("s", "t", [P1], ["l"])[P1] == [_long("l", high=3)]
    _write(ours, _long("l", high=4))
    assert calls == [False, True]


def test_a_dropped_partition_is_reported_as_the_general_path_reports_it(two_workers, calls):
    ours, other = two_workers
    _write(ours, _long("l"))
    other.catalog.drop_partitions("s", "t", names=[P1], delete_data=False)
    with pytest.raises(NoSuchObject, match="ds=1"):
        _write(ours, _long("l", high=3))
    assert calls == [False]
    assert _stored_rows(ours) == {}


def test_a_renamed_partition_keeps_its_statistics_and_the_old_name_is_gone(two_workers, calls):
    ours, other = two_workers
    _write(ours, _long("l"))
    other.catalog.rename_partition("s", "t", ["1"], _partition("3"))
    with pytest.raises(NoSuchObject, match="ds=1"):
        _write(ours, _long("l", high=3))
    assert calls == [False]
    assert other.stats.partitions_stats("s", "t", ["ds=3"], ["l"])["ds=3"] == [_long("l")]


def test_a_retyped_column_takes_statistics_of_its_new_type_only(two_workers, calls):
    ours, other = two_workers
    _write(ours, _long("l"))
    other.catalog.alter_table("s", "t", _table("t", [FieldSchema("l", "string"), COLUMNS[1]]))
    with pytest.raises(InvalidInput, match="column 'l' of s.t partition ds=1 is string, got longStats"):
        _write(ours, _long("l"))
    assert calls == [False]
    text = ColumnStatsEntry("l", "string", StringStats(num_nulls=0, num_dvs=3, avg_col_len=2.5, max_col_len=4))
    _write(ours, text)
    _write(ours, text)
    assert calls == [False, True]
    assert _stored_rows(ours)["l"]["COLUMN_TYPE"] == "string"


def test_rejected_statistics_of_a_known_partition_write_nothing(two_workers, calls):
    ours, _ = two_workers
    _write(ours, _long("l"), _long("m"))
    before = _stored_rows(ours)
    bad = ColumnStatsEntry("m", "bigint", LongStats(num_nulls=1, num_dvs=2, low=9, high=1))
    seen = _statements(ours)
    with pytest.raises(InvalidInput, match="column 'm'"):
        _write(ours, _long("l", high=50), bad)
    beyond_bigint = ColumnStatsEntry("m", "bigint", LongStats(num_nulls=0, num_dvs=1, low=0, high=2**63))
    with pytest.raises(InvalidInput, match="outside the range of a 64-bit integer"):
        _write(ours, _long("l", high=60), beyond_bigint)
    with pytest.raises(InvalidInput, match="column 'x' does not exist"):
        _write(ours, _long("l", high=60), _long("x"))
    assert not any(FUNCTION in s for s in seen)  # refused before it reached the database
    assert _stored_rows(ours) == before
    _write(ours, _long("l", high=70))
    assert calls == [True]  # the partition is still known


def test_a_merge_and_a_batch_take_the_general_path(two_workers, calls):
    ours, _ = two_workers
    _write(ours, _long("l"))
    _write(ours, _long("l"), part="ds=2")
    ours.stats.write([StatsWrite("s", "t", [_long("l", high=9)], partition_name=P1)], merge=True)
    ours.stats.write([
        StatsWrite("s", "t", [_long("l", high=10)], partition_name=P1),
        StatsWrite("s", "t", [_long("l", high=11)], partition_name="ds=2"),
    ])
    assert calls == []
    got = ours.stats.partitions_stats("s", "t", [P1, "ds=2"], ["l"])
    assert got[P1][0].stats.high == 10 and got["ds=2"][0].stats.high == 11


def test_synchronous_commit_setting_reaches_the_function(pg_server, pg_schema_template):
    with fresh_pg_database(pg_server, template=pg_schema_template) as url:
        settings = Settings(db=url, warehouse="/tmp/wh", stats_synchronous_commit=False)
        ms = Metastore.open(settings, served_encoding=encode_served, workers=1)
        try:
            ms.store.ensure_default_database("/tmp/wh")
            ms.catalog.create_database(Database(name="s", location_uri="/tmp/wh/s.db"))
            ms.catalog.create_table(_table("t", COLUMNS))
            ms.catalog.add_partitions("s", "t", [_partition("1")])
            _write(ms, _long("l"))
            sent: list[dict] = []
            sa.event.listen(ms.store.engine, "before_cursor_execute", lambda *a: sent.append(a[3]))
            _write(ms, _long("l"))
            assert [p["synchronous"] for p in sent if p and "part_name" in p] == [False]
        finally:
            ms.close()


def test_a_write_waiting_for_the_partition_sees_what_its_holder_committed(two_workers, calls):
    """A transaction holds the partition row (FOR UPDATE) while it rewrites COLUMN_STATS_ACCURATE without the
    column; a write that arrives meanwhile waits for the lock, and its check must then see the new value (and go
    the general way, which marks the column again), not the one its wait began with."""
    ours, other = two_workers
    _write(ours, _long("l"))
    outcome: list[object] = []

    def write() -> None:
        try:
            _write(ours, _long("l", high=77))
            outcome.append("written")
        except Exception as exc:  # noqa: BLE001 - reported to the test thread
            outcome.append(exc)

    with other.store.engine.connect() as holder:
        with holder.begin():
            part_id = holder.execute(
                sa.text('SELECT "PART_ID" FROM "PARTITIONS" WHERE "PART_NAME" = :p FOR UPDATE'), {"p": P1}
            ).scalar_one()
            holder.execute(
                sa.text(
                    'UPDATE "PARTITION_PARAMS" SET "PARAM_VALUE" = \'{"BASIC_STATS":"true"}\' '
                    'WHERE "PART_ID" = :id AND "PARAM_KEY" = \'COLUMN_STATS_ACCURATE\''
                ),
                {"id": part_id},
            )
            writer = threading.Thread(target=write)
            writer.start()
            wait_for_lock_waiter(other.store.engine, FUNCTION)
        writer.join(30)
    assert not writer.is_alive()
    assert outcome == ["written"]
    assert calls == [False]
    assert '"l":"true"' in _accurate(ours)
    assert _stored_rows(ours)["l"]["LONG_HIGH_VALUE"] == 77


def test_the_function_takes_every_written_column(two_workers):
    """metastore_put_partition_stats (a migration) and the server's call of it must agree: a statistics column
    added later needs a migration that replaces the function."""
    assert_function_takes(two_workers[0], FUNCTION, writes.PUT_PARTITION_STATS_PARAMS, "PART_COL_STATS")
