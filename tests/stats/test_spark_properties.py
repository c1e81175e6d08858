"""Spark's statistics properties (format version 2) ↔ our model: exact text, round trips, garbage refused."""

from __future__ import annotations

from decimal import Decimal

import pytest

from metastore.stats import spark_properties as sp
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

P = sp.COL_STATS_PREFIX

ENTRIES = [
    ColumnStatsEntry("b", "bigint", LongStats(num_nulls=1, num_dvs=3, low=-5, high=70, bit_vector=b"hll")),
    ColumnStatsEntry("d", "double", DoubleStats(num_nulls=0, num_dvs=2, low=0.5, high=1e16)),
    ColumnStatsEntry("m", "decimal(10,2)", DecimalStats(num_nulls=2, num_dvs=4, low=Decimal("-1.50"),
                                                         high=Decimal("12345678.99"))),
    ColumnStatsEntry("dt", "date", DateStats(num_nulls=0, num_dvs=5, low=0, high=19723)),
    ColumnStatsEntry("ts", "timestamp", TimestampStats(num_nulls=1, num_dvs=6, low=0, high=1700000001)),
    ColumnStatsEntry("s", "string", StringStats(num_nulls=3, num_dvs=7, max_col_len=11, avg_col_len=4.25)),
    ColumnStatsEntry("x", "binary", BinaryStats(num_nulls=0, max_col_len=9, avg_col_len=3.0)),
    ColumnStatsEntry("t", "boolean", BooleanStats(num_nulls=1, num_trues=4, num_falses=0)),
]


def test_text_formats_are_spark_s() -> None:
    props = sp.with_spark_statistics({"totalSize": "1234", "numRows": "10"}, ENTRIES)
    assert props[sp.TOTAL_SIZE] == "1234"
    assert props[sp.NUM_ROWS] == "10"
    assert props[P + "b.version"] == "2"
    assert (props[P + "b.min"], props[P + "b.max"], props[P + "b.distinctCount"]) == ("-5", "70", "3")
    assert (props[P + "b.avgLen"], props[P + "b.maxLen"], props[P + "b.nullCount"]) == ("8", "8", "1")
    assert (props[P + "d.min"], props[P + "d.max"]) == ("0.5", "1e+16")
    assert (props[P + "m.min"], props[P + "m.max"]) == ("-1.50", "12345678.99")
    assert (props[P + "dt.min"], props[P + "dt.max"]) == ("1970-01-01", "2024-01-01")
    assert (props[P + "ts.min"], props[P + "ts.max"]) == ("1970-01-01 00:00:00.000000", "2023-11-14 22:13:21.000000")
    assert (props[P + "s.avgLen"], props[P + "s.maxLen"], props[P + "s.distinctCount"]) == ("5", "11", "7")
    assert P + "s.min" not in props and P + "x.max" not in props and P + "x.distinctCount" not in props
    assert (props[P + "t.min"], props[P + "t.max"], props[P + "t.distinctCount"]) == ("true", "true", "1")


def test_total_size_falls_back_to_raw_data_size_then_unknown_and_zero_rows_are_left_out() -> None:
    assert sp.with_spark_statistics({"rawDataSize": "77", "numRows": "0"}, ENTRIES[:1])[sp.TOTAL_SIZE] == "77"
    props = sp.with_spark_statistics({"numRows": "0"}, ENTRIES[:1])
    # unknown is Spark's defaultSizeInBytes (Long.MaxValue), never 0 (which Spark would broadcast)
    assert props[sp.TOTAL_SIZE] == "9223372036854775807" and sp.NUM_ROWS not in props
    assert sp.with_spark_statistics({"numRows": "5"}, []) == {"numRows": "5"}


def test_stale_stored_column_keys_are_replaced() -> None:
    props = sp.with_spark_statistics({P + "gone.version": "2", sp.TOTAL_SIZE: "3"}, ENTRIES[:1], ["b"])
    assert not any(k.startswith(P + "gone.") for k in props)
    assert props[P + "b.max"] == "70"


def test_spark_schema_names_the_columns() -> None:
    schema = '{"type":"struct","fields":[{"name":"BigCol","type":"long","nullable":true,"metadata":{}}]}'
    params = {"spark.sql.sources.schema.numParts": "1", "spark.sql.sources.schema.part.0": schema}
    entry = ColumnStatsEntry("bigcol", "bigint", LongStats(num_nulls=0, num_dvs=1, low=1, high=1))
    assert P + "BigCol.version" in sp.with_spark_statistics(params, [entry])


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.column_type)
def test_round_trip(entry: ColumnStatsEntry) -> None:
    props = sp.with_spark_statistics({"numRows": "10"}, [entry])
    parsed = sp.parse_table_stats(props)
    assert parsed.num_rows == 10
    back = sp.entry_from_properties(entry.column, entry.column_type, parsed.columns[entry.column], num_rows=10,
                                    stored=entry)
    expected = entry
    if isinstance(entry.stats, StringStats):  # Spark keeps whole-number average lengths
        expected = ColumnStatsEntry("s", "string", StringStats(num_nulls=3, num_dvs=7, max_col_len=11, avg_col_len=5.0))
    if isinstance(entry.stats, BooleanStats):  # counts come from numRows - nulls when one value occurs
        expected = ColumnStatsEntry("t", "boolean", BooleanStats(num_nulls=1, num_trues=9, num_falses=0))
    assert back == expected


def test_sketches_of_the_stored_entry_are_kept_and_timestamp_fractions_round_outwards() -> None:
    fields = {"version": "2", "distinctCount": "2", "nullCount": "0", "avgLen": "8", "maxLen": "8",
              "min": "2020-01-01 00:00:00.250000", "max": "2020-01-01 00:00:09.500000"}
    stored = ColumnStatsEntry("ts", "timestamp", TimestampStats(num_nulls=0, num_dvs=1, low=1, high=2, bit_vector=b"v"))
    back = sp.entry_from_properties("ts", "timestamp", fields, num_rows=2, stored=stored)
    assert back is not None
    assert back.stats == TimestampStats(num_nulls=0, num_dvs=2, low=1577836800, high=1577836810, bit_vector=b"v")


@pytest.mark.parametrize(
    ("hive_type", "fields", "names"),
    [
        ("bigint", {"version": "1", "distinctCount": "1", "nullCount": "0"}, "version"),
        ("bigint", {"version": "2", "distinctCount": "x", "nullCount": "0"}, "distinctCount"),
        ("bigint", {"version": "2", "distinctCount": "1", "nullCount": "-1"}, "nullCount"),
        ("bigint", {"version": "2", "distinctCount": "1"}, "nullCount"),
        ("bigint", {"version": "2", "distinctCount": "1", "nullCount": "0", "min": "abc"}, "min/max"),
        ("date", {"version": "2", "distinctCount": "1", "nullCount": "0", "min": "2020-13-01"}, "min/max"),
        ("timestamp", {"version": "2", "distinctCount": "1", "nullCount": "0", "max": "yesterday"}, "min/max"),
        ("decimal(5,2)", {"version": "2", "distinctCount": "1", "nullCount": "0", "min": "NaN"}, "min/max"),
        ("string", {"version": "2", "distinctCount": "1", "nullCount": "0", "avgLen": "1.5", "maxLen": "2"}, "avgLen"),
        ("boolean", {"version": "2", "distinctCount": "2", "nullCount": "0", "min": "false", "max": "true"}, "true/false"),
    ],
)
def test_garbage_is_refused_with_the_key_named(hive_type: str, fields: dict[str, str], names: str) -> None:
    with pytest.raises(sp.SparkPropertyError, match=names):
        sp.entry_from_properties("c", hive_type, fields, num_rows=10)


def test_bad_table_numbers_and_complex_types() -> None:
    with pytest.raises(sp.SparkPropertyError, match="numRows"):
        sp.parse_table_stats({sp.NUM_ROWS: "many"})
    assert sp.entry_from_properties("c", "array<int>", {"version": "2"}, num_rows=1) is None
    assert sp.spark_column_names({"spark.sql.sources.schema": "{not json"}) == {}


def test_dates_and_timestamps_beyond_year_9999_have_no_bounds() -> None:
    entries = [
        ColumnStatsEntry("dt", "date", DateStats(num_nulls=0, num_dvs=1, low=-10**9, high=10**9)),
        ColumnStatsEntry("ts", "timestamp", TimestampStats(num_nulls=0, num_dvs=1, low=0, high=10**15)),
    ]
    props = sp.with_spark_statistics({}, entries)
    assert P + "dt.min" not in props and P + "dt.max" not in props and P + "ts.max" not in props
    assert props[P + "ts.min"] == "1970-01-01 00:00:00.000000"


def test_stored_keys_of_columns_without_statistics_stay_only_while_the_column_exists() -> None:
    stored = {P + "b.version": "2", P + "b.min": "false", P + "l.version": "2", P + "l.max": "1"}
    props = sp.with_spark_statistics(stored, ENTRIES[:1], ["b", "l"])  # ENTRIES[0] is column b (bigint)
    assert props[P + "b.min"] == "-5" and props[P + "l.max"] == "1"
    assert P + "l.version" not in sp.with_spark_statistics(stored, ENTRIES[:1], ["b"])


@pytest.mark.parametrize("hive_type, low, high, want", [
    ("decimal(10,2)", "0", "48.75", ("0.00", "48.75")),  # a stored bound that dropped trailing zeros
    ("decimal(10,2)", "-1.505", "2.001", ("-1.51", "2.01")),  # more digits than the type: rounded outwards
    ("decimal", "-3", "7", ("-3", "7")),  # Hive's decimal(10,0)
    ("decimal(38,18)", "1E+3", "1", ("1000.000000000000000000", "1.000000000000000000")),
])
def test_decimal_bounds_in_the_type_s_scale(hive_type: str, low: str, high: str, want: tuple[str, str]) -> None:
    entry = ColumnStatsEntry("m", hive_type, DecimalStats(num_nulls=0, num_dvs=2, low=Decimal(low), high=Decimal(high)))
    props = sp.column_properties("m", entry)
    assert (props[P + "m.min"], props[P + "m.max"]) == want
