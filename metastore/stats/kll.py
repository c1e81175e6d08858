"""KLL float histograms in Apache DataSketches' format: Hive 4's column-statistics ``histogram`` field.

Hive (HIVE-26221) serializes ``KllFloatsSketch.toByteArray()`` with k = 200 for long, double, decimal, date and
timestamp columns. Values go in as 32-bit floats: integers and decimals as their numeric value, dates and
timestamps as epoch seconds (Hive 4 computes them with ``ds_kll_sketch`` over ``unix_timestamp`` of the value;
metastore.stats.harvest follows the same convention). The Python ``datasketches`` package writes the same compact
serialization as the Java library.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from metastore.stats.model import StatsKind

if TYPE_CHECKING:
    import datasketches

__all__ = [
    "DEFAULT_K",
    "KLL_KINDS",
    "KllFormatError",
    "histogram_for",
    "kll_from_bytes",
    "kll_merge",
    "kll_merge_all",
    "kll_of",
]

DEFAULT_K = 200
KLL_KINDS = frozenset(
    {StatsKind.LONG, StatsKind.DOUBLE, StatsKind.DECIMAL, StatsKind.DATE, StatsKind.TIMESTAMP}
)


class KllFormatError(ValueError):
    """Bytes that are not a readable DataSketches KLL float sketch."""


def kll_of(values: Sequence[float] | np.ndarray, k: int = DEFAULT_K) -> datasketches.kll_floats_sketch:
    """A KLL float sketch of ``values`` (NaNs are skipped, as DataSketches does)."""
    import datasketches  # loaded on first use: most statistics runs build no histogram

    sketch = datasketches.kll_floats_sketch(k)
    arr = np.asarray(values, dtype=np.float32).ravel()
    if arr.size:
        sketch.update(arr)
    return sketch


def histogram_for(kind: StatsKind, values: Sequence[Any] | np.ndarray, k: int = DEFAULT_K) -> bytes:
    """The serialized KLL histogram Hive would store for non-null ``values`` of a column ``kind``.

    ``values`` are numbers for long/double/decimal kinds, days since the epoch (or datetime64) for dates and
    epoch seconds (or datetime64) for timestamps; both temporal kinds are sketched as epoch seconds.
    """
    if kind not in KLL_KINDS:
        raise ValueError(f"{kind.name.lower()} columns carry no histogram")
    arr = np.asarray([float(v) for v in values] if kind is StatsKind.DECIMAL else values)
    if arr.dtype.kind == "M":
        arr = arr.astype("datetime64[s]").astype(np.int64)
    elif kind is StatsKind.DATE:
        arr = arr.astype(np.int64) * 86_400
    return bytes(kll_of(arr.astype(np.float64), k).serialize())


def kll_from_bytes(data: bytes | bytearray | memoryview) -> datasketches.kll_floats_sketch:
    """Read a serialized KLL float sketch; raises :class:`KllFormatError` when unreadable."""
    try:
        import datasketches  # loaded on first use: most statistics runs build no histogram

        return datasketches.kll_floats_sketch.deserialize(bytes(data))
    except (RuntimeError, ValueError, TypeError, IndexError) as exc:
        raise KllFormatError(f"histogram is not a readable KLL float sketch: {exc}") from exc


def kll_merge(a: bytes, b: bytes) -> bytes:
    """The serialized union of two KLL float sketches."""
    return kll_merge_all([a, b])


def kll_merge_all(blobs: Sequence[bytes]) -> bytes:
    """The serialized union of one or more KLL float sketches (each parsed, the union serialized once);
    raises :class:`KllFormatError` when one is unreadable and ValueError when there are none."""
    if not blobs:
        raise ValueError("kll_merge_all needs at least one sketch")
    merged = kll_from_bytes(blobs[0])
    for blob in blobs[1:]:
        merged.merge(kll_from_bytes(blob))
    return bytes(merged.serialize())
