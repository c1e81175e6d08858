"""Merge-on-write (Hive's needMerge): every field rule, sketches, histograms, and properties."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from metastore.errors import InvalidInput
from metastore.stats.fmsketch import FMSketch
from metastore.stats.kll import histogram_for, kll_from_bytes
from metastore.stats.merge import merge_ndv, merge_stats
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


def test_long_fields() -> None:
    old = LongStats(num_nulls=2, num_dvs=10, low=5, high=50)
    new = LongStats(num_nulls=3, num_dvs=40, low=-1, high=20)
    assert merge_stats(old, new) == LongStats(num_nulls=5, num_dvs=40, low=-1, high=50)


def test_unset_bounds_take_the_other_side() -> None:
    old = DoubleStats(num_nulls=0, num_dvs=1, low=None, high=None)
    new = DoubleStats(num_nulls=0, num_dvs=1, low=1.5, high=None)
    merged = merge_stats(old, new)
    assert (merged.low, merged.high) == (1.5, None)


def test_other_range_kinds() -> None:
    assert merge_stats(
        DecimalStats(num_nulls=1, num_dvs=2, low=Decimal("1.5"), high=Decimal("9.99")),
        DecimalStats(num_nulls=1, num_dvs=3, low=Decimal("-2"), high=Decimal("3")),
    ) == DecimalStats(num_nulls=2, num_dvs=3, low=Decimal("-2"), high=Decimal("9.99"))
    assert merge_stats(
        DateStats(num_nulls=0, num_dvs=2, low=100, high=200),
        DateStats(num_nulls=4, num_dvs=1, low=150, high=300),
    ) == DateStats(num_nulls=4, num_dvs=2, low=100, high=300)
    assert merge_stats(
        TimestampStats(num_nulls=0, num_dvs=2, low=10, high=20),
        TimestampStats(num_nulls=0, num_dvs=7, low=1, high=2),
    ) == TimestampStats(num_nulls=0, num_dvs=7, low=1, high=20)


def test_boolean_counts_are_summed() -> None:
    merged = merge_stats(
        BooleanStats(num_nulls=1, num_trues=2, num_falses=3),
        BooleanStats(num_nulls=4, num_trues=5, num_falses=6),
    )
    assert merged == BooleanStats(num_nulls=5, num_trues=7, num_falses=9)


def test_string_and_binary_lengths_take_max() -> None:
    merged = merge_stats(
        StringStats(num_nulls=1, num_dvs=10, max_col_len=8, avg_col_len=3.0),
        StringStats(num_nulls=1, num_dvs=4, max_col_len=5, avg_col_len=4.5),
    )
    assert merged == StringStats(num_nulls=2, num_dvs=10, max_col_len=8, avg_col_len=4.5)
    merged = merge_stats(
        BinaryStats(num_nulls=0, max_col_len=2, avg_col_len=2.0),
        BinaryStats(num_nulls=3, max_col_len=9, avg_col_len=1.0),
    )
    assert merged == BinaryStats(num_nulls=3, max_col_len=9, avg_col_len=2.0)


def test_kinds_must_match() -> None:
    with pytest.raises(
        InvalidInput, match=r"column 'x' of t: cannot merge doubleStats into stored longStats"
    ):
        merge_stats(
            LongStats(num_nulls=0, num_dvs=0), DoubleStats(num_nulls=0, num_dvs=0), where="column 'x' of t"
        )
    with pytest.raises(InvalidInput, match="cannot merge timestampStats into stored dateStats"):
        merge_stats(DateStats(num_nulls=0, num_dvs=0), TimestampStats(num_nulls=0, num_dvs=0))


def test_ndv_with_both_sketches_uses_the_merged_sketch() -> None:
    a, b = _hll(0, 3000), _hll(2000, 5000)
    merged = merge_stats(
        LongStats(num_nulls=0, num_dvs=3000, bit_vector=a), LongStats(num_nulls=0, num_dvs=3000, bit_vector=b)
    )
    union = NdvSketch.from_bytes(a).merged(NdvSketch.from_bytes(b))
    assert merged.num_dvs == union.estimate()
    assert abs(merged.num_dvs - 5000) < 150
    assert merged.bit_vector == union.to_bytes()


def test_ndv_sketch_only_on_one_side() -> None:
    b = _hll(0, 800)
    # only the new side: max(old numDVs, new sketch's estimate), the new sketch is kept
    assert merge_ndv(900, None, 5, b) == (900, b)
    assert merge_ndv(10, None, 5, b) == (800, b)
    # only the old side: max of the numDVs, the old sketch is kept
    assert merge_ndv(10, b, 900, None) == (900, b)
    assert merge_ndv(10, None, 20, None) == (20, None)


def test_ndv_sketches_that_cannot_merge_fall_back_to_max() -> None:
    hll, fm = _hll(0, 100), FMSketch(16).to_bytes()
    assert merge_ndv(100, hll, 7, fm) == (100, hll)
    assert merge_ndv(3, FMSketch(8).to_bytes(), 7, fm) == (7, FMSketch(8).to_bytes())
    assert merge_ndv(3, b"junk", 7, None) == (7, b"junk")


def test_hll_of_different_p_meet_at_the_smaller() -> None:
    ndv, bv = merge_ndv(1000, _hll(0, 1000, p=14), 1000, _hll(500, 1500, p=10))
    assert bv is not None and NdvSketch.from_bytes(bv).sketch.p == 10
    assert abs(ndv - 1500) / 1500 < 0.1


def test_histograms_merge() -> None:
    h1 = histogram_for(StatsKind.LONG, [1, 2, 3])
    h2 = histogram_for(StatsKind.LONG, [10, 20])
    merged = merge_stats(
        LongStats(num_nulls=0, num_dvs=3, histogram=h1), LongStats(num_nulls=0, num_dvs=2, histogram=h2)
    )
    sketch = kll_from_bytes(merged.histogram)
    assert (sketch.n, sketch.get_min_value(), sketch.get_max_value()) == (5, 1.0, 20.0)
    only_new = merge_stats(LongStats(num_nulls=0, num_dvs=3), LongStats(num_nulls=0, num_dvs=2, histogram=h2))
    assert only_new.histogram == h2
    only_old = merge_stats(LongStats(num_nulls=0, num_dvs=3, histogram=h1), LongStats(num_nulls=0, num_dvs=2))
    assert only_old.histogram == h1


optional_int = st.none() | st.integers(min_value=-(10**12), max_value=10**12)
long_stats = st.builds(
    LongStats,
    num_nulls=st.integers(min_value=0, max_value=10**9),
    num_dvs=st.integers(min_value=0, max_value=10**9),
    low=optional_int,
    high=optional_int,
)


@settings(max_examples=60, deadline=None)
@given(a=long_stats, b=long_stats)
def test_merge_is_commutative_on_counts_and_bounds(a: LongStats, b: LongStats) -> None:
    ab, ba = merge_stats(a, b), merge_stats(b, a)
    assert ab.num_nulls == ba.num_nulls == a.num_nulls + b.num_nulls
    assert ab.num_dvs == ba.num_dvs == max(a.num_dvs, b.num_dvs)
    assert ab.low == ba.low and ab.high == ba.high
    lows = [v for v in (a.low, b.low) if v is not None]
    highs = [v for v in (a.high, b.high) if v is not None]
    assert ab.low == (min(lows) if lows else None)
    assert ab.high == (max(highs) if highs else None)


@settings(max_examples=30, deadline=None)
@given(
    a=st.lists(st.integers(min_value=0, max_value=5000), max_size=300),
    b=st.lists(st.integers(min_value=0, max_value=5000), max_size=300),
)
def test_sketch_merge_is_commutative_and_counts_the_union(a: list[int], b: list[int]) -> None:
    def stats(values: list[int]) -> LongStats:
        s = NdvSketch()
        s.add_longs(values)
        return LongStats(num_nulls=0, num_dvs=len(set(values)), bit_vector=s.to_bytes())

    ab, ba = merge_stats(stats(a), stats(b)), merge_stats(stats(b), stats(a))
    # small sets are counted exactly in sparse mode; Hive reports at least 1
    assert ab.num_dvs == ba.num_dvs == max(1, len(set(a) | set(b)))
    assert NdvSketch.from_bytes(ab.bit_vector).estimate() == ab.num_dvs


@settings(max_examples=40, deadline=None)
@given(
    a=st.tuples(*(st.integers(min_value=0, max_value=10**6) for _ in range(3))),
    b=st.tuples(*(st.integers(min_value=0, max_value=10**6) for _ in range(3))),
)
def test_boolean_merge_is_commutative(a: tuple[int, int, int], b: tuple[int, int, int]) -> None:
    sa = BooleanStats(num_nulls=a[0], num_trues=a[1], num_falses=a[2])
    sb = BooleanStats(num_nulls=b[0], num_trues=b[1], num_falses=b[2])
    assert merge_stats(sa, sb) == merge_stats(sb, sa)
