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

One deliberate difference: Hive fails when the stored HLL has a larger p than the incoming one; here the
two meet at the smaller p, as they would in Hive's partition aggregation.
"""

from __future__ import annotations

import dataclasses

from metastore.errors import InvalidInput
from metastore.stats.kll import KllFormatError, kll_merge
from metastore.stats.model import BinaryStats, BooleanStats, ColumnStats, StringStats
from metastore.stats.ndv import NdvFormatError, NdvSketch
from metastore.stats.validate import UNION_MEMBER

__all__ = ["merge_ndv", "merge_stats"]


def merge_stats(old: ColumnStats, new: ColumnStats, *, where: str | None = None) -> ColumnStats:
    """The statistics Hive stores after merging ``new`` into ``old``; raises InvalidInput if kinds differ.

    ``where`` (e.g. ``"column 'price' of sales.orders"``) prefixes the error message.
    """
    if type(old) is not type(new):
        prefix = f"{where}: " if where else ""
        raise InvalidInput(
            f"{prefix}cannot merge {_member(new)} into stored {_member(old)}: the statistics kinds differ"
        )
    changes: dict[str, object] = {"num_nulls": old.num_nulls + new.num_nulls}
    if isinstance(old, BooleanStats):
        assert isinstance(new, BooleanStats)
        changes["num_trues"] = old.num_trues + new.num_trues
        changes["num_falses"] = old.num_falses + new.num_falses
        return dataclasses.replace(old, **changes)
    if isinstance(old, StringStats | BinaryStats):
        changes["max_col_len"] = max(old.max_col_len, new.max_col_len)  # type: ignore[attr-defined]
        changes["avg_col_len"] = max(old.avg_col_len, new.avg_col_len)  # type: ignore[attr-defined]
        if isinstance(old, BinaryStats):
            return dataclasses.replace(old, **changes)
    if hasattr(old, "low"):
        changes["low"] = _pick(min, old.low, new.low)  # type: ignore[attr-defined]
        changes["high"] = _pick(max, old.high, new.high)  # type: ignore[attr-defined]
    if hasattr(old, "num_dvs"):
        ndv, bit_vector = merge_ndv(old.num_dvs, old.bit_vector, new.num_dvs, new.bit_vector)  # type: ignore[attr-defined]
        changes["num_dvs"] = ndv
        changes["bit_vector"] = bit_vector
    if hasattr(old, "histogram"):
        changes["histogram"] = _merge_histogram(old.histogram, new.histogram)  # type: ignore[attr-defined]
    return dataclasses.replace(old, **changes)


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


def _pick(fn, a, b):  # noqa: ANN001, ANN202 - min/max over optional values of one type
    if a is None:
        return b
    if b is None:
        return a
    return fn(a, b)


def _member(stats: ColumnStats) -> str:
    kind = getattr(type(stats), "kind", None)
    return UNION_MEMBER.get(kind, type(stats).__name__) if kind is not None else type(stats).__name__
