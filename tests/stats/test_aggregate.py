"""get_aggr_stats_for aggregation: Hive's all-found rules, NDV choices and extrapolation formulas."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest

from metastore.errors import InvalidInput
from metastore.stats.aggregate import aggregate_partition_stats
from metastore.stats.fmsketch import FMSketch
from metastore.stats.kll import histogram_for, kll_from_bytes
from metastore.stats.model import (
    BinaryStats,
    BooleanStats,
    DateStats,
    DecimalStats,
    DoubleStats,
    LongStats,
    StatsKind,
    StringStats,
    TimestampStats,
)
from metastore.stats.ndv import NdvSketch


def _hll(lo: int, hi: int, p: int = 14) -> bytes:
    s = NdvSketch(p=p)
    s.add_longs(np.arange(lo, hi))
    return s.to_bytes()


def L(nulls: int, ndv: int, low: int | None, high: int | None, bv: bytes | None = None) -> LongStats:  # noqa: N802
    return LongStats(num_nulls=nulls, num_dvs=ndv, low=low, high=high, bit_vector=bv)


# ------------------------------------------------------------------------------------------ all partitions found


def test_all_found_without_sketches_uses_max_ndv_by_default() -> None:
    parts = [(0, L(1, 10, 5, 50)), (1, L(2, 30, -3, 20))]
    assert aggregate_partition_stats("bigint", parts, num_partitions=2) == L(3, 30, -3, 50)


def test_ndv_tuner_interpolates_between_max_and_sum() -> None:
    parts = [(0, L(0, 10, 0, 1)), (1, L(0, 30, 0, 1))]
    assert aggregate_partition_stats("int", parts, num_partitions=2, ndv_tuner=0.5).num_dvs == 35
    assert aggregate_partition_stats("int", parts, num_partitions=2, ndv_tuner=1.0).num_dvs == 40


def test_density_estimate_is_clamped() -> None:
    # densities (long division): 100 // 10 = 10 and 200 // 20 = 10, averaged over the 2 requested partitions
    parts = [(0, L(0, 10, 0, 100)), (1, L(0, 20, 50, 250))]
    assert (
        aggregate_partition_stats("bigint", parts, num_partitions=2, use_density=True).num_dvs == 25
    )  # 250 / 10
    narrow = [(0, L(0, 10, 0, 100)), (1, L(0, 20, 0, 100))]  # 100 / 7.5 = 13 -> clamped up to 20
    assert aggregate_partition_stats("bigint", narrow, num_partitions=2, use_density=True).num_dvs == 20
    doubles = [
        (0, DoubleStats(num_nulls=0, num_dvs=4, low=0.0, high=1.0)),
        (1, DoubleStats(num_nulls=0, num_dvs=4, low=0.5, high=2.0)),
    ]
    # densities 0.25 and 0.375 -> avg 0.3125 -> 2.0 / 0.3125 = 6.4 -> 6, inside [4, 8]
    assert aggregate_partition_stats("double", doubles, num_partitions=2, use_density=True).num_dvs == 6


def test_all_found_with_sketches_uses_the_union() -> None:
    parts = [(i, L(0, 5000, i * 2500, i * 2500 + 4999, _hll(i * 2500, i * 2500 + 5000))) for i in range(4)]
    out = aggregate_partition_stats("bigint", parts, num_partitions=4, ndv_tuner=1.0)
    assert abs(out.num_dvs - 12500) / 12500 < 0.03
    assert out.bit_vector is not None
    assert NdvSketch.from_bytes(out.bit_vector).estimate() == out.num_dvs
    assert (out.low, out.high) == (0, 12499)


def test_one_partition_without_a_sketch_disables_sketch_merging() -> None:
    parts = [(0, L(0, 5000, 0, 4999, _hll(0, 5000))), (1, L(0, 100, 0, 99))]
    out = aggregate_partition_stats("bigint", parts, num_partitions=2)
    assert out.num_dvs == 5000 and out.bit_vector is None
    mixed = [(0, L(0, 5000, 0, 4999, _hll(0, 5000))), (1, L(0, 100, 0, 99, FMSketch(8).to_bytes()))]
    assert aggregate_partition_stats("bigint", mixed, num_partitions=2).num_dvs == 5000


def test_fewer_than_two_found_is_not_extrapolated() -> None:
    out = aggregate_partition_stats("bigint", [(3, L(4, 10, 1, 9))], num_partitions=10)
    assert out == L(4, 10, 1, 9)


def test_boolean_and_binary() -> None:
    parts = [
        (0, BooleanStats(num_nulls=1, num_trues=2, num_falses=3)),
        (2, BooleanStats(num_nulls=0, num_trues=5, num_falses=0)),
    ]
    assert aggregate_partition_stats("boolean", parts, num_partitions=3) == BooleanStats(
        num_nulls=1, num_trues=7, num_falses=3
    )
    bins = [
        (0, BinaryStats(num_nulls=1, max_col_len=4, avg_col_len=2.0)),
        (1, BinaryStats(num_nulls=2, max_col_len=3, avg_col_len=2.5)),
    ]
    assert aggregate_partition_stats("binary", bins, num_partitions=5) == BinaryStats(
        num_nulls=3, max_col_len=4, avg_col_len=2.5
    )


def test_strings_take_max_and_ignore_the_tuner() -> None:
    parts = [
        (0, StringStats(num_nulls=1, num_dvs=10, max_col_len=9, avg_col_len=3.0)),
        (1, StringStats(num_nulls=1, num_dvs=20, max_col_len=5, avg_col_len=4.0)),
    ]
    out = aggregate_partition_stats("varchar(10)", parts, num_partitions=2, ndv_tuner=1.0)
    assert out == StringStats(num_nulls=2, num_dvs=20, max_col_len=9, avg_col_len=4.0)


def test_histograms_merge_when_all_have_one() -> None:
    parts = [
        (
            0,
            LongStats(
                num_nulls=0, num_dvs=3, low=1, high=3, histogram=histogram_for(StatsKind.LONG, [1, 2, 3])
            ),
        ),
        (
            1,
            LongStats(num_nulls=0, num_dvs=2, low=7, high=9, histogram=histogram_for(StatsKind.LONG, [7, 9])),
        ),
    ]
    out = aggregate_partition_stats("bigint", parts, num_partitions=2)
    assert kll_from_bytes(out.histogram).n == 5
    parts[1] = (1, LongStats(num_nulls=0, num_dvs=2, low=7, high=9))
    assert aggregate_partition_stats("bigint", parts, num_partitions=2).histogram is None


# ------------------------------------------------------------------------------------------------ extrapolation


def test_extrapolation_rising_trend() -> None:
    # partitions 1 and 3 of 5 have statistics
    parts = [(1, L(2, 10, 10, 20)), (3, L(4, 30, 30, 50))]
    out = aggregate_partition_stats("bigint", parts, num_partitions=5)
    assert out.low == 0  # 30 - (30 - 10) * 3 / (3 - 1)
    assert out.high == 80  # 20 + (50 - 20) * (5 - 1) / (3 - 1)
    assert out.num_nulls == 15  # 6 * 5 / 2
    assert out.num_dvs == 50  # 10 + (30 - 10) * (5 - 1) / (3 - 1)
    # density: 10 // 10 = 1 and 20 // 30 = 0 -> 0.5; (80 - 0) / 0.5 = 160, clamped to [30, 40]
    assert aggregate_partition_stats("bigint", parts, num_partitions=5, use_density=True).num_dvs == 40


def test_extrapolation_falling_trend() -> None:
    parts = [(1, L(0, 30, 30, 50)), (3, L(0, 10, 10, 20))]
    out = aggregate_partition_stats("bigint", parts, num_partitions=5)
    assert out.low == -10  # 30 - (30 - 10) * (5 - 1) / (3 - 1)
    assert out.high == 65  # 20 + (50 - 20) * 3 / (3 - 1)
    assert out.num_dvs == 40  # 10 + (30 - 10) * 3 / (3 - 1)


def test_extrapolation_truncates_like_java() -> None:
    # partitions 0 and 2 of 3
    parts = [(0, L(1, 3, 5, 10)), (2, L(0, 4, 0, 11))]
    out = aggregate_partition_stats("bigint", parts, num_partitions=3)
    assert out.num_nulls == 1  # 1 * 3 / 2 in long arithmetic
    assert out.low == -2  # 5 - 5 * (3 - 0) / (2 - 0) = -2.5, truncated toward zero
    assert out.high == 11  # 10 + 1 * (3 - 0) / 2 = 11.5
    assert out.num_dvs == 4  # 3 + 1 * 3 / 2 = 4.5


def test_extrapolation_of_doubles_dates_timestamps_decimals() -> None:
    doubles = [
        (0, DoubleStats(num_nulls=0, num_dvs=2, low=1.0, high=2.0)),
        (2, DoubleStats(num_nulls=0, num_dvs=4, low=2.0, high=3.5)),
    ]
    out = aggregate_partition_stats("double", doubles, num_partitions=4)
    assert out.low == 1.0  # 2 - 1 * 2 / 2
    assert out.high == 2.0 + 1.5 * 4 / 2
    assert out.num_dvs == 6  # 2 + 2 * 4 / 2
    dates = [
        (0, DateStats(num_nulls=0, num_dvs=1, low=100, high=110)),
        (1, DateStats(num_nulls=0, num_dvs=1, low=110, high=120)),
    ]
    out = aggregate_partition_stats("date", dates, num_partitions=4)
    assert (out.low, out.high) == (100, 150)  # high: 110 + 10 * (4 - 0) / 1
    stamps = [
        (2, TimestampStats(num_nulls=0, num_dvs=1, low=1000, high=2000)),
        (3, TimestampStats(num_nulls=0, num_dvs=1, low=3000, high=4000)),
    ]
    out = aggregate_partition_stats("timestamp", stamps, num_partitions=4)
    assert (out.low, out.high) == (-3000, 6000)  # 3000 - 2000 * 3 / 1 and 2000 + 2000 * (4 - 2) / 1
    decimals = [
        (0, DecimalStats(num_nulls=0, num_dvs=2, low=Decimal("1.5"), high=Decimal("2.5"))),
        (1, DecimalStats(num_nulls=0, num_dvs=2, low=Decimal("2.5"), high=Decimal("3.5"))),
    ]
    out = aggregate_partition_stats("decimal(5,1)", decimals, num_partitions=3)
    assert out.low == Decimal("1.5") and out.high == Decimal("5.5")  # 2.5 + 1 * 3 / 1
    assert isinstance(out.high, Decimal)


def test_extrapolation_of_strings() -> None:
    parts = [
        (0, StringStats(num_nulls=2, num_dvs=10, max_col_len=10, avg_col_len=4.0)),
        (1, StringStats(num_nulls=0, num_dvs=20, max_col_len=20, avg_col_len=5.0)),
    ]
    out = aggregate_partition_stats("string", parts, num_partitions=4)
    assert out.avg_col_len == 4.0 + 1.0 * 4 / 1
    assert out.max_col_len == 10 + 10 * 4
    assert out.num_dvs == 10 + 10 * 4
    assert out.num_nulls == 4


def test_extrapolation_merges_adjacent_sketches_into_pseudo_partitions() -> None:
    # partitions 0 and 1 are adjacent: one pseudo-partition at index 0.5 with the merged NDV (~1500);
    # partition 3 alone with NDV 1000 -> falling trend from 0.5 to 3 over 5 partitions
    parts = [
        (0, L(0, 1000, 0, 999, _hll(0, 1000))),
        (1, L(0, 1000, 500, 1499, _hll(500, 1500))),
        (3, L(0, 1000, 5000, 5999, _hll(5000, 6000))),
    ]
    out = aggregate_partition_stats("bigint", parts, num_partitions=5)
    merged = (
        NdvSketch.from_bytes(parts[0][1].bit_vector)
        .merged(NdvSketch.from_bytes(parts[1][1].bit_vector))
        .estimate()
    )
    assert abs(merged - 1500) < 50
    # ndv: min 1000 at index 3, max `merged` at 0.5 -> 1000 + (merged - 1000) * 3 / (3 - 0.5)
    assert out.num_dvs == int(1000 + (merged - 1000) * 3 / 2.5)
    # low: min 0 at 0.5, max 5000 at 3 -> 5000 - 5000 * 3 / 2.5
    assert out.low == int(5000 - 5000 * 3 / 2.5)
    assert out.high == int(1499 + (5999 - 1499) * (5 - 0.5) / 2.5)
    # without sketches each partition stands alone
    plain = [(i, L(s.num_nulls, s.num_dvs, s.low, s.high)) for i, s in parts]
    assert aggregate_partition_stats("bigint", plain, num_partitions=5).num_dvs == 1000


# ----------------------------------------------------------------------------------------------------- errors


def test_errors() -> None:
    with pytest.raises(InvalidInput, match="no partition statistics"):
        aggregate_partition_stats("bigint", [], num_partitions=3)
    with pytest.raises(InvalidInput, match="mix kinds: doubleStats, longStats"):
        aggregate_partition_stats(
            "bigint", [(0, L(0, 1, 1, 1)), (1, DoubleStats(num_nulls=0, num_dvs=1))], num_partitions=2
        )
    with pytest.raises(InvalidInput, match="a double column cannot aggregate longStats"):
        aggregate_partition_stats("double", [(0, L(0, 1, 1, 1))], num_partitions=1)
    with pytest.raises(InvalidInput, match="distinct and within 0..1"):
        aggregate_partition_stats("bigint", [(0, L(0, 1, 1, 1)), (0, L(0, 1, 1, 1))], num_partitions=2)
    with pytest.raises(InvalidInput, match="3 partition statistics given for 2"):
        aggregate_partition_stats("bigint", [(i, L(0, 1, 1, 1)) for i in range(3)], num_partitions=2)
