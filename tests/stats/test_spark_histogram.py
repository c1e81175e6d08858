"""Spark's equi-height histogram property: xxHash32, lz4-java block framing, Spark's serialization, bins from KLL."""

from __future__ import annotations

import base64
import struct

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from metastore.stats.kll import histogram_for
from metastore.stats.model import ColumnStatsEntry, DateStats, LongStats, StatsKind, StringStats
from metastore.stats.spark_histogram import (
    HistogramBin,
    SparkHistogram,
    SparkHistogramError,
    decode_histogram,
    encode_histogram,
    equi_height_bins,
    xxhash32,
)
from metastore.stats.spark_properties import kll_histogram_text

#: Written by Spark 4.3's HistogramSerializer (LZ4-compressed block) for `SELECT id * id FROM range(20)` with
#: spark.sql.statistics.histogram.numBins=4; Spark's bins: height 5.0, (0,16,5) (16,81,5) (81,196,5) (196,361,5).
SPARK_TEXT = (
    "TFo0QmxvY2smMgAAAHAAAAC2vVEHNEAUAAEAFAQJACJAMAoAMUBUQAkAMkBogAgADxgABSF2kCAAAwIAHwUIAARQBf////9MWjRCbG9jaxYAAAAA"
    "AAAAAAAAAAA="
)


def test_xxhash32_reference_values() -> None:
    # the algorithm's published test values (seed 0)
    assert xxhash32(b"", 0) == 0x02CC5D05
    assert xxhash32(b"a", 0) == 0x550D7456
    assert xxhash32(b"abc", 0) == 0x32D153FF
    assert xxhash32(b"Nobody inspects the spammish repetition", 0) == 0xE2293B2F


def test_reads_what_spark_wrote() -> None:
    got = decode_histogram(SPARK_TEXT)
    assert got == SparkHistogram(5.0, (HistogramBin(0.0, 16.0, 5), HistogramBin(16.0, 81.0, 5),
                                       HistogramBin(81.0, 196.0, 5), HistogramBin(196.0, 361.0, 5)))


@given(st.lists(st.tuples(st.floats(-1e300, 1e300), st.floats(0, 1e6), st.integers(0, 2**62)), min_size=1,
                max_size=60), st.floats(0, 1e12))
def test_round_trip(bins: list[tuple[float, float, int]], height: float) -> None:
    ordered = []
    lo = min(b[0] for b in bins)
    for _, width, ndv in bins:
        ordered.append(HistogramBin(lo, lo + width, ndv))
        lo += width
    histogram = SparkHistogram(height, tuple(ordered))
    assert decode_histogram(encode_histogram(histogram)) == histogram


@pytest.mark.parametrize("text, message", [
    ("not base64!", "not Base64"),
    (base64.b64encode(b"LZ5Block" + bytes(30)).decode(), "no LZ4Block magic"),
    (base64.b64encode(b"LZ4Block\x16").decode(), "header cut short"),
    (base64.b64encode(b"LZ4Block" + struct.pack("<BiiI", 0x36, 1, 1, 0) + b"x").decode(), "unknown LZ4Block method"),
])
def test_garbage_is_refused(text: str, message: str) -> None:
    with pytest.raises(SparkHistogramError, match=message):
        decode_histogram(text)


def test_a_changed_byte_fails_the_checksum() -> None:
    raw = bytearray(base64.b64decode(encode_histogram(SparkHistogram(1.0, (HistogramBin(0, 1, 1),)))))
    raw[30] ^= 1  # in the payload, after the 21-byte header
    with pytest.raises(SparkHistogramError, match="checksum"):
        decode_histogram(base64.b64encode(bytes(raw)).decode())


def test_equi_height_bins_clamp_and_bound_distinct_counts() -> None:
    # a float sketch rounded the extremes outwards: bounds go back into [low, high]
    got = equi_height_bins([-2.0, 3.0, 3.0, 9.5, 12.0], non_null=40, ndv=100, low=0.0, high=10.0, integral=True)
    assert got is not None
    assert got.height == 10.0
    assert [(b.lo, b.hi) for b in got.bins] == [(0.0, 3.0), (3.0, 3.0), (3.0, 9.5), (9.5, 10.0)]
    # 100 distinct values over 4 bins is 25 each, but a bin spans only so many integers
    assert [b.ndv for b in got.bins] == [4, 1, 7, 1]
    assert equi_height_bins([1.0, 2.0], non_null=0, ndv=0, low=1.0, high=2.0, integral=False) is None


def test_histogram_from_a_kll_sketch() -> None:
    values = np.arange(1, 1001, dtype=np.int64)
    entry = ColumnStatsEntry(column="a", column_type="bigint", stats=LongStats(
        num_nulls=0, num_dvs=1000, low=1, high=1000, histogram=histogram_for(StatsKind.LONG, values)))
    text = kll_histogram_text(entry)
    assert text is not None and len(text) < 4000
    got = decode_histogram(text)
    assert len(got.bins) == 100 and got.height == 10.0
    assert got.bins[0].lo == 1.0 and got.bins[-1].hi == 1000.0
    assert all(a.hi == b.lo for a, b in zip(got.bins, got.bins[1:], strict=False))
    # each upper bound is the value at its rank (10, 20, ..., 1000) within the sketch's rank error (k=200: ~1.65 %)
    assert max(abs(b.hi - 10 * (i + 1)) for i, b in enumerate(got.bins)) <= 20


def test_dates_become_days_and_kinds_without_sketch_get_none() -> None:
    days = np.arange(19000, 19010)
    entry = ColumnStatsEntry(column="d", column_type="date", stats=DateStats(
        num_nulls=0, num_dvs=10, low=19000, high=19009, histogram=histogram_for(StatsKind.DATE, days)))
    text = kll_histogram_text(entry)
    assert text is not None
    got = decode_histogram(text)
    assert (got.bins[0].lo, got.bins[-1].hi, len(got.bins)) == (19000.0, 19009.0, 10)
    assert all(19000 <= b.lo <= b.hi <= 19009 and b.hi == int(b.hi) for b in got.bins)  # days, not seconds
    plain = ColumnStatsEntry(column="s", column_type="string", stats=StringStats(
        num_nulls=0, num_dvs=3, max_col_len=3, avg_col_len=2.0))
    assert kll_histogram_text(plain) is None
    broken = ColumnStatsEntry(column="a", column_type="bigint", stats=LongStats(
        num_nulls=0, num_dvs=3, low=1, high=3, histogram=b"\x01\x02"))
    assert kll_histogram_text(broken) is None
