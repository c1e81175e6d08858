"""ORC run-length decoders: byte RLE, boolean RLE, integer RLE v1 and v2, and varints.

Every decoder works in two passes so that no Python loop runs per value:
1. a scan over the run headers only, which validates each run against the bytes that remain and records what
   the run holds in a table (stream order). It starts as a short pure-Python loop per run; when the first
   :data:`PROBE_RUNS` runs turn out short (under :data:`SHORT_RUN_BYTES` bytes each) the rest of the stream's
   headers are found with numpy, window by window (:mod:`._run_headers`), and a malformed run is handed back to
   the Python loop so that the error says exactly what is wrong;
2. numpy work over all runs of the same kind at once: arithmetic runs (repeats, fixed deltas) with one
   ``np.repeat`` or one cumulative sum, bit-packed runs that join into one bit string through eight strided
   views (one per field phase), other packed runs with one gather of unaligned big-endian 64-bit words, delta
   runs with one segmented cumulative sum.

Integers are handled modulo 2**64 like Java longs (unsigned streams may carry values >= 2**63; they come back
as the int64 with the same bits). Decoders return the values plus the offset just past the last run they read;
a run that crosses ``count`` is read whole and cut. Output size is bounded by what the input actually encodes, so
a corrupt count can never allocate more than the stream can hold.
"""

from __future__ import annotations

from types import ModuleType

import numpy as np

from . import _run_headers as run_headers
from ._errors import OrcError
from ._optional import OptionalExtension
from ._rle_widths import WIDTH_FROM_CODE, closest_fixed_bits

_MASK64 = (1 << 64) - 1
_U64 = np.uint64

#: runs scanned one by one before deciding whether the stream's runs are short enough for the vectorised scan
PROBE_RUNS = 64
#: average bytes per run below which the rest of a stream's headers are found with numpy
#: (:mod:`._run_headers` costs about 30 ns per byte, the Python loop about 1.5 µs per run)
SHORT_RUN_BYTES = 48
#: most bytes one vectorised window covers (after each window the run lengths are judged again)
MAX_WINDOW = 1 << 15

_EXTENSION = OptionalExtension("metastore.orcio._decode_native", "integer decoding uses the slower numpy code")
_native = _EXTENSION.module
_missing = _EXTENSION.missing
#: most values one byte of RLE v2 can stand for (a fixed-delta run: 512 values in a 4-byte run); a larger count
#: than the bytes left can hold goes to the numpy code, which reports the stream as too short without allocating
#: ``count`` values first
_V2_VALUES_PER_BYTE = 128


def compiled() -> ModuleType | None:
    """The compiled decoding loops (metastore/orcio/_decode_native.c: varints and integer RLE v2), or None (with a
    warning the first time) when they are not built. The numpy code of this module is their reference: same
    values, same end offsets; on anything irregular the compiled loop gives up and the numpy code decodes or
    raises as it always did."""
    return _EXTENSION.get()



# ------------------------------------------------------------------------------------------------ helpers


def _truncated(what: str, pos: int, size: int) -> OrcError:
    return OrcError(f"{what} truncated: needs bytes past offset {pos} of a {size}-byte stream")


def _varint(data: bytes | bytearray | memoryview, pos: int, n: int) -> tuple[int, int]:
    result = 0
    shift = 0
    while True:
        if pos >= n:
            raise _truncated("varint", pos, n)
        b = data[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result & _MASK64, pos
        shift += 7
        if shift > 63:
            raise OrcError(f"varint at offset {pos - 10} is longer than 10 bytes")


def _unzigzag(v: int) -> int:
    # result as the unsigned 64-bit pattern of the signed value
    return ((v >> 1) ^ -(v & 1)) & _MASK64


def _within(lengths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """For runs of the given lengths: each value's run number and its index inside the run."""
    lengths = lengths.astype(np.int64, copy=False)
    run_of = np.repeat(np.arange(len(lengths)), lengths)
    starts = np.cumsum(lengths) - lengths
    return run_of, np.arange(int(lengths.sum()), dtype=np.int64) - starts[run_of]


def _padded(data: bytes | bytearray | memoryview) -> np.ndarray:
    return np.frombuffer(bytes(data) + bytes(8), dtype=np.uint8)


def _word_view(padded: np.ndarray) -> np.ndarray:
    # big-endian 64-bit words starting at every byte offset (overlapping strides), for bit-field gathers
    return np.ndarray(shape=(len(padded) - 7,), dtype=">u8", buffer=padded, offset=0, strides=(1,))


def unpack_bits(words: np.ndarray, bit_offsets: np.ndarray, widths: np.ndarray | int) -> np.ndarray:
    """Big-endian bit fields at absolute ``bit_offsets`` (widths from the RLE v2 table: a field never spans
    more than 8 bytes) from a :func:`_word_view`; returns uint64."""
    bit_offsets = bit_offsets.astype(np.int64, copy=False)
    w = words[bit_offsets >> 3].astype(_U64)
    widths_u = np.asarray(widths, dtype=_U64)
    shift = _U64(64) - (bit_offsets & 7).astype(_U64) - widths_u
    mask = ~_U64(0) >> (_U64(64) - widths_u)
    return (w >> shift) & mask


def unzigzag_array(values: np.ndarray, *, inplace: bool = False) -> np.ndarray:
    """Zigzag-decode uint64 values (result: the uint64 bits of the signed values); ``inplace`` reuses
    ``values`` (which must then be a uint64 array the caller owns)."""
    v = values if inplace else values.astype(_U64, copy=True)
    sign = v & _U64(1)
    np.negative(sign, out=sign)  # 0 or all ones (uint64 wraps)
    v >>= _U64(1)
    v ^= sign
    return v


# ------------------------------------------------------------------------------------------------ byte RLE


def decode_byte_rle(data: bytes | bytearray | memoryview, count: int, pos: int = 0) -> tuple[np.ndarray, int]:
    """Decode ``count`` bytes of byte RLE starting at ``pos``; returns (uint8 array, end offset)."""
    n = len(data)
    starts: list[int] = []
    lengths: list[int] = []
    literal: list[bool] = []
    chunks: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    buf = np.frombuffer(data, dtype=np.uint8)
    produced = 0
    while produced < count:
        probe_pos, probe_produced, probe_runs = pos, produced, len(starts)
        limit = probe_runs + PROBE_RUNS
        while produced < count and len(starts) < limit:
            if pos >= n:
                raise OrcError(f"byte RLE stream ended after {produced} of {count} values (offset {pos})")
            c = data[pos]
            if c < 128:
                if pos + 2 > n:
                    raise _truncated("byte RLE run", pos, n)
                starts.append(pos + 1)
                lengths.append(c + 3)
                literal.append(False)
                produced += c + 3
                pos += 2
            else:
                k = 256 - c
                if pos + 1 + k > n:
                    raise _truncated("byte RLE literals", pos, n)
                starts.append(pos + 1)
                lengths.append(k)
                literal.append(True)
                produced += k
                pos += 1 + k
        if produced >= count or pos - probe_pos >= SHORT_RUN_BYTES * PROBE_RUNS:
            continue
        # many short runs: find the rest of the headers with numpy, window by window
        chunks.append(_byte_run_columns(starts, lengths, literal))
        starts, lengths, literal = [], [], []
        per_value = (pos - probe_pos) / max(produced - probe_produced, 1)
        while produced < count and pos < n:
            stop = _window_stop(pos, n, count - produced, per_value)
            found = run_headers.byte_rle_window(buf, pos, stop, count - produced)
            window_pos, window_produced = pos, produced
            if len(found.heads):
                heads = found.heads.astype(np.int64) + pos
                lit = buf[heads] >= 128
                chunks.append((heads + 1, found.lengths.astype(np.int64), lit))
                produced += int(found.lengths.sum())
            pos = found.resume
            if found.scalar_next or pos - window_pos >= SHORT_RUN_BYTES * len(found.heads):
                break  # a malformed run (reported by the scalar scan) or runs that got long
            per_value = 2 * (pos - window_pos) / max(produced - window_produced, 1)
    if starts or not chunks:
        chunks.append(_byte_run_columns(starts, lengths, literal))
    first, lens, lit = (np.concatenate(parts) for parts in zip(*chunks, strict=True))
    total = int(lens.sum())
    if total == 0:
        return np.zeros(0, np.uint8), pos
    # the byte each value comes from, by one cumulative sum: +1 per value inside literal runs, 0 inside
    # repeats, and at each run's start a jump from where the previous run ended to where this one begins
    step = lit.astype(np.int64)
    src = np.repeat(step, lens)
    jumps = first.copy()
    jumps[1:] -= first[:-1] + step[:-1] * (lens[:-1] - 1)
    src[_run_starts(lens)] = jumps
    np.cumsum(src, out=src)
    return buf[src[:count]], pos


def _window_stop(pos: int, size: int, wanted: int, per_value: float) -> int:
    """End of the next vectorised window: enough bytes for the values still wanted at the rate seen so far
    (with some slack), at most :data:`MAX_WINDOW`, never past the stream."""
    return min(size, pos + min(MAX_WINDOW, int(wanted * per_value * 1.25) + 4096))


def _byte_run_columns(starts: list[int], lengths: list[int], literal: list[bool]
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.asarray(starts, np.int64), np.asarray(lengths, np.int64), np.asarray(literal, bool)


def decode_boolean_rle(data: bytes | bytearray | memoryview, count: int, pos: int = 0, bit_offset: int = 0) -> tuple[np.ndarray, int]:
    """Decode ``count`` booleans (bits MSB-first over byte RLE), skipping ``bit_offset`` bits of the first byte."""
    nbytes = (count + bit_offset + 7) >> 3
    raw, end = decode_byte_rle(data, nbytes, pos)
    bits = np.unpackbits(raw)
    return bits[bit_offset : bit_offset + count].astype(bool), end


# ------------------------------------------------------------------------------------------------ varints


def decode_varints(data: bytes | bytearray | memoryview, count: int, signed: bool, pos: int = 0) -> tuple[np.ndarray, int]:
    """Decode ``count`` consecutive varints of at most 64 bits (zigzag when ``signed``); returns (int64, end)."""
    native = compiled()
    if native is not None and 0 < count <= len(data) - pos:
        out = np.empty(count, np.int64)
        end = native.varints(data, pos, count, signed, 10, out)
        if end >= 0:
            return out, end
    return _decode_varints_numpy(data, count, signed, pos)


def _decode_varints_numpy(data: bytes | bytearray | memoryview, count: int, signed: bool, pos: int = 0
                          ) -> tuple[np.ndarray, int]:
    """:func:`decode_varints` in numpy (the compiled loop's reference and fallback)."""
    if count == 0:
        return np.zeros(0, np.int64), pos
    buf, starts, lengths, stop = _varint_layout(data, count, pos, "varint stream")
    if int(lengths.max()) > 10:
        bad = int(starts[int(np.argmax(lengths > 10))]) + pos
        raise OrcError(f"varint at offset {bad} is longer than 10 bytes")
    values = _varint_values(buf, starts, lengths)
    if signed:
        values = unzigzag_array(values, inplace=True)
    return values.view(np.int64), pos + stop


def _varint_layout(data: bytes | bytearray | memoryview, count: int, pos: int, what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """The bytes from ``pos`` through the ``count``-th varint, each varint's start in them, its length, and the
    number of bytes they take."""
    buf = np.frombuffer(data, dtype=np.uint8)[pos:]
    ends = np.flatnonzero(buf < 0x80)
    if len(ends) < count:
        raise OrcError(f"{what} holds {len(ends)} of the {count} values needed (from offset {pos})")
    ends = ends[:count]
    stop = int(ends[-1]) + 1
    starts = np.empty_like(ends)
    starts[0] = 0
    starts[1:] = ends[:-1] + 1
    return buf[:stop], starts, ends - starts + 1, stop


_LOW_BYTES_64 = np.asarray([(1 << (8 * k)) - 1 for k in range(9)], dtype=_U64)
_LOW_BYTES_32 = np.asarray([(1 << (8 * k)) - 1 for k in range(5)], dtype=np.uint32)


def _words_at(buf: np.ndarray, at: np.ndarray, itemsize: int) -> np.ndarray:
    """Little-endian words of ``itemsize`` bytes starting at offsets ``at`` of ``buf`` (zeros past its end),
    read through an overlapping view of ``buf`` (only words that run past the end come from a small copy)."""
    limit = len(buf) - itemsize + 1
    dtype = f"<u{itemsize}"
    last = int(at.max()) if len(at) else 0
    if limit > 0:
        view = np.ndarray(shape=(limit,), dtype=dtype, buffer=buf, strides=(1,))
        if last < limit:
            return view[at]
        out = view[np.minimum(at, limit - 1)]
    else:
        out = np.zeros(len(at), dtype=dtype)
    base = max(0, limit)
    tail = np.zeros(len(buf) - base + 2 * itemsize, dtype=np.uint8)
    tail[: len(buf) - base] = buf[base:]
    tail_words = np.ndarray(shape=(len(tail) - itemsize + 1,), dtype=dtype, buffer=tail, strides=(1,))
    late = np.flatnonzero(at >= base)
    out[late] = tail_words[at[late] - base]
    return out


def _join_groups(x: np.ndarray) -> np.ndarray:
    """Squeeze the low 7 bits of every byte of each word together (byte 0's bits lowest), in place."""
    stages: tuple[tuple[int, int, int], ...]
    if x.dtype == np.uint32:
        stages = ((0x007F007F, 0x7F007F00, 1), (0x00003FFF, 0x3FFF0000, 2))
    else:
        stages = ((0x007F007F007F007F, 0x7F007F007F007F00, 1), (0x00003FFF00003FFF, 0x3FFF00003FFF0000, 2),
                  (0x000000000FFFFFFF, 0x0FFFFFFF00000000, 4))
    dtype = x.dtype.type
    high = np.empty_like(x)
    for low_mask, high_mask, shift in stages:
        np.bitwise_and(x, dtype(high_mask), out=high)
        high >>= dtype(shift)
        x &= dtype(low_mask)
        x |= high
    return x


def _varint_chunk(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray, skip: int) -> np.ndarray:
    """The value bits held by bytes ``skip .. skip+7`` of each varint (56 bits at most, uint64)."""
    take = np.clip(lengths - skip, 0, 8)
    # varints shorter than ``skip`` bytes contribute nothing (masked below); keep their index inside the buffer
    x = _words_at(buf, np.minimum(starts + skip, len(buf) - 1) if skip else starts, 8)
    x &= _LOW_BYTES_64[take]
    x &= _U64(0x7F7F7F7F7F7F7F7F)
    return _join_groups(x)


def _varint_values(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Varints of at most 10 bytes at ``starts`` as uint64 (bits past 64 dropped, like a Java long)."""
    longest = int(lengths.max())
    if longest <= 4:
        x = _words_at(buf, starts, 4)
        x &= _LOW_BYTES_32[lengths]
        x &= np.uint32(0x7F7F7F7F)
        return _join_groups(x).astype(_U64)
    values = _varint_chunk(buf, starts, lengths, 0)
    if longest > 8:
        values |= _varint_chunk(buf, starts, lengths, 8) << _U64(56)
    return values


def decode_big_varints(data: bytes | bytearray | memoryview, count: int, pos: int = 0, max_bytes: int = 24) -> tuple[list[int], int]:
    """Decode ``count`` zigzag varints of any size (decimal DATA) into Python ints; returns (list, end)."""
    if count == 0:
        return [], pos
    values, stop = decode_big_varints_array(data, count, pos, max_bytes)
    return values.tolist(), stop


def decode_big_varints_array(data: bytes | bytearray | memoryview, count: int, pos: int = 0, max_bytes: int = 24
                             ) -> tuple[np.ndarray, int]:
    """:func:`decode_big_varints` as an array: int64 when every value fits (below 2**63 in magnitude, i.e. at
    most 9 bytes), else an object array of Python ints; returns (array, end)."""
    native = compiled()
    if native is not None and 0 < count <= len(data) - pos and max_bytes >= 9:
        # every value in 9 bytes (63 bits): int64 from the compiled loop; else the numpy code below
        out = np.empty(count, np.int64)
        end = native.varints(data, pos, count, True, 9, out)
        if end >= 0:
            return out, end
    return _decode_big_varints_numpy(data, count, pos, max_bytes)


def _decode_big_varints_numpy(data: bytes | bytearray | memoryview, count: int, pos: int = 0, max_bytes: int = 24
                              ) -> tuple[np.ndarray, int]:
    """:func:`decode_big_varints_array` in numpy (the compiled loop's reference and fallback)."""
    if count == 0:
        return np.zeros(0, np.int64), pos
    buf, starts, lengths, stop = _varint_layout(data, count, pos, "decimal stream")
    longest = int(lengths.max())
    if longest > max_bytes:
        raise OrcError(f"decimal varint of {longest} bytes is larger than any 128-bit value")
    if longest <= 9:
        raw = _varint_values(buf, starts, lengths)
        sign = (raw & _U64(1)).view(np.int64)
        np.negative(sign, out=sign)
        raw >>= _U64(1)
        return raw.view(np.int64) ^ sign, pos + stop
    # wider values: 56-bit pieces in numpy, joined as Python ints by object-array arithmetic (no Python loop)
    zigzag = _varint_chunk(buf, starts, lengths, 0).astype(object)
    for skip in range(8, longest, 8):
        piece = _varint_chunk(buf, starts, lengths, skip)
        if piece.any():
            zigzag |= piece.astype(object) << (7 * skip)
    return (zigzag >> 1) ^ -(zigzag & 1), pos + stop


# ------------------------------------------------------------------------------------------------ integer RLE


#: how each run's values are produced (the ``kind`` column of a runs table)
ARITH = 0  # base + i * delta (mod 2**64): repeats, short repeats, fixed-delta runs
PACKED = 1  # bit-packed values, value i at bit ``bits + i * width``
DELTA = 2  # base, base + delta, then +/- each packed magnitude
READY = 3  # decoded on its own (patched base), values kept in :attr:`_Runs.ready`
FILLED = 4  # left as zeros for the caller to fill (RLE v1 literals)


class _Runs:
    """Runs in stream order as a table of (out offset, length, kind, base, delta, width, bit offset), uint64.

    The scalar scanners append one tuple per run to :attr:`rows`; the vectorised one adds whole column
    blocks with :meth:`add`, or, for runs that each repeat one value, just their values and lengths with
    :meth:`add_repeats` (rows are flushed first, so the table stays in stream order). A stream made only of
    runs of one value (:meth:`repeats`) is decoded with one ``np.repeat``, without building the table.
    """

    def __init__(self) -> None:
        self.rows: list[tuple[int, int, int, int, int, int, int]] = []
        self.ready: list[np.ndarray] = []
        # 7-row blocks, or (out offset of the first run, values, lengths) of runs that repeat one value each
        self._chunks: list[np.ndarray | tuple[int, np.ndarray, np.ndarray]] = []

    def flush(self) -> None:
        """Move the scalar scanner's tuples into a column block."""
        if self.rows:
            self._chunks.append(np.asarray(self.rows, dtype=_U64).reshape(len(self.rows), 7).T)
            self.rows.clear()

    def add(self, columns: np.ndarray) -> None:
        """Add runs as a (7, runs) uint64 block."""
        self.flush()
        if columns.shape[1]:
            self._chunks.append(columns)

    def add_repeats(self, first: int, values: np.ndarray, lengths: np.ndarray) -> None:
        """Add runs that each repeat one value (uint64, final), the first of them at out offset ``first``."""
        self.flush()
        if len(values):
            self._chunks.append((first, values, lengths))

    def repeats(self) -> tuple[np.ndarray, np.ndarray] | None:
        """(values, lengths) of every run when each one repeats a single value, else None."""
        self.flush()
        values: list[np.ndarray] = []
        lengths: list[np.ndarray] = []
        for chunk in self._chunks:
            if isinstance(chunk, tuple):
                values.append(chunk[1])
                lengths.append(chunk[2])
                continue
            if ((chunk[2] != _U64(ARITH)) | (chunk[4] != _U64(0))).any():
                return None
            values.append(chunk[3])
            lengths.append(chunk[1].view(np.int64))
        if not values:
            return None
        if len(values) == 1:
            return values[0], lengths[0]
        return np.concatenate(values), np.concatenate(lengths)

    def table(self) -> np.ndarray:
        """All runs as one (7, runs) uint64 array in stream order."""
        self.flush()
        if not self._chunks:
            return np.zeros((7, 0), dtype=_U64)
        blocks = [_repeat_block(*c) if isinstance(c, tuple) else c for c in self._chunks]
        return blocks[0] if len(blocks) == 1 else np.concatenate(blocks, axis=1)


def _repeat_block(first: int, values: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Runs that repeat one value each as a (7, runs) block of the runs table."""
    block = np.zeros((7, len(values)), dtype=_U64)
    lens = lengths.astype(_U64)
    np.cumsum(lens, out=block[0])
    block[0] -= lens
    block[0] += _U64(first)
    block[1] = lens
    block[2] = ARITH
    block[3] = values
    return block


def _run_starts(lens: np.ndarray) -> np.ndarray:
    return np.cumsum(lens) - lens


def _packed_values(words: np.ndarray, bit_start: np.ndarray, widths: np.ndarray, lens: np.ndarray,
                   skip: int = 0) -> np.ndarray:
    """Bit-packed values of every run, concatenated: value i of run r at ``bit_start[r] + (i - skip) * w[r]``."""
    n = int(lens.sum())
    g = _run_starts(lens)
    j = np.arange(n, dtype=np.int64)
    w0 = int(widths[0])
    if (widths == w0).all():
        if w0 % 8 == 0 and not (bit_start % 8).any():
            step = w0 // 8
            byte_off = np.repeat(bit_start // 8 - (g + skip) * step, lens) + j * step
            if skip:
                np.maximum(byte_off, 0, out=byte_off)
            values = words[byte_off].astype(_U64)
            if w0 < 64:
                values >>= _U64(64 - w0)
            return values
        bits = np.repeat(bit_start - (g + skip) * w0, lens) + j * w0
        if skip:
            np.maximum(bits, 0, out=bits)
        return unpack_bits(words, bits, w0)
    w = np.repeat(widths, lens)
    bits = np.repeat(bit_start - (g + skip) * widths, lens) + j * w
    if skip:
        np.maximum(bits, 0, out=bits)
    return unpack_bits(words, bits, w)


def unpack_contiguous(packed: bytes | np.ndarray, total: int, width: int) -> np.ndarray:
    """``total`` big-endian ``width``-bit fields packed back to back from bit 0 (uint64).

    Eight fields take exactly ``width`` bytes, so field ``8 g + k`` sits in the 64-bit word at byte
    ``g * width + (k * width) // 8``: eight strided views read every field without computing offsets.
    """
    raw = np.frombuffer(packed, np.uint8) if not isinstance(packed, np.ndarray) else packed
    if width == 8:
        return raw[:total].astype(_U64)
    if width in (16, 32, 64):
        return raw[: total * (width // 8)].view(f">u{width // 8}").astype(_U64)
    if width in (1, 2, 4):
        shifts = np.arange(8 - width, -1, -width, dtype=np.uint8)
        nbytes = (total * width + 7) >> 3
        return ((raw[:nbytes, None] >> shifts[None, :]) & np.uint8((1 << width) - 1)).ravel()[:total].astype(_U64)
    groups = -(-total // 8)
    if len(raw) >= groups * width + 8:
        padded = raw  # the caller left room past the fields: read them in place
    else:
        padded = np.zeros(groups * width + 8, dtype=np.uint8)
        used = min(len(raw), groups * width)
        padded[:used] = raw[:used]
    if width % 8 == 0:
        # whole bytes: every field is the top of the 64-bit word at its first byte, one strided view
        fields = np.ndarray(shape=(total,), dtype=">u8", buffer=padded, strides=(width // 8,))
        values = fields.astype(_U64)
        values >>= _U64(64 - width)
        return values
    out = np.empty((groups, 8), dtype=_U64)
    mask = _U64((1 << width) - 1)
    for k in range(8):
        bit = k * width
        fields = np.ndarray(shape=(groups,), dtype=">u8", buffer=padded, offset=bit >> 3, strides=(width,))
        column = out[:, k]
        column[:] = fields
        column >>= _U64(64 - (bit & 7) - width)
        column &= mask
    return out.ravel()[:total]


def _contiguous_packed(data: bytes | bytearray | memoryview, bit_start: np.ndarray, lens: np.ndarray, width: int) -> np.ndarray | None:
    """Values of packed runs of one width whose payloads, joined, form one continuous bit string (every run but
    the last fills whole bytes, as full 512-value runs always do): decoded without per-value offsets."""
    if ((lens[:-1] * width) & 7).any() or (bit_start & 7).any():
        return None
    total = int(lens.sum())
    nbytes = (lens * width + 7) >> 3
    first = bit_start >> 3
    if len(lens) <= 64 or int(nbytes.sum()) >= 64 * len(lens):
        view = memoryview(data)
        pieces: list[bytes | memoryview] = [view[b : b + k] for b, k in zip(first.tolist(), nbytes.tolist(), strict=True)]
        pieces.append(bytes(width + 8))  # room for unpack_contiguous to read in place
        raw = np.frombuffer(b"".join(pieces), np.uint8)
    else:
        # many short runs: gather their payload bytes with one index array
        src = np.repeat(first - _run_starts(nbytes), nbytes) + np.arange(int(nbytes.sum()))
        raw = np.frombuffer(data, np.uint8)[src]
    return unpack_contiguous(raw, total, width)


def _assemble(runs: _Runs, total: int, data: bytes | bytearray | memoryview, signed_packed: bool) -> np.ndarray:
    """Values of all runs in stream order (uint64)."""
    table = runs.table()
    lens = table[1].view(np.int64)
    kind = table[2]
    # every kind's values, in stream order within the kind, plus which runs they belong to
    groups: list[tuple[np.ndarray, np.ndarray]] = []
    words = None
    packed = np.flatnonzero(kind == PACKED)
    if len(packed):
        widths = table[5][packed]
        bits = table[6][packed].view(np.int64)
        packed_lens = lens[packed]
        first_width = int(widths[0])
        uniform = bool((widths == first_width).all())
        if uniform or len(packed) * 64 <= int(packed_lens.sum()):
            # long runs (or one width): per width, as one continuous bit string when they join up
            for width in [first_width] if uniform else np.unique(widths).tolist():
                sel = np.arange(len(packed)) if uniform else np.flatnonzero(widths == width)
                values = _contiguous_packed(data, bits[sel], packed_lens[sel], width)
                if values is None:
                    if words is None:
                        words = _word_view(_padded(data))
                    values = _packed_values(words, bits[sel], np.full(len(sel), width, np.int64), packed_lens[sel])
                if signed_packed:
                    values = unzigzag_array(values, inplace=True)
                groups.append((values, packed[sel]))
        else:
            # many short runs of several widths: one gather with per-value widths
            words = _word_view(_padded(data))
            values = _packed_values(words, bits, widths.view(np.int64), packed_lens)
            if signed_packed:
                values = unzigzag_array(values, inplace=True)
            groups.append((values, packed))
    delta_runs = np.flatnonzero(kind == DELTA)
    if len(delta_runs):
        if words is None:
            words = _word_view(_padded(data))
        base, first_delta, widths, bits = table[3:7, delta_runs]
        dl = lens[delta_runs]
        first = _run_starts(dl)
        mags = _packed_values(words, bits.view(np.int64), widths.view(np.int64), dl, skip=2)
        negative = np.repeat((first_delta >> _U64(63)).astype(bool), dl)
        inc = np.where(negative, _U64(0) - mags, mags)
        inc[first] = base
        inc[first + 1] = first_delta
        sums = np.cumsum(inc, dtype=_U64)
        before = np.zeros(len(dl), dtype=_U64)
        before[1:] = sums[first[1:] - 1]
        sums -= np.repeat(before, dl)
        groups.append((sums, delta_runs))
    if runs.ready:
        groups.append((np.concatenate(runs.ready), np.flatnonzero(kind == READY)))
    if len(groups) == 1 and len(groups[0][1]) == len(kind):
        # a single kind of run: the runs follow each other, so their values in order are the output
        return groups[0][0]
    # arithmetic runs (every other run as base 0, step 0: its slots are overwritten below)
    arith = kind == ARITH
    bases = np.where(arith, table[3], _U64(0))
    steps = np.where(arith, table[4], _U64(0))
    if steps.any():
        # one cumulative sum: each slot adds its run's step, a run's first slot jumps from the previous
        # run's last value to its base (all mod 2**64)
        jumps = bases.copy()
        jumps[1:] -= bases[:-1] + steps[:-1] * (lens[:-1] - 1).astype(_U64)
        out = np.repeat(steps, lens)
        out[_run_starts(lens)] = jumps
        np.cumsum(out, out=out)
    else:
        out = np.repeat(bases, lens)
    group_of_value = None
    for g, (values, sel) in enumerate(groups, 1):
        if len(values) * 8 < total:
            # a small share of the slots: scatter by index
            group_lens = lens[sel]
            where = np.repeat(table[0][sel].view(np.int64) - _run_starts(group_lens), group_lens)
            where += np.arange(len(values))
            out[where] = values
            continue
        if group_of_value is None:
            group_of_run = np.zeros(len(kind), dtype=np.int8)
            for h, (_, runs_of_h) in enumerate(groups, 1):
                group_of_run[runs_of_h] = h
            group_of_value = np.repeat(group_of_run, lens)
        out[group_of_value == g] = values
    return out


def decode_int_rle_v2(data: bytes | bytearray | memoryview, count: int, signed: bool, pos: int = 0) -> tuple[np.ndarray, int]:
    """Decode ``count`` integers of RLE v2 starting at ``pos``; returns (int64 array, end offset)."""
    native = compiled()
    if native is not None and 0 < count <= _V2_VALUES_PER_BYTE * (len(data) - pos):
        out = np.empty(count, np.int64)
        end = native.rle_v2(data, pos, count, signed, out)
        if end >= 0:
            return out, end
    return _decode_int_rle_v2_numpy(data, count, signed, pos)


def _decode_int_rle_v2_numpy(data: bytes | bytearray | memoryview, count: int, signed: bool, pos: int = 0
                             ) -> tuple[np.ndarray, int]:
    """:func:`decode_int_rle_v2` in numpy (the compiled loop's reference and fallback)."""
    n = len(data)
    runs = _Runs()
    produced = 0
    buf: np.ndarray | None = None
    while produced < count:
        probe_pos, probe_produced = pos, produced
        pos, produced, scanned = _scan_v2(data, pos, produced, count, signed, runs, PROBE_RUNS)
        if produced >= count or pos - probe_pos >= SHORT_RUN_BYTES * scanned:
            continue
        # many short runs: find the rest of the headers with numpy, window by window
        if buf is None:
            buf = np.frombuffer(data, dtype=np.uint8)
        per_value = (pos - probe_pos) / max(produced - probe_produced, 1)
        while produced < count and pos < n:
            stop = _window_stop(pos, n, count - produced, per_value)
            found = run_headers.v2_window(buf, pos, stop, count - produced)
            window_pos, window_produced = pos, produced
            produced = _add_v2_runs(runs, found, pos, produced, data, signed)
            pos = found.runs.resume
            if found.runs.scalar_next or pos - window_pos >= SHORT_RUN_BYTES * len(found.runs.heads):
                break  # a malformed run (reported by the scalar scan) or runs that got long
            per_value = 2 * (pos - window_pos) / max(produced - window_produced, 1)
    if produced == 0:
        return np.zeros(0, np.int64), pos
    repeats = runs.repeats() if not runs.ready else None
    if repeats is not None:
        # every run repeats one value (short repeats, direct runs of one value): one np.repeat
        out = np.repeat(repeats[0][: count], repeats[1][: count])
    else:
        out = _assemble(runs, produced, data, signed)
    return out[:count].view(np.int64), pos


#: kinds of the vectorised scanner (short repeat, direct, patched base, delta) as runs-table kinds
_V2_KINDS = np.asarray([ARITH, PACKED, READY, DELTA], dtype=_U64)


def _add_v2_runs(runs: _Runs, found: run_headers.V2Window, start: int, produced: int, data: bytes | bytearray | memoryview,
                 signed: bool) -> int:
    """Record the runs of a vectorised window; returns the new count of values produced."""
    lens = found.runs.lengths
    if len(lens) == 0:
        return produced
    if found.kind is None:
        # every run repeats one value
        runs.add_repeats(produced, unzigzag_array(found.base, inplace=True) if signed else found.base, lens)
        return produced + int(lens.sum())
    ends = np.cumsum(lens)
    kind = _V2_KINDS[found.kind]
    width = found.width.astype(_U64)
    base = found.base
    delta_runs = found.kind == 3
    if signed:
        base = np.where((found.kind == 0) | delta_runs, unzigzag_array(base), base)
    # delta runs without packed magnitudes are arithmetic
    kind[delta_runs & ((width == 0) | (lens <= 2))] = ARITH
    short = found.kind == 0
    width[short] = 0
    runs.add(np.stack([(ends - lens + produced).astype(_U64), lens.astype(_U64), kind, base, found.delta, width,
                       found.bits.astype(_U64)]))
    for i in np.flatnonzero(found.kind == 2).tolist():
        values, _ = _patched_base(data, int(found.runs.heads[i]) + start, int(lens[i]), int(found.width[i]),
                                  signed)
        runs.ready.append(values)
    return produced + int(ends[-1])


def _scan_v2(data: bytes | bytearray | memoryview, pos: int, produced: int, count: int, signed: bool, runs: _Runs, max_runs: int
             ) -> tuple[int, int, int]:
    """Scan up to ``max_runs`` RLE v2 runs one by one; returns (offset, values produced, runs scanned)."""
    n = len(data)
    rows = runs.rows
    widths = WIDTH_FROM_CODE
    mask = _MASK64
    scanned = 0
    while produced < count and scanned < max_runs:
        scanned += 1
        if pos >= n:
            raise OrcError(f"integer RLE v2 stream ended after {produced} of {count} values (offset {pos})")
        first = data[pos]
        encoding = first >> 6
        if encoding == 0:  # SHORT_REPEAT
            width = ((first >> 3) & 7) + 1
            length = (first & 7) + 3
            end = pos + 1 + width
            if end > n:
                raise _truncated("RLE v2 short repeat", pos, n)
            value = data[end - 1] if width == 1 else int.from_bytes(data[pos + 1 : end], "big")
            if signed:
                value = ((value >> 1) ^ -(value & 1)) & mask
            rows.append((produced, length, ARITH, value, 0, 0, 0))
            produced += length
            pos = end
            continue
        if pos + 2 > n:
            raise _truncated("RLE v2 run header", pos, n)
        length = ((first & 1) << 8 | data[pos + 1]) + 1
        code = (first >> 1) & 0x1F
        if encoding == 1:  # DIRECT
            width = widths[code]
            end = pos + 2 + ((width * length + 7) >> 3)
            if end > n:
                raise _truncated("RLE v2 direct run", pos, n)
            if length == 1:
                # one value: a repeat of it
                value = int.from_bytes(data[pos + 2 : end], "big") >> ((end - pos - 2) * 8 - width)
                if signed:
                    value = ((value >> 1) ^ -(value & 1)) & mask
                rows.append((produced, 1, ARITH, value, 0, 0, 0))
            else:
                rows.append((produced, length, PACKED, 0, 0, width, (pos + 2) * 8))
        elif encoding == 2:  # PATCHED_BASE
            values, end = _patched_base(data, pos, length, widths[code], signed)
            rows.append((produced, length, READY, 0, 0, 0, 0))
            runs.ready.append(values)
        else:  # DELTA
            width = 0 if code == 0 else widths[code]
            p = pos + 2
            base, p = _varint(data, p, n)
            if signed:
                base = _unzigzag(base)
            delta, p = _varint(data, p, n)
            delta = _unzigzag(delta)
            if width == 0 or length <= 2:
                end = p
                if width:
                    end = p + ((width * max(length - 2, 0) + 7) >> 3)
                    if end > n:
                        raise _truncated("RLE v2 delta run", pos, n)
                rows.append((produced, length, ARITH, base, delta, 0, 0))
            else:
                end = p + ((width * (length - 2) + 7) >> 3)
                if end > n:
                    raise _truncated("RLE v2 delta run", pos, n)
                rows.append((produced, length, DELTA, base, delta, width, p * 8))
        produced += length
        pos = end
    return pos, produced, scanned


def _patched_base(data: bytes | bytearray | memoryview, pos: int, length: int, width: int, signed: bool) -> tuple[np.ndarray, int]:
    n = len(data)
    if pos + 4 > n:
        raise _truncated("RLE v2 patched base header", pos, n)
    third = data[pos + 2]
    fourth = data[pos + 3]
    base_width = ((third >> 5) & 7) + 1
    patch_width = WIDTH_FROM_CODE[third & 0x1F]
    gap_width = ((fourth >> 5) & 7) + 1
    patch_count = fourth & 0x1F
    if patch_width + gap_width > 64:
        raise OrcError(f"RLE v2 patched base run at offset {pos}: patch width {patch_width} + gap width {gap_width} > 64")
    p = pos + 4
    if p + base_width > n:
        raise _truncated("RLE v2 patched base", pos, n)
    base = int.from_bytes(data[p : p + base_width], "big")
    sign_bit = 1 << (base_width * 8 - 1)
    if base & sign_bit:
        base = -(base & ~sign_bit)
    p += base_width
    values_end = p + ((width * length + 7) >> 3)
    entry_width = closest_fixed_bits(patch_width + gap_width)
    end = values_end + ((entry_width * patch_count + 7) >> 3)
    if end > n:
        raise _truncated("RLE v2 patched base run", pos, n)
    words = _word_view(_padded(data[p:end]))
    values = unpack_bits(words, np.arange(length, dtype=np.int64) * width, width)
    if patch_count:
        entry_bits = (values_end - p) * 8 + np.arange(patch_count, dtype=np.int64) * entry_width
        entries = unpack_bits(words, entry_bits, entry_width).tolist()
        patch_mask = (1 << patch_width) - 1
        # applied as ORC Java/C++ do: each patch lands `gap` values after the previous one (255-gap, 0-patch
        # entries only move on); a patch that does not move forward, or lands past the run, ends the patching
        last = -1
        skipped = 0
        patch_index: list[int] = []
        patch_value: list[int] = []
        for entry in entries:
            gap = entry >> patch_width
            patch = entry & patch_mask
            if gap == 255 and patch == 0:
                skipped += 255
                continue
            target = max(last, 0) + skipped + gap
            skipped = 0
            if (last >= 0 and target == last) or target >= length:
                break
            patch_index.append(target)
            patch_value.append((patch << width) & _MASK64)
            last = target
        if patch_index:
            values[np.asarray(patch_index)] |= np.asarray(patch_value, dtype=_U64)
    # base + value with Java long wraparound
    return values + _U64(base & _MASK64), end


def decode_int_rle_v1(data: bytes | bytearray | memoryview, count: int, signed: bool, pos: int = 0) -> tuple[np.ndarray, int]:
    """Decode ``count`` integers of RLE v1 starting at ``pos``; returns (int64 array, end offset)."""
    n = len(data)
    runs = _Runs()
    rows = runs.rows
    produced = 0
    terminators: np.ndarray | None = None
    literal_ranges: list[tuple[int, int, int, int]] = []  # (out offset, first byte, its terminator index, count)
    while produced < count:
        if pos >= n:
            raise OrcError(f"integer RLE v1 stream ended after {produced} of {count} values (offset {pos})")
        c = data[pos]
        if c < 128:
            if pos + 2 > n:
                raise _truncated("RLE v1 run", pos, n)
            length = c + 3
            delta = data[pos + 1]
            delta = delta - 256 if delta >= 128 else delta
            base, pos = _varint(data, pos + 2, n)
            if signed:
                base = _unzigzag(base)
            rows.append((produced, length, ARITH, base, delta & _MASK64, 0, 0))
            produced += length
        else:
            k = 256 - c
            if terminators is None:
                terminators = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) < 0x80)
            first = pos + 1
            j = int(np.searchsorted(terminators, first))
            if j + k > len(terminators):
                raise _truncated("RLE v1 literals", pos, n)
            literal_ranges.append((produced, first, j, k))
            rows.append((produced, k, FILLED, 0, 0, 0, 0))
            pos = int(terminators[j + k - 1]) + 1
            produced += k
    if produced == 0:
        return np.zeros(0, np.int64), pos
    out = _assemble(runs, produced, data, False)
    if literal_ranges:
        assert terminators is not None
        ranges = np.asarray(literal_ranges, np.int64).reshape(-1, 4)
        counts = ranges[:, 3]
        run_of, within = _within(counts)
        # a literal run's varints end at consecutive terminators; each starts after the previous one ends
        which = ranges[run_of, 2] + within
        ends = terminators[which]
        starts = terminators[np.maximum(which - 1, 0)] + 1
        starts[within == 0] = ranges[:, 1]
        lengths = ends - starts + 1
        if int(lengths.max()) > 10:
            raise OrcError("RLE v1 literal varint is longer than 10 bytes")
        values = _varint_values(np.frombuffer(data, dtype=np.uint8), starts, lengths)
        if signed:
            values = unzigzag_array(values, inplace=True)
        out[ranges[run_of, 0] + within] = values
    return out[:count].view(np.int64), pos


def decode_int_rle(data: bytes | bytearray | memoryview, count: int, signed: bool, version: int, pos: int = 0) -> tuple[np.ndarray, int]:
    """Integer RLE of either version (1 for DIRECT/DICTIONARY encodings, 2 for the _V2 ones)."""
    if version == 2:
        return decode_int_rle_v2(data, count, signed, pos)
    return decode_int_rle_v1(data, count, signed, pos)
