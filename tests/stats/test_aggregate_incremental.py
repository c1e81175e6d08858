"""PartitionStatsAggregator (one partition at a time, fixed state: get_aggr_stats_for over 100,000 partitions
in batches) gives exactly the answer of the batch aggregation it replaced (tests/stats/aggregate_oracle.py) on
random partition statistics: every kind, missing partitions (extrapolation), sketches present, absent, of
different precisions, FM, unreadable, histograms, the NDV tuner and the density function."""

from __future__ import annotations

from decimal import Decimal

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from stats.aggregate_oracle import aggregate_partition_stats as oracle

from metastore.errors import InvalidInput
from metastore.stats.aggregate import PartitionStatsAggregator, aggregate_partition_stats
from metastore.stats.fmsketch import FMSketch
from metastore.stats.kll import histogram_for
from metastore.stats.model import (
    BinaryStats,
    BooleanStats,
    ColumnStats,
    DateStats,
    DecimalStats,
    DoubleStats,
    LongStats,
    StatsKind,
    StringStats,
    TimestampStats,
)
from metastore.stats.ndv import NdvSketch

TYPES = ["bigint", "double", "decimal(12,2)", "date", "timestamp", "string", "boolean", "binary"]


def _hll(start: int, count: int, p: int) -> bytes:
    sketch = NdvSketch(p=p)
    sketch.add_longs(np.arange(start, start + count))
    return sketch.to_bytes()


@st.composite
def _bit_vector(draw: st.DrawFn, mode: str) -> bytes | None:
    if mode == "none" or (mode == "some" and draw(st.booleans())):
        return None
    kind = draw(st.sampled_from(["hll10", "hll14", "hll10", "fm", "garbage"] if mode == "mixed" else ["hll10"]))
    if kind == "fm":
        return FMSketch(8).to_bytes()
    if kind == "garbage":
        return b"HLLnot a sketch"
    return _hll(draw(st.integers(0, 3000)), draw(st.integers(1, 300)), 10 if kind == "hll10" else 14)


@st.composite
def _stats(draw: st.DrawFn, column_type: str, sketches: str, histograms: bool) -> ColumnStats:
    nulls = draw(st.integers(0, 50))
    ndv = draw(st.integers(0, 400))
    bv = draw(_bit_vector(sketches))
    if column_type == "boolean":
        return BooleanStats(num_nulls=nulls, num_trues=draw(st.integers(0, 99)), num_falses=draw(st.integers(0, 99)))
    if column_type in ("string", "binary"):
        max_len = draw(st.integers(0, 500))
        avg = draw(st.integers(0, max_len * 4)) / 4.0
        if column_type == "binary":
            return BinaryStats(num_nulls=nulls, max_col_len=max_len, avg_col_len=avg)
        return StringStats(num_nulls=nulls, num_dvs=ndv, bit_vector=bv, max_col_len=max_len, avg_col_len=avg)
    low = high = None
    if draw(st.integers(0, 9)):
        a, b = draw(st.integers(-10**6, 10**6)), draw(st.integers(-10**6, 10**6))
        low, high = min(a, b), max(a, b)
    hist = None
    if histograms and low is not None and draw(st.integers(0, 5)):
        hist = histogram_for(StatsKind.LONG, [low, high, (low + high) // 2])
    if column_type == "double":
        lo, hi = (None, None) if low is None else (low / 7.0, low / 7.0 + (high - low) / 3.0)
        return DoubleStats(num_nulls=nulls, num_dvs=ndv, bit_vector=bv, histogram=hist, low=lo, high=hi)
    if column_type.startswith("decimal"):
        dlo, dhi = (None, None) if low is None else (Decimal(low).scaleb(-2), Decimal(high).scaleb(-2))
        return DecimalStats(num_nulls=nulls, num_dvs=ndv, bit_vector=bv, low=dlo, high=dhi)
    cls = {"bigint": LongStats, "date": DateStats, "timestamp": TimestampStats}[column_type]
    return cls(num_nulls=nulls, num_dvs=ndv, bit_vector=bv, histogram=hist, low=low, high=high)


@st.composite
def _case(draw: st.DrawFn) -> tuple[str, list[tuple[int, ColumnStats]], int, float, bool]:
    column_type = draw(st.sampled_from(TYPES))
    num_partitions = draw(st.integers(1, 14))
    present = draw(st.sampled_from([1.0, 1.0, 0.8, 0.5, 0.2]))
    indices = [i for i in range(num_partitions) if draw(st.floats(0, 1)) < present] or [0]
    sketches = draw(st.sampled_from(["all", "all", "none", "some", "mixed"]))
    histograms = draw(st.booleans())
    parts = [(i, draw(_stats(column_type, sketches, histograms))) for i in indices]
    return column_type, parts, num_partitions, draw(st.sampled_from([0.0, 0.5, 1.0])), draw(st.booleans())


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_case())
def test_incremental_aggregation_equals_the_batch_oracle(case: tuple) -> None:
    column_type, parts, num_partitions, tuner, density = case
    options = {"num_partitions": num_partitions, "ndv_tuner": tuner, "use_density": density}
    assert aggregate_partition_stats(column_type, parts, **options) == oracle(column_type, parts, **options)


def test_partitions_must_come_in_index_order() -> None:
    aggregator = PartitionStatsAggregator("bigint", num_partitions=3)
    aggregator.add(1, LongStats(num_nulls=0, num_dvs=1, low=1, high=1))
    with pytest.raises(InvalidInput, match="must follow 1"):
        aggregator.add(1, LongStats(num_nulls=0, num_dvs=1, low=1, high=1))
    with pytest.raises(InvalidInput, match="below 3"):
        aggregator.add(3, LongStats(num_nulls=0, num_dvs=1, low=1, high=1))


def test_mixed_kinds_are_named_as_before() -> None:
    parts: list[tuple[int, ColumnStats]] = [
        (0, LongStats(num_nulls=0, num_dvs=1, low=1, high=1)),
        (1, DoubleStats(num_nulls=0, num_dvs=1, low=1.0, high=1.0)),
        (2, StringStats(num_nulls=0, num_dvs=1, max_col_len=1, avg_col_len=1.0)),
    ]
    with pytest.raises(InvalidInput) as got:
        aggregate_partition_stats("bigint", parts, num_partitions=3)
    with pytest.raises(InvalidInput) as want:
        oracle("bigint", parts, num_partitions=3)
    assert str(got.value) == str(want.value)
