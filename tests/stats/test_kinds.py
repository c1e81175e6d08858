"""The per-kind table: one spec per StatsKind, build/flatten round trips, lookups by member name."""

from __future__ import annotations

from decimal import Decimal

import pytest

from metastore.stats.kinds import KIND_SPECS, FlatStats, ValueType, spec_for, spec_for_member, spec_of
from metastore.stats.model import STATS_CLASSES, ColumnStats, DecimalStats, StatsKind, StringStats

_SAMPLE_VALUES = {ValueType.INTEGER: (3, 9), ValueType.FLOAT: (0.5, 2.5), ValueType.DECIMAL: (Decimal("1.25"), Decimal("7.5"))}


def test_every_kind_has_exactly_one_spec_matching_the_model() -> None:
    assert set(KIND_SPECS) == set(StatsKind)
    for kind, spec in KIND_SPECS.items():
        assert spec.kind is kind
        assert spec.stats_class is STATS_CLASSES[kind]
        assert spec_for(kind) is spec
        assert spec_for_member(spec.union_member) is spec
    assert spec_for_member("timestampStats") is KIND_SPECS[StatsKind.TIMESTAMP]
    assert spec_for_member("nope") is None
    assert len({s.union_member for s in KIND_SPECS.values()}) == len(StatsKind)


@pytest.mark.parametrize("kind", list(StatsKind))
def test_build_then_flatten_round_trips(kind: StatsKind) -> None:
    spec = KIND_SPECS[kind]
    low, high = _SAMPLE_VALUES[spec.values] if spec.values is not None else (None, None)
    stats = spec.build(num_nulls=4, bit_vector=b"HLLx", num_dvs=7, histogram=b"kll", low=low, high=high,
                       num_trues=2, num_falses=5, max_col_len=11, avg_col_len=3.5)
    assert type(stats) is spec.stats_class
    assert spec_of(stats) is spec
    flat = spec.flatten(stats)
    assert isinstance(flat, FlatStats)
    assert flat.num_nulls == 4 and flat.bit_vector == b"HLLx"
    # a field the kind lacks is None in the flat form, one it has carries the value
    assert (flat.num_dvs == 7) is spec.has_ndv and (flat.num_dvs is None) is not spec.has_ndv
    assert (flat.histogram == b"kll") is spec.has_histogram
    assert (flat.max_col_len == 11) is spec.has_lengths
    assert (flat.num_trues == 2) is spec.has_booleans
    assert (flat.low, flat.high) == (low, high)
    assert spec.build(**vars(flat)) == stats


def test_build_fills_missing_counts_with_zero() -> None:
    assert KIND_SPECS[StatsKind.STRING].build(num_nulls=1) == StringStats(
        num_nulls=1, num_dvs=0, max_col_len=0, avg_col_len=0.0
    )
    assert KIND_SPECS[StatsKind.DECIMAL].build(num_nulls=0, num_dvs=2) == DecimalStats(num_nulls=0, num_dvs=2)


def test_untyped_stats_have_no_spec() -> None:
    with pytest.raises(TypeError, match="not typed column statistics"):
        spec_of(ColumnStats(num_nulls=0))
