"""Aggregation of partition statistics into one column's table-wide statistics (``get_aggr_stats_for``).

This mirrors Hive's Java aggregation path, ``MetaStoreServerUtils.aggrPartitionStats`` with the per-kind
``columnstats/aggr/{Boolean,Long,Double,Decimal,Date,Timestamp,String,Binary}ColumnStatsAggregator.java``
and their ``extrapolate`` methods (``IExtrapolatePartStatus``). The formulas, their integer/floating-point
arithmetic and their corner cases follow those classes; the docstrings below say what they compute.

When every requested partition has statistics (or fewer than two have):

- numNulls, numTrues, numFalses are summed; low = min, high = max; maxColLen and avgColLen take the max;
- NDV: if every partition carries a readable sketch and all can merge (all HLL, or FM with equal vector
  counts), the estimate of their union; otherwise, for range kinds, either the density estimate
  ``(high - low) / avg((high_i - low_i) / ndv_i)`` clamped to ``[max ndv_i, sum ndv_i]`` (with
  ``use_density``; the average divides by the number of requested partitions), or
  ``max ndv_i + (sum ndv_i - max ndv_i) * ndv_tuner``; strings just take ``max ndv_i``.

When some are missing and at least two have statistics, range and string kinds are extrapolated over the
partition index (the position in the requested name list, 0-based, the right border being the number of
requested partitions):

- with mergeable sketches everywhere, runs of adjacent partitions are first merged into pseudo-partitions
  (index = mean of the run's indices, NDV = estimate of the run's merged sketch);
- low/high (and string avgColLen/maxColLen) are linear in the index through the partitions holding the
  extreme values; numNulls = sum * requested / found (integer division);
- NDV from the density (``use_density``) clamped as above, else linear through the extreme NDVs.

Deviations from Hive, on purpose:

- sketches are merged at the smallest p among them, where Hive squashes everything to p=10, so p=14
  sketches keep their accuracy (Hive-written p=10 sketches give Hive's numbers);
- ties among equal extreme values are broken by partition index, where Hive's order comes from a
  ``HashMap`` of partition names;
- partitions with no low/high or with numDVs = 0 are left out of density sums (Hive would divide by zero
  or read unset values as 0), and low/high extrapolation only uses partitions that have them;
- the string extrapolation uses maxColLen values for maxColLen (Hive's code reuses the avgColLen values).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

from metastore.errors import InvalidInput
from metastore.stats.java_math import java_div, java_fdiv, java_long
from metastore.stats.kinds import FlatStats, KindSpec, ValueType, spec_of
from metastore.stats.kll import KllFormatError, kll_from_bytes
from metastore.stats.merge import max_present, min_present
from metastore.stats.model import ColumnStats, kind_for_type
from metastore.stats.ndv import NdvFormatError, NdvSketch

__all__ = ["PartitionStatsAggregator", "aggregate_partition_stats"]

Bound = int | float | Decimal


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
    aggregator = PartitionStatsAggregator(
        column_type, num_partitions=num_partitions, ndv_tuner=ndv_tuner, use_density=use_density
    )
    for index, stats in sorted(parts, key=lambda p: p[0]):
        aggregator.add(index, stats)
    return aggregator.result()


class _Extremes:
    """The points holding the smallest and the largest of one value, as a stable sort by the value would
    give them: the first point among equal smallest values, the last among equal largest ones."""

    __slots__ = ("high", "high_index", "low", "low_index")

    def __init__(self) -> None:
        self.low: Bound | None = None
        self.low_index = 0.0
        self.high: Bound | None = None
        self.high_index = 0.0

    def add(self, index: float, value: Bound | None) -> None:
        if value is None:
            return
        if self.low is None or value < self.low:
            self.low, self.low_index = value, index
        if self.high is None or value >= self.high:
            self.high, self.high_index = value, index


class _Points:
    """What extrapolation needs of a sequence of (pseudo-)partitions, kept as they arrive in index order: the
    extreme points of each value, the sums and the number of points (never the points themselves)."""

    __slots__ = ("avg_len", "count", "density_sum", "high", "low", "max_len", "ndv", "ndv_sum", "spec")

    def __init__(self, spec: KindSpec) -> None:
        self.spec = spec
        self.count = 0
        self.ndv = _Extremes()
        self.ndv_sum = 0
        self.low = _Extremes()
        self.high = _Extremes()
        self.avg_len = _Extremes()
        self.max_len = _Extremes()
        # Left to right, as Java (and Python < 3.12's sum()) adds doubles.
        self.density_sum = 0.0

    def add(self, p: _Point) -> None:
        self.count += 1
        self.ndv.add(p.index, p.num_dvs)
        self.ndv_sum += p.num_dvs
        if self.spec.values is None:  # strings
            self.avg_len.add(p.index, p.avg_col_len)
            self.max_len.add(p.index, p.max_col_len)
            return
        self.low.add(p.index, p.low)
        self.high.add(p.index, p.high)
        density = _density(self.spec, p.low, p.high, p.num_dvs)
        if density is not None:
            self.density_sum += density


class _Run:
    """Adjacent partitions (consecutive indices) with mergeable sketches, merged into one pseudo-partition."""

    __slots__ = ("avg_len", "count", "high", "index_sum", "last", "low", "max_len", "nulls", "sketch")

    def __init__(self, index: int, flat: FlatStats, sketch: NdvSketch, is_string: bool) -> None:
        self.last = index
        self.index_sum = float(index)
        self.count = 1
        self.low = None if is_string else flat.low
        self.high = None if is_string else flat.high
        self.nulls = flat.num_nulls
        self.sketch = sketch
        self.max_len = (flat.max_col_len or 0) if is_string else 0
        self.avg_len = (flat.avg_col_len or 0.0) if is_string else 0.0

    def extend(self, index: int, flat: FlatStats, sketch: NdvSketch, is_string: bool) -> None:
        self.last = index
        self.index_sum += float(index)
        self.count += 1
        if not is_string:
            self.low = min_present(self.low, flat.low)
            self.high = max_present(self.high, flat.high)
        self.nulls += flat.num_nulls
        self.sketch = self.sketch.merged(sketch)
        if is_string:
            self.max_len = max(self.max_len, flat.max_col_len or 0)
            self.avg_len = max(self.avg_len, flat.avg_col_len or 0.0)

    def point(self) -> _Point:
        return _Point(
            index=self.index_sum / self.count, low=self.low, high=self.high, num_nulls=self.nulls,
            num_dvs=self.sketch.estimate(), max_col_len=self.max_len, avg_col_len=self.avg_len,
        )


class PartitionStatsAggregator:
    """aggregate_partition_stats fed one partition at a time, in index order, holding a fixed amount of state
    whatever the number of partitions (sketches are merged as they arrive): get_aggr_stats_for over 100,000
    partitions reads them in batches. The answer is aggregate_partition_stats' for the same partitions."""

    def __init__(
        self, column_type: str, *, num_partitions: int, ndv_tuner: float = 0.0, use_density: bool = False
    ) -> None:
        self.column_type = column_type
        self.num_partitions = num_partitions
        self.ndv_tuner = ndv_tuner
        self.use_density = use_density
        self._spec: KindSpec | None = None
        self._members: set[str] = set()  # union members seen: more than one is an error, raised by result()
        self._untyped = False
        self._last_index = -1
        self._count = 0
        self._num_nulls = 0
        self._num_trues = 0
        self._num_falses = 0
        self._max_col_len = 0
        self._avg_col_len = 0.0
        self._ndv_max = 0
        self._ndv_sum = 0
        self._low: Bound | None = None
        self._high: Bound | None = None
        # Sketches: all readable and mergeable so far (else None from then on), their union, the current run.
        self._sketches_ok = True
        self._first_sketch: NdvSketch | None = None
        self._union: NdvSketch | None = None
        self._run: _Run | None = None
        self._runs: _Points | None = None
        self._each: _Points | None = None
        # KLL histograms: all present and readable so far, merged.
        self._histograms_ok = True
        self._histogram: Any = None

    def add(self, index: int, stats: ColumnStats) -> None:
        """One partition's statistics; `index` (its position among the requested names) must grow."""
        if not self._last_index < index < self.num_partitions:
            raise InvalidInput(
                f"partition index {index} must follow {self._last_index} and be below {self.num_partitions}"
            )
        self._last_index = index
        try:
            spec = spec_of(stats)
        except TypeError:
            self._untyped = True
            return
        self._members.add(spec.union_member)
        if self._spec is None:
            self._spec = spec
            self._each = _Points(spec)
            self._runs = _Points(spec)
        elif spec is not self._spec:
            return  # kinds mix: result() says so
        self._count += 1
        flat = spec.flatten(stats)
        self._num_nulls += flat.num_nulls
        if spec.has_booleans:
            self._num_trues += flat.num_trues or 0
            self._num_falses += flat.num_falses or 0
            return
        if spec.has_lengths:
            self._max_col_len = max(self._max_col_len, flat.max_col_len or 0)
            self._avg_col_len = max(self._avg_col_len, flat.avg_col_len or 0.0)
        if not spec.has_ndv:  # binary: lengths only
            return
        is_string = spec.values is None
        ndv = flat.num_dvs or 0
        self._ndv_max = max(self._ndv_max, ndv)
        self._ndv_sum += ndv
        if not is_string:
            self._low = min_present(self._low, flat.low)
            self._high = max_present(self._high, flat.high)
            self._add_histogram(flat.histogram)
        assert self._each is not None
        self._each.add(
            _Point(
                index=float(index), low=flat.low, high=flat.high, num_nulls=flat.num_nulls, num_dvs=ndv,
                max_col_len=(flat.max_col_len or 0) if is_string else 0,
                avg_col_len=(flat.avg_col_len or 0.0) if is_string else 0.0,
            )
        )
        self._add_sketch(index, flat, is_string)

    def _add_sketch(self, index: int, flat: FlatStats, is_string: bool) -> None:
        if not self._sketches_ok:
            return
        sketch = None
        if flat.bit_vector:
            try:
                sketch = NdvSketch.from_bytes(flat.bit_vector)
            except NdvFormatError:
                sketch = None
        if sketch is None or (self._first_sketch is not None and not self._first_sketch.can_merge(sketch)):
            # Not every partition has a sketch that merges with the others: no sketch-based NDV at all.
            self._sketches_ok = False
            self._union = self._run = None
            return
        if self._first_sketch is None:
            self._first_sketch = self._union = sketch
        else:
            assert self._union is not None
            self._union = self._union.merged(sketch)
        run = self._run
        if run is not None and run.last + 1 == index:
            run.extend(index, flat, sketch, is_string)
            return
        if run is not None:
            assert self._runs is not None
            self._runs.add(run.point())
        self._run = _Run(index, flat, sketch, is_string)

    def _add_histogram(self, blob: bytes | None) -> None:
        if not self._histograms_ok:
            return
        if not blob:
            self._histograms_ok, self._histogram = False, None
            return
        try:
            sketch = kll_from_bytes(blob)
        except KllFormatError:
            self._histograms_ok, self._histogram = False, None
            return
        if self._histogram is None:
            self._histogram = sketch
        else:
            self._histogram.merge(sketch)

    def result(self) -> ColumnStats:
        """The column's table-wide statistics over the partitions added (InvalidInput when none was).
        `column_type` (the type the kinds are checked against) may be changed before."""
        column_type = self.column_type
        if self._untyped:
            raise InvalidInput("partition statistics must be typed column statistics")
        if len(self._members) > 1:
            raise InvalidInput(
                f"partition statistics of a {column_type} column mix kinds: {', '.join(sorted(self._members))}"
            )
        spec = self._spec
        if spec is None:
            raise InvalidInput(f"no partition statistics to aggregate for a {column_type} column")
        expected = kind_for_type(column_type)
        if expected is not None and spec.kind is not expected:
            raise InvalidInput(f"a {column_type} column cannot aggregate {spec.union_member}")
        if spec.has_booleans:
            return spec.build(num_nulls=self._num_nulls, num_trues=self._num_trues, num_falses=self._num_falses)
        if not spec.has_ndv:
            return spec.build(num_nulls=self._num_nulls, max_col_len=self._max_col_len, avg_col_len=self._avg_col_len)
        if self._count == self.num_partitions or self._count < 2:
            return self._all_found(spec)
        if self._sketches_ok:
            assert self._runs is not None and self._run is not None
            points = self._runs
            points.add(self._run.point())  # the last run
            self._run = None
        else:
            assert self._each is not None
            points = self._each
        return self._extrapolate(spec, points)

    def _all_found(self, spec: KindSpec) -> ColumnStats:
        lower, higher = self._ndv_max, self._ndv_sum
        bit_vector = None
        num_dvs: int | None
        if self._sketches_ok and self._union is not None:
            num_dvs = self._union.estimate()
            bit_vector = self._union.to_bytes()
        elif spec.values is None:  # strings
            num_dvs = lower
        else:
            num_dvs = None
        if spec.values is None:
            return spec.build(
                num_nulls=self._num_nulls, num_dvs=num_dvs, bit_vector=bit_vector, max_col_len=self._max_col_len,
                avg_col_len=self._avg_col_len,
            )
        low, high = self._low, self._high
        if num_dvs is None:
            if self.use_density and low is not None and high is not None:
                assert self._each is not None
                density_avg = self._each.density_sum / self.num_partitions
                estimate = java_long(java_fdiv(float(_span(spec, low, high)), density_avg))
                num_dvs = min(max(estimate, lower), higher)
            else:
                num_dvs = java_long(lower + (higher - lower) * self.ndv_tuner)
        histogram = None
        if self._histograms_ok and self._histogram is not None:
            histogram = bytes(self._histogram.serialize())
        return spec.build(
            num_nulls=self._num_nulls, num_dvs=num_dvs, bit_vector=bit_vector, histogram=histogram, low=low, high=high
        )

    def _extrapolate(self, spec: KindSpec, points: _Points) -> ColumnStats:
        num_parts = self.num_partitions
        num_nulls = self._num_nulls * num_parts // self._count

        # NDV bounds and the linear fallback, through the points of the smallest and the largest NDV.
        ndv = points.ndv
        assert ndv.low is not None and ndv.high is not None
        lower, higher = int(ndv.high), points.ndv_sum
        linear_ndv = java_long(
            _extrapolate_high(ndv.low_index, ndv.high_index, float(ndv.low), float(ndv.high), num_parts)
            if ndv.low_index != ndv.high_index
            else float(ndv.low)
        )

        if spec.values is None:  # strings
            avg, length = points.avg_len, points.max_len
            assert avg.low is not None and avg.high is not None and length.low is not None and length.high is not None
            avg_col_len = _extrapolate_high(avg.low_index, avg.high_index, float(avg.low), float(avg.high), num_parts)
            max_col_len = java_long(
                _extrapolate_high(length.low_index, length.high_index, float(length.low), float(length.high), num_parts)
            )
            return spec.build(
                num_nulls=num_nulls,
                num_dvs=linear_ndv,
                max_col_len=max_col_len,
                avg_col_len=avg_col_len,
            )

        low = _line(spec, points.low, num_parts, upper=False)
        high = _line(spec, points.high, num_parts, upper=True)
        num_dvs = linear_ndv
        if self.use_density and low is not None and high is not None:
            density_avg = points.density_sum / points.count
            if density_avg != 0.0:
                estimate = java_long(java_fdiv(float(_span(spec, low, high)), density_avg))
                num_dvs = min(max(estimate, lower), higher)
        return spec.build(num_nulls=num_nulls, num_dvs=num_dvs, low=low, high=high)


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
        return float(java_div(int(span), ndv))
    return span / ndv


def _extrapolate_high(min_ind: float, max_ind: float, lo: float, hi: float, num_parts: int) -> float:
    if min_ind == max_ind:
        return lo
    if min_ind < max_ind:
        return lo + (hi - lo) * (num_parts - min_ind) / (max_ind - min_ind)
    return lo + (hi - lo) * min_ind / (min_ind - max_ind)


def _line(spec: KindSpec, extremes: _Extremes, num_parts: int, *, upper: bool) -> Bound | None:
    """Extrapolated low (``upper=False``) or high value, linear in the index through the extreme points."""
    lo, hi = extremes.low, extremes.high
    if lo is None or hi is None:
        return None
    min_ind, max_ind = extremes.low_index, extremes.high_index
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
        return java_long(x)
    if spec.values is ValueType.DECIMAL:
        return Decimal(repr(x))
    return x
