"""Hive's Flajolet-Martin NDV sketch (``org.apache.hadoop.hive.common.ndv.fm``): read, merge, estimate.

Hive 2.x/3.x wrote column ``bitVectors`` with this estimator when ``hive.stats.ndv.algo`` was ``fm``. The
bytes (``FMSketchUtils``) are ``b"FM"``, a 2-byte little-endian number of bit vectors, then 4 little-endian
bytes per vector whose bit i says position i was hit (31 positions are used). Two sketches merge by OR-ing
their vectors when they have the same number of vectors. The estimate is Hive's:
``(long) 2 ** (mean(position of the lowest clear bit) - log2(0.77351))``.

This module does not add values: every new sketch the metastore writes is a HyperLogLog.
"""

from __future__ import annotations

import math

import numpy as np

__all__ = ["FM_MAGIC", "FmFormatError", "FMSketch"]

FM_MAGIC = b"FM"
BIT_VECTOR_SIZE = 31
_PHI = 0.77351


class FmFormatError(ValueError):
    """Bytes that are not a readable Hive FM sketch."""


class FMSketch:
    """A set of Flajolet-Martin bit vectors as Hive serializes them."""

    __slots__ = ("vectors",)

    def __init__(self, num_bit_vectors: int) -> None:
        if not 0 <= num_bit_vectors <= 0xFFFF:
            raise ValueError(f"an FM sketch has 0..65535 bit vectors, got {num_bit_vectors}")
        self.vectors = np.zeros(num_bit_vectors, dtype=np.uint32)

    @property
    def num_bit_vectors(self) -> int:
        """How many bit vectors the sketch has (Hive's ``numBitVectors``)."""
        return int(self.vectors.size)

    def copy(self) -> FMSketch:
        """An independent copy."""
        other = FMSketch(self.num_bit_vectors)
        other.vectors[:] = self.vectors
        return other

    def can_merge(self, other: object) -> bool:
        """Hive's ``canMerge``: another FM sketch with the same number of vectors."""
        return isinstance(other, FMSketch) and other.num_bit_vectors == self.num_bit_vectors

    def merge(self, other: FMSketch) -> None:
        """OR ``other``'s vectors into this sketch."""
        if not self.can_merge(other):
            raise ValueError(
                f"FM sketches with {self.num_bit_vectors} and "
                f"{getattr(other, 'num_bit_vectors', '?')} bit vectors cannot be merged"
            )
        np.bitwise_or(self.vectors, other.vectors, out=self.vectors)

    def estimate(self) -> int:
        """Hive's ``FMSketch.estimateNumDistinctValues()``."""
        n = self.num_bit_vectors
        if n == 0:
            return 0
        inverted = ~self.vectors
        # Lowest clear bit = trailing ones; an all-ones vector reports 32, like FastBitSet.nextClearBit.
        lowest = inverted & (~inverted + np.uint32(1))
        position = np.where(inverted == 0, 32, np.frexp(lowest.astype(np.float64))[1] - 1)
        mean = int(position.sum()) / (n * 1.0) - (math.log(_PHI) / math.log(2.0))
        return int(math.pow(2.0, mean))

    def to_bytes(self) -> bytes:
        """Hive's serialized form."""
        n = self.num_bit_vectors
        return FM_MAGIC + bytes([n & 0xFF, (n >> 8) & 0xFF]) + self.vectors.astype("<u4").tobytes()

    @classmethod
    def from_bytes(cls, data: bytes | bytearray | memoryview) -> FMSketch:
        """Read Hive's serialized form; raises :class:`FmFormatError` on malformed bytes."""
        buf = bytes(data)
        if len(buf) < 4 or buf[:2] != FM_MAGIC:
            raise FmFormatError("not an FM sketch (no 'FM' magic and vector count)")
        n = buf[2] | (buf[3] << 8)
        need = 4 + 4 * n
        if len(buf) < need:
            raise FmFormatError(f"FM sketch announces {n} bit vectors but has {(len(buf) - 4) // 4}")
        sketch = cls(n)
        sketch.vectors[:] = np.frombuffer(buf, dtype="<u4", count=n, offset=4)
        return sketch

    def __repr__(self) -> str:
        return f"FMSketch(num_bit_vectors={self.num_bit_vectors}, estimate={self.estimate()})"
