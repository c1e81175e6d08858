"""The batch form of get_aggr_stats_for's aggregation, as metastore.stats.aggregate computed it before it became
PartitionStatsAggregator (fed one partition at a time, fixed state): kept here only as the oracle the
aggregator must agree with on random partition statistics (tests/stats/test_aggregate_incremental.py)."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TypeVar

from metastore.errors import InvalidInput
from metastore.stats.kinds import FlatStats, KindSpec, ValueType, spec_of
from metastore.stats.kll import KllFormatError, kll_merge_all
from metastore.stats.merge import max_present, min_present
from metastore.stats.model import ColumnStats, kind_for_type
from metastore.stats.ndv import NdvFormatError, NdvSketch

Bound = int | float | Decimal
_O = TypeVar("_O", int, float)


def _java_long(x: float) -> int:
    """Java's ``(long) double``."""
    if math.isnan(x):
        return 0
    if x >= 9.223372036854775807e18:
        return (1 << 63) - 1
    if x <= -9.223372036854775808e18:
        return -(1 << 63)
    return int(x)


def _java_div(a: int, b: int) -> int:
    """Java's long division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _java_fdiv(a: float, b: float) -> float:
    """Java's double division, including x/0.0 = ±Infinity and 0/0 = NaN."""
    if b == 0.0:
        if a == 0.0 or math.isnan(a):
            return math.nan
        return math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


@dataclass
class _Point:
    """One partition, or one pseudo-partition of merged adjacent partitions, on the index axis."""

    index: float
    low: Bound | None
    high: Bound | None
    num_nulls: int
    num_dvs: int
    max_col_len: int = 0
    avg_col_len: float = 0.0


def aggregate_partition_stats(
    column_type: str,
    parts: Sequence[tuple[int, ColumnStats]],
    *,
    num_partitions: int,
    ndv_tuner: float = 0.0,
    use_density: bool = False,
) -> ColumnStats:
    """Table-wide statistics of one column from its partitions' statistics.

    ``parts`` holds ``(index, stats)`` for the partitions that have statistics, ``index`` being the
    partition's position among the ``num_partitions`` requested names. ``ndv_tuner`` is Hive's
    ``hive.metastore.stats.ndv.tuner`` and ``use_density`` its ``hive.metastore.stats.ndv.densityfunction``.
    """
    if not parts:
        raise InvalidInput(f"no partition statistics to aggregate for a {column_type} column")
    if num_partitions < len(parts):
        raise InvalidInput(
            f"{len(parts)} partition statistics given for {num_partitions} requested partitions"
        )
    indices = [i for i, _ in parts]
    if len(set(indices)) != len(indices) or min(indices) < 0 or max(indices) >= num_partitions:
        raise InvalidInput(
            f"partition indices must be distinct and within 0..{num_partitions - 1}, got {indices}"
        )
    ordered = sorted(parts, key=lambda p: p[0])
    spec = _common_spec(column_type, [s for _, s in ordered])
    stats = [spec.flatten(s) for _, s in ordered]

    if spec.has_booleans:
        return spec.build(
            num_nulls=sum(s.num_nulls for s in stats),
            num_trues=sum(s.num_trues or 0 for s in stats),
            num_falses=sum(s.num_falses or 0 for s in stats),
        )
    if not spec.has_ndv:  # binary: lengths only
        return spec.build(
            num_nulls=sum(s.num_nulls for s in stats),
            max_col_len=max(s.max_col_len or 0 for s in stats),
            avg_col_len=max(s.avg_col_len or 0.0 for s in stats),
        )

    sketches = _mergeable_sketches(stats)
    if len(ordered) == num_partitions or len(ordered) < 2:
        return _aggregate_all_found(spec, stats, sketches, num_partitions, ndv_tuner, use_density)
    indexed = [(float(i), s) for (i, _), s in zip(ordered, stats, strict=True)]
    return _extrapolate(spec, indexed, sketches, num_partitions, use_density)


def _common_spec(column_type: str, stats: list[ColumnStats]) -> KindSpec:
    expected = kind_for_type(column_type)
    try:
        specs = {spec_of(s) for s in stats}
    except TypeError:
        raise InvalidInput("partition statistics must be typed column statistics") from None
    if len(specs) > 1:
        names = ", ".join(sorted(s.union_member for s in specs))
        raise InvalidInput(f"partition statistics of a {column_type} column mix kinds: {names}")
    (spec,) = specs
    if expected is not None and spec.kind is not expected:
        raise InvalidInput(f"a {column_type} column cannot aggregate {spec.union_member}")
    return spec


def _mergeable_sketches(stats: list[FlatStats]) -> list[NdvSketch] | None:
    """Every partition's sketch, if all have a readable one and all can merge with each other."""
    sketches = []
    for s in stats:
        if not s.bit_vector:
            return None
        try:
            sketches.append(NdvSketch.from_bytes(s.bit_vector))
        except NdvFormatError:
            return None
    if not all(sketches[0].can_merge(other) for other in sketches[1:]):
        return None
    return sketches


def _union(sketches: Sequence[NdvSketch]) -> NdvSketch:
    """The union of mergeable sketches (HLLs meet at the smallest p)."""
    result = sketches[0]
    for other in sketches[1:]:
        result = result.merged(other)
    return result


def _span(spec: KindSpec, low: Bound, high: Bound) -> float | int:
    """``high - low`` in the arithmetic Hive uses for the kind (long for integer kinds)."""
    if spec.values is ValueType.INTEGER:
        return int(high) - int(low)
    return float(high) - float(low)


def _density(spec: KindSpec, low: Bound | None, high: Bound | None, ndv: int) -> float | None:
    """One partition's ``(high - low) / numDVs`` (long division for integer kinds), None if undefined."""
    if low is None or high is None or ndv == 0:
        return None
    span = _span(spec, low, high)
    if spec.values is ValueType.INTEGER:
        return float(_java_div(int(span), ndv))
    return span / ndv


def _merge_histograms(stats: list[FlatStats]) -> bytes | None:
    blobs = [s.histogram for s in stats]
    present = [b for b in blobs if b]
    if not present or len(present) != len(blobs):
        return None
    try:
        return kll_merge_all(present)
    except KllFormatError:
        return None


def _lowest(values: list[Bound | None]) -> Bound | None:
    result: Bound | None = None
    for v in values:
        result = min_present(result, v)
    return result


def _highest(values: list[Bound | None]) -> Bound | None:
    result: Bound | None = None
    for v in values:
        result = max_present(result, v)
    return result


def _aggregate_all_found(
    spec: KindSpec,
    stats: list[FlatStats],
    sketches: list[NdvSketch] | None,
    num_partitions: int,
    ndv_tuner: float,
    use_density: bool,
) -> ColumnStats:
    num_nulls = sum(s.num_nulls for s in stats)
    ndvs = [s.num_dvs or 0 for s in stats]
    lower, higher = max(ndvs), sum(ndvs)
    bit_vector = None
    num_dvs: int | None
    if sketches is not None:
        union = _union(sketches)
        num_dvs = union.estimate()
        bit_vector = union.to_bytes()
    elif spec.values is None:  # strings
        num_dvs = lower
    else:
        num_dvs = None
    if spec.values is None:
        return spec.build(
            num_nulls=num_nulls,
            num_dvs=num_dvs,
            bit_vector=bit_vector,
            max_col_len=max(s.max_col_len or 0 for s in stats),
            avg_col_len=max(s.avg_col_len or 0.0 for s in stats),
        )
    low = _lowest([s.low for s in stats])
    high = _highest([s.high for s in stats])
    if num_dvs is None:
        if use_density and low is not None and high is not None:
            densities = [_density(spec, s.low, s.high, s.num_dvs or 0) for s in stats]
            density_avg = sum(d for d in densities if d is not None) / num_partitions
            estimate = _java_long(_java_fdiv(float(_span(spec, low, high)), density_avg))
            num_dvs = min(max(estimate, lower), higher)
        else:
            num_dvs = _java_long(lower + (higher - lower) * ndv_tuner)
    return spec.build(
        num_nulls=num_nulls,
        num_dvs=num_dvs,
        bit_vector=bit_vector,
        histogram=_merge_histograms(stats),
        low=low,
        high=high,
    )


def _points(
    spec: KindSpec, indexed: list[tuple[float, FlatStats]], sketches: list[NdvSketch] | None
) -> list[_Point]:
    """The (pseudo-)partitions extrapolation works on, in index order."""
    is_string = spec.values is None
    if sketches is None:
        return [
            _Point(
                index=i,
                low=s.low,
                high=s.high,
                num_nulls=s.num_nulls,
                num_dvs=s.num_dvs or 0,
                max_col_len=(s.max_col_len or 0) if is_string else 0,
                avg_col_len=(s.avg_col_len or 0.0) if is_string else 0.0,
            )
            for i, s in indexed
        ]
    runs: list[list[int]] = []
    for pos, (index, _) in enumerate(indexed):
        if runs and indexed[runs[-1][-1]][0] + 1 == index:
            runs[-1].append(pos)
        else:
            runs.append([pos])
    points = []
    for run in runs:
        members = [indexed[pos][1] for pos in run]
        points.append(
            _Point(
                index=sum(indexed[pos][0] for pos in run) / len(run),
                low=None if is_string else _lowest([m.low for m in members]),
                high=None if is_string else _highest([m.high for m in members]),
                num_nulls=sum(m.num_nulls for m in members),
                num_dvs=_union([sketches[pos] for pos in run]).estimate(),
                max_col_len=max(m.max_col_len or 0 for m in members) if is_string else 0,
                avg_col_len=max(m.avg_col_len or 0.0 for m in members) if is_string else 0.0,
            )
        )
    return points


def _extreme_points(points: list[_Point], value: Callable[[_Point], Bound | None]) -> tuple[_Point, _Point] | None:
    """The points holding the smallest and the largest ``value`` among those that have it, sorted by value
    (stable: ties keep index order)."""
    keyed: list[tuple[Bound, int, _Point]] = []
    for order, p in enumerate(points):
        v = value(p)
        if v is not None:
            keyed.append((v, order, p))
    if not keyed:
        return None
    keyed.sort(key=lambda item: (item[0], item[1]))
    return keyed[0][2], keyed[-1][2]


def _extreme_line(points: list[_Point], value: Callable[[_Point], _O]) -> tuple[float, float, _O, _O]:
    """(minInd, maxInd, min, max) of a value every point has, over the points sorted by it (stable)."""
    found = _extreme_points(points, value)
    assert found is not None  # every point has the value
    first, last = found
    return first.index, last.index, value(first), value(last)


def _extrapolate_high(min_ind: float, max_ind: float, lo: float, hi: float, num_parts: int) -> float:
    if min_ind == max_ind:
        return lo
    if min_ind < max_ind:
        return lo + (hi - lo) * (num_parts - min_ind) / (max_ind - min_ind)
    return lo + (hi - lo) * min_ind / (min_ind - max_ind)


def _line(
    spec: KindSpec, points: list[_Point], value: Callable[[_Point], Bound | None], num_parts: int, *, upper: bool
) -> Bound | None:
    """Extrapolated low (``upper=False``) or high value, linear in the index through the extreme points."""
    found = _extreme_points(points, value)
    if found is None:
        return None
    first, last = found
    min_ind, max_ind = first.index, last.index
    lo, hi = value(first), value(last)
    assert lo is not None and hi is not None
    if min_ind == max_ind:
        return lo  # nothing to extrapolate: the value itself
    long_kind = spec.values is ValueType.INTEGER
    # Java evaluates (max - min) in the value type, then mixes in the double index.
    diff = float(int(hi) - int(lo)) if long_kind else float(hi) - float(lo)
    lo_f = float(lo)
    hi_f = float(hi)
    if upper:
        if min_ind < max_ind:
            x = lo_f + diff * (num_parts - min_ind) / (max_ind - min_ind)
        else:
            x = lo_f + diff * min_ind / (min_ind - max_ind)
    elif min_ind < max_ind:
        x = hi_f - diff * max_ind / (max_ind - min_ind)
    else:
        x = hi_f - diff * (num_parts - max_ind) / (min_ind - max_ind)
    if long_kind:
        return _java_long(x)
    if spec.values is ValueType.DECIMAL:
        return Decimal(repr(x))
    return x


def _extrapolate(
    spec: KindSpec,
    indexed: list[tuple[float, FlatStats]],
    sketches: list[NdvSketch] | None,
    num_parts: int,
    use_density: bool,
) -> ColumnStats:
    points = _points(spec, indexed, sketches)
    num_with_stats = len(indexed)
    num_nulls = sum(p.num_nulls for p in points) * num_parts // num_with_stats

    # NDV bounds and the linear fallback, over the points sorted by NDV.
    by_ndv = sorted(points, key=lambda p: p.num_dvs)
    lower, higher = by_ndv[-1].num_dvs, sum(p.num_dvs for p in points)
    first, last = by_ndv[0], by_ndv[-1]
    linear_ndv = _java_long(
        _extrapolate_high(first.index, last.index, float(first.num_dvs), float(last.num_dvs), num_parts)
        if first.index != last.index
        else float(first.num_dvs)
    )

    if spec.values is None:  # strings
        avg_col_len = _extrapolate_high(*_extreme_line(points, lambda p: p.avg_col_len), num_parts)
        min_ind, max_ind, lo_len, hi_len = _extreme_line(points, lambda p: p.max_col_len)
        max_col_len = _java_long(_extrapolate_high(min_ind, max_ind, float(lo_len), float(hi_len), num_parts))
        return spec.build(
            num_nulls=num_nulls,
            num_dvs=linear_ndv,
            max_col_len=max_col_len,
            avg_col_len=avg_col_len,
        )

    low = _line(spec, points, lambda p: p.low, num_parts, upper=False)
    high = _line(spec, points, lambda p: p.high, num_parts, upper=True)
    num_dvs = linear_ndv
    if use_density and low is not None and high is not None:
        densities = [_density(spec, p.low, p.high, p.num_dvs) for p in points]
        density_avg = sum(d for d in densities if d is not None) / len(points)
        if density_avg != 0.0:
            estimate = _java_long(_java_fdiv(float(_span(spec, low, high)), density_avg))
            num_dvs = min(max(estimate, lower), higher)
    return spec.build(num_nulls=num_nulls, num_dvs=num_dvs, low=low, high=high)
