"""Run-length encoders of ORC (byte RLE, boolean RLE, integer RLE v1 and v2) and varints, numpy-vectorised.

Every encoder takes the whole stream of one stripe at once and returns the bytes plus, for each requested value
index ("mark"), the row-index position a Java writer would record just before writing that value: the byte
offset of the first run that was still buffered (not yet written out) and the number of values buffered in it.

Run splitting reproduces ORC Java's writers (``RunLengthByteWriter``, ``RunLengthIntegerWriter``,
``RunLengthIntegerWriterV2``, ``BitFieldWriter``) exactly, so the bytes are the same as Java's for the same values:

* a literal ("variable") buffer is cut when three values in a row inside the buffer form a run (equal values,
  or for RLE v1 a progression with a delta in [-128, 127]); the run then grows until it breaks or hits its cap;
* literal buffers and runs are capped (RLE v2: 512 and 512; byte RLE and RLE v1: 128 literals, 130 repeats);
* RLE v2 picks SHORT_REPEAT / DIRECT / PATCHED_BASE / DELTA per buffer with Java's rules (percentile bit widths,
  aligned widths under the SPEED strategy, base width with a sign bit, gap splitting, the 1-bit-delta-as-2 rule,
  the overflow fallback to DIRECT).

The splitting is a short Python loop over runs (never over values); everything per value is numpy.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass
from typing import Any

import numpy as np

from ._rle_widths import CLOSEST_ALIGNED as _CLOSEST_ALIGNED
from ._rle_widths import CLOSEST_FIXED as _CLOSEST_FIXED
from ._rle_widths import WIDTH_CODE as _WIDTH_CODE
from ._rle_widths import WIDTHS as _DECODED_WIDTHS

__all__ = [
    "EncodedRle",
    "bit_lengths",
    "encode_bool_rle",
    "encode_byte_rle",
    "encode_int_rle_v1",
    "encode_int_rle_v2",
    "encode_signed_varints",
    "encode_varints",
    "zigzag64",
]

_U64 = np.uint64
_INF = np.iinfo(np.int64).max

# bit width tables (SerializationUtils: getClosestFixedBits, getClosestAlignedFixedBits, encode/decodeBitWidth)
# come from .rle_widths, shared with the decoders


def bit_lengths(values: np.ndarray) -> np.ndarray:
    """Number of significant bits of each uint64 (0 for 0), exactly (no float rounding)."""
    values = np.asarray(values, dtype=_U64)
    if len(values) and int(values.max()) < (1 << 53):
        # every value is exact as a double: one frexp gives the bit length
        return np.frexp(values.astype(np.float64))[1].astype(np.int64)
    high = (values >> _U64(32)).astype(np.float64)
    low = (values & _U64(0xFFFFFFFF)).astype(np.float64)
    # frexp is exact for integers below 2**53, and each half has 32 bits
    return np.where(high > 0, np.frexp(high)[1].astype(np.int64) + 32, np.frexp(low)[1].astype(np.int64))


def zigzag64(values: np.ndarray) -> np.ndarray:
    """Zigzag-encode int64 values into uint64 (``(n << 1) ^ (n >> 63)``)."""
    values = np.asarray(values, dtype=np.int64)
    return ((values << np.int64(1)) ^ (values >> np.int64(63))).view(_U64)


def _exclusive_cumsum(lengths: np.ndarray) -> np.ndarray:
    out = np.zeros(len(lengths), dtype=np.int64)
    if len(lengths) > 1:
        np.cumsum(lengths[:-1], out=out[1:])
    return out


def _ranges(starts: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """Concatenation of ``arange(start, start + length)`` for every pair, vectorised."""
    lengths = np.asarray(lengths, dtype=np.int64)
    total = int(lengths.sum())
    if total == 0:
        return np.zeros(0, dtype=np.int64)
    shift = np.repeat(np.asarray(starts, dtype=np.int64) - _exclusive_cumsum(lengths), lengths)
    return shift + np.arange(total, dtype=np.int64)


def encode_varints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Unsigned base-128 varints (7 bits per byte, little end first) of uint64 values.

    Returns the bytes of all values concatenated and the byte length of each value.
    """
    values = np.asarray(values).astype(_U64, copy=False)
    counts = np.maximum(1, (bit_lengths(values) + 6) // 7)
    width = int(counts.max()) if len(counts) else 1
    # one row of up to 10 groups per value, kept where the value needs them (row-major = output order)
    groups = np.empty((len(values), width), dtype=np.uint8)
    for k in range(width):
        groups[:, k] = ((values >> _U64(7 * k)) & _U64(0x7F)).astype(np.uint8)
    column = np.arange(width, dtype=np.int64)[None, :]
    groups |= ((column < counts[:, None] - 1).astype(np.uint8) << np.uint8(7))
    return groups[column < counts[:, None]], counts


def encode_signed_varints(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zigzag varints of int64 values."""
    return encode_varints(zigzag64(values))


# ------------------------------------------------------------------------------------------------------------
# results


@dataclass(frozen=True)
class EncodedRle:
    """Bytes of an RLE stream and the position of each requested mark.

    ``positions[i]`` is ``(byte_offset, values_buffered)`` for byte and integer RLE, and
    ``(byte_offset, bytes_buffered, bits_used)`` for boolean RLE, where ``byte_offset`` is into the
    uncompressed stream (the caller maps it into compressed chunks).
    """

    data: bytes
    positions: np.ndarray


# ------------------------------------------------------------------------------------------------------------
# run splitting shared by all encoders


@dataclass(frozen=True)
class _Segments:
    starts: np.ndarray  # first value of each written run
    ends: np.ndarray  # one past its last value
    fixed: np.ndarray  # True for a repeat run, False for a literal ("variable") buffer
    trigger: np.ndarray  # index of the value whose write flushed it (_INF: only the final flush)


def _split_runs(cont: np.ndarray, n: int, literal_cap: int, run_cap: int) -> _Segments:
    """Split ``n`` values into literal buffers and runs as the Java writers do.

    ``cont[j]`` (j >= 2) says values j-2, j-1, j form a run and j continues the run of j-1. A "chain" is a
    maximal stretch of such j: the run spans [first j - 2, last j + 1). Chains that start after the previous
    one ended, within a literal buffer's reach, and are shorter than the run cap ("regular" chains, nearly
    all of them in practice) are emitted in bulk with numpy; the rest go through a step-by-step port of the
    Java state machine.
    """
    where = np.flatnonzero(cont)
    if len(where):
        breaks = np.flatnonzero(np.diff(where) != 1)
        first_cont = np.concatenate([where[:1], where[breaks + 1]])
        last_cont = np.append(where[breaks], where[-1])
    else:
        first_cont = last_cont = np.zeros(0, dtype=np.int64)
    chain_starts = first_cont - 2
    chain_ends = last_cont + 1
    chain_first_list = first_cont.tolist()
    chain_last_list = last_cont.tolist()
    chains = len(chain_starts)
    # regular[j]: chain j follows chain j-1 directly (given the previous run ended at chain j-1's end)
    regular = np.zeros(chains, dtype=bool)
    if chains > 1:
        gap = chain_starts[1:] - chain_ends[:-1]
        regular[1:] = (gap >= 0) & (gap <= literal_cap - 3) & (chain_ends[1:] - chain_starts[1:] < run_cap)
    irregular = np.flatnonzero(~regular).tolist()

    pieces: list[tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]] = []
    starts: list[int] = []
    ends: list[int] = []
    fixed: list[bool] = []
    trigger: list[int] = []

    def emit(s: int, e: int, is_fixed: bool, t: int) -> None:
        starts.append(s)
        ends.append(e)
        fixed.append(is_fixed)
        trigger.append(t)

    def flush_scalars() -> None:
        if starts:
            pieces.append((
                np.array(starts, dtype=np.int64), np.array(ends, dtype=np.int64),
                np.array(fixed, dtype=bool), np.array(trigger, dtype=np.int64),
            ))
            starts.clear()
            ends.clear()
            fixed.clear()
            trigger.clear()

    p = 0
    while p < n:
        # bulk path: the next chain starts at or after p, within reach, and is not capped
        c = bisect_left(chain_last_list, p + 2)
        if c < chains:
            s0, e0 = int(chain_starts[c]), int(chain_ends[c])
            if s0 >= p and s0 - p <= literal_cap - 3 and e0 - s0 < run_cap:
                d = irregular[bisect_left(irregular, c + 1)] if irregular and irregular[-1] >= c + 1 else chains
                if d - c > 1:
                    flush_scalars()
                    s_arr = chain_starts[c:d]
                    e_arr = chain_ends[c:d]
                    prev = np.concatenate([[p], e_arr[:-1]])
                    count = d - c
                    seg_s = np.empty(2 * count, dtype=np.int64)
                    seg_e = np.empty(2 * count, dtype=np.int64)
                    seg_f = np.zeros(2 * count, dtype=bool)
                    seg_t = np.empty(2 * count, dtype=np.int64)
                    seg_s[0::2], seg_e[0::2], seg_t[0::2] = prev, s_arr, s_arr + 2
                    seg_s[1::2], seg_e[1::2], seg_t[1::2] = s_arr, e_arr, np.where(e_arr < n, e_arr, _INF)
                    seg_f[1::2] = True
                    keep = seg_e > seg_s
                    pieces.append((seg_s[keep], seg_e[keep], seg_f[keep], seg_t[keep]))
                    p = int(e_arr[-1])
                    continue
        # one step of the Java state machine; the first run-completing value at or after p + 2 is in chain c
        j = max(chain_first_list[c], p + 2) if c < chains else n
        if j > p + literal_cap - 1 or j >= n:
            if n - p <= literal_cap:
                emit(p, n, False, n - 1 if n - p == literal_cap else _INF)
                break
            emit(p, p + literal_cap, False, p + literal_cap - 1)
            p += literal_cap
            continue
        s = j - 2
        if s > p:
            emit(p, s, False, j)
        e = chain_last_list[c] + 1
        while e - s >= run_cap:
            emit(s, s + run_cap, True, s + run_cap - 1)
            s += run_cap
        if e - s >= 3:
            emit(s, e, True, e if e < n else _INF)
            p = e
        else:
            p = s
    flush_scalars()
    if not pieces:
        empty = np.zeros(0, dtype=np.int64)
        return _Segments(empty, empty, np.zeros(0, dtype=bool), empty)
    return _Segments(
        np.concatenate([x[0] for x in pieces]),
        np.concatenate([x[1] for x in pieces]),
        np.concatenate([x[2] for x in pieces]),
        np.concatenate([x[3] for x in pieces]),
    )


def _positions(segments: _Segments, seg_offsets: np.ndarray, total: int, marks: np.ndarray, n: int) -> np.ndarray:
    """``(byte_offset, values_buffered)`` for each mark (the value index about to be written)."""
    marks = np.asarray(marks, dtype=np.int64)
    out = np.zeros((len(marks), 2), dtype=np.int64)
    if len(marks) == 0:
        return out
    which = np.searchsorted(segments.trigger, marks, side="left")
    inside = which < len(segments.starts)
    safe = np.minimum(which, max(len(segments.starts) - 1, 0))
    if len(segments.starts):
        out[:, 0] = np.where(inside, seg_offsets[safe], total)
        out[:, 1] = np.where(inside, marks - segments.starts[safe], 0)
    else:
        out[:, 0] = total
    return out


class _Assembler:
    """Places the parts of many runs (header, base, payload...) into one output array without Python loops.

    Small parts are scattered to their positions; the one bulky part (the payload) fills every position left
    over, in order, through a boolean mask, which costs far less than an index per byte.
    """

    def __init__(self, part_lengths: list[np.ndarray]) -> None:
        lengths = np.stack([np.asarray(p, dtype=np.int64) for p in part_lengths])
        per_segment = lengths.sum(axis=0)
        self.segment_offsets = _exclusive_cumsum(per_segment)
        self.part_offsets = self.segment_offsets[None, :] + np.cumsum(lengths, axis=0) - lengths
        self.total = int(per_segment.sum())
        self.out = np.zeros(self.total, dtype=np.uint8)
        self.written = np.zeros(self.total, dtype=bool)

    def put_column(self, part: int, segs: np.ndarray, column: int, values: np.ndarray) -> None:
        """Write one byte per segment at ``column`` within the part."""
        where = self.part_offsets[part][segs] + column
        self.out[where] = values
        self.written[where] = True

    def put_flat(self, part: int, segs: np.ndarray, flat: np.ndarray, lengths: np.ndarray) -> None:
        """Write variable-length byte strings (concatenated in ``flat``) into the part of each segment."""
        if len(flat):
            where = _ranges(self.part_offsets[part][segs], lengths)
            self.out[where] = flat
            self.written[where] = True

    def fill_rest(self, flat: np.ndarray) -> None:
        """Write ``flat`` into every position no put_* call wrote, in order."""
        if len(flat):
            self.out[~self.written] = flat


# ------------------------------------------------------------------------------------------------------------
# bit packing (SerializationUtils.writeInts: big-endian, MSB first, each run padded to a whole byte)


def _pack(values: np.ndarray, counts: np.ndarray, widths: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Bit-pack consecutive groups of uint64 values, group i having ``counts[i]`` values of ``widths[i]`` bits.

    Returns the packed bytes of all groups (each padded to a byte) and the byte length of each group.
    """
    counts = np.asarray(counts, dtype=np.int64)
    widths = np.asarray(widths, dtype=np.int64)
    byte_lengths = (counts * widths + 7) // 8
    out = np.zeros(int(byte_lengths.sum()), dtype=np.uint8)
    if len(out) == 0:
        return out, byte_lengths
    used = np.unique(widths[counts > 0])
    if len(used) == 1 and int(used[0]) % 8 == 0:
        # one byte-aligned width: the packed values are the output, groups already whole bytes
        nbytes = int(used[0]) // 8
        return values.astype(">u8").view(np.uint8).reshape(-1, 8)[:, 8 - nbytes :].ravel(), byte_lengths
    group_offsets = _exclusive_cumsum(byte_lengths)
    value_widths = np.repeat(widths, counts)
    for width in used.tolist():
        groups = np.flatnonzero((widths == width) & (counts > 0))
        chosen = values[value_widths == width]
        if width % 8 == 0:
            nbytes = width // 8
            packed = chosen.astype(">u8").view(np.uint8).reshape(-1, 8)[:, 8 - nbytes :].ravel()
        else:
            if width <= 8:
                raw, size = chosen.astype(np.uint8).reshape(-1, 1), 8
            elif width <= 16:
                raw, size = chosen.astype(">u2").view(np.uint8).reshape(-1, 2), 16
            elif width <= 32:
                raw, size = chosen.astype(">u4").view(np.uint8).reshape(-1, 4), 32
            else:
                raw, size = chosen.astype(">u8").view(np.uint8).reshape(-1, 8), 64
            bits = np.unpackbits(raw, axis=1)[:, size - width :].ravel()
            group_bits = counts[groups] * width
            padded = (group_bits + 7) // 8 * 8
            target = np.zeros(int(padded.sum()), dtype=np.uint8)
            target[_ranges(_exclusive_cumsum(padded), group_bits)] = bits
            packed = np.packbits(target)
        out[_ranges(group_offsets[groups], byte_lengths[groups])] = packed
    return out, byte_lengths


def _big_endian_bytes(values: np.ndarray, nbytes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The low ``nbytes[i]`` bytes of each uint64, most significant first, concatenated."""
    nbytes = np.asarray(nbytes, dtype=np.int64)
    table = np.asarray(values, dtype=_U64).astype(">u8").view(np.uint8).reshape(-1, 8)
    rows = np.repeat(np.arange(len(nbytes), dtype=np.int64), nbytes)
    cols = 8 - np.repeat(nbytes, nbytes) + (np.arange(int(nbytes.sum())) - np.repeat(_exclusive_cumsum(nbytes), nbytes))
    return table[rows, cols], nbytes


# ------------------------------------------------------------------------------------------------------------
# byte RLE and boolean RLE


def _as_int64(values: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(np.asarray(values), dtype=np.int64)


def _equal_run_cont(values: np.ndarray) -> np.ndarray:
    cont = np.zeros(len(values), dtype=bool)
    if len(values) >= 3:
        eq = values[1:] == values[:-1]
        cont[2:] = eq[1:] & eq[:-1]
    return cont


def encode_byte_rle(values: np.ndarray, marks: np.ndarray | None = None) -> EncodedRle:
    """Byte RLE (RunLengthByteWriter): runs of 3..130 equal bytes, literal groups of up to 128 bytes."""
    data = np.ascontiguousarray(np.asarray(values).astype(np.uint8, copy=False))
    n = len(data)
    seg = _split_runs(_equal_run_cont(data), n, 128, 130)
    lengths = seg.ends - seg.starts
    body = np.where(seg.fixed, 1, lengths)
    asm = _Assembler([np.ones(len(lengths), dtype=np.int64), body])
    headers = np.where(seg.fixed, lengths - 3, 256 - lengths).astype(np.uint8)
    everything = np.arange(len(lengths))
    asm.put_column(0, everything, 0, headers)
    runs = np.flatnonzero(seg.fixed)
    asm.put_column(1, runs, 0, data[seg.starts[runs]])
    literals = np.flatnonzero(~seg.fixed)
    # when every value sits in a literal group they are already in order
    literal_bytes = data if len(runs) == 0 and len(literals) else data[np.repeat(~seg.fixed, lengths)]
    asm.fill_rest(literal_bytes)
    positions = _positions(seg, asm.segment_offsets, asm.total, np.zeros(0) if marks is None else marks, n)
    return EncodedRle(asm.out.tobytes(), positions)


def encode_bool_rle(values: np.ndarray, marks: np.ndarray | None = None) -> EncodedRle:
    """Boolean RLE (BitFieldWriter): bits packed MSB first into bytes, then byte RLE; positions gain a bit offset."""
    bits = np.asarray(values, dtype=bool)
    packed = np.packbits(bits)
    marks_arr = np.zeros(0, dtype=np.int64) if marks is None else np.asarray(marks, dtype=np.int64)
    inner = encode_byte_rle(packed, marks_arr // 8)
    positions = np.concatenate([inner.positions, (marks_arr % 8)[:, None]], axis=1)
    return EncodedRle(inner.data, positions)


# ------------------------------------------------------------------------------------------------------------
# integer RLE v1 (RunLengthIntegerWriter)


def encode_int_rle_v1(values: np.ndarray, signed: bool, marks: np.ndarray | None = None) -> EncodedRle:
    """Integer RLE v1: runs of 3..130 values with a fixed delta in [-128, 127]; literal groups of up to 128."""
    data = _as_int64(values)
    n = len(data)
    cont = np.zeros(n, dtype=bool)
    if n >= 3:
        delta = data[1:] - data[:-1]
        small = (delta >= -128) & (delta <= 127)
        cont[2:] = (delta[1:] == delta[:-1]) & small[1:]
    seg = _split_runs(cont, n, 128, 130)
    lengths = seg.ends - seg.starts
    runs = np.flatnonzero(seg.fixed)
    literals = np.flatnonzero(~seg.fixed)
    encode = encode_signed_varints if signed else encode_varints
    base_bytes, base_lengths = encode(data[seg.starts[runs]])
    literal_values = data[np.repeat(~seg.fixed, lengths)]
    literal_bytes, literal_value_lengths = encode(literal_values)
    literal_lengths = np.add.reduceat(literal_value_lengths, _exclusive_cumsum(lengths[literals])) if len(
        literals
    ) else np.zeros(0, dtype=np.int64)
    body = np.zeros(len(lengths), dtype=np.int64)
    body[runs] = 1 + base_lengths
    body[literals] = literal_lengths
    asm = _Assembler([np.ones(len(lengths), dtype=np.int64), body])
    headers = np.where(seg.fixed, lengths - 3, 256 - lengths).astype(np.uint8)
    asm.put_column(0, np.arange(len(lengths)), 0, headers)
    if len(runs):
        run_delta = data[seg.starts[runs] + 1] - data[seg.starts[runs]]
        asm.put_column(1, runs, 0, run_delta.astype(np.int8).view(np.uint8))
        offsets = asm.part_offsets[1][runs] + 1
        where = _ranges(offsets, base_lengths)
        asm.out[where] = base_bytes
        asm.written[where] = True
    asm.fill_rest(literal_bytes)
    positions = _positions(seg, asm.segment_offsets, asm.total, np.zeros(0) if marks is None else marks, n)
    return EncodedRle(asm.out.tobytes(), positions)


# ------------------------------------------------------------------------------------------------------------
# integer RLE v2 (RunLengthIntegerWriterV2)

_SHORT_REPEAT, _DIRECT, _PATCHED_BASE, _DELTA = 0, 1, 2, 3
_BASE_VALUE_LIMIT = 1 << 56
_MAX_SHORT_REPEAT = 10


def _percentile_bits(hist: np.ndarray, lengths: np.ndarray, p: float) -> np.ndarray:
    """SerializationUtils.percentileBits for many runs at once, from per-run histograms of width codes."""
    per_len = (lengths.astype(np.float64) * (1.0 - p)).astype(np.int64)  # Java (int) truncation
    from_top = np.cumsum(hist[:, ::-1], axis=1)
    first = np.argmax(from_top > per_len[:, None], axis=1)
    return _DECODED_WIDTHS[31 - first]


def _width_histogram(codes: np.ndarray, run_of_value: np.ndarray, runs: int) -> np.ndarray:
    return np.bincount(run_of_value * 32 + codes, minlength=runs * 32).reshape(runs, 32)


@dataclass
class _V2Runs:
    """Everything needed to write the variable buffers of one stream (all arrays indexed by buffer)."""

    kind: np.ndarray
    width: np.ndarray  # DIRECT/DELTA packing width, PATCHED_BASE value width
    fixed_delta: np.ndarray  # DELTA with a fixed delta: True
    delta0: np.ndarray  # first delta (DELTA)
    minimum: np.ndarray


def _classify_variable(
    values: np.ndarray, lengths: np.ndarray, signed: bool, aligned: bool
) -> tuple[np.ndarray, ...]:
    """RunLengthIntegerWriterV2.determineEncoding for every variable buffer at once.

    The DELTA tests (min/max, deltas, monotony) come first; zigzag widths and percentiles are only computed for
    the buffers that are not DELTA, which for sorted or sequential data is none of them.
    """
    runs = len(lengths)
    offsets = _exclusive_cumsum(lengths)
    run_of = np.repeat(np.arange(runs, dtype=np.int64), lengths)
    local = np.arange(len(values), dtype=np.int64) - offsets[run_of]
    kind = np.full(runs, _DIRECT, dtype=np.int64)
    width = np.zeros(runs, dtype=np.int64)
    fixed_delta = np.zeros(runs, dtype=bool)
    delta0 = np.zeros(runs, dtype=np.int64)
    if runs == 0:
        empty = np.zeros(0, dtype=np.int64)
        return kind, width, fixed_delta, delta0, empty, empty, empty, empty, run_of, local, offsets

    minimum = np.minimum.reduceat(values, offsets)
    maximum = np.maximum.reduceat(values, offsets)
    prev = np.empty_like(values)
    prev[1:] = values[:-1]
    prev[0] = values[0]
    has_prev = local >= 1
    delta = values - prev  # wraps like Java longs; meaningless where has_prev is False
    two_plus = lengths >= 2
    delta0[two_plus] = delta[offsets[two_plus] + 1]
    not_fixed = np.logical_or.reduceat(has_prev & (delta != delta0[run_of]), offsets)
    not_increasing = np.logical_or.reduceat(has_prev & (prev > values), offsets)
    not_decreasing = np.logical_or.reduceat(has_prev & (prev < values), offsets)
    # Java isSafeSubtract(max, min)
    safe = ((maximum ^ minimum) >= 0) | ((maximum ^ (maximum - minimum)) >= 0)

    undecided = (lengths > 3) & safe
    constant = undecided & (minimum == maximum)
    kind[constant] = _DELTA
    fixed_delta[constant] = True
    delta0[constant] = 0
    undecided &= ~constant
    progression = undecided & ~not_fixed
    kind[progression] = _DELTA
    fixed_delta[progression] = True
    undecided &= ~progression
    monotone = undecided & (delta0 != 0) & (~not_increasing | ~not_decreasing)
    if monotone.any():
        kind[monotone] = _DELTA
        abs_delta = np.where(local >= 2, np.abs(delta), 0)
        delta_max = np.maximum.reduceat(abs_delta, offsets)
        delta_bits = _CLOSEST_FIXED[bit_lengths(delta_max.view(_U64))]
        if aligned:
            delta_bits = _CLOSEST_ALIGNED[delta_bits]
        delta_bits = np.where(delta_bits == 1, 2, delta_bits)
        width[monotone] = delta_bits[monotone]
    undecided &= ~monotone

    br95 = np.zeros(runs, dtype=np.int64)
    br100 = np.zeros(runs, dtype=np.int64)
    rest = np.flatnonzero(kind != _DELTA)
    if len(rest):
        # zigzag widths of the buffers that are not DELTA only
        all_rest = len(rest) == runs
        sub_values = values if all_rest else values[(kind != _DELTA)[run_of]]
        sub_lengths = lengths[rest]
        sub_run_of = run_of if all_rest else np.repeat(np.arange(len(rest), dtype=np.int64), sub_lengths)
        zz = zigzag64(sub_values) if signed else sub_values.view(_U64)
        zz_hist = _width_histogram(_WIDTH_CODE[bit_lengths(zz)], sub_run_of, len(rest))
        zz100 = _percentile_bits(zz_hist, sub_lengths, 1.0)
        zz90 = _percentile_bits(zz_hist, sub_lengths, 0.9)
        candidates = undecided[rest] & (zz100 - zz90 > 1)
        if candidates.any():
            sub_min = minimum[rest]
            reduced = (sub_values - sub_min[sub_run_of]).view(_U64)
            br_hist = _width_histogram(_WIDTH_CODE[bit_lengths(reduced)], sub_run_of, len(rest))
            sub95 = _percentile_bits(br_hist, sub_lengths, 0.95)
            sub100 = _percentile_bits(br_hist, sub_lengths, 1.0)
            patched = candidates & (sub100 != sub95) & (np.abs(sub_min) < _BASE_VALUE_LIMIT)
            kind[rest[patched]] = _PATCHED_BASE
            br95[rest] = sub95
            br100[rest] = sub100
        direct_bits = _CLOSEST_ALIGNED[zz100] if aligned else zz100
        is_direct = kind[rest] == _DIRECT
        width[rest[is_direct]] = direct_bits[is_direct]
    return kind, width, fixed_delta, delta0, minimum, maximum, br95, br100, run_of, local, offsets


def _patch_lists(
    values: np.ndarray,
    lengths: np.ndarray,
    offsets: np.ndarray,
    minimum: np.ndarray,
    br95: np.ndarray,
    br100: np.ndarray,
    patched_runs: np.ndarray,
) -> tuple[np.ndarray, ...]:
    """preparePatchedBlob for each PATCHED_BASE buffer: reduced values, widths and the gap/patch entries."""
    out_values = []
    value_width = np.zeros(len(patched_runs), dtype=np.int64)
    patch_width = np.zeros(len(patched_runs), dtype=np.int64)
    gap_width = np.zeros(len(patched_runs), dtype=np.int64)
    entries_per_run = np.zeros(len(patched_runs), dtype=np.int64)
    entries = []
    for i, run in enumerate(patched_runs.tolist()):
        start, length = int(offsets[run]), int(lengths[run])
        reduced = (values[start : start + length] - minimum[run]).view(_U64).copy()
        fb = int(br95[run])
        pw = int(_CLOSEST_FIXED[int(br100[run]) - fb])
        if pw == 64:
            pw, fb = 56, 8
        mask = _U64((1 << fb) - 1)
        where = np.flatnonzero(reduced > mask)
        patches = reduced[where] >> _U64(fb)
        reduced[where] &= mask
        gaps = np.diff(where, prepend=0)
        max_gap = int(gaps.max()) if len(gaps) else 0
        pgw = 1 if max_gap == 0 and len(where) else int(_CLOSEST_FIXED[int(max_gap).bit_length()])
        pgw = min(pgw, 8)
        # gaps above 255 are carried by (255, patch 0) entries
        fillers = np.maximum(0, (gaps - 1) // 255)
        gaps_left = gaps - 255 * fillers
        count = int(len(where) + fillers.sum())
        run_entries = np.zeros(count, dtype=_U64)
        real_at = np.arange(len(where)) + np.cumsum(fillers)
        filler_mask = np.ones(count, dtype=bool)
        filler_mask[real_at] = False
        run_entries[filler_mask] = _U64(255) << _U64(pw)
        run_entries[real_at] = (gaps_left.astype(_U64) << _U64(pw)) | patches
        out_values.append(reduced)
        value_width[i] = fb
        patch_width[i] = pw
        gap_width[i] = pgw
        entries_per_run[i] = count
        entries.append(run_entries)
    flat_values = np.concatenate(out_values) if out_values else np.zeros(0, dtype=_U64)
    flat_entries = np.concatenate(entries) if entries else np.zeros(0, dtype=_U64)
    return flat_values, value_width, patch_width, gap_width, entries_per_run, flat_entries


def encode_int_rle_v2(
    values: np.ndarray, signed: bool, marks: np.ndarray | None = None, aligned: bool = True
) -> EncodedRle:
    """Integer RLE v2 exactly as ORC Java writes it (``aligned`` is the SPEED encoding strategy, the default)."""
    data = _as_int64(values)
    n = len(data)
    seg = _split_runs(_equal_run_cont(data), n, 512, 512)
    lengths = seg.ends - seg.starts
    nseg = len(lengths)
    header = np.zeros(nseg, dtype=np.int64)
    base = np.zeros(nseg, dtype=np.int64)
    extra = np.zeros(nseg, dtype=np.int64)
    payload = np.zeros(nseg, dtype=np.int64)
    patches = np.zeros(nseg, dtype=np.int64)
    # deferred writes once the layout is known: ("col", part, segs, column index, values) or
    # ("flat", part, segs, flat bytes, lengths); the fourth item is an int or an array by the first
    writes: list[tuple[str, int, np.ndarray, Any, np.ndarray]] = []

    encode = encode_signed_varints if signed else encode_varints

    # -- repeat runs: SHORT_REPEAT for 3..10 values, DELTA with delta 0 beyond
    fixed = np.flatnonzero(seg.fixed)
    short = fixed[lengths[fixed] <= _MAX_SHORT_REPEAT]
    long_ = fixed[lengths[fixed] > _MAX_SHORT_REPEAT]
    if len(short):
        repeated = data[seg.starts[short]]
        rz = zigzag64(repeated) if signed else repeated.view(_U64)
        nbytes = (_CLOSEST_FIXED[bit_lengths(rz)] + 7) // 8
        header[short] = 1
        base[short] = nbytes
        head = ((nbytes - 1) << 3) | (lengths[short] - 3)
        flat, flat_len = _big_endian_bytes(rz, nbytes)
        writes.append(("col", 0, short, 0, head.astype(np.uint8)))
        writes.append(("flat", 1, short, flat, flat_len))
    if len(long_):
        first = data[seg.starts[long_]]
        vb, vl = encode(first)
        header[long_] = 2
        base[long_] = vl
        extra[long_] = 1
        length_field = lengths[long_] - 1
        writes.append(("col", 0, long_, 0, (0xC0 | (length_field >> 8)).astype(np.uint8)))
        writes.append(("col", 0, long_, 1, (length_field & 0xFF).astype(np.uint8)))
        writes.append(("flat", 1, long_, vb, vl))
        writes.append(("col", 2, long_, 0, np.zeros(len(long_), dtype=np.uint8)))

    # -- variable buffers
    variable = np.flatnonzero(~seg.fixed)
    if len(variable):
        var_lengths = lengths[variable]
        var_values = data[_ranges(seg.starts[variable], var_lengths)]
        (kind, width, fixed_delta, delta0, minimum, _maximum, br95, br100, run_of, local, offsets) = (
            _classify_variable(var_values, var_lengths, signed, aligned)
        )
        length_field = var_lengths - 1

        # DIRECT
        direct = np.flatnonzero(kind == _DIRECT)
        if len(direct):
            segs = variable[direct]
            header[segs] = 2
            direct_values = var_values if len(direct) == len(kind) else var_values[(kind == _DIRECT)[run_of]]
            zz = zigzag64(direct_values) if signed else direct_values.view(_U64)
            packed, packed_len = _pack(zz, var_lengths[direct], width[direct])
            payload[segs] = packed_len
            code = _WIDTH_CODE[width[direct]]
            writes.append(("col", 0, segs, 0, ((_DIRECT << 6) | (code << 1) | (length_field[direct] >> 8)).astype(np.uint8)))
            writes.append(("col", 0, segs, 1, (length_field[direct] & 0xFF).astype(np.uint8)))
            writes.append(("flat", 3, segs, packed, packed_len))

        # DELTA
        delta_runs = np.flatnonzero(kind == _DELTA)
        if len(delta_runs):
            segs = variable[delta_runs]
            header[segs] = 2
            first = var_values[offsets[delta_runs]]
            vb, vl = encode(first)
            base[segs] = vl
            db, dl = encode_signed_varints(delta0[delta_runs])
            extra[segs] = dl
            fixed_runs = fixed_delta[delta_runs]
            code = np.where(fixed_runs, 0, _WIDTH_CODE[width[delta_runs]])
            writes.append(
                ("col", 0, segs, 0, ((_DELTA << 6) | (code << 1) | (length_field[delta_runs] >> 8)).astype(np.uint8))
            )
            writes.append(("col", 0, segs, 1, (length_field[delta_runs] & 0xFF).astype(np.uint8)))
            writes.append(("flat", 1, segs, vb, vl))
            writes.append(("flat", 2, segs, db, dl))
            packed_runs = delta_runs[~fixed_runs]
            if len(packed_runs):
                packed_kind = np.zeros(len(kind), dtype=bool)
                packed_kind[packed_runs] = True
                chosen = packed_kind[run_of] & (local >= 2)
                prev = np.empty_like(var_values)
                prev[1:] = var_values[:-1]
                prev[:1] = var_values[:1]
                magnitudes = np.abs(var_values - prev)[chosen].view(_U64)
                packed, packed_len = _pack(magnitudes, var_lengths[packed_runs] - 2, width[packed_runs])
                payload[variable[packed_runs]] = packed_len
                writes.append(("flat", 3, variable[packed_runs], packed, packed_len))

        # PATCHED_BASE
        patched = np.flatnonzero(kind == _PATCHED_BASE)
        if len(patched):
            segs = variable[patched]
            flat_values, value_width, patch_width, gap_width, entry_counts, flat_entries = _patch_lists(
                var_values, var_lengths, offsets, minimum, br95, br100, patched
            )
            header[segs] = 4
            mins = minimum[patched]
            negative = mins < 0
            magnitude = np.abs(mins).view(_U64)
            base_width = _CLOSEST_FIXED[bit_lengths(magnitude)] + 1
            base_bytes = (base_width + 7) // 8
            signed_base = np.where(
                negative, magnitude | (_U64(1) << (base_bytes * 8 - 1).astype(_U64)), magnitude
            )
            bb, bl = _big_endian_bytes(signed_base, base_bytes)
            base[segs] = base_bytes
            packed, packed_len = _pack(flat_values, var_lengths[patched], value_width)
            payload[segs] = packed_len
            entries, entries_len = _pack(
                flat_entries, entry_counts, _CLOSEST_FIXED[gap_width + patch_width]
            )
            patches[segs] = entries_len
            lf = length_field[patched]
            writes.append(
                ("col", 0, segs, 0, ((_PATCHED_BASE << 6) | (_WIDTH_CODE[value_width] << 1) | (lf >> 8)).astype(np.uint8))
            )
            writes.append(("col", 0, segs, 1, (lf & 0xFF).astype(np.uint8)))
            writes.append(("col", 0, segs, 2, (((base_bytes - 1) << 5) | _WIDTH_CODE[patch_width]).astype(np.uint8)))
            writes.append(("col", 0, segs, 3, (((gap_width - 1) << 5) | entry_counts).astype(np.uint8)))
            writes.append(("flat", 1, segs, bb, bl))
            writes.append(("flat", 3, segs, packed, packed_len))
            writes.append(("flat", 4, segs, entries, entries_len))

    asm = _Assembler([header, base, extra, payload, patches])
    payloads = []
    for item in writes:
        if item[0] == "col":
            _, part, segs, column, col_values = item
            asm.put_column(part, segs, column, col_values)
        elif item[1] == 3:
            payloads.append(item)
        else:
            _, part, segs, flat, flat_len = item
            asm.put_flat(part, segs, flat, flat_len)
    if len(payloads) == 1:
        asm.fill_rest(payloads[0][3])
    elif payloads:
        # payloads of several encodings: merge them into segment order first
        merged = np.zeros(int(payload.sum()), dtype=np.uint8)
        payload_offsets = _exclusive_cumsum(payload)
        for _, _, segs, flat, flat_len in payloads:
            merged[_ranges(payload_offsets[segs], flat_len)] = flat
        asm.fill_rest(merged)
    positions = _positions(seg, asm.segment_offsets, asm.total, np.zeros(0) if marks is None else marks, n)
    return EncodedRle(asm.out.tobytes(), positions)
