"""Merge-on-write of column statistics: Hive's ``needMerge`` semantics (``columnstats/merge/*Merger``).

When a client sets statistics with ``SetPartitionsStatsRequest.needMerge`` the stored statistics (``old``)
and the incoming ones (``new``) combine field by field:

- numNulls, numTrues, numFalses are summed;
- low values take the minimum and high values the maximum of those that are set;
- maxColLen and avgColLen take the maximum (``ColumnStatsMerger.mergeAvgColLen`` is a max, not a weighted mean);
- NDV (``ColumnStatsMerger.mergeNumDistinctValueEstimator``): with sketches on both sides that can merge,
  the estimate of the merged sketch, which becomes the stored bitVector; with only the new side's sketch,
  ``max(old numDVs, new sketch's estimate)`` and the new sketch is kept; otherwise ``max`` of the numDVs
  and the old sketch (if any) is kept;
- KLL histograms merge when both are present, else whichever is present.

Which of these fields a kind has comes from :data:`metastore.stats.kinds.KIND_SPECS`.

One deliberate difference: Hive fails when the stored HLL has a larger p than the incoming one; here the
two meet at the smaller p, as they would in Hive's partition aggregation.
"""

from __future__ import annotations

from decimal import Decimal
from typing import TypeVar

from metastore.errors import InvalidInput
from metastore.stats.kinds import FlatStats, spec_of
from metastore.stats.kll import KllFormatError, kll_merge
from metastore.stats.model import ColumnStats
from metastore.stats.ndv import NdvFormatError, NdvSketch

__all__ = ["max_present", "merge_ndv", "merge_stats", "min_present"]


# The values merged as optional min/max: counts, lengths and low/high bounds of every value type.
T = TypeVar("T", bound=int | float | Decimal)


def min_present(a: T | None, b: T | None) -> T | None:
    """The smaller of two optional values, ignoring an unset one (merging low values)."""
    if a is None:
        return b
    if b is None:
        return a
    return min(a, b)


def max_present(a: T | None, b: T | None) -> T | None:
    """The larger of two optional values, ignoring an unset one (merging high values and lengths)."""
    if a is None:
        return b
    if b is None:
        return a
    return max(a, b)


def _add(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a + b


def merge_stats(old: ColumnStats, new: ColumnStats, *, where: str | None = None) -> ColumnStats:
    """The statistics Hive stores after merging ``new`` into ``old``; raises InvalidInput if kinds differ.

    ``where`` (e.g. ``"column 'price' of sales.orders"``) prefixes the error message.
    """
    if type(old) is not type(new):
        prefix = f"{where}: " if where else ""
        raise InvalidInput(
            f"{prefix}cannot merge {_member(new)} into stored {_member(old)}: the statistics kinds differ"
        )
    spec = spec_of(old)
    a, b = spec.flatten(old), spec.flatten(new)
    num_dvs, bit_vector = a.num_dvs, a.bit_vector
    if spec.has_ndv:
        num_dvs, bit_vector = merge_ndv(a.num_dvs or 0, a.bit_vector, b.num_dvs or 0, b.bit_vector)
    merged = FlatStats(
        num_nulls=a.num_nulls + b.num_nulls,
        bit_vector=bit_vector,
        num_dvs=num_dvs,
        histogram=_merge_histogram(a.histogram, b.histogram),
        low=min_present(a.low, b.low),
        high=max_present(a.high, b.high),
        num_trues=_add(a.num_trues, b.num_trues),
        num_falses=_add(a.num_falses, b.num_falses),
        max_col_len=max_present(a.max_col_len, b.max_col_len),
        avg_col_len=max_present(a.avg_col_len, b.avg_col_len),
    )
    return spec.build(**vars(merged))


def merge_ndv(
    old_ndv: int, old_sketch: bytes | None, new_ndv: int, new_sketch: bytes | None
) -> tuple[int, bytes | None]:
    """Hive's NDV merge of two (numDVs, bitVector) pairs: the merged numDVs and the bitVector to keep."""
    old_est = _sketch(old_sketch)
    new_est = _sketch(new_sketch)
    if old_est is None and new_est is None:
        return max(old_ndv, new_ndv), old_sketch
    if old_est is None:
        assert new_est is not None
        return max(old_ndv, new_est.estimate()), new_sketch
    if new_est is None or not old_est.can_merge(new_est):
        return max(old_ndv, new_ndv), old_sketch
    merged = old_est.merged(new_est)
    return merged.estimate(), merged.to_bytes()


def _sketch(data: bytes | None) -> NdvSketch | None:
    if not data:
        return None
    try:
        return NdvSketch.from_bytes(data)
    except NdvFormatError:
        return None


def _merge_histogram(old: bytes | None, new: bytes | None) -> bytes | None:
    if old and new:
        try:
            return kll_merge(old, new)
        except KllFormatError:
            return old
    return new if new else old


def _member(stats: ColumnStats) -> str:
    try:
        return spec_of(stats).union_member
    except TypeError:
        return type(stats).__name__
