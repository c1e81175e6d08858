"""Column statistics ↔ statistics-table rows (metastore.store.column_stats.rows), in memory and through both databases."""

from __future__ import annotations

from decimal import Decimal

import pytest

from metastore.catalog import Database, FieldSchema, StorageDescriptor, Table
from metastore.errors import InvalidInput
from metastore.stats.model import (
    BinaryStats,
    BooleanStats,
    ColumnStatsEntry,
    DateStats,
    DecimalStats,
    DoubleStats,
    LongStats,
    StringStats,
    TimestampStats,
)
from metastore.store import Store
from metastore.store.column_stats.rows import decimal_to_text, entry_to_row, row_to_entry
from store.stats_steps import put_table, table_stats

ALL_KINDS = [
    ColumnStatsEntry("b", "boolean", BooleanStats(num_nulls=1, num_trues=5, num_falses=7)),
    ColumnStatsEntry(
        "l",
        "bigint",
        LongStats(
            num_nulls=0, num_dvs=3, low=-(2**63), high=2**63 - 1, bit_vector=b"HLL\xa0", histogram=b"\x05"
        ),
    ),
    ColumnStatsEntry("i", "int", LongStats(num_nulls=2, num_dvs=0)),
    ColumnStatsEntry("d", "double", DoubleStats(num_nulls=0, num_dvs=9, low=-1.5, high=float("inf"))),
    ColumnStatsEntry(
        "m",
        "decimal(38,18)",
        DecimalStats(
            num_nulls=4,
            num_dvs=2,
            low=Decimal("-12345678901234567890.123456789012345678"),
            high=Decimal("1.50"),
        ),
    ),
    ColumnStatsEntry("dt", "date", DateStats(num_nulls=0, num_dvs=1, low=-719162, high=2932896)),
    ColumnStatsEntry(
        "ts", "timestamp", TimestampStats(num_nulls=0, num_dvs=1, low=-62135596800, high=253402300799)
    ),
    ColumnStatsEntry(
        "s",
        "varchar(20)",
        StringStats(num_nulls=3, max_col_len=20, avg_col_len=7.25, num_dvs=11, bit_vector=b"FM\x01\x00"),
    ),
    ColumnStatsEntry("bin", "binary", BinaryStats(num_nulls=0, max_col_len=100, avg_col_len=50.5)),
]


@pytest.mark.parametrize("entry", ALL_KINDS, ids=lambda e: e.column_type)
def test_round_trip_in_memory(entry: ColumnStatsEntry) -> None:
    row = entry_to_row(entry, engine="hive", last_analyzed=1700000000)
    assert row["ENGINE"] == "hive" and row["LAST_ANALYZED"] == 1700000000
    assert row_to_entry(row) == entry


def test_typed_columns_follow_hive() -> None:
    rows = {e.column: entry_to_row(e, engine="hive", last_analyzed=0) for e in ALL_KINDS}
    assert (rows["b"]["NUM_TRUES"], rows["b"]["NUM_FALSES"], rows["b"]["NUM_DISTINCTS"]) == (5, 7, None)
    assert rows["dt"]["LONG_LOW_VALUE"] == -719162  # days
    assert rows["ts"]["LONG_HIGH_VALUE"] == 253402300799  # seconds
    assert rows["m"]["BIG_DECIMAL_LOW_VALUE"] == "-12345678901234567890.123456789012345678"
    assert rows["m"]["BIG_DECIMAL_HIGH_VALUE"] == "1.50"
    assert (rows["s"]["AVG_COL_LEN"], rows["s"]["MAX_COL_LEN"]) == (7.25, 20)
    assert rows["l"]["HISTOGRAM"] == b"\x05" and rows["s"]["HISTOGRAM"] is None


@pytest.mark.parametrize(
    ("value", "text"),
    [
        # Java: new BigDecimal(unscaled, scale).toString()
        (Decimal("0"), "0"),
        (Decimal("1.50"), "1.50"),
        (Decimal("-0.000001"), "-0.000001"),
        (Decimal("1E-7"), "1E-7"),
        (Decimal("1.23E+5"), "1.23E+5"),  # negative scale
        (Decimal("123456789012345678901234567890"), "123456789012345678901234567890"),
    ],
)
def test_decimal_text_is_bigdecimal_tostring(value: Decimal, text: str) -> None:
    assert decimal_to_text(value) == text


def test_column_name_is_lower_cased() -> None:
    row = entry_to_row(
        ColumnStatsEntry("Price", "double", DoubleStats(num_nulls=0, num_dvs=0)),
        engine="hive",
        last_analyzed=0,
    )
    assert row["COLUMN_NAME"] == "price"


@pytest.mark.parametrize(
    "entry",
    [
        ColumnStatsEntry("x", "string", LongStats(num_nulls=0, num_dvs=0)),
        ColumnStatsEntry("x", "array<int>", LongStats(num_nulls=0, num_dvs=0)),
        ColumnStatsEntry("x", "double", DoubleStats(num_nulls=0, num_dvs=0, low=float("nan"))),
        ColumnStatsEntry("x", "decimal(5,2)", DecimalStats(num_nulls=0, num_dvs=0, high=Decimal("NaN"))),
    ],
)
def test_bad_entries_are_invalid_input(entry: ColumnStatsEntry) -> None:
    with pytest.raises(InvalidInput, match="'x'|NaN|finite"):
        entry_to_row(entry, engine="hive", last_analyzed=0)


def test_round_trip_through_the_database(store: Store) -> None:
    cols = [FieldSchema(e.column, e.column_type) for e in ALL_KINDS]
    with store.transaction() as uow:
        uow.databases.create(Database(name="db"))
        uow.tables.create(Table(db_name="db", table_name="t", sd=StorageDescriptor(cols=cols)))
        put_table(uow, "db", "t", ALL_KINDS)
    with store.read() as uow:
        got = table_stats(uow, "db", "t", [e.column for e in ALL_KINDS], bit_vectors=True, histograms=True)
        plain = table_stats(uow, "db", "t", ["l", "s"])
    assert got == ALL_KINDS
    # Without asking, sketches and histograms stay in the database.
    assert [e.stats.bit_vector for e in plain] == [None, None]
    assert plain[0].stats.histogram is None
