"""Sketching one column's values: what a scan or a writer contributes to a column's statistics.

:class:`ColumnSketcher` takes dense non-null values (numpy arrays, as the ORC reader decodes them or as a
writer has them) and accumulates the non-null count, low/high, true count, lengths, a HyperLogLog NDV sketch
(values hashed as Hive hashes them, :mod:`metastore.stats.ndv`) and a KLL histogram (:mod:`metastore.stats.kll`).
Harvest (:mod:`metastore.stats.harvest`) uses it for scans and :mod:`metastore.stats.orc_sketch_metadata` for
the sketches a writer stores in its files; it lives outside the harvest package so that writers need not import
the harvest runner, and so that the two depend on it, not on each other.
"""

from __future__ import annotations

from collections.abc import Callable
from decimal import Decimal
from time import thread_time
from typing import Any

import numpy as np

from metastore.orcio import (
    BytesVector,
    Category,
    ColumnVector,
    DecimalVector,
    DictionaryBytesVector,
    DoubleVector,
    LongVector,
    TimestampVector,
    hash64_array_long,
    hash64_packed,
)
from metastore.stats.hll import HyperLogLog
from metastore.stats.kinds import KIND_SPECS
from metastore.stats.kll import DEFAULT_K
from metastore.stats.model import StatsKind
from metastore.stats.ndv import decimal_doubles, double_hashes

__all__ = ["SKETCH_P", "ColumnSketcher"]

#: HyperLogLog precision of the sketches we build (Hive's builder default; ~0.8 % standard error).
SKETCH_P = 14

_RANGE_KINDS = frozenset(k for k, spec in KIND_SPECS.items() if spec.values is not None)
_LENGTH_KINDS = frozenset(k for k, spec in KIND_SPECS.items() if spec.has_lengths)
_NDV_KINDS = frozenset(k for k, spec in KIND_SPECS.items() if spec.has_ndv)
_KLL_KINDS = frozenset(k for k, spec in KIND_SPECS.items() if spec.has_histogram)
_SECONDS_PER_DAY = 86400


class ColumnSketcher:
    """Accumulates what a scan (or a writer's values) contributes to one column: non-null count, range,
    true count, lengths, HyperLogLog and KLL sketches. Fed with dense non-null values only."""

    def __init__(self, kind: StatsKind, *, range_: bool = True, ndv: bool = True, histogram: bool = False,
                 lengths: bool = True) -> None:
        self.kind = kind
        self.want_range = range_ and kind in _RANGE_KINDS
        self.want_ndv = ndv and kind in _NDV_KINDS
        self.want_histogram = histogram and kind in _KLL_KINDS
        self.want_lengths = lengths and kind in _LENGTH_KINDS
        self.non_null = 0
        self.low: Any = None
        self.high: Any = None
        self.num_trues = 0
        self.total_length = 0
        self.max_length = 0
        self.hll: HyperLogLog | None = HyperLogLog(SKETCH_P) if self.want_ndv else None
        self.kll: Any = None
        if self.want_histogram:
            import datasketches  # loaded on first use: most scans build no histogram

            self.kll = datasketches.kll_floats_sketch(DEFAULT_K)
        #: CPU seconds this sketcher spent computing Murmur3 hashes (ANALYZE --verbose's "hashing" phase).
        self.hash_seconds = 0.0

    # ---------------------------------------------------------------------------------- typed feeders

    def add_integers(self, values: np.ndarray) -> None:
        """Integers (tinyint..bigint) stored as such; converted when the column's kind is double/decimal."""
        values = np.asarray(values)
        if values.size == 0:
            return
        self.non_null += values.size
        if self.kind is StatsKind.DOUBLE:
            self._numbers(values.astype(np.float64), double_hashes)
            return
        if self.kind is StatsKind.DECIMAL:
            doubles = values.astype(np.float64)
            if self.want_range:
                self._widen(Decimal(int(values.min())), Decimal(int(values.max())))
            self._hash_and_histogram(doubles, double_hashes)
            return
        ints = values.astype(np.int64, copy=False)
        self._add_longs(ints)
        if self.kll is not None:
            self.kll.update(ints.astype(np.float32))

    def add_doubles(self, values: np.ndarray) -> None:
        """float/double values (floats are widened to double, as Hive does)."""
        values = np.asarray(values)
        if values.size == 0:
            return
        self.non_null += values.size
        self._numbers(values.astype(np.float64, copy=False), double_hashes)

    def add_decimals(self, unscaled: np.ndarray, scale: int, scales: np.ndarray | None = None) -> None:
        """Decimals as unscaled integers (int64, or an object array of ints) at ``scale`` (or per-value
        ``scales``)."""
        unscaled = np.asarray(unscaled)
        n = unscaled.size
        if n == 0:
            return
        self.non_null += n
        if scales is None and unscaled.dtype != object:
            if self.want_range:
                self._widen(Decimal(int(unscaled.min())).scaleb(-scale), Decimal(int(unscaled.max())).scaleb(-scale))
            doubles = decimal_doubles(unscaled, scale) if (self.hll is not None or self.kll is not None) else None
        else:
            # object arrays (precision > 18) and Hive 0.11 per-value scales: Python ints, one per value
            scale_list = [scale] * n if scales is None else [int(s) for s in scales.tolist()]
            decimals = [Decimal(int(v)).scaleb(-s) for v, s in zip(unscaled.tolist(), scale_list, strict=True)]
            if self.want_range:
                self._widen(min(decimals), max(decimals))
            doubles = np.array([float(d) for d in decimals], dtype=np.float64)
        if doubles is not None:
            self._hash_and_histogram(doubles, double_hashes)

    def add_dates(self, days: np.ndarray) -> None:
        """Dates as days since 1970-01-01 (histograms take them as epoch seconds, as Hive 4)."""
        days = np.asarray(days, dtype=np.int64)
        if days.size == 0:
            return
        self.non_null += days.size
        self._add_longs(days)
        if self.kll is not None:
            self.kll.update((days * _SECONDS_PER_DAY).astype(np.float32))

    def add_timestamps(self, seconds: np.ndarray) -> None:
        """Timestamps as floor seconds since the epoch (wall clock read as UTC)."""
        seconds = np.asarray(seconds, dtype=np.int64)
        if seconds.size == 0:
            return
        self.non_null += seconds.size
        if self.want_range:
            self._widen(int(seconds.min()), int(seconds.max()))
        if self.hll is not None:
            _add_hashes(self.hll, self._hash(hash64_array_long, seconds))
        if self.kll is not None:
            self.kll.update(seconds.astype(np.float32))

    def add_booleans(self, values: np.ndarray) -> None:
        """Booleans."""
        values = np.asarray(values, dtype=bool)
        self.non_null += values.size
        self.num_trues += int(np.count_nonzero(values))

    def add_packed(self, buffer: bytes | memoryview | np.ndarray, offsets: np.ndarray, *, distinct: bool = False,
                   count: int | None = None) -> None:
        """String/binary values packed in ``buffer`` at ``offsets`` (n + 1 entries).

        With ``distinct`` the values are a dictionary: each counts once for the sketch and the longest length,
        and ``count``/lengths must be added separately with :meth:`add_lengths` (the values stand for
        ``count`` rows); otherwise every value is one row.
        """
        offsets = np.asarray(offsets, dtype=np.int64)
        n = len(offsets) - 1
        if n <= 0 and not distinct:
            return
        lengths = np.diff(offsets)
        if not distinct:
            self.non_null += n
            self.total_length += int(lengths.sum())
        if n > 0:
            self.max_length = max(self.max_length, int(lengths.max()))
            if self.hll is not None:
                _add_hashes(self.hll, self._hash(hash64_packed, buffer, offsets))

    def add_lengths(self, lengths: np.ndarray, *, count_rows: bool = True) -> None:
        """Per-value byte lengths of string/binary values (each one row unless ``count_rows`` is False)."""
        lengths = np.asarray(lengths, dtype=np.int64)
        if lengths.size == 0:
            return
        if count_rows:
            self.non_null += lengths.size
            self.total_length += int(lengths.sum())
        self.max_length = max(self.max_length, int(lengths.max()))

    def add_vector(self, vector: ColumnVector, category: Category) -> None:
        """Dense non-null values as the ORC reader decodes them (see :mod:`metastore.orcio.column_scan`)."""
        if isinstance(vector, LongVector):
            if category == Category.BOOLEAN:
                self.add_booleans(vector.values)
            elif category == Category.DATE:
                self.add_dates(vector.values)
            else:
                self.add_integers(vector.values)
        elif isinstance(vector, DoubleVector):
            self.add_doubles(vector.values)
        elif isinstance(vector, DecimalVector):
            self.add_decimals(vector.unscaled, vector.scale, vector.scales)
        elif isinstance(vector, TimestampVector):
            self.add_timestamps(vector.seconds)
        elif isinstance(vector, BytesVector):
            self.add_packed(vector.data, vector.offsets)
        elif isinstance(vector, DictionaryBytesVector):
            self._add_dictionary(vector)
        else:  # pragma: no cover - scans only produce the vectors above
            raise TypeError(f"cannot take statistics of a {type(vector).__name__}")

    def _add_dictionary(self, vector: DictionaryBytesVector) -> None:
        dictionary = vector.dictionary
        assert dictionary is not None
        ids = vector.indices
        if ids.size == 0:
            return
        entry_lengths = np.diff(dictionary.offsets)
        self.non_null += ids.size
        self.total_length += int(entry_lengths[ids].sum())
        used = np.zeros(dictionary.length, dtype=bool)
        used[ids] = True
        self.max_length = max(self.max_length, int(entry_lengths[used].max()))
        if self.hll is not None:
            hashes = self._hash(hash64_packed, dictionary.data, dictionary.offsets)
            _add_hashes(self.hll, hashes[used])

    # ---------------------------------------------------------------------------------------- helpers

    def _numbers(self, doubles: np.ndarray, hasher: Callable[[np.ndarray], np.ndarray]) -> None:
        if self.want_range:
            finite = doubles[~np.isnan(doubles)]
            if finite.size:
                self._widen(float(finite.min()), float(finite.max()))
        self._hash_and_histogram(doubles, hasher)

    def _hash_and_histogram(self, doubles: np.ndarray, hasher: Callable[[np.ndarray], np.ndarray]) -> None:
        if self.hll is not None:
            _add_hashes(self.hll, self._hash(hasher, doubles))
        if self.kll is not None:
            # KLL sketches hold 32-bit floats (as Hive's); values beyond float's range are clamped to its
            # extremes rather than becoming infinities. NaN stays NaN, which the sketch skips.
            limit = np.finfo(np.float32).max
            self.kll.update(np.clip(doubles, -limit, limit).astype(np.float32))

    def _add_longs(self, ints: np.ndarray) -> None:
        """Range and NDV sketch of int64 values hashed as Hive's hash64(long). Values that span no wider a range
        than there are values (counts, codes, dates) are reduced to their distinct values with one bitmap pass
        first: a sketch depends only on the set of values, and hashing (and, for a sparse sketch, sorting) every
        row would cost far more."""
        small = ints.size >= _DISTINCT_MIN_VALUES and (self.want_range or self.hll is not None)
        if small or self.want_range:
            low, high = int(ints.min()), int(ints.max())
            if self.want_range:
                self._widen(low, high)
            small = small and high - low < ints.size
        if self.hll is None:
            return
        if small:
            seen = np.zeros(high - low + 1, dtype=bool)
            seen[ints - low] = True
            ints = np.flatnonzero(seen) + low
        _add_hashes(self.hll, self._hash(hash64_array_long, ints))

    def _hash(self, hasher: Callable[..., np.ndarray], *args: Any) -> np.ndarray:
        started = thread_time()
        hashes = hasher(*args)
        self.hash_seconds += thread_time() - started
        return hashes

    def _widen(self, low: Any, high: Any) -> None:
        self.low = low if self.low is None or low < self.low else self.low
        self.high = high if self.high is None or high > self.high else self.high

    def sketch_bytes(self) -> bytes | None:
        """The HyperLogLog as Hive bitVector bytes (None when NDV was not asked for)."""
        return None if self.hll is None else self.hll.to_bytes()

    def histogram_bytes(self) -> bytes | None:
        """The serialised KLL sketch (None when not asked for or without values)."""
        if self.kll is None or self.kll.is_empty():
            return None
        return bytes(self.kll.serialize())


#: Fewest values for which the distinct-values bitmap of _add_longs is worth its min/max passes.
_DISTINCT_MIN_VALUES = 4096


def _add_hashes(sketch: HyperLogLog, hashes: np.ndarray) -> None:
    """Add hashes to a sketch; while it stays sparse after a first slice (few distinct values so far), duplicates
    are dropped first so that its per-entry work is bounded by the distinct values, not the rows. (A sketch's
    state depends only on the set of hashes added, never on their order or repetition.)"""
    if hashes.size == 0:
        return
    if sketch.encoding == "sparse":
        first = hashes[:_PROBE]
        sketch.add_hashes(first)
        hashes = hashes[_PROBE:]
        if hashes.size == 0 or sketch.encoding != "sparse":
            sketch.add_hashes(hashes)
            return
        seen = np.unique(first)
        if seen.size <= _FEW_DISTINCT:
            # a handful of values (codes, statuses): the hashes the probe already added are dropped with one
            # comparison pass each, so that only new ones are sorted (500,000 rows of 5 strings: ~1 ms, not ~8)
            repeated = hashes == seen[0]
            for value in seen[1:]:
                repeated |= hashes == value
            hashes = hashes[~repeated]
            if hashes.size == 0:
                return
        # sort-based: numpy's hash-based np.unique is far slower on millions of 64-bit values
        ordered = np.sort(hashes)
        keep = np.ones(ordered.size, dtype=bool)
        np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
        sketch.add_hashes(ordered[keep])
        return
    sketch.add_hashes(hashes)


#: Hashes offered to a sparse sketch before deciding whether to drop duplicates first.
_PROBE = 4096
#: Distinct hashes in that first slice up to which the rest is compared with each of them (one pass a value)
#: before sorting what is left.
_FEW_DISTINCT = 16
