"""COLUMN_STATS_ACCURATE has one reader and writer (metastore.stats.accurate) for the store, the service and the
shell; Java's arithmetic has one home (metastore.stats.java_math) for the HyperLogLog estimates and the
aggregation."""

from __future__ import annotations

import math

import pytest

from metastore.sql import basic_stats
from metastore.stats import accurate
from metastore.stats.java_math import java_div, java_fdiv, java_long, java_round

FULL = '{"BASIC_STATS":"true","COLUMN_STATS":{"a":"true","b":"false"}}'


@pytest.mark.parametrize(
    ("raw", "basic", "marked"),
    [
        (None, False, []),
        ("", False, []),
        ("true", True, []),  # Hive's legacy bare value: basic statistics only
        (" TRUE ", True, []),
        ("not json", False, []),
        ("[1, 2]", False, []),
        ('"true"', False, []),
        ('{"BASIC_STATS":"TRUE"}', True, []),
        ('{"COLUMN_STATS":["a"]}', False, []),
        (FULL, True, ["a"]),
    ],
)
def test_one_reading_of_the_value(raw: str | None, basic: bool, marked: list[str]) -> None:
    assert accurate.basic_accurate(raw) is basic
    assert accurate.columns_marked_accurate(raw) == marked
    params = {} if raw is None else {accurate.COLUMN_STATS_ACCURATE: raw}
    # the shell reads it through the same function
    assert basic_stats.basic_stats_accurate(params) is basic


def test_all_accurate_needs_basic_and_every_column() -> None:
    assert accurate.all_accurate(FULL, ["a"])
    assert not accurate.all_accurate(FULL, ["a", "b"])
    assert not accurate.all_accurate(FULL, ["c"])
    assert not accurate.all_accurate('{"COLUMN_STATS":{"a":"true"}}', ["a"])
    assert accurate.all_accurate(FULL, [])
    assert basic_stats.stats_accurate({accurate.COLUMN_STATS_ACCURATE: FULL}, ["a"])
    assert not basic_stats.stats_accurate({accurate.COLUMN_STATS_ACCURATE: FULL}, ["b"])


def test_writes_are_hives_compact_sorted_json() -> None:
    assert accurate.with_basic(FULL, False) == '{"COLUMN_STATS":{"a":"true","b":"false"}}'
    assert accurate.with_basic(None, True) == '{"BASIC_STATS":"true"}'
    assert accurate.with_basic(None, False) == "{}"
    assert accurate.with_columns_accurate('{"BASIC_STATS":"true"}', ["z", "b"]) == (
        '{"BASIC_STATS":"true","COLUMN_STATS":{"b":"true","z":"true"}}'
    )
    # a column already listed keeps its flag, as Hive's setColumnStatsState does
    assert accurate.with_columns_accurate(FULL, ["b"]) == FULL
    assert accurate.without_columns(FULL, ["a"]) == '{"BASIC_STATS":"true","COLUMN_STATS":{"b":"false"}}'


def test_the_shell_keeps_column_flags_on_analyze_and_drops_them_on_new_data() -> None:
    params = {accurate.COLUMN_STATS_ACCURATE: FULL, "numRows": "10"}
    analyzed = basic_stats.with_basic_stats(params, num_files=2, total_size=100, num_rows=12, raw_data_size=50)
    assert analyzed[accurate.COLUMN_STATS_ACCURATE] == FULL
    unknown = basic_stats.with_basic_stats(params, num_files=2, total_size=100)
    assert unknown[accurate.COLUMN_STATS_ACCURATE] == '{"COLUMN_STATS":{"a":"true","b":"false"}}'
    assert "numRows" not in unknown
    inserted = basic_stats.after_data_change(
        params, num_files=3, total_size=150, added_rows=5, added_raw_size=None, replaced=False
    )
    assert inserted[accurate.COLUMN_STATS_ACCURATE] == '{"BASIC_STATS":"true"}'
    assert inserted["numRows"] == "15"


def test_java_long_truncates_and_saturates() -> None:
    assert java_long(math.nan) == 0
    assert java_long(-2.9) == -2
    assert java_long(2.9) == 2
    assert java_long(1e300) == (1 << 63) - 1
    assert java_long(-math.inf) == -(1 << 63)


def test_java_round_ties_toward_positive_infinity() -> None:
    assert java_round(2.5) == 3
    assert java_round(-2.5) == -2
    assert java_round(-2.51) == -3
    assert java_round(math.nan) == 0


def test_java_divisions() -> None:
    assert java_div(-7, 2) == -3
    assert java_div(7, -2) == -3
    assert java_div(-7, -2) == 3
    assert java_fdiv(1.0, -0.0) == -math.inf
    assert java_fdiv(-1.0, 0.0) == -math.inf
    assert math.isnan(java_fdiv(0.0, 0.0))
    assert java_fdiv(3.0, 2.0) == 1.5
