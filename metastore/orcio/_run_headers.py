"""Run headers of RLE streams found with numpy, for streams made of many short runs.

Where a run starts fixes where the next one starts, so a stream's run headers form a chain. A Python loop
over that chain costs about a microsecond per run, which dominates when runs hold only a few values (present
streams of sparse nulls, decimal scales, RLE v2 of noisy data). Here, for every byte of a window (at most
32 KB) we compute with numpy where the next header would be if a header started at that byte (table lookups on
the first two bytes, a few more bytes for patched-base and delta runs), then follow the chain from the
window's first byte: a few rounds of pointer doubling give the node 2, 4, 8, 16 hops ahead of every byte, a
Python loop walks the chain 16 headers per step, and the strides are filled in from the smaller tables. That
is a handful of numpy passes per window byte and one Python step per 16 runs.

Two extra nodes end every chain: ``L`` (the window's end, or a run that reaches past it but inside the
stream: decoding resumes after that run) and ``L + 1`` (a run that is malformed or truncated: the caller's
scalar scanner takes over there and reports it exactly). A malformed run after the values the caller needs is
never looked at by the caller, so it does not raise.

The window scanners return the chain's runs as arrays (local header offsets and what each run holds); the
callers in :mod:`._rle` turn them into values together with the runs they scanned one by one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._rle_widths import CLOSEST_FIXED as _FIXED_BITS
from ._rle_widths import WIDTHS

_LONGEST_VARINT = 10


#: pointer-doubling rounds before the chain is walked in strides of 2**rounds headers
_DOUBLINGS = 5


def follow(nxt: np.ndarray, stop: int) -> tuple[np.ndarray, int]:
    """The chain ``0, nxt[0], nxt[nxt[0]], ...`` up to its first node ``>= stop``, and that node.

    ``nxt`` (int32 or int64) must map every node below ``stop`` to a larger one and every node from ``stop`` on to
    itself. Tables of 2, 4, ... 2**_DOUBLINGS hops come from doubling; the chain is walked that many hops at a
    time (one Python step per stride), then each stride is filled in from the smaller tables. Few, small tables
    (windows of a few tens of KB) keep the work in cache.
    """
    jumps = [nxt]
    while len(jumps) <= _DOUBLINGS and (1 << len(jumps)) <= stop:
        jumps.append(np.take(jumps[-1], jumps[-1]))
    stride = jumps[-1]
    node = 0
    coarse = [0]
    while node < stop:
        ahead = stride.item(node)
        if ahead <= node:
            raise ValueError(f"run header chain does not advance at offset {node}")
        node = ahead
        coarse.append(node)
    chain = np.asarray(coarse, dtype=np.int64)
    for table in reversed(jumps[:-1]):
        chain = np.stack((chain, np.take(table, chain)), axis=1).ravel()
    cut = int(np.searchsorted(chain, stop))
    return chain[:cut], int(chain[cut])


#: more bytes than any RLE run takes (a patched-base run of 512 64-bit values and 31 patches: 4356)
_LONGEST_RUN = 8192
_OFFSETS = np.arange(1 << 16, dtype=np.int32)


def _offsets(length: int) -> np.ndarray:
    """``arange(length)`` without allocating for windows of the usual size (read-only)."""
    return _OFFSETS[:length] if length <= len(_OFFSETS) else np.arange(length, dtype=np.int32)


def _close(local_end: np.ndarray, bad: np.ndarray | None, length: int) -> np.ndarray:
    """Clip next-header offsets to the window's end node, send malformed runs (a bool mask or the offsets of
    the malformed runs) to the bad node, append both."""
    out = np.empty(length + 2, dtype=np.int32)
    np.minimum(local_end, length, out=out[:length])
    if bad is not None:
        out[:length][bad] = length + 1
    out[length] = length
    out[length + 1] = length + 1
    return out


@dataclass
class WindowRuns:
    """Runs found in a window: header offsets relative to the window start, their value counts, and where the
    next header is (absolute), or that the run after them must be read by the scalar scanner."""

    heads: np.ndarray
    lengths: np.ndarray
    resume: int
    scalar_next: bool


def _cut(heads: np.ndarray, lengths: np.ndarray, ends: np.ndarray, last_node: int, window: int, need: int,
         start: int) -> WindowRuns:
    """Keep the runs up to the one that completes ``need`` values; note where to go on from."""
    bad = last_node == window + 1
    if bad:
        # the last chain node is the malformed run itself: the scalar scanner reports it if it is needed
        heads, lengths, ends = heads[:-1], lengths[:-1], ends[:-1]
    if len(heads) == 0:
        return WindowRuns(heads, lengths, start, True)
    total = np.cumsum(lengths)
    if int(total[-1]) >= need:
        k = int(np.searchsorted(total, need)) + 1
        return WindowRuns(heads[:k], lengths[:k], int(ends[k - 1]), False)
    return WindowRuns(heads, lengths, int(ends[-1]), bad)


# ---------------------------------------------------------------------------------------------- byte RLE


#: byte RLE: bytes taken by a run, from its header byte
_BYTE_STEP = np.asarray([2 if c < 128 else 257 - c for c in range(256)], dtype=np.int32)
#: byte RLE: values of a run, from its header byte
_BYTE_COUNT = np.asarray([c + 3 if c < 128 else 256 - c for c in range(256)], dtype=np.int64)


def byte_rle_window(buf: np.ndarray, start: int, stop: int, need: int) -> WindowRuns:
    """Byte RLE runs from ``start`` (a header) within ``buf[start:stop]`` (``buf`` is the whole stream)."""
    window = stop - start
    local_end = np.take(_BYTE_STEP, buf[start:stop])
    local_end += _offsets(window)
    room = len(buf) - start
    bad = local_end > room if int(local_end.max()) > room else None
    heads, last = follow(_close(local_end, bad, window), window)
    lengths = np.take(_BYTE_COUNT, buf[heads + start])
    return _cut(heads, lengths, local_end[heads].astype(np.int64) + start, last, window, need, start)


# ---------------------------------------------------------------------------------------------- integer RLE v2


@dataclass
class V2Window:
    """RLE v2 runs of a window with what decoding them needs (absolute byte positions).

    When every run of the window repeats one value (short repeats, and direct runs of one value: what streams
    of small noisy values such as decimal scales are made of) only ``base`` is filled: each run's value; ``kind``
    is None and the other per-run fields are empty.
    """

    runs: WindowRuns
    kind: np.ndarray | None  # 0 one value repeated (short repeat, direct run of one value), 1 direct,
    # 2 patched base, 3 delta (per run)
    width: np.ndarray  # direct/patched/delta bit width (0 for fixed-delta runs); short repeat: bytes
    base: np.ndarray  # the value of a run of one value, or a delta base: uint64 before zigzag decoding
    delta: np.ndarray  # delta runs: first delta, uint64 bits of the signed value (zigzag decoded)
    bits: np.ndarray  # direct/delta runs: absolute bit offset of the packed values


_EMPTY_U64 = np.zeros(0, dtype=np.uint64)


def _v2_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Indexed by a run's first two bytes read as a little-endian uint16 (first byte low): bytes taken by
    short-repeat and direct runs (0 for the other kinds, whose size depends on more bytes), values held, and for
    runs of one value (short repeats, direct runs of length 1) where the value is: whether the run is one,
    the byte after the header where its big-endian field starts, and the right shift that leaves the field of
    the 64-bit word read there."""
    key = np.arange(1 << 16)
    b0, b1 = key & 0xFF, key >> 8
    enc = b0 >> 6
    length = np.where(enc == 0, (b0 & 7) + 3, ((b0 & 1) << 8 | b1) + 1)
    step = np.zeros(1 << 16, dtype=np.int32)
    short = enc == 0
    step[short] = 2 + ((b0[short] >> 3) & 7)
    direct = enc == 1
    width = WIDTHS[(b0 >> 1) & 31]
    step[direct] = 2 + ((width[direct] * length[direct] + 7) >> 3)
    single = short | (direct & (length == 1))
    value_at = np.where(short, 1, 2).astype(np.int32)
    shift = np.where(short, 64 - 8 * (((b0 >> 3) & 7) + 1), 64 - width).astype(np.uint64)
    return step, length.astype(np.int64), single, value_at, shift


_V2_STEP, _V2_LENGTH, _V2_SINGLE, _V2_VALUE_AT, _V2_VALUE_SHIFT = _v2_tables()


def _varints_at(padded: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> np.ndarray:
    """Varints occupying ``padded[starts[i]..ends[i]]`` (inclusive, at most 10 bytes), as uint64 (mod 2**64)."""
    if len(starts) == 0:
        return np.zeros(0, np.uint64)
    width = int((ends - starts).max()) + 1
    cols = np.arange(width, dtype=np.int64)
    idx = starts[:, None] + cols
    groups = (padded[idx] & 0x7F).astype(np.uint64)
    groups[idx > ends[:, None]] = 0
    groups <<= (cols * 7).astype(np.uint64)
    return np.bitwise_or.reduce(groups, axis=1)


def v2_window(buf: np.ndarray, start: int, stop: int, need: int) -> V2Window:
    """Integer RLE v2 runs from ``start`` (a header) within ``buf[start:stop]`` (``buf`` is the whole stream)."""
    n = len(buf)
    window = stop - start
    # headers near the window end read a few bytes (and two varints) beyond it; zeros past the stream's end
    ext = buf[start : min(n, stop + 2 * _LONGEST_VARINT + 4)]
    size = len(ext)
    if start + size + 16 <= n:
        padded = buf[start : start + size + 16]  # bytes past ``size`` are only ever masked or shifted out
    else:
        padded = np.zeros(size + 16, dtype=np.uint8)
        padded[:size] = ext
    pairs = np.ndarray(shape=(window,), dtype="<u2", buffer=padded, strides=(1,))
    local_end = np.take(_V2_STEP, pairs)
    local_end += _offsets(window)
    near_end = n - start < window + _LONGEST_RUN
    # First pass: short-repeat and direct runs only (their sizes come from the first two bytes). Bytes of 0x80
    # and up (patched-base and delta headers, whose sizes need further bytes) go to the bad node: most streams
    # of short runs have none, and working out those sizes for every such byte (payload bytes included) is
    # most of the cost of a window. Only when the chain meets one are they worked out, and the chain followed
    # again.
    wide = np.flatnonzero(padded[:window] >= 0x80)
    bad = [wide]
    if near_end:
        # near the stream's end: runs may reach past it
        bad.append(np.flatnonzero(local_end > n - start))
    heads, last = follow(_close(local_end, np.concatenate(bad), window), window)
    words = np.ndarray(shape=(size + 9,), dtype=">u8", buffer=padded, offset=0, strides=(1,))
    if last != window + 1:
        # no patched-base or delta run: when every run holds one value, read those values and be done
        keys = pairs[heads]
        if _V2_SINGLE[keys].all():
            runs = _cut(heads, _V2_LENGTH[keys], local_end[heads].astype(np.int64) + start, last, window, need,
                    start)
            keys = keys[: len(runs.heads)]
            value = words[runs.heads + _V2_VALUE_AT[keys]].astype(np.uint64)
            value >>= _V2_VALUE_SHIFT[keys]
            return V2Window(runs, None, _EMPTY_U64, value, _EMPTY_U64, _EMPTY_U64)
    terms: np.ndarray | None = None
    if last == window + 1 and len(heads) and padded[heads[-1]] >= 0x80:
        terms = np.flatnonzero(ext < 0x80)
        bad = _wide_ends(padded, pairs, wide, terms, size, local_end)
        if near_end:
            bad.append(np.flatnonzero(local_end > n - start))
        heads, last = follow(_close(local_end, np.concatenate(bad), window), window)
    lengths = _V2_LENGTH[pairs[heads]]
    runs = _cut(heads, lengths, local_end[heads].astype(np.int64) + start, last, window, need,
                    start)
    heads = runs.heads
    k = len(heads)
    h0 = padded[heads].astype(np.int64)
    kind = h0 >> 6
    code = (h0 >> 1) & 31
    run_width = np.where(kind == 0, ((h0 >> 3) & 7) + 1, WIDTHS[code])
    run_width[(kind == 3) & (code == 0)] = 0
    base = np.zeros(k, dtype=np.uint64)
    delta = np.zeros(k, dtype=np.uint64)
    bits = (heads + start + 2) * 8
    # short repeats, and direct runs of one value, are repeats of one value: read it here
    short = np.flatnonzero(kind == 0)
    if len(short):
        value = words[heads[short] + 1].astype(np.uint64)
        value >>= (64 - 8 * run_width[short]).astype(np.uint64)
        base[short] = value
    single = np.flatnonzero((kind == 1) & (runs.lengths == 1))
    if len(single):
        value = words[heads[single] + 2].astype(np.uint64)
        value >>= (64 - run_width[single]).astype(np.uint64)
        base[single] = value
        kind[single] = 0
    deltas = np.flatnonzero(kind == 3)
    if len(deltas):
        if terms is None:  # pragma: no cover - a delta run is only found after the wide pass
            terms = np.flatnonzero(ext < 0x80)
        dh = heads[deltas]
        terms_padded = np.concatenate((terms, [size, size]))
        j = np.searchsorted(terms, dh + 2)
        b_end = terms_padded[j]
        d_end = terms_padded[j + 1]
        base[deltas] = _varints_at(padded, dh + 2, b_end)
        zz = _varints_at(padded, b_end + 1, d_end)
        sign = zz & np.uint64(1)
        np.negative(sign, out=sign)
        delta[deltas] = (zz >> np.uint64(1)) ^ sign
        bits[deltas] = (d_end + 1 + start) * 8
    return V2Window(runs, kind, run_width, base, delta, bits)


def _wide_ends(padded: np.ndarray, pairs: np.ndarray, wide: np.ndarray, terms: np.ndarray, size: int,
               local_end: np.ndarray) -> list[np.ndarray]:
    """Next-header offsets of patched-base and delta runs (first byte 0x80 and up, at offsets ``wide``) into
    ``local_end``, from their further header bytes; returns the offsets of the malformed ones."""
    bad: list[np.ndarray] = []
    b0 = padded[wide].astype(np.int64)
    pb = wide[b0 < 0xC0]
    if len(pb):
        h = padded[pb].astype(np.int64)
        third = padded[pb + 2].astype(np.int64)
        fourth = padded[pb + 3].astype(np.int64)
        patch_width = WIDTHS[third & 31]
        gap_width = (fourth >> 5) + 1
        values_bits = WIDTHS[(h >> 1) & 31] * _V2_LENGTH[pairs[pb]]
        local_end[pb] = (pb + 5 + (third >> 5) + ((values_bits + 7) >> 3)
                         + ((_FIXED_BITS[patch_width + gap_width] * (fourth & 31) + 7) >> 3))
        bad.append(pb[patch_width + gap_width > 64])
    de = wide[b0 >= 0xC0]
    if len(de):
        # the base varint ends at the first terminator from de + 2, the delta varint at the next one
        terms_padded = np.concatenate((terms, [size, size]))
        term = np.searchsorted(terms, de + 2)
        base_end = terms_padded[term]
        delta_end = terms_padded[term + 1]
        code = (padded[de].astype(np.int64) >> 1) & 31
        count = _V2_LENGTH[pairs[de]]
        payload = np.where(count > 2, count - 2, 0) * np.where(code == 0, 0, WIDTHS[code])
        local_end[de] = delta_end + 1 + ((payload + 7) >> 3)
        bad.append(de[(delta_end >= size) | (base_end - de - 2 >= _LONGEST_VARINT)
                      | (delta_end - base_end - 1 >= _LONGEST_VARINT)])
    return bad
