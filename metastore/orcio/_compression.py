"""ORC compression: the codecs and the chunked stream framing shared by every compressed stream.

A compressed ORC stream is a sequence of chunks, each with a 3-byte little-endian header
``length * 2 + is_original``; an original chunk holds its bytes as they are (the writer stores a chunk raw when
compressing would not make it smaller). Every chunk decompresses to at most ``block_size`` bytes.

Codecs: ZLIB is raw deflate (no zlib header), SNAPPY and LZ4 are raw blocks (no framing, no stored size),
ZSTD is a zstd frame, LZO is LZO1X (decoded in pure Python, read-only). All but LZO run in C and release the GIL.
"""

from __future__ import annotations

import enum
import zlib
from collections.abc import Callable
from dataclasses import dataclass

import cramjam
import numpy as np

from ._errors import OrcError, UnsupportedOrcFeature
from ._lzo import lzo1x_decompress

#: The block size a reader assumes when the PostScript does not say.
DEFAULT_BLOCK_SIZE = 262144
#: The largest chunk the 3-byte header can describe (23 bits of length).
MAX_CHUNK_LENGTH = (1 << 23) - 1
#: Decompressed streams bigger than this need a higher limit from the caller (guards against bombs in bad files).
DEFAULT_MAX_STREAM_BYTES = 1 << 31


class CompressionKind(enum.IntEnum):
    """PostScript.compression values (orc_proto CompressionKind)."""

    NONE = 0
    ZLIB = 1
    SNAPPY = 2
    LZO = 3
    LZ4 = 4
    ZSTD = 5
    BROTLI = 6

    @classmethod
    def parse(cls, name: str | int | CompressionKind) -> CompressionKind:
        """Accept an enum value, its number or a name as ``orc.compress`` spells it (case-insensitive)."""
        if isinstance(name, CompressionKind):
            return name
        if isinstance(name, int):
            try:
                return cls(name)
            except ValueError:
                raise OrcError(f"unknown compression kind {name}") from None
        key = name.strip().upper()
        aliases = {"UNCOMPRESSED": "NONE", "GZIP": "ZLIB", "DEFLATE": "ZLIB", "ZSTANDARD": "ZSTD"}
        key = aliases.get(key, key)
        try:
            return cls[key]
        except KeyError:
            raise OrcError(f"unknown compression {name!r}; expected one of NONE, ZLIB, SNAPPY, LZ4, ZSTD") from None


def chunk_header(length: int, original: bool) -> bytes:
    """The 3-byte header of a chunk holding ``length`` bytes."""
    if not 0 <= length <= MAX_CHUNK_LENGTH:
        raise OrcError(f"compression chunk of {length} bytes does not fit the 3-byte chunk header")
    value = length * 2 + (1 if original else 0)
    return bytes((value & 0xFF, (value >> 8) & 0xFF, value >> 16))


# ----------------------------------------------------------------------------------------------------------
# decompression


def _inflate(data: memoryview, block_size: int, out: memoryview) -> int:
    inflater = zlib.decompressobj(-15)
    try:
        piece = inflater.decompress(data, block_size)
    except zlib.error as exc:
        raise OrcError(f"corrupt ZLIB chunk: {exc}") from None
    if inflater.unconsumed_tail:
        raise OrcError(f"ZLIB chunk decompresses to more than the block size {block_size}")
    if not inflater.eof:
        raise OrcError("ZLIB chunk is truncated (its deflate stream does not end)")
    n = len(piece)
    out[:n] = piece
    return n


def _snappy(data: memoryview, block_size: int, out: memoryview) -> int:
    try:
        size = cramjam.snappy.decompress_raw_len(data)
    except cramjam.DecompressionError as exc:
        raise OrcError(f"corrupt SNAPPY chunk: {exc}") from None
    if size > block_size:
        raise OrcError(f"SNAPPY chunk claims {size} bytes, more than the block size {block_size}")
    try:
        return cramjam.snappy.decompress_raw_into(data, out[:size])
    except cramjam.DecompressionError as exc:
        raise OrcError(f"corrupt SNAPPY chunk: {exc}") from None


def _lz4(data: memoryview, block_size: int, out: memoryview) -> int:
    try:
        return cramjam.lz4.decompress_block_into(data, out[:block_size])
    except cramjam.DecompressionError as exc:
        raise OrcError(f"corrupt LZ4 chunk (or larger than the block size {block_size}): {exc}") from None


def _zstd(data: memoryview, block_size: int, out: memoryview) -> int:
    try:
        return cramjam.zstd.decompress_into(data, out[:block_size])
    except cramjam.DecompressionError as exc:
        raise OrcError(f"corrupt ZSTD chunk (or larger than the block size {block_size}): {exc}") from None


def _lzo(data: memoryview, block_size: int, out: memoryview) -> int:
    piece = lzo1x_decompress(bytes(data), block_size)
    out[: len(piece)] = piece
    return len(piece)


_Codec = Callable[[memoryview, int, memoryview], int]


def _unsupported(kind: CompressionKind) -> _Codec:
    def fail(data: memoryview, block_size: int, out: memoryview) -> int:
        raise UnsupportedOrcFeature(f"{kind.name} compression is not supported")

    return fail


_DECOMPRESSORS: dict[CompressionKind, _Codec] = {
    CompressionKind.ZLIB: _inflate,
    CompressionKind.SNAPPY: _snappy,
    CompressionKind.LZ4: _lz4,
    CompressionKind.ZSTD: _zstd,
    CompressionKind.LZO: _lzo,
    CompressionKind.BROTLI: _unsupported(CompressionKind.BROTLI),
}


def decompress_chunk(kind: CompressionKind, data: bytes | memoryview, block_size: int) -> bytes:
    """Decompress one chunk body (no header) with the codec of ``kind``; at most ``block_size`` bytes result."""
    try:
        codec = _DECOMPRESSORS[CompressionKind(kind)]
    except (KeyError, ValueError):
        raise OrcError(f"cannot decompress with compression kind {kind}") from None
    out = bytearray(block_size)
    n = codec(memoryview(data), block_size, memoryview(out))
    del out[n:]
    return bytes(out)


@dataclass(frozen=True)
class DecompressedStream:
    """A stream's bytes after decompression plus where each chunk started on both sides.

    ``compressed_starts[i]`` is the offset of chunk i's header in the compressed stream and
    ``decompressed_starts[i]`` the offset of its first byte in :attr:`data`; a row-index position
    ``(chunk_start, offset_in_chunk)`` therefore maps to ``decompressed_starts[k] + offset_in_chunk`` where
    ``compressed_starts[k] == chunk_start``.
    """

    data: bytes | memoryview
    compressed_starts: np.ndarray
    decompressed_starts: np.ndarray

    def offset_of(self, chunk_start: int, offset_in_chunk: int) -> int:
        """The offset in :attr:`data` of a compressed-stream position; OrcError if it names no chunk."""
        starts = self.compressed_starts
        k = int(np.searchsorted(starts, chunk_start))
        if k < len(starts) and int(starts[k]) == chunk_start:
            base = int(self.decompressed_starts[k])
            end = int(self.decompressed_starts[k + 1]) if k + 1 < len(starts) else len(self.data)
        elif k == len(starts) and offset_in_chunk == 0:
            # a position at the very end of the stream (an empty remainder)
            return len(self.data)
        else:
            raise OrcError(f"row index position {chunk_start} is not the start of a compression chunk")
        if offset_in_chunk > end - base:
            raise OrcError(
                f"row index position {offset_in_chunk} lies beyond the {end - base} bytes of its compression chunk"
            )
        return base + offset_in_chunk


def decompress_stream_indexed(
    kind: CompressionKind | int,
    block_size: int | None,
    data: bytes | memoryview,
    *,
    max_output: int = DEFAULT_MAX_STREAM_BYTES,
) -> DecompressedStream:
    """Decompress a whole chunked stream, remembering chunk boundaries (for row-index seeking).

    The result's ``data`` is bytes-like: the input itself for NONE, else a memoryview of a numpy buffer
    (uninitialised and, when large, backed by huge pages: no zero-filling, few page faults)."""
    kind = CompressionKind(kind)
    if kind == CompressionKind.NONE:
        whole = data if isinstance(data, bytes | memoryview) else bytes(data)
        return DecompressedStream(whole, np.zeros(1, np.int64), np.zeros(1, np.int64))
    view = memoryview(data).cast("B")
    block = block_size or DEFAULT_BLOCK_SIZE
    codec = _DECOMPRESSORS.get(kind)
    if codec is None:
        raise OrcError(f"cannot decompress with compression kind {kind}")
    # pass 1: the chunk headers, validated against the bytes present
    chunks: list[tuple[int, int, bool]] = []
    bound = 0
    pos = 0
    end = len(view)
    while pos < end:
        if pos + 3 > end:
            raise OrcError(f"compressed stream truncated inside a chunk header at byte {pos} of {end}")
        header = view[pos] | (view[pos + 1] << 8) | (view[pos + 2] << 16)
        length = header >> 1
        original = bool(header & 1)
        if pos + 3 + length > end:
            raise OrcError(f"compression chunk at byte {pos} claims {length} bytes but only {end - pos - 3} remain")
        if original and length > block:
            raise OrcError(f"uncompressed chunk of {length} bytes is larger than the block size {block}")
        chunks.append((pos, length, original))
        bound += length if original else block
        pos += 3 + length
    # pass 2: every chunk straight into one buffer (its size is bounded by the headers and the block size)
    out = np.empty(min(bound, max_output + block), dtype=np.uint8)
    target = out.data
    comp_starts = np.empty(len(chunks), np.int64)
    decomp_starts = np.empty(len(chunks), np.int64)
    produced = 0
    for i, (start, length, original) in enumerate(chunks):
        body = view[start + 3 : start + 3 + length]
        comp_starts[i] = start
        decomp_starts[i] = produced
        room = len(out) - produced
        if original:
            n = length
            if n > room:
                raise OrcError(f"stream decompresses to more than the allowed {max_output} bytes")
            target[produced : produced + n] = body
        else:
            if room < block:
                if produced >= max_output:
                    raise OrcError(f"stream decompresses to more than the allowed {max_output} bytes")
                n = codec(body, min(block, room), target[produced:])
            else:
                n = codec(body, block, target[produced : produced + block])
        produced += n
        if produced > max_output:
            raise OrcError(f"stream decompresses to more than the allowed {max_output} bytes")
    return DecompressedStream(target[:produced], comp_starts, decomp_starts)


def decompress_stream(
    kind: CompressionKind | int,
    block_size: int | None,
    data: bytes | memoryview,
    *,
    max_output: int = DEFAULT_MAX_STREAM_BYTES,
) -> bytes:
    """Decompress a whole chunked ORC stream (NONE returns the bytes as they are)."""
    kind = CompressionKind(kind)
    if kind == CompressionKind.NONE:
        return bytes(data)
    return bytes(decompress_stream_indexed(kind, block_size, data, max_output=max_output).data)


# ----------------------------------------------------------------------------------------------------------
# compression

#: zlib levels Java uses under the default SPEED strategy: FAST for data-like streams, FASTEST for the rest.
ZLIB_LEVEL_FAST = 2
ZLIB_LEVEL_FASTEST = 1
ZSTD_DEFAULT_LEVEL = 3


def compress_chunk(kind: CompressionKind, data: bytes | memoryview, level: int | None = None) -> bytes:
    """Compress one chunk body with the codec of ``kind`` (no header, no is-original decision)."""
    if kind == CompressionKind.ZLIB:
        deflater = zlib.compressobj(ZLIB_LEVEL_FAST if level is None else level, zlib.DEFLATED, -15)
        return deflater.compress(data) + deflater.flush()
    if kind == CompressionKind.SNAPPY:
        return bytes(cramjam.snappy.compress_raw(data))
    if kind == CompressionKind.LZ4:
        return bytes(cramjam.lz4.compress_block(data, store_size=False))
    if kind == CompressionKind.ZSTD:
        return bytes(cramjam.zstd.compress(data, level=ZSTD_DEFAULT_LEVEL if level is None else level))
    if kind in (CompressionKind.LZO, CompressionKind.BROTLI):
        raise UnsupportedOrcFeature(f"writing {kind.name} compression is not supported")
    raise OrcError(f"cannot compress with compression kind {kind}")


@dataclass(frozen=True)
class CompressedStream:
    """A stream's bytes after chunking and compression, with what the row index needs to point into it.

    Chunk i holds decompressed bytes ``[i * block_size, (i + 1) * block_size)`` and starts at
    ``chunk_starts[i]`` in :attr:`data`. For an uncompressed (NONE) stream ``block_size`` is 0 and there are no
    chunks.
    """

    data: bytes
    block_size: int
    chunk_starts: tuple[int, ...]
    raw_length: int

    def position(self, raw_offset: int) -> tuple[int, ...]:
        """Row-index position of decompressed offset ``raw_offset``: ``(offset,)`` for NONE, else
        ``(chunk_start, offset_in_chunk)``; an offset on a chunk boundary points at the start of the next chunk."""
        if not 0 <= raw_offset <= self.raw_length:
            raise ValueError(f"offset {raw_offset} is outside the stream of {self.raw_length} bytes")
        if self.block_size == 0:
            return (raw_offset,)
        chunk, inside = divmod(raw_offset, self.block_size)
        start = self.chunk_starts[chunk] if chunk < len(self.chunk_starts) else len(self.data)
        return (start, inside)


def compress_stream(
    kind: CompressionKind | int,
    block_size: int | None,
    data: bytes | bytearray | memoryview,
    *,
    level: int | None = None,
) -> CompressedStream:
    """Chunk and compress a whole stream the way ORC writers do (each chunk stored raw unless compression wins)."""
    kind = CompressionKind(kind)
    raw = memoryview(data).cast("B") if not isinstance(data, bytes) else memoryview(data)
    if kind == CompressionKind.NONE:
        return CompressedStream(bytes(raw), 0, (), len(raw))
    block = block_size or DEFAULT_BLOCK_SIZE
    if block > MAX_CHUNK_LENGTH:
        raise OrcError(f"compression block size {block} does not fit the 3-byte chunk header")
    out: list[bytes | memoryview] = []
    starts: list[int] = []
    written = 0
    for begin in range(0, len(raw), block):
        piece = raw[begin : begin + block]
        packed = compress_chunk(kind, piece, level)
        starts.append(written)
        if len(packed) < len(piece):
            out.append(chunk_header(len(packed), False))
            out.append(packed)
            written += 3 + len(packed)
        else:
            out.append(chunk_header(len(piece), True))
            out.append(piece)
            written += 3 + len(piece)
    return CompressedStream(b"".join(out), block, tuple(starts), len(raw))
