"""ORC run-length decoders: byte RLE, boolean RLE, integer RLE v1 and v2, and varints.

Every decoder works in two passes so that no Python loop runs per value:
1. a scan over the run headers only (a short pure-Python loop per run, never per value), which validates each
   run against the bytes that remain and records what the run holds;
2. numpy work over all runs of the same shape at once: repeats with ``np.repeat``, bit-packed values with one
   gather of unaligned big-endian 64-bit words, delta runs with one segmented cumulative sum.

Integers are handled modulo 2**64 like Java longs (unsigned streams may carry values >= 2**63; they come back
as the int64 with the same bits). Decoders return the values plus the offset just past the last run they read;
a run that crosses ``count`` is read whole and cut. Output size is bounded by what the input actually encodes, so
a corrupt count can never allocate more than the stream can hold.
"""

from __future__ import annotations

import numpy as np

from . import run_headers
from .errors import OrcError

_MASK64 = (1 << 64) - 1
_U64 = np.uint64

#: runs scanned one by one before deciding whether the stream's runs are short enough for the vectorised scan
PROBE_RUNS = 64
#: average bytes per run below which the rest of a stream's headers are found with numpy
#: (:mod:`.run_headers` costs about 30 ns per byte, the Python loop about 1.5 µs per run)
SHORT_RUN_BYTES = 48
#: most bytes one vectorised window covers (after each window the run lengths are judged again)
MAX_WINDOW = 1 << 18

#: RLE v2 5-bit width codes → bit widths (codes 24..31 are the wide ones).
WIDTH_FROM_CODE = tuple(list(range(1, 25)) + [26, 28, 30, 32, 40, 48, 56, 64])


def closest_fixed_bits(n: int) -> int:
    """The smallest width RLE v2 can encode that holds ``n`` bits (Java ``getClosestFixedBits``)."""
    if n <= 0:
        return 1
    if n <= 24:
        return n
    for width in (26, 28, 30, 32, 40, 48, 56, 64):
        if n <= width:
            return width
    raise OrcError(f"bit width {n} is more than 64")


# ------------------------------------------------------------------------------------------------ helpers


def _truncated(what: str, pos: int, size: int) -> OrcError:
    return OrcError(f"{what} truncated: needs bytes past offset {pos} of a {size}-byte stream")


def _varint(data: bytes, pos: int, n: int) -> tuple[int, int]:
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


def _padded(data: bytes) -> np.ndarray:
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


def unzigzag_array(values: np.ndarray) -> np.ndarray:
    """Zigzag-decode uint64 values (result: the uint64 bits of the signed values)."""
    v = values.astype(_U64, copy=False)
    sign = v & _U64(1)
    np.negative(sign, out=sign)  # 0 or all ones (uint64 wraps)
    out = v >> _U64(1)
    out ^= sign
    return out


# ------------------------------------------------------------------------------------------------ byte RLE


def decode_byte_rle(data: bytes, count: int, pos: int = 0) -> tuple[np.ndarray, int]:
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
    lit64 = lit.astype(np.int64)
    g = _run_starts(lens)
    src = np.repeat(first - g * lit64, lens)
    src += np.arange(total) * np.repeat(lit64, lens)
    return buf[src[:count]], pos


def _window_stop(pos: int, size: int, wanted: int, per_value: float) -> int:
    """End of the next vectorised window: enough bytes for the values still wanted at the rate seen so far
    (with some slack), at most :data:`MAX_WINDOW`, never past the stream."""
    return min(size, pos + min(MAX_WINDOW, int(wanted * per_value * 1.25) + 4096))


def _byte_run_columns(starts: list[int], lengths: list[int], literal: list[bool]
                      ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return np.asarray(starts, np.int64), np.asarray(lengths, np.int64), np.asarray(literal, bool)


def decode_boolean_rle(data: bytes, count: int, pos: int = 0, bit_offset: int = 0) -> tuple[np.ndarray, int]:
    """Decode ``count`` booleans (bits MSB-first over byte RLE), skipping ``bit_offset`` bits of the first byte."""
    nbytes = (count + bit_offset + 7) >> 3
    raw, end = decode_byte_rle(data, nbytes, pos)
    bits = np.unpackbits(raw)
    return bits[bit_offset : bit_offset + count].astype(bool), end


# ------------------------------------------------------------------------------------------------ varints


def decode_varints(data: bytes, count: int, signed: bool, pos: int = 0) -> tuple[np.ndarray, int]:
    """Decode ``count`` consecutive varints of at most 64 bits (zigzag when ``signed``); returns (int64, end)."""
    if count == 0:
        return np.zeros(0, np.int64), pos
    buf, starts, lengths, stop = _varint_layout(data, count, pos, "varint stream")
    if int(lengths.max()) > 10:
        bad = int(starts[int(np.argmax(lengths > 10))]) + pos
        raise OrcError(f"varint at offset {bad} is longer than 10 bytes")
    values = _varint_values(buf, starts, lengths)
    if signed:
        values = unzigzag_array(values)
    return values.view(np.int64), pos + stop


def _varint_layout(data: bytes, count: int, pos: int, what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
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


def _unaligned_words(buf: np.ndarray, itemsize: int) -> np.ndarray:
    """Little-endian words of ``itemsize`` bytes starting at every byte of ``buf`` (zero past its end)."""
    padded = np.zeros(len(buf) + 8, dtype=np.uint8)
    padded[: len(buf)] = buf
    return np.ndarray(shape=(len(padded) - itemsize + 1,), dtype=f"<u{itemsize}", buffer=padded, strides=(1,))


def _join_groups(x: np.ndarray) -> np.ndarray:
    """Squeeze the low 7 bits of every byte of each word together (byte 0's bits lowest), in place."""
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


def _varint_chunk(words: np.ndarray, starts: np.ndarray, lengths: np.ndarray, skip: int) -> np.ndarray:
    """The value bits held by bytes ``skip .. skip+7`` of each varint (56 bits at most, uint64)."""
    take = np.clip(lengths - skip, 0, 8)
    # varints shorter than ``skip`` bytes contribute nothing (masked below); keep their index inside the buffer
    x = words[np.minimum(starts + skip, len(words) - 1)] if skip else words[starts]
    x &= _LOW_BYTES_64[take]
    x &= _U64(0x7F7F7F7F7F7F7F7F)
    return _join_groups(x)


def _varint_values(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Varints of at most 10 bytes at ``starts`` as uint64 (bits past 64 dropped, like a Java long)."""
    longest = int(lengths.max())
    if longest <= 4:
        x = _unaligned_words(buf, 4)[starts]
        x &= _LOW_BYTES_32[lengths]
        x &= np.uint32(0x7F7F7F7F)
        return _join_groups(x).astype(_U64)
    words = _unaligned_words(buf, 8)
    values = _varint_chunk(words, starts, lengths, 0)
    if longest > 8:
        values |= _varint_chunk(words, starts, lengths, 8) << _U64(56)
    return values


def decode_big_varints(data: bytes, count: int, pos: int = 0, max_bytes: int = 24) -> tuple[list[int], int]:
    """Decode ``count`` zigzag varints of any size (decimal DATA) into Python ints; returns (list, end)."""
    if count == 0:
        return [], pos
    values, stop = decode_big_varints_array(data, count, pos, max_bytes)
    return values.tolist(), stop


def decode_big_varints_array(data: bytes, count: int, pos: int = 0, max_bytes: int = 24
                             ) -> tuple[np.ndarray, int]:
    """:func:`decode_big_varints` as an array: int64 when every value fits (below 2**63 in magnitude, i.e. at
    most 9 bytes), else an object array of Python ints; returns (array, end)."""
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
    words = _unaligned_words(buf, 8)
    zigzag = _varint_chunk(words, starts, lengths, 0).astype(object)
    for skip in range(8, longest, 8):
        piece = _varint_chunk(words, starts, lengths, skip)
        if piece.any():
            zigzag |= piece.astype(object) << (7 * skip)
    return (zigzag >> 1) ^ -(zigzag & 1), pos + stop


# ------------------------------------------------------------------------------------------------ integer RLE


class _Runs:
    """Runs found by a scan, grouped by how their values are produced.

    The scalar scanner appends one tuple per run to the lists; the vectorised one adds whole columns with
    :meth:`add` (after :meth:`flush` so that each kind stays in stream order).
    """

    def __init__(self) -> None:
        # repeated or arithmetic runs, value i = base + i * delta (mod 2**64): (out offset, length, base, delta)
        self.arith: list[tuple[int, int, int, int]] = []
        # bit-packed runs, value i at bit bit_start + i * width: (out offset, length, width, bit_start)
        self.packed: list[tuple[int, int, int, int]] = []
        # delta runs with packed magnitudes (base, base + delta, then +/- each magnitude):
        # (out offset, length, base, delta, width, bit_start)
        self.delta: list[tuple[int, int, int, int, int, int]] = []
        # runs decoded on their own (patched base): (out offset, uint64 values)
        self.ready: list[tuple[int, np.ndarray]] = []
        self._chunks: dict[str, list[np.ndarray]] = {"arith": [], "packed": [], "delta": []}

    def flush(self) -> None:
        """Move the scalar scanner's tuples into column chunks."""
        for name, dtype in (("arith", _U64), ("packed", np.int64), ("delta", _U64)):
            rows = getattr(self, name)
            if rows:
                self._chunks[name].append(_columns(rows, dtype))
                rows.clear()

    def add(self, name: str, columns: np.ndarray) -> None:
        """Add runs of one kind as a (fields, runs) array."""
        if columns.shape[1]:
            self._chunks[name].append(columns)

    def table(self, name: str) -> np.ndarray | None:
        """All runs of a kind as a (fields, runs) array, in stream order; None when there are none."""
        self.flush()
        chunks = self._chunks[name]
        if not chunks:
            return None
        return chunks[0] if len(chunks) == 1 else np.concatenate(chunks, axis=1)


def _run_starts(lens: np.ndarray) -> np.ndarray:
    return np.cumsum(lens) - lens


def _arith_values(base: np.ndarray, delta: np.ndarray, lens: np.ndarray) -> np.ndarray:
    """Values ``base + i * delta`` of every run, concatenated (uint64, wrapping)."""
    n = int(lens.sum())
    if not delta.any():
        return np.repeat(base, lens)
    g = _run_starts(lens).astype(_U64)
    j = np.arange(n, dtype=_U64)
    if (delta == delta[0]).all():
        d = delta[0]
        return np.repeat(base - d * g, lens) + d * j
    return np.repeat(base - delta * g, lens) + np.repeat(delta, lens) * j


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


def _contiguous_packed(data, bit_start: list[int], lens: list[int], width: int) -> np.ndarray | None:
    """Values of packed runs of one width whose payloads, joined, form one continuous bit string (every run but
    the last fills whole bytes, as full 512-value runs always do): decoded without per-value offsets."""
    last = len(lens) - 1
    if any((n * width) & 7 for n in lens[:last]) or any(b & 7 for b in bit_start):
        return None
    view = memoryview(data)
    total = sum(lens)
    joined = b"".join([view[b >> 3 : (b >> 3) + ((width * n + 7) >> 3)] for b, n in zip(bit_start, lens, strict=True)])
    if width == 8:
        values = np.frombuffer(joined, np.uint8, count=total)
    elif width in (16, 32, 64):
        values = np.frombuffer(joined, f">u{width // 8}", count=total)
    elif width % 8 == 0:
        size = width // 8
        raw = np.frombuffer(joined, np.uint8, count=total * size).reshape(total, size)
        wide = np.zeros((total, 8), np.uint8)
        wide[:, 8 - size :] = raw
        values = wide.view(">u8").ravel()
    elif width in (1, 2, 4):
        raw = np.frombuffer(joined, np.uint8)
        shifts = np.arange(8 - width, -1, -width, dtype=np.uint8)
        values = ((raw[:, None] >> shifts[None, :]) & np.uint8((1 << width) - 1)).ravel()[:total]
    else:
        words = _word_view(_padded(joined))
        values = unpack_bits(words, np.arange(total, dtype=np.int64) * width, width)
    return values.astype(_U64)


def _columns(rows: list[tuple], dtype) -> np.ndarray:
    return np.asarray(rows, dtype=dtype).reshape(len(rows), -1).T


def _assemble(runs: _Runs, total: int, data: bytes, signed_packed: bool, more: bool = False) -> np.ndarray:
    """Values of all runs in stream order (uint64)."""
    # each kind's values, concatenated in that kind's run order, plus (out offset, length) of its runs
    groups: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
    arith = runs.table("arith")
    if arith is not None:
        outs, lens, base, delta = arith
        lens = lens.astype(np.int64)
        groups.append((_arith_values(base, delta, lens), outs.astype(np.int64), lens))
    words = None
    cols = runs.table("packed")
    if cols is not None:
        widths = cols[2]
        for width in np.unique(widths).tolist():
            sel = cols[:, widths == width] if cols.shape[1] > 1 else cols
            outs, lens, _, bits = sel
            values = _contiguous_packed(data, bits.tolist(), lens.tolist(), width)
            if values is None:
                if words is None:
                    words = _word_view(_padded(data))
                values = _packed_values(words, bits, np.full(len(bits), width, np.int64), lens)
            if signed_packed:
                values = unzigzag_array(values)
            groups.append((values, outs, lens))
    delta_runs = runs.table("delta")
    if delta_runs is not None:
        if words is None:
            words = _word_view(_padded(data))
        outs, lens, base, first_delta, widths, bits = delta_runs
        lens = lens.astype(np.int64)
        first = _run_starts(lens)
        mags = _packed_values(words, bits.astype(np.int64), widths.astype(np.int64), lens, skip=2)
        negative = np.repeat((first_delta >> _U64(63)).astype(bool), lens)
        inc = np.where(negative, _U64(0) - mags, mags)
        inc[first] = base
        inc[first + 1] = first_delta
        sums = np.cumsum(inc, dtype=_U64)
        before = np.zeros(len(lens), dtype=_U64)
        before[1:] = sums[first[1:] - 1]
        groups.append((sums - np.repeat(before, lens), outs.astype(np.int64), lens))
    for start, values in runs.ready:
        groups.append((values, np.asarray([start], np.int64), np.asarray([len(values)], np.int64)))
    if len(groups) == 1 and not runs.ready and not more:
        # a single kind of run: the runs follow each other, so their concatenation is the output
        return groups[0][0]
    run_count = sum(len(g[1]) for g in groups)
    if run_count * 128 <= total and not more:
        # few long runs: glue slices together in stream order
        pieces = []
        for k, (_, outs, lens) in enumerate(groups):
            starts = _run_starts(lens)
            pieces.extend(zip(outs.tolist(), [k] * len(outs), starts.tolist(), lens.tolist(), strict=True))
        pieces.sort()
        return np.concatenate([groups[k][0][a : a + n] for _, k, a, n in pieces])
    out = np.empty(total, dtype=_U64)
    for values, outs, lens in groups:
        idx = np.repeat(outs - _run_starts(lens), lens) + np.arange(len(values))
        out[idx] = values
    return out


def decode_int_rle_v2(data: bytes, count: int, signed: bool, pos: int = 0) -> tuple[np.ndarray, int]:
    """Decode ``count`` integers of RLE v2 starting at ``pos``; returns (int64 array, end offset)."""
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
    out = _assemble(runs, produced, data, signed)
    return out[:count].view(np.int64), pos


def _add_v2_runs(runs: _Runs, found: run_headers.V2Window, start: int, produced: int, data: bytes,
                 signed: bool) -> int:
    """Record the runs of a vectorised window; returns the new count of values produced."""
    lens = found.runs.lengths
    if len(lens) == 0:
        return produced
    runs.flush()
    ends = np.cumsum(lens)
    outs = (ends - lens + produced).astype(np.int64)
    kind = found.kind
    width = found.width
    base = found.base
    if signed:
        base = unzigzag_array(base)
    fixed = (kind == 0) | ((kind == 3) & ((width == 0) | (lens <= 2)))
    sel = np.flatnonzero(fixed)
    runs.add("arith", np.stack([outs[sel].astype(_U64), lens[sel].astype(_U64), base[sel], found.delta[sel]]))
    sel = np.flatnonzero(kind == 1)
    runs.add("packed", np.stack([outs[sel], lens[sel], width[sel].astype(np.int64), found.bits[sel]]))
    sel = np.flatnonzero((kind == 3) & ~fixed)
    runs.add("delta", np.stack([outs[sel].astype(_U64), lens[sel].astype(_U64), base[sel], found.delta[sel],
                                width[sel].astype(_U64), found.bits[sel].astype(_U64)]))
    for i in np.flatnonzero(kind == 2).tolist():
        values, _ = _patched_base(data, int(found.runs.heads[i]) + start, int(lens[i]), int(width[i]), signed)
        runs.ready.append((int(outs[i]), values))
    return produced + int(ends[-1])


def _scan_v2(data: bytes, pos: int, produced: int, count: int, signed: bool, runs: _Runs, max_runs: int
             ) -> tuple[int, int, int]:
    """Scan up to ``max_runs`` RLE v2 runs one by one; returns (offset, values produced, runs scanned)."""
    n = len(data)
    arith = runs.arith
    packed = runs.packed
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
            arith.append((produced, length, value, 0))
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
            packed.append((produced, length, width, (pos + 2) * 8))
        elif encoding == 2:  # PATCHED_BASE
            values, end = _patched_base(data, pos, length, widths[code], signed)
            runs.ready.append((produced, values))
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
                arith.append((produced, length, base, delta))
            else:
                end = p + ((width * (length - 2) + 7) >> 3)
                if end > n:
                    raise _truncated("RLE v2 delta run", pos, n)
                runs.delta.append((produced, length, base, delta, width, p * 8))
        produced += length
        pos = end
    return pos, produced, scanned


def _patched_base(data: bytes, pos: int, length: int, width: int, signed: bool) -> tuple[np.ndarray, int]:
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


def decode_int_rle_v1(data: bytes, count: int, signed: bool, pos: int = 0) -> tuple[np.ndarray, int]:
    """Decode ``count`` integers of RLE v1 starting at ``pos``; returns (int64 array, end offset)."""
    n = len(data)
    runs = _Runs()
    produced = 0
    terminators: np.ndarray | None = None
    literal_ranges: list[tuple[int, int, int]] = []  # (out offset, first byte, count)
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
            runs.arith.append((produced, length, base, delta & _MASK64))
            produced += length
        else:
            k = 256 - c
            if terminators is None:
                terminators = np.flatnonzero(np.frombuffer(data, dtype=np.uint8) < 0x80)
            first = pos + 1
            j = int(np.searchsorted(terminators, first))
            if j + k > len(terminators):
                raise _truncated("RLE v1 literals", pos, n)
            literal_ranges.append((produced, first, k))
            pos = int(terminators[j + k - 1]) + 1
            produced += k
    if produced == 0:
        return np.zeros(0, np.int64), pos
    if literal_ranges:
        buf = np.frombuffer(data, dtype=np.uint8)
        first_bytes = np.asarray([r[1] for r in literal_ranges], np.int64)
        last_end = pos
        region = buf[int(first_bytes.min()) : last_end]
        ends_all = np.flatnonzero(region < 0x80) + int(first_bytes.min())
        # terminators of each literal range are consecutive in ends_all
        idx0 = np.searchsorted(ends_all, first_bytes)
        counts = np.asarray([r[2] for r in literal_ranges], np.int64)
        run_of, within = _within(counts)
        ends = ends_all[idx0[run_of] + within]
        starts = np.where(within == 0, first_bytes[run_of], ends_all[np.maximum(idx0[run_of] + within - 1, 0)] + 1)
        lengths = ends - starts + 1
        if int(lengths.max()) > 10:
            raise OrcError("RLE v1 literal varint is longer than 10 bytes")
        vrun, vwithin = _within(lengths)
        src = starts[vrun] + vwithin
        contrib = (buf[src] & 0x7F).astype(_U64) << (vwithin * 7).astype(_U64)
        values = np.add.reduceat(contrib, np.cumsum(lengths) - lengths)
        if signed:
            values = unzigzag_array(values)
        outs = np.asarray([r[0] for r in literal_ranges], np.int64)[run_of] + within
        out = _assemble(runs, produced, data, False, more=True)
        out[outs] = values
    else:
        out = _assemble(runs, produced, data, False)
    return out[:count].view(np.int64), pos


def decode_int_rle(data: bytes, count: int, signed: bool, version: int, pos: int = 0) -> tuple[np.ndarray, int]:
    """Integer RLE of either version (1 for DIRECT/DICTIONARY encodings, 2 for the _V2 ones)."""
    if version == 2:
        return decode_int_rle_v2(data, count, signed, pos)
    return decode_int_rle_v1(data, count, signed, pos)
