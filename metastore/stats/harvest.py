"""Harvesting column statistics from ORC files: what ``ANALYZE TABLE ... COMPUTE STATISTICS [FOR COLUMNS]`` runs.

:func:`analyze_files` computes, for the requested top-level columns of a table (or partition) stored in ORC
files, the statistics Hive's ANALYZE stores, merged over the files:

1. **Footers first.** Row counts, null counts, low/high values, true/false counts and total string/binary lengths
   (→ ``avgColLen``) come from each file's footer statistics (:mod:`metastore.stats.orc_convert` decides what
   is trusted), without reading data.
2. **Sketch metadata.** Files written by this project carry each column's HyperLogLog, longest value and KLL
   histogram in their ORC user metadata (:mod:`metastore.stats.orc_sketch_metadata`); those columns need no scan.
3. **A scan only for what is still missing**, reading only the columns and streams needed: NDV (HyperLogLog
   over vectorised Murmur3 hashes; string dictionaries are hashed once per entry), ``maxColLen`` (LENGTH streams,
   or the dictionary's LENGTH stream, never the string bytes), KLL histograms (behind ``want_histograms``),
   and low/high only where footers have none.
4. **Incremental.** With a :class:`~metastore.stats.filecache.FileStatsCache`, per-file results (sketches
   included) are kept by path, size and mtime; a re-run reads only files that changed and merges again.

Conventions (what the numbers mean):

- ``numNulls`` = rows − non-null values.
- ``numDVs`` counts distinct **non-null** values: NULL is never added to the sketch, which is what Hive does
  (``compute_bit_vector_hll`` skips nulls; Hive 4 reports 6 distinct values for an int column holding 2..7 and
  seven NULLs, ``stats_histogram_null.q.out``). Trino's reader subtracts one when nulls exist, a convention from
  older Hive versions; its fallback for Spark statistics does not. Like Spark, the estimate is capped at the
  non-null count (and is 0 for a column without values).
- NDV sketches are Hive HyperLogLog bitVectors with p = 14 (~0.8 % standard error); Hive's own p = 10 sketches
  merge with them (a merge meets at the smaller p). Values are hashed as Hive hashes them
  (:mod:`metastore.stats.ndv`): decimals as doubles, dates as days, timestamps as whole epoch seconds, strings
  as their stored UTF-8 bytes (char(n) values with their padding).
- ``avgColLen`` = total bytes / non-null values and ``maxColLen`` = the longest value in **bytes** (what ORC's
  LENGTH streams and footers record). Hive 4 itself measures characters (``LENGTH()``) and averages over all
  rows with NULL as 0; for ASCII data without nulls the numbers agree.
- Histograms are DataSketches KLL float sketches (k = 200) of the values as Hive 4 feeds them
  (``ds_kll_sketch(cast(col as float))``; dates and timestamps through ``unix_timestamp``, i.e. epoch seconds).
- Table statistics merged from files (or from partitions with :func:`merge_results`) add counts exactly and
  merge sketches — the table NDV is the estimate of the union, never the largest partition NDV.

Files are matched to table columns by name (exact, then case-insensitive); files whose top-level fields are all
named ``_colN`` (Hive before HIVE-4243, ``orc.force.positional.evolution``) are matched by position in the
table's column order. A column a file lacks reads as all NULL (Hive's schema evolution). Integer files may back
bigint/double/decimal columns (Hive's widening); other mismatches are a :class:`HarvestError`. Hive ACID files
and timestamps of files without a writer time zone (read as UTC) are the known limits.

API: :func:`analyze_files` → :class:`AnalyzeResult` (``columns``: Hive statistics per column; ``partials``: the
mergeable form; ``files``: one :class:`FileAnalysis` each); :func:`results_by_partition` splits one run over many
partitions' files into per-partition results and :func:`merge_results` merges results (partitions → table);
:func:`basic_stats` → :class:`BasicStats` for ``ANALYZE ... COMPUTE STATISTICS [NOSCAN]``.
"""

from __future__ import annotations

import io
import json
import math
import multiprocessing
import os
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import FIRST_EXCEPTION, ProcessPoolExecutor, wait
from dataclasses import dataclass, field, replace
from decimal import Decimal
from typing import Any

import datasketches
import numpy as np

from metastore.errors import InvalidInput, MetastoreError
from metastore.orcio.column_scan import ScanMode, StripeColumn, column_request, scan_stripe_columns
from metastore.orcio.errors import OrcError
from metastore.orcio.murmur3 import hash64_array_long
from metastore.orcio.murmur3_packed import hash64_packed
from metastore.orcio.reader import OrcReader
from metastore.orcio.types import Category, TypeDescription
from metastore.orcio.vectors import (
    BytesVector,
    ColumnVector,
    DecimalVector,
    DictionaryBytesVector,
    DoubleVector,
    LongVector,
    TimestampVector,
)
from metastore.stats.filecache import FileStatsCache
from metastore.stats.hll import HyperLogLog, merge_hlls
from metastore.stats.kll import DEFAULT_K, KLL_KINDS, kll_from_bytes
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
from metastore.stats.orc_convert import (
    OrcColumnFacts,
    OrcWriterFacts,
    hive_kind,
    orc_column_facts,
    raw_data_size_of,
    storage_kind_fits,
)

__all__ = [
    "SKETCH_P",
    "AnalyzeResult",
    "BasicStats",
    "ColumnPartial",
    "ColumnSketcher",
    "FileAnalysis",
    "HarvestError",
    "analyze_files",
    "basic_stats",
    "merge_partials",
    "merge_results",
    "results_by_partition",
]

#: HyperLogLog precision of the sketches we build (Hive's builder default; ~0.8 % standard error).
SKETCH_P = 14

#: Facts a partial may lack (footer-only runs, NDV or histograms not asked for).
MISSING_RANGE = "range"
MISSING_NULLS = "nulls"
MISSING_TRUES = "trues"
MISSING_TOTAL_LENGTH = "total_length"
MISSING_MAX_LENGTH = "max_length"
MISSING_NDV = "ndv"
MISSING_HISTOGRAM = "histogram"

_RANGE_KINDS = frozenset({StatsKind.LONG, StatsKind.DOUBLE, StatsKind.DECIMAL, StatsKind.DATE, StatsKind.TIMESTAMP})
_LENGTH_KINDS = frozenset({StatsKind.STRING, StatsKind.BINARY})
# Kinds whose Hive statistics have numDVs (booleans and binaries have none, so they get no sketch).
_NDV_KINDS = _RANGE_KINDS | {StatsKind.STRING}
_POSITIONAL_NAME = re.compile(r"^_col\d+$")
_ACID_FIELDS = ("operation", "originalTransaction", "bucket", "rowId", "currentTransaction", "row")
_SECONDS_PER_DAY = 86400
_MAX_EXACT_INT_DOUBLE = 1 << 53


class HarvestError(MetastoreError):
    """A file cannot be analysed (unreadable, corrupt or truncated ORC, a column stored as an unfitting type)."""


# =============================================================================================== partials


@dataclass(frozen=True)
class ColumnPartial:
    """Mergeable statistics of one column over some rows (one file, or several merged): exact counts plus
    sketches. ``missing`` names the facts that were not computed (see the ``MISSING_*`` names)."""

    kind: StatsKind
    rows: int
    num_nulls: int
    low: Any = None
    high: Any = None
    num_trues: int = 0
    total_length: int = 0
    max_length: int = 0
    sketch: bytes | None = None
    histogram: bytes | None = None
    missing: frozenset[str] = frozenset()

    @property
    def non_null(self) -> int:
        """Rows holding a value."""
        return self.rows - self.num_nulls

    def merged(self, other: ColumnPartial) -> ColumnPartial:
        """The partial of both sets of rows (counts add, ranges widen, sketches merge)."""
        return merge_partials([self, other])

    def ndv(self) -> int:
        """The NDV estimate of the non-null values (0 without a sketch or without values)."""
        if self.sketch is None or self.non_null == 0:
            return 0
        return max(1, min(_stored_estimate(self.sketch), self.non_null))

    def to_stats(self) -> ColumnStats:
        """The Hive statistics these rows have (unknown NDV is 0; unknown maxColLen is ceil(avgColLen))."""
        nulls = self.num_nulls
        non_null = self.non_null
        kind = self.kind
        if kind is StatsKind.BOOLEAN:
            return BooleanStats(num_nulls=nulls, num_trues=self.num_trues, num_falses=non_null - self.num_trues)
        if kind in _LENGTH_KINDS:
            avg = self.total_length / non_null if non_null else 0.0
            max_len = self.max_length if MISSING_MAX_LENGTH not in self.missing else math.ceil(avg)
            if kind is StatsKind.STRING:
                return StringStats(num_nulls=nulls, max_col_len=max_len, avg_col_len=avg, num_dvs=self.ndv(),
                                   bit_vector=self.sketch)
            return BinaryStats(num_nulls=nulls, max_col_len=max_len, avg_col_len=avg, bit_vector=None)
        cls = _RANGE_CLASSES[kind]
        return cls(num_nulls=nulls, num_dvs=self.ndv(), bit_vector=self.sketch, histogram=self.histogram,
                   low=self.low, high=self.high)

    # ------------------------------------------------------------------------------------------ storage

    def to_bytes(self) -> bytes:
        """A compact serialisation (for the file cache): a JSON header followed by the sketch bytes."""
        header = {
            "kind": self.kind.name,
            "rows": self.rows,
            "nulls": self.num_nulls,
            "low": _encode_value(self.low),
            "high": _encode_value(self.high),
            "trues": self.num_trues,
            "total": self.total_length,
            "max": self.max_length,
            "sketch": None if self.sketch is None else len(self.sketch),
            "hist": None if self.histogram is None else len(self.histogram),
            "missing": sorted(self.missing),
        }
        head = json.dumps(header, separators=(",", ":")).encode()
        return len(head).to_bytes(4, "little") + head + (self.sketch or b"") + (self.histogram or b"")

    @classmethod
    def from_bytes(cls, data: bytes) -> ColumnPartial:
        """Read :meth:`to_bytes` output; ValueError when it is not one."""
        try:
            n = int.from_bytes(data[:4], "little")
            header = json.loads(data[4 : 4 + n])
            pos = 4 + n
            sketch = hist = None
            if header["sketch"] is not None:
                sketch = data[pos : pos + header["sketch"]]
                pos += header["sketch"]
            if header["hist"] is not None:
                hist = data[pos : pos + header["hist"]]
            return cls(
                kind=StatsKind[header["kind"]],
                rows=int(header["rows"]),
                num_nulls=int(header["nulls"]),
                low=_decode_value(header["low"]),
                high=_decode_value(header["high"]),
                num_trues=int(header["trues"]),
                total_length=int(header["total"]),
                max_length=int(header["max"]),
                sketch=sketch,
                histogram=hist,
                missing=frozenset(header["missing"]),
            )
        except (KeyError, ValueError, TypeError, IndexError) as exc:
            raise ValueError(f"not a serialised column partial: {exc}") from None


_RANGE_CLASSES: dict[StatsKind, type] = {
    StatsKind.LONG: LongStats,
    StatsKind.DOUBLE: DoubleStats,
    StatsKind.DECIMAL: DecimalStats,
    StatsKind.DATE: DateStats,
    StatsKind.TIMESTAMP: TimestampStats,
}


def _pick(fn, a, b):  # noqa: ANN001, ANN202 - min/max of optional values of one type
    if a is None:
        return b
    if b is None:
        return a
    return fn(a, b)


def merge_partials(partials: Sequence[ColumnPartial]) -> ColumnPartial:
    """One partial for the rows of all ``partials`` (counts add, ranges widen, sketches merge, each sketch
    parsed and the result serialised once). Raises InvalidInput for partials of different kinds."""
    if not partials:
        raise InvalidInput("merge_partials needs at least one partial")
    first = partials[0]
    if len(partials) == 1:
        return first
    for other in partials[1:]:
        if other.kind is not first.kind:
            raise InvalidInput(f"cannot merge {other.kind.name} statistics into {first.kind.name} statistics")
    low = high = None
    for p in partials:
        low = _pick(min, low, p.low)
        high = _pick(max, high, p.high)
    return ColumnPartial(
        kind=first.kind,
        rows=sum(p.rows for p in partials),
        num_nulls=sum(p.num_nulls for p in partials),
        low=low,
        high=high,
        num_trues=sum(p.num_trues for p in partials),
        total_length=sum(p.total_length for p in partials),
        max_length=max(p.max_length for p in partials),
        sketch=_merge_sketches([p.sketch for p in partials if p.sketch is not None]),
        histogram=_merge_histograms([p.histogram for p in partials if p.histogram is not None]),
        missing=frozenset().union(*(p.missing for p in partials)),
    )


def _stored_estimate(sketch: bytes) -> int:
    """The estimate a serialised HyperLogLog carries in its header (written by ``to_bytes`` from ``estimate()``),
    read without decoding the registers."""
    if len(sketch) < 5 or sketch[:3] != b"HLL":
        return HyperLogLog.from_bytes(sketch).estimate()  # raises the format error
    value = shift = 0
    for byte in sketch[4:14]:
        value |= (byte & 0x7F) << shift
        if byte < 0x80:
            return value
        shift += 7
    return HyperLogLog.from_bytes(sketch).estimate()


def _merge_sketches(blobs: list[bytes]) -> bytes | None:
    if not blobs:
        return None
    if len(blobs) == 1:
        return blobs[0]
    sketches = [HyperLogLog.from_bytes(b) for b in blobs]
    return merge_hlls(sketches).to_bytes()


def _merge_histograms(blobs: list[bytes]) -> bytes | None:
    if not blobs:
        return None
    if len(blobs) == 1:
        return blobs[0]
    sketch = kll_from_bytes(blobs[0])
    for blob in blobs[1:]:
        sketch.merge(kll_from_bytes(blob))
    return sketch.serialize()


def _encode_value(value: Any) -> Any:
    if value is None:
        return None
    if isinstance(value, Decimal):
        return ["d", str(value)]
    if isinstance(value, float):
        return ["f", repr(value)]
    return ["i", int(value)]


def _decode_value(value: Any) -> Any:
    if value is None:
        return None
    tag, raw = value
    if tag == "d":
        return Decimal(raw)
    if tag == "f":
        return float(raw)
    return int(raw)


# ============================================================================================ sketching


class ColumnSketcher:
    """Accumulates what a scan (or a writer's values) contributes to one column: non-null count, range,
    true count, lengths, HyperLogLog and KLL sketches. Fed with dense non-null values only."""

    def __init__(self, kind: StatsKind, *, range_: bool = True, ndv: bool = True, histogram: bool = False,
                 lengths: bool = True) -> None:
        self.kind = kind
        self.want_range = range_ and kind in _RANGE_KINDS
        self.want_ndv = ndv and kind in _NDV_KINDS
        self.want_histogram = histogram and kind in KLL_KINDS
        self.want_lengths = lengths and kind in _LENGTH_KINDS
        self.non_null = 0
        self.low: Any = None
        self.high: Any = None
        self.num_trues = 0
        self.total_length = 0
        self.max_length = 0
        self.hll: HyperLogLog | None = HyperLogLog(SKETCH_P) if self.want_ndv else None
        self.kll = datasketches.kll_floats_sketch(DEFAULT_K) if self.want_histogram else None

    # ---------------------------------------------------------------------------------- typed feeders

    def add_integers(self, values: np.ndarray) -> None:
        """Integers (tinyint..bigint) stored as such; converted when the column's kind is double/decimal."""
        values = np.asarray(values)
        if values.size == 0:
            return
        self.non_null += values.size
        if self.kind is StatsKind.DOUBLE:
            self._numbers(values.astype(np.float64), _double_hashes)
            return
        if self.kind is StatsKind.DECIMAL:
            doubles = values.astype(np.float64)
            if self.want_range:
                self._widen(Decimal(int(values.min())), Decimal(int(values.max())))
            self._hash_and_histogram(doubles, _double_hashes)
            return
        ints = values.astype(np.int64, copy=False)
        if self.want_range:
            self._widen(int(ints.min()), int(ints.max()))
        if self.hll is not None:
            _add_hashes(self.hll, hash64_array_long(ints))
        if self.kll is not None:
            self.kll.update(ints.astype(np.float32))

    def add_doubles(self, values: np.ndarray) -> None:
        """float/double values (floats are widened to double, as Hive does)."""
        values = np.asarray(values)
        if values.size == 0:
            return
        self.non_null += values.size
        self._numbers(values.astype(np.float64, copy=False), _double_hashes)

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
            doubles = _decimal_doubles(unscaled, scale) if (self.hll is not None or self.kll is not None) else None
        else:
            # object arrays (precision > 18) and Hive 0.11 per-value scales: Python ints, one per value
            scale_list = [scale] * n if scales is None else [int(s) for s in scales.tolist()]
            decimals = [Decimal(int(v)).scaleb(-s) for v, s in zip(unscaled.tolist(), scale_list, strict=True)]
            if self.want_range:
                self._widen(min(decimals), max(decimals))
            doubles = np.array([float(d) for d in decimals], dtype=np.float64)
        if doubles is not None:
            self._hash_and_histogram(doubles, _double_hashes)

    def add_dates(self, days: np.ndarray) -> None:
        """Dates as days since 1970-01-01 (histograms take them as epoch seconds, as Hive 4)."""
        days = np.asarray(days, dtype=np.int64)
        if days.size == 0:
            return
        self.non_null += days.size
        if self.want_range:
            self._widen(int(days.min()), int(days.max()))
        if self.hll is not None:
            _add_hashes(self.hll, hash64_array_long(days))
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
            _add_hashes(self.hll, hash64_array_long(seconds))
        if self.kll is not None:
            self.kll.update(seconds.astype(np.float32))

    def add_booleans(self, values: np.ndarray) -> None:
        """Booleans."""
        values = np.asarray(values, dtype=bool)
        self.non_null += values.size
        self.num_trues += int(np.count_nonzero(values))

    def add_packed(self, buffer: bytes | np.ndarray, offsets: np.ndarray, *, distinct: bool = False,
                   count: int | None = None) -> None:
        """String/binary values packed in ``buffer`` at ``offsets`` (n + 1 entries).

        With ``distinct`` the values are a dictionary: each counts once for the sketch and the longest length,
        and ``count``/lengths must be added separately with :meth:`add_lengths` (the values stand for
        ``count`` rows); otherwise every value is one row.
        """
        offsets = np.asarray(offsets, dtype=np.int64)
        n = len(offsets) - 1
        if n <= 0:
            if not distinct:
                return
        lengths = np.diff(offsets)
        if not distinct:
            self.non_null += n
            self.total_length += int(lengths.sum())
        if n > 0:
            self.max_length = max(self.max_length, int(lengths.max()))
            if self.hll is not None:
                _add_hashes(self.hll, hash64_packed(buffer, offsets))

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
            hashes = hash64_packed(dictionary.data, dictionary.offsets)
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
            _add_hashes(self.hll, hasher(doubles))
        if self.kll is not None:
            # KLL sketches hold 32-bit floats (as Hive's); values beyond float's range are clamped to its
            # extremes rather than becoming infinities. NaN stays NaN, which the sketch skips.
            limit = np.finfo(np.float32).max
            self.kll.update(np.clip(doubles, -limit, limit).astype(np.float32))

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
        return self.kll.serialize()


def _add_hashes(sketch: HyperLogLog, hashes: np.ndarray) -> None:
    """Add hashes to a sketch; while it is sparse, duplicates are dropped first so that its per-entry work is
    bounded by the distinct values, not the rows."""
    if hashes.size == 0:
        return
    if sketch.encoding == "sparse":
        # sort-based: numpy's hash-based np.unique is far slower on millions of 64-bit values
        ordered = np.sort(hashes)
        keep = np.ones(ordered.size, dtype=bool)
        np.not_equal(ordered[1:], ordered[:-1], out=keep[1:])
        unique = ordered[keep]
        head = 4096
        sketch.add_hashes(unique[:head])
        if unique.size > head:
            sketch.add_hashes(unique[head:])
        return
    sketch.add_hashes(hashes)


_CANONICAL_NAN = np.int64(0x7FF8000000000000)


def _double_hashes(values: np.ndarray) -> np.ndarray:
    # Java's doubleToLongBits: every NaN is the canonical NaN; -0.0 and 0.0 stay apart
    bits = values.astype(np.float64, copy=False).view(np.int64)
    nan = np.isnan(values)
    if nan.any():
        bits = bits.copy()
        bits[nan] = _CANONICAL_NAN
    return hash64_array_long(bits)


def _decimal_doubles(unscaled: np.ndarray, scale: int) -> np.ndarray:
    """The correctly rounded double of each decimal (what HiveDecimal.doubleValue gives)."""
    ints = unscaled.astype(np.int64, copy=False)
    if scale <= 22:
        # an exact integer divided by an exact power of ten rounds once: the correctly rounded quotient
        out = ints.astype(np.float64) / (10.0**scale)
        big = np.abs(ints) >= _MAX_EXACT_INT_DOUBLE
    else:
        out = np.empty(ints.size, dtype=np.float64)
        big = np.ones(ints.size, dtype=bool)
    if big.any():
        # rare: beyond 2**53 the integer itself is not a double; go through Decimal for those values only
        out[big] = [float(Decimal(int(v)).scaleb(-scale)) for v in ints[big].tolist()]
    return out


# ============================================================================================ file level


@dataclass(frozen=True)
class FileAnalysis:
    """One file's result: its facts and, per requested column, its partial statistics."""

    path: str
    size: int
    mtime_ns: int
    num_rows: int
    raw_data_size: int
    columns: dict[str, ColumnPartial]
    source: str  # "cache" (nothing read), "footer" (tail only), "scan" (data read)
    bytes_read: int = 0
    stripes_scanned: int = 0
    sketch_metadata_columns: tuple[str, ...] = ()
    seconds: float = 0.0

    def stats(self) -> dict[str, ColumnStats]:
        """This file's statistics per column."""
        return {name: partial.to_stats() for name, partial in self.columns.items()}


@dataclass(frozen=True)
class _FileOutcome:
    """A freshly analysed file plus what the cache keeps of it."""

    analysis: FileAnalysis
    info: bytes
    entries: dict[str, bytes]


@dataclass(frozen=True)
class BasicStats:
    """Hive's basic statistics of a table or partition (``numRows``, ``numFiles``, ``totalSize``,
    ``rawDataSize``); row counts and raw size are None for NOSCAN."""

    num_rows: int | None
    num_files: int
    total_size: int
    raw_data_size: int | None


@dataclass(frozen=True)
class AnalyzeResult:
    """Statistics of the requested columns merged over the files, plus how the work went.

    ``columns`` maps each requested column to its Hive statistics; ``partials`` keeps the mergeable form
    (counts and sketches) so that partition results can be merged into table results (:func:`merge_results`).
    ``missing`` names, per column, facts left uncomputed (e.g. ``ndv`` with ``want_ndv=False``).
    """

    columns: dict[str, ColumnStats]
    partials: dict[str, ColumnPartial]
    files: tuple[FileAnalysis, ...]
    num_rows: int
    raw_data_size: int
    files_read: int
    bytes_read: int
    files_reused: int
    seconds: float
    missing: dict[str, frozenset[str]] = field(default_factory=dict)
    want_ndv: bool = True
    want_histograms: bool = False

    @property
    def num_files(self) -> int:
        """Number of files analysed."""
        return len(self.files)

    @property
    def total_size(self) -> int:
        """Sum of the file sizes."""
        return sum(f.size for f in self.files)


@dataclass(frozen=True)
class _ColumnSpec:
    name: str
    hive_type: str
    position: int | None


@dataclass(frozen=True)
class _Options:
    want_ndv: bool
    want_histograms: bool
    scan: bool


def analyze_files(
    files: Sequence[str | os.PathLike[str]],
    columns: Sequence[str],
    *,
    hive_types: Mapping[str, str],
    want_ndv: bool = True,
    want_histograms: bool = False,
    cache: FileStatsCache | None = None,
    progress: Callable[[int, int], None] | None = None,
    scan: bool = True,
    table_columns: Sequence[str] | None = None,
    workers: int | None = None,
) -> AnalyzeResult:
    """Column statistics of ``columns`` over ORC ``files`` (one table or partition), merged.

    ``hive_types`` maps column names to Hive types: give every (non-partition) column of the table, in table
    order, because that order (or ``table_columns``) places columns in files with positional ``_colN`` field
    names. ``want_ndv`` computes NDV sketches,
    ``want_histograms`` KLL histograms; ``scan=False`` never reads data (footer facts only; what needs data is
    reported in ``result.missing``). ``cache`` keeps per-file results between runs. ``progress(done, total)``
    is called after each file. ``workers`` processes scan in parallel (default: one per CPU; 1 = in this process):
    files are shared out, and when fewer files than workers need reading their columns are split between
    workers. Raises :class:`HarvestError` naming the file for unreadable or
    corrupt files and InvalidInput for unknown columns or types without statistics.
    """
    started = time.perf_counter()
    order = list(table_columns) if table_columns is not None else list(hive_types)
    specs = _column_specs(columns, hive_types, order)
    options = _Options(want_ndv=want_ndv, want_histograms=want_histograms, scan=scan)
    paths = [os.path.abspath(os.fspath(f)) for f in files]
    total = len(paths)
    results: list[FileAnalysis | None] = [None] * total
    todo: list[tuple[int, str, int, int, tuple[_ColumnSpec, ...], dict[str, ColumnPartial]]] = []
    done = 0
    for i, path in enumerate(paths):
        size, mtime_ns = _stat(path)
        reused = _from_cache(cache, path, size, mtime_ns, specs, options) if cache is not None else None
        if reused is not None and len(reused[1]) == len(specs):
            info, partials = reused
            results[i] = FileAnalysis(path, size, mtime_ns, info["rows"], info["raw"], partials, "cache")
            done += 1
            if progress is not None:
                progress(done, total)
            continue
        have = reused[1] if reused is not None else {}
        todo.append((i, path, size, mtime_ns, tuple(s for s in specs if s.name not in have), have))

    def finished(index: int, analysis: FileAnalysis) -> None:
        nonlocal done
        results[index] = analysis
        done += 1
        if progress is not None:
            progress(done, total)

    outcomes: list[_FileOutcome] = []
    tasks = _split_tasks(todo, _worker_count(workers))
    expected = {index: 0 for index, *_ in todo}
    for index, _ in tasks:
        expected[index] += 1
    pieces: dict[int, list[_FileOutcome]] = {index: [] for index in expected}
    haves = {index: have for index, *_, have in todo}

    def analysed(index: int, outcome: _FileOutcome) -> None:
        pieces[index].append(outcome)
        if len(pieces[index]) < expected[index]:
            return
        joined = _join_outcomes(pieces.pop(index))
        outcomes.append(joined)
        analysis = joined.analysis
        if haves[index]:
            analysis = replace(analysis, columns={**haves[index], **analysis.columns})
        finished(index, analysis)

    by_index = {item[0]: item for item in todo}
    calls = [(index, (by_index[index][1], by_index[index][2], by_index[index][3], wanted, options))
             for index, wanted in tasks]
    pool_size = min(_worker_count(workers), len(calls))
    if pool_size <= 1:
        for index, call in calls:
            analysed(index, _analyze_file(*call))
    else:
        context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
        with ProcessPoolExecutor(max_workers=pool_size, mp_context=context) as pool:
            futures = {pool.submit(_analyze_file, *call): index for index, call in calls}
            pending = set(futures)
            while pending:
                completed, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for future in completed:
                    error = future.exception()
                    if error is not None:
                        for other in pending:
                            other.cancel()
                        raise error
                    analysed(futures[future], future.result())
    analyses = tuple(r for r in results if r is not None)
    if cache is not None and outcomes:
        cache.put_many((o.analysis.path, o.analysis.size, o.analysis.mtime_ns, o.info, o.entries) for o in outcomes)
    return _combine(analyses, specs, options, started)


def merge_results(results: Iterable[AnalyzeResult]) -> AnalyzeResult:
    """One result for the rows of several (e.g. per-partition results into table statistics): counts add,
    NDV and histogram sketches merge. The results must cover the same columns."""
    parts = list(results)
    if not parts:
        raise InvalidInput("merge_results needs at least one result")
    names = list(parts[0].partials)
    for other in parts[1:]:
        if list(other.partials) != names:
            raise InvalidInput(f"cannot merge results for columns {list(other.partials)} into {names}")
    merged = {name: merge_partials([r.partials[name] for r in parts]) for name in names}
    return AnalyzeResult(
        columns={n: p.to_stats() for n, p in merged.items()},
        partials=merged,
        files=tuple(f for r in parts for f in r.files),
        num_rows=sum(r.num_rows for r in parts),
        raw_data_size=sum(r.raw_data_size for r in parts),
        files_read=sum(r.files_read for r in parts),
        bytes_read=sum(r.bytes_read for r in parts),
        files_reused=sum(r.files_reused for r in parts),
        seconds=sum(r.seconds for r in parts),
        missing={n: m for n in names if (m := frozenset().union(*(r.missing.get(n, frozenset()) for r in parts)))},
        want_ndv=parts[0].want_ndv,
        want_histograms=parts[0].want_histograms,
    )


def results_by_partition(result: AnalyzeResult, partition_of: Callable[[str], str]) -> dict[str, AnalyzeResult]:
    """Split one run over the files of many partitions into a result per partition, without reading anything:
    ``partition_of(path)`` names the partition of each file (e.g. its directory). Merging the parts with
    :func:`merge_results` gives the table statistics. Partitions keep the order of their first file."""
    groups: dict[str, list[FileAnalysis]] = {}
    for analysis in result.files:
        groups.setdefault(partition_of(analysis.path), []).append(analysis)
    options = _Options(want_ndv=result.want_ndv, want_histograms=result.want_histograms, scan=True)
    names = list(result.partials)
    out = {}
    for key, files in groups.items():
        merged = {name: merge_partials([f.columns[name] for f in files]) for name in names}
        out[key] = _result(tuple(files), merged, options, sum(f.seconds for f in files))
    return out


def basic_stats(
    files: Sequence[str | os.PathLike[str]], scan: bool = True, *, cache: FileStatsCache | None = None
) -> BasicStats:
    """Hive's basic statistics of the data files of a table or partition.

    NOSCAN (``scan=False``) looks only at the file system: ``numFiles`` and ``totalSize``. Otherwise the row
    count comes from the ORC footers and ``rawDataSize`` is what Hive's ORC reader reports
    (``Reader.getRawDataSize()``, an estimate of the deserialised Java size from footer statistics; see
    :func:`metastore.stats.orc_convert.raw_data_size_of`), summed over the files.
    """
    sizes = []
    for f in files:
        size, _ = _stat(os.path.abspath(os.fspath(f)))
        sizes.append(size)
    if not scan:
        return BasicStats(num_rows=None, num_files=len(sizes), total_size=sum(sizes), raw_data_size=None)
    rows = raw = 0
    for f in files:
        path = os.path.abspath(os.fspath(f))
        size, mtime_ns = _stat(path)
        cached = cache.get(path, size, mtime_ns) if cache is not None else None
        if cached is not None:
            info = json.loads(cached.info)
            rows += info["rows"]
            raw += info["raw"]
            continue
        with _open(path) as (reader, _):
            rows += reader.num_rows
            raw += _raw_size(reader, path)
    return BasicStats(num_rows=rows, num_files=len(sizes), total_size=sum(sizes), raw_data_size=raw)


# ------------------------------------------------------------------------------------------ planning


def _column_specs(columns: Sequence[str], hive_types: Mapping[str, str], order: Sequence[str]) -> list[_ColumnSpec]:
    if isinstance(columns, str):
        raise InvalidInput("columns must be a sequence of column names, not one string")
    lowered = {k.lower(): k for k in hive_types}
    positions = {name.lower(): i for i, name in enumerate(order)}
    specs = []
    seen = set()
    for name in columns:
        key = name if name in hive_types else lowered.get(name.lower())
        if key is None:
            known = ", ".join(hive_types) or "none"
            raise InvalidInput(f"column '{name}' has no type in hive_types (columns: {known})")
        hive_kind(hive_types[key])  # types without statistics fail here, naming the type
        if name in seen:
            raise InvalidInput(f"column '{name}' is requested twice")
        seen.add(name)
        specs.append(_ColumnSpec(name, hive_types[key].strip().lower(), positions.get(name.lower())))
    return specs


def _worker_count(workers: int | None) -> int:
    if workers is None:
        workers = os.cpu_count() or 1
    return max(1, workers)


# Files smaller than this are not split by columns between workers: each part re-reads the file's tail, and
# below a few hundred thousand rows a file's scan takes less than starting and joining worker processes.
SPLIT_MIN_BYTES = 32 << 20
# Relative cost of scanning a column of each kind (decimals decode varints and scales, strings hash bytes).
_SCAN_COST = {StatsKind.DECIMAL: 4, StatsKind.STRING: 2, StatsKind.BINARY: 2, StatsKind.TIMESTAMP: 2}


def _split_tasks(todo: list, workers: int) -> list[tuple[int, tuple[_ColumnSpec, ...]]]:
    """(file index, columns) tasks: one per file, or, when fewer files than workers need reading, each file's
    columns split into groups of similar cost so that every worker has a share (a single changed file still
    uses every core)."""
    if not todo or len(todo) >= workers:
        return [(index, wanted) for index, _, _, _, wanted, _ in todo]
    per_file = -(-workers // len(todo))
    tasks = []
    for index, _, size, _, wanted, _ in todo:
        groups = min(per_file, len(wanted)) if size >= SPLIT_MIN_BYTES else 1
        if groups <= 1:
            tasks.append((index, wanted))
            continue
        loads = [0] * groups
        members: list[list[_ColumnSpec]] = [[] for _ in range(groups)]
        for spec in sorted(wanted, key=lambda s: -_SCAN_COST.get(hive_kind(s.hive_type), 1)):
            target = loads.index(min(loads))
            members[target].append(spec)
            loads[target] += _SCAN_COST.get(hive_kind(spec.hive_type), 1)
        tasks.extend((index, tuple(group)) for group in members if group)
    return tasks


def _join_outcomes(parts: list[_FileOutcome]) -> _FileOutcome:
    """One file's outcome from the outcomes of its column groups."""
    if len(parts) == 1:
        return parts[0]
    first = parts[0].analysis
    columns: dict[str, ColumnPartial] = {}
    entries: dict[str, bytes] = {}
    for part in parts:
        columns.update(part.analysis.columns)
        entries.update(part.entries)
    analyses = [p.analysis for p in parts]
    analysis = replace(
        first,
        columns=columns,
        source="scan" if any(a.source == "scan" for a in analyses) else first.source,
        bytes_read=sum(a.bytes_read for a in analyses),
        stripes_scanned=max(a.stripes_scanned for a in analyses),
        sketch_metadata_columns=tuple(c for a in analyses for c in a.sketch_metadata_columns),
        seconds=max(a.seconds for a in analyses),
    )
    return _FileOutcome(analysis, parts[0].info, entries)


def _stat(path: str) -> tuple[int, int]:
    try:
        st = os.stat(path)
    except OSError as exc:
        raise HarvestError(f"cannot analyze {path}: {exc.strerror or exc}") from None
    return st.st_size, st.st_mtime_ns


# -------------------------------------------------------------------------------------------- cache

_INFO_KEY_VERSION = 1


def _file_info(reader: OrcReader, raw: int) -> dict[str, Any]:
    schema = reader.schema
    fields = []
    if schema.category == Category.STRUCT:
        fields = [[name, child.id, str(child)] for name, child in zip(schema.field_names, schema.children, strict=True)]
    return {"v": _INFO_KEY_VERSION, "rows": reader.num_rows, "raw": raw, "fields": fields}


def _entry_key(spec: _ColumnSpec, field_ref: tuple[int, str] | None) -> str:
    where = "absent" if field_ref is None else f"{field_ref[0]}:{field_ref[1]}"
    return f"{where}|{spec.hive_type}"


def _from_cache(
    cache: FileStatsCache, path: str, size: int, mtime_ns: int, specs: list[_ColumnSpec], options: _Options
) -> tuple[dict[str, Any], dict[str, ColumnPartial]] | None:
    cached = cache.get(path, size, mtime_ns)
    if cached is None:
        return None
    try:
        info = json.loads(cached.info)
    except ValueError:
        return None
    if info.get("v") != _INFO_KEY_VERSION:
        return None
    fields = [(name, int(cid), type_text) for name, cid, type_text in info["fields"]]
    found: dict[str, ColumnPartial] = {}
    for spec in specs:
        ref = _resolve_field([f[0] for f in fields], spec)
        field_ref = None if ref is None else (fields[ref][1], fields[ref][2])
        raw = cached.entries.get(_entry_key(spec, field_ref))
        if raw is None:
            continue
        try:
            partial = ColumnPartial.from_bytes(raw)
        except ValueError:
            continue
        if partial.missing & _required_facts(options):
            continue
        found[spec.name] = _trim(partial, options)
    return info, found


def _required_facts(options: _Options) -> frozenset[str]:
    required = {MISSING_RANGE, MISSING_NULLS, MISSING_TRUES, MISSING_TOTAL_LENGTH}
    if options.scan:
        required.add(MISSING_MAX_LENGTH)
        if options.want_ndv:
            required.add(MISSING_NDV)
        if options.want_histograms:
            required.add(MISSING_HISTOGRAM)
    return frozenset(required)


def _trim(partial: ColumnPartial, options: _Options) -> ColumnPartial:
    """A partial without what this run did not ask for (a cached sketch is dropped when NDV is not wanted)."""
    changes: dict[str, Any] = {}
    missing = set(partial.missing)
    if not options.want_ndv and partial.kind in _NDV_KINDS:
        changes["sketch"] = None
        missing.add(MISSING_NDV)
    if not options.want_histograms and partial.kind in KLL_KINDS:
        changes["histogram"] = None
        missing.add(MISSING_HISTOGRAM)
    if changes:
        changes["missing"] = frozenset(missing)
        return replace(partial, **changes)
    return partial


def _combine(
    analyses: tuple[FileAnalysis, ...], specs: list[_ColumnSpec], options: _Options, started: float
) -> AnalyzeResult:
    merged: dict[str, ColumnPartial] = {}
    for spec in specs:
        pieces = [analysis.columns[spec.name] for analysis in analyses]
        merged[spec.name] = merge_partials(pieces) if pieces else _absent_partial(hive_kind(spec.hive_type), 0, options)
    return _result(analyses, merged, options, time.perf_counter() - started)


def _result(analyses: tuple[FileAnalysis, ...], merged: dict[str, ColumnPartial], options: _Options,
            seconds: float) -> AnalyzeResult:
    read = [a for a in analyses if a.source != "cache"]
    return AnalyzeResult(
        columns={name: p.to_stats() for name, p in merged.items()},
        partials=merged,
        files=analyses,
        num_rows=sum(a.num_rows for a in analyses),
        raw_data_size=sum(a.raw_data_size for a in analyses),
        files_read=len(read),
        bytes_read=sum(a.bytes_read for a in read),
        files_reused=len(analyses) - len(read),
        seconds=seconds,
        missing=_reported_missing(merged, options),
        want_ndv=options.want_ndv,
        want_histograms=options.want_histograms,
    )


def _reported_missing(partials: Mapping[str, ColumnPartial], options: _Options) -> dict[str, frozenset[str]]:
    # histograms are optional in Hive's statistics: one not asked for is absent, not missing
    ignored = frozenset() if options.want_histograms else frozenset({MISSING_HISTOGRAM})
    out = {}
    for name, partial in partials.items():
        missing = partial.missing - ignored
        if missing:
            out[name] = missing
    return out


# ----------------------------------------------------------------------------------------- one file


class _CountingFile(io.RawIOBase):
    """A read-only file that counts the bytes read through it (handed to OrcReader as its source)."""

    def __init__(self, path: str) -> None:
        super().__init__()
        self.name = path
        self._fd = os.open(path, os.O_RDONLY)
        self._pos = 0
        self.bytes_read = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._pos = os.lseek(self._fd, offset, whence)
        return self._pos

    def tell(self) -> int:
        return self._pos

    def read(self, size: int = -1) -> bytes:
        if size is None or size < 0:
            size = os.fstat(self._fd).st_size - self._pos
        chunks = []
        remaining = size
        while remaining > 0:
            chunk = os.pread(self._fd, remaining, self._pos)
            if not chunk:
                break
            chunks.append(chunk)
            self._pos += len(chunk)
            remaining -= len(chunk)
        data = b"".join(chunks) if len(chunks) != 1 else chunks[0]
        self.bytes_read += len(data)
        return data

    def close(self) -> None:
        if not self.closed:
            os.close(self._fd)
        super().close()


class _open:  # noqa: N801 - used as a context manager: with _open(path) as (reader, counter)
    def __init__(self, path: str) -> None:
        self.path = path

    def __enter__(self) -> tuple[OrcReader, _CountingFile]:
        try:
            self.counter = _CountingFile(self.path)
        except OSError as exc:
            raise HarvestError(f"cannot analyze {self.path}: {exc.strerror or exc}") from None
        try:
            self.reader = OrcReader(self.counter)
        except OrcError as err:
            self.counter.close()
            raise HarvestError(f"cannot analyze {self.path}: not a readable ORC file: {err.reason}") from None
        except Exception as exc:  # noqa: BLE001 - any failure to parse a tail means a corrupt file
            self.counter.close()
            raise HarvestError(f"cannot analyze {self.path}: not a readable ORC file: {exc}") from None
        return self.reader, self.counter

    def __exit__(self, *exc: object) -> None:
        self.counter.close()


def _raw_size(reader: OrcReader, path: str) -> int:
    try:
        return raw_data_size_of(reader)
    except OrcError as err:
        raise HarvestError(f"cannot analyze {path}: {err.reason}") from None


def _analyze_file(
    path: str, size: int, mtime_ns: int, wanted: tuple[_ColumnSpec, ...], options: _Options
) -> _FileOutcome:
    """Analyse one file for ``wanted`` columns (the others came from the cache)."""
    started = time.perf_counter()
    with _open(path) as (reader, counter):
        try:
            outcome = _analyze_open_file(reader, counter, path, size, mtime_ns, wanted, options)
            return replace(outcome, analysis=replace(outcome.analysis, seconds=time.perf_counter() - started))
        except HarvestError:
            raise
        except OrcError as err:
            raise HarvestError(f"cannot analyze {path}: corrupt ORC data: {err}") from None
        except (ValueError, IndexError, OverflowError, MemoryError, KeyError) as exc:
            raise HarvestError(f"cannot analyze {path}: corrupt ORC data: {type(exc).__name__}: {exc}") from None


def _resolve_field(field_names: Sequence[str], spec: _ColumnSpec) -> int | None:
    """Index of the file field holding ``spec`` (None when the file lacks the column)."""
    if field_names and all(_POSITIONAL_NAME.match(n) for n in field_names):
        if spec.position is None:
            return None
        wanted = f"_col{spec.position}"
        return field_names.index(wanted) if wanted in field_names else None
    if spec.name in field_names:
        return field_names.index(spec.name)
    lowered = [n.lower() for n in field_names]
    key = spec.name.lower()
    return lowered.index(key) if key in lowered else None


@dataclass
class _Plan:
    spec: _ColumnSpec
    kind: StatsKind
    node: TypeDescription | None
    facts: OrcColumnFacts | None
    metadata: Any = None  # a SketchRecord from orc_sketch_metadata
    mode: ScanMode | None = None
    with_ids: bool = False
    sketcher: ColumnSketcher | None = None
    scanned_non_null: int = 0


def _analyze_open_file(
    reader: OrcReader, counter: _CountingFile, path: str, size: int, mtime_ns: int,
    wanted: tuple[_ColumnSpec, ...], options: _Options,
) -> _FileOutcome:
    from metastore.stats.orc_sketch_metadata import read_sketch_metadata  # noqa: PLC0415 - imports harvest

    schema = reader.schema
    if schema.category != Category.STRUCT:
        raise HarvestError(f"cannot analyze {path}: the file's schema {schema} is not a struct of columns")
    if tuple(schema.field_names) == _ACID_FIELDS:
        raise HarvestError(f"cannot analyze {path}: Hive ACID (transactional) ORC files are not supported")
    rows = reader.num_rows
    raw = _raw_size(reader, path)
    writer = OrcWriterFacts.from_reader(reader)
    stats_entries = reader.footer.statistics
    field_names = list(schema.field_names)
    plans: list[_Plan] = []
    for spec in wanted:
        kind = hive_kind(spec.hive_type)
        index = _resolve_field(field_names, spec)
        if index is None:
            plans.append(_Plan(spec, kind, None, None))
            continue
        node = schema.children[index]
        if not storage_kind_fits(kind, node):
            raise HarvestError(
                f"cannot analyze {path}: column '{spec.name}' is {spec.hive_type} in the table but the file stores "
                f"field '{field_names[index]}' as {node}"
            )
        facts = None
        if node.id < len(stats_entries):
            facts = orc_column_facts(reader.column_statistics(node.id), node, spec.hive_type, num_rows=rows,
                                     writer=writer, has_value_count=stats_entries[node.id].HasField("number_of_values"))
        plan = _Plan(spec, kind, node, facts)
        record = read_sketch_metadata(reader.user_metadata, field_names[index])
        if record is not None and record.fits(kind, rows, facts.non_null if facts else None):
            plan.metadata = record
        plans.append(plan)

    stripes_scanned = 0
    if options.scan and rows:
        for plan in plans:
            _choose_scan(plan, options)
        scanning = [p for p in plans if p.mode is not None and p.node is not None]
        if scanning:
            requests = [column_request(reader, p.node.id, p.mode, with_ids=p.with_ids) for p in scanning]  # type: ignore[union-attr, arg-type]
            for stripe in range(len(reader.stripes)):
                stripes_scanned += 1
                for plan, chunk in zip(scanning, scan_stripe_columns(reader, stripe, requests), strict=True):
                    _feed(plan, chunk)
    partials: dict[str, ColumnPartial] = {}
    entries: dict[str, bytes] = {}
    for plan in plans:
        partial = _partial(plan, rows, options)
        partials[plan.spec.name] = partial
        ref = None if plan.node is None else (plan.node.id, str(plan.node))
        entries[_entry_key(plan.spec, ref)] = partial.to_bytes()
    from_metadata = tuple(p.spec.name for p in plans if p.metadata is not None)
    source = "scan" if stripes_scanned else "footer"
    analysis = FileAnalysis(path, size, mtime_ns, rows, raw, partials, source, counter.bytes_read, stripes_scanned,
                            from_metadata)
    return _FileOutcome(analysis, json.dumps(_file_info(reader, raw)).encode(), entries)


def _choose_scan(plan: _Plan, options: _Options) -> None:
    """Decide what (if anything) must be read for a column: the cheapest mode that answers every open fact."""
    if plan.node is None:
        return
    facts = plan.facts
    kind = plan.kind
    meta = plan.metadata
    known_nulls = facts is not None and facts.num_nulls is not None
    non_null = facts.non_null if facts is not None else None
    if non_null == 0 and known_nulls:
        return  # nothing but nulls: every fact is known
    need_nulls = not known_nulls
    need_range = kind in _RANGE_KINDS and not (facts is not None and facts.has_range)
    need_trues = kind is StatsKind.BOOLEAN and (facts is None or facts.num_trues is None)
    need_total = kind in _LENGTH_KINDS and (facts is None or facts.total_length is None)
    need_max = kind in _LENGTH_KINDS and meta is None
    need_ndv = options.want_ndv and kind in _NDV_KINDS and meta is None
    need_hist = options.want_histograms and kind in KLL_KINDS and (meta is None or meta.histogram is None)
    if kind in _LENGTH_KINDS:
        if need_ndv:
            plan.mode = "values"
        elif need_max or need_total or need_nulls:
            plan.mode = "lengths"
            plan.with_ids = need_total
    elif need_ndv or need_hist or need_range or need_trues:
        plan.mode = "values"
    elif need_nulls:
        plan.mode = "present"
    if plan.mode is not None:
        plan.sketcher = ColumnSketcher(kind, range_=need_range, ndv=need_ndv, histogram=need_hist)


def _feed(plan: _Plan, chunk: StripeColumn) -> None:
    sketcher = plan.sketcher
    assert sketcher is not None and plan.node is not None
    plan.scanned_non_null += chunk.non_null
    if chunk.vector is not None:
        sketcher.add_vector(chunk.vector, plan.node.category)
    elif chunk.value_lengths is not None:
        sketcher.add_lengths(chunk.value_lengths)
    elif chunk.dictionary_lengths is not None:
        lengths = chunk.dictionary_lengths
        if chunk.dictionary_ids is not None:
            sketcher.add_lengths(lengths[chunk.dictionary_ids])
        elif lengths.size and chunk.non_null:
            # every dictionary entry stands for at least one value of the stripe
            sketcher.add_lengths(lengths, count_rows=False)


def _partial(plan: _Plan, rows: int, options: _Options) -> ColumnPartial:
    kind = plan.kind
    if plan.node is None:
        # a column the file lacks reads as NULL in every row
        return _absent_partial(kind, rows, options)
    facts = plan.facts
    meta = plan.metadata
    sk = plan.sketcher
    missing: set[str] = set()
    if facts is not None and facts.num_nulls is not None:
        nulls = facts.num_nulls
    elif sk is not None:
        nulls = rows - plan.scanned_non_null
    else:
        nulls, missing = 0, missing | {MISSING_NULLS}
    non_null = rows - nulls
    low = high = None
    if kind in _RANGE_KINDS and non_null:
        if facts is not None and facts.has_range:
            low, high = facts.low, facts.high
        elif sk is not None and sk.want_range:
            low, high = sk.low, sk.high
        else:
            missing.add(MISSING_RANGE)
    trues = 0
    if kind is StatsKind.BOOLEAN and non_null:
        if facts is not None and facts.num_trues is not None:
            trues = facts.num_trues
        elif sk is not None:
            trues = sk.num_trues
        else:
            missing.add(MISSING_TRUES)
    total = max_len = 0
    if kind in _LENGTH_KINDS and non_null:
        if facts is not None and facts.total_length is not None:
            total = facts.total_length
        elif sk is not None:
            # a scan that had to find the total counted every value (values, or lengths with ids)
            total = sk.total_length
        else:
            missing.add(MISSING_TOTAL_LENGTH)
        if meta is not None:
            max_len = meta.max_length
        elif sk is not None:
            max_len = sk.max_length
        else:
            missing.add(MISSING_MAX_LENGTH)
    sketch = None
    if kind in _NDV_KINDS:
        if not options.want_ndv:
            missing.add(MISSING_NDV)
        elif meta is not None:
            sketch = meta.sketch
        elif sk is not None and sk.hll is not None:
            sketch = sk.sketch_bytes()
        elif non_null == 0:
            sketch = HyperLogLog(SKETCH_P).to_bytes()
        else:
            missing.add(MISSING_NDV)
    histogram = None
    if kind in KLL_KINDS:
        if not options.want_histograms:
            missing.add(MISSING_HISTOGRAM)
        elif meta is not None and meta.histogram is not None:
            histogram = meta.histogram
        elif sk is not None and sk.kll is not None:
            histogram = sk.histogram_bytes()
        elif non_null:
            missing.add(MISSING_HISTOGRAM)
    return ColumnPartial(kind=kind, rows=rows, num_nulls=nulls, low=low, high=high, num_trues=trues,
                         total_length=total, max_length=max_len, sketch=sketch, histogram=histogram,
                         missing=frozenset(missing))


def _absent_partial(kind: StatsKind, rows: int, options: _Options) -> ColumnPartial:
    """All-null rows: an empty sketch (so merges still go through sketches) and nothing else to know."""
    missing = set()
    sketch = None
    if kind in _NDV_KINDS:
        if options.want_ndv:
            sketch = HyperLogLog(SKETCH_P).to_bytes()
        else:
            missing.add(MISSING_NDV)
    if kind in KLL_KINDS and not options.want_histograms:
        missing.add(MISSING_HISTOGRAM)
    return ColumnPartial(kind=kind, rows=rows, num_nulls=rows, sketch=sketch, missing=frozenset(missing))
