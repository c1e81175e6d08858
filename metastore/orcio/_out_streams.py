"""Output side of ORC streams: compression into chunks and mapping row-index positions into them.

Java's ``OutStream`` fills a buffer of ``compression block size`` bytes and compresses it only when the next
byte does not fit (or at the stripe's end). A position recorded exactly at a full buffer is therefore
``(start of that chunk, block size)``, not the start of the next chunk; we record the same.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._compression import CompressionKind, compress_stream
from ._proto import orc_proto_pb2 as pb

# Java's getCustomizedCodec: data-like streams get the FAST zlib level, the small integer streams FASTEST
_FASTEST_KINDS = frozenset(
    {pb.Stream.LENGTH, pb.Stream.DICTIONARY_COUNT, pb.Stream.PRESENT, pb.Stream.ROW_INDEX, pb.Stream.SECONDARY}
)
ZLIB_FAST = 2
ZLIB_FASTEST = 1


@dataclass(frozen=True)
class Codec:
    """Compression kind and block size of one file."""

    kind: CompressionKind
    block_size: int

    def level_for(self, stream_kind: int | None) -> int | None:
        """Compression level for a stream kind (only zlib distinguishes them)."""
        if self.kind != CompressionKind.ZLIB or stream_kind is None:
            return None
        return ZLIB_FASTEST if stream_kind in _FASTEST_KINDS else ZLIB_FAST


@dataclass(frozen=True)
class CompressedBytes:
    """A stream's bytes as stored, with where each compressed chunk starts."""

    data: bytes
    chunk_starts: np.ndarray  # int64; empty for NONE
    raw_length: int


def compress(codec: Codec, data: bytes, stream_kind: int | None = None) -> CompressedBytes:
    """Chunk and compress ``data`` (NONE returns it unchanged)."""
    if codec.kind == CompressionKind.NONE:
        return CompressedBytes(bytes(data), np.zeros(0, dtype=np.int64), len(data))
    out = compress_stream(codec.kind, codec.block_size, data, level=codec.level_for(stream_kind))
    return CompressedBytes(out.data, np.asarray(out.chunk_starts, dtype=np.int64), len(data))


def map_positions(codec: Codec, stream: CompressedBytes, positions: np.ndarray) -> np.ndarray:
    """Turn ``(raw offset, extras...)`` rows into ORC row-index positions for the stored stream.

    NONE: ``(offset, extras...)``; compressed: ``(chunk start, offset in chunk, extras...)``.
    """
    positions = np.asarray(positions, dtype=np.int64)
    if codec.kind == CompressionKind.NONE:
        return positions
    raw = positions[:, 0]
    block = codec.block_size
    chunk = np.where(raw > 0, (raw - 1) // block, 0)
    inside = raw - chunk * block
    if len(stream.chunk_starts):
        starts = stream.chunk_starts[np.minimum(chunk, len(stream.chunk_starts) - 1)]
    else:
        starts = np.zeros(len(raw), dtype=np.int64)
    starts = np.where(raw > 0, starts, 0)
    return np.concatenate([starts[:, None], inside[:, None], positions[:, 1:]], axis=1)
