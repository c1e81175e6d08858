"""Validation and normalisation of incoming column statistics: one test per rule and message."""

from __future__ import annotations

from decimal import Decimal

import pytest

from metastore.catalog import FieldSchema
from metastore.errors import InvalidInput
from metastore.stats.fmsketch import FMSketch
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
from metastore.stats.validate import normalize_entry

OWNER = "sales.orders"
PART = "sales.orders partition ds=2024-01-01"


def _hll(values: range) -> bytes:
    s = NdvSketch()
    s.add_longs(list(values))
    return s.to_bytes()


def check(column: str, col_type: str | None, stats, *, owner: str = OWNER, num_rows: int | None = None):
    entry = ColumnStatsEntry(column, col_type or "ignored", stats)
    field = FieldSchema(column, col_type) if col_type is not None else None
    return normalize_entry(entry, field, owner=owner, num_rows=num_rows)


def rejects(match: str, *args, **kwargs) -> None:
    with pytest.raises(InvalidInput, match=match):
        check(*args, **kwargs)


def test_valid_entries_pass_and_take_the_declared_type_in_lower_case() -> None:
    out = check("price", "DOUBLE", DoubleStats(num_nulls=1, num_dvs=5, low=1.0, high=9.5))
    assert out.column_type == "double"
    assert out.stats == DoubleStats(num_nulls=1, num_dvs=5, low=1.0, high=9.5)
    out = check("name", "VARCHAR(20)", StringStats(num_nulls=0, num_dvs=3, max_col_len=7, avg_col_len=4.5))
    assert out.column_type == "varchar(20)"
    out = check("flag", "boolean", BooleanStats(num_nulls=0, num_trues=3, num_falses=4), num_rows=7)
    assert out.stats.num_trues == 3


def test_missing_column_names_column_and_owner() -> None:
    rejects(
        r"column 'nope' does not exist in sales.orders partition ds=2024-01-01",
        "nope",
        None,
        LongStats(num_nulls=0, num_dvs=0),
        owner=PART,
    )


@pytest.mark.parametrize(
    ("col_type", "stats", "member"),
    [
        ("double", LongStats(num_nulls=0, num_dvs=1), "longStats"),
        ("bigint", DoubleStats(num_nulls=0, num_dvs=1), "doubleStats"),
        ("string", BinaryStats(num_nulls=0, max_col_len=1, avg_col_len=1.0), "binaryStats"),
        ("decimal(10,2)", DoubleStats(num_nulls=0, num_dvs=1), "doubleStats"),
        ("date", TimestampStats(num_nulls=0, num_dvs=1), "timestampStats"),
        ("boolean", LongStats(num_nulls=0, num_dvs=1), "longStats"),
        ("int", DateStats(num_nulls=0, num_dvs=1), "dateStats"),
    ],
)
def test_kind_must_fit_the_column_type(col_type: str, stats, member: str) -> None:
    rejects(
        rf"column 'price' of sales.orders is {col_type.replace('(', '[(]').replace(')', '[)]')}, got {member}",
        "price",
        col_type,
        stats,
    )


def test_complex_types_have_no_statistics() -> None:
    rejects(
        r"column 'tags' of sales.orders has type array<string>, which has no column statistics",
        "tags",
        "array<string>",
        LongStats(num_nulls=0, num_dvs=0),
    )


def test_long_stats_for_a_timestamp_column_become_timestamp_stats() -> None:
    bv = _hll(range(10))
    out = check("ts", "timestamp", LongStats(num_nulls=2, num_dvs=10, low=100, high=200, bit_vector=bv))
    assert out.stats == TimestampStats(num_nulls=2, num_dvs=10, low=100, high=200, bit_vector=bv)


@pytest.mark.parametrize(
    ("stats", "field"),
    [
        (LongStats(num_nulls=-1, num_dvs=0), "numNulls"),
        (LongStats(num_nulls=0, num_dvs=-3), "numDVs"),
        (BooleanStats(num_nulls=0, num_trues=-1, num_falses=0), "numTrues"),
        (BooleanStats(num_nulls=0, num_trues=0, num_falses=-2), "numFalses"),
        (StringStats(num_nulls=0, num_dvs=0, max_col_len=-1, avg_col_len=0.0), "maxColLen"),
        (StringStats(num_nulls=0, num_dvs=0, max_col_len=3, avg_col_len=-0.5), "avgColLen"),
        (BinaryStats(num_nulls=0, max_col_len=-4, avg_col_len=0.0), "maxColLen"),
    ],
)
def test_negative_counts(stats, field: str) -> None:
    col_type = {LongStats: "bigint", BooleanStats: "boolean", StringStats: "string", BinaryStats: "binary"}[
        type(stats)
    ]
    rejects(rf"column 'c' of sales.orders: {field} must not be negative", "c", col_type, stats)


def test_counts_must_be_integers() -> None:
    rejects(r"numNulls must be an integer, got 1.5", "c", "bigint", LongStats(num_nulls=1.5, num_dvs=0))
    rejects(r"numDVs must be an integer, got True", "c", "bigint", LongStats(num_nulls=0, num_dvs=True))
    rejects(
        r"lowValue must be an integer, got 1.5", "c", "bigint", LongStats(num_nulls=0, num_dvs=0, low=1.5)
    )


@pytest.mark.parametrize(
    ("col_type", "stats", "low", "high"),
    [
        ("bigint", LongStats(num_nulls=0, num_dvs=2, low=5, high=3), "5", "3"),
        ("double", DoubleStats(num_nulls=0, num_dvs=2, low=2.5, high=-1.0), "2.5", "-1.0"),
        (
            "decimal(5,2)",
            DecimalStats(num_nulls=0, num_dvs=2, low=Decimal("1.10"), high=Decimal("1.01")),
            "1.10",
            "1.01",
        ),
        ("date", DateStats(num_nulls=0, num_dvs=2, low=19000, high=18000), "19000", "18000"),
        ("timestamp", TimestampStats(num_nulls=0, num_dvs=2, low=10, high=9), "10", "9"),
    ],
)
def test_low_greater_than_high(col_type: str, stats, low: str, high: str) -> None:
    rejects(
        rf"column 'c' of sales.orders: lowValue {low} is greater than highValue {high}", "c", col_type, stats
    )


def test_nan_bounds() -> None:
    rejects(
        r"column 'c' of sales.orders: lowValue is NaN",
        "c",
        "double",
        DoubleStats(num_nulls=0, num_dvs=1, low=float("nan"), high=1.0),
    )
    rejects(
        r"highValue is NaN", "c", "float", DoubleStats(num_nulls=0, num_dvs=1, low=0.0, high=float("nan"))
    )
    rejects(
        r"highValue must be a finite decimal",
        "c",
        "decimal(4,1)",
        DecimalStats(num_nulls=0, num_dvs=1, high=Decimal("NaN")),
    )
    # infinities are legitimate bounds of a double column
    check("c", "double", DoubleStats(num_nulls=0, num_dvs=1, low=float("-inf"), high=float("inf")))


def test_avg_col_len_above_max_col_len() -> None:
    rejects(
        r"column 'c' of sales.orders: avgColLen 5.5 is greater than maxColLen 5",
        "c",
        "string",
        StringStats(num_nulls=0, num_dvs=1, max_col_len=5, avg_col_len=5.5),
    )
    rejects(
        r"avgColLen 2.0 is greater than maxColLen 1",
        "c",
        "binary",
        BinaryStats(num_nulls=0, max_col_len=1, avg_col_len=2),
    )


def test_row_count_rules_only_when_rows_are_known() -> None:
    stats = LongStats(num_nulls=10, num_dvs=1)
    check("c", "int", stats)  # unknown row count: fine
    rejects(
        r"column 'c' of sales.orders partition ds=2024-01-01: numNulls 10 exceeds the 5 rows of "
        r"sales.orders partition ds=2024-01-01",
        "c",
        "int",
        stats,
        owner=PART,
        num_rows=5,
    )
    check("c", "int", stats, num_rows=10)
    flags = BooleanStats(num_nulls=1, num_trues=3, num_falses=3)
    check("c", "boolean", flags, num_rows=7)
    rejects(
        r"numTrues \+ numFalses \+ numNulls = 7 exceeds the 6 rows of sales.orders",
        "c",
        "boolean",
        flags,
        num_rows=6,
    )


def test_bit_vectors_must_be_hll_or_fm() -> None:
    good = _hll(range(100))
    out = check("c", "bigint", LongStats(num_nulls=0, num_dvs=100, bit_vector=bytearray(good)))
    assert out.stats.bit_vector == good and isinstance(out.stats.bit_vector, bytes)
    check("c", "bigint", LongStats(num_nulls=0, num_dvs=1, bit_vector=FMSketch(16).to_bytes()))
    rejects(
        r"column 'c' of sales.orders: bitVector starting b'XYZ' is neither an HLL \('HLL'\) nor an FM",
        "c",
        "bigint",
        LongStats(num_nulls=0, num_dvs=1, bit_vector=b"XYZ123"),
    )
    rejects(
        r"column 'c' of sales.orders: bitVector is not a readable sketch: HLL sparse list announces 9",
        "c",
        "string",
        StringStats(
            num_nulls=0, num_dvs=1, max_col_len=1, avg_col_len=1.0, bit_vector=b"HLL\xa0\x01\x09\x01"
        ),
    )
    rejects(
        r"FM sketch announces 2 bit vectors",
        "c",
        "bigint",
        LongStats(num_nulls=0, num_dvs=1, bit_vector=b"FM\x02\x00\x00\x00\x00\x00"),
    )
    # An empty bitVector means none, as in Hive.
    assert check("c", "bigint", LongStats(num_nulls=0, num_dvs=1, bit_vector=b"")).stats.bit_vector is None


def test_histograms_must_be_kll() -> None:
    hist = histogram_for(StatsKind.LONG, [1, 2, 3])
    assert check("c", "bigint", LongStats(num_nulls=0, num_dvs=3, histogram=hist)).stats.histogram == hist
    rejects(
        r"column 'c' of sales.orders: histogram is not a readable KLL float sketch",
        "c",
        "bigint",
        LongStats(num_nulls=0, num_dvs=3, histogram=b"\x01\x02\x03"),
    )
    assert check("c", "bigint", LongStats(num_nulls=0, num_dvs=3, histogram=b"")).stats.histogram is None


def test_decimal_bounds_become_decimals() -> None:
    out = check("amount", "decimal(10,2)", DecimalStats(num_nulls=0, num_dvs=2, low="1.50", high=3))
    assert out.stats.low == Decimal("1.50") and isinstance(out.stats.low, Decimal)
    assert out.stats.high == Decimal(3) and isinstance(out.stats.high, Decimal)
    out = check("amount", "decimal(10,2)", DecimalStats(num_nulls=0, num_dvs=2, low=0.1, high=0.25))
    assert out.stats.low == Decimal("0.1")
    rejects(
        r"lowValue must be a decimal, got 'abc'",
        "amount",
        "decimal(10,2)",
        DecimalStats(num_nulls=0, num_dvs=2, low="abc"),
    )


def test_column_name_comes_from_the_table() -> None:
    entry = ColumnStatsEntry("PRICE", "bigint", LongStats(num_nulls=0, num_dvs=0))
    out = normalize_entry(entry, FieldSchema("price", "bigint"), owner=OWNER)
    assert out.column == "price"


def test_decimal_bounds_must_fit_the_column_precision_and_scale() -> None:
    huge = Decimal("9" * 5000)
    with pytest.raises(InvalidInput) as info:
        check("amount", "decimal(38,4)", DecimalStats(num_nulls=0, num_dvs=1, low=Decimal(1), high=huge))
    message = str(info.value)
    assert "column 'amount' of sales.orders: highValue 9999" in message
    assert "(5000 digits) has 5000 digits before the decimal point" in message
    assert "decimal(38,4) holds at most 34" in message
    assert len(message) < 300  # the value is shown cut short, not in full
    rejects(
        r"column 'amount' of sales.orders: lowValue 1.23456 has 5 digits after the decimal point; "
        r"the column's type decimal\(38,4\) allows 4",
        "amount",
        "decimal(38,4)",
        DecimalStats(num_nulls=0, num_dvs=1, low=Decimal("1.23456")),
    )
    # decimal alone is Hive's decimal(10,0)
    rejects(r"lowValue 0.5 has 1 digits after the decimal point; the column's type decimal\(10,0\) allows 0",
            "n", "decimal", DecimalStats(num_nulls=0, num_dvs=1, low=Decimal("0.5")))
    rejects(r"highValue 1E\+36 has 37 digits before the decimal point; a Hive decimal at the scale of the "
            r"column's type decimal\(4,2\) holds at most 36",
            "n", "decimal(4,2)", DecimalStats(num_nulls=0, num_dvs=1, high=Decimal("1E+36")))
    rejects(r"lowValue -1E\+38 has 39 digits before the decimal point; .* decimal\(5,0\) holds at most 38",
            "n", "decimal(5,0)", DecimalStats(num_nulls=0, num_dvs=1, low=Decimal("-1E+38")))


def test_decimal_bounds_past_the_declared_precision_are_kept_as_hive_keeps_them() -> None:
    # Hive stores them, and clients write them (pymetastore's own tests: a 19-digit bound for decimal(10,2)).
    out = check("n", "decimal(4,2)", DecimalStats(num_nulls=0, num_dvs=2, low=Decimal("-1E+3"), high=Decimal(123)))
    stats = out.stats
    assert isinstance(stats, DecimalStats)
    assert stats.low == Decimal(-1000) and stats.high == Decimal(123)
    assert stats.low is not None and stats.low.as_tuple().exponent == 0


def test_decimal_bounds_that_fit_after_dropping_trailing_zeros_are_kept_at_the_column_scale() -> None:
    out = check("amount", "decimal(38,4)",
                DecimalStats(num_nulls=0, num_dvs=2, low=Decimal("-0.000"), high=Decimal("1.50000000")))
    assert out.stats.high == Decimal("1.5") and out.stats.high.as_tuple().exponent == -4
    assert out.stats.low == 0 and out.stats.low.as_tuple() == Decimal("0.000").as_tuple()
    # the largest values of the type fit exactly; a positive exponent becomes scale 0
    top = Decimal("9" * 34 + "." + "9" * 4)
    out = check("amount", "decimal(38,4)", DecimalStats(num_nulls=0, num_dvs=2, low=top.copy_negate(), high=top))
    assert (out.stats.low, out.stats.high) == (top.copy_negate(), top)
    out = check("n", "decimal(5,0)", DecimalStats(num_nulls=0, num_dvs=1, low=Decimal("1E+3")))
    assert out.stats.low == 1000 and out.stats.low.as_tuple().exponent == 0
    # values are never rounded to fit
    rejects(r"has 3 digits after the decimal point", "n", "decimal(10,2)",
            DecimalStats(num_nulls=0, num_dvs=1, low=Decimal("1.005")))


def test_counts_and_integer_bounds_must_fit_a_64_bit_long() -> None:
    top = 2**63 - 1
    check("c", "bigint", LongStats(num_nulls=top, num_dvs=0, low=-(2**63), high=top))
    rejects(r"column 'c' of sales.orders: highValue 9223372036854775808 is outside the range of a 64-bit integer",
            "c", "bigint", LongStats(num_nulls=0, num_dvs=1, high=2**63))
    rejects(r"lowValue -9223372036854775809 is outside the range", "c", "date",
            DateStats(num_nulls=0, num_dvs=1, low=-(2**63) - 1))
    rejects(r"numNulls 9223372036854775808 is outside the range", "c", "string",
            StringStats(num_nulls=2**63, num_dvs=0, max_col_len=0, avg_col_len=0.0))
    rejects(r"maxColLen 18446744073709551616 is outside the range", "c", "binary",
            BinaryStats(num_nulls=0, max_col_len=2**64, avg_col_len=1.0))
