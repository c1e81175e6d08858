"""Spark's equi-height histogram property (``spark.sql.statistics.colStats.<col>.histogram``) ↔ bins, and the
bins Spark's optimizer should see for a column we hold a KLL sketch of.

Wire form (Spark's HistogramSerializer): height (double), bin count n (int), the n lower bounds, the n upper
bounds (doubles), the n per-bin distinct counts (longs), then the int -1, all big-endian (Java's DataOutputStream),
framed as lz4-java's ``LZ4BlockOutputStream`` writes it, then Base64. Block framing: the magic ``LZ4Block``, a
token (compression method | level), compressed and original lengths and an xxHash32 checksum (seed 0x9747b28c)
of the original bytes, all little-endian, then the bytes; a block of length 0 ends the stream. We write raw
(uncompressed) blocks, which every reader accepts, and read both raw and LZ4-compressed ones.

Values are Spark's internal doubles: numbers as themselves, dates as days since the epoch, timestamps as
microseconds since the epoch. Pure: no Thrift, SQL or logging.
"""

from __future__ import annotations

import base64
import binascii
import math
import struct
from collections.abc import Sequence
from dataclasses import dataclass

__all__ = [
    "MAX_BINS",
    "HistogramBin",
    "SparkHistogram",
    "SparkHistogramError",
    "decode_histogram",
    "encode_histogram",
    "equi_height_bins",
    "xxhash32",
]

#: Bins we compose: a KLL sketch with k = 200 knows ranks to about 1.65 %, so finer bins than ~1/60 of the rows
#: would be noise; 100 keeps the property under the 4,000 characters Hive's clients expect of a parameter.
MAX_BINS = 100
_MAGIC = b"LZ4Block"
_SEED = 0x9747B28C
_RAW = 0x10
_LZ4 = 0x20
#: lz4-java's level for its default 64 KiB blocks: log2(block size) - 10.
_LEVEL = 6
_HEADER = struct.Struct("<BiiI")
_M32 = 0xFFFFFFFF
_P1, _P2, _P3, _P4, _P5 = 2654435761, 2246822519, 3266489917, 668265263, 374761393


class SparkHistogramError(ValueError):
    """A histogram property that does not decode; the message says what is wrong."""


@dataclass(frozen=True)
class HistogramBin:
    """One equi-height bin: its bounds (Spark's internal doubles) and distinct values in it."""

    lo: float
    hi: float
    ndv: int


@dataclass(frozen=True)
class SparkHistogram:
    """Spark's equi-height histogram: rows per bin and the bins in ascending order."""

    height: float
    bins: tuple[HistogramBin, ...]


def _rotl(x: int, r: int) -> int:
    return ((x << r) | (x >> (32 - r))) & _M32


def xxhash32(data: bytes, seed: int = _SEED) -> int:
    """xxHash32 of data (the checksum of LZ4 block streams; histogram payloads are a few KiB)."""
    n = len(data)
    i = 0
    if n >= 16:
        v1, v2, v3, v4 = (seed + _P1 + _P2) & _M32, (seed + _P2) & _M32, seed & _M32, (seed - _P1) & _M32
        lanes = struct.unpack_from(f"<{(n // 16) * 4}I", data)
        for j in range(0, len(lanes), 4):
            v1 = (_rotl((v1 + lanes[j] * _P2) & _M32, 13) * _P1) & _M32
            v2 = (_rotl((v2 + lanes[j + 1] * _P2) & _M32, 13) * _P1) & _M32
            v3 = (_rotl((v3 + lanes[j + 2] * _P2) & _M32, 13) * _P1) & _M32
            v4 = (_rotl((v4 + lanes[j + 3] * _P2) & _M32, 13) * _P1) & _M32
        h = (_rotl(v1, 1) + _rotl(v2, 7) + _rotl(v3, 12) + _rotl(v4, 18)) & _M32
        i = (n // 16) * 16
    else:
        h = (seed + _P5) & _M32
    h = (h + n) & _M32
    while i + 4 <= n:
        (lane,) = struct.unpack_from("<I", data, i)
        h = (_rotl((h + lane * _P3) & _M32, 17) * _P4) & _M32
        i += 4
    while i < n:
        h = (_rotl((h + data[i] * _P5) & _M32, 11) * _P1) & _M32
        i += 1
    h ^= h >> 15
    h = (h * _P2) & _M32
    h ^= h >> 13
    h = (h * _P3) & _M32
    h ^= h >> 16
    return h


def _block_checksum(data: bytes) -> int:
    # lz4-java's streaming xxHash32 as a java.util.zip.Checksum keeps the low 28 bits.
    return xxhash32(data) & 0x0FFFFFFF


def _lz4_block_decompress(src: bytes, size: int) -> bytes:
    """One LZ4 block (no frame) of known decompressed size."""
    out = bytearray()
    i = 0
    while i < len(src):
        token = src[i]
        i += 1
        literal = token >> 4
        if literal == 15:
            while True:
                extra = src[i]
                i += 1
                literal += extra
                if extra != 255:
                    break
        out += src[i:i + literal]
        i += literal
        if i >= len(src):
            break
        offset = src[i] | (src[i + 1] << 8)
        i += 2
        if offset == 0 or offset > len(out):
            raise SparkHistogramError("LZ4 block refers before its start")
        match = (token & 15) + 4
        if token & 15 == 15:
            while True:
                extra = src[i]
                i += 1
                match += extra
                if extra != 255:
                    break
        start = len(out) - offset
        for k in range(match):  # overlapping copies repeat the bytes just written
            out.append(out[start + k])
    if len(out) != size:
        raise SparkHistogramError(f"LZ4 block decodes to {len(out)} bytes, its header says {size}")
    return bytes(out)


def _unframe(stream: bytes) -> bytes:
    """The bytes of an lz4-java block stream (LZ4BlockOutputStream)."""
    out = bytearray()
    i = 0
    while i < len(stream):
        if stream[i:i + len(_MAGIC)] != _MAGIC:
            raise SparkHistogramError(f"no LZ4Block magic at byte {i}")
        i += len(_MAGIC)
        if i + _HEADER.size > len(stream):
            raise SparkHistogramError("LZ4Block header cut short")
        token, compressed, original, check = _HEADER.unpack_from(stream, i)
        i += _HEADER.size
        if compressed < 0 or original < 0 or i + compressed > len(stream):
            raise SparkHistogramError("LZ4Block lengths out of range")
        if original == 0:
            break  # the end-of-stream block
        body = stream[i:i + compressed]
        i += compressed
        method = token & 0xF0
        if method == _RAW:
            data = body
        elif method == _LZ4:
            try:
                data = _lz4_block_decompress(body, original)
            except IndexError:
                raise SparkHistogramError("LZ4 block cut short") from None
        else:
            raise SparkHistogramError(f"unknown LZ4Block method {method:#x}")
        if len(data) != original:
            raise SparkHistogramError("raw LZ4Block of the wrong length")
        if _block_checksum(data) != check:
            raise SparkHistogramError("LZ4Block checksum does not match")
        out += data
    return bytes(out)


def _frame(data: bytes) -> bytes:
    """data as one raw block and the end block, as LZ4BlockOutputStream writes them."""
    head = _MAGIC + _HEADER.pack(_RAW | _LEVEL, len(data), len(data), _block_checksum(data))
    end = _MAGIC + _HEADER.pack(_RAW | _LEVEL, 0, 0, 0)
    return head + data + end


def encode_histogram(histogram: SparkHistogram) -> str:
    """Spark's property text of a histogram."""
    n = len(histogram.bins)
    payload = struct.pack(
        f">di{n}d{n}d{n}qi", histogram.height, n, *(b.lo for b in histogram.bins), *(b.hi for b in histogram.bins),
        *(b.ndv for b in histogram.bins), -1,
    )
    return base64.b64encode(_frame(payload)).decode("ascii")


def decode_histogram(text: str) -> SparkHistogram:
    """A histogram from Spark's property text; SparkHistogramError when it does not decode."""
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (binascii.Error, UnicodeEncodeError):
        raise SparkHistogramError("not Base64") from None
    data = _unframe(raw)
    if len(data) < 12:
        raise SparkHistogramError("shorter than its height and bin count")
    height, n = struct.unpack_from(">di", data)
    if n < 0 or len(data) != 12 + 24 * n + 4:
        raise SparkHistogramError(f"{n} bins do not fit {len(data)} bytes")
    values = struct.unpack_from(f">{n}d{n}d{n}qi", data, 12)
    if values[-1] != -1:
        raise SparkHistogramError("no end marker")
    los, his, ndvs = values[:n], values[n:2 * n], values[2 * n:3 * n]
    bins = tuple(HistogramBin(float(lo), float(hi), int(d)) for lo, hi, d in zip(los, his, ndvs, strict=True))
    if not math.isfinite(height) or height < 0 or any(
        not (math.isfinite(b.lo) and math.isfinite(b.hi)) or b.lo > b.hi or b.ndv < 0 for b in bins
    ):
        raise SparkHistogramError("bins out of order or not finite")
    return SparkHistogram(height=float(height), bins=bins)


def equi_height_bins(
    quantiles: Sequence[float], *, non_null: int, ndv: int, low: float, high: float, integral: bool,
) -> SparkHistogram | None:
    """Spark's equi-height histogram from the bin edges a quantile sketch gives (n + 1 ascending values, the
    first and last being the minimum and maximum): edges are clamped into [low, high] (a float sketch rounds
    large numbers) and kept ascending. Per-bin distinct counts are not in a quantile sketch: each bin gets the
    column's NDV spread evenly over the bins, at least 1, and for ``integral`` values at most the integers the
    bin spans. None when there are no rows or no edges."""
    n = len(quantiles) - 1
    if n < 1 or non_null <= 0 or not (math.isfinite(low) and math.isfinite(high)) or low > high:
        return None
    edges = []
    previous = low
    for q in quantiles:
        value = min(max(float(q), low), high) if math.isfinite(q) else previous
        value = max(value, previous)
        edges.append(value)
        previous = value
    edges[0], edges[-1] = low, max(high, edges[-2])
    share = max(1, round(ndv / n))
    bins = []
    for lo, hi in zip(edges, edges[1:], strict=False):
        distinct = share
        if integral:
            distinct = min(distinct, int(math.floor(hi) - math.ceil(lo)) + 1 if hi >= math.ceil(lo) else 1)
        elif lo == hi:
            distinct = 1
        bins.append(HistogramBin(lo, hi, max(1, distinct)))
    return SparkHistogram(height=non_null / n, bins=tuple(bins))
