"""metastore.wire.stats: statistics entries to Thrift and back, every kind, sketches only on request."""

from __future__ import annotations

from decimal import Decimal

import pytest

from metastore.api.hive_metastore import ttypes as tt
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
from metastore.wire.stats import (
    decimal_from_thrift,
    decimal_to_thrift,
    entry_from_thrift,
    entry_to_thrift,
)

BV, HIST = b"HLL\x10\x00", b"kll-bytes"
ENTRIES = [
    ColumnStatsEntry("b", "boolean", BooleanStats(num_nulls=1, num_trues=2, num_falses=3)),
    ColumnStatsEntry("l", "bigint", LongStats(num_nulls=1, num_dvs=2, bit_vector=BV, histogram=HIST, low=-(2**63), high=2**63 - 1)),
    ColumnStatsEntry("d", "double", DoubleStats(num_nulls=0, num_dvs=2, bit_vector=BV, histogram=HIST, low=-0.5, high=1e300)),
    ColumnStatsEntry("s", "varchar(3)", StringStats(num_nulls=4, num_dvs=5, bit_vector=BV, max_col_len=3, avg_col_len=1.25)),
    ColumnStatsEntry("x", "binary", BinaryStats(num_nulls=4, max_col_len=1 << 40, avg_col_len=0.5)),
    ColumnStatsEntry("m", "decimal(38,18)", DecimalStats(num_nulls=0, num_dvs=1, bit_vector=BV, histogram=HIST,
                                                         low=Decimal("-12345678901234567890.123456789012345678"), high=Decimal("0.000000000000000001"))),
    ColumnStatsEntry("dt", "date", DateStats(num_nulls=0, num_dvs=1, bit_vector=BV, histogram=HIST, low=-719162, high=2932896)),
    ColumnStatsEntry("ts", "timestamp", TimestampStats(num_nulls=0, num_dvs=1, bit_vector=BV, histogram=HIST, low=None, high=7)),
]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.column_type)
def test_round_trip_with_sketches(entry):
    back = entry_from_thrift(entry_to_thrift(entry, bit_vectors=True, histograms=True))
    # Booleans and binaries never carry sketches on the wire (Hive's behaviour).
    assert back == entry


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.column_type)
def test_sketches_left_out_unless_asked(entry):
    obj = entry_to_thrift(entry)
    member = next(v for v in vars(obj.statsData).values() if v is not None)
    assert getattr(member, "bitVectors", None) is None
    assert getattr(member, "histogram", None) is None


def test_positional_construction_equals_keyword_construction():
    got = entry_to_thrift(ENTRIES[1], bit_vectors=True)
    want = tt.ColumnStatisticsObj(
        colName="l", colType="bigint",
        statsData=tt.ColumnStatisticsData(
            longStats=tt.LongColumnStatsData(lowValue=-(2**63), highValue=2**63 - 1, numNulls=1, numDVs=2, bitVectors=BV)
        ),
    )
    assert got == want


@pytest.mark.parametrize("text", ["0", "-1", "127", "128", "-128", "-129", "1.50", "-0.001", "1E+3", "99999999999999999999.9999"])
def test_decimal_encoding_is_javas_biginteger(text):
    d = decimal_to_thrift(Decimal(text))
    unscaled = int.from_bytes(d.unscaled, "big", signed=True)
    assert Decimal(unscaled).scaleb(-d.scale) == Decimal(text)
    # Minimal two's complement, as BigInteger.toByteArray(): bitLength()/8 + 1 bytes.
    assert len(d.unscaled) == (unscaled if unscaled >= 0 else -unscaled - 1).bit_length() // 8 + 1
    assert decimal_from_thrift(d) == Decimal(text)


@pytest.mark.parametrize("digits", [38, 4301, 6000])
def test_decimals_of_any_length_convert_exactly(digits):
    """Past 4300 digits Python's int(str) refuses (CVE-2020-10735 limit); decimals must not go through it."""
    text = "-" + "9" * digits + ".25"
    d = decimal_to_thrift(Decimal(text))
    assert d.scale == 2
    assert int.from_bytes(d.unscaled, "big", signed=True) == -((10**digits - 1) * 100 + 25)
    assert decimal_from_thrift(d) == Decimal(text)
    assert decimal_from_thrift(tt.Decimal(unscaled=(10**digits).to_bytes(digits // 2 + 1, "big"), scale=digits)) == 1


def test_bad_thrift_objects_are_invalid_input():
    with pytest.raises(InvalidInput, match="statsData"):
        entry_from_thrift(tt.ColumnStatisticsObj(colName="c", colType="int", statsData=tt.ColumnStatisticsData()))
    with pytest.raises(InvalidInput, match="colName"):
        entry_from_thrift(tt.ColumnStatisticsObj(colName="", colType="int", statsData=None))
    with pytest.raises(InvalidInput, match="numNulls"):
        entry_from_thrift(tt.ColumnStatisticsObj(colName="c", colType="int", statsData=tt.ColumnStatisticsData(
            longStats=tt.LongColumnStatsData(numDVs=1))))
    with pytest.raises(InvalidInput, match="scale"):
        decimal_from_thrift(tt.Decimal(unscaled=b"\x01", scale=None))


def test_timestamp_as_long_is_the_pre_hive4_wire_form():
    ts = ENTRIES[-1]
    obj = entry_to_thrift(ts, timestamp_as_long=True)
    assert obj.statsData.timestampStats is None
    assert (obj.statsData.longStats.lowValue, obj.statsData.longStats.highValue) == (None, 7)
    assert entry_to_thrift(ENTRIES[1], timestamp_as_long=True) == entry_to_thrift(ENTRIES[1])
