"""NDV sketches behind one face: Hive's ``bitVectors`` bytes, HyperLogLog or FM, and typed vectorised adds.

Format detection follows Hive's ``NumDistinctValueEstimatorFactory``: bytes starting with ``b"FM"`` are an FM
sketch, anything else must be a HyperLogLog (``b"HLL"``).

What gets hashed, per column kind (Hive's ``HyperLogLog.add*`` calls from its compute-stats UDAFs, all through
Murmur3 ``hash64`` with seed 104729):

=============  =================================================================================
long kinds     ``hash64(long)`` of the value (tinyint..bigint widened to long)
double/float   ``hash64(Double.doubleToLongBits(v))``: floats are widened to double first, NaNs
               collapse to the canonical NaN, -0.0 and 0.0 differ
decimal        added as its double value (``HiveDecimal.doubleValue()``)
string/char    ``hash64`` of the UTF-8 bytes
binary         ``hash64`` of the bytes
boolean        ``hash64`` of the single byte 0 or 1
date           ``hash64(long)`` of days since 1970-01-01
timestamp      ``hash64(long)`` of whole seconds since the epoch (floor), which is what Hive 4's
               ``TimestampStatsAgg`` adds (``TimestampWritableV2.getSeconds()``) and what Hive 2/3
               added through the long evaluator
=============  =================================================================================
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Sequence
from decimal import Decimal
from typing import Any

import numpy as np

from metastore.orcio import hash64_array_bytes, hash64_array_long
from metastore.stats.fmsketch import FM_MAGIC, FmFormatError, FMSketch
from metastore.stats.hll import DEFAULT_P, HllFormatError, HyperLogLog
from metastore.stats.hll import MAGIC as HLL_MAGIC
from metastore.stats.model import StatsKind

__all__ = [
    "NdvFormatError",
    "NdvSketch",
    "decimal_doubles",
    "double_hashes",
    "hashes_for",
    "merge_all",
    "merge_sketches",
    "sketch_format",
]

_CANONICAL_NAN = np.int64(0x7FF8000000000000)
_MAX_EXACT_INT_DOUBLE = 1 << 53
_EPOCH_DATE = dt.date(1970, 1, 1)
_EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)


class NdvFormatError(ValueError):
    """Bytes that are neither a readable HyperLogLog nor a readable FM sketch."""


def sketch_format(data: bytes | None) -> str | None:
    """``"fm"`` or ``"hll"`` by the magic Hive looks at, else None."""
    if not data:
        return None
    if data[:2] == FM_MAGIC:
        return "fm"
    if data[:3] == HLL_MAGIC:
        return "hll"
    return None


# ----------------------------------------------------------------------------------------------- hashing


def _long_hashes(values: Iterable[int] | np.ndarray) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype.kind not in "iub":
        arr = np.asarray([int(v) for v in arr.ravel()], dtype=np.int64)
    return hash64_array_long(arr.astype(np.int64, copy=False).ravel())


def double_hashes(values: Iterable[float] | np.ndarray) -> np.ndarray:
    """Hive's hashes of double values: Murmur3 of ``Double.doubleToLongBits`` (every NaN is the canonical
    NaN; -0.0 and 0.0 stay apart). A float64 array is hashed without a copy unless it holds NaNs."""
    arr = np.asarray(values, dtype=np.float64).ravel()
    bits = arr.view(np.int64)
    nan = np.isnan(arr)
    if nan.any():
        bits = bits.copy()
        bits[nan] = _CANONICAL_NAN
    return hash64_array_long(bits)


def decimal_doubles(unscaled: np.ndarray, scale: int) -> np.ndarray:
    """The correctly rounded double of each decimal given as int64 unscaled values at ``scale`` (what
    ``HiveDecimal.doubleValue`` gives, and so what Hive hashes for a decimal)."""
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


def _bytes_hashes(values: Sequence[bytes]) -> np.ndarray:
    return hash64_array_bytes([bytes(v) for v in values] if not isinstance(values, list) else values)


def _string_hashes(values: Iterable[str]) -> np.ndarray:
    return hash64_array_bytes([v.encode("utf-8") for v in values])


def _boolean_hashes(values: Iterable[bool] | np.ndarray) -> np.ndarray:
    flags = np.asarray(values, dtype=bool).ravel()
    table = hash64_array_bytes([b"\x00", b"\x01"])
    return table[flags.astype(np.intp)]


def _decimal_hashes(values: Iterable[Decimal | int | float | str]) -> np.ndarray:
    return double_hashes(
        np.fromiter((float(Decimal(v) if isinstance(v, str) else v) for v in values), np.float64)
    )


def _date_hashes(values: Iterable[dt.date | int] | np.ndarray) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype.kind == "M":
        days = arr.astype("datetime64[D]").astype(np.int64)
    elif arr.dtype.kind in "iu":
        days = arr.astype(np.int64)
    else:
        days = np.fromiter(
            (v if isinstance(v, int) else (v - _EPOCH_DATE).days for v in arr.ravel()), dtype=np.int64
        )
    return hash64_array_long(days.ravel())


def _timestamp_hashes(values: Iterable[dt.datetime | int] | np.ndarray) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype.kind == "M":
        # astype to seconds truncates toward zero; Hive's getSeconds floors, so floor explicitly.
        ns = arr.astype("datetime64[ns]").astype(np.int64)
        seconds = np.floor_divide(ns, 1_000_000_000)
    elif arr.dtype.kind in "iu":
        seconds = arr.astype(np.int64)
    else:
        seconds = np.fromiter((_epoch_seconds(v) for v in arr.ravel()), dtype=np.int64)
    return hash64_array_long(seconds.ravel())


def _epoch_seconds(value: dt.datetime | int) -> int:
    if isinstance(value, int):
        return value
    if value.tzinfo is None:
        # Hive timestamps are zone-less local date-times, stored as if they were UTC.
        value = value.replace(tzinfo=dt.UTC)
    delta = value - _EPOCH
    return delta.days * 86400 + delta.seconds  # floor for pre-epoch values with microseconds


_HASHERS: dict[StatsKind, Callable[[Any], np.ndarray]] = {
    StatsKind.LONG: _long_hashes,
    StatsKind.DOUBLE: double_hashes,
    StatsKind.DECIMAL: _decimal_hashes,
    StatsKind.STRING: _string_hashes,
    StatsKind.BINARY: _bytes_hashes,
    StatsKind.BOOLEAN: _boolean_hashes,
    StatsKind.DATE: _date_hashes,
    StatsKind.TIMESTAMP: _timestamp_hashes,
}


def hashes_for(kind: StatsKind, values: Sequence[Any] | np.ndarray) -> np.ndarray:
    """The Murmur3 hashes (int64) Hive feeds its NDV sketch for non-null ``values`` of a column ``kind``."""
    return _HASHERS[kind](values)


# ------------------------------------------------------------------------------------------------ facade


class NdvSketch:
    """One NDV sketch, HyperLogLog (what the metastore writes) or FM (read from older Hive writers)."""

    __slots__ = ("sketch",)

    def __init__(self, sketch: HyperLogLog | FMSketch | None = None, *, p: int = DEFAULT_P) -> None:
        self.sketch: HyperLogLog | FMSketch = sketch if sketch is not None else HyperLogLog(p)

    @property
    def format(self) -> str:
        """``"hll"`` or ``"fm"``."""
        return "fm" if isinstance(self.sketch, FMSketch) else "hll"

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> NdvSketch:
        """Parse a Hive ``bitVectors`` value; raises :class:`NdvFormatError` when it is not readable."""
        buf = bytes(data)
        if len(buf) < 2:
            raise NdvFormatError(f"bitVector of {len(buf)} bytes is neither an HLL nor an FM sketch")
        try:
            if buf[:2] == FM_MAGIC:
                return cls(FMSketch.from_bytes(buf))
            if buf[:3] != HLL_MAGIC:
                raise NdvFormatError(
                    f"bitVector starting {buf[:3]!r} is neither an HLL ('HLL') nor an FM ('FM') sketch"
                )
            return cls(HyperLogLog.from_bytes(buf))
        except (HllFormatError, FmFormatError) as exc:
            raise NdvFormatError(f"bitVector is not a readable sketch: {exc}") from exc

    def to_bytes(self) -> bytes:
        """The Hive ``bitVectors`` bytes."""
        return self.sketch.to_bytes()

    def estimate(self) -> int:
        """Hive's ``estimateNumDistinctValues()``."""
        return self.sketch.estimate()

    def copy(self) -> NdvSketch:
        """An independent copy."""
        return NdvSketch(self.sketch.copy())

    def can_merge(self, other: NdvSketch) -> bool:
        """Whether Hive could merge the two: both HLL, or FM with the same number of bit vectors."""
        if isinstance(self.sketch, HyperLogLog):
            return isinstance(other.sketch, HyperLogLog)
        return self.sketch.can_merge(other.sketch)

    def merged(self, other: NdvSketch) -> NdvSketch:
        """A new sketch of the union; HLLs of different p meet at the smaller p. Raises ValueError if
        the two cannot merge."""
        if not self.can_merge(other):
            raise ValueError(f"cannot merge a {self.format} sketch with a {other.format} sketch")
        if isinstance(self.sketch, HyperLogLog):
            assert isinstance(other.sketch, HyperLogLog)
            low, high = sorted((self.sketch, other.sketch), key=lambda s: s.p)
            result = low.copy()
            result.merge(high)
            return NdvSketch(result)
        assert isinstance(other.sketch, FMSketch)  # can_merge: FM merges only with FM
        result_fm = self.sketch.copy()
        result_fm.merge(other.sketch)
        return NdvSketch(result_fm)

    # Typed adds: each takes the column's non-null values (numpy arrays or sequences).

    def add_hashes(self, hashes: np.ndarray) -> None:
        """Add precomputed Murmur3 hashes (HLL only)."""
        if not isinstance(self.sketch, HyperLogLog):
            raise TypeError("values can only be added to a HyperLogLog sketch")
        self.sketch.add_hashes(hashes)

    def add_values(self, kind: StatsKind, values: Sequence[Any] | np.ndarray) -> None:
        """Add non-null values of a column of statistics ``kind`` (see the module table)."""
        self.add_hashes(hashes_for(kind, values))

    def add_longs(self, values: Sequence[int] | np.ndarray) -> None:
        """Add tinyint/smallint/int/bigint values."""
        self.add_hashes(_long_hashes(values))

    def add_doubles(self, values: Sequence[float] | np.ndarray) -> None:
        """Add float/double values."""
        self.add_hashes(double_hashes(values))

    def add_decimals(self, values: Sequence[Decimal | int | float | str]) -> None:
        """Add decimal values (hashed as doubles, as Hive does)."""
        self.add_hashes(_decimal_hashes(values))

    def add_strings(self, values: Sequence[str]) -> None:
        """Add string/varchar/char values (UTF-8)."""
        self.add_hashes(_string_hashes(values))

    def add_binaries(self, values: Sequence[bytes]) -> None:
        """Add binary values."""
        self.add_hashes(_bytes_hashes(values))

    def add_booleans(self, values: Sequence[bool] | np.ndarray) -> None:
        """Add boolean values."""
        self.add_hashes(_boolean_hashes(values))

    def add_dates(self, values: Sequence[dt.date | int] | np.ndarray) -> None:
        """Add dates (``datetime.date``, ``datetime64`` or days since the epoch)."""
        self.add_hashes(_date_hashes(values))

    def add_timestamps(self, values: Sequence[dt.datetime | int] | np.ndarray) -> None:
        """Add timestamps (``datetime``, ``datetime64`` or epoch seconds); hashed as whole epoch seconds."""
        self.add_hashes(_timestamp_hashes(values))

    def __repr__(self) -> str:
        return f"NdvSketch({self.sketch!r})"


def merge_sketches(blobs: Sequence[bytes]) -> NdvSketch | None:
    """The union of Hive ``bitVectors`` values, or None if any is unreadable or they cannot all merge."""
    if not blobs:
        return None
    try:
        sketches = [NdvSketch.from_bytes(b) for b in blobs]
    except NdvFormatError:
        return None
    first = sketches[0]
    if not all(first.can_merge(s) for s in sketches[1:]):
        return None
    # can_merge held for all: either every sketch is an HLL or every one is an FM sketch
    hlls = [s.sketch for s in sketches if isinstance(s.sketch, HyperLogLog)]
    if hlls:
        result = HyperLogLog(min(h.p for h in hlls))
        for h in hlls:
            result.merge(h)
        return NdvSketch(result)
    fms = [s.sketch for s in sketches if isinstance(s.sketch, FMSketch)]
    fm = fms[0].copy()
    for other in fms[1:]:
        fm.merge(other)
    return NdvSketch(fm)


def merge_all(blobs: Sequence[bytes]) -> int | None:
    """The estimated NDV of the union of ``blobs``, or None if any is unreadable or they cannot all merge."""
    merged = merge_sketches(blobs)
    return None if merged is None else merged.estimate()
